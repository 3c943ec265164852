"""What a library call caches, and releasing it: :class:`CacheScope`.

Caching is for speed only. Every DataFrame spark_dp builds can be recomputed from its lineage
with the same values, noise included (the noise is a keyed function of each row's key, see
:mod:`spark_dp.randomness`), so a lost executor or an evicted block costs time, never privacy,
and nothing is checkpointed to pin noise.

A call persists through one scope and releases it when it is done (``with CacheScope() as
cache:``), or hands it to its result, which releases it on ``release()`` / at the end of a
``with`` block; the caller's session is left as it was found.

Iterative algorithms (connected components, peeling rounds) also need their query plans cut, or
the plans grow with every round: :meth:`CacheScope.checkpoint` writes to the session's
checkpoint directory when it has one (``spark.checkpoint.dir``, reliable storage: a lost
executor costs a recomputation) and falls back to a local checkpoint otherwise (then a lost
executor fails the job; set ``spark.checkpoint.dir`` on clusters with preemptible nodes).
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark import StorageLevel
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["BROADCAST_MAX_ROWS", "CacheScope", "checkpoint_dir"]

BROADCAST_MAX_ROWS = 1_000_000
"""Largest table (rows) :meth:`CacheScope.small_side` marks for broadcast."""


def checkpoint_dir(spark: SparkSession) -> str | None:
    """The session's reliable checkpoint directory, if one is configured."""
    configured = spark.conf.get("spark.checkpoint.dir", None)
    if configured:
        return configured
    try:  # a classic session may have one set with SparkContext.setCheckpointDir
        found: str | None = spark.sparkContext.getCheckpointDir()
        return found
    except Exception:  # Spark Connect has no SparkContext
        return None


class CacheScope:
    """The DataFrames one call persisted, unpersisted together by :meth:`release`.

    Args:
        level: storage level (default MEMORY_AND_DISK: large tables spill instead of failing).
    """

    def __init__(self, level: StorageLevel | None = None) -> None:
        self._level = level
        self._frames: list[DataFrame] = []

    def persist(self, df: DataFrame) -> DataFrame:
        """``df`` persisted (lazily: the first action computes and keeps it)."""
        from pyspark import StorageLevel

        out = df.persist(self._level or StorageLevel.MEMORY_AND_DISK)
        self._frames.append(out)
        return out

    def materialize(self, df: DataFrame) -> DataFrame:
        """``df`` persisted and computed now (its row count is read and discarded: it may be
        private)."""
        out = self.persist(df)
        out.count()
        return out

    def small_side(self, df: DataFrame, max_rows: int = BROADCAST_MAX_ROWS) -> DataFrame:
        """``df`` computed once, with a broadcast hint when it has at most ``max_rows`` rows.

        For the small table of a join onto the (user, item) pairs (per-user sums, MAD's
        truncated items, MAD2R's removed and biased items): Spark cannot know it is small before
        running (AQE converts a join to a broadcast only after both sides were shuffled). Only
        the plan depends on the size; the result is the same either way, and the size is never
        logged or reported.
        """
        from pyspark.sql import functions as F

        table = self.persist(df)
        return F.broadcast(table) if table.count() <= max_rows else table

    def checkpoint(self, df: DataFrame) -> DataFrame:
        """``df`` computed now with its query plan cut (see the module docstring)."""
        if checkpoint_dir(df.sparkSession):
            return df.checkpoint(eager=True)
        return df.localCheckpoint(eager=True)

    def drop(self, df: DataFrame) -> None:
        """Release one DataFrame early (when later steps no longer read it)."""
        for i, kept in enumerate(self._frames):
            if kept is df:
                del self._frames[i]
                break
        df.unpersist()

    def release(self) -> None:
        """Unpersist everything this scope persisted."""
        while self._frames:
            self._frames.pop().unpersist()

    def __enter__(self) -> CacheScope:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def __len__(self) -> int:
        return len(self._frames)
