-- by_server: one row per MCP server (server.name, else server.fingerprint): its latest
-- version's grade and how each dimension moved since the previous version. Versions are
-- ordered by generated_at (the latest report of each version stands for it, as
-- stg_surface_reports ranks them; a null server_version is one version). Columns: server,
-- server_version, run_id, generated_at, versions, reports, overall, overall_display,
-- nothing_measured, letter, the five dimensions, previous_version, previous_run_id,
-- previous_generated_at, previous_overall, previous_overall_display, previous_letter,
-- overall_delta and <dimension>_delta (latest minus previous, unrounded; null when either
-- side is null or there is no previous version), rubric_id.
create or replace view by_server as
with versions as (
    select
        *,
        row_number() over latest_first as recency,
        count(*) over (partition by server) as versions,
        lead(server_version) over latest_first as previous_version,
        lead(run_id) over latest_first as previous_run_id,
        lead(generated_at) over latest_first as previous_generated_at,
        lead(overall) over latest_first as previous_overall,
        lead(overall_display) over latest_first as previous_overall_display,
        lead(letter) over latest_first as previous_letter,
        lead(context_efficiency) over latest_first as previous_context_efficiency,
        lead(selection_robustness) over latest_first as previous_selection_robustness,
        lead(surface_redundancy) over latest_first as previous_surface_redundancy,
        lead(schema_hygiene) over latest_first as previous_schema_hygiene,
        lead(description_quality) over latest_first as previous_description_quality
    from stg_surface_reports
    where version_rank = 1
    window latest_first as (
        partition by server
        order by generated_at desc nulls last, batch_id desc, run_id desc
    )
)
select
    server,
    server_version,
    run_id,
    generated_at,
    versions,
    reports,
    overall,
    overall_display,
    nothing_measured,
    letter,
    context_efficiency,
    selection_robustness,
    surface_redundancy,
    schema_hygiene,
    description_quality,
    worst_phase,
    previous_version,
    previous_run_id,
    previous_generated_at,
    previous_overall,
    previous_overall_display,
    previous_letter,
    overall - previous_overall as overall_delta,
    context_efficiency - previous_context_efficiency as context_efficiency_delta,
    selection_robustness - previous_selection_robustness as selection_robustness_delta,
    surface_redundancy - previous_surface_redundancy as surface_redundancy_delta,
    schema_hygiene - previous_schema_hygiene as schema_hygiene_delta,
    description_quality - previous_description_quality as description_quality_delta,
    rubric_id
from versions
where recency = 1
