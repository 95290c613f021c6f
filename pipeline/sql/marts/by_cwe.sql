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
        count(distinct defect_id) as defects,
        count(distinct agent) as agents,
        unnest(run_aggregates(status, score, passed))
    from task_runs
    where cwe is not null
    group by cwe, env_type
),
measured as (
    select
        *,
        contract_metrics(
            mean_score_runs, score_sd_runs, scored_runs, pass_rate_runs, pass_n_runs
        ) as contract
    from scored
)
select
    cwe,
    env_type,
    runs,
    defects,
    agents,
    grader_errors,
    scored_runs,
    contract.mean_score,
    contract.score_se,
    contract.pass_rate,
    unnest(run_level_metrics(
        mean_score_runs, score_sd_runs, scored_runs, pass_rate_runs, pass_n_runs
    )),
    pass_n_runs as pass_n,
    contract.pass_rate_ci_low,
    contract.pass_rate_ci_high
from measured
