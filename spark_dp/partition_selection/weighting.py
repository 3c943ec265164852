"""Non-adaptive item weightings: Basic (ℓ2) and its Laplace variant (ℓ1).

Both sum a per-pair contribution over the users holding an item, with one ``groupBy(item)``
(map-side partial aggregation handles hot items; never a window over items,
docs/design/selection.md#scale) over one task per core (:func:`~.layout.per_core`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spark_dp.partition_selection.columns import DEGREE, ITEM, USER_WEIGHT, WEIGHT
from spark_dp.partition_selection.layout import per_core

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["basic_weights", "item_weights", "laplace_weights", "unbiased_user_weights"]


def item_weights(pairs: DataFrame, contribution: Column) -> DataFrame:
    """w(i) = Σ over the pairs (u, i) of ``contribution``.

    Returns:
        (item, weight_private), one row per item. Private: never log or write it.
    """
    from pyspark.sql import functions as F

    # -> (item, weight_private)
    return per_core(pairs).groupBy(ITEM).agg(F.sum(contribution).alias(WEIGHT))


def basic_weights(capped: DataFrame) -> DataFrame:
    """Item weights of the Basic (uniform, "weighted Gaussian") weighting.

    w(i) = Σ_{u : i ∈ S_u} 1/√d_u. Each user's vector has ℓ2 norm exactly 1, so Δ2 = 1, and a
    new user puts 1/√d_v ≤ 1/√t on each of its t novel items, so h(t) = 1/√t.
    Chen et al. 2025, App. A, Alg. 3 (ICML) / Alg. 5 (arXiv); docs/design/selection.md#basic.

    Args:
        capped: (user_id, item, degree), capped at Δ0 items per user.

    Returns:
        (item, weight_private). Private: never log or write it.
    """
    from pyspark.sql import functions as F

    return item_weights(capped, 1.0 / F.sqrt(F.col(DEGREE)))


def laplace_weights(capped: DataFrame) -> DataFrame:
    """Item weights of the Laplace variant of Basic: w(i) = Σ_{u : i ∈ S_u} 1/d_u.

    Each user's vector has ℓ1 norm 1 (Laplace mechanism, Δ1 = 1), and a novel item gets at most
    1/t, so h(t) = 1/t. Gopi et al. 2020; docs/design/selection.md#basic.

    Args:
        capped: (user_id, item, degree).

    Returns:
        (item, weight_private). Private: never log or write it.
    """
    from pyspark.sql import functions as F

    return item_weights(capped, 1.0 / F.col(DEGREE))


def unbiased_user_weights(capped: DataFrame) -> DataFrame:
    """UserWeights without biases: w_b^u(i) = 1/√d_u for every item
    (docs/design/selection.md#user-weights, Lemma B.4).

    Args:
        capped: (user_id, item, degree).

    Returns:
        (user_id, item, degree, user_weight_private).
    """
    from pyspark.sql import functions as F

    # -> (user_id, item, degree, user_weight_private)
    return capped.withColumn(USER_WEIGHT, 1.0 / F.sqrt(F.col(DEGREE)))
