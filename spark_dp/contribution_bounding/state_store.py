"""Where the distributed rounds keep their state between rounds (and across restarts).

Two modes:

* **work directory** (the job): every table a later round reads is written as Parquet under
  ``work_dir`` and read back, which cuts the query lineage and survives a crash; a small JSON
  log per pass records which rounds finished. A restarted job resumes after the last logged
  round (docs/design/bounding.md#round-plan, #skew).
* **memory** (library calls without a work directory, tests): a checkpoint of the run's
  :class:`~spark_dp.caching.CacheScope` (:meth:`~spark_dp.caching.CacheScope.checkpoint`:
  reliable when the session has a checkpoint directory, local otherwise) cuts the lineage;
  the scope drops it when the run is released; nothing survives the session.

The contents are confidential (docs/design/bounding.md#confidential): per-round selections and
degrees reveal the graph. Writes go through :func:`spark_dp.io.write_parquet_atomic` /
:func:`~spark_dp.io.write_json_atomic`, so a crash never leaves a half-written table that looks
finished.

Before a run uses a work directory it claims it (:func:`claim_store`): the directory's
``meta.json`` holds its owner (the job and the inputs it reads), digests of the inputs, the
parameters that change the answer and the order seed; a directory holding another run's state is
refused (or cleared on request), so a resume never mixes two runs. A work directory is created
with its ``meta.json`` in one rename, so a directory without one was never a work directory:
it is refused, never adopted or cleared, even on request. The job checks that much before Spark
starts (:func:`check_work_dir`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import uuid
from typing import TYPE_CHECKING, Any

from spark_dp.caching import CacheScope
from spark_dp.contribution_bounding.params import BoundingParams
from spark_dp.errors import SparkDPUserError
from spark_dp.io import CAPACITY, RECORD_ID, USER_ID, write_json_atomic, write_parquet_atomic
from spark_dp.io.fs import read_json
from spark_dp.io.staging import Staging
from spark_dp.io.write import session_filesystems
from spark_dp.randomness import Randomness

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from spark_dp.io.fs import FileSystem

__all__ = [
    "StateStore",
    "WorkDirMismatchError",
    "check_work_dir",
    "claim_store",
    "fingerprint_params",
    "input_fingerprint",
]

# Parameters that change speed but never the answer (excluded from the resume fingerprint).
_FINGERPRINT_NAMES = {"max_contributions": "capacity"}
"""The per-user bound is fingerprinted under its internal name, as before the parameter was
named ``max_contributions``: a work directory of an earlier run still resumes."""

_PERFORMANCE_ONLY = (
    "driver_threshold_rows",
    "driver_max_rows",
    "skew_threshold",
    "salt_buckets",
    "ilp_time_limit",
    "ilp_max_records",
)
_META = "meta.json"
_FORMAT = 2  # 2: the owner recorded


class WorkDirMismatchError(SparkDPUserError):
    """The work directory holds the state of a run with other inputs or parameters."""


class StateStore:
    """Named tables and JSON documents of one run.

    Args:
        spark: the session.
        work_dir: directory for Parquet state, or ``None`` for in-memory checkpoints.
        cache: the run's scope, which holds (and releases) the in-memory checkpoints and the
            outputs' checkpoints (default: a scope of the store's own).
        owner: who the work directory belongs to (a job and the inputs it reads), recorded in
            its ``meta.json`` (:func:`check_work_dir`).
    """

    def __init__(
        self,
        spark: SparkSession,
        work_dir: str | None = None,
        *,
        cache: CacheScope | None = None,
        owner: str | None = None,
        _prefix: str = "",
        _mem: dict[str, Any] | None = None,
    ) -> None:
        self.spark = spark
        self.owner = owner
        self.work_dir = work_dir.rstrip("/") if work_dir else None
        self.cache = cache if cache is not None else CacheScope()
        self._prefix = _prefix
        self._mem: dict[str, Any] = {} if _mem is None else _mem

    @property
    def persistent(self) -> bool:
        """True when state survives the process (a work directory is used)."""
        return self.work_dir is not None

    def child(self, name: str) -> StateStore:
        """A store for a sub-part of the run (e.g. one pass), sharing the same backing."""
        return StateStore(
            self.spark,
            self.work_dir,
            cache=self.cache,
            owner=self.owner,
            _prefix=f"{self._prefix}{name}/",
            _mem=self._mem,
        )

    def _key(self, name: str) -> str:
        return f"{self._prefix}{name}"

    def path(self, name: str) -> str:
        """Filesystem path of ``name`` (work-directory mode only)."""
        if self.work_dir is None:
            raise ValueError("an in-memory state store has no paths")
        return f"{self.work_dir}/{self._key(name)}"

    # ------------------------------------------------------------------ tables
    def save(self, name: str, df: DataFrame) -> DataFrame:
        """Materialize ``df`` under ``name`` and return a DataFrame reading it back."""
        if self.work_dir is None:
            out = self.cache.checkpoint(df)
            self._mem[self._key(name)] = out
            return out
        path = self.path(name)
        write_parquet_atomic(df, path, overwrite=True)
        return self.spark.read.parquet(path)

    def keep(self, name: str, df: DataFrame) -> None:
        """Remember a table that is cheap to recompute (its lineage is short and starts at a
        checkpoint): in memory as it is, in a work directory written as Parquet so that a
        restart finds it."""
        if self.work_dir is None:
            self._mem[self._key(name)] = df
        else:
            write_parquet_atomic(df, self.path(name), overwrite=True)

    def checkpoint(self, df: DataFrame) -> DataFrame:
        """Materialize ``df`` once without naming it (positions, one-off sorts): as Parquet in
        the work directory (reliable), or a checkpoint in memory mode."""
        if self.work_dir is None:
            return self.cache.checkpoint(df)
        return self.save(f"tmp/{uuid.uuid4().hex[:12]}", df)

    def _fs(self, path: str) -> FileSystem:
        """The filesystem of ``path`` (Hadoop on a classic session, pyarrow on Connect)."""
        return session_filesystems(self.spark)(path)

    def load(self, name: str) -> DataFrame | None:
        """The table saved under ``name``, or ``None``."""
        if self.work_dir is None:
            return self._mem.get(self._key(name))
        if not self._fs(self.path(name)).exists(self.path(name)):
            return None
        return self.spark.read.parquet(self.path(name))

    # ------------------------------------------------------------------ JSON
    def write_json(self, name: str, obj: dict[str, Any]) -> None:
        """Store a small JSON document atomically."""
        if self.work_dir is None:
            self._mem[self._key(name)] = _copy_json(obj)
            return
        write_json_atomic(obj, self.path(name), overwrite=True, spark=self.spark)

    def read_json(self, name: str) -> dict[str, Any] | None:
        """The JSON document saved under ``name``, or ``None``."""
        if self.work_dir is None:
            saved = self._mem.get(self._key(name))
            return _copy_json(saved) if saved is not None else None
        path = self.path(name)
        if not self._fs(path).exists(path):
            return None
        doc: dict[str, Any] = json.loads(self._fs(path).read_text(path))
        return doc

    def create(self, meta: dict[str, Any]) -> None:
        """Create the work directory with its ``meta.json`` in one rename (a hidden sibling
        first), so that it never exists without it."""
        assert self.work_dir is not None
        staging = Staging(session_filesystems(self.spark))
        try:
            staged = staging.stage("work_dir", self.work_dir)
            fs = self._fs(staged)
            fs.mkdirs(staged)
            fs.write_text(f"{staged}/{_META}", json.dumps(meta, indent=1))
            staging.commit()
        finally:
            staging.abort()

    # ------------------------------------------------------------------ housekeeping
    def delete(self, name: str) -> None:
        """Remove ``name`` (a table or document) if present."""
        if self.work_dir is None:
            self._mem.pop(self._key(name), None)
            return
        self._fs(self.path(name)).delete(self.path(name))

    def clear(self) -> None:
        """Remove everything this store holds (the whole work directory at the root)."""
        if self.work_dir is None:
            for key in [k for k in self._mem if k.startswith(self._prefix)]:
                del self._mem[key]
            return
        root = f"{self.work_dir}/{self._prefix}".rstrip("/")
        self._fs(root).delete(root)


def _copy_json(doc: dict[str, Any]) -> dict[str, Any]:
    """A deep copy through JSON (what a work directory would give back)."""
    out: dict[str, Any] = json.loads(json.dumps(doc))
    return out


# --------------------------------------------------------------------------- claiming


def _fingerprint(df: DataFrame, cols: list[str]) -> dict[str, int]:
    from pyspark.sql import functions as F

    row = df.agg(
        F.count(F.lit(1)).alias("n"),
        F.bit_xor(F.xxhash64(*[F.col(c).cast("string") for c in cols])).alias("x"),
    ).collect()[0]
    return {"rows": int(row["n"]), "xor": int(row["x"] or 0)}


def input_fingerprint(
    incidences: DataFrame, capacities: DataFrame | None = None, weights: DataFrame | None = None
) -> dict[str, Any]:
    """Order-free digests of the inputs (row count and XOR of row hashes), to tell whether a
    work directory belongs to the same inputs before resuming from it."""
    out = {"incidences": _fingerprint(incidences, [RECORD_ID, USER_ID])}
    if capacities is not None:
        out["capacities"] = _fingerprint(capacities, [USER_ID, CAPACITY])
    if weights is not None:
        out["weights"] = _fingerprint(weights, weights.columns)
    return out


def fingerprint_params(params: BoundingParams) -> dict[str, Any]:
    """The parameters that can change the answer (the algorithm's, never paths or speed knobs).

    At exhaustion the answer does not depend on R or the finish mode
    (docs/design/bounding.md#greedy-equivalence, #driver-finish), so
    ``max_rounds`` and ``finish`` only count under ``finish=none``.
    """
    out = {
        _FINGERPRINT_NAMES.get(f.name, f.name): getattr(params, f.name)
        for f in dataclasses.fields(BoundingParams)
        if f.name not in _PERFORMANCE_ONLY
    }
    if params.finish != "none":
        out.pop("max_rounds")
        out.pop("finish")
    return out


def order_seed(randomness: Randomness, meta: dict[str, Any] | None) -> int:
    """The seed of the order's hash (docs/design/bounding.md#orders): a secret 63-bit integer of the
    release key.

    The same key gives the same order, so a re-run with the key reproduces the selection. A
    resumed run with a fresh entropy key keeps the seed its crashed predecessor stored in the
    work directory (that key is gone). Not sensitive under fixed-graph DP
    (docs/design/bounding.md#seed), but it is derived from the key, so reports show the key's
    fingerprint instead.
    """
    if randomness.mode == "entropy" and meta is not None and "seed" in meta:
        return int(meta["seed"])
    return randomness.child("contribution_bounding").secret("order-seed")


def check_work_dir(fs: FileSystem, path: str, owner: str, flag: str = "--work-dir") -> None:
    """``path`` exists: refuse it unless it holds the state of a run of ``owner`` (a job and the
    inputs it reads). Reads its ``meta.json`` only: no Spark, so a job checks it before Spark
    starts.

    Raises:
        WorkDirMismatchError: no ``meta.json`` (a folder the job did not create), or another
            owner's state. Never cleared by ``--overwrite``: the job did not create it.
    """
    meta = read_json(fs, f"{path.rstrip('/')}/{_META}")
    if meta is None:
        raise WorkDirMismatchError(
            f"{flag} {path} exists and is not a spark_dp work directory (it has no readable "
            f"{_META}): a job never adopts or deletes a folder it did not create; choose "
            f"another {flag} (or remove this one yourself)"
        )
    if meta.get("owner") != owner:
        raise WorkDirMismatchError(
            f"{flag} {path} holds the state of another run (another job, input or spark_dp "
            f"version): choose another {flag} (or remove this one yourself)"
        )


def claim_store(
    store: StateStore,
    *,
    incidences: DataFrame,
    capacities: DataFrame | None,
    weights: DataFrame | None,
    params: BoundingParams,
    randomness: Randomness,
    restart: bool,
    log: logging.Logger,
) -> int:
    """Check that ``store`` is fresh or belongs to this very run; return the order seed.

    Raises:
        WorkDirMismatchError: the work directory holds another run's state and ``restart``
            is off.
    """
    meta = store.read_json(_META)
    seed = order_seed(randomness, meta)
    if not store.persistent:
        return seed
    assert store.work_dir is not None
    if meta is None and store._fs(store.work_dir).exists(store.work_dir):
        check_work_dir(store._fs(store.work_dir), store.work_dir, str(store.owner), "work_dir")
    doc = {
        "owner": store.owner,
        "inputs": input_fingerprint(incidences, capacities, weights),
        "params": fingerprint_params(params),
        "seed": seed,
        "format": _FORMAT,
    }
    if meta is not None and meta != doc:
        if not restart:
            raise WorkDirMismatchError(
                f"work directory {store.work_dir!r} holds the state of a run with other inputs "
                "or parameters; remove it, choose another --work-dir, or pass --overwrite to "
                "start over"
            )
        log.warning("discarding the state of another run in %s", store.work_dir)
        store.clear()
        meta = None
    if meta is None:
        store.create(doc)
    else:
        log.info("work directory %s belongs to this run: resuming", store.work_dir)
    return seed
