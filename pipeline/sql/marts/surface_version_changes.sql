-- surface_version_changes: how a server's grade moved between two of its versions, for every
-- ordered pair of versions either way round (steps = 1: a version and the next): overall and letter before and after,
-- overall_delta (unrounded), overall_display_delta (as mcp-xray shows them), and per
-- dimension <dimension>_delta (shown values, after minus before; null when either side is
-- not measured). The finding-level changes are in surface_finding_changes(_all).
create or replace view surface_version_changes as
select
    p.server,
    p.from_version,
    p.to_version,
    p.from_label,
    p.to_label,
    p.from_run_id,
    p.to_run_id,
    p.steps,
    a.overall_display as overall_before,
    b.overall_display as overall_after,
    a.letter as letter_before,
    b.letter as letter_after,
    b.overall - a.overall as overall_delta,
    round(b.overall_display - a.overall_display, 1) as overall_display_delta,
    round(b.context_efficiency_display - a.context_efficiency_display, 1)
        as context_efficiency_delta,
    round(b.selection_robustness_display - a.selection_robustness_display, 1)
        as selection_robustness_delta,
    round(b.surface_redundancy_display - a.surface_redundancy_display, 1)
        as surface_redundancy_delta,
    round(b.schema_hygiene_display - a.schema_hygiene_display, 1) as schema_hygiene_delta,
    round(b.description_quality_display - a.description_quality_display, 1)
        as description_quality_delta
from surface_version_pairs as p
join surface_versions as a on a.run_id = p.from_run_id
join surface_versions as b on b.run_id = p.to_run_id
