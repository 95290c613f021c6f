-- surface_finding_changes_all: for every pair in surface_version_pairs, one row per finding
-- of either version, matched by int_surface_finding_keys: change = new (only in to),
-- resolved (only in from), worse / better (severity_display, mcp-xray's 3 decimals, rose /
-- fell), or same. tool is the target tools joined by ', ' (tools: the list, the to
-- version's when both have the finding, the later one's when steps > 0); match_tools, identity and occurrence: the key that
-- matched it;
-- severity_before / severity_after are null on the side that lacks the finding.
create or replace view surface_finding_changes_all as
with findings as (
    -- Each pair's findings of both its runs (a pair's runs differ): is_after marks the
    -- later version's.
    select
        p.from_run_id, p.to_run_id, k.run_id = p.to_run_id as is_after, k.kind, k.tools,
        k.match_tools, k.identity, k.occurrence, k.finding_index, k.severity, k.severity_display
    from (
        select from_run_id, to_run_id, unnest([from_run_id, to_run_id]) as run_id
        from surface_version_pairs
    ) as p
    join int_surface_finding_keys as k on k.run_id = p.run_id
),
matched as (
    -- The join's keys are one column each (a full join using them takes either side's);
    -- the pair's own columns come from surface_version_pairs below.
    select
        from_run_id,
        to_run_id,
        kind,
        match_tools,
        identity,
        occurrence,
        coalesce(a.tools, b.tools) as tools,
        b.finding_index as finding_index_before,
        a.finding_index as finding_index_after,
        b.severity_display as severity_before,
        a.severity_display as severity_after,
        b.severity as severity_before_unrounded,
        a.severity as severity_after_unrounded
    from (select * from findings where not is_after) as b
    full outer join (select * from findings where is_after) as a
        using (from_run_id, to_run_id, kind, match_tools, identity, occurrence)
)
select
    p.server,
    p.from_version,
    p.to_version,
    array_to_string(m.tools, ', ') as tool,
    m.kind,
    case
        when m.finding_index_before is null then 'new'
        when m.finding_index_after is null then 'resolved'
        when m.severity_after > m.severity_before then 'worse'
        when m.severity_after < m.severity_before then 'better'
        else 'same'
    end as change,
    m.severity_before,
    m.severity_after,
    m.severity_after - m.severity_before as severity_delta,
    m.tools,
    m.identity,
    m.occurrence,
    p.from_label,
    p.to_label,
    m.from_run_id,
    m.to_run_id,
    p.steps,
    m.finding_index_before,
    m.finding_index_after,
    m.severity_before_unrounded,
    m.severity_after_unrounded,
    m.match_tools
from matched as m
join surface_version_pairs as p on p.from_run_id = m.from_run_id and p.to_run_id = m.to_run_id
