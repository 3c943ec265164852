"""Fault injection on a standalone cluster: a lost executor, or speculative copies, change nothing.

Issue 13: every random value is a keyed function of the row it belongs to, so Spark may
recompute any part of a job (a task retry, an executor lost with its cached blocks and shuffle
files, a speculative copy) and get the same noise. Nothing is checkpointed for privacy. This
module checks that on a real standalone cluster (a master and two one-core workers on loopback
addresses 127.0.0.1 and 127.0.0.2, from the pip pyspark install, with the zip and the bare
interpreter of tests/runtime/test_cluster.py):

* MAD2R under ``--noise-key-file``: one executor JVM is killed (SIGKILL, by pid) when the job
  logs that round 2 has started (round 1's noise is drawn; round 2 reads tables derived from
  it, cached on the executors), and another when it starts writing (the cached selections of
  both rounds are lost: the write recomputes them from their lineage, noise included). The job
  exits 0 and writes the same items as a fault-free run with the same key (in the test's own
  session).
* The distinct count: the same, with one kill when the exact curve's solve starts.
* MAD2R again with ``spark.speculation`` on and thresholds low enough that speculative copies
  run (checked in the event log), plus the two kills.

AQE's partition coalescing is off in these runs: it would put this small input in one
partition on one executor, and a kill of the other would cost nothing.

The kills are checked so the tests cannot pass vacuously: each pid was a live executor of the
job's application on this cluster (a descendant of a worker this test started, found through
/proc), it is gone afterwards, the application's event log shows one executor removed per kill
and a replacement added, and work redone (failed tasks or re-run stages). Every run also scans
its log, event log, executor logs, report and output for key material.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from spark_dp.randomness.key_file import write_key_file
from tests.support.cluster_helpers import (
    application_id,
    event_log,
    event_log_conf,
    events_named,
    submit_env,
    submit_with_triggers,
)
from tests.support.key_material import find_key_material
from tests.support.standalone_cluster import StandaloneCluster, running

pytestmark = pytest.mark.slow

N_USERS = 3000  # ≈ 55k pairs: round 2 runs a few seconds on two one-core executors
MAD2R = "--algorithm mad2r --epsilon 1 --delta 1e-5 --max-contributions 20"
DISTINCT = "--epsilon 1 --max-contributions 30 --method exact"
RELEASED = ("estimate", "ell", "lower_bound", "lower_bound_clamped")
# AQE would coalesce this small input into one partition, held by one executor; four
# partitions spread the cached tables and shuffle files over both, so a kill always loses some.
SPREAD = ["spark.sql.adaptive.coalescePartitions.enabled=false"]
# Speculation on time alone, checked often: since Spark 3.4 a slow task is also copied only if
# its rows per second lag the stage's (``efficiency.enabled``, default true), which tasks of
# equal size rarely do, and most tasks of this small input end within the default 100 ms, so
# copies depended on timing (CI once ran none, a local run one). Here any task still running
# after half its stage is done and longer than half the median (at least 10 ms) is copied to a
# free core on the other host, which the tail of every multi-task stage offers.
SPECULATION = [
    "spark.speculation=true",
    "spark.speculation.efficiency.enabled=false",
    "spark.speculation.interval=10ms",
    "spark.speculation.quantile=0.5",
    "spark.speculation.multiplier=0.5",
    "spark.speculation.minTaskRuntime=10ms",
]


@dataclass
class Setup:
    """What the module's tests share: submit environment, data, key, cluster."""

    env: dict[str, Any]
    data: Path
    key: Path
    cluster: StandaloneCluster


@pytest.fixture(scope="module")
def setup(spark, tmp_path_factory):
    """The zip and bare interpreter, the input pairs, a key file, and one running cluster."""
    from spark_dp.generators.spark_frames import pairs_frame

    base = tmp_path_factory.mktemp("faults")
    env = submit_env(base, ("partition_selection", "distinct_count"))
    data = base / "words"
    words, _ = pairs_frame(spark, "zipf", n_users=N_USERS, seed=5)
    words.write.parquet(str(data))
    key = base / "release.key"
    write_key_file(key)
    with StandaloneCluster(workers=2, cores=1, memory="1g", distinct_hosts=True) as cluster:
        procs = list(cluster.procs)
        yield Setup(env, data, key, cluster)
    assert all(p.poll() is not None for p in procs), "cluster processes left running"


