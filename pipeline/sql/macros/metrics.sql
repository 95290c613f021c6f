-- The one SQL definition of each metric (pipeline/compare/metrics.py is the Python one, used by
-- compare and history; a test checks the two agree on the same lake).
--   run level (*_runs):         over scored runs; grader errors never count
--   problem level (*_problems): over problems (problem_id, env_type), each the mean of its
--                               scored trials; a problem passes when mean(passed) >= 0.5
--                               (see int_problem_outcomes)
-- Rate intervals are 95% Wilson (never outside [0, 1]); mean intervals are normal over runs
-- or Student t over problems, and each view names its method in a *_ci_method column.
create or replace macro z95() as 1.959963984540054;
-- wilson_low / wilson_high: the 95% Wilson score interval of a rate p over n trials. At
-- p = 0 or 1 the formula's bound is 0 or 1 exactly, which floats miss by an ulp
-- (0.9999999999999998, 1.0000000000000002): the bounds hold p and stay in [0, 1].
create or replace macro wilson_low(p, n) as least(greatest(
    (p + z95() ^ 2 / (2 * n) - z95() * sqrt(p * (1 - p) / n + z95() ^ 2 / (4 * n ^ 2)))
    / (1 + z95() ^ 2 / n), 0), p);
create or replace macro wilson_high(p, n) as greatest(least(
    (p + z95() ^ 2 / (2 * n) + z95() * sqrt(p * (1 - p) / n + z95() ^ 2 / (4 * n ^ 2)))
    / (1 + z95() ^ 2 / n), 1), p);
-- t975(df): Student t 0.975 quantile, exact to 6 decimals for df 1..30 (scipy.stats.t.ppf),
-- beyond that the Cornish-Fisher expansion (Abramowitz & Stegun 26.7.5), error < 1e-5.
create or replace macro t975(df) as
    case
        when df < 1 then null
        when df <= 30 then [
            12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004,
            2.262157, 2.228139, 2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905,
            2.109816, 2.100922, 2.093024, 2.085963, 2.079614, 2.073873, 2.068658, 2.063899,
            2.059539, 2.055529, 2.051831, 2.048407, 2.045230, 2.042272
        ][df]
        else 1.959963984540054
            + 2.372271230298562 / df
            + 2.8224986157396112 / power(df, 2)
            + 2.555849679507722 / power(df, 3)
    end;
-- Run level, as aggregates over task_runs rows.
create or replace macro scored_only(status, x) as case when status = 'scored' then x end;
-- Float aggregates add their terms in value order: a parallel hash aggregate's order varies,
-- and with it the last bit.
create or replace macro mean_score_runs(status, score) as
    avg(scored_only(status, score) order by scored_only(status, score));
create or replace macro score_sd_runs(status, score) as
    stddev_samp(scored_only(status, score) order by scored_only(status, score));
create or replace macro pass_rate_runs(status, passed) as
    avg(scored_only(status, cast(passed as double)));
create or replace macro pass_n_runs(status, passed) as count(scored_only(status, passed));
-- normal_ci_*: mean ± z·sd/√n (method normal_over_runs).
create or replace macro normal_ci_low(m, sd, n) as m - z95() * sd / sqrt(n);
create or replace macro normal_ci_high(m, sd, n) as m + z95() * sd / sqrt(n);
-- Problem level: a problem's pass, and aggregates over int_problem_outcomes rows.
create or replace macro problem_passes(passed_share) as passed_share >= 0.5;
create or replace macro pass_rate_problems(passes) as avg(cast(passes as double));
-- t_ci_*: mean ± t(n−1)·sd/√n over n problems (method t_over_problems); null below 2.
create or replace macro t_ci_low(m, sd, n) as
    case when n >= 2 then m - t975(n - 1) * coalesce(sd, 0) / sqrt(n) end;
create or replace macro t_ci_high(m, sd, n) as
    case when n >= 2 then m + t975(n - 1) * coalesce(sd, 0) / sqrt(n) end;
-- The column blocks every per-group view shares, each a struct its view unnests into columns
-- (in this order), so a metric's name, formula and interval are written here only.
-- run_aggregates: the run-level aggregates of a group of task_runs rows.
create or replace macro run_aggregates(status, score, passed) as struct_pack(
    runs := count(*),
    grader_errors := count(*) filter (where status = 'grader_error'),
    scored_runs := count(*) filter (where status = 'scored'),
    mean_score_runs := mean_score_runs(status, score),
    score_sd_runs := score_sd_runs(status, score),
    pass_rate_runs := pass_rate_runs(status, passed),
    pass_n_runs := pass_n_runs(status, passed)
);
-- contract_metrics: the contract's mean_score and pass_rate (the run-level metrics) with
-- score_se and their 95% intervals (normal; Wilson).
create or replace macro contract_metrics(m, sd, scored_runs, rate, rate_n) as struct_pack(
    mean_score := m,
    score_se := sd / sqrt(scored_runs),
    score_ci_low := normal_ci_low(m, sd, scored_runs),
    score_ci_high := normal_ci_high(m, sd, scored_runs),
    pass_rate := rate,
    pass_rate_ci_low := wilson_low(rate, rate_n),
    pass_rate_ci_high := wilson_high(rate, rate_n)
);
-- run_level_metrics: mean_score_runs (normal interval) and pass_rate_runs (Wilson).
create or replace macro run_level_metrics(m, sd, scored_runs, rate, rate_n) as struct_pack(
    mean_score_runs := m,
    mean_score_runs_ci_low := normal_ci_low(m, sd, scored_runs),
    mean_score_runs_ci_high := normal_ci_high(m, sd, scored_runs),
    mean_score_runs_ci_method := 'normal_over_runs',
    pass_rate_runs := rate,
    pass_rate_runs_ci_low := wilson_low(rate, rate_n),
    pass_rate_runs_ci_high := wilson_high(rate, rate_n)
);
-- run_metrics: contract_metrics then run_level_metrics of the same run aggregates, the
-- block a per-group view over runs lists whole (by_agent, by_defect).
create or replace macro run_metrics(m, sd, scored_runs, rate, rate_n) as struct_concat(
    contract_metrics(m, sd, scored_runs, rate, rate_n),
    run_level_metrics(m, sd, scored_runs, rate, rate_n)
);
-- problem_level_metrics: mean_score_problems (t interval) and pass_rate_problems (Wilson
-- over the problems).
create or replace macro problem_level_metrics(m, sd, problems, rate) as struct_pack(
    mean_score_problems := m,
    mean_score_problems_ci_low := t_ci_low(m, sd, problems),
    mean_score_problems_ci_high := t_ci_high(m, sd, problems),
    mean_score_problems_ci_method := 't_over_problems',
    pass_rate_problems := rate,
    pass_rate_problems_ci_low := wilson_low(rate, problems),
    pass_rate_problems_ci_high := wilson_high(rate, problems)
);
