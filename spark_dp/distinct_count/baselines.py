"""Comparison baselines of the paper's experiments (docs/design/counting.md#compared, #baselines).

For benchmarks and studies only. Which of them are DP is stated per function:

* :func:`fixed_ell_release` — c(D; ℓ) + Lap(ℓ/ε) at a fixed ℓ. DP only if ℓ is chosen without
  the data; with ℓ = the true maximum contribution ("Max Contrib") or the 90th percentile of
  contributions ("90th PC Contrib", :func:`contribution_quantiles`) it is **not** DP.
* :func:`max_utility_ell` — the non-private best ℓ: argmax c(D; ℓ) − (ℓ/ε)·ln(1/(2β)).
* :func:`sampling_curve` — each person keeps a uniform random sample of min(ℓ, |u_i|) of its
  items; the distinct count of the union has sensitivity ℓ, so adding Lap(ℓ/ε) at a
  data-independent ℓ is ε-DP.
* :func:`r2t_release` — Race-to-the-Top adapted to DC (docs/design/counting.md#r2t): ε/J per bound
  τ_j = 2^j, j = 1..J = ⌈log₂ ℓ_max⌉, release the largest shifted noisy value (ε-DP, a 1 − β lower
  bound).

Noise is drawn through :mod:`spark_dp.randomness` like the mechanism's own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from spark_dp.checks import check_epsilon, check_int_at_least, check_probability
from spark_dp.distinct_count.calibration import lower_bound_shift
from spark_dp.distinct_count.peeling import ELL, per_ell_sums
from spark_dp.distinct_count.release import check_curve
from spark_dp.dp.calibration import Budget, laplace_scale
from spark_dp.errors import ParameterError
from spark_dp.io import ITEM, USER_ID
from spark_dp.randomness import DriverNoise, Randomness, with_hash_column

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "contribution_quantiles",
    "fixed_ell_release",
    "max_utility_ell",
    "r2t_release",
    "sampling_curve",
]


def contribution_quantiles(pairs: DataFrame, quantiles: Sequence[float] = (0.9,)) -> dict[str, int]:
    """Max and quantiles of the per-person contribution |u_i| (NON-private statistics).

    Quantiles are ``int(numpy.quantile(deg, q))`` with linear interpolation, as in the authors'
    experiment code (docs/design/counting.md#compared); computed from the degree histogram (one row
    per distinct degree), never from a collect of the persons.
    """
    from pyspark.sql import functions as F

    hist = (
        pairs.groupBy(USER_ID)
        .count()
        .groupBy(F.col("count").alias("deg"))
        .agg(F.count(F.lit(1)).alias("persons"))
        .orderBy("deg")
        .collect()
    )  # -> (deg, persons), one row per distinct degree
    degs = np.array([r["deg"] for r in hist], dtype=np.int64)
    counts = np.array([r["persons"] for r in hist], dtype=np.int64)
    n = int(counts.sum())
    cum = np.cumsum(counts)
    out = {"max": int(degs[-1])}
    for q in quantiles:
        pos = q * (n - 1)  # numpy "linear": value at fractional rank pos of the sorted degrees
        lo_rank, frac = math.floor(pos), pos - math.floor(pos)
        lo_val = degs[np.searchsorted(cum, lo_rank + 1)]
        hi_val = degs[np.searchsorted(cum, min(lo_rank + 2, n))]
        out[f"q{q:g}"] = int(lo_val + frac * (hi_val - lo_val))
    return out


def fixed_ell_release(
    value: float,
    ell: int,
    *,
    epsilon: float,
    noise: DriverNoise,
    beta: float | None = None,
) -> float:
    """c(D; ℓ) + Lap(ℓ/ε); minus (ℓ/ε)·ln(1/(2β)) when ``beta`` is given (a lower bound).

    ε-DP only when ℓ does not depend on the data (docs/design/counting.md#fixed-ell).
    """
    check_int_at_least("ell", ell, 1)
    scale = laplace_scale(Budget(epsilon), sensitivity=float(ell))
    out = float(value) + float(noise.laplace(scale, 1)[0])
    if beta is not None:
        out -= float(lower_bound_shift(ell, epsilon, check_probability("beta", beta, high=0.5)))
    return out


def max_utility_ell(curve: ArrayLike, *, epsilon: float = 1.0, beta: float = 0.001) -> int:
    """Non-private argmax_ℓ c(D; ℓ) − (ℓ/ε)·ln(1/(2β)), ties to the smallest ℓ
    (docs/design/counting.md#max-utility)."""
    c = check_curve(curve)
    epsilon = check_epsilon(epsilon)
    ells = np.arange(1, len(c) + 1)
    return int(np.argmax(c - lower_bound_shift(ells, epsilon, beta))) + 1


def sampling_curve(
    pairs: DataFrame, max_contributions: int, randomness: Randomness
) -> NDArray[np.int64]:
    """Distinct count of per-person uniform samples of min(ℓ, |u_i|) items, ℓ = 1..ℓ_max.

    One random permutation per person (rank by a salted hash of (user, item)) gives nested
    samples for all ℓ at once: count_ℓ = #{x : min over holders of rank(i, x) ≤ ℓ}; each ℓ's
    marginal is a uniform sample without replacement (docs/design/counting.md#sampling). The driver
    receives ℓ_max values. Private unless noised at a data-independent ℓ.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    check_int_at_least("max_contributions", max_contributions, 1)
    hashed = with_hash_column(pairs, "_h", randomness, USER_ID, ITEM, purpose="sampling-baseline")
    ranked = hashed.withColumn(
        "rank", F.row_number().over(Window.partitionBy(USER_ID).orderBy("_h", ITEM))
    )  # -> (user_id, item, _h, rank)
    best = ranked.groupBy(ITEM).agg(F.min("rank").alias(ELL)).withColumn("value", F.lit(1))
    # -> (item, ell, value): the item is in the sample union from ℓ = its best rank on
    return np.cumsum(per_ell_sums(best, max_contributions)["value"])


def r2t_release(
    curve: ArrayLike, *, epsilon: float, beta: float, max_contributions: int, noise: DriverNoise
) -> float:
    """R2T for DC (docs/design/counting.md#r2t): max(0, max_j [c(τ_j) + Lap(J·τ_j/ε) −
    J·ln(J/β)·τ_j/ε]).

    τ_j = 2^j for j = 1..J, J = ⌈log₂ ℓ_max⌉; each term is (ε/J)-DP (sensitivity τ_j), so the
    maximum is ε-DP, and a union bound makes it a lower bound with probability ≥ 1 − β.

    Args:
        curve: c(D; ℓ) for ℓ = 1..len(curve); it must reach 2^J (e.g. 128 for ℓ_max = 100).
    """
    c = check_curve(curve)
    epsilon = check_epsilon(epsilon)
    beta = check_probability("beta", beta, high=1.0)
    check_int_at_least("max_contributions", max_contributions, 2)
    J = math.ceil(math.log2(max_contributions))
    taus = 2 ** np.arange(1, J + 1)
    if len(c) < taus[-1]:
        raise ParameterError(
            f"R2T with max_contributions={max_contributions} needs the curve up to "
            f"ℓ = {taus[-1]}, got {len(c)}"
        )
    scales = taus * J / epsilon
    terms = c[taus - 1] + noise.laplace(1.0, J) * scales - J * math.log(J / beta) * taus / epsilon
    return float(max(0.0, terms.max()))
