"""Where the distributed rounds keep their state between rounds (and across restarts).

Two modes:

* **work directory** (the job): every table a later round reads is written as Parquet under
  ``work_dir`` and read back, which cuts the query lineage and survives a crash; a small JSON
  log per pass records which rounds finished. A restarted job resumes after the last logged
  round (spec contribution_bounding.md §3.5 step 7, §3.6).
* **memory** (library calls without a work directory, tests): ``localCheckpoint`` cuts the
  lineage; nothing survives the session.

The contents are confidential (spec A36): per-round selections and degrees reveal the graph.
Writes go through :func:`spark_dp.io.write_parquet_atomic` / :func:`~spark_dp.io.write_json_atomic`,
so a crash never leaves a half-written table that looks finished.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spark_dp.io import write_json_atomic, write_parquet_atomic

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["StateStore"]


class StateStore:
    """Named tables and JSON documents of one run.

    Args:
        spark: the session.
        work_dir: directory for Parquet state, or ``None`` for in-memory checkpoints.
    """

    def __init__(self, spark, work_dir: str | None = None, *, _prefix: str = "", _mem=None):
        self.spark = spark
        self.work_dir = work_dir.rstrip("/") if work_dir else None
        self._prefix = _prefix
        self._mem: dict[str, Any] = {} if _mem is None else _mem

    @property
    def persistent(self) -> bool:
        """True when state survives the process (a work directory is used)."""
        return self.work_dir is not None

    def child(self, name: str) -> StateStore:
        """A store for a sub-part of the run (e.g. one pass), sharing the same backing."""
        return StateStore(
            self.spark, self.work_dir, _prefix=f"{self._prefix}{name}/", _mem=self._mem
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
            out = df.localCheckpoint(eager=True)
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
        """Materialize ``df`` once without naming it (positions, one-off sorts)."""
        return df.localCheckpoint(eager=True)

    def load(self, name: str) -> DataFrame | None:
        """The table saved under ``name``, or ``None``."""
        if self.work_dir is None:
            return self._mem.get(self._key(name))
        if not self._exists(self.path(name)):
            return None
        return self.spark.read.parquet(self.path(name))

    # ------------------------------------------------------------------ JSON
    def write_json(self, name: str, obj: dict) -> None:
        """Store a small JSON document atomically."""
        if self.work_dir is None:
            self._mem[self._key(name)] = json.loads(json.dumps(obj))
            return
        write_json_atomic(obj, self.path(name), overwrite=True, spark=self.spark)

    def read_json(self, name: str) -> dict | None:
        """The JSON document saved under ``name``, or ``None``."""
        if self.work_dir is None:
            doc = self._mem.get(self._key(name))
            return json.loads(json.dumps(doc)) if doc is not None else None
        path = self.path(name)
        if not self._exists(path):
            return None
        if "://" not in path or path.startswith("file://"):
            return json.loads(Path(path.removeprefix("file://")).read_text(encoding="utf-8"))
        text = "".join(t for _, t in self.spark.sparkContext.wholeTextFiles(path).collect())
        return json.loads(text)

    # ------------------------------------------------------------------ housekeeping
    def delete(self, name: str) -> None:
        """Remove ``name`` (a table or document) if present."""
        if self.work_dir is None:
            self._mem.pop(self._key(name), None)
            return
        fs, jpath = self._fs(self.path(name))
        if fs.exists(jpath):
            fs.delete(jpath, True)

    def clear(self) -> None:
        """Remove everything this store holds (the whole work directory at the root)."""
        if self.work_dir is None:
            for key in [k for k in self._mem if k.startswith(self._prefix)]:
                del self._mem[key]
            return
        fs, jpath = self._fs(f"{self.work_dir}/{self._prefix}".rstrip("/"))
        if fs.exists(jpath):
            fs.delete(jpath, True)

    def _exists(self, path: str) -> bool:
        fs, jpath = self._fs(path)
        return bool(fs.exists(jpath))

    def _fs(self, path: str):
        jvm = self.spark.sparkContext._jvm
        jpath = jvm.org.apache.hadoop.fs.Path(path)
        return jpath.getFileSystem(self.spark.sparkContext._jsc.hadoopConfiguration()), jpath
