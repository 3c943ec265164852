"""The Spark-line suite (issue 18): each job a process of its own, on Spark 3.5 and 4, with peers.

``python -m bench.lines --scale quick|full|xl`` (``make bench`` runs ``full``; ``python -m bench
--scale xl`` runs ``xl``). For each Spark line (a venv from :mod:`bench.venvs`) and each dataset
of the scale, it runs, one job at a time, each in a fresh process (:mod:`bench.worker`:
``local[2]``, Spark's default driver memory, warmed up on a small dataset first):

* the **floors** of the dataset: A = read + ``groupBy(item).count()`` + write; B = A with every
  pair shuffled by user first (``repartition(user_id)``), the least any per-user step moves;
  C = B with a per-user top-100 by ``row_number()`` over a hash (the sort a uniform cap needs);
  D = B with the repeated (user, item) pairs dropped by a hash aggregation (deduplication
  without a sort);
* spark_dp's **Basic**, **DP-SIPS** ([0.1, 0.9]) and **MAD2R** jobs (ε = 1, δ = 1e-5, Δ0 = 100,
  fixed seed) and the **greedy distinct-count** curve job on the same pairs;
* the **peers**, each in its own venv on the same pyspark: PipelineDP ``select_partitions``
  (Gaussian and truncated geometric) and, on Spark 3.5 only (it pins pyspark 3.5), Tumult
  Analytics ``get_groups`` at k ∈ :data:`TUMULT_KS`; a peer that runs over
  :data:`PEER_TIMEOUT_S` is stopped and reported as not finished;
* **contribution bounding**'s distributed proposal rounds on a regular hypergraph with as many
  incidences as the scale's pairs, beside its own floors.

Every row reports wall seconds, the ratio to floor B of the same dataset, line and run, the CPU
seconds of the job's processes, the peak JVM heap and Spark's execution and storage memory from
the event log, released items, and the load average before the job (the machine may be shared).
``--runs N`` repeats the whole sequence; the tables show ranges. Results: ``bench/results/lines/
results-<scale>.{json,md}``, with the goals of issue 18 checked at the end of the Markdown.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.datasets import REPLICATED_BASE
from bench.harness import DATA_DIR, RESULTS_DIR, WORK_DIR, Dataset, run_worker

__all__ = ["PAIR_JOBS", "SELECTION", "Job", "Row", "main", "run_suite"]

REPO = Path(__file__).resolve().parent.parent
PEER_TIMEOUT_S = 20 * 60
JOB_TIMEOUT_S = 3 * 60 * 60
TUMULT_KS = (1, 2, 5)

COPIES = {"quick": 1, "full": 8, "xl": 64}
"""Copies of the replicated vocabulary's users: about 1.6M, 13M and 104M pairs."""

RECORDS = {"quick": 500_000, "full": 5_000_000, "xl": 50_000_000}
"""Records of the regular hypergraph (2 users per record: 1M, 10M and 100M incidences)."""

WARMUP_PAIRS = Dataset("zipf-100k", "zipf", {"n_users": 4_800, "mean_items": 36.0, "exponent": 1.3})
WARMUP_GRAPH = Dataset("regular-20k", "regular", {"n_records": 20_000, "records_per_user": 4.0}, 7)


@dataclass(frozen=True)
class Job:
    """One measured job: its name in the tables, the worker job and its flags."""

    name: str
    worker: str
    flags: tuple[str, ...] = ()
    peer: str | None = None  # the peer venv it runs in (None: the line's spark_dp venv)
    kind: str = "pairs"  # the dataset it reads: "pairs" or "graph"


SELECTION = ("--epsilon", "1", "--delta", "1e-5", "--max-contributions", "100")
"""The selection jobs' parameters: ε = 1, δ = 1e-5, Δ0 = 100 (the peers' too)."""


def _selection(name: str, *flags: str) -> Job:
    return Job(name, "spark_dp", ("partition_selection", "--algorithm", name, *SELECTION, *flags))


PAIR_JOBS = (
    Job("floor-a", "floor-a"),
    Job("floor-b", "floor-b"),
    Job("floor-c", "floor-c"),
    Job("floor-d", "floor-d"),
    _selection("basic"),
    _selection("dp-sips", "--split", "0.1,0.9"),
    _selection("mad2r"),
    Job("dc-greedy", "spark_dp", ("distinct_count", "--method", "greedy", "--epsilon", "1")),
)
PEER_JOBS = (
    Job("pipeline-dp/gaussian", "pipeline-dp", ("gaussian",), peer="pipeline-dp"),
    Job("pipeline-dp/truncated-geometric", "pipeline-dp", ("truncated-geometric",), "pipeline-dp"),
    *(Job(f"tumult/k={k}", "tumult", (str(k),), peer="tumult") for k in TUMULT_KS),
)
GRAPH_JOBS = (
    Job("floor-a", "floor-a", ("user_id", ""), kind="graph"),
    Job("floor-b", "floor-b", ("user_id", "record_id"), kind="graph"),
    Job(
        "cb-proposal",
        "spark_dp",
        ("contribution_bounding", "--max-contributions", "4", "--finish", "continue"),
        kind="graph",
    ),
)


