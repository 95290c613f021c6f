-- The agents a name could have meant, for the message that says it names none: the same
-- name in another case first, then every agent by name (the message shows a few).
-- Parameters: 1 agent (VARCHAR).
select agent
from (select distinct agent from task_runs)
order by lower(agent) <> lower(?), agent
