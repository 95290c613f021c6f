-- surface_versions: one row per version of an MCP server, the report that stands for it (its
-- latest, as in by_server: generated_at, then batch_id, then run_id) and the version's place
-- in the server's history (version_order 1 = oldest). A null server_version is one version,
-- named 'unversioned' in version_label (as in a run_id made for such a report).
create or replace view surface_versions as
with ranked as (
    select
        *,
        row_number() over (
            partition by server, server_version
            order by generated_at desc nulls last, batch_id desc, run_id desc
        ) as version_rank
    from surface_runs
)
select
    server,
    server_version,
    coalesce(server_version, 'unversioned') as version_label,
    run_id,
    generated_at,
    row_number() over (
        partition by server
        order by generated_at nulls first, batch_id, run_id
    ) as version_order,
    overall,
    overall_display,
    letter,
    context_efficiency,
    selection_robustness,
    surface_redundancy,
    schema_hygiene,
    description_quality,
    context_efficiency_display,
    selection_robustness_display,
    surface_redundancy_display,
    schema_hygiene_display,
    description_quality_display
from ranked
where version_rank = 1
