"""Where ``--config FILE`` is read from, so that every deploy mode finds it.

In order:

1. a **local file** at that path (a plain run; spark-submit in client mode; YARN cluster mode,
   which puts ``--files`` into the driver's working directory);
2. under spark-submit, a file **shipped with** ``--files`` whose name matches (its local path
   in ``spark.files``, read before the session starts, so ``--files conf/x.yaml --config
   x.yaml`` works in client mode);
3. a **Hadoop URI** (``hdfs://``, ``s3a://``, ...), or a shipped file only the driver's
   ``SparkFiles`` directory holds (Kubernetes cluster mode): read once the session exists
   (:func:`read_deferred`), so its ``spark:`` section can only set runtime SQL options.

Anything else is a clear error naming the path.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from spark_dp.config import load_config_file, parse_config_text
from spark_dp.errors import ConfigError
from spark_dp.io.fs import local_path, scheme, special_kind
from spark_dp.session import launched_by_spark_submit

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["ConfigSource", "locate_config", "read_deferred"]


@dataclass(frozen=True)
class ConfigSource:
    """A located config file: a local path to read now, or a name to read from Spark later."""

    given: str
    local: str | None = None

    @property
    def deferred(self) -> bool:
        """True when the file can be read only through a Spark session."""
        return self.local is None

    def load(self) -> dict[str, Any]:
        """The settings of a local config file."""
        if self.local is None:
            raise ConfigError(f"--config {self.given} needs a Spark session to be read")
        return load_config_file(self.local)


def _submitted_files() -> list[str]:
    """Local paths of the files spark-submit ships with ``--files`` (client mode)."""
    if not launched_by_spark_submit():
        return []
    try:
        from pyspark import SparkConf, SparkContext

        SparkContext._ensure_initialized()
        files = SparkConf().get("spark.files", "") or ""
    except Exception:  # no gateway: nothing shipped that we can see
        return []
    return [f for f in (x.strip() for x in files.split(",")) if f and scheme(f) in (None, "file")]


def locate_config(path: str) -> ConfigSource:
    """Find ``--config``: a local file, a file shipped by spark-submit, or a deferred read.

    Raises:
        ConfigError: no local file, nothing shipped under that name, not a URI, and not
            launched by spark-submit (where SparkFiles could still hold it).
    """
    given = str(path)
    if not given.strip():
        raise ConfigError("--config is an empty string; pass a file path")
    if scheme(given) in (None, "file"):
        p = local_path(given)
        kind = special_kind(p) or ("a directory" if os.path.isdir(p) else None)
        if kind:  # a named pipe is never opened: reading it would block
            raise ConfigError(f"--config {given} is {kind}; pass a YAML or JSON file")
        if os.path.isfile(p):
            return ConfigSource(given, p)
        base = os.path.basename(p)
        for shipped in _submitted_files():
            if os.path.basename(local_path(shipped)) == base and os.path.isfile(
                local_path(shipped)
            ):
                return ConfigSource(given, local_path(shipped))
        if not launched_by_spark_submit():
            raise ConfigError(
                f"config file {given!r} does not exist; pass a path from conf/ (or ship it "
                "with spark-submit --files and pass its name)"
            )
    return ConfigSource(given)


def read_deferred(source: ConfigSource, spark: SparkSession) -> dict[str, Any]:
    """Read a config file through Spark: ``SparkFiles`` first, then the path as a URI."""
    text = None
    if scheme(source.given) in (None, "file"):
        try:
            from pyspark import SparkFiles

            candidate = SparkFiles.get(os.path.basename(local_path(source.given)))
            if os.path.isfile(candidate):
                with open(candidate, encoding="utf-8") as fh:
                    text = fh.read()
        except Exception:  # Spark Connect has no SparkFiles on the client
            text = None
    if text is None:
        try:
            rows = spark.read.text(source.given, wholetext=True).collect()
        except Exception:
            raise ConfigError(
                f"config file {source.given!r} was found neither locally, nor among the files "
                "shipped with --files, nor through Spark's filesystems"
            ) from None
        text = "".join(r[0] for r in rows)
    return parse_config_text(source.given, text)
