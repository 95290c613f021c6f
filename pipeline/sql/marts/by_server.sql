-- by_server: one row per MCP server (server.name, else server.fingerprint): its latest
-- version's grade and how each dimension moved since the previous version. The versions and
-- their order are surface_versions' (the latest report of each version stands for it, as
-- int_surface_reports ranks them; a null server_version is one version): the latest is the
-- last in version_order, the previous the one before it. Columns: server, server_version,
-- run_id, generated_at, versions, reports, overall, overall_display, nothing_measured,
-- letter, the five dimensions, previous_version, previous_run_id, previous_generated_at,
-- previous_overall, previous_overall_display, previous_letter, overall_delta and
-- <dimension>_delta (latest minus previous, unrounded; null when either side is null or
-- there is no previous version), overall_display_delta (the same of the shown values, so it
-- is the difference of the two numbers shown beside it), rubric_id.
create or replace view by_server as
with latest as (
    select *, count(*) over (partition by server) as versions
    from surface_versions
    qualify version_order = count(*) over (partition by server)
)
select
    latest.server,
    latest.server_version,
    latest.run_id,
    latest.generated_at,
    latest.versions,
    report.reports,
    latest.overall,
    latest.overall_display,
    report.nothing_measured,
    latest.letter,
    latest.context_efficiency,
    latest.selection_robustness,
    latest.surface_redundancy,
    latest.schema_hygiene,
    latest.description_quality,
    report.worst_phase,
    previous.server_version as previous_version,
    previous.run_id as previous_run_id,
    previous.generated_at as previous_generated_at,
    previous.overall as previous_overall,
    previous.overall_display as previous_overall_display,
    previous.letter as previous_letter,
    latest.overall - previous.overall as overall_delta,
    round(latest.overall_display - previous.overall_display, 1) as overall_display_delta,
    latest.context_efficiency - previous.context_efficiency as context_efficiency_delta,
    latest.selection_robustness - previous.selection_robustness as selection_robustness_delta,
    latest.surface_redundancy - previous.surface_redundancy as surface_redundancy_delta,
    latest.schema_hygiene - previous.schema_hygiene as schema_hygiene_delta,
    latest.description_quality - previous.description_quality as description_quality_delta,
    report.rubric_id
from latest
-- run_id lands once, so it finds the report standing for the latest version.
join int_surface_reports as report on report.run_id = latest.run_id
left join surface_versions as previous
    on previous.server = latest.server and previous.version_order = latest.version_order - 1
