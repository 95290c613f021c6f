-- int_problem_outcomes: one row per (agent, agent_version, env_type, problem_id) with a
-- scored run: its scored trials, score (their mean), passed_share (mean of passed) and
-- passes (a majority of its trials passed, ties passing). The problem level of every
-- *_problems metric (pipeline.compare.metrics.problem_outcomes in Python).
create or replace view int_problem_outcomes as
select
    agent,
    agent_version,
    env_type,
    problem_id,
    count(*) as trials,
    -- in value order, so the last bit does not depend on a parallel aggregate's order
    avg(score order by score) as score,
    avg(cast(passed as double)) as passed_share,
    problem_passes(avg(cast(passed as double))) as passes
from task_runs
where status = 'scored'
group by agent, agent_version, env_type, problem_id
