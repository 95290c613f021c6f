-- by_defect: per (defect_id, env_type): how many runs and agents attempted it, grader
-- errors apart, and the run-level metrics of macros/metrics.sql (over scored runs, every agent
-- together): mean_score_runs with a normal 95% interval, pass_rate_runs with a 95% Wilson
-- interval. The contract's mean_score and pass_rate are aliases of those, as are score_se,
-- score_ci_low/high and pass_rate_ci_low/high. Runs without a defect_id are left out.
create or replace view by_defect as
with scored as (
    select
        defect_id,
        any_value(cwe) as cwe,
        env_type,
        count(*) as runs,
        count(distinct agent) as agents,
        count(*) filter (where status = 'grader_error') as grader_errors,
        count(*) filter (where status = 'scored') as scored_runs,
        mean_score_runs(status, score) as mean_score_runs,
        score_sd_runs(status, score) as score_sd_runs,
        pass_rate_runs(status, passed) as pass_rate_runs,
        pass_n_runs(status, passed) as pass_n_runs
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
    mean_score_runs as mean_score,
    score_sd_runs / sqrt(scored_runs) as score_se,
    normal_ci_low(mean_score_runs, score_sd_runs, scored_runs) as score_ci_low,
    normal_ci_high(mean_score_runs, score_sd_runs, scored_runs) as score_ci_high,
    pass_rate_runs as pass_rate,
    wilson_low(pass_rate_runs, pass_n_runs) as pass_rate_ci_low,
    wilson_high(pass_rate_runs, pass_n_runs) as pass_rate_ci_high,
    mean_score_runs,
    normal_ci_low(mean_score_runs, score_sd_runs, scored_runs) as mean_score_runs_ci_low,
    normal_ci_high(mean_score_runs, score_sd_runs, scored_runs) as mean_score_runs_ci_high,
    'normal_over_runs' as mean_score_runs_ci_method,
    pass_rate_runs,
    wilson_low(pass_rate_runs, pass_n_runs) as pass_rate_runs_ci_low,
    wilson_high(pass_rate_runs, pass_n_runs) as pass_rate_runs_ci_high
from scored
