-- by_defect: per (defect_id, env_type): how many runs and agents attempted it,
-- grader errors apart, mean score with standard error and 95% interval, pass rate
-- with a 95% Wilson interval. Runs without a defect_id are left out.
create or replace view by_defect as
with scored as (
    select
        defect_id,
        any_value(cwe) as cwe,
        env_type,
        count(*) as runs,
        count(distinct agent) as agents,
        count(*) filter (where status = 'grader_error') as grader_errors,
        avg(score) as mean_score,
        stddev_samp(score) / sqrt(count(score)) as score_se,
        avg(case when passed then 1.0 when not passed then 0.0 end) as pass_rate,
        count(passed) as pass_n
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
    mean_score,
    score_se,
    mean_score - 1.96 * score_se as score_ci_low,
    mean_score + 1.96 * score_se as score_ci_high,
    pass_rate,
    wilson_low(pass_rate, pass_n) as pass_rate_ci_low,
    wilson_high(pass_rate, pass_n) as pass_rate_ci_high
from scored
