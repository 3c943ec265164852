"""The SparkSession every job and notebook uses.

Rules:

* An active session (a notebook's, a test's, an Airflow task's) is reused as it is.
* Under ``spark-submit`` the master and every ``--conf`` come from spark-submit; spark_dp never
  overrides them. Settings from ``conf/`` files only fill keys spark-submit left unset.
* A plain ``python jobs/<name>.py`` run gets ``local[*]``, with the workers started by the
  same Python interpreter as the driver (otherwise pandas UDFs would run in whatever ``python3``
  is first on the PATH), and the driver JVM logs through ``spark_dp/log4j2.properties``
  (:data:`LOG4J2_CONFIG`: one line per Spark warning, no Java traces in the terminal) unless
  ``spark.driver.extraJavaOptions`` names another log4j2 configuration. Under spark-submit pass
  it with ``--driver-java-options -Dlog4j2.configurationFile=conf/log4j2.properties``.
* Spark Connect: a master of the form ``sc://host:port`` (or ``SPARK_REMOTE`` in the
  environment) connects to a Spark Connect server instead; only ``spark.sql.*`` settings are
  sent (the server owns the rest). Nothing here touches a SparkContext or the JVM on a Connect
  session (:func:`is_classic` tells them apart); :func:`spark_info` describes either kind.

Job defaults (:data:`DEFAULT_SPARK_CONF`) enable adaptive query execution and its skew-join
handling (hot items, hub users) and Arrow transfers. Test-only speed settings live in
``tests/conftest.py``, never here.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spark_dp.driver_jvm import DriverOutput, launch

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "DEFAULT_SPARK_CONF",
    "GRAPHFRAMES_CLASS",
    "LOG4J2_CONFIG",
    "SPARK_SHUFFLE_PARTITIONS",
    "default_parallelism",
    "get_session",
    "graphframes_available",
    "graphframes_missing",
    "is_classic",
    "jvm_class_present",
    "launched_by_spark_submit",
    "shuffle_partitions",
    "spark_info",
    "sql_defaults",
]

LOG4J2_CONFIG = Path(__file__).resolve().with_name("log4j2.properties")
"""The driver's log4j2 configuration for plain Python runs (see the module docstring)."""

log = logging.getLogger(__name__)

DEFAULT_SPARK_CONF: dict[str, str] = {
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.adaptive.skewJoin.enabled": "true",
    # Let AQE coalesce the partitions of cached plans (the validated input every job caches):
    # without it a 200-partition cache makes each later stage run 200 tiny tasks.
    "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true",
    # Cache uncompressed: the algorithms cache string id pairs and scan them a few times, and
    # both the caching and every later scan are faster without compression. The cost is memory
    # (MEMORY_AND_DISK spills); set it back to "true" with --conf when executor memory is tight.
    "spark.sql.inMemoryColumnarStorage.compressed": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    # spark_dp logs its own per-stage progress; Spark's console bar would interleave with it.
    "spark.ui.showConsoleProgress": "false",
}


def with_log4j2_config(java_options: str | None, *, startup_notices: bool = False) -> str | None:
    """``java_options`` plus ``-Dlog4j2.configurationFile`` of :data:`LOG4J2_CONFIG`, unless
    they name a log4j2 configuration already (or the file is not on disk, e.g. in a zip); with
    ``startup_notices`` (``--log-level DEBUG``) also ``-Dspark_dp.startupNotices=NEUTRAL``, which
    lets through the start-up notices the file drops (the loopback hostname, the SparkUI port,
    the native Hadoop library)."""
    if startup_notices and (not java_options or "spark_dp.startupNotices" not in java_options):
        notices = "-Dspark_dp.startupNotices=NEUTRAL"
        java_options = f"{java_options} {notices}" if java_options else notices
    if (java_options and "log4j2.configurationFile" in java_options) or not LOG4J2_CONFIG.is_file():
        return java_options
    option = f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.as_uri()}"
    return f"{java_options} {option}" if java_options else option