@dataclass
class Row:
    """One measured job run."""

    line: str
    spark: str
    dataset: str
    rows: int
    job: str
    run: int
    status: str
    seconds: float | None = None
    cpu_seconds: float | None = None
    items: int | None = None
    memory: dict[str, Any] = field(default_factory=dict)
    load: float | None = None
    figures: dict[str, Any] = field(default_factory=dict)


def _datasets(scale: str) -> dict[str, Dataset]:
    return {
        "pairs": Dataset(
            f"zipf-rep-x{COPIES[scale]}",
            "zipf-replicated",
            {**REPLICATED_BASE, "copies": COPIES[scale]},
        ),
        "graph": Dataset(
            f"regular-{RECORDS[scale] // 1000}k",
            "regular",
            {"n_records": RECORDS[scale], "records_per_user": 4.0},
            seed=7,
        ),
    }


def _generate(datasets: list[Dataset]) -> dict[str, tuple[str, int]]:
    """Generate (or reuse) every dataset in one session of the orchestrating process."""
    from bench.harness import _session, ensure_dataset

    spark = _session()
    out = {ds.name: ensure_dataset(spark, ds) for ds in datasets}
    spark.stop()
    return out


def _load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def _run(
    python: Path, job: Job, data: str, warmup: str, tag: str, timeout: float, tree: Path = REPO
) -> dict:
    """One job in a fresh worker process, with the spark_dp (and bench) of ``tree`` first on
    its path; the worker's result, with ``status``."""
    work = WORK_DIR / "lines" / tag
    result = work.parent / f"{work.name}.json"  # not with_suffix: "3.5" in the name
    result.unlink(missing_ok=True)
    cmd = [
        str(python), "-m", "bench.worker", "--job", job.worker, "--data", data,
        "--warmup", warmup, "--work", str(work), "--result", str(result), "--", *job.flags,
    ]  # fmt: skip
    env = dict(os.environ, PYSPARK_PYTHON=str(python), PYSPARK_DRIVER_PYTHON=str(python))
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    env["PYTHONPATH"] = str(tree)
    log = work.parent / f"{work.name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as fh:
        done = run_worker(cmd, timeout, cwd=tree, env=env, stdout=fh, stderr=subprocess.STDOUT)
    if done is None:
        return {"status": f"not finished in {timeout / 60:.0f} min"}
    code = done.returncode
    if code != 0 or not result.exists():
        tail = log.read_text(errors="replace").strip().splitlines()[-3:]
        return {"status": "failed: " + " | ".join(tail)[-300:]}
    return {"status": "ok", **json.loads(result.read_text())}


def _items(figures: dict[str, Any]) -> int | None:
    for key in ("output_items", "selected"):
        if isinstance(figures.get(key), int):
            return int(figures[key])
    return None


def _selected(jobs: list[Job], only: list[str]) -> list[Job]:
    """The jobs whose name has one of ``only`` (every job if empty), with the floors of each
    dataset that one of them reads (the ratios' denominators)."""
    if not only:
        return jobs
    chosen = [j for j in jobs if any(s in j.name for s in only)]
    kinds = {j.kind for j in chosen}
    return [j for j in jobs if j in chosen or ("floor" in j.name and j.kind in kinds)]


