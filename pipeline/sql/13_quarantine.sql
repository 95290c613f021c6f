-- quarantine: every input line that did not land, with its source file, line
-- number, raw text and a reason a person can act on. A row with line_end stands for the
-- lines line..line_end (lines = how many), kept as a counted block without raw text.
create or replace view quarantine as
select
    source,
    line,
    coalesce(line_end, line) as line_end,
    coalesce(line_end, line) - line + 1 as lines,
    reason,
    raw,
    record_kind,
    batch_id
from read_parquet('{{lake}}/quarantine/*.parquet', union_by_name = true)
