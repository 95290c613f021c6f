-- surface_finding_changes_all: for every pair in surface_version_pairs, one row per finding
-- of either version, matched by int_surface_finding_keys: change = new (only in to),
-- resolved (only in from), worse / better (severity_display, mcp-xray's 3 decimals, rose /
-- fell), or same. tool is the target tools joined by ', ' (tools: the list, the to
-- version's when both have the finding, the later one's when steps > 0); match_tools, identity and occurrence: the key that
-- matched it;
-- severity_before / severity_after are null on the side that lacks the finding.
-- Both versions' findings are matched by grouping on the pair and the key (each side has at
-- most one finding of a key: occurrence numbers them), not by a full join: a filter on steps
-- (surface_finding_changes' steps = 1) then reaches the pairs before any finding is read, so
-- a server's consecutive steps cost as many rows as its findings, not as all its pairs'.
create or replace view surface_finding_changes_all as
with findings as (
    -- Each pair's findings of both its runs (a pair's runs differ): is_after marks the
    -- later version's.
    select
        p.from_run_id, p.to_run_id, p.steps, k.run_id = p.to_run_id as is_after, k.kind,
        k.tools, k.match_tools, k.identity, k.occurrence, k.finding_index, k.severity,
        k.severity_display
    from (
        select from_run_id, to_run_id, steps, unnest([from_run_id, to_run_id]) as run_id
        from surface_version_pairs
    ) as p
    join int_surface_finding_keys as k on k.run_id = p.run_id
),
matched as (
    select
        from_run_id,
        to_run_id,
        steps,
        kind,
        match_tools,
        identity,
        occurrence,
        coalesce(any_value(tools) filter (is_after), any_value(tools) filter (not is_after))
            as tools,
        any_value(finding_index) filter (not is_after) as finding_index_before,
        any_value(finding_index) filter (is_after) as finding_index_after,
        any_value(severity_display) filter (not is_after) as severity_before,
        any_value(severity_display) filter (is_after) as severity_after,
        any_value(severity) filter (not is_after) as severity_before_unrounded,
        any_value(severity) filter (is_after) as severity_after_unrounded
    from findings
    group by from_run_id, to_run_id, steps, kind, match_tools, identity, occurrence
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
    m.steps,
    m.finding_index_before,
    m.finding_index_after,
    m.severity_before_unrounded,
    m.severity_after_unrounded,
    m.match_tools
from matched as m
join surface_version_pairs as p on p.from_run_id = m.from_run_id and p.to_run_id = m.to_run_id
