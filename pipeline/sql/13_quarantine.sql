-- quarantine: every input line that did not land, with its source file, line
-- number, raw text and a reason a person can act on.
create or replace view quarantine as
select source, line, reason, raw, record_kind, batch_id
from stg_quarantine
