-- surface-diff: the probes each of two reports ran ($1, $2: their run_ids; coverage.ran, none
-- when the report names none, as scoring reads it).
select run_id, coalesce(coverage_ran, []::varchar[]) as ran
from surface_runs
where run_id in ($1, $2)