def launched_by_spark_submit() -> bool:
    """True when this Python driver was started by ``spark-submit`` (or a PySpark shell)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def get_session(
    app_name: str = "spark_dp",
    spark_conf: Mapping[str, str] | None = None,
    *,
    master: str | None = None,
    log_level: str = "WARN",
    startup_notices: bool = False,
) -> SparkSession:
    """Return the active SparkSession or build one.

    Args:
        app_name: application name shown in the Spark UI.
        spark_conf: settings from ``conf/`` and ``--spark-conf``; they never replace a value
            that spark-submit already set.
        master: explicit master for a plain Python run (ignored under spark-submit).
        log_level: Spark's own log level (spark_dp logs through Python logging).
        startup_notices: show Spark's start-up notices (``--log-level DEBUG``) in a session
            this call starts (:func:`with_log4j2_config`).
    """
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active

    wanted = dict(DEFAULT_SPARK_CONF)
    wanted.update({k: str(v) for k, v in (spark_conf or {}).items()})
    remote = _remote_url(master, wanted)
    if remote:
        builder = SparkSession.builder.remote(remote)
        for key, value in wanted.items():
            if key.startswith("spark.sql."):  # the server owns every other setting
                builder = builder.config(key, value)
        spark = builder.getOrCreate()
        log.info("Spark Connect %s at %s", spark.version, remote)
        return spark

    output: DriverOutput | None = None
    if launched_by_spark_submit():
        from pyspark import SparkContext

        SparkContext._ensure_initialized()
        preset = SparkConf()  # loads what spark-submit put into the JVM's system properties
        builder = SparkSession.builder.appName(app_name)
        for key, value in wanted.items():
            if key != "spark.master" and not preset.contains(key):
                builder = builder.config(key, value)
    else:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        wanted["spark.master"] = master or wanted.get("spark.master") or "local[*]"
        wanted["spark.app.name"] = app_name
        java = with_log4j2_config(
            wanted.get("spark.driver.extraJavaOptions"), startup_notices=startup_notices
        )
        if java:
            wanted["spark.driver.extraJavaOptions"] = java
        builder = SparkSession.builder
        for key, value in wanted.items():
            builder = builder.config(key, value)
        output = launch(SparkConf().setAll(list(wanted.items())))  # its stderr: driver_jvm
    spark = builder.getOrCreate()
    if output is not None:
        output.started()
    spark.sparkContext.setLogLevel(log_level)
    info = spark_info(spark)
    log.info(
        "Spark %s, master %s, application %s, default parallelism %d",
        info["version"],
        info["master"],
        info["application_id"],
        default_parallelism(spark),
    )
    return spark


def _remote_url(master: str | None, conf: dict[str, str]) -> str | None:
    """The Spark Connect URL of this run, if it uses Spark Connect (pops ``spark.remote``)."""
    remote = conf.pop("spark.remote", None)
    if master and master.startswith("sc://"):
        return master
    return remote or os.environ.get("SPARK_REMOTE") or None


def is_classic(spark: SparkSession) -> bool:
    """True for a classic (py4j) session, False for a Spark Connect session."""
    return getattr(spark, "_jsparkSession", None) is not None


def spark_info(spark: SparkSession) -> dict[str, Any]:
    """What a report says about the session: Spark version, master, application id and name,
    and whether it is a Spark Connect session. Works on classic and Connect sessions alike (on
    Connect the values come from the server's configuration)."""
    if is_classic(spark):
        sc = spark.sparkContext
        return {
            "version": spark.version,
            "master": sc.master,
            "application_id": sc.applicationId,
            "application_name": sc.appName,
            "connect": False,
        }
    return {
        "version": spark.version,
        "master": spark.conf.get("spark.master", None),
        "application_id": spark.conf.get("spark.app.id", None),
        "application_name": spark.conf.get("spark.app.name", None),
        "connect": True,
    }


SPARK_SHUFFLE_PARTITIONS = 200
"""Spark's default of ``spark.sql.shuffle.partitions``."""


def default_parallelism(spark: SparkSession) -> int:
    """The session's default parallelism: the SparkContext's on a classic session; on Spark
    Connect ``spark.default.parallelism`` if the server sets it, else its shuffle partitions."""
    if is_classic(spark):
        return int(spark.sparkContext.defaultParallelism)
    configured = spark.conf.get("spark.default.parallelism", None)
    shuffle = spark.conf.get("spark.sql.shuffle.partitions", None)
    return int(configured or shuffle or SPARK_SHUFFLE_PARTITIONS)


def shuffle_partitions(spark: SparkSession) -> int:
    """The partitions of a shuffle: ``spark.sql.shuffle.partitions`` when the session sets it
    (the knob Spark users size for their data), else Spark's default of 200
    (:data:`SPARK_SHUFFLE_PARTITIONS`).

    A function of the session's settings only, never of the data: a partition count appears as
    a literal of the query plans (``hashpartitioning(user_id, 200)``), which Spark's UI, its
    event log and a history server show (docs/privacy/boundary.md#plans). Where the work
    should follow the input's size, adaptive execution coalesces the partitions at run time
    (:func:`spark_dp.partition_selection.layout.by_user`): Spark's own monitoring, on the
    trusted side (docs/privacy/spark-monitoring.md).
    """
    configured = spark.conf.get("spark.sql.shuffle.partitions", None)
    return max(1, int(configured)) if configured is not None else SPARK_SHUFFLE_PARTITIONS


@contextmanager
def sql_defaults(spark: SparkSession, defaults: Mapping[str, str]) -> Iterator[None]:
    """Give the runtime SQL settings in ``defaults`` that the session leaves unset to the block.

    A value the user chose (spark-submit ``--conf``, the session builder, ``spark.conf.set``)
    is kept. The settings made here are unset again on the way out, error or not, so the
    session is left as it was found. They are session-wide while the block runs: a query that
    another thread runs on the same session meanwhile sees them too.
    """
    added = [key for key in defaults if spark.conf.get(key, None) is None]
    for key in added:
        spark.conf.set(key, str(defaults[key]))
    try:
        yield
    finally:
        for key in added:
            spark.conf.unset(key)


GRAPHFRAMES_CLASS = "org.graphframes.GraphFrame"
"""The JVM class whose presence on the driver's classpath means the GraphFrames jar was added."""


def graphframes_missing(spark: SparkSession) -> str | None:
    """Why GraphFrames cannot run on ``spark``, or ``None`` when it can.

    It needs a classic session (GraphFrames runs through the JVM gateway), the ``graphframes``
    Python package (``pip install graphframes-py``, or its files with ``--py-files``) and the
    class :data:`GRAPHFRAMES_CLASS` on the JVM classpath (``--packages`` or ``--jars``, see
    docs/operations/cluster.md). Probing loads one class: no data is read.
    """
    if not is_classic(spark):
        return "GraphFrames does not run over Spark Connect (it needs the JVM gateway)"
    try:
        import graphframes  # noqa: F401
    except Exception:  # not installed, or a release that does not import on this pyspark
        return "the graphframes Python package is not installed (pip install graphframes-py)"
    if not jvm_class_present(spark, GRAPHFRAMES_CLASS):
        return f"the GraphFrames jar is not on the JVM classpath (no class {GRAPHFRAMES_CLASS})"
    return None


def jvm_class_present(spark: SparkSession, name: str) -> bool:
    """Whether the driver's JVM loads class ``name`` (a classic session), through Spark's own
    class loader, which also sees the jars of ``spark.jars`` and ``--packages``."""
    jvm: Any = spark.sparkContext._jvm
    try:
        jvm.org.apache.spark.util.Utils.classForName(name, False, False)
        return True
    except Exception:
        return False


def graphframes_available(spark: SparkSession) -> bool:
    """True when both the GraphFrames Python package and its JVM jar are usable
    (:func:`graphframes_missing` gives the reason when they are not)."""
    return graphframes_missing(spark) is None
