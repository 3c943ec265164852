"""What a library call caches, and releasing it: :class:`CacheScope`.

Caching is for speed only. Every DataFrame spark_dp builds can be recomputed from its lineage
with the same values, noise included (the noise is a keyed function of each row's key, see
:mod:`spark_dp.randomness`), so a lost executor or an evicted block costs time, never privacy,
and nothing is checkpointed to pin noise.

A call persists (and checkpoints) through one scope and releases it when it is done (``with
CacheScope() as cache:``), or hands the scope to its result (a :class:`HoldsCache`: a
partition-selection ``Selection``, a contribution-bounding ``BoundingResult``), which keeps only
the result's own tables and releases them on ``release()`` / at the end of a ``with`` block. After
that the caller's session holds nothing spark_dp persisted
(``tests/runtime/test_nothing_persisted.py``).

A table that later steps read many times is *materialized* (:meth:`CacheScope.materialize`):
persisted, computed once, and handed on as a scan of its cached data, so the query plans of the
steps that read it stay short. Without that cut, plans that reuse cached tables grow with every
step (MAD2R's round 2 reads tables derived from round 1 several times; connected components
iterate), and Spark's planning and plan strings grow with them. Unlike a checkpoint, the cut
keeps the lineage: a lost executor only costs recomputing its blocks.

On Spark Connect (no JVM handle to build the scan) the cut falls back to :func:`checkpoint`:
the session's checkpoint directory when it has one (``spark.checkpoint.dir``, reliable storage),
else a local checkpoint (then a lost executor fails the query).

A local checkpoint keeps its blocks until they are dropped: :meth:`CacheScope.checkpoint` records
it, and :meth:`CacheScope.release` drops its blocks (classic sessions; on Spark Connect the
server drops them when the last DataFrame reading them is garbage-collected). A DataFrame that
reads a dropped local checkpoint cannot be computed again, so results read their tables before
they are released.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from spark_dp.session import is_classic

if TYPE_CHECKING:
    from pyspark import StorageLevel
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "BROADCAST_MAX_ROWS",
    "CacheScope",
    "HoldsCache",
    "checkpoint",
    "checkpoint_dir",
    "fill",
    "pairs_storage_level",
    "storage_level",
]

_H = TypeVar("_H", bound="_Releasable")

BROADCAST_MAX_ROWS = 1_000_000
"""Largest table (rows) :meth:`CacheScope.small_side` marks for broadcast."""


def storage_level() -> StorageLevel:
    """The level every spark_dp cache uses: memory, spilling to disk, *deserialized*.

    PySpark's ``StorageLevel.MEMORY_AND_DISK`` is the serialized level. Reading one of its
    blocks back from disk allocates a heap buffer of the whole block at once, which can fail
    with ``OutOfMemoryError: Java heap space`` in a small driver and take it down. The
    deserialized level (``DataFrame.cache()``'s default) brings a spilled block back in steps
    that give up when memory is short, and skips a serialization of the cached column batches.
    """
    from pyspark import StorageLevel

    return StorageLevel.MEMORY_AND_DISK_DESER


def pairs_storage_level() -> StorageLevel:
    """The level of the data-sized tables a run reads several times, one row per pair (the
    capped pairs of MAD2R and DP-SIPS, MAD2R's round-2 pairs): on disk only.

    When such a table does not fit in memory, the memory level makes Spark build each block in
    the heap, find no room, and write it to disk anyway, with more garbage collection; where it
    fits, the two levels cost the same. Read back, a block comes from the OS page cache in
    streams, never in one heap allocation. A :class:`CacheScope` built with a ``level`` uses
    that level for these tables too.
    """
    from pyspark import StorageLevel

    return StorageLevel.DISK_ONLY


def checkpoint_dir(spark: SparkSession) -> str | None:
    """The session's reliable checkpoint directory, if one is configured."""
    configured = spark.conf.get("spark.checkpoint.dir", None)
    if configured:
        return configured
    if not is_classic(spark):  # Spark Connect: only the configuration says
        return None
    found: str | None = spark.sparkContext.getCheckpointDir()  # set with setCheckpointDir
    return found


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


def fill(df: DataFrame) -> None:
    """Compute the cache of a persisted ``df`` now, in one Spark job (classic sessions).

    ``df.count()`` on a persisted DataFrame runs two jobs: adaptive execution first builds the
    cache as a query stage of its own, then the count reads every cached partition back (200
    tasks after a shuffle by user). Counting the cached batches themselves builds the cache and
    reads nothing back. For the per-pair tables of :func:`~spark_dp.partition_selection.layout.
    keep`, the read-back is a task per user partition, so each kept table saves a whole pass.
    The job runs outside a SQL execution: the Jobs tab of the Spark UI
    shows it under its stage's description, the SQL tab does not list it (small tables are
    still materialized with ``count()``, so that their plans stay there). Where the session has
    no JVM handle (Spark Connect) or its cache manager does not answer, it falls back to
    ``count()``; a row count is never read either way.
    """
    builder = _cache_builder(df)
    if builder is None:
        df.count()
    else:
        builder.cachedColumnBuffers().count()


def _cache_builder(df: DataFrame) -> Any:
    """The JVM builder of ``df``'s cached batches (``CachedRDDBuilder``), or None."""
    jdf = getattr(df, "_jdf", None)
    if jdf is None:  # Spark Connect
        return None
    from py4j.protocol import Py4JError

    try:
        cached = df.sparkSession._jsparkSession.sharedState().cacheManager().lookupCachedData(jdf)
        return None if cached.isEmpty() else cached.get().cachedRepresentation().cacheBuilder()
    except Py4JError:  # an internal API that moved: count() does the same work
        return None


def _drop_checkpoint(df: DataFrame) -> None:
    """Drop the blocks of a local checkpoint on a classic session (no-op elsewhere).

    The checkpointed plan is one leaf over the checkpointed RDD, marked persisted with the
    local-checkpoint storage level; unpersisting that RDD frees its blocks. A reliable
    checkpoint's RDD is not persisted (its files stay in the checkpoint directory, which Spark's
    cleaner owns), and Spark Connect has no JVM handle: the server releases its checkpoints when
    the DataFrames reading them are garbage-collected.
    """
    jdf: Any = getattr(df, "_jdf", None)
    if jdf is None:
        return
    leaf = jdf.queryExecution().logical()
    if leaf.getClass().getSimpleName() == "LogicalRDD":
        leaf.rdd().unpersist(False)


class _Releasable:
    """Something with a ``release()``; a ``with`` block releases it at its end."""

    def release(self) -> None:
        raise NotImplementedError

    def __enter__(self: _H) -> _H:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


class CacheScope(_Releasable):
    """The DataFrames one call persisted or checkpointed, released together by :meth:`release`.

    Args:
        level: storage level of every table the scope persists (default: each table's own,
            :func:`storage_level` or :func:`pairs_storage_level`; large tables spill instead of
            failing).
    """

    def __init__(self, level: StorageLevel | None = None) -> None:
        self._level = level
        self._frames: list[DataFrame] = []
        self._checkpoints: list[DataFrame] = []
        self._aliases: dict[int, DataFrame] = {}  # id(scan of a cache) -> the persisted frame
        self._rows: dict[int, tuple[DataFrame, int]] = {}  # id(scan) -> (scan, its row count)

    def persist(self, df: DataFrame, level: StorageLevel | None = None) -> DataFrame:
        """``df`` persisted (lazily: the first action computes and keeps it), at the scope's
        level if it was given one, else at ``level`` (default :func:`storage_level`)."""
        out = df.persist(self._level or level or storage_level())
        self._frames.append(out)
        return out

    def adopt(self, df: DataFrame) -> DataFrame:
        """Take over a DataFrame persisted elsewhere (e.g. by :func:`spark_dp.io.validate_edges`)
        so that :meth:`release` unpersists it with the rest."""
        self._frames.append(df)
        return df

    def checkpoint(self, df: DataFrame) -> DataFrame:
        """``df`` computed now with its plan cut (:func:`checkpoint`), released with the scope."""
        out = checkpoint(df)
        self._checkpoints.append(out)
        return out

    def materialize(self, df: DataFrame) -> DataFrame:
        """``df`` persisted, computed now, and returned as a scan of its cached data (a short
        plan for what reads it next; see the module docstring). Its row count may be private: it
        is kept inside the scope, only to decide whether a subset of the table is broadcast
        (:meth:`small_subset`), and handed out only by :meth:`counted` for a released table.
        On Spark Connect: a checkpoint of the scope."""
        if not is_classic(df.sparkSession):  # Spark Connect: cut the plan with a checkpoint
            return self.checkpoint(df)
        kept = self.persist(df)
        rows = kept.count()
        scan = _scan_of_cache(kept)
        if scan is None:  # pragma: no cover - _jdf was checked above
            raise RuntimeError("no scan of a cached classic DataFrame")
        self._aliases[id(scan)] = kept
        self._rows[id(scan)] = (scan, rows)  # never logged: see the docstring
        return scan

    def counted(self, df: DataFrame) -> tuple[DataFrame, int]:
        """:meth:`materialize` of ``df`` and its row count, for a table whose size is public (a
        round's released items): the count the materialization ran anyway, no second job."""
        scan = self.materialize(df)
        known = self._rows.get(id(scan))
        return scan, (known[1] if known is not None and known[0] is scan else scan.count())

    def small_subset(
        self, table: DataFrame, subset: DataFrame, max_rows: int = BROADCAST_MAX_ROWS
    ) -> DataFrame:
        """``subset``, rows of ``table`` (a filter and projection of a table :meth:`materialize`
        returned), with a broadcast hint when ``table`` has at most ``max_rows`` rows, so that
        the subset has too: no Spark job runs for it (the broadcast reads ``table``'s cache when
        the join runs). For a table of unknown or larger size: :meth:`small_side` of ``subset``.
        As there, only the plan depends on the size, which is never logged or reported. Keep
        ``table`` until the joins that read ``subset`` have run."""
        from pyspark.sql import functions as F

        known = self._rows.get(id(table))
        if known is not None and known[0] is table and known[1] <= max_rows:
            return F.broadcast(subset)
        return self.small_side(subset, max_rows)

    def small_side(
        self, df: DataFrame, max_rows: int = BROADCAST_MAX_ROWS, *, rows: int | None = None
    ) -> DataFrame:
        """``df`` computed once, with a broadcast hint when it has at most ``max_rows`` rows.

        For the small table of a join onto the (user, item) pairs (UserWeights' loop users,
        the items DP-SIPS found): Spark cannot know it is small before running (AQE converts a
        join to a broadcast only after both sides were shuffled). Only the plan depends on the
        size; the result is the same either way, and the size is never logged or reported.
        ``rows``: the row count, when it is public and known (released items): then ``df`` is
        neither cached nor counted here. (A table that is a subset of a materialized one:
        :meth:`small_subset`.)
        """
        from pyspark.sql import functions as F

        if rows is not None:
            return F.broadcast(df) if rows <= max_rows else df
        table = self.persist(df)
        n = table.count()
        scan = _scan_of_cache(table) or table
        self._aliases[id(scan)] = table
        return F.broadcast(scan) if n <= max_rows else scan

    def retain(self, *frames: DataFrame) -> None:
        """Release everything but ``frames`` (a run's results, kept for its caller)."""
        wanted = [self._aliases.get(id(f), f) for f in frames]
        for df in self._frames:
            if not any(df is f for f in wanted):
                df.unpersist()
        for df in self._checkpoints:
            if not any(df is f for f in wanted):
                _drop_checkpoint(df)
        self._frames = [df for df in self._frames if any(df is f for f in wanted)]
        self._checkpoints = [df for df in self._checkpoints if any(df is f for f in wanted)]
        self._aliases = {k: v for k, v in self._aliases.items() if any(v is f for f in wanted)}
        self._rows = {k: v for k, v in self._rows.items() if k in self._aliases}

    def drop(self, df: DataFrame) -> None:
        """Release one table early (when later steps no longer read it)."""
        self._rows.pop(id(df), None)
        df = self._aliases.pop(id(df), df)
        if any(df is c for c in self._checkpoints):
            self._checkpoints = [c for c in self._checkpoints if c is not df]
            _drop_checkpoint(df)
            return
        self._frames = [f for f in self._frames if f is not df]
        df.unpersist()

    def release(self) -> None:
        """Unpersist everything this scope persisted and drop its checkpoints."""
        while self._frames:
            self._frames.pop().unpersist()
        while self._checkpoints:
            _drop_checkpoint(self._checkpoints.pop())
        self._aliases.clear()
        self._rows.clear()

    def __len__(self) -> int:
        """Number of tables the scope holds (persisted or checkpointed)."""
        return len(self._frames) + len(self._checkpoints)

    def __bool__(self) -> bool:
        """A scope is a scope even when empty (``cache or CacheScope()`` would drop it)."""
        return True


class HoldsCache(_Releasable):
    """A result that holds the :class:`CacheScope` of the call that made it (its ``cache``
    attribute). Use it as a context manager, or call :meth:`release`, to free what it keeps."""

    cache: CacheScope

    def release(self) -> None:
        """Unpersist and drop everything the run kept for this result."""
        self.cache.release()
