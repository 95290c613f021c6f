-- quarantine_resolved: quarantined lines that replay-quarantine released, each with
-- the run_id it became; outcome is landed (the line is that run now) or duplicate
-- (a run of the same content had landed). batch_id is the replay's.
create or replace view quarantine_resolved as
select source, line, raw, run_id, outcome, batch_id
from stg_quarantine_resolved
