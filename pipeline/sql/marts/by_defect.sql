-- by_defect: per (defect_id, env_type): how many runs and agents attempted it, grader
-- errors apart, and the run-level metrics of macros/metrics.sql (over scored runs, every agent
-- together): mean_score_runs with a normal 95% interval, pass_rate_runs with a 95% Wilson
-- interval. The contract's mean_score and pass_rate are aliases of those, as are score_se,
-- score_ci_low/high and pass_rate_ci_low/high. Runs without a defect_id are left out.
create or replace view by_defect as
with scored as (
    select
        defect_id,
        -- The least of its CWEs: any_value would name the one the aggregate met first.
        min(cwe) as cwe,
        env_type,
        count(distinct agent) as agents,
        unnest(run_aggregates(status, score, passed))
    from task_runs
    where defect_id is not null
    group by defect_id, env_type
)
select
    defect_id,
    cwe,
    env_type,
    runs,
    agents,
    grader_errors,
    scored_runs,
    unnest(run_metrics(
        mean_score_runs, score_sd_runs, scored_runs, pass_rate_runs, pass_n_runs
    ))
from scored
