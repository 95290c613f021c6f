"""pipeline.compare.stats: hand-computed intervals and tests, and the error rates they promise."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from pipeline.compare import stats
from pipeline.compare.text import holm_family
from tests.examples import examples


def test_paired_t_by_hand_on_four_problems() -> None:
    # d = [0.1, 0.2, 0.0, 0.3]; mean = 0.6 / 4 = 0.15
    # deviations -0.05, 0.05, -0.15, 0.15; squares 0.0025 + 0.0025 + 0.0225 + 0.0225 = 0.05
    # var = 0.05 / 3 = 0.0166667; sd = 0.1290994; SE = sd / sqrt(4) = 0.0645497
    # t_{0.975, 3} = 3.182446; half width = 3.182446 × 0.0645497 = 0.2054260
    # interval = [0.15 − 0.2054260, 0.15 + 0.2054260] = [−0.0554260, 0.3554260]
    # t = 0.15 / 0.0645497 = 2.3237900; p = 2 × P(T_3 > 2.32379) = 0.1027281
    t = stats.paired_t(np.array([0.1, 0.2, 0.0, 0.3]))
    assert int(t.n) == 4
    assert float(t.mean) == pytest.approx(0.15)
    assert float(t.sd) == pytest.approx(0.1290994, abs=1e-7)
    assert float(t.se) == pytest.approx(0.0645497, abs=1e-7)
    assert float(t.ci_low) == pytest.approx(-0.0554260, abs=1e-6)
    assert float(t.ci_high) == pytest.approx(0.3554260, abs=1e-6)
    assert float(t.p_value) == pytest.approx(0.1027281, abs=1e-6)
    assert str(stats.verdict(t.ci_low, t.ci_high, t.n)) == stats.NO_CHANGE


def test_paired_t_agrees_with_scipy_ttest_rel() -> None:
    rng = np.random.default_rng(3)
    b = rng.uniform(0, 1, 40)
    c = b + rng.normal(0.05, 0.1, 40)
    ours = stats.paired_t(c - b)
    ref = sps.ttest_rel(c, b)
    ci = ref.confidence_interval(0.95)
    assert float(ours.p_value) == pytest.approx(ref.pvalue, rel=1e-9)
    assert float(ours.ci_low) == pytest.approx(ci.low, rel=1e-9)
    assert float(ours.ci_high) == pytest.approx(ci.high, rel=1e-9)


def test_too_few_pairs_gives_no_interval_and_no_change() -> None:
    one = stats.paired_t(np.array([-0.9]))
    assert math.isnan(float(one.ci_low)) and math.isnan(float(one.ci_high))
    assert math.isnan(float(one.p_value)) and math.isnan(float(one.se))
    assert float(one.mean) == pytest.approx(-0.9)
    assert str(stats.verdict(one.ci_low, one.ci_high, one.n)) == stats.NO_CHANGE
    none = stats.paired_t(np.array([], dtype=np.float64))
    assert int(none.n) == 0 and math.isnan(float(none.mean))
    assert str(stats.verdict(none.ci_low, none.ci_high, none.n)) == stats.NO_CHANGE


def test_identical_shift_collapses_interval() -> None:
    # Every problem dropped by exactly 0.2: sd 0 (up to rounding), interval [-0.2, -0.2], p ~0.
    t = stats.paired_t(np.full(6, -0.2))
    assert float(t.ci_low) == pytest.approx(-0.2) and float(t.ci_high) == pytest.approx(-0.2)
    assert float(t.p_value) < 1e-12
    assert str(stats.verdict(t.ci_low, t.ci_high, t.n)) == stats.REGRESSION
    zero = stats.paired_t(np.zeros(6))
    assert float(zero.p_value) == 1.0
    assert str(stats.verdict(zero.ci_low, zero.ci_high, zero.n)) == stats.NO_CHANGE


def test_verdict_follows_the_contract_rule() -> None:
    # regression when ci_high < 0, improvement when ci_low > 0, else no_change.
    v = stats.verdict([-0.3, 0.1, -0.1, -0.2, 0.0], [-0.1, 0.4, 0.2, 0.0, 0.3], [9, 9, 9, 9, 9])
    assert v.tolist() == ["regression", "improvement", "no_change", "no_change", "no_change"]


def test_mcnemar_exact_by_hand() -> None:
    # 8 discordant problems, 1 favours the baseline, 7 the candidate.
    # P(X <= 1 | Bin(8, 1/2)) = (C(8,0) + C(8,1)) / 2^8 = 9 / 256
    # two-sided p = 2 × 9 / 256 = 18 / 256 = 0.0703125
    assert stats.mcnemar_exact(1, 7) == pytest.approx(18 / 256)
    assert stats.mcnemar_exact(7, 1) == pytest.approx(18 / 256)
    # 0 vs 3: P(X = 0) = 1/8, two-sided 1/4.
    assert stats.mcnemar_exact(0, 3) == pytest.approx(0.25)
    assert stats.mcnemar_exact(0, 0) == 1.0


def test_bootstrap_is_seeded_and_close_to_t_for_normal_data() -> None:
    rng = np.random.default_rng(11)
    d = rng.normal(0.1, 0.2, 200)
    first = stats.bootstrap_interval(d, seed=5)
    assert first == stats.bootstrap_interval(d, seed=5)
    t = stats.paired_t(d)
    assert first[0] == pytest.approx(float(t.ci_low), abs=0.01)
    assert first[1] == pytest.approx(float(t.ci_high), abs=0.01)
    assert all(math.isnan(x) for x in stats.bootstrap_interval(np.array([0.3])))


def test_bootstrap_blocks_cover_many_problems() -> None:
    # More problems than one block holds: still exactly `resamples` means.
    d = np.linspace(-1, 1, 5001)
    low, high = stats.bootstrap_interval(d, resamples=1000, seed=1)
    assert low < 0 < high


def _simulate_diffs(
    rng: np.random.Generator, reps: int, problems: int, trials: int, effect: float
) -> np.ndarray:
    """reps × problems per-problem differences: problem effects cancel, trials averaged."""
    true = rng.uniform(0.2, 0.8, (reps, problems, 1))
    noise_sd = rng.uniform(0.05, 0.3, (reps, problems, 1))  # heteroscedastic problems
    base = (true + rng.normal(0, 1, (reps, problems, trials)) * noise_sd).mean(axis=2)
    cand = (true + effect + rng.normal(0, 1, (reps, problems, trials)) * noise_sd).mean(axis=2)
    return np.asarray(cand - base)


def test_aa_false_regression_rate_near_five_percent() -> None:
    # 2000 seeded A/A comparisons of 30 problems × 3 trials, all at once.
    rng = np.random.default_rng(2024)
    d = _simulate_diffs(rng, 2000, 30, 3, 0.0)
    t = stats.paired_t(d)
    v = stats.verdict(t.ci_low, t.ci_high, t.n)
    regression = float(np.mean(v == stats.REGRESSION))
    any_change = float(np.mean(v != stats.NO_CHANGE))
    assert regression < 0.05  # one tail of a 95% interval: about 2.5%
    assert 0.035 < any_change < 0.065  # both tails: about 5%, not far above it
    assert 0.035 < float(np.mean(t.p_value < 0.05)) < 0.065


def test_injected_effect_is_covered_95_percent_of_the_time() -> None:
    rng = np.random.default_rng(7)
    d = _simulate_diffs(rng, 2000, 30, 3, -0.1)
    t = stats.paired_t(d)
    covered = float(np.mean((t.ci_low <= -0.1) & (t.ci_high >= -0.1)))
    assert 0.93 < covered < 0.97
    power = float(np.mean(stats.verdict(t.ci_low, t.ci_high, t.n) == stats.REGRESSION))
    assert power > 0.8


@settings(max_examples=examples(50), deadline=None)
@given(
    st.lists(st.floats(-1, 1, allow_nan=False), min_size=2, max_size=40),
    st.floats(-0.5, 0.5, allow_nan=False),
)
def test_interval_contains_mean_and_shifts_with_data(values: list[float], shift: float) -> None:
    d = np.array(values)
    t = stats.paired_t(d)
    assert float(t.ci_low) <= float(t.mean) <= float(t.ci_high)
    moved = stats.paired_t(d + shift)
    assert float(moved.ci_low) == pytest.approx(float(t.ci_low) + shift, abs=1e-9)
    assert float(moved.ci_high) == pytest.approx(float(t.ci_high) + shift, abs=1e-9)


@settings(max_examples=examples(50), deadline=None)
@given(st.integers(0, 30), st.integers(0, 30))
def test_mcnemar_is_symmetric_and_a_probability(b: int, c: int) -> None:
    p = stats.mcnemar_exact(b, c)
    assert 0.0 <= p <= 1.0
    assert p == pytest.approx(stats.mcnemar_exact(c, b))


@given(st.floats(min_value=0.01, max_value=0.999999))
def test_the_normal_quantile_is_scipy_stats_own_bit_for_bit(confidence: float) -> None:
    from pipeline.compare.metrics import z_value

    assert z_value(confidence) == float(sps.norm.ppf(0.5 + confidence / 2.0))


def test_the_95_percent_quantile_is_the_sql_macros() -> None:
    from pipeline.compare.metrics import z_value

    assert z_value(0.95) == 1.959963984540054  # z95() in sql/macros/metrics.sql


def test_history_starts_without_scipy_stats(sample_lake: Path) -> None:
    """Its intervals' normal quantile comes from scipy.special: importing scipy.stats for it
    took ~0.45 s of a 1.07 s `history` (compare still imports it, for McNemar's test)."""
    history = ["history", "--agent", "borealis", "--json", "--lake", str(sample_lake)]
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pipeline", *history],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)  # a real history, with its intervals
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert "scipy.special" in imported
    assert not [name for name in imported if name.startswith("scipy.stats")]


def test_the_holm_family_is_named_in_the_singular_for_one_env_type() -> None:
    assert [holm_family(k) for k in (1, 2, 4)] == [
        "Holm over 1 env type",
        "Holm over 2 env types",
        "Holm over 4 env types",
    ]
