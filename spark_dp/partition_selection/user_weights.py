"""UserWeights: a user's ℓ2-bounded, bias-respecting weights on its own items.

Chen et al. 2025, App. A, Alg. 4 (ICML) / Alg. 2 (arXiv); docs/design/selection.md#user-weights.
For one user with d items and biases b(i) ∈ (0, 1] (1 = unbiased), in units x = √d·w:

1. biased items (b < 1) start at x = max(b_min, b);
2. unbiased items share what is left of the norm: x = min(b_max, √((d − Σ_biased x²)/m));
3. while Σ x² < d, the small items (x < 1) are scaled by
   C = min(b_max / max_small x, √(1 + (d − Σ x²)/Σ_small x²)).

Every weight ends in [b_min/√d, b_max/√d] and the user's ℓ2 norm is 1 (Lemma B.4 / 5.4).
Float safeguards (docs/design/selection.md#user-weights-float): an item is small if x < 1 − 1e-12,
the loop stops when Σ x² ≥ d·(1 − 1e-12), when no item is small, or after d + 1 iterations.

When the unbiased items are not capped (m > 0 and d − Σ_biased x² ≤ b_max²·m), step 2 already
reaches norm 1 and the loop never runs: such users, including every user without a biased item
(x = 1 on all items), are computed in Spark SQL from three per-user sums. Only the others go
through :func:`user_weights_arrays`, a numpy routine that runs the loop for a whole Arrow batch
of users at once (a vectorized pandas UDF, one row per user). On text-like data few users of
MAD2R's round 2 need the loop, most with one or two items: their weights are a small table,
computed first and joined onto the pairs by (user, item).

The per-user sums are windows over each user's pairs, not a per-user table joined back: on
pairs that are still partitioned by user (:mod:`.layout`) they move no pair between tasks.
MAD2R computes them once, in the pass that keeps its round-2 pairs (:func:`with_user_sums`),
and its three reads of those pairs find them there (:func:`weights_from_sums`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from spark_dp.caching import CacheScope
from spark_dp.pandas_udfs import series_udf
from spark_dp.partition_selection.columns import (
    BIAS,
    DEGREE,
    ITEM,
    NEEDS_LOOP,
    USER_ID,
    USER_WEIGHT,
)
from spark_dp.partition_selection.layout import aggregated_per_core, per_core

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import Column, DataFrame

__all__ = [
    "per_user_sums",
    "user_weights",
    "user_weights_arrays",
    "weights_from_sums",
    "with_user_sums",
]

_TOL = 1e-12


def user_weights_arrays(
    bias: np.ndarray, lengths: np.ndarray, b_min: float, b_max: float
) -> np.ndarray:
    """UserWeights for many users at once.

    Args:
        bias: b(i) of every (user, item), the users' items consecutive; 1 = unbiased.
        lengths: the number of items d of each user, in the same order (every d ≥ 1).
        b_min: minimum bias multiplier in [0.5, 1].
        b_max: maximum bias multiplier ≥ 1.

    Returns:
        w_b^u(i) for every entry of ``bias``, in the same order.
    """
    bias = np.asarray(bias, dtype=np.float64)
    lengths = np.asarray(lengths, dtype=np.int64)
    if len(lengths) == 0:
        return np.empty(0)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    seg = np.repeat(np.arange(len(lengths)), lengths)
    d = lengths.astype(np.float64)
    biased = bias < 1.0
    x = np.where(biased, np.maximum(b_min, bias), 0.0)  # x = √d·w
    k = np.add.reduceat(x * x, starts)  # Σ_biased x²
    m = np.add.reduceat((~biased).astype(np.float64), starts)  # |S_unbiased|
    with np.errstate(divide="ignore", invalid="ignore"):
        unbiased = np.minimum(b_max, np.sqrt(np.maximum(d - k, 0.0) / m))
    x = np.where(biased, x, unbiased[seg])
    for _ in range(int(lengths.max()) + 1):
        sq = x * x
        total = np.add.reduceat(sq, starts)
        small = x < 1.0 - _TOL
        small_sq = np.add.reduceat(np.where(small, sq, 0.0), starts)
        active = (total < d * (1.0 - _TOL)) & (small_sq > 0.0)
        if not active.any():
            break
        max_small = np.maximum.reduceat(np.where(small, x, 0.0), starts)
        with np.errstate(divide="ignore", invalid="ignore"):
            c = np.minimum(b_max / max_small, np.sqrt(1.0 + (d - total) / small_sq))
        c = np.where(active, c, 1.0)
        x = np.where(small, x * c[seg], x)
    return x / np.sqrt(d)[seg]


def _sums(b_min: float) -> tuple[Column, Column, Column]:
    """The aggregates d = |S_u|, K = Σ_biased max(b_min, b)² and m = |S_unbiased|."""
    from pyspark.sql import functions as F

    is_biased = F.col(BIAS) < 1.0
    x_biased = F.greatest(F.lit(float(b_min)), F.col(BIAS))
    return (
        F.count(F.lit(1)),
        F.sum(F.when(is_biased, x_biased * x_biased).otherwise(0.0)),
        F.sum(F.when(is_biased, 0).otherwise(1)),
    )


def _needs_loop(b_max: float) -> Column:
    """True unless m > 0 and d − K ≤ b_max²·m, from the columns degree, _k and _m."""
    from pyspark.sql import functions as F

    d, k, m = F.col(DEGREE), F.col("_k"), F.col("_m")
    return ~((m > 0) & (d - k <= float(b_max) ** 2 * m))


def per_user_sums(pairs: DataFrame, b_min: float, b_max: float) -> DataFrame:
    """Per-user sums of UserWeights (one partial aggregation by user).

    d = |S_u|, _k = K = Σ_biased max(b_min, b)², _m = m = |S_unbiased|, and ``needs_loop``:
    True unless m > 0 and d − K ≤ b_max²·m (then step 2 reaches norm 1 and the loop of
    Alg. 4 never runs).

    Args:
        pairs: (user_id, item, bias_private).
        b_min: minimum bias multiplier.
        b_max: maximum bias multiplier.

    Returns:
        (user_id, degree, _k, _m, needs_loop), one row per user.
    """
    d, k, m = _sums(b_min)
    sums = pairs.groupBy(USER_ID).agg(d.alias(DEGREE), k.alias("_k"), m.alias("_m"))
    # -> (user_id, degree, _k, _m)
    # -> (user_id, degree, _k, _m, needs_loop)
    return sums.withColumn(NEEDS_LOOP, _needs_loop(b_max))


def with_user_sums(pairs: DataFrame, b_min: float, b_max: float) -> DataFrame:
    """``pairs`` with the sums of :func:`per_user_sums` on every row (windows over the user).

    Args:
        pairs: (user_id, item, bias_private), partitioned by user or not (a window shuffles
            only when it must).
        b_min: minimum bias multiplier.
        b_max: maximum bias multiplier.

    Returns:
        (user_id, item, bias_private, degree, _k, _m, needs_loop), the input of
        :func:`weights_from_sums`. Private: never log or write it.
    """
    from pyspark.sql import Window

    b_min, b_max = float(b_min), float(b_max)
    by_user = Window.partitionBy(USER_ID)
    d, k, m = (c.over(by_user) for c in _sums(b_min))
    sums = pairs.select(USER_ID, ITEM, BIAS, d.alias(DEGREE), k.alias("_k"), m.alias("_m"))
    # -> (user_id, item, bias_private, degree, _k, _m)
    # -> (user_id, item, bias_private, degree, _k, _m, needs_loop)
    return sums.withColumn(NEEDS_LOOP, _needs_loop(b_max))


def _direct_weight(b_min: float) -> Column:
    """x/√d of a user whose loop never runs: max(b_min, b) if biased, else √((d − K)/m)."""
    from pyspark.sql import functions as F

    d, k, m = F.col(DEGREE), F.col("_k"), F.col("_m")
    x_biased = F.greatest(F.lit(b_min), F.col(BIAS))
    x = F.when(F.col(BIAS) < 1.0, x_biased).otherwise(F.sqrt((d - k) / m))
    return x / F.sqrt(d)


def user_weights(pairs: DataFrame, b_min: float, b_max: float, cache: CacheScope) -> DataFrame:
    """UserWeights of every user, with degrees recomputed from ``pairs``:
    :func:`weights_from_sums` of :func:`with_user_sums`.

    Args:
        pairs: (user_id, item, bias_private) with b ∈ (0, 1], 1 = unbiased.
        b_min: minimum bias multiplier in [0.5, 1].
        b_max: maximum bias multiplier ≥ 1.
        cache: where the loop users' weights are kept.

    Returns:
        (user_id, item, degree, user_weight_private), in the layout of ``pairs``. Private: never
        log or write it.
    """
    return weights_from_sums(with_user_sums(pairs, b_min, b_max), b_min, b_max, cache)


def weights_from_sums(sums: DataFrame, b_min: float, b_max: float, cache: CacheScope) -> DataFrame:
    """UserWeights of every user, from pairs that carry their user's sums (:func:`with_user_sums`).

    Given d, K = Σ_biased max(b_min, b)² and m = |S_unbiased| on every pair, users whose loop
    never runs get x = max(b_min, b) (biased) or √((d − K)/m) (unbiased) in SQL; the few others
    are collected per user (at most Δ0 items each), go through the vectorized pandas UDF around
    :func:`user_weights_arrays`, and their weights (a small table, computed now and cached) are
    joined onto their pairs. The loop users are found in one task per core
    (:func:`~.layout.per_core`), not in one task per user partition, and only their pairs are
    shuffled by user.

    Args:
        sums: (user_id, item, bias_private, degree, _k, _m, needs_loop) from
            :func:`with_user_sums`, e.g. kept (:func:`~.layout.keep`) for several reads.
        b_min: minimum bias multiplier in [0.5, 1].
        b_max: maximum bias multiplier ≥ 1 (the b_max :func:`with_user_sums` was given).
        cache: where the loop users' weights are kept.

    Returns:
        (user_id, item, degree, user_weight_private), in the layout of ``sums``. Private: never
        log or write it.
    """
    from pyspark.sql import functions as F

    b_min, b_max = float(b_min), float(b_max)

    def _weights(bias: pd.Series) -> pd.Series:
        import pandas as pd

        lengths = bias.map(len).to_numpy(dtype=np.int64)
        flat = np.concatenate(bias.to_list()) if len(bias) else np.empty(0)
        w = user_weights_arrays(flat, lengths, b_min, b_max)
        return pd.Series(np.split(w, np.cumsum(lengths)[:-1]))

    weights = series_udf(_weights, "array<double>")

    sets = (
        per_core(sums)
        .where(F.col(NEEDS_LOOP))
        .groupBy(USER_ID)
        .agg(F.collect_list(F.struct(ITEM, BIAS)).alias("_set"))
    )
    # -> (user_id, _set: array<struct<item, bias_private>>)
    sets = aggregated_per_core(sets)  # one Python task per core, not one per user partition
    looped = sets.select(USER_ID, "_set", weights(F.col(f"_set.{BIAS}")).alias("_w")).select(
        USER_ID,
        F.explode(
            F.transform(
                "_set", lambda s, i: F.struct(s[ITEM].alias(ITEM), F.col("_w")[i].alias("w"))
            )
        ).alias("_p"),
    )
    # -> (user_id, _p: struct<item, w>)
    looped = cache.small_side(
        looped.select(USER_ID, F.col(f"_p.{ITEM}").alias(ITEM), F.col("_p.w").alias("_w_loop"))
    )
    # -> (user_id, item, _w_loop): the loop users' weights
    weight = F.coalesce(F.col("_w_loop"), _direct_weight(b_min))
    # -> (user_id, item, degree, user_weight_private)
    return sums.join(looped, [USER_ID, ITEM], "left").select(
        USER_ID, ITEM, DEGREE, weight.alias(USER_WEIGHT)
    )
