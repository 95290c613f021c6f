-- surface-diff: every finding of two versions of a server, matched ($1 server, $2 from and
-- $3 to, as the run_ids standing for them: a version label may name two versions), the
-- worst changes first.
select
    change, kind, tool, tools, match_tools, identity, occurrence, severity_before,
    severity_after, severity_delta, finding_index_before, finding_index_after
from surface_finding_changes_all
where server = $1 and from_run_id = $2 and to_run_id = $3
order by
    case change
        when 'new' then 0 when 'worse' then 1 when 'resolved' then 2 when 'better' then 3
        else 4
    end,
    coalesce(severity_after, severity_before) desc,
    kind,
    tool,
    identity,
    occurrence
