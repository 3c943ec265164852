"""The DP release: GEM choice of ℓ at ε/2, then a Laplace lower bound at ε/2 (driver only).

Knop & Steinke 2023, Algorithm 1 lines 9–15 (exact curve) and Algorithm 2 lines 8–12 (greedy
curve), Theorems 1.1 and 1.2; spec distinct_count.md §3.2–§3.5 and §8.3.

With the curve c(D; ℓ) (exact DC or greedy ĝ, sensitivity ℓ) and total budget ε:

    q_ℓ  = c(D; ℓ) − (2ℓ/ε)·ln(1/(2β))                 ℓ = 1..ℓ_max, Δ_ℓ = ℓ
    ℓ̂    = GEM(q, Δ, ε_g = ε/2, β)                     ε/2-DP
    ν̂    = q_ℓ̂ + Lap(2ℓ̂/ε)                              ε/2-DP for every fixed ℓ̂

so (ℓ̂, ν̂) is ε-DP (sequential composition, Lemma 3.2) and, since P[Lap(b) ≥ b·ln(1/(2β))] = β
and c(D; ℓ̂) ≤ DC(D), P[ν̂ ≤ DC(D)] ≥ 1 − β whatever ℓ̂ GEM returned.

The shift is the paper's (2ℓ/ε)·ln(1/(2β)) = (ℓ/ε_count)·ln(1/(2β)); the authors' public
experiment code subtracts half of it, which raises the failure probability from β to √(β/2)
(spec §8.1 A6): not followed. Post-processing (free): ``estimate`` = ν̂ + shift, the un-shifted
noisy DC(D; ℓ̂) that the paper's tables report (spec §1.4, A5), and ``max(0, ν̂)``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from spark_dp.calibration import laplace_scale
from spark_dp.checks import check_epsilon, check_int_at_least, check_probability
from spark_dp.distinct_count.gem import gem_probabilities, gem_select
from spark_dp.errors import ParameterError
from spark_dp.randomness import Randomness

__all__ = [
    "SELECT_FRACTION",
    "DPResult",
    "check_curve",
    "dp_distinct_count",
    "lower_bound_shift",
    "selection_probabilities",
    "utility_scores",
]

#: Share of ε spent by GEM on choosing ℓ; the rest goes to the Laplace release (Alg. 1: ½).
SELECT_FRACTION = 0.5


@dataclass(frozen=True)
class DPResult:
    """The released values (all ε-DP, or post-processing of DP values).

    Attributes:
        ell: ℓ̂, the privately selected contribution bound.
        lower_bound: ν̂, a lower bound on DC(D) with probability ≥ 1 − β.
        lower_bound_clamped: max(0, ν̂), still a 1 − β lower bound.
        estimate: ν̂ + shift = DC(D; ℓ̂) + Lap(2ℓ̂/ε), un-shifted (not a lower bound).
        shift: (ℓ̂/ε_count)·ln(1/(2β)), subtracted from the noisy count.
        noise_scale: Laplace scale ℓ̂/ε_count = 2ℓ̂/ε.
        epsilon, epsilon_select, epsilon_count: total budget and its two shares.
        beta: failure probability of the lower bound (also used in GEM's t).
        ell_max: ℓ_max; the candidates are 1..ℓ_max.
        method: ``exact`` (Algorithm 1) or ``greedy`` (Algorithm 2).
    """

    ell: int
    lower_bound: float
    lower_bound_clamped: float
    estimate: float
    shift: float
    noise_scale: float
    epsilon: float
    epsilon_select: float
    epsilon_count: float
    beta: float
    ell_max: int
    method: str

    def to_dict(self) -> dict:
        """JSON-ready dict of the release."""
        return asdict(self)


def check_curve(curve) -> np.ndarray:
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


def _check_budget(epsilon: float, beta: float) -> tuple[float, float]:
    epsilon = check_epsilon(epsilon)
    beta = check_probability("beta", beta, low=0.0, high=0.5)
    return epsilon, beta


def lower_bound_shift(ell: int | np.ndarray, epsilon_count: float, beta: float):
    """(ℓ/ε_count)·ln(1/(2β)): P[Lap(ℓ/ε_count) ≥ shift] = β (paper eq. (4), spec §3.4)."""
    return np.asarray(ell, dtype=float) / epsilon_count * math.log(1.0 / (2.0 * beta))


def utility_scores(curve, epsilon: float, beta: float) -> np.ndarray:
    """q_ℓ = c(D; ℓ) − (2ℓ/ε)·ln(1/(2β)) for ℓ = 1..len(curve) (Alg. 1 line 11; spec §3.2)."""
    c = check_curve(curve)
    epsilon, beta = _check_budget(epsilon, beta)
    ells = np.arange(1, len(c) + 1)
    return c - lower_bound_shift(ells, epsilon * (1.0 - SELECT_FRACTION), beta)


def selection_probabilities(curve, epsilon: float, beta: float) -> np.ndarray:
    """P[ℓ̂ = ℓ] for ℓ = 1..ℓ_max: GEM at ε/2 on q with Δ_ℓ = ℓ (private; tests and debug)."""
    q = utility_scores(curve, epsilon, beta)
    ells = np.arange(1, len(q) + 1, dtype=float)
    return gem_probabilities(q, ells, epsilon * SELECT_FRACTION, beta)


def dp_distinct_count(
    curve,
    *,
    epsilon: float,
    beta: float = 0.05,
    randomness: Randomness,
    method: str = "exact",
) -> DPResult:
    """Release (ℓ̂, ν̂) from the curve c(D; ℓ), ℓ = 1..ℓ_max (ε-DP; spec §3.5).

    Args:
        curve: c(D; ℓ) for ℓ = 1..ℓ_max (exact DC or the greedy curve); sensitivity ℓ each.
            Its length is ℓ_max, which must be public and chosen without looking at the data.
        epsilon: total budget ε (ε/2 for GEM, ε/2 for the Laplace release).
        beta: failure probability of the lower bound, in (0, ½).
        randomness: the job's randomness; GEM and the Laplace noise use their own child streams.
        method: recorded in the result (``exact`` or ``greedy``).

    Returns:
        :class:`DPResult`.
    """
    c = check_curve(curve)
    epsilon, beta = _check_budget(epsilon, beta)
    check_int_at_least("ell_max", len(c), 1)
    eps_select = epsilon * SELECT_FRACTION
    eps_count = epsilon - eps_select
    q = utility_scores(c, epsilon, beta)
    ells = np.arange(1, len(c) + 1, dtype=float)
    index = gem_select(q, ells, eps_select, beta, randomness.child("gem").driver())
    ell = index + 1
    scale = laplace_scale(eps_count, sensitivity=float(ell))  # sensitivity of c(·; ℓ̂) is ℓ̂
    noise = float(randomness.child("laplace").driver().laplace(scale, 1)[0])
    shift = float(lower_bound_shift(ell, eps_count, beta))
    nu = float(q[index]) + noise
    return DPResult(
        ell=int(ell),
        lower_bound=nu,
        lower_bound_clamped=max(0.0, nu),
        estimate=nu + shift,
        shift=shift,
        noise_scale=scale,
        epsilon=epsilon,
        epsilon_select=eps_select,
        epsilon_count=eps_count,
        beta=beta,
        ell_max=len(c),
        method=method,
    )
