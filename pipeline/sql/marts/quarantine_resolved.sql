-- quarantine_resolved: quarantine rows a later reading released (replay-quarantine, or an
-- ingest reading the place again), each with the run_id it became; outcome is landed,
-- duplicate, superseded, reread or retried (schema.yml says what each means). batch_id is
-- the releasing batch's.
create or replace view quarantine_resolved as
select source, line, raw, run_id, outcome, batch_id
from stg_quarantine_resolved
