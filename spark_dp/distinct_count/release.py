"""The DP release: GEM choice of ℓ̂, then a noisy lower bound on c(D; ℓ̂) (driver only).

Knop & Steinke 2023, Algorithm 1 lines 9–15 (exact curve) and Algorithm 2 lines 8–12 (greedy
curve), Theorems 1.1 and 1.2; docs/design/counting.md#scores, #release.

With the curve c(D; ℓ) (exact DC or greedy ĝ, sensitivity ℓ) and a plan (:mod:`.plan` splits ε
into ε_select = ε_count = ε/2; :mod:`.calibration` calibrates both steps):

    q_ℓ  = c(D; ℓ) − (ℓ/ε_count)·ln(1/(2β))            ℓ = 1..ℓ_max, Δ_ℓ = ℓ
    ℓ̂    = GEM(q, Δ, ε_select, β)                      ε_select-DP
    ν̂    = q_ℓ̂ + Lap(ℓ̂/ε_count)                        ε_count-DP for every fixed ℓ̂

so (ℓ̂, ν̂) is ε-DP (sequential composition, Lemma 3.2) and, since P[Lap(b) ≥ b·ln(1/(2β))] = β
and c(D; ℓ̂) ≤ DC(D), P[ν̂ ≤ DC(D)] ≥ 1 − β whatever ℓ̂ GEM returned. Post-processing (free):
``estimate`` = ν̂ + shift, the un-shifted noisy DC(D; ℓ̂) that the paper's tables report
(docs/design/counting.md#model), and ``max(0, ν̂)``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from spark_dp.distinct_count.plan import DistinctCountPlan, plan_release
from spark_dp.errors import ParameterError
from spark_dp.io.digest import ReadGate, values_digest
from spark_dp.randomness import Randomness
from spark_dp.release_ids import bind_release

__all__ = [
    "DPResult",
    "check_curve",
    "dp_distinct_count",
    "plan_parameters",
    "release_curve",
    "selection_probabilities",
    "utility_scores",
]


@dataclass(frozen=True)
class DPResult:
    """The released values (all ε-DP, or post-processing of DP values).

    Attributes:
        ell: ℓ̂, the privately selected contribution bound.
        lower_bound: ν̂, a lower bound on DC(D) with probability ≥ 1 − β (an integer).
        lower_bound_clamped: max(0, ν̂), still a 1 − β lower bound.
        estimate: ν̂ + shift = DC(D; ℓ̂) + X, un-shifted (not a lower bound).
        shift: the count step's lower-bound shift at ℓ̂, subtracted from the noisy count.
        noise_scale: the noise scale ℓ̂/ε_count = 2ℓ̂/ε.
        epsilon, epsilon_select, epsilon_count: total budget and its two shares.
        beta: failure probability of the lower bound (also used in GEM's t).
        max_contributions: ℓ_max; the candidates are 1..ℓ_max.
        method: ``exact`` (Algorithm 1) or ``greedy`` (Algorithm 2).
    """

    ell: int
    lower_bound: int | float
    lower_bound_clamped: int | float
    estimate: int | float
    shift: int | float
    noise_scale: float
    epsilon: float
    epsilon_select: float
    epsilon_count: float
    beta: float
    max_contributions: int
    method: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of the release."""
        return asdict(self)


def check_curve(curve: ArrayLike) -> NDArray[np.int64]:
    """The curve as an int64 array; it must be non-negative and non-decreasing.

    Raises:
        ParameterError: without printing any value (the curve is private).
    """
    c = np.asarray(curve)
    if c.ndim != 1 or len(c) == 0:
        raise ParameterError("the curve must be a non-empty 1-d array, one value per ℓ = 1..ℓ_max")
    if not np.all(np.isfinite(c)) or np.any(c < 0) or np.any(np.diff(c) < 0):
        raise ParameterError(
            "the curve must be non-negative and non-decreasing in ℓ (values not shown: private)"
        )
    return c.astype(np.int64)


def utility_scores(
    curve: ArrayLike, epsilon: float, beta: float, *, noise: str = "discrete-laplace"
) -> NDArray[np.float64] | NDArray[np.int64]:
    """q_ℓ = c(D; ℓ) − shift(ℓ) for ℓ = 1..len(curve) (Alg. 1 line 11;
    docs/design/counting.md#scores, #discrete-laplace)."""
    c = check_curve(curve)
    return plan_release(epsilon, beta, len(c), noise=noise).scores(c)


def selection_probabilities(
    curve: ArrayLike, epsilon: float, beta: float, *, noise: str = "discrete-laplace"
) -> NDArray[np.float64]:
    """P[ℓ̂ = ℓ] for ℓ = 1..ℓ_max: GEM at ε/2 on q with Δ_ℓ = ℓ (private; tests and debug)."""
    c = check_curve(curve)
    plan = plan_release(epsilon, beta, len(c), noise=noise)
    return plan.select.probabilities(plan.scores(c))


def release_curve(curve: ArrayLike, plan: DistinctCountPlan, randomness: Randomness) -> DPResult:
    """Release (ℓ̂, ν̂) from the curve c(D; ℓ), ℓ = 1..ℓ_max, as ``plan`` says (ε-DP).

    GEM chooses ℓ̂ on the scores q (``plan.select``), then ν̂ = q_ℓ̂ + noise (``plan.count``):
    the same curve value the GEM saw (docs/design/counting.md#release).

    Args:
        curve: c(D; ℓ) for ℓ = 1..``plan.max_contributions`` (exact DC or the greedy curve).
        plan: the calibration (:func:`~spark_dp.distinct_count.plan.plan_release`).
        randomness: GEM and the count noise use its child streams ``gem`` and ``count noise``.
            An unbound one is bound to the release of (the plan, the keyed digest of the
            curve, key): the release is a function of the curve only, so the same key on the
            same curve is the same release, and on another curve independent noise.

    Returns:
        :class:`DPResult`.
    """
    c = check_curve(curve)
    if len(c) != plan.max_contributions:
        raise ParameterError(
            f"the curve must hold one value per ℓ = 1..max_contributions="
            f"{plan.max_contributions}, got {len(c)}"
        )
    if not randomness.bound:
        randomness = bind_release(
            randomness,
            family="distinct_count",
            algorithm=plan.method,
            parameters=plan_parameters(plan),
            digests=[values_digest("curve", c.tolist(), ReadGate.keyed_by(randomness))],
            tables=["curve"],
        )
    q = plan.scores(c)
    ell = plan.select.choose(q, randomness.child("gem").driver())
    scale = plan.count.scale(ell)  # sensitivity of c(·; ℓ̂) is ℓ̂
    noise = plan.count.sample(ell, randomness.child("count noise").driver())
    shift = np.asarray(plan.count.shift(ell)).item()
    nu = np.asarray(q[ell - 1]).item() + noise
    return DPResult(
        ell=int(ell),
        lower_bound=nu,
        lower_bound_clamped=max(0, nu),
        estimate=nu + shift,
        shift=shift,
        noise_scale=scale,
        epsilon=plan.epsilon,
        epsilon_select=plan.select.epsilon,
        epsilon_count=plan.count.epsilon,
        beta=plan.beta,
        max_contributions=plan.max_contributions,
        method=plan.method,
    )


def plan_parameters(plan: DistinctCountPlan) -> dict[str, Any]:
    """The public constants of a plan, as a release id takes them (its method, ε, β, ℓ_max and
    each step's calibration)."""
    return {
        "method": plan.method,
        "epsilon": plan.epsilon,
        "beta": plan.beta,
        "max_contributions": plan.max_contributions,
        "steps": [s.to_report() for s in plan.steps],
    }


def dp_distinct_count(
    curve: ArrayLike,
    *,
    epsilon: float,
    beta: float = 0.05,
    randomness: Randomness,
    method: str = "exact",
    noise: str = "discrete-laplace",
) -> DPResult:
    """Release (ℓ̂, ν̂) from the curve c(D; ℓ), ℓ = 1..ℓ_max (ε-DP;
    docs/design/counting.md#mechanism).

    :func:`~spark_dp.distinct_count.plan.plan_release` with ℓ_max = ``len(curve)``, then
    :func:`release_curve`.

    Args:
        curve: c(D; ℓ) for ℓ = 1..ℓ_max (exact DC or the greedy curve); sensitivity ℓ each.
            Its length is ℓ_max, which must be public and chosen without looking at the data.
        epsilon: total budget ε (ε/2 for GEM, ε/2 for the Laplace release).
        beta: failure probability of the lower bound, in (0, ½).
        randomness: the job's randomness; GEM and the Laplace noise use their own child streams.
        method: recorded in the result (``exact`` or ``greedy``).
        noise: the count's noise (``discrete-laplace``, exact, or the paper's ``laplace``).

    Returns:
        :class:`DPResult`.
    """
    c = check_curve(curve)
    plan = plan_release(epsilon, beta, len(c), method=method, noise=noise)
    return release_curve(c, plan, randomness)