def job_args(setup: Setup, job: str, out: Path, keyed: bool = True) -> list[str]:
    """The job's arguments, with the key file unless ``keyed`` is False; outputs under ``out``.

    The runs are kept off the books (``--no-ledger``): every run of this module asks for the
    same request on purpose (one key, one input), which a ledger serves once; here the rerun
    under faults must recompute the release and match the fault-free one."""
    if job == "partition_selection":
        flags = f"{MAD2R} --output {out / 'items'}"
    else:
        flags = f"{DISTINCT} --report {out / 'count.json'}"
    key = ["--noise-key-file", str(setup.key)] if keyed else []
    return ["--input", str(setup.data), *flags.split(), *key, "--no-ledger"]


def released(spark, job: str, out: Path) -> Any:
    """What the run released: the sorted items, or the distinct count's numbers."""
    if job == "partition_selection":
        return sorted(r["item"] for r in spark.read.parquet(str(out / "items")).collect())
    report = json.loads((out / "count.json").read_text())
    return {k: report[k] for k in RELEASED}


@pytest.fixture(scope="module")
def fault_free(spark, setup, tmp_path_factory):
    """The release of each job without faults, same key, in this test's local session."""
    out: dict[str, Any] = {}
    for job in ("partition_selection", "distinct_count"):
        where = tmp_path_factory.mktemp(f"fault-free-{job}")
        main = importlib.import_module(f"spark_dp.jobs.{job}").main
        assert main([*job_args(setup, job, where), "--log-level", "WARNING"]) == 0
        out[job] = released(spark, job, where)
    assert out["partition_selection"], "no item released: the comparison would be empty"
    # Noise decides part of this release (else the comparisons could not see redrawn noise):
    # another key releases other items.
    where = tmp_path_factory.mktemp("other-key")
    main = importlib.import_module("spark_dp.jobs.partition_selection").main
    entropy = job_args(setup, "partition_selection", where, keyed=False)
    assert main([*entropy, "--log-level", "WARNING"]) == 0
    assert released(spark, "partition_selection", where) != out["partition_selection"]
    return out


@dataclass
class Kill:
    """One executor JVM killed by pid, and the executors alive just before."""

    pid: int
    alive_before: list[int]


def kill_one_executor(cluster: StandaloneCluster, lines: list[str]) -> Kill:
    """SIGKILL the first live executor JVM of the application that logged ``lines`` (by pid;
    none found: pid -1)."""
    app = application_id(lines)
    alive = cluster.executor_pids(app) if app else []
    if not alive:
        return Kill(-1, alive)
    os.kill(alive[0], signal.SIGKILL)
    return Kill(alive[0], alive)


def recomputed(events: list[dict[str, Any]]) -> dict[str, int]:
    """What the application redid after losing executors: failed task attempts by reason,
    re-attempted stages, and cached partitions stored again after a kill that were stored before
    it (lost with the executor, recomputed from their lineage); also its speculative attempts.

    Events are in the order they happened; block updates carry no time of their own.
    """
    found: dict[str, int] = {}
    for e in events_named(events, "TaskEnd"):
        reason = e["Task End Reason"]["Reason"]
        if reason != "Success":
            found[reason] = found.get(reason, 0) + 1
    attempts = [e["Stage Info"]["Stage Attempt ID"] for e in events_named(events, "StageSubmitted")]
    found["stage re-attempts"] = sum(a > 0 for a in attempts)
    before: set[str] = set()
    again: set[str] = set()
    killed = False
    for e in events:
        if e["Event"] == "SparkListenerExecutorRemoved":
            killed = True
        elif e["Event"] == "SparkListenerBlockUpdated":
            block = e["Block Updated Info"]
            stored = block["Memory Size"] + block["Disk Size"] > 0
            if stored and block["Block ID"].startswith("rdd_"):
                (again if killed and block["Block ID"] in before else before).add(block["Block ID"])
    found["cached partitions recomputed"] = len(again)
    starts = events_named(events, "TaskStart")
    found["speculative tasks"] = sum(bool(e["Task Info"].get("Speculative")) for e in starts)
    return found


