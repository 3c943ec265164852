"""The one-change edits the broken variants make, and the wrappers that run them.

Every edit keeps what the calibration *states* (its ε, δ, shares and cap, so the report and the
budget store would show the correct figures) and changes what the run *uses*: a calibration
bug that hides itself in the report, which only the audit's comparisons can find. The edits are
per calibration kind (the variant knows its base mechanism, so it knows the kind), never an
``isinstance`` over calibration classes.

Nothing here is registered: the job, ``calibrate`` and the bench cannot reach it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from fractions import Fraction
from types import ModuleType
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_dp.audit.choice import ChoiceTarget
from spark_dp.distinct_count.calibration import DiscreteLaplaceRelease, GemSelection
from spark_dp.dp.calibration import Budget, gaussian_sigma
from spark_dp.dp.protocol import RoundCalibration
from spark_dp.partition_selection.auto.calibration import DeltaChoice
from spark_dp.partition_selection.calibration import (
    GaussianThresholding,
    LaplaceThresholding,
    LaplaceWeightAndThreshold,
    MadConstants,
    MadRound,
    TruncatedGeometric,
    WeightAndThreshold,
    gaussian_threshold,
    gaussian_thresholding_threshold,
    laplace_weighted_threshold,
)
from spark_dp.partition_selection.columns import ITEM, NOISY_WEIGHT, USER_COUNT, WEIGHT
from spark_dp.partition_selection.oracles import (
    OracleResult,
    greedy_update_histogram,
    laplace_release,
)
from spark_dp.partition_selection.result import SelectionPlan
from spark_dp.partition_selection.weighting import basic_weights
from spark_dp.randomness import DriverNoise, Randomness
from spark_dp.report import Step

__all__ = [
    "NO_CAP",
    "HalfSensitivityGem",
    "ScaledCount",
    "argmax_choice",
    "doubled_singleton_weights",
    "full_delta",
    "greedy_update_prefix",
    "map_rounds",
    "noiseless_choice",
    "on_mad",
    "patched",
    "reroute_undivided",
    "rho_full_delta",
    "sigma_double_epsilon",
    "uncapped",
    "undivided_delta",
]

NO_CAP = 10**9
"""The cap of the no-cap variants: larger than any user's number of items."""

C = TypeVar("C", bound=RoundCalibration)


def map_rounds(plan: SelectionPlan, kind: type[C], change: Callable[[C], C]) -> SelectionPlan:
    """``plan`` with every round's calibration (a ``kind``) changed."""
    steps = tuple(
        Step(s.label, change(plan.calibration(k, kind))) for k, s in enumerate(plan.steps)
    )
    return replace(plan, steps=steps)


# --------------------------------------------------------------------------- Gaussian rounds


def rho_full_delta(cal: WeightAndThreshold) -> WeightAndThreshold:
    """ρ for the round's whole δ instead of its share δ/2 (σ unchanged)."""
    thr = gaussian_threshold(cal.sigma, cal.delta, cal.max_contributions, cal.h_scale)
    return replace(cal, rho=thr.rho, argmax_t=thr.argmax_t)


def full_delta(cal: WeightAndThreshold) -> WeightAndThreshold:
    """σ for (ε, δ) and ρ for δ: the round's whole δ spent twice."""
    sigma = gaussian_sigma(Budget(cal.epsilon, cal.delta))
    thr = gaussian_threshold(sigma, cal.delta, cal.max_contributions, cal.h_scale)
    return replace(cal, sigma=sigma, rho=thr.rho, argmax_t=thr.argmax_t)


def sigma_double_epsilon(cal: WeightAndThreshold) -> WeightAndThreshold:
    """σ for (2ε, δ/2); ρ recomputed from that σ, so the novel-item rate stays δ/2."""
    sigma = gaussian_sigma(Budget(2.0 * cal.epsilon, cal.delta_noise))
    thr = gaussian_threshold(sigma, cal.delta_threshold, cal.max_contributions, cal.h_scale)
    return replace(cal, sigma=sigma, rho=thr.rho, argmax_t=thr.argmax_t)


def undivided_delta(total_delta: float) -> Callable[[WeightAndThreshold], WeightAndThreshold]:
    """σ and ρ of a round for the whole δ of the release (halved between them) instead of
    the round's share f_r·δ, while the round still states f_r·δ (DP-SIPS' split of δ lost)."""

    def change(cal: WeightAndThreshold) -> WeightAndThreshold:
        half = total_delta / 2.0
        sigma = gaussian_sigma(Budget(cal.epsilon, half))
        thr = gaussian_threshold(sigma, half, cal.max_contributions, cal.h_scale)
        return replace(cal, sigma=sigma, rho=thr.rho, argmax_t=thr.argmax_t)

    return change


