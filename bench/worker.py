"""One measured job in a process of its own: ``python -m bench.worker --job ... --result FILE``.

The Spark-line suite (:mod:`bench.lines`) starts one worker per measured job, with the Python of
the venv that holds the Spark version (and the peer library) under test, so every job starts
from the same state: ``local[2]``, Spark's default driver memory, no UI, an event log. The
worker

1. starts the session (spark_dp's job defaults for spark_dp's jobs, Spark's own defaults for
   the floors and the peers, which is what a user of each would get);
2. runs the job once on the small warm-up dataset (JIT, Python workers, class loading);
3. runs it on the measured dataset under the job group ``measured`` and times it, from the
   first read to the written output;
4. stops the session and writes the seconds, the job's figures and the event log's summary
   (:mod:`bench.eventlog`: peak JVM heap, Spark's execution and storage memory, seconds per
   stage) as JSON, with the CPU seconds the JVM, its Python workers and the driver spent on
   the measured job (a busy machine stretches wall time; CPU time far less).

It imports neither spark_dp nor a peer at module level: the peers' venvs hold only the peer.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from bench.eventlog import AFTER_GROUP, MEASURED_GROUP, summarize

__all__ = ["main"]

SEED = 1
ENTROPY_KEY = "entropy-key"
"""A spark_dp job's flag here (never passed on): run it as a production run does, with a fresh
key from the OS (no ``--seed``; its released items then vary a little between runs)."""


def _session(job: str, event_dir: Path, extra: dict[str, str]) -> Any:
    event_dir.mkdir(parents=True, exist_ok=True)
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": event_dir.resolve().as_uri(),
        "spark.eventLog.logStageExecutorMetrics": "true",
        "spark.eventLog.compress": "false",  # plain JSON lines (Spark 4 compresses by default)
        "spark.eventLog.rolling.enabled": "false",
        "spark.executor.metrics.pollingInterval": "200ms",
        "spark.sql.session.timeZone": "UTC",
        **extra,
    }
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if job.startswith("spark_dp"):
        from spark_dp.session import get_session

        return get_session("bench-worker", conf, master="local[2]", log_level="ERROR")
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").appName("bench-worker")
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _tree_cpu_seconds(root: int) -> float:
    """CPU seconds of process ``root`` and its descendants (Linux /proc), reaped children
    included: the JVM with its GC and JIT threads, and the Python workers of pandas UDFs."""
    tick = os.sysconf("SC_CLK_TCK")
    stats: dict[int, tuple[int, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2 :].split()
        ppid = int(fields[1])
        stats[int(entry.name)] = (ppid, sum(int(x) for x in fields[11:15]) / tick)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += stats.get(pid, (0, 0.0))[1]
        todo += [p for p, (ppid, _) in stats.items() if ppid == pid]
    return total


# --------------------------------------------------------------------------- the jobs


def floor_a(spark: Any, data: str, out: str, *, flags: list[str], **_: Any) -> dict[str, Any]:
    """Read, ``groupBy(key).count()`` (key ``flags[0]``, default ``item``), write."""
    key = flags[0] if flags else "item"
    spark.read.parquet(data).groupBy(key).count().write.mode("overwrite").parquet(out)
    return {}


def floor_b(spark: Any, data: str, out: str, *, flags: list[str], **_: Any) -> dict[str, Any]:
    """Floor A with every row shuffled by ``flags[1]`` (default ``user_id``) first, as a per-user
    step must: read, ``repartition(user_id)``, ``groupBy(item).count()``, write."""
    key = flags[0] if flags else "item"
    by = flags[1] if len(flags) > 1 else "user_id"
    spark.read.parquet(data).repartition(by).groupBy(key).count().write.mode("overwrite").parquet(
        out
    )
    return {}


def floor_c(spark: Any, data: str, out: str, **_: Any) -> dict[str, Any]:
    """Floor B with a per-user top-100 by ``row_number()`` over a hash (a full per-user sort)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    by_hash = Window.partitionBy("user_id").orderBy(F.xxhash64(F.lit(7), "user_id", "item"))
    pairs = spark.read.parquet(data).repartition("user_id")
    top = pairs.withColumn("_r", F.row_number().over(by_hash)).where(F.col("_r") <= 100)
    top.groupBy("item").count().write.mode("overwrite").parquet(out)
    return {}