def run_with_kills(setup: Setup, job: str, triggers: list[str], out: Path, conf: list[str]) -> Any:
    """Submit ``job`` to the cluster, kill one executor each time a line of ``triggers`` is
    logged, and check that every kill happened and the job recovered; return the events of the
    application."""
    events_dir = out / "events"
    settings = [*SPREAD, *conf]
    tokens = [*event_log_conf(events_dir), *[t for c in settings for t in ("--conf", c)]]
    run = submit_with_triggers(
        setup.env,
        setup.cluster.master_url,
        job,
        job_args(setup, job, out),
        triggers,
        lambda lines: kill_one_executor(setup.cluster, lines),
        conf=tokens,
    )
    assert not run.timed_out, f"{job} still ran after 600 s:\n{run.output[-4000:]}"
    assert run.returncode == 0, f"{job} failed after the kill:\n{run.output[-4000:]}"
    assert len(run.fired) == len(triggers), f"the job did not log {triggers}:\n{run.output[-4000:]}"
    for kill in run.fired:
        assert kill.pid in kill.alive_before, "no executor was alive to kill"
        deadline = time.time() + 30
        while running(kill.pid) and time.time() < deadline:
            time.sleep(0.2)
        assert not running(kill.pid), "a killed executor is still running"
    events = event_log(events_dir)
    (end,) = [e["Timestamp"] for e in events_named(events, "ApplicationEnd")]
    removed = [e for e in events_named(events, "ExecutorRemoved") if e["Timestamp"] < end]
    assert len(removed) == len(triggers), f"{len(triggers)} kills, executors lost: {removed}"
    added = events_named(events, "ExecutorAdded")
    # The cluster replaced a lost executor while the job ran: after the first kill (the job
    # may end on its surviving executor before the last one's replacement registers).
    assert any(e["Timestamp"] > removed[0]["Timestamp"] for e in added), (
        "no executor was added after the first kill"
    )
    redone = recomputed(events)
    assert sum(n for k, n in redone.items() if k != "speculative tasks") > 0, (
        f"the kills cost no recomputation: {redone}"
    )
    leaks = find_key_material(
        [setup.key.read_bytes()],
        run.output,
        out,
        *sorted(setup.cluster.dir.glob("worker*/app-*")),  # executor logs
    )
    assert not leaks, f"key material found in {leaks}"
    print(
        f"{job}: killed executors {[k.pid for k in run.fired]} "
        f"({removed[0].get('Removed Reason')}); the job ran "
        f"{', '.join(f'{t:.1f}' for t in run.seconds_after)} s after each kill; redone: {redone}"
    )
    return events


ROUND_2, WRITE = r"stage round 2: started", r"stage write output: started"


def test_mad2r_survives_lost_executors_in_round_2_and_before_the_write(
    spark, setup, fault_free, tmp_path
):
    # The second kill loses cached selections of both rounds: writing them recomputes the
    # lost partitions from their lineage, noise included.
    run_with_kills(setup, "partition_selection", [ROUND_2, WRITE], tmp_path, [])
    assert released(spark, "partition_selection", tmp_path) == fault_free["partition_selection"]


def test_distinct_count_survives_lost_executors(spark, setup, fault_free, tmp_path):
    # Two kills: while the first round reads the cached input, and before the core (peeling,
    # components, solve) reads the first round's cached rows (one kill alone may hit an
    # executor that happened to hold no cached block).
    triggers = [r"stage dc first round: started", r"stage dc core: started"]
    run_with_kills(setup, "distinct_count", triggers, tmp_path, [])
    assert released(spark, "distinct_count", tmp_path) == fault_free["distinct_count"]


def test_mad2r_with_speculative_tasks_and_lost_executors(spark, setup, fault_free, tmp_path):
    events = run_with_kills(setup, "partition_selection", [ROUND_2, WRITE], tmp_path, SPECULATION)
    speculative = [
        e for e in events_named(events, "TaskStart") if e["Task Info"].get("Speculative")
    ]
    assert speculative, "no speculative task ran: the thresholds did not trigger speculation"
    assert released(spark, "partition_selection", tmp_path) == fault_free["partition_selection"]
