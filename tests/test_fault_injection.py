"""Fault injection on a standalone cluster: a lost executor, or speculative copies, change nothing.

Issue 13: every random value is a keyed function of the row it belongs to, so Spark may
recompute any part of a job (a task retry, an executor lost with its cached blocks and shuffle
files, a speculative copy) and get the same noise. Nothing is checkpointed for privacy. This
module checks that on a real standalone cluster (a master and two one-core workers on loopback
addresses 127.0.0.1 and 127.0.0.2, from the pip pyspark install, with the zip and the bare
interpreter of tests/test_cluster.py):

* MAD2R under ``--noise-key-file``: one executor JVM is killed (SIGKILL, by pid) when the job
  logs that round 2 has started, i.e. after round 1's noise was drawn and while round 2 reads
  tables derived from it (cached on the executors). The job exits 0 and writes the same items
  as a fault-free run with the same key (in the test's own session).
* The distinct count: the same, with the kill when the exact curve's solve starts.
* MAD2R again with ``spark.speculation`` on and thresholds low enough that speculative copies
  run (checked in the event log), plus the kill.

The kill is checked so the tests cannot pass vacuously: the pid was a live executor of this
cluster (a descendant of a worker this test started, found through /proc), it is gone
afterwards, and the application's event log shows the executor removed and a replacement added.
Every run also scans its log, event log, executor logs, report and output for key material.
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

from tests.cluster_helpers import (
    event_log,
    event_log_conf,
    events_named,
    submit_env,
    submit_with_trigger,
)
from tests.key_material import find_key_material
from tests.standalone_cluster import StandaloneCluster, running

pytestmark = pytest.mark.slow

N_USERS = 4000  # ≈ 75k pairs: round 2 runs several seconds on two one-core executors
MAD2R = "--algorithm mad2r --epsilon 1 --delta 1e-5 --max-items-per-user 20"
DISTINCT = "--epsilon 1 --max-contribution 30 --method exact"
RELEASED = ("estimate", "ell", "lower_bound", "lower_bound_clamped")
SPECULATION = [
    "spark.speculation=true",
    "spark.speculation.interval=100ms",
    "spark.speculation.quantile=0.5",
    "spark.speculation.multiplier=1.0",
    "spark.speculation.minTaskRuntime=100ms",
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
    key.write_bytes(os.urandom(48))
    with StandaloneCluster(workers=2, cores=1, memory="1g", distinct_hosts=True) as cluster:
        yield Setup(env, data, key, cluster)
    assert all(p.poll() is not None for p in cluster.procs), "cluster processes left running"


def job_args(setup: Setup, job: str, out: Path) -> list[str]:
    """The job's arguments with the key file; outputs under ``out``."""
    if job == "partition_selection":
        flags = f"{MAD2R} --output {out / 'items'}"
    else:
        flags = f"{DISTINCT} --report {out / 'count.json'}"
    return ["--input", str(setup.data), *flags.split(), "--noise-key-file", str(setup.key)]


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
    return out


@dataclass
class Kill:
    """One executor JVM killed by pid, and the executors alive just before."""

    pid: int
    alive_before: list[int]


def kill_one_executor(cluster: StandaloneCluster) -> Kill:
    """SIGKILL the first live executor JVM of ``cluster`` (by pid; none found: pid -1)."""
    alive = cluster.executor_pids()
    if not alive:
        return Kill(-1, alive)
    os.kill(alive[0], signal.SIGKILL)
    return Kill(alive[0], alive)


def run_with_kill(setup: Setup, job: str, trigger: str, out: Path, conf: list[str]) -> Any:
    """Submit ``job`` to the cluster, kill one executor when ``trigger`` is logged, and check
    that the kill happened and the job recovered; return the events of the application."""
    events_dir = out / "events"
    tokens = [*event_log_conf(events_dir), *[t for c in conf for t in ("--conf", c)]]
    run = submit_with_trigger(
        setup.env,
        setup.cluster.master_url,
        job,
        job_args(setup, job, out),
        trigger,
        lambda: kill_one_executor(setup.cluster),
        conf=tokens,
    )
    assert run.returncode == 0, f"{job} failed after the kill:\n{run.stderr[-4000:]}"
    assert run.fired, f"the job never logged {trigger!r}:\n{run.stderr[-4000:]}"
    (kill,) = run.fired
    assert kill.pid in kill.alive_before, "no executor was alive to kill"
    deadline = time.time() + 30
    while running(kill.pid) and time.time() < deadline:
        time.sleep(0.2)
    assert not running(kill.pid), "the killed executor is still running"
    events = event_log(events_dir)
    removed = events_named(events, "ExecutorRemoved")
    assert removed, "the application never lost an executor"
    added = events_named(events, "ExecutorAdded")
    last_removal = max(e["Timestamp"] for e in removed)
    assert any(e["Timestamp"] > last_removal for e in added) or len(added) > 2, (
        "no executor replaced the killed one"
    )
    leaks = find_key_material(
        [setup.key.read_bytes()],
        run.stderr,
        out,
        *sorted(setup.cluster.dir.glob("worker*/app-*")),  # executor logs
    )
    assert not leaks, f"key material found in {leaks}"
    print(f"{job}: killed executor {kill.pid}; ran {run.seconds_after_trigger:.1f} s after it")
    return events


def test_mad2r_survives_a_lost_executor_in_round_2(spark, setup, fault_free, tmp_path):
    run_with_kill(setup, "partition_selection", r"stage round 2: started", tmp_path, [])
    assert released(spark, "partition_selection", tmp_path) == fault_free["partition_selection"]


def test_distinct_count_survives_a_lost_executor(spark, setup, fault_free, tmp_path):
    run_with_kill(setup, "distinct_count", r"stage dc solve: started", tmp_path, [])
    assert released(spark, "distinct_count", tmp_path) == fault_free["distinct_count"]


def test_mad2r_with_speculative_tasks_and_a_lost_executor(spark, setup, fault_free, tmp_path):
    events = run_with_kill(
        setup, "partition_selection", r"stage round 2: started", tmp_path, SPECULATION
    )
    speculative = [
        e for e in events_named(events, "TaskStart") if e["Task Info"].get("Speculative")
    ]
    assert speculative, "no speculative task ran: the thresholds did not trigger speculation"
    assert released(spark, "partition_selection", tmp_path) == fault_free["partition_selection"]
