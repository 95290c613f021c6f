"""Statistics for comparing two agent versions: pure, vectorized numpy/scipy.

The unit of analysis is the problem, never the run: trials of one problem are
averaged first, so repeated trials cannot masquerade as independent evidence.
This is the clustered standard error of Miller (2024), "Adding Error Bars to
Evals", section on paired differences: with ``d_i`` the per-problem difference
(candidate mean minus baseline mean), the estimate is ``mean(d)`` and its
standard error is ``sd(d) / sqrt(n)``; the interval uses Student's t with
``n - 1`` degrees of freedom, which is what makes small samples honest.

Every function here takes arrays and reduces along the last axis, so the same
code serves one comparison or a thousand simulated ones at once. SciPy is imported
inside the functions that need a distribution, so commands that never compute one
(and ``--help``) start without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

REGRESSION: Final = "regression"
IMPROVEMENT: Final = "improvement"
NO_CHANGE: Final = "no_change"

METHOD_PAIRED_T: Final = "paired_t"
METHOD_BOOTSTRAP: Final = "bootstrap_percentile"

DEFAULT_CONFIDENCE: Final = 0.95
# Below this many paired problems an interval exists but says little: the
# result carries ``insufficient_data`` so nobody ships on it unwarned.
MIN_PAIRS_TO_CONCLUDE: Final = 5
# With fewer than two pairs there is no spread, hence no interval at all.
MIN_PAIRS_FOR_INTERVAL: Final = 2
DEFAULT_BOOTSTRAP_RESAMPLES: Final = 4000
DEFAULT_BOOTSTRAP_SEED: Final = 20240101
# Resampling is done in blocks of at most this many cells, so a 100k-problem
# comparison does not allocate resamples x n floats at once.
_BOOTSTRAP_BLOCK_CELLS: Final = 4_000_000


@dataclass(frozen=True)
class TInterval:
    """Arrays (or 0-d arrays) of the paired-t summary along the reduced axis."""

    n: npt.NDArray[np.int64]
    mean: FloatArray
    sd: FloatArray
    se: FloatArray
    ci_low: FloatArray
    ci_high: FloatArray
    p_value: FloatArray


def t_interval_from_moments(
    n: npt.ArrayLike,
    mean: npt.ArrayLike,
    sd: npt.ArrayLike,
    confidence: float = DEFAULT_CONFIDENCE,
) -> TInterval:
    """Student-t interval and two-sided p-value (H0: true mean 0) from n, mean and sd.

    Miller 2024: "SE = sd(d) / sqrt(n)" over clusters (problems); the interval
    is ``mean ± t_{1-α/2, n-1} × SE``. Where n < 2 everything but the mean is
    NaN. Where sd is 0 the interval collapses to the point and the p-value is 0
    for a non-zero mean (every problem moved by exactly that amount), 1 for 0.
    """
    n_arr = np.asarray(n, dtype=np.int64)
    mean_arr = np.asarray(mean, dtype=np.float64)
    sd_arr = np.asarray(sd, dtype=np.float64)
    enough = n_arr >= MIN_PAIRS_FOR_INTERVAL
    df = np.where(enough, n_arr - 1, 1).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.where(enough, sd_arr / np.sqrt(np.maximum(n_arr, 1)), np.nan)
        t_stat = np.where(se > 0, mean_arr / se, np.nan)
        crit, p_spread = _t_quantile_and_tail(df, t_stat, confidence, needed=bool(enough.any()))
        half = crit * se
    p_flat = np.where(mean_arr == 0, 1.0, 0.0)
    p_value = np.where(enough, np.where(se > 0, p_spread, p_flat), np.nan)
    return TInterval(
        n=n_arr,
        mean=mean_arr,
        sd=np.where(enough, sd_arr, np.nan),
        se=se,
        ci_low=np.where(enough, mean_arr - half, np.nan),
        ci_high=np.where(enough, mean_arr + half, np.nan),
        p_value=p_value,
    )


def _t_quantile_and_tail(
    df: FloatArray, t_stat: FloatArray, confidence: float, *, needed: bool
) -> tuple[FloatArray, FloatArray]:
    """Student t's two-sided critical value and ``2 * sf(|t|)``; NaN where not ``needed``
    (no pair has the two problems an interval needs: a lake of one version per agent)."""
    if not needed:
        nothing = np.full(np.broadcast(df, t_stat).shape, np.nan)
        return nothing, nothing
    # scipy.stats.t's ppf and sf are these two functions; scipy.special imports in half
    # the time of scipy.stats (~0.7 s of CPU less), which every score and ingest pays.
    from scipy.special import stdtr, stdtrit

    crit: FloatArray = stdtrit(df, 0.5 + confidence / 2.0)
    tail: FloatArray = 2.0 * stdtr(df, -np.abs(t_stat))
    return crit, tail


def paired_t(differences: npt.ArrayLike, confidence: float = DEFAULT_CONFIDENCE) -> TInterval:
    """Paired t over the last axis of per-problem differences (NaN cells are not pairs)."""
    d = np.asarray(differences, dtype=np.float64)
    present = ~np.isnan(d)
    n = present.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(n > 0, np.nansum(d, axis=-1) / np.maximum(n, 1), np.nan)
        centred = np.where(present, d - mean[..., None], 0.0)
        var = (centred**2).sum(axis=-1) / np.maximum(n - 1, 1)
    return t_interval_from_moments(n, mean, np.sqrt(var), confidence)


def bootstrap_interval(
    differences: npt.ArrayLike,
    *,
    resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES,
    seed: int = DEFAULT_BOOTSTRAP_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
) -> tuple[float, float]:
    """Percentile bootstrap of the mean, resampling problems (clusters) with replacement.

    Fixed seed, so the same data always gives the same interval. NaN, NaN when
    there are fewer than two problems.
    """
    d = np.asarray(differences, dtype=np.float64).ravel()
    n = d.size
    if n < MIN_PAIRS_FOR_INTERVAL:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    per_block = max(1, _BOOTSTRAP_BLOCK_CELLS // n)
    means = np.empty(resamples, dtype=np.float64)
    # Loop over blocks of resamples (a handful), never over problems.
    for start in range(0, resamples, per_block):
        stop = min(resamples, start + per_block)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = d[idx].mean(axis=1)
    alpha = 1.0 - confidence
    low, high = np.quantile(means, [alpha / 2.0, 1.0 - alpha / 2.0])
    return (float(low), float(high))


def verdict(
    ci_low: npt.ArrayLike, ci_high: npt.ArrayLike, n: npt.ArrayLike
) -> npt.NDArray[np.str_]:
    """CONTRACT 7: "`regression` when ci_high < 0, `improvement` when ci_low > 0, else `no_change`".

    With fewer than two pairs there is no interval, so the answer is no_change. An interval
    that is not finite (a score that overflowed upstream) is a regression: a gate must
    not pass what it cannot measure.
    """
    low = np.asarray(ci_low, dtype=np.float64)
    high = np.asarray(ci_high, dtype=np.float64)
    enough = np.asarray(n) >= MIN_PAIRS_FOR_INTERVAL
    unmeasured = ~(np.isfinite(low) & np.isfinite(high))
    return np.select(
        [enough & (unmeasured | (high < 0)), enough & (low > 0)],
        [np.str_(REGRESSION), np.str_(IMPROVEMENT)],
        default=np.str_(NO_CHANGE),
    )


def mcnemar_exact(baseline_only: int, candidate_only: int) -> float:
    """Exact McNemar test (a two-sided sign test on the discordant problems).

    Under H0 a discordant problem is equally likely to favour either version,
    so ``candidate_only ~ Binomial(baseline_only + candidate_only, 1/2)``. With
    no discordant problems there is no evidence either way: p = 1.
    """
    from scipy import stats as sps

    discordant = baseline_only + candidate_only
    if discordant == 0:
        return 1.0
    return float(sps.binomtest(candidate_only, discordant, 0.5).pvalue)
