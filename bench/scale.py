"""Speed at scale: floor C, Basic and MAD2R at 13M and 104M pairs, with each job's own stages.

``python -m bench.scale`` (``make bench-scale``, and the first step of ``make bench``). For each
Spark line (4 and 3.5 by default) and each size of the replicated text vocabulary
(:mod:`bench.lines`' ``full`` and ``xl`` datasets: 13.0M and 103.7M pairs), it runs, one job at a
time, each a fresh process (:mod:`bench.worker`: ``local[2]``, Spark's default driver memory,
warmed up on a small dataset first):

* **floor C**: read, shuffle by user, a per-user top-100 by a hash (a full per-user sort), count
  by item, write: the cheapest exact cap;
* spark_dp's **Basic** and **MAD2R** jobs (ε = 1, δ = 1e-5, Δ0 = 100) with a fresh key, as a
  production run makes them, and Basic with a test seed (a key that can come back: it binds to
  the content digest, as a key file does, here the SHA-256 of the input's local files, hashed on
  the driver; docs/privacy/keys.md#files).

Each row has the wall seconds, the ratio to floor C of the same dataset, line and run, the
seconds of the job's own stage lines (``stage NAME: done ... seconds=S`` of
:class:`spark_dp.logs.StageTimer`), and the 1-minute load average before the job. Results go to
``bench/results/scale/results.{json,md}``; the previous ``results.json`` is kept as
``previous.json`` and the Markdown compares every ratio with it (a second run of the same
command should agree within 5%). With ``--runs N`` the sequence repeats N times and each job's
ratio is the median of its N runs, each against the floor C of its own run (the Markdown shows
the runs' range beside it). The goals checked: Basic ≤ 1.1 × C and MAD2R ≤ 1.6 × C at 104M
pairs, on each line.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import statistics
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.harness import RESULTS_DIR
from bench.lines import PAIR_JOBS, SELECTION, Job, Row, _load, run_suite
from bench.worker import ENTROPY_KEY

__all__ = ["GOALS", "JOBS", "main", "median_ratios", "ratios"]

JOBS = (
    next(j for j in PAIR_JOBS if j.name == "floor-c"),
    Job(
        "basic",
        "spark_dp",
        ("partition_selection", "--algorithm", "basic", *SELECTION, ENTROPY_KEY),
    ),
    Job(
        "mad2r",
        "spark_dp",
        ("partition_selection", "--algorithm", "mad2r", *SELECTION, ENTROPY_KEY),
    ),
    Job(
        "basic-seeded-key", "spark_dp", ("partition_selection", "--algorithm", "basic", *SELECTION)
    ),
)
"""Floor C, then Basic and MAD2R as a production run makes them (a fresh key: no digest,
docs/privacy/keys.md#digest), and Basic with a test seed (a key that can come back binds to
the digest of its input's files, as a key file does: docs/privacy/keys.md#files)."""
SCALES = ("full", "xl")
GOALS = {"basic": 1.1, "mad2r": 1.6}
"""The largest ratio to floor C each job may take at the largest size."""
AGREEMENT = 0.05
"""How far a ratio may move between two runs of the command."""


def ratios(rows: list[dict[str, Any]]) -> dict[tuple[str, str, str, int], float]:
    """(line, dataset, job, run) -> seconds / floor C's seconds of the same line, dataset, run."""
    floors = {
        (r["line"], r["dataset"], r["run"]): r["seconds"]
        for r in rows
        if r["job"] == "floor-c" and r["seconds"]
    }
    out = {}
    for r in rows:
        base = floors.get((r["line"], r["dataset"], r["run"]))
        if r["job"] != "floor-c" and r["seconds"] and base:
            out[(r["line"], r["dataset"], r["job"], r["run"])] = r["seconds"] / base
    return out


def _run_ratios(rows: list[dict[str, Any]]) -> dict[tuple[str, str, str], list[float]]:
    """(line, dataset, job) -> its ratio to floor C in each run, in run order."""
    groups: dict[tuple[str, str, str], list[float]] = {}
    for (line, dataset, job, _), value in ratios(rows).items():
        groups.setdefault((line, dataset, job), []).append(value)
    return groups


def median_ratios(rows: list[dict[str, Any]]) -> dict[tuple[str, str, str], float]:
    """(line, dataset, job) -> the median over runs of its ratio to floor C (one slow run of
    a job or of its floor moves a median of three runs less than a mean)."""
    return {k: statistics.median(v) for k, v in _run_ratios(rows).items()}


def _stages(row: dict[str, Any]) -> str:
    stages = (row.get("figures") or {}).get("stage_seconds") or {}
    return ", ".join(f"{name} {seconds:.0f}" for name, seconds in stages.items()) or "—"


def to_markdown(meta: dict[str, Any], rows: list[dict[str, Any]], previous: dict | None) -> str:
    """One table per line and dataset, the comparison with the previous run, the goals."""
    now = ratios(rows)
    out = [
        "# Speed at scale: floor C, Basic and MAD2R",
        "",
        f"{meta['machine']}; {meta['date_utc']}; {meta['hours']} h; each job a fresh process "
        "(`local[2]`, default driver memory), warmed up on a small dataset; wall seconds from "
        "the first read to the written output; × C = seconds / floor C of the same dataset, "
        "line and run; stages: the job's own stage lines (seconds); load: 1-minute load "
        "average before the job (2 cores).",
        "",
    ]
    for line in dict.fromkeys(r["line"] for r in rows):
        for dataset in dict.fromkeys(r["dataset"] for r in rows if r["line"] == line):
            sel = [r for r in rows if (r["line"], r["dataset"]) == (line, dataset)]
            out += [
                f"## {dataset} ({sel[0]['rows']:,} pairs), Spark {sel[0]['spark']}",
                "",
                "| job | run | seconds | × C | items | stages (s) | load | status |",
                "|---|---:|---:|---:|---:|---|---:|---|",
            ]
            for r in sel:
                ratio = now.get((line, dataset, r["job"], r["run"]))
                out.append(
                    f"| {r['job']} | {r['run']} | {r['seconds'] or '—'} | "
                    f"{f'{ratio:.2f}' if ratio else '—'} | {r['items'] or '—'} | "
                    f"{_stages(r)} | {r['load']} | {r['status']} |"
                )
            out.append("")
    out += ["## Against the previous run", ""]
    if previous is None:
        out.append("- (no previous run in this directory)")
    else:
        before = median_ratios(previous["rows"])
        for key, runs in _run_ratios(rows).items():
            if key in before:
                value = statistics.median(runs)
                change = value / before[key] - 1.0
                mark = "agrees" if abs(change) <= AGREEMENT else "DIFFERS"
                within = f"; runs {min(runs):.2f}-{max(runs):.2f}" if len(runs) > 1 else ""
                out.append(
                    f"- {key[0]} {key[1]} {key[2]}: {value:.2f} × C now{within}, "
                    f"{before[key]:.2f} × C in the run of {previous['meta']['date_utc']} "
                    f"({change:+.1%}, {mark} within {AGREEMENT:.0%})"
                )
    out += ["", "## Goals at the largest size", ""]
    largest = [r for r in rows if r["dataset"] == rows[-1]["dataset"]]
    for (line, dataset, job), value in median_ratios(largest).items():
        if job in GOALS:  # the fresh-key runs
            mark = "met" if value <= GOALS[job] else "NOT met"
            out.append(f"- {line} {dataset}: {job} ≤ {GOALS[job]} × C: {value:.2f} ({mark})")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.scale``; see the module docstring."""
    ap = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.split("\n")[0])
    ap.add_argument("--lines", default="4,3.5", help="Spark lines, comma-separated")
    ap.add_argument("--scales", default=",".join(SCALES), help="dataset sizes, smallest first")
    ap.add_argument("--runs", type=int, default=1, help="repeat the sequence")
    ap.add_argument("--out", default=str(RESULTS_DIR / "scale"))
    args = ap.parse_args(argv)
    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    t0, load0 = time.perf_counter(), _load()
    rows: list[Row] = []
    names = [j.name for j in JOBS]
    for scale in args.scales.split(","):
        rows += run_suite(scale, args.lines.split(","), args.runs, False, names, JOBS)
    mem = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    meta = {
        "date_utc": started,
        "hours": round((time.perf_counter() - t0) / 3600, 2),
        "machine": f"{os.cpu_count()} cores, {mem} GiB, load {load0} at the start",
        "lines": args.lines,
        "scales": args.scales,
        "runs": args.runs,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    current, kept = out / "results.json", out / "previous.json"
    previous = json.loads(current.read_text()) if current.exists() else None
    if previous is not None:
        current.replace(kept)
    payload = {"meta": meta, "rows": [asdict(r) for r in rows]}
    current.write_text(json.dumps(payload, indent=2) + "\n")
    text = to_markdown(meta, payload["rows"], previous)
    (out / "results.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
