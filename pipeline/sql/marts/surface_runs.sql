-- surface_runs: one row per landed mcp-xray report (one version of one MCP server) with our
-- regrade under the current rubric (CONTRACT 5). Dimensions, overall are 0–100, unrounded,
-- null when not measured; <dimension>_display and overall_display are what mcp-xray shows
-- (its roundings as it goes; overall_display 0.0 with nothing_measured when no dimension is
-- measured); letter comes from overall_display. server is server.name, else the fingerprint;
-- worst_phase is the phase a phased server is scored on. reported_overall/reported_letter
-- are mcp-xray's own; overall_delta = overall - reported_overall, agrees_with_report /
-- letter_agrees are null unless the rubric is mcp-xray's own. tool_count is server.tool_count
-- as reported (a phased server's union), n_tools the n the formulas used. A report shows once
-- it is scored under the current rubric (the warehouse holds no run without its score).
create or replace view surface_runs as
select
    r.run_id,
    r.server,
    r.server_version,
    r.fingerprint,
    r.generated_at,
    r.tool_count,
    s.n_tools,
    s.overall,
    s.overall_display,
    s.nothing_measured,
    s.letter,
    s.worst_phase,
    s.context_efficiency,
    s.selection_robustness,
    s.surface_redundancy,
    s.schema_hygiene,
    s.description_quality,
    s.context_efficiency_display,
    s.selection_robustness_display,
    s.surface_redundancy_display,
    s.schema_hygiene_display,
    s.description_quality_display,
    s.measured_weight,
    s.injector_tokens,
    r.reported_overall,
    r.reported_letter,
    s.overall_delta,
    s.agrees_with_report,
    s.letter_agrees,
    s.rubric_id,
    r.coverage_ran,
    r.finding_count,
    r.phased,
    r.reported_worst_phase,
    r.phase_tokens,
    r.reported_subscores,
    r.generated_at_text,
    r.source,
    r.line,
    r.batch_id,
    r.content_hash,
    r.record
from stg_surface_runs as r
left join stg_surface_scores as s using (run_id)
