"""The shuffle by user before and after issue 43, alternating in one invocation.

Before, partition selection shuffled the pairs by user into a count computed from the input's
row count (one partition per 400,000 rows, between two per core and 200): a literal of the query
plans that showed |D|. After, the count is the session's ``spark.sql.shuffle.partitions`` (200
unset) and adaptive execution merges the partitions at run time up to 8 MB of shuffle data
(:mod:`spark_dp.partition_selection.layout`). Each run starts a fresh worker
(:mod:`bench.worker`: ``local[2]``, the job's defaults, no ``spark.sql.shuffle.partitions``) of
Basic and of MAD2R (ε = 1, δ = 1e-5, Δ0 = 100) with the code of ``--before`` (a copy of that
revision's files, ``git archive``) and with this tree, in alternating order, on the replicated
heavy-tailed pairs of :mod:`bench.lines` (``x1``: 1.6M pairs, the quick scale; ``x4``: 6.5M).

    .venv/bin/python -m bench.partition_sizing [--before main] [--copies 1 4] [--runs 3]

Writes ``bench/results/partition_sizing/results.{json,md}``: wall and CPU seconds of every run,
the released items (the same on both sides: the partitioning never changes a value), the
largest number of tasks of a stage, and the load average before each run (the machine may be
shared: say so with any number quoted from it).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import io
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from bench.datasets import REPLICATED_BASE
from bench.harness import RESULTS_DIR, Dataset
from bench.lines import REPO, SELECTION, WARMUP_PAIRS, Job, _generate, _load, _run

JOBS = {name: Job(name, "spark_dp", ("partition_selection", "--algorithm", name, *SELECTION))
        for name in ("basic", "mad2r")}  # fmt: skip


def _checkout(rev: str, into: Path) -> Path:
    """The files of ``rev`` under ``into`` (``git archive``: no worktree, no git state)."""
    data = subprocess.run(["git", "archive", rev], cwd=REPO, capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(data.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into


def _tasks(memory: dict[str, Any]) -> int | None:
    """The largest task count of the measured job's stages (``"<id>:<n> tasks, ..."`` keys)."""
    counts = [int(k.split(":")[1].split()[0]) for k in memory.get("stage_seconds", {})]
    return max(counts) if counts else None


def _table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| dataset | job | side | seconds (runs) | median | CPU s (median) | items | max tasks |",
        "|---|---|---|---|---|---|---|---|",
    ]
    keys = sorted({(r["dataset"], r["job"], r["side"]) for r in rows})
    for dataset, job, side in keys:
        mine = [r for r in rows if (r["dataset"], r["job"], r["side"]) == (dataset, job, side)]
        secs = [r["seconds"] for r in mine if r["seconds"] is not None]
        cpu = [r["cpu_seconds"] for r in mine if r["cpu_seconds"] is not None]
        lines.append(
            f"| {dataset} | {job} | {side} | {', '.join(f'{s:.1f}' for s in secs)} | "
            f"{statistics.median(secs):.1f} | {statistics.median(cpu):.1f} | "
            f"{sorted({r['items'] for r in mine})} | {sorted({r['tasks'] for r in mine})} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default="main", help="the revision before the change")
    ap.add_argument("--copies", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--runs", type=int, default=3)
    ns = ap.parse_args()
    datasets = [
        Dataset(f"zipf-rep-x{c}", "zipf-replicated", {**REPLICATED_BASE, "copies": c})
        for c in ns.copies
    ]
    paths = _generate([*datasets, WARMUP_PAIRS])
    warm = paths[WARMUP_PAIRS.name][0]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"before": _checkout(ns.before, Path(tmp)), "after": REPO}
        for run in range(1, ns.runs + 1):
            for ds in datasets:
                path, n = paths[ds.name]
                for job in JOBS.values():
                    sides = ["before", "after"] if run % 2 else ["after", "before"]
                    for side in sides:
                        load = _load()
                        print(f"[sizing] {ds.name} {job.name} {side} run {run} (load {load})")
                        tag = f"sizing-{ds.name}-{job.name}-{side}-{run}"
                        out = _run(Path(sys.executable), job, path, warm, tag, 3600, trees[side])
                        if out["status"] != "ok":
                            raise RuntimeError(f"{tag}: {out['status']}")
                        rows.append(
                            {
                                "dataset": ds.name,
                                "pairs": n,
                                "job": job.name,
                                "side": side,
                                "run": run,
                                "seconds": out.get("seconds"),
                                "cpu_seconds": out.get("cpu_seconds"),
                                "items": out.get("figures", {}).get("output_items"),
                                "tasks": _tasks(out.get("memory", {})),
                                "load": load,
                            }
                        )
    target = RESULTS_DIR / "partition_sizing"
    target.mkdir(parents=True, exist_ok=True)
    meta = {
        "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "before": ns.before,
        "after": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
        ).stdout.strip()
        + " + working tree",
        "how": __doc__.split("\n\n")[1].replace("\n", " "),
    }
    (target / "results.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    loads = [r["load"] for r in rows]
    (target / "results.md").write_text(
        f"# The shuffle by user: {ns.before} against this tree ({meta['date_utc']})\n\n"
        f"Load average before the runs: {min(loads):.1f} to {max(loads):.1f} on 2 cores "
        "(other work shared the machine).\n\n" + _table(rows)
    )
    print(_table(rows))


if __name__ == "__main__":
    main()
