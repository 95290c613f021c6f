-- version_regressions: the release gate for each pair of consecutive versions of each
-- agent (consecutive in `history`'s order: first graded run, then version text), under
-- the current rubric. One row per env type the pair shares problems in, and one row with
-- env_type = 'all' (every paired problem; 0 when the pair shares none, its gate failing). These are the numbers `compare` gates on,
-- computed by the same Python function at scoring time (pipeline/compare/regressions.py:
-- SQL has no t quantile) and rebuilt whenever scores or landed runs change.
--   paired_problems   problems (problem_id, env_type) both versions have a score for
--   delta, se         mean and standard error of candidate - baseline per problem
--                     (trials averaged first); baseline_mean / candidate_mean beside it
--   ci_low, ci_high   95% paired t interval (n - 1 df); p_value two-sided
--   verdict           regression when ci_high < 0, improvement when ci_low > 0, else no_change
--   holm_family       env rows: how many env types of the pair have a p-value (the k of Holm);
--                     the 'all' row: 1
--   p_value_holm      env rows: Holm-adjusted p-value over those k env types; 'all': p_value
--   gate_verdict      env rows: regression (improvement) when p_value_holm < 0.05 and
--                     delta < 0 (> 0), else no_change; 'all': verdict
--   gate_fails        on every row of a pair: `compare --fail-on-regression` exits 1 for it
--                     (a regression, or fewer than 2 paired problems overall: nothing
--                     measured, pipeline/compare/stats.py MIN_PAIRS_FOR_INTERVAL)
create or replace view version_regressions as
select
    agent,
    env_type,
    baseline,
    candidate,
    paired_problems,
    delta,
    ci_low,
    ci_high,
    p_value,
    verdict,
    baseline_mean,
    candidate_mean,
    se,
    insufficient_data,
    holm_family,
    p_value_holm,
    gate_verdict,
    bool_or(gate_verdict = 'regression' or (env_type = 'all' and paired_problems < 2))
        over (partition by agent, baseline, candidate) as gate_fails
from stg_version_regressions