def floor_d(spark: Any, data: str, out: str, **_: Any) -> dict[str, Any]:
    """Floor B with the repeated (user, item) pairs dropped after the shuffle by user
    (``dropDuplicates``: a hash aggregation, no second shuffle): the least an exact per-user
    deduplication costs without a sort. The pairs are shuffled into an explicit partition count
    (:func:`~spark_dp.partition_selection.layout.by_user` without a row count: Spark's 200, what
    spark_dp uses from 80M input rows up; below that spark_dp sizes it for the input): merged
    by adaptive execution, the hash maps spilled (104M pairs on Spark 3.5: 109-116 s against
    76 s)."""
    from spark_dp.partition_selection.layout import by_user

    distinct = by_user(spark.read.parquet(data)).dropDuplicates(["user_id", "item"])
    distinct.groupBy("item").count().write.mode("overwrite").parquet(out)
    return {}


class _StageLines(logging.Handler):
    """The seconds of the job's own stage lines (``stage NAME: done ... seconds=S``, logged at
    INFO by :class:`spark_dp.logs.StageTimer`), in the order they ended."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.seconds: dict[str, float] = {}

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg == "stage %s: done%s seconds=%.2f" and record.args:
            name, _, seconds = record.args  # type: ignore[misc]
            self.seconds[str(name)] = round(self.seconds.get(str(name), 0.0) + seconds, 2)


def spark_dp_job(spark: Any, data: str, out: str, *, flags: list[str], **_: Any) -> dict[str, Any]:
    """A spark_dp job (``flags[0]`` names it) with a fixed seed (or a fresh key: flag
    :data:`ENTROPY_KEY`), read to written output; its figures hold the seconds of its own stage
    lines (``stage_seconds``)."""
    import importlib

    job, rest = flags[0], [f for f in flags[1:] if f != ENTROPY_KEY]
    main = importlib.import_module(f"spark_dp.jobs.{job}").main
    report_path = f"{out}.report.json"
    target = ["--report", report_path] if job == "distinct_count" else ["--output", out]
    key = [] if ENTROPY_KEY in flags else ["--seed", str(SEED)]
    argv = ["--input", data, *target, *key, "--overwrite"]
    stages = _StageLines()
    logging.getLogger("spark_dp").addHandler(stages)
    try:
        code = main([*argv, "--log-level", "INFO", *rest])
    finally:
        logging.getLogger("spark_dp").removeHandler(stages)
    if code != 0:
        raise RuntimeError(f"{job} {rest} exited with {code}")
    report = json.loads(Path(report_path).read_text())
    figures: dict[str, Any] = {"stage_seconds": stages.seconds}  # the log's, not the report's
    outputs = report.get("outputs", {})
    for key in ("output_items", "selected"):
        if key in outputs:
            figures[key] = outputs[key]
    if "selected" in report:
        figures["selected"] = report["selected"]
    return figures


def pipeline_dp_job(
    spark: Any, data: str, out: str, *, flags: list[str], **_: Any
) -> dict[str, Any]:
    """PipelineDP ``select_partitions`` on ``SparkRDDBackend``, ε = 1, δ = 1e-5, k = 100;
    ``flags[0]`` is the strategy (``gaussian`` or ``truncated-geometric``)."""
    import pipeline_dp

    strategies = {
        "gaussian": pipeline_dp.PartitionSelectionStrategy.GAUSSIAN_THRESHOLDING,
        "truncated-geometric": pipeline_dp.PartitionSelectionStrategy.TRUNCATED_GEOMETRIC,
    }
    rdd = spark.read.parquet(data).select("user_id", "item").rdd.map(tuple)
    accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=1.0, total_delta=1e-5)
    engine = pipeline_dp.DPEngine(accountant, pipeline_dp.SparkRDDBackend(spark.sparkContext))
    params = pipeline_dp.SelectPartitionsParams(
        max_partitions_contributed=100, partition_selection_strategy=strategies[flags[0]]
    )
    extractors = pipeline_dp.DataExtractors(
        privacy_id_extractor=lambda r: r[0], partition_extractor=lambda r: r[1]
    )
    selected = engine.select_partitions(rdd, params, extractors)
    accountant.compute_budgets()
    items = spark.createDataFrame(selected.map(lambda p: (str(p),)), "item string")
    items.write.mode("overwrite").parquet(out)
    return {"output_items": spark.read.parquet(out).count(), "strategy": flags[0]}


def tumult_job(spark: Any, data: str, out: str, *, flags: list[str], **_: Any) -> dict[str, Any]:
    """Tumult Analytics ``get_groups(["item"])`` under user-level (ε = 1, δ = 1e-5)-DP:
    ``AddRowsWithID(user_id)``, then ``MaxGroupsPerID(item, k)`` and
    ``MaxRowsPerGroupPerID(item, 1)``; ``flags[0]`` is k."""
    from tmlt.analytics import (
        AddRowsWithID,
        ApproxDPBudget,
        MaxGroupsPerID,
        MaxRowsPerGroupPerID,
        QueryBuilder,
        Session,
    )

    k = int(flags[0])
    pairs = spark.read.parquet(data).selectExpr("cast(user_id as string) user_id", "item")
    session = Session.from_dataframe(
        privacy_budget=ApproxDPBudget(1.0, 1e-5),
        source_id="pairs",
        dataframe=pairs,
        protected_change=AddRowsWithID(id_column="user_id"),
    )
    query = (
        QueryBuilder("pairs")
        .enforce(MaxGroupsPerID("item", k))
        .enforce(MaxRowsPerGroupPerID("item", 1))
        .get_groups(["item"])
    )
    groups = session.evaluate(query, ApproxDPBudget(1.0, 1e-5))
    groups.select("item").write.mode("overwrite").parquet(out)
    return {"output_items": spark.read.parquet(out).count(), "k": k}


def call(spark: Any, data: str, out: str, *, flags: list[str], **_: Any) -> dict[str, Any]:
    """``flags[0]`` = ``module:function``, called as ``function(spark, data, out, *flags[1:])``
    (floors and experiments that are not jobs)."""
    import importlib

    module, name = flags[0].split(":")
    result: dict[str, Any] = getattr(importlib.import_module(module), name)(
        spark, data, out, *flags[1:]
    )
    return result or {}


JOBS = {
    "call": call,
    "floor-a": floor_a,
    "floor-b": floor_b,
    "floor-c": floor_c,
    "floor-d": floor_d,
    "spark_dp": spark_dp_job,
    "pipeline-dp": pipeline_dp_job,
    "tumult": tumult_job,
}


def main(argv: list[str] | None = None) -> int:
    """Run one job (see the module docstring) and write its result JSON."""
    ap = argparse.ArgumentParser(prog="python -m bench.worker")
    ap.add_argument("--job", required=True, choices=sorted(JOBS))
    ap.add_argument("--data", required=True, help="the measured dataset (Parquet)")
    ap.add_argument("--warmup", help="a small dataset to run the job on first")
    ap.add_argument("--work", required=True, help="a scratch directory (outputs, event log)")
    ap.add_argument("--result", required=True, help="where to write the result JSON")
    ap.add_argument("--conf", action="append", default=[], help="extra Spark setting k=v")
    ap.add_argument("flags", nargs=argparse.REMAINDER, help="job flags after --")
    args = ap.parse_args(argv)
    flags = [f for f in args.flags if f != "--"]
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    events = work / "eventlog"
    spark = _session(args.job, events, dict(c.split("=", 1) for c in args.conf))
    run = JOBS[args.job]
    if args.warmup:
        run(spark, args.warmup, str(work / "warmup-out"), flags=flags)
    sc = spark.sparkContext
    sc.setJobGroup(MEASURED_GROUP, f"bench {args.job}")
    spark.range(1).count()  # marker job: a spark_dp job labels its stages with groups of its own
    jvm_pid = int(sc._jvm.java.lang.ProcessHandle.current().pid())
    cpu0, own0 = _tree_cpu_seconds(jvm_pid), time.process_time()
    t0 = time.perf_counter()
    figures = run(spark, args.data, str(work / "out"), flags=flags)
    seconds = time.perf_counter() - t0
    cpu = _tree_cpu_seconds(jvm_pid) - cpu0 + time.process_time() - own0
    sc.setJobGroup(AFTER_GROUP, "bench results")
    max_heap = int(sc._jvm.java.lang.Runtime.getRuntime().maxMemory())
    version = spark.version
    spark.stop()
    result = {
        "job": args.job,
        "flags": flags,
        "spark": version,
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu, 1),
        "figures": figures,
        "memory": summarize(events, max_heap),
    }
    Path(args.result).parent.mkdir(parents=True, exist_ok=True)
    Path(args.result).write_text(json.dumps(result, indent=2) + "\n")
    shutil.rmtree(work / "out", ignore_errors=True)
    shutil.rmtree(work / "warmup-out", ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