def run_suite(
    scale: str,
    lines: list[str],
    runs: int,
    peers: bool,
    only: list[str],
    pair_jobs: tuple[Job, ...] = PAIR_JOBS,
) -> list[Row]:
    """Run the suite (its jobs on pairs: ``pair_jobs``); return every row."""
    from bench.venvs import line_venvs, peer_venvs, spark_version

    ds = _datasets(scale)
    kinds = {j.kind for j in _selected([*pair_jobs, *PEER_JOBS, *GRAPH_JOBS], only)}
    warmups = {"pairs": WARMUP_PAIRS, "graph": WARMUP_GRAPH}
    paths = _generate([d for k in sorted(kinds) for d in (ds[k], warmups[k])])
    warm = {k: paths[warmups[k].name][0] for k in kinds}
    pythons = line_venvs()
    rows: list[Row] = []
    for run in range(1, runs + 1):
        for line in lines:
            python = pythons[line]
            spark = spark_version(python)
            peer_pythons = peer_venvs(spark) if peers else {}
            jobs = [*pair_jobs, *(j for j in PEER_JOBS if j.peer in peer_pythons), *GRAPH_JOBS]
            for job in _selected(jobs, only):
                dataset = ds[job.kind]
                path, n = paths[dataset.name]
                load = _load()
                print(f"[bench] {line} {dataset.name} {job.name} run {run} (load {load}) ...")
                out = _run(
                    peer_pythons[job.peer] if job.peer else python,
                    job,
                    path,
                    warm[job.kind],
                    f"{scale}-{line}-{dataset.name}-{job.name.replace('/', '_')}-{run}",
                    PEER_TIMEOUT_S if job.peer else JOB_TIMEOUT_S,
                )
                figures = out.get("figures", {})
                row = Row(
                    line, spark, dataset.name, n, job.name, run, out["status"],
                    out.get("seconds"), out.get("cpu_seconds"), _items(figures),
                    out.get("memory", {}), load,
                    {k: v for k, v in figures.items() if k not in ("output_items", "selected")},
                )  # fmt: skip
                rows.append(row)
                print(f"[bench]   {row.status} {row.seconds} s, items {row.items}", flush=True)
    return rows


# --------------------------------------------------------------------------- tables


def _span(values: list[float], fmt: str = "{:.1f}") -> str:
    if not values:
        return "—"
    lo, hi = min(values), max(values)
    return fmt.format(lo) if abs(hi - lo) < 1e-9 else f"{fmt.format(lo)}–{fmt.format(hi)}"


def _ratios(rows: list[Row], of: str, to: str, line: str, dataset: str) -> list[float]:
    """``of``/``to`` seconds, for each run where both finished."""
    out = []
    for r in rows:
        if r.line == line and r.dataset == dataset and r.job == of and r.seconds:
            base = [
                b.seconds
                for b in rows
                if (b.line, b.dataset, b.job, b.run) == (line, dataset, to, r.run) and b.seconds
            ]
            if base:
                out.append(r.seconds / base[0])
    return out


def to_markdown(meta: dict[str, Any], rows: list[Row]) -> str:
    """Tables per dataset and line, then the goals of issue 18."""
    lines = [
        f"# Spark-line suite, scale {meta['scale']}",
        "",
        f"{meta['machine']}; {meta['date_utc']}; {meta['runs']} run(s); each job a fresh "
        "process (`local[2]`, default driver memory), warmed up on a small dataset; wall seconds "
        "from first read to written output. Ranges over runs. × B = seconds / floor B of the "
        "same dataset, line and run. CPU s: the job's JVM, Python workers and driver. Heap: peak "
        "used JVM heap / Spark execution / storage memory (MiB, event log). Load: 1-minute load "
        "average before the job (2 cores).",
        "",
    ]
    for dataset in dict.fromkeys(r.dataset for r in rows):
        for line in dict.fromkeys(r.line for r in rows if r.dataset == dataset):
            sel = [r for r in rows if r.dataset == dataset and r.line == line]
            lines += [
                f"## {dataset} ({sel[0].rows:,} rows), Spark {sel[0].spark}",
                "",
                "| job | seconds | × B | items | CPU s | heap / exec / storage MiB | load "
                "| status |",
                "|---|---:|---:|---:|---:|---|---:|---|",
            ]
            for job in dict.fromkeys(r.job for r in sel):
                jr = [r for r in sel if r.job == job]
                ok = [r for r in jr if r.seconds is not None]
                heap = [
                    "{}/{}/{}".format(
                        r.memory.get("peak_jvm_heap_mib"),
                        r.memory.get("peak_execution_mib"),
                        r.memory.get("peak_storage_mib"),
                    )
                    for r in ok
                ]
                items = sorted({r.items for r in ok if r.items is not None})
                lines.append(
                    f"| {job} | {_span([r.seconds for r in ok if r.seconds])} | "
                    f"{_span(_ratios(rows, job, 'floor-b', line, dataset), '{:.2f}')} | "
                    f"{', '.join(f'{i:,}' for i in items) or '—'} | "
                    f"{_span([r.cpu_seconds for r in ok if r.cpu_seconds])} | "
                    f"{'; '.join(dict.fromkeys(heap)) or '—'} | "
                    f"{_span([r.load for r in jr if r.load is not None])} | "
                    f"{'; '.join(sorted({r.status for r in jr}))} |"
                )
            lines.append("")
    lines += ["## Goals (issue 18)", "", *goals(meta["scale"], rows), ""]
    return "\n".join(lines)


