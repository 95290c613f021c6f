-- surface_findings: one row per finding of a landed report, with the severity (0–1) the
-- pipeline assigns under the current rubric (CONTRACT 3), unrounded, and severity_display as
-- mcp-xray shows it (3 decimals, from its rounded lerp score); reported_severity is the one the
-- report stored (never used). target is always a list of tool names (target_is_list says
-- whether the report gave a list); measurement and detail are the report's JSON text, and
-- the measurement keys the formulas read are typed columns beside them.
create or replace view surface_findings as
select
    f.run_id,
    f.finding_index,
    f.probe,
    f.kind,
    f.target,
    s.severity,
    s.severity_display,
    f.confidence,
    f.reported_severity,
    f.target_is_list,
    f.measurement,
    f.detail,
    f.scope,
    f.tokens,
    f.tool_count,
    f.tokens_per_tool_avg,
    f.share,
    f.smell,
    f.tokens_saved_est,
    f.wide_union,
    f.mixes_read_write,
    f.pass_rate,
    f.mode,
    f.fire_rate,
    f.tokens_est,
    f.injector_kind,
    f.recommend_jit,
    f.phase,
    f.worst_phase,
    s.rubric_id,
    f.batch_id
from stg_surface_findings as f
left join stg_surface_finding_scores as s using (run_id, finding_index)
