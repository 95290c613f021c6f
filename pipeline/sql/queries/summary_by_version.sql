-- The closing summary of `make run`: runs, mean score and pass rate by agent and version,
-- both over scored runs, versions in the order they were first graded (version_history).
select agent, agent_version, runs, grader_errors, mean_score_runs, pass_rate_runs
from version_history
order by agent, version_index
