-- surface_finding_changes_all: for every pair in surface_version_pairs, one row per finding
-- of either version, matched by stg_surface_finding_keys: change = new (only in to),
-- resolved (only in from), worse / better (severity_display, mcp-xray's 3 decimals, rose /
-- fell), or same. tool is the target tools joined by ', ' (tools: the list, the later
-- version's when both have the finding);
-- severity_before / severity_after are null on the side that lacks the finding.
create or replace view surface_finding_changes_all as
with before as (
    select
        p.*, k.kind, k.tools, k.match_tools, k.identity, k.occurrence, k.finding_index,
        k.severity, k.severity_display
    from surface_version_pairs as p
    join stg_surface_finding_keys as k on k.run_id = p.from_run_id
),
after as (
    select
        p.*, k.kind, k.tools, k.match_tools, k.identity, k.occurrence, k.finding_index,
        k.severity, k.severity_display
    from surface_version_pairs as p
    join stg_surface_finding_keys as k on k.run_id = p.to_run_id
),
matched as (
    select
        coalesce(b.server, a.server) as server,
        coalesce(b.from_version, a.from_version) as from_version,
        coalesce(b.to_version, a.to_version) as to_version,
        coalesce(b.from_label, a.from_label) as from_label,
        coalesce(b.to_label, a.to_label) as to_label,
        coalesce(b.from_run_id, a.from_run_id) as from_run_id,
        coalesce(b.to_run_id, a.to_run_id) as to_run_id,
        coalesce(b.steps, a.steps) as steps,
        coalesce(b.kind, a.kind) as kind,
        coalesce(a.tools, b.tools) as tools,
        coalesce(b.identity, a.identity) as identity,
        coalesce(b.occurrence, a.occurrence) as occurrence,
        b.finding_index as finding_index_before,
        a.finding_index as finding_index_after,
        b.severity_display as severity_before,
        a.severity_display as severity_after,
        b.severity as severity_before_unrounded,
        a.severity as severity_after_unrounded
    from before as b
    full outer join after as a
        on b.from_run_id = a.from_run_id
        and b.to_run_id = a.to_run_id
        and b.kind = a.kind
        and b.match_tools = a.match_tools
        and b.identity = a.identity
        and b.occurrence = a.occurrence
)
select
    server,
    from_version,
    to_version,
    array_to_string(tools, ', ') as tool,
    kind,
    case
        when finding_index_before is null then 'new'
        when finding_index_after is null then 'resolved'
        when severity_after > severity_before then 'worse'
        when severity_after < severity_before then 'better'
        else 'same'
    end as change,
    severity_before,
    severity_after,
    severity_after - severity_before as severity_delta,
    tools,
    identity,
    occurrence,
    from_label,
    to_label,
    from_run_id,
    to_run_id,
    steps,
    finding_index_before,
    finding_index_after,
    severity_before_unrounded,
    severity_after_unrounded
from matched