def uncapped(cal: Any) -> Any:
    """The cap lifted to NO_CAP (a calibration with a ``max_contributions`` field)."""
    return replace(cal, max_contributions=NO_CAP)


def on_mad(
    change: Callable[[WeightAndThreshold], WeightAndThreshold],
) -> Callable[[MadRound], MadRound]:
    """A Gaussian-round edit applied to a MAD round (τ = ρ + β·σ follows the edited ρ, σ)."""

    def edit(cal: MadRound) -> MadRound:
        gaussian, c = change(cal.gaussian), cal.constants
        constants = MadConstants.for_round(
            gaussian,
            beta=c.beta,
            max_adaptive_degree=c.max_adaptive_degree,
            b_min=c.b_min,
            b_max=c.b_max,
        )
        return replace(cal, gaussian=gaussian, constants=constants)

    return edit


def reroute_undivided(cal: MadRound) -> MadRound:
    """MAD's re-sent excess α·e_u not divided by d_max: every adaptive user re-sends α·e_u
    to each of its items (α·d_max in the divisor's place)."""
    c = cal.constants
    return replace(cal, constants=replace(c, alpha=c.alpha * c.max_adaptive_degree))


# --------------------------------------------------------------------------- Laplace rounds


def laplace_double_epsilon(cal: LaplaceWeightAndThreshold) -> LaplaceWeightAndThreshold:
    """Laplace scale 1/(2ε); ρ_Lap recomputed for it (the novel-item rate stays δ)."""
    thr = laplace_weighted_threshold(Budget(2.0 * cal.epsilon, cal.delta), cal.max_contributions)
    return replace(cal, scale=cal.scale / 2.0, rho=thr.rho, argmax_t=thr.argmax_t)


def laplace_rho_full_delta(cal: LaplaceWeightAndThreshold) -> LaplaceWeightAndThreshold:
    """ρ_Lap with the whole δ on each novel item instead of its per-item share
    1 − (1 − δ)^(1/t): the maximum over t is then at t = 1, ρ = 1 + ln(1/(2δ))/ε."""
    rho = 1.0 + cal.scale * math.log(1.0 / (2.0 * cal.delta))
    return replace(cal, rho=rho, argmax_t=1)


# --------------------------------------------------------------------------- count thresholding


def tg_double_epsilon(cal: TruncatedGeometric) -> TruncatedGeometric:
    """Keep probabilities for 2ε (stating ε)."""
    broken = TruncatedGeometric.for_budget(
        Budget(2.0 * cal.epsilon, cal.delta), cal.max_contributions
    )
    return replace(broken, epsilon=cal.epsilon)


def tg_full_delta(cal: TruncatedGeometric) -> TruncatedGeometric:
    """Keep probabilities with δ' = δ per item instead of its share 1 − (1 − δ)^(1/k)."""
    broken = TruncatedGeometric.for_budget(Budget(cal.adjusted_epsilon, cal.delta), 1)
    return replace(broken, epsilon=cal.epsilon, max_contributions=cal.max_contributions)


def laplace_count_double_epsilon(cal: LaplaceThresholding) -> LaplaceThresholding:
    """Scale k/(2ε) and its threshold (stating ε)."""
    broken = LaplaceThresholding.for_budget(
        Budget(2.0 * cal.epsilon, cal.delta), cal.max_contributions
    )
    return replace(broken, epsilon=cal.epsilon)


def laplace_count_full_delta(cal: LaplaceThresholding) -> LaplaceThresholding:
    """T = 1 − b·ln(2δ): the whole δ on each item instead of its per-item share."""
    return replace(cal, threshold=1.0 - cal.scale * math.log(2.0 * cal.delta))


def gaussian_count_double_epsilon(cal: GaussianThresholding) -> GaussianThresholding:
    """σ for (2ε, δ/2) and its threshold (stating ε)."""
    broken = GaussianThresholding.for_budget(
        Budget(2.0 * cal.epsilon, cal.delta), cal.max_contributions
    )
    return replace(broken, epsilon=cal.epsilon)


def gaussian_count_full_delta(cal: GaussianThresholding) -> GaussianThresholding:
    """The threshold for the whole δ instead of its share δ/2 (σ unchanged)."""
    threshold = gaussian_thresholding_threshold(cal.sigma, cal.delta, cal.max_contributions)
    return replace(cal, threshold=threshold)


