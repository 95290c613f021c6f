-- by_cwe: per (cwe, env_type): runs, distinct defects and agents, grader errors,
-- mean score with standard error, pass rate. Runs without a cwe are left out.
create or replace view by_cwe as
select
    cwe,
    env_type,
    count(*) as runs,
    count(distinct defect_id) as defects,
    count(distinct agent) as agents,
    count(*) filter (where status = 'grader_error') as grader_errors,
    avg(score) as mean_score,
    stddev_samp(score) / sqrt(count(score)) as score_se,
    avg(case when passed then 1.0 when not passed then 0.0 end) as pass_rate
from task_runs
where cwe is not null
group by cwe, env_type
