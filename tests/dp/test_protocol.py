"""What every calibration states about itself (spark_dp.dp.protocol), checked against
independent formulas: the release model the audit tests a round against, and the tail of the
distinct count's noise."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from spark_dp.distinct_count.calibration import DiscreteLaplaceRelease, LaplaceRelease
from spark_dp.dp.calibration import Budget
from spark_dp.partition_selection.calibration import (
    GaussianThresholding,
    LaplaceThresholding,
    LaplaceWeightAndThreshold,
    MadRound,
    TruncatedGeometric,
    WeightAndThreshold,
)

WEIGHTS = (0.0, 0.5, 1.0, 3.0, 7.5, 20.0, 40.0)


def test_gaussian_rounds_release_with_the_normal_tail():
    w = WeightAndThreshold.for_budget(Budget(1.0, 1e-6), max_contributions=10)
    mad = MadRound.for_budget(Budget(1.0, 1e-6), 10, beta=2.0, d_max=50, b_max=2.0, b_min=0.5)
    thr = GaussianThresholding.for_budget(Budget(1.0, 1e-6), max_contributions=4)
    for cal, level in ((w, w.rho), (mad, mad.rho), (thr, thr.threshold)):
        for x in WEIGHTS:
            expected = stats.norm.sf((level - x) / cal.sigma)
            assert cal.release_probability(x) == pytest.approx(expected, rel=1e-12, abs=1e-300)
    assert (mad.max_contributions, mad.argmax_t, mad.delta_noise) == (
        10,
        mad.gaussian.argmax_t,
        5e-7,
    )
    assert (thr.max_contributions, thr.argmax_t) == (4, None)


def test_laplace_rounds_release_with_the_laplace_tail():
    w = LaplaceWeightAndThreshold.for_budget(Budget(1.0, 1e-6), max_contributions=10)
    thr = LaplaceThresholding.for_budget(Budget(1.0, 1e-6), max_contributions=4)
    for cal, level in ((w, w.rho), (thr, thr.threshold)):
        assert cal.delta_noise == 0.0 and cal.delta_threshold == cal.delta
        for x in WEIGHTS:
            expected = stats.laplace.sf((level - x) / cal.scale)
            assert cal.release_probability(x) == pytest.approx(expected, rel=1e-12, abs=1e-300)


def test_the_truncated_geometric_releases_with_its_keep_probability():
    tg = TruncatedGeometric.for_budget(Budget(1.0, 1e-3), max_contributions=2)
    for n in range(0, tg.crossover_2 + 3):
        assert tg.release_probability(n) == float(tg.keep_probability(n))
    assert tg.release_probability(1) == pytest.approx(tg.adjusted_delta)  # p(1) = δ'
    assert tg.delta_noise == tg.adjusted_delta and tg.max_contributions == 2


@pytest.mark.parametrize("ell", [1, 3, 8])
def test_the_count_noise_tails_match_the_distributions(ell):
    x = np.arange(-25, 26)
    dlap = DiscreteLaplaceRelease(0.7, 0.05)
    b = dlap.scale(ell)
    support = np.arange(-2000, 2001)
    pmf = np.exp(-np.abs(support) / b)
    pmf /= pmf.sum()
    expected = np.array([pmf[support >= v].sum() for v in x])
    assert dlap.noise_at_least(x, ell) == pytest.approx(expected, rel=1e-9, abs=1e-15)
    lap = LaplaceRelease(0.7, 0.05)
    xs = np.linspace(-30.0, 30.0, 61)
    expected = stats.laplace.sf(xs / lap.scale(ell))
    assert lap.noise_at_least(xs, ell) == pytest.approx(expected, rel=1e-12, abs=1e-300)
    assert math.isclose(lap.scale(ell), ell / 0.7)
