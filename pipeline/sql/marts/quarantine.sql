-- quarantine: every input line that did not land and that no replay has released
-- since, with its source file, line number, raw text and a reason a person can act
-- on. A line replay-quarantine landed is in quarantine_resolved instead. A row with
-- line_end stands for the lines line..line_end (lines = how many), kept as a counted
-- block without raw text.
create or replace view quarantine as
select
    q.source,
    q.line,
    coalesce(q.line_end, q.line) as line_end,
    coalesce(q.line_end, q.line) - q.line + 1 as lines,
    q.reason,
    q.raw,
    q.record_kind,
    q.batch_id
from stg_quarantine as q
where not exists (
    select 1
    from stg_quarantine_resolved as r
    -- A row without text (a counted entry) is resolved by one without text; lakes written
    -- before 2026-12-05 stored such a resolution's text as ''.
    where r.source = q.source and r.line = q.line and coalesce(r.raw, '') = coalesce(q.raw, '')
)
