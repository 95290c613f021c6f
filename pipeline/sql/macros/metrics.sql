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
-- (0.9999999999999998, 1.0000000000000002): the bounds hold p and stay in [0, 1]. No trial
-- (n = 0) or no rate: null, not [0, 1] (greatest and least skip a null argument).
create or replace macro wilson_low(p, n) as
    case when n > 0 and p is not null then least(greatest(
        (p + z95() ^ 2 / (2 * n) - z95() * sqrt(p * (1 - p) / n + z95() ^ 2 / (4 * n ^ 2)))
        / (1 + z95() ^ 2 / n), 0), p) end;
create or replace macro wilson_high(p, n) as
    case when n > 0 and p is not null then greatest(least(
        (p + z95() ^ 2 / (2 * n) + z95() * sqrt(p * (1 - p) / n + z95() ^ 2 / (4 * n ^ 2)))
        / (1 + z95() ^ 2 / n), 1), p) end;
-- t975(df): Student t 0.975 quantile, as scipy.stats.t.ppf (what `history` and `compare`
-- use) gives it: its values for df 1..100, beyond that the Cornish-Fisher expansion in 1/df
-- (Abramowitz & Stegun 26.7.5) with a fifth term, within 1e-12 of it (a test checks both).
create or replace macro t975(df) as
    case
        when df < 1 then null
        when df <= 100 then [
        12.706204736174694, 4.302652729749462, 3.1824463052837078, 2.7764451051977934,
        2.5705818356363146, 2.4469118511449786, 2.364624251592784, 2.306004135204166,
        2.262157162798205, 2.228138851986274, 2.200985160091639, 2.1788128296672284,
        2.1603686564627913, 2.144786687917804, 2.131449545559776, 2.1199052992212546,
        2.1098155778333156, 2.1009220402410382, 2.0930240544083087, 2.085963447265864,
        2.0796138447276795, 2.0738730679040254, 2.0686576104190486, 2.0638985616280245,
        2.0595385527532972, 2.0555294386428735, 2.0518305164802846, 2.0484071417952454,
        2.045229642132703, 2.0422724563012378, 2.039513446396408, 2.0369333434601016,
        2.0345152974493383, 2.0322445093177186, 2.030107928250343, 2.0280940009804502,
        2.0261924630291093, 2.0243941639119694, 2.022690920036761, 2.021075390306273,
        2.019540970441376, 2.0180817028184443, 2.016692199227824, 2.0153675744437636,
        2.014103388880846, 2.012895598919429, 2.0117405137297655, 2.010634757624232,
        2.0095752371292392, 2.008559112100761, 2.007583770315836, 2.006646805061688,
        2.0057459953178687, 2.0048792881880564, 2.0040447832891455, 2.003240718847872,
        2.002465459291007, 2.0017174841452356, 2.000995378088267, 2.0002978220142604,
        1.999623584994939, 1.9989715170333788, 1.998340542520741, 1.997729654317693,
        1.9971379083920038, 1.9965644189523117, 1.996008354025296, 1.9954689314298435,
        1.9949454151072374, 1.994437111771186, 1.9939433678456255, 1.9934635666618719,
        1.992997125889855, 1.992543495180932, 1.9921021540022417, 1.9916726096446642,
        1.9912543953883846, 1.9908470688116906, 1.9904502102301285, 1.990063421254446,
        1.9896863234569029, 1.989318557136572, 1.9889597801751624, 1.9886096669757083,
        1.9882679074772216, 1.98793420623902, 1.9876082815890708, 1.9872898648311692,
        1.986978699506281, 1.9866745407037683, 1.9863771544186177, 1.98608631695113,
        1.9858018143458227, 1.985523441866604, 1.9852510035054978, 1.984984311522457,
        1.9847231860139845, 1.9844674545084815, 1.9842169515864174, 1.9839715185235518
        ][df]
        else 1.959963984540054
            + 2.372271230298562 / df
            + 2.8224986157396112 / power(df, 2)
            + 2.555849679507722 / power(df, 3)
            + 1.5895340533938225 / power(df, 4)
            + 0.7328982119816051 / power(df, 5)
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
