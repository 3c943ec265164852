"""Bench-only datasets: heavy-tailed replicated vocabularies, and users of a set degree range.

``zipf-replicated`` (:func:`replicated_frame`) is the "lines" dataset of issue 18;
``degree-range`` (:func:`degree_range_frame`) gives every user a number of distinct Zipf words
drawn uniformly in a range (2–5, or 1,000–2,000), the two extremes of issue 36's goals.

The data of issue 18: a text-like vocabulary (Zipf words, log-normal set sizes with about 5% of
users over Δ0 = 100 items, holding about 16% of the pairs) with each user replicated ``copies``
times under new ids. The items stay the same, so the item tables stay small while the per-user
work grows with the copies: it is the case where capping and per-user steps dominate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["REPLICATED_BASE", "degree_range_frame", "replicated_frame"]

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


def degree_range_frame(
    spark: SparkSession,
    *,
    n_users: int,
    min_items: int,
    max_items: int,
    exponent: float = 1.3,
    seed: int = 1,
) -> DataFrame:
    """(user_id long, item string): user u holds d_u distinct words, d_u uniform in
    [min_items, max_items], each drawn from the Zipf-like law of the ``zipf`` generator
    (P(rank ≥ k) = k^−(a−1)) until d_u are distinct. Built on the driver (a few million pairs).
    """
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 36]))
    degrees = rng.integers(min_items, max_items + 1, size=n_users)
    users, ranks = [], []
    for u, d in enumerate(degrees.tolist()):
        found: np.ndarray = np.empty(0, dtype=np.int64)
        draws = 2 * d
        while len(found) < d:
            r = np.floor(rng.random(draws) ** (-1.0 / (exponent - 1.0))).astype(np.int64)
            found = np.unique(np.concatenate([found, np.minimum(r, 2**31 - 1)]))
            draws *= 2
        keep = rng.permutation(found)[:d]
        users.append(np.full(d, u, dtype=np.int64))
        ranks.append(keep)
    frame = pd.DataFrame({"user_id": np.concatenate(users), "rank": np.concatenate(ranks)})
    frame["item"] = "w" + frame["rank"].astype(str)
    return spark.createDataFrame(frame[["user_id", "item"]])
