"""Benchmark harness: datasets, the baseline, registered cases, the results table.

A **dataset** is a generated Parquet table described by a :class:`Dataset` (kind, parameters,
seed). It is generated once into ``bench/data/<name>`` and reused while its description is
unchanged; generation time is never part of a measurement.

The **baseline** of a dataset is the plainest Spark job on the same data: read the Parquet,
``groupBy(key).count()``, write Parquet. The harness times it on every dataset a selected case
uses, in the same run, and reports each case's wall time as a ratio to it.

A **case** is a function ``run(spark, data_path, work_dir) -> dict`` registered with
:func:`register`. The dict holds the case's quality figures; a ``seconds`` entry, if present,
is the case's own measured time (e.g. the mean over seeds), otherwise the harness times the call.

Results go to ``bench/results/results.json`` and ``bench/results/results.md`` with the machine,
the Spark version and the date. Performance is measured here, never in tests.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib
import json
import os
import pkgutil
import platform
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
DATA_DIR = Path(os.environ.get("SPARK_DP_BENCH_DATA", ROOT / "data"))
WORK_DIR = ROOT / "work"
RESULTS_DIR = ROOT / "results"

BENCH_SPARK_CONF = {
    "spark.driver.memory": "12g",
    "spark.sql.shuffle.partitions": "8",
    "spark.ui.enabled": "false",
}


@dataclass(frozen=True)
class Dataset:
    """A generated benchmark dataset.

    Attributes:
        name: directory name under bench/data.
        kind: ``zipf``, ``heavy-light``, ``regular``, ``skewed``, ``zipf-replicated`` or
            ``degree-range`` (:func:`bench.datasets.degree_range_frame`).
        params: generator parameters (see spark_dp.generators.spark_frames); for
            ``zipf-replicated``, a Zipf vocabulary's parameters plus ``copies``
            (:func:`bench.datasets.replicated_frame`).
        seed: generator seed.
        key: the column the baseline groups by.
    """

    name: str
    kind: str
    params: dict[str, Any]
    seed: int = 1

    @property
    def key(self) -> str:
        pairs = ("zipf", "heavy-light", "zipf-replicated", "degree-range")
        return "item" if self.kind in pairs else "user_id"


@dataclass
class Case:
    """One registered benchmark case."""

    name: str
    family: str
    dataset: Dataset
    run: Callable[..., dict[str, Any]] | None
    scales: tuple[str, ...] = ("full",)
    notes: str = ""


@dataclass
class Result:
    """One measured row of the results table."""

    case: str
    family: str
    dataset: str
    rows: int
    seconds: float
    baseline_seconds: float
    ratio_to_baseline: float
    figures: dict[str, Any] = field(default_factory=dict)
    notes: str = ""


REGISTRY: list[Case] = []


def run_worker(
    cmd: list[str], timeout: float, **popen: Any
) -> subprocess.CompletedProcess[Any] | None:
    """Run a worker process ``cmd`` in a process group of its own and wait up to ``timeout``
    seconds (``popen``: :class:`subprocess.Popen`'s other arguments). On a timeout, or when the
    bench itself is stopped, the whole group is killed: a PySpark driver's JVM is its child and
    keeps running, on the measured cores, when only the driver is killed. Returns the finished
    process, or None on a timeout."""
    with subprocess.Popen(cmd, start_new_session=True, **popen) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except BaseException as exc:
            _kill_group(proc.pid)
            proc.communicate()
            if isinstance(exc, subprocess.TimeoutExpired):
                return None
            raise
        # anything the worker left behind (its group's id stays its own while a member lives:
        # Linux reuses no pid that is a live process group's id)
        _kill_group(proc.pid)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def register_dataset(dataset: Dataset, scales: tuple[str, ...] = ("full",)) -> None:
    """Make sure the baseline of ``dataset`` is in the table even if no case uses it."""
    REGISTRY.append(Case(f"dataset/{dataset.name}", "baseline", dataset, None, tuple(scales)))


def register(
    name: str,
    family: str,
    dataset: Dataset,
    scales: tuple[str, ...] = ("full",),
    notes: str = "",
):
    """Decorator: register ``run(spark, data_path, work_dir) -> dict`` as a case."""

    def deco(fn):
        REGISTRY.append(Case(name, family, dataset, fn, tuple(scales), notes))
        return fn

    return deco


# --------------------------------------------------------------------------- datasets


def ensure_dataset(spark, ds: Dataset) -> tuple[str, int]:
    """Generate ``ds`` unless an identical one is on disk; return (path, rows)."""
    from spark_dp.generators.spark_frames import hypergraph_frame, pairs_frame
    from spark_dp.io import write_parquet_atomic

    path = DATA_DIR / ds.name
    meta_path = DATA_DIR / f"{ds.name}.json"
    desc = {"kind": ds.kind, "params": ds.params, "seed": ds.seed}
    if path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("description") == desc:
            return str(path), int(meta["rows"])
        shutil.rmtree(path)
    print(f"[bench] generating dataset {ds.name} ...", flush=True)
    t0 = time.perf_counter()
    if ds.kind == "zipf-replicated":
        from bench.datasets import replicated_frame

        df = replicated_frame(spark, seed=ds.seed, **ds.params)
    elif ds.kind == "degree-range":
        from bench.datasets import degree_range_frame

        df = degree_range_frame(spark, seed=ds.seed, **ds.params)
    elif ds.kind in ("regular", "skewed"):
        df, _ = hypergraph_frame(spark, ds.kind, seed=ds.seed, **ds.params)
    else:
        df, _ = pairs_frame(spark, ds.kind, seed=ds.seed, **ds.params)
    write_parquet_atomic(df, str(path), overwrite=True)
    rows = spark.read.parquet(str(path)).count()
    meta_path.write_text(json.dumps({"description": desc, "rows": rows}, indent=2))
    print(f"[bench] dataset {ds.name}: {rows} rows in {time.perf_counter() - t0:.1f}s", flush=True)
    return str(path), rows


def baseline(spark, data_path: str, key: str, out_path: str) -> float:
    """Seconds for: read Parquet, ``groupBy(key).count()``, write Parquet."""
    t0 = time.perf_counter()
    df = spark.read.parquet(data_path)
    df.groupBy(key).count().write.mode("overwrite").parquet(out_path)
    return time.perf_counter() - t0


@dataclass(frozen=True)
class JobRun:
    """One job run of the bench: wall seconds, the JSON report, and the stages' seconds the
    run returned (data-dependent: never in a report)."""

    seconds: float
    report: dict[str, Any]
    stage_seconds: dict[str, float]


def run_job(job: str, data_path: str, out: Path, flags: list[str], seed: int) -> JobRun:
    """Run ``spark_dp.jobs.<job>`` in the bench session (read, run, write). Seeded so the
    figures repeat (never a production setting)."""
    from spark_dp.jobs.runner import run_outcome

    spec = importlib.import_module(f"spark_dp.jobs.{job}").SPEC
    argv = ["--input", data_path, "--output", str(out), "--seed", str(seed), "--overwrite"]
    t0 = time.perf_counter()
    outcome = run_outcome(spec, [*argv, "--log-level", "WARNING", *flags])
    seconds = time.perf_counter() - t0
    if outcome.exit_code != 0:
        raise RuntimeError(f"{job} {flags} exited with {outcome.exit_code}")
    report = json.loads(Path(f"{out}.report.json").read_text())
    return JobRun(seconds, report, dict(outcome.stage_seconds))


# --------------------------------------------------------------------------- machine


def machine_info(spark) -> dict[str, Any]:
    """Cores, memory, CPU model, OS, Python and Spark versions."""
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem_gib = round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return {
        "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "cores": os.cpu_count(),
        "memory_gib": mem_gib,
        "cpu": cpu,
        "os": platform.platform(),
        "python": platform.python_version(),
        "spark": spark.version,
        "master": spark.sparkContext.master,
    }


# --------------------------------------------------------------------------- running


def load_cases() -> list[Case]:
    """Import every module of bench/cases (each registers its cases)."""
    import bench.cases as pkg

    for mod in pkgutil.iter_modules(pkg.__path__):
        importlib.import_module(f"bench.cases.{mod.name}")
    return REGISTRY


def _session():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from spark_dp.session import get_session

    return get_session("spark_dp-bench", BENCH_SPARK_CONF, log_level="ERROR")


def emit_json(doc: Any, out: Path | None) -> int:
    """Print ``doc`` as indented JSON and write it to ``out`` when given (the small measuring
    scripts' output); exit code 0."""
    text = json.dumps(doc, indent=2) + "\n"
    if out:
        out.write_text(text)
    print(text)
    return 0


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def to_markdown(machine: dict[str, Any], results: list[Result]) -> str:
    """The results table as Markdown."""
    lines = [
        "# spark_dp benchmark results",
        "",
        f"Machine: {machine['cores']} cores, {machine['memory_gib']} GiB, {machine['cpu']}; "
        f"Python {machine['python']}, Spark {machine['spark']} ({machine['master']}); "
        f"{machine['date_utc']}.",
        "",
        "Ratio = case wall seconds / baseline wall seconds (read Parquet, groupBy(key).count(), "
        "write Parquet) on the same dataset, measured in the same run.",
        "",
        "| case | dataset | rows | seconds | baseline s | ratio | figures |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for r in results:
        figs = "; ".join(f"{k}={_fmt(v)}" for k, v in r.figures.items())
        lines.append(
            f"| {r.case} | {r.dataset} | {r.rows:,} | {r.seconds:.2f} | "
            f"{r.baseline_seconds:.2f} | {r.ratio_to_baseline:.2f} | {figs} |"
        )
    notes = [f"- **{r.case}**: {r.notes}" for r in results if r.notes]
    if notes:
        lines += ["", "Notes:", "", *notes]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m bench [--scale quick|full] [--only TEXT] [--list]``."""
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--scale",
        choices=["quick", "full", "extended"],
        default="full",
        help="quick: smoke sizes; full: what `make bench` reports; extended: costly extra "
        "cells (TPC-H SF 1, job defaults at 8M)",
    )
    ap.add_argument("--only", action="append", help="run cases whose name contains TEXT")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("--out", default=str(RESULTS_DIR), help="results directory")
    args = ap.parse_args(argv)

    cases = [c for c in load_cases() if args.scale in c.scales]
    if args.only:
        cases = [c for c in cases if any(s in c.name for s in args.only)]
    if args.list:
        for c in cases:
            print(f"{c.name:50s} {c.family:22s} {c.dataset.name}")
        return 0
    if not cases:
        print("no benchmark case selected", file=sys.stderr)
        return 2

    spark = _session()
    machine = machine_info(spark)
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    datasets: dict[str, tuple[str, int, float]] = {}
    results: list[Result] = []
    for case in cases:
        ds = case.dataset
        if ds.name not in datasets:
            path, rows = ensure_dataset(spark, ds)
            baseline(spark, path, ds.key, str(WORK_DIR / "warmup"))  # JIT and cache warm-up
            secs = min(
                baseline(spark, path, ds.key, str(WORK_DIR / f"baseline-{ds.name}"))
                for _ in range(2)
            )
            datasets[ds.name] = (path, rows, secs)
            print(f"[bench] baseline {ds.name}: {secs:.2f}s", flush=True)
            results.append(
                Result(f"baseline/{ds.name}", "baseline", ds.name, rows, secs, secs, 1.0)
            )
        path, rows, base = datasets[ds.name]
        if case.run is None:
            continue
        work = WORK_DIR / case.name.replace("/", "_")
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        print(f"[bench] case {case.name} ...", flush=True)
        t0 = time.perf_counter()
        figures = dict(case.run(spark, path, str(work)))
        wall = time.perf_counter() - t0
        secs = float(figures.pop("seconds", wall))
        results.append(
            Result(
                case.name, case.family, ds.name, rows, secs, base, secs / base, figures, case.notes
            )
        )
        print(f"[bench] case {case.name}: {secs:.2f}s ({secs / base:.2f}x) {figures}", flush=True)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    payload = {"machine": machine, "scale": args.scale, "results": [asdict(r) for r in results]}
    suffix = "" if args.scale == "full" and not args.only else f"-{args.scale}"
    (out / f"results{suffix}.json").write_text(json.dumps(payload, indent=2, default=str) + "\n")
    (out / f"results{suffix}.md").write_text(to_markdown(machine, results))
    print(to_markdown(machine, results))
    return 0
