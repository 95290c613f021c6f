-- cost_per_solved: per (agent, agent_version, env_type): what solving a problem
-- cost. A problem is solved when any of its scored trials passed (every trial's
-- cost counts toward it, so retries are paid for). Grader errors are counted apart
-- and their cost left out, as in every rate. cost_usd and tokens are sums over
-- scored runs; runs_without_cost counts scored runs that reported no cost_usd (the
-- sum is then a lower bound). cost_per_solved and tokens_per_solved are null when
-- nothing was solved, or when no scored run reported a cost (tokens).
create or replace view cost_per_solved as
-- Float sums are ordered: a parallel aggregate's row order varies, and a sum in another
-- order differs in the last bit from one query to the next.
with problems as (
    select
        agent,
        agent_version,
        env_type,
        problem_id,
        count(*) as runs,
        count(*) filter (where status = 'grader_error') as grader_errors,
        count(*) filter (where status = 'scored' and cost_usd is null) as runs_without_cost,
        sum(cost_usd order by run_id) filter (where status = 'scored') as cost_usd,
        sum(tokens order by run_id) filter (where status = 'scored') as tokens,
        bool_or(passed) as solved
    from task_runs
    group by agent, agent_version, env_type, problem_id
)
select
    agent,
    agent_version,
    env_type,
    sum(runs)::bigint as runs,
    sum(grader_errors)::bigint as grader_errors,
    count(*) as problems,
    count(*) filter (where solved) as solved_problems,
    sum(runs_without_cost)::bigint as runs_without_cost,
    sum(cost_usd order by problem_id) as cost_usd,
    -- A number as task_runs.tokens is (a double): a valid 2^63-1 had failed a cast to BIGINT.
    sum(tokens order by problem_id) as tokens,
    sum(cost_usd order by problem_id) / nullif(count(*) filter (where solved), 0)
        as cost_per_solved,
    sum(tokens order by problem_id) / nullif(count(*) filter (where solved), 0)
        as tokens_per_solved
from problems
group by agent, agent_version, env_type
