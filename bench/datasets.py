"""Heavy-tailed replicated datasets: a Zipf vocabulary whose users are copied under new ids.

The data of issue 18: a text-like vocabulary (Zipf words, log-normal set sizes with about 5% of
users over Δ0 = 100 items, holding about 16% of the pairs) with each user replicated ``copies``
times under new ids. The items stay the same, so the item tables stay small while the per-user
work grows with the copies: it is the case where capping and per-user steps dominate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["REPLICATED_BASE", "replicated_frame"]

REPLICATED_BASE: dict[str, Any] = {
    "n_users": 36_000,
    "mean_items": 120.0,
    "exponent": 1.4,
    "degree_sigma": 0.85,
}
"""About 1.62M pairs over 36k users and 88k words; 5.4% of users hold more than 100 items and
16% of the pairs (measured on the generated base)."""


def replicated_frame(spark: SparkSession, *, copies: int, seed: int, **base: Any) -> DataFrame:
    """(user_id long, item string): the Zipf pairs of ``base``, user u of copy c renamed
    ``c·n_users + u``.

    Args:
        spark: the session.
        copies: how many copies of every user (≥ 1).
        seed: the base vocabulary's seed.
        base: :func:`spark_dp.generators.spark_frames.pairs_frame` parameters of a ``zipf`` set.
    """
    from functools import reduce

    from pyspark.sql import functions as F

    from spark_dp.generators.spark_frames import pairs_frame

    pairs, _ = pairs_frame(spark, "zipf", seed=seed, **base)
    pairs = pairs.cache()  # generated once, read by every copy
    n = int(base["n_users"])
    copies_ = [
        pairs.select((F.col("user_id") + c * n).alias("user_id"), "item") for c in range(copies)
    ]
    # -> (user_id, item), copy after copy (as if the users of every copy were appended)
    return reduce(lambda a, b: a.unionByName(b), copies_)
