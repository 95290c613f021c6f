-- surface_versions: one row per version of an MCP server, the report that stands for it (its
-- latest, as int_surface_reports ranks them) and the version's place in the server's history
-- (version_order 1 = oldest, by the generated_at of the version's first report, as an agent's
-- versions go by their first graded run: an old version reported again after a newer one
-- keeps its place, and the report standing for it is the new one).
-- A null server_version is one version, named 'unversioned' in version_label (as in a run_id
-- made for such a report).
create or replace view surface_versions as
select
    server,
    server_version,
    coalesce(server_version, 'unversioned') as version_label,
    run_id,
    generated_at,
    row_number() over (
        partition by server
        order by first_generated_at nulls first, first_batch_id, run_id
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
from int_surface_reports
where version_rank = 1
