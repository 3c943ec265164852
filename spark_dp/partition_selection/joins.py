"""Joining a small table onto the pairs without shuffling the pairs.

The tables joined onto (user, item) pairs are small in practice: per-user counts and sums
(capping, MAD's excess, UserWeights), MAD's truncated items, MAD2R's removed and biased items.
Spark cannot know that before running (AQE converts a join to a broadcast only after both
sides were shuffled), so such a table is materialized first and marked for broadcast when it
is small enough. Only the plan depends on its size; the result is the same either way, and
the size is never logged or reported.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

__all__ = ["BROADCAST_MAX_ROWS", "small_side"]

BROADCAST_MAX_ROWS = 1_000_000
"""Largest table (rows) marked for broadcast; larger ones are joined with a shuffle."""


def small_side(df: DataFrame, max_rows: int = BROADCAST_MAX_ROWS) -> DataFrame:
    """``df`` materialized once, with a broadcast hint when it has at most ``max_rows`` rows.

    Args:
        df: a table without noise of its own (noise tables are materialized by
            :mod:`~spark_dp.partition_selection.thresholding`).
        max_rows: broadcast limit.

    Returns:
        the same rows, computed once.
    """
    table = df.localCheckpoint(eager=False)  # computed and kept by the count below
    return F.broadcast(table) if table.count() <= max_rows else table
