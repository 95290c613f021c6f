-- by_cwe: per (cwe, env_type): runs, distinct defects and agents, grader errors, and the
-- run-level metrics of macros/metrics.sql: mean_score_runs (normal 95% interval) and
-- pass_rate_runs (95% Wilson interval); mean_score and pass_rate are their aliases.
-- pass_n, pass_rate_ci_low/high name the run-level rate's count and interval too.
-- Runs without a cwe are left out.
create or replace view by_cwe as
with scored as (
    select
        cwe,
        env_type,
        count(*) as runs,
        count(distinct defect_id) as defects,
        count(distinct agent) as agents,
        count(*) filter (where status = 'grader_error') as grader_errors,
        count(*) filter (where status = 'scored') as scored_runs,
        mean_score_runs(status, score) as mean_score_runs,
        score_sd_runs(status, score) as score_sd_runs,
        pass_rate_runs(status, passed) as pass_rate_runs,
        pass_n_runs(status, passed) as pass_n_runs
    from task_runs
    where cwe is not null
    group by cwe, env_type
)
select
    cwe,
    env_type,
    runs,
    defects,
    agents,
    grader_errors,
    scored_runs,
    mean_score_runs as mean_score,
    score_sd_runs / sqrt(scored_runs) as score_se,
    pass_rate_runs as pass_rate,
    mean_score_runs,
    normal_ci_low(mean_score_runs, score_sd_runs, scored_runs) as mean_score_runs_ci_low,
    normal_ci_high(mean_score_runs, score_sd_runs, scored_runs) as mean_score_runs_ci_high,
    'normal_over_runs' as mean_score_runs_ci_method,
    pass_rate_runs,
    wilson_low(pass_rate_runs, pass_n_runs) as pass_rate_runs_ci_low,
    wilson_high(pass_rate_runs, pass_n_runs) as pass_rate_runs_ci_high,
    pass_n_runs as pass_n,
    wilson_low(pass_rate_runs, pass_n_runs) as pass_rate_ci_low,
    wilson_high(pass_rate_runs, pass_n_runs) as pass_rate_ci_high
from scored
