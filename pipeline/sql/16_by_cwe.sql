-- by_cwe: per (cwe, env_type): runs, distinct defects and agents, grader errors,
-- mean score with standard error, pass rate with its 95% Wilson interval
-- (pass_n: the runs the rate is over). Runs without a cwe are left out.
create or replace view by_cwe as
with scored as (
    select
        cwe,
        env_type,
        count(*) as runs,
        count(distinct defect_id) as defects,
        count(distinct agent) as agents,
        count(*) filter (where status = 'grader_error') as grader_errors,
        avg(score) as mean_score,
        stddev_samp(score) / sqrt(count(score)) as score_se,
        avg(case when passed then 1.0 when not passed then 0.0 end) as pass_rate,
        count(passed) as pass_n
    from task_runs
    where cwe is not null
    group by cwe, env_type
)
select
    *,
    wilson_low(pass_rate, pass_n) as pass_rate_ci_low,
    wilson_high(pass_rate, pass_n) as pass_rate_ci_high
from scored
