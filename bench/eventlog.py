"""What a Spark event log says about one measured job: peak JVM heap and time per stage.

The worker (:mod:`bench.worker`) runs its measured job under the job group ``measured`` with
``spark.eventLog.logStageExecutorMetrics`` on and a short metrics polling interval, so every
stage ends with the peak executor metrics seen while it ran. Here we keep the stages of that
job group only (the warm-up runs before it, in the same application) and report

* ``peak_jvm_heap_mib``: the largest ``JVMHeapMemory`` (used heap, garbage included: a JVM
  only collects when it needs room, so this is an upper bound of what the job needed);
* ``peak_execution_mib`` / ``peak_storage_mib``: Spark's on-heap execution (shuffles, sorts,
  aggregations) and storage (cached blocks) memory at their peaks;
* ``max_heap_mib``: the heap limit of the JVM (the default driver memory here);
* ``task_cpu_seconds``: the CPU seconds of the measured tasks (executor CPU time, summed), a
  figure that a busy machine disturbs far less than wall time;
* ``disk_spilled_mib``: what sorts and aggregations spilled to disk (memory too small);
* ``gc_seconds``: time the tasks spent in garbage collection;
* ``stage_seconds``: wall seconds of every measured stage, keyed by its id, task count and
  task CPU seconds, so a case's
  time can be traced to the step that spends it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["AFTER_GROUP", "MEASURED_GROUP", "summarize"]

MEASURED_GROUP = "measured"
AFTER_GROUP = "after"
_MIB = 2**20


def _events(path: Path) -> list[dict[str, Any]]:
    files = [p for p in sorted(path.rglob("*")) if p.is_file()] if path.is_dir() else [path]
    files = [p for p in files if not p.name.startswith((".", "appstatus"))]
    out = []
    for f in files:
        with f.open(encoding="utf-8", errors="replace") as fh:
            for line in fh:
                line = line.strip()
                if line:
                    try:
                        out.append(json.loads(line))
                    except json.JSONDecodeError:  # a truncated last line of a live log
                        continue
    return out


def summarize(path: str | Path, max_heap_bytes: int | None = None) -> dict[str, Any]:
    """Peak memory and stage seconds of the job group :data:`MEASURED_GROUP` in an event log.

    Args:
        path: the event log file, or the directory holding it (one application).
        max_heap_bytes: the JVM's heap limit, to report beside the peaks.
    """
    events = _events(Path(path))
    measured: set[int] = set()
    inside = False  # from the first job of the measured group to the first of "after": a
    for e in events:  # spark_dp job labels its own stages with job groups of its own
        if e.get("Event") == "SparkListenerJobStart":
            group = (e.get("Properties") or {}).get("spark.jobGroup.id")
            inside = (inside or group == MEASURED_GROUP) and group != AFTER_GROUP
            if inside:
                measured.update(int(s) for s in e.get("Stage IDs", []))
    peaks = {"JVMHeapMemory": 0, "OnHeapExecutionMemory": 0, "OnHeapStorageMemory": 0}
    stages: dict[str, float] = {}
    cpu_ns = spilled = 0
    tasks: dict[int, int] = {}
    stage_cpu: dict[int, float] = {}
    gc_ms = 0
    for e in events:
        kind = e.get("Event")
        metrics: dict[str, Any] | None = None
        if kind == "SparkListenerStageExecutorMetrics" and int(e.get("Stage ID", -1)) in measured:
            metrics = e.get("Executor Metrics")
        elif kind == "SparkListenerTaskEnd" and int(e.get("Stage ID", -1)) in measured:
            metrics = e.get("Task Executor Metrics")
            task = e.get("Task Metrics") or {}
            cpu_ns += int(task.get("Executor CPU Time", 0))
            spilled += int(task.get("Disk Bytes Spilled", 0))
            sid = int(e["Stage ID"])
            tasks[sid] = tasks.get(sid, 0) + 1
            stage_cpu[sid] = stage_cpu.get(sid, 0.0) + int(task.get("Executor CPU Time", 0)) / 1e9
            gc_ms += int(task.get("JVM GC Time", 0))
        elif kind == "SparkListenerStageCompleted":
            info = e.get("Stage Info", {})
            sid = int(info.get("Stage ID", -1))
            if sid in measured and info.get("Completion Time") and info.get("Submission Time"):
                secs = (info["Completion Time"] - info["Submission Time"]) / 1000.0
                key = f"{sid}:{tasks.get(sid, 0)} tasks, {stage_cpu.get(sid, 0.0):.1f} cpu-s"
                stages[key] = round(secs, 2)
        for name in peaks:
            if metrics and name in metrics:
                peaks[name] = max(peaks[name], int(metrics[name]))
    out: dict[str, Any] = {
        "peak_jvm_heap_mib": round(peaks["JVMHeapMemory"] / _MIB),
        "peak_execution_mib": round(peaks["OnHeapExecutionMemory"] / _MIB),
        "peak_storage_mib": round(peaks["OnHeapStorageMemory"] / _MIB),
        "measured_stages": len(measured),
        "task_cpu_seconds": round(cpu_ns / 1e9, 1),
        "disk_spilled_mib": round(spilled / _MIB),
        "gc_seconds": round(gc_ms / 1000.0, 1),
        "stage_seconds": stages,
    }
    if max_heap_bytes:
        out["max_heap_mib"] = round(max_heap_bytes / _MIB)
    return out
