-- surface-diff: every finding of two versions of a server, matched ($1 server, $2 from and
-- $3 to, as the run_ids standing for them: a version label may name two versions), with the
-- probe that found it (the --to version's when both have it), the worst changes first.
select
    c.change, c.kind, c.tool, c.tools, c.match_tools, c.identity, c.occurrence,
    coalesce(a.probe, b.probe) as probe, c.severity_before, c.severity_after, c.severity_delta,
    c.finding_index_before, c.finding_index_after
from surface_finding_changes_all as c
left join surface_findings as b
    on b.run_id = c.from_run_id and b.finding_index = c.finding_index_before
left join surface_findings as a
    on a.run_id = c.to_run_id and a.finding_index = c.finding_index_after
where c.server = $1 and c.from_run_id = $2 and c.to_run_id = $3
order by
    case c.change
        when 'new' then 0 when 'worse' then 1 when 'resolved' then 2 when 'better' then 3
        else 4
    end,
    coalesce(c.severity_after, c.severity_before) desc,
    c.kind,
    c.tool,
    c.identity,
    c.occurrence
