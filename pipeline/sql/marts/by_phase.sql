-- by_phase: one row per phase of a phased server (its scope='phase' token_cost finding), or
-- one row named 'all' (from the surface finding) for an unphased one, with context_efficiency
-- by the dimension's formula on that row (the instruction-injector shave included, since
-- instructions ride along whatever phase is loaded). is_worst_phase marks the row the
-- server's context_efficiency dimension is scored on.
create or replace view by_phase as
select
    p.run_id,
    r.server,
    r.server_version,
    p.phase,
    p.tool_count,
    p.tokens,
    p.tokens_per_tool_avg,
    p.context_efficiency,
    p.context_efficiency_display,
    p.is_worst_phase,
    p.finding_index,
    p.rubric_id
from stg_surface_phase_scores as p
join surface_runs as r using (run_id)