def half_k(kind: Any) -> Callable[[Any], Any]:
    """A count-thresholding calibration built for k/2 items per user, stating (and capping
    at) k."""

    def change(cal: Any) -> Any:
        broken = kind.for_budget(Budget(cal.epsilon, cal.delta), max(1, cal.max_contributions // 2))
        return replace(broken, max_contributions=cal.max_contributions)

    return change


# --------------------------------------------------------------------------- weights, oracles


def doubled_singleton_weights(capped: DataFrame) -> DataFrame:
    """Basic weights, doubled on the items that exactly one user holds."""
    holders = capped.groupBy(ITEM).agg(F.count(F.lit(1)).alias(USER_COUNT))
    weight = F.when(F.col(USER_COUNT) == 1, 2.0 * F.col(WEIGHT)).otherwise(F.col(WEIGHT))
    return basic_weights(capped).join(holders, ITEM).select(ITEM, weight.alias(WEIGHT))


def greedy_update_prefix(
    pairs: pd.DataFrame,
    *,
    epsilon: float,
    delta: float,
    beta: float = 4.0,
    randomness: Randomness,
) -> OracleResult:
    """GreedyUpdate with Laplace noise on every item of the union, zero weights too."""
    w, names, calibration = greedy_update_histogram(
        pairs, epsilon=epsilon, delta=delta, beta=beta, randomness=randomness
    )
    items = laplace_release(w, names, calibration, randomness)  # every item, not w > 0
    return OracleResult("greedy-update", items, epsilon, delta, calibration)


@contextmanager
def patched(module: ModuleType, **names: Any) -> Iterator[None]:
    """Module attributes replaced for the duration (a broken run swaps a step of a real one;
    the audits run one at a time)."""
    saved = {n: getattr(module, n) for n in names}
    try:
        for n, value in names.items():
            setattr(module, n, value)
        yield
    finally:
        for n, value in saved.items():
            setattr(module, n, value)


def noiseless_column(real: Callable[..., DataFrame]) -> Callable[..., DataFrame]:
    """``noisy_weights`` that also keeps the noiseless weight (as ``_noiseless``)."""

    def noisy_weights(weights: DataFrame, **kw: Any) -> DataFrame:
        noisy = real(weights, **kw)
        # -> (item, noisy_weight_private, _noiseless)
        return noisy.join(weights.select(ITEM, F.col(WEIGHT).alias("_noiseless")), ITEM)

    return noisy_weights


def noiseless_biases(real: Callable[..., tuple[DataFrame, DataFrame]]) -> Callable[..., Any]:
    """MAD2R's round-two rule with the removals from round 1's noisy weights (U1 is released)
    but the biases from the noiseless ones."""

    def round_two_items(noisy: DataFrame, **kw: Any) -> tuple[DataFrame, DataFrame]:
        removed, _ = real(noisy.select(ITEM, NOISY_WEIGHT), **kw)
        clean = noisy.select(ITEM, F.col("_noiseless").alias(NOISY_WEIGHT))
        _, biased = real(clean, **kw)
        return removed, biased

    return round_two_items


# --------------------------------------------------------------------------- distinct count


UNCAPPED_ELL = 64
"""ℓ of the uncapped curve: more items than any person of the audit's datasets holds."""


def uncapped_curve(real: Callable[..., Any]) -> Callable[..., Any]:
    """c(D; ℓ) without the bound ℓ per person: every ℓ gets the count of the uncapped curve."""

    def curve(pairs: Any, max_contributions: int, **options: Any) -> Any:
        full = real(pairs, UNCAPPED_ELL, **options)
        return np.full(max_contributions, full[-1], dtype=np.int64)

    return curve


@dataclass(frozen=True)
class ScaledCount(DiscreteLaplaceRelease):
    """The discrete-Laplace count with its scale divided by ``factor`` (stating ε_count)."""

    factor: float = 2.0

    def exact_scale(self, ell: int) -> Fraction:
        """ℓ/(factor·ε_count)."""
        return Fraction(int(ell)) / (Fraction(self.epsilon) * Fraction(self.factor))


@dataclass(frozen=True)
class HalfSensitivityGem(GemSelection):
    """GEM told that q_ℓ has sensitivity ℓ/2 (it has ℓ)."""

    @property
    def sensitivities(self) -> NDArray[np.float64]:
        """Δ_ℓ = ℓ/2."""
        return np.arange(1, self.max_contributions + 1, dtype=float) / 2.0


def argmax_choice(choice: DeltaChoice, totals: list[int], noise: DriverNoise) -> int:
    """Δ0 from the noiseless scores: the argmax of s(c), no GEM (the noise is not drawn)."""
    best = max(range(len(totals)), key=lambda k: (totals[k], -k))
    return choice.candidates[best]


def noiseless_choice(target: ChoiceTarget) -> ChoiceTarget:
    """The choice of Δ0 by :func:`argmax_choice` (the broken variant's one change)."""
    return replace(target, choose=argmax_choice)
