"""Noise and threshold: the last step of every weight-and-threshold round.

Chen et al. 2025, Alg. 1 lines 7-8 (both versions); docs/design/selection.md#meta, #spark-plan S5.
Every item of the round's union gets independent noise from ``spark_dp.randomness``, the items
with w̃(i) ≥ ρ are kept, and the noise is dropped. The noise of an item is a keyed pseudorandom
function of the item, so every read of the result, and every recomputation Spark makes, sees the
same noise (docs/design/selection.md#noise-rng asks that noise is never redrawn; here it cannot be).

The noise UDF runs in one task per core: the item sums (an aggregation's output, in
``spark.sql.shuffle.partitions`` partitions) go through
:func:`~spark_dp.partition_selection.layout.aggregated_per_core` first. Without it, Spark 3.5
runs the UDF of every round in ``spark.sql.shuffle.partitions`` Python tasks (adaptive execution
does not merge the partitions of a cached plan there), each paying a Python worker's start-up
for almost no work. The noise column is declared nondeterministic so that the threshold filter
is not pushed, UDF and all, below that shuffle.

:func:`noisy_threshold_mask` is the same step on the driver, for the in-memory oracles and for
repeated draws over fixed weights in statistical checks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from spark_dp.partition_selection.columns import ITEM, NOISY_WEIGHT, WEIGHT
from spark_dp.partition_selection.layout import aggregated_per_core
from spark_dp.randomness import DriverNoise, Randomness, add_noise_column

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["noisy_threshold_mask", "noisy_weights", "select_above", "threshold_items"]


def noisy_weights(
    weights: DataFrame, *, distribution: str, scale: float, randomness: Randomness
) -> DataFrame:
    """w̃(i) = w(i) + noise for every item (deterministic given the round's stream).

    :func:`threshold_items` keeps only the items above ρ; a round whose noisy weights are read
    again (MAD2R round 1) keeps this table: it is private and must never be written, logged or
    released (docs/design/selection.md#never-released).

    Args:
        weights: (item, weight_private).
        distribution: ``"gaussian"`` (σ = ``scale``) or ``"laplace"`` (b = ``scale``).
        scale: σ or b.
        randomness: the round's own noise stream.

    Returns:
        (item, noisy_weight_private). Cache it when it is read more than once (for speed).
    """
    from pyspark.sql import functions as F

    noised = add_noise_column(
        aggregated_per_core(weights),  # one Python task per core
        [ITEM],
        "_noise",
        distribution=distribution,
        scale=scale,
        randomness=randomness,
    )
    # -> (item, weight_private, _noise)
    # -> (item, noisy_weight_private)
    return noised.select(ITEM, (F.col(WEIGHT) + F.col("_noise")).alias(NOISY_WEIGHT))


def select_above(noisy: DataFrame, threshold: float) -> DataFrame:
    """The items with w̃(i) ≥ ρ (``≥``, as in the paper; docs/design/selection.md#threshold-ge).

    Args:
        noisy: (item, noisy_weight_private).
        threshold: ρ.

    Returns:
        (item).
    """
    from pyspark.sql import functions as F

    # -> (item)
    return noisy.where(F.col(NOISY_WEIGHT) >= threshold).select(ITEM)


def threshold_items(
    weights: DataFrame,
    *,
    distribution: str,
    scale: float,
    threshold: float,
    randomness: Randomness,
) -> DataFrame:
    """Add noise, keep the items with w̃(i) ≥ ρ, drop the noise.

    Args:
        weights: (item, weight_private).
        distribution: ``"gaussian"`` or ``"laplace"``.
        scale: σ or the Laplace scale b.
        threshold: ρ.
        randomness: the round's own noise stream.

    Returns:
        (item), the selected items.
    """
    noisy = noisy_weights(weights, distribution=distribution, scale=scale, randomness=randomness)
    # -> (item, noisy_weight_private)
    # -> (item)
    return select_above(noisy, threshold)


def noisy_threshold_mask(
    weights: np.ndarray,
    *,
    distribution: str,
    scale: float,
    threshold: float,
    noise: DriverNoise,
) -> np.ndarray:
    """Driver-side noise and threshold: which of ``weights`` have w + noise ≥ ρ.

    Args:
        weights: item weights (numpy array).
        distribution: ``"gaussian"`` or ``"laplace"``.
        scale: σ or the Laplace scale b.
        threshold: ρ.
        noise: a driver noise source (``randomness.child(...).driver()``).

    Returns:
        boolean mask, True for the kept items.
    """
    w = np.asarray(weights, dtype=np.float64)
    if distribution == "gaussian":
        draws = noise.gaussian(scale, len(w))
    elif distribution == "laplace":
        draws = noise.laplace(scale, len(w))
    else:
        raise ValueError(f"distribution must be 'gaussian' or 'laplace', got {distribution!r}")
    return w + draws >= threshold
