"""Per-user degree cap Δ0: a uniform random subset of each user's items.

Chen et al. 2025, Alg. 1 lines 3-5 (both versions); docs/design/selection.md#cap.
A user with more than Δ0 distinct items keeps a uniformly random subset of exactly Δ0 of them,
drawn without replacement: the Δ0 items with the smallest salted hash of (user, item). The
kept subset depends only on the user's own set and the secret salt, never on other users'
data, which is what the privacy proof needs (docs/design/selection.md#cap-own-data). The cap bounds
the number of novel items t ≤ Δ0 that the threshold ρ is calibrated for.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

from spark_dp.partition_selection.columns import CAP_RANK, DEGREE, ITEM, USER_ID
from spark_dp.partition_selection.layout import by_user
from spark_dp.randomness import Randomness, with_hash_column

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["cap_user_items", "nested_cap", "ranked_cap", "ranked_input", "with_degree"]


@dataclass(frozen=True)
class _Ranked:
    source: DataFrame
    ranked: DataFrame
    bound: int
    randomness: Randomness


_RANKED: ContextVar[_Ranked | None] = ContextVar("spark_dp_ranked_input", default=None)


@contextmanager
def ranked_input(
    source: DataFrame, ranked: DataFrame, bound: int, randomness: Randomness
) -> Iterator[None]:
    """Inside the block, capping ``source`` at Δ0 ≤ ``bound`` with the stream ``randomness``
    reads ``ranked`` (:func:`ranked_cap` of ``source`` at ``bound`` with that stream, kept)
    instead of ranking ``source`` again: the cap is then a filter (:func:`nested_cap`), with no
    shuffle and no sort. The result is the same rows: the Δ0 lowest keyed ranks of each user
    are the Δ0 lowest of its ``bound`` lowest. ``--max-contributions auto`` ranks once for its
    score and the algorithm's cap (docs/design/tuning.md#one-pass). Any other table, stream or
    Δ0 is capped as usual."""
    token = _RANKED.set(_Ranked(source, ranked, bound, randomness))
    try:
        yield
    finally:
        _RANKED.reset(token)


def cap_user_items(
    pairs: DataFrame, max_contributions: int, randomness: Randomness, *, shuffle: bool = True
) -> DataFrame:
    """Deduplicate the pairs and cap every user's set at Δ0 = ``max_contributions`` items,
    uniformly.

    One shuffle and one sort: the pairs are shuffled by user into an explicit number of
    partitions (:func:`~.layout.by_user`, small enough to sort without spilling), then a window
    over each user's pairs ordered by (salted hash, item) numbers the user's *distinct* items
    (``dense_rank``: a repeated pair gets the rank of its first copy and is dropped) and keeps
    the ranks 1..Δ0; a count over each user's kept pairs (:func:`with_degree`, a second window
    on the same sorted partition, no sort) is the degree min(|S_u|, Δ0). Counting the kept
    pairs, not the largest rank over the user's whole set: that window would buffer every row of
    a heavy user.

    This is the whole per-user step of a run, so the input need not be deduplicated first (a
    separate deduplication would cost a full shuffle and a cache). Deduplicating by hash
    aggregation instead and sorting only the users over Δ0 is slower: the distinct aggregation
    over (user, item) costs as much as the sort it would save (the alternatives side by side:
    ``bench/results/experiments/cap-alternatives.md``).

    Args:
        pairs: (user_id, item), without null ids; repeated pairs count once.
        max_contributions: the degree cap Δ0 ≥ 1.
        randomness: the capping stream (its salt ranks the items; secret in entropy mode).
        shuffle: shuffle the pairs by user first. Pass False for pairs that are already
            partitioned by user (:func:`~.layout.keep` of :func:`~.layout.by_user`, minus a
            broadcast set of items): the window then sorts each partition in place. Either
            way the result is the same.

    Returns:
        (user_id, item, degree), one row per kept distinct pair, with
        degree = min(|S_u|, Δ0) after capping; hash-partitioned by user and sorted by user.
    """
    known = _RANKED.get()
    if known is not None and pairs is known.source and randomness == known.randomness:
        if max_contributions <= known.bound:
            return nested_cap(known.ranked, max_contributions)
    return ranked_cap(pairs, max_contributions, randomness, shuffle=shuffle).drop(CAP_RANK)


def ranked_cap(
    pairs: DataFrame, max_contributions: int, randomness: Randomness, *, shuffle: bool = True
) -> DataFrame:
    """:func:`cap_user_items` with each kept pair's keyed rank among its user's distinct items.

    Returns:
        (user_id, item, cap_rank, degree): ranks 1..min(|S_u|, Δ0) per user, degree =
        min(|S_u|, Δ0); hash-partitioned by user and sorted by user.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    by_rank = Window.partitionBy(USER_ID).orderBy(F.col("_h"), F.col(ITEM))  # item breaks ties
    pairs = pairs.select(USER_ID, ITEM)
    ranked = with_hash_column(
        by_user(pairs) if shuffle else pairs, "_h", randomness, USER_ID, ITEM, purpose="capping"
    )
    # -> (user_id, item, _h), partitioned by user (the salt's broadcast join keeps the layout)
    ranked = ranked.select(
        USER_ID,
        ITEM,
        F.dense_rank().over(by_rank).alias("_rank"),
        F.coalesce(F.lag(ITEM).over(by_rank) == F.col(ITEM), F.lit(False)).alias("_repeat"),
    )
    # -> (user_id, item, _rank, _repeat): _rank numbers the user's distinct items
    kept = ranked.where(~F.col("_repeat") & (F.col("_rank") <= max_contributions)).select(
        USER_ID, ITEM, F.col("_rank").alias(CAP_RANK)
    )
    # -> (user_id, item, cap_rank): min(|S_u|, Δ0) rows per user, still sorted by user
    return with_degree(kept)  # -> (user_id, item, cap_rank, degree)


def nested_cap(ranked: DataFrame, max_contributions: int) -> DataFrame:
    """The cap at Δ0 of pairs ranked and capped at a larger bound (:func:`ranked_cap`, same
    stream): the pairs of rank ≤ Δ0, degree min(d, Δ0). A filter: the layout is kept.

    Returns:
        (user_id, item, degree), as :func:`cap_user_items` at Δ0.
    """
    from pyspark.sql import functions as F

    degree = F.least(F.col(DEGREE), F.lit(int(max_contributions)))
    # -> (user_id, item, degree)
    return ranked.where(F.col(CAP_RANK) <= max_contributions).select(
        USER_ID, ITEM, degree.alias(DEGREE)
    )


def with_degree(pairs: DataFrame) -> DataFrame:
    """Recompute degrees after items were removed from users' sets (no new subsampling).

    A count over each user's pairs (a window): on pairs still partitioned by user (a capped
    table kept by :func:`~.layout.keep`, minus a broadcast set of items) it needs no shuffle.

    Args:
        pairs: (user_id, item, ...), already capped.

    Returns:
        the same rows with ``degree`` = the user's current number of items.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    count = F.count(F.lit(1)).over(Window.partitionBy(USER_ID))
    # -> (user_id, item, ..., degree)
    return pairs.drop(DEGREE).withColumn(DEGREE, count)