def goals(scale: str, rows: list[Row]) -> list[str]:
    """The checkable goals of issue 18 on these rows, one Markdown bullet each."""
    out = []
    limits = {"basic": 1.5, "mad2r": 3.0, "dp-sips": 2.5} if scale == "xl" else {}
    pair_sets = dict.fromkeys((r.line, r.dataset) for r in rows if r.job == "basic")
    for line, dataset in pair_sets:
        for job, limit in limits.items():
            ratios = _ratios(rows, job, "floor-b", line, dataset)
            if ratios:
                mark = "met" if max(ratios) <= limit else "NOT met"
                out.append(
                    f"- {line} {dataset}: {job} ≤ {limit}× floor B: "
                    f"{_span(ratios, '{:.2f}')} ({mark})"
                )
        vs_basic = _ratios(rows, "mad2r", "basic", line, dataset)
        if vs_basic:
            mark = "met" if max(vs_basic) <= 2.0 else "NOT met"
            out.append(
                f"- {line} {dataset}: mad2r ≤ 2× basic: {_span(vs_basic, '{:.2f}')} ({mark})"
            )
        sel = [r for r in rows if (r.line, r.dataset) == (line, dataset) and r.seconds]
        ours = {j: [r for r in sel if r.job == j] for j in ("basic", "dp-sips", "mad2r")}
        peers: dict[str, list[Row]] = {}
        for r in sel:
            if r.job.startswith(("pipeline-dp/", "tumult/")):
                peers.setdefault(r.job, []).append(r)
        if not peers:
            continue
        best_tumult = max(
            (j for j in peers if j.startswith("tumult/")),
            key=lambda j: max(r.items or 0 for r in peers[j]),
            default=None,
        )
        compared = [j for j in peers if not j.startswith("tumult/") or j == best_tumult]
        peer_items = max(r.items or 0 for j in compared for r in peers[j])
        our_items = [r.items or 0 for rs in ours.values() for r in rs]
        if our_items:
            mark = "met" if min(our_items) > peer_items else "NOT met"
            out.append(
                f"- {line} {dataset}: every spark_dp algorithm keeps more items than every peer "
                f"({min(our_items):,} vs {peer_items:,}; {', '.join(compared)}) ({mark})"
            )
        for job in ("basic", "mad2r"):
            if ours[job]:
                slowest = max(r.seconds or 0.0 for r in ours[job])
                fastest_peer = min(r.seconds or 0.0 for j in compared for r in peers[j])
                mark = "met" if slowest < fastest_peer else "NOT met"
                out.append(
                    f"- {line} {dataset}: {job} faster than every peer ({slowest:.0f} s vs the "
                    f"fastest peer's {fastest_peer:.0f} s) ({mark})"
                )
    return out or ["- (no goal applies to the jobs that ran)"]


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.lines``; see the module docstring."""
    ap = argparse.ArgumentParser(prog="python -m bench.lines", description=__doc__.split("\n")[0])
    ap.add_argument("--scale", choices=sorted(COPIES), default="full")
    ap.add_argument("--lines", default="3.5,4", help="Spark lines, comma-separated")
    ap.add_argument("--runs", type=int, default=1, help="repeat the sequence (ranges)")
    ap.add_argument("--no-peers", action="store_true", help="skip PipelineDP and Tumult")
    ap.add_argument(
        "--only",
        action="append",
        default=[],
        help="jobs whose name has TEXT, with the floors of the datasets they read",
    )
    ap.add_argument("--out", default=str(RESULTS_DIR / "lines"))
    args = ap.parse_args(argv)
    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    rows = run_suite(args.scale, args.lines.split(","), args.runs, not args.no_peers, args.only)
    cpu = os.cpu_count()
    mem = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    meta = {
        "scale": args.scale,
        "runs": args.runs,
        "date_utc": started,
        "hours": round((time.perf_counter() - t0) / 3600, 2),
        "machine": f"{cpu} cores, {mem} GiB",
        "data_dir": str(DATA_DIR),
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    suffix = args.scale if not args.only else f"{args.scale}-partial"
    payload = {"meta": meta, "rows": [asdict(r) for r in rows]}
    (out / f"results-{suffix}.json").write_text(json.dumps(payload, indent=2) + "\n")
    (out / f"results-{suffix}.md").write_text(to_markdown(meta, rows))
    print(to_markdown(meta, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
