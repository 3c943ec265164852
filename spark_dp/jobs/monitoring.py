"""``--private-spark-ui``: what Spark itself shows about the data, turned off for a run.

Spark's web UI, its event log and the history server that replays it show SQL metrics with exact
row counts ("number of output rows" of the scan is |D|), task and partition counts, shuffle
sizes and timings of every stage: private statistics of the input, on the trusted side of the
release (``docs/privacy/spark-monitoring.md`` says who may see them). With
``--private-spark-ui`` a run starts Spark with :data:`PRIVATE_SPARK_CONF` (UI off, console
progress bar off, event log off), unless the event log goes to a directory only its owner can
read (checked for local directories; a Hadoop URI is the operator's to protect, and a warning
says so). The same settings ship as ``conf/private-spark.conf`` for ``spark-submit
--properties-file``. A session started earlier with its UI on (spark-submit without those
settings, a notebook's session) cannot be changed: the run is refused (exit 2) before it reads
any data. Every report records whether the UI and the event log were on (``spark``).
"""

from __future__ import annotations

import argparse
import logging
import os
import stat
from typing import Any

from spark_dp.errors import ConfigError
from spark_dp.io.fs import is_local, local_path

__all__ = ["PRIVATE_SPARK_CONF", "check_monitoring", "monitoring_info", "private_spark_conf"]

PRIVATE_SPARK_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.eventLog.enabled": "false",
}
"""What ``--private-spark-ui`` sets (and ``conf/private-spark.conf`` holds)."""


def _true(value: Any) -> bool:
    return str(value).strip().lower() == "true"


def _protected_dir(path: str) -> bool:
    """A local directory that exists and gives group and others no access."""
    try:
        st = os.stat(local_path(path))
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and not st.st_mode & 0o077


def private_spark_conf(args: argparse.Namespace, conf: dict[str, str], log: logging.Logger) -> None:
    """With ``--private-spark-ui``: add :data:`PRIVATE_SPARK_CONF` to the run's Spark settings
    ``conf`` (before Spark starts). An event log the user turned on is kept only in a protected
    directory.

    Raises:
        ConfigError: the UI turned on explicitly, or an event log to a local directory that
            others can read (or that does not exist).
    """
    if not getattr(args, "private_spark_ui", False):
        return
    if _true(conf.get("spark.ui.enabled", "false")):
        raise ConfigError(
            "--private-spark-ui turns Spark's UI off, and spark.ui.enabled=true asks for it; "
            "drop one of them"
        )
    if _true(conf.get("spark.eventLog.enabled", "false")):
        directory = conf.get("spark.eventLog.dir", "/tmp/spark-events")
        if is_local(directory) and not _protected_dir(directory):
            raise ConfigError(
                f"--private-spark-ui with an event log: spark.eventLog.dir {directory!r} must be "
                f"an existing directory only its owner can read (chmod 700 {directory}), since "
                "event logs hold exact row counts; or leave the event log off"
            )
        if not is_local(directory):
            log.warning(
                "the event log goes to %s: its permissions are yours to keep private (event logs "
                "hold exact row counts)",
                directory,
            )
        conf.update({k: v for k, v in PRIVATE_SPARK_CONF.items() if "eventLog" not in k})
        return
    conf.update(PRIVATE_SPARK_CONF)


def monitoring_info(spark: Any) -> dict[str, bool]:
    """Whether Spark's UI and event log are on in ``spark`` (for the report)."""

    def get(key: str, default: str) -> str:
        try:
            return str(spark.conf.get(key, default))
        except Exception:  # a Spark Connect server that does not show it: Spark's default
            return default

    return {
        "ui_enabled": _true(get("spark.ui.enabled", "true")),
        "event_log_enabled": _true(get("spark.eventLog.enabled", "false")),
    }


def check_monitoring(args: argparse.Namespace, spark: Any) -> None:
    """After Spark started and before any read: with ``--private-spark-ui``, refuse a session
    ``spark`` whose UI is on (it was started before the run, with its own settings).

    Raises:
        ConfigError: the UI is on.
    """
    if not getattr(args, "private_spark_ui", False) or spark is None:
        return
    if monitoring_info(spark)["ui_enabled"]:
        raise ConfigError(
            "--private-spark-ui: Spark was started with its UI on (by spark-submit or an earlier "
            "session); start it with --properties-file conf/private-spark.conf or --conf "
            "spark.ui.enabled=false"
        )
