"""What a library call caches, and releasing it: :class:`CacheScope`.

Caching is for speed only. Every DataFrame spark_dp builds can be recomputed from its lineage
with the same values, noise included (the noise is a keyed function of each row's key, see
:mod:`spark_dp.randomness`), so a lost executor or an evicted block costs time, never privacy,
and nothing is checkpointed to pin noise.

A call persists through one scope and releases it when it is done (``with CacheScope() as
cache:``), or hands it to its result, which releases it on ``release()`` / at the end of a
``with`` block; the caller's session is left as it was found.

A table that later steps read many times is *materialized* (:meth:`CacheScope.materialize`):
persisted, computed once, and handed on as a scan of its cached data, so the query plans of the
steps that read it stay short. Without that cut, plans that reuse cached tables grow with every
step (MAD2R's round 2 reads tables derived from round 1 several times; connected components
iterate), and Spark's planning and plan strings grow with them. Unlike a checkpoint, the cut
keeps the lineage: a lost executor only costs recomputing its blocks.

On Spark Connect (no JVM handle to build the scan) the cut falls back to :func:`checkpoint`:
the session's checkpoint directory when it has one (``spark.checkpoint.dir``, reliable storage),
else a local checkpoint (then a lost executor fails the query).
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark import StorageLevel
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["BROADCAST_MAX_ROWS", "CacheScope", "checkpoint", "checkpoint_dir"]

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


def checkpoint(df: DataFrame) -> DataFrame:
    """``df`` computed now with its query plan cut: to the session's checkpoint directory when
    it has one (survives a lost executor), else a local checkpoint (see the module docstring)."""
    if checkpoint_dir(df.sparkSession):
        return df.checkpoint(eager=True)
    return df.localCheckpoint(eager=True)


def _scan_of_cache(df: DataFrame) -> DataFrame | None:
    """A DataFrame whose plan is a scan of ``df``'s cached rows (classic sessions), or None.

    ``df`` must be persisted and computed. The new plan is one leaf (an existing-RDD scan of the
    rows the cache serves); its RDD keeps the full lineage, so lost blocks are recomputed.
    """
    from pyspark.sql import DataFrame as SparkDataFrame

    jdf = getattr(df, "_jdf", None)
    if jdf is None:  # Spark Connect
        return None
    fresh = df.select(*[f"`{c}`" for c in df.columns])  # a new plan that reads the cache
    rows = fresh._jdf.queryExecution().toRdd()
    jss = df.sparkSession._jsparkSession
    scan = jss.internalCreateDataFrame(rows, fresh._jdf.schema(), False)
    return SparkDataFrame(scan, df.sparkSession)


class CacheScope:
    """The DataFrames one call persisted, unpersisted together by :meth:`release`.

    Args:
        level: storage level (default MEMORY_AND_DISK: large tables spill instead of failing).
    """

    def __init__(self, level: StorageLevel | None = None) -> None:
        self._level = level
        self._frames: list[DataFrame] = []
        self._aliases: dict[int, DataFrame] = {}  # id(scan of a cache) -> the persisted frame

    def persist(self, df: DataFrame) -> DataFrame:
        """``df`` persisted (lazily: the first action computes and keeps it)."""
        from pyspark import StorageLevel

        out = df.persist(self._level or StorageLevel.MEMORY_AND_DISK)
        self._frames.append(out)
        return out

    def materialize(self, df: DataFrame) -> DataFrame:
        """``df`` persisted, computed now, and returned as a scan of its cached data (a short
        plan for what reads it next; see the module docstring). Its row count is read and
        discarded: it may be private."""
        kept = self.persist(df)
        kept.count()
        scan = _scan_of_cache(kept)
        if scan is None:  # Spark Connect: cut the plan with a checkpoint instead
            scan = checkpoint(kept)
        self._aliases[id(scan)] = kept
        return scan

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
        n = table.count()
        scan = _scan_of_cache(table) or table
        self._aliases[id(scan)] = table
        return F.broadcast(scan) if n <= max_rows else scan

    def retain(self, *frames: DataFrame) -> None:
        """Unpersist everything but ``frames`` (a run's small results, kept for its caller)."""
        wanted = [self._aliases.get(id(f), f) for f in frames]
        keep = [df for df in self._frames if any(df is f for f in wanted)]
        for df in self._frames:
            if not any(df is f for f in keep):
                df.unpersist()
        self._frames = keep

    def drop(self, df: DataFrame) -> None:
        """Release one DataFrame early (when later steps no longer read it)."""
        df = self._aliases.pop(id(df), df)
        for i, kept in enumerate(self._frames):
            if kept is df:
                del self._frames[i]
                break
        df.unpersist()

    def release(self) -> None:
        """Unpersist everything this scope persisted."""
        while self._frames:
            self._frames.pop().unpersist()
        self._aliases.clear()

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
