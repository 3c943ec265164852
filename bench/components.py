"""Connected components of the peeled core: GraphFrames (each algorithm) against DataFrames.

``python -m bench.components --scale quick|full`` (``make bench-components``). For
each core size of the scale it makes, once, Zipf pairs whose first-round peeled core has about
that many edges, and the core's person–item graph as the exact curve builds it
(:mod:`bench.components_worker`, data under ``bench/data/components/``). Then, on each Spark
line (4: the project's ``.venv``; 3.5: ``.venv-spark35``, ``make spark35-setup``) with the
line's GraphFrames jar (``make graphframes-jars``), one fresh process per measurement:

* the connected components of each core by the DataFrame large-star / small-star path and by
  GraphFrames' ``two_phase`` and ``graphx`` (seconds from the cached graph to the persisted,
  counted labels; every method's partition is checked against the others' by a fingerprint);
* the same on a path of 1,000 vertices with hashed ids, the worst case of label propagation
  (``graphx`` runs one superstep per hop; :data:`PATH_TIMEOUT_S` per method);
* the whole distinct-count job (``jobs/distinct_count.py``, exact method, ε = 1, fixed seed) on
  the pairs of the job's core, with ``--components dataframe`` and ``--components graphframes``
  (with ``--components-min-rows 0``, so that the core is split whatever its size).

Every row records the load average before it (the machine may be shared: compare rows of one
run only). Results: ``bench/results/components/results-<scale>.{json,md}``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.harness import DATA_DIR, RESULTS_DIR, run_worker

__all__ = ["main"]

REPO = Path(__file__).resolve().parent.parent
GF_BUILD = "0.11.0-11-ge49a655b"
JARS = REPO / ".cache" / "jars" / f"graphframes-{GF_BUILD}"
LINES = {
    "4": (REPO / ".venv" / "bin" / "python", JARS / f"graphframes-spark4_2.13-{GF_BUILD}.jar"),
    "3.5": (
        REPO / ".venv-spark35" / "bin" / "python",
        JARS / f"graphframes-spark3_2.12-{GF_BUILD}.jar",
    ),
}
METHODS = ("dataframe", "two_phase", "graphx")
USERS_PER_EDGE = 0.17
"""Zipf users per core edge, the first guess when no core has been made yet (the core grows
more slowly than the users: :func:`users_for` then fits the cores already made)."""
TOLERANCE = 0.15
"""A core made earlier whose edges are further than this from its target is made again."""

SCALES: dict[str, dict[str, Any]] = {
    "quick": {"cores": (60_000, 250_000), "path": 1_000, "job": 250_000, "job_min_rows": 0},
    "full": {
        "cores": (1_000_000, 5_000_000, 20_000_000),
        "path": 1_000,
        "job": 5_000_000,
        "job_min_rows": 0,
    },
}
"""Target core edges, the vertices of the path graph (the worst case of label propagation), and
the core whose pairs the job runs on (``job_min_rows``: its ``--components-min-rows``, 0 so that
the job splits that core whatever its size: a core made for a target may fall below the default
5M rows, and a job that does not split measures no components; None: the default)."""
_CAPTURE: dict[str, Any] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
"""How a step's output is read (its RESULT line, or what it said when it failed)."""
PATH_TIMEOUT_S = 1800
"""Seconds a method gets on the path graph (``graphx`` runs one superstep per hop)."""


def _env(python: Path) -> dict[str, str]:
    """The environment of a step: this checkout first on the path, workers on ``python``."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, PYTHONPATH=path, SPARK_LOCAL_IP="127.0.0.1")
    env["PYSPARK_PYTHON"] = env["PYSPARK_DRIVER_PYTHON"] = str(python)
    return env


def _run(python: Path, args: list[str], timeout: float) -> tuple[dict[str, Any] | None, str]:
    """Run ``python args`` with this checkout importable; (its RESULT JSON or None, log tail)."""
    env = _env(python)
    done = run_worker([str(python), *args], timeout, cwd=REPO, env=env, **_CAPTURE)
    if done is None:
        return None, f"timed out after {timeout:.0f} s"
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :]), ""
    return None, _failure(done.stderr or done.stdout)


def _failure(log: str) -> str:
    """What a failed step said: its first two lines naming an error or exception and its first
    cause (a JVM stack trace's cause is near its top, not at its end), then its last lines."""
    lines = [line.strip() for line in log.strip().splitlines() if line.strip()]
    named = [ln for ln in lines if "Error" in ln or "Exception" in ln][:2]
    named += [ln for ln in lines if ln.startswith("Caused by:")][:1]
    first = " / ".join(named)
    tail = " | ".join(lines[-3:])
    return f"{first[:300]} ... {tail[-400:]}" if first and first not in tail else tail[-700:]


def users_for(target: int, made: list[tuple[int, int]]) -> int:
    """Zipf users whose peeled core has about ``target`` edges.

    ``made`` holds (users, core edges) of cores made before. The core's edges grow as a power of
    the users whose exponent falls slowly with size, so the fit is local: the line through the
    two made cores nearest the target in log edges (extended past the largest or smallest), one
    core scaled proportionally, none :data:`USERS_PER_EDGE`.
    """
    points = sorted({(e, u) for u, e in made if u > 0 and e > 0})
    if not points:
        return max(1_000, round(target * USERS_PER_EDGE))
    if len(points) == 1:
        ((e, u),) = points
        return max(1_000, round(u * target / e))
    near = sorted(points, key=lambda p: abs(math.log(p[0] / target)))[:2]
    (e0, u0), (e1, u1) = sorted(near)
    if e0 == e1 or u0 == u1:
        return max(1_000, round(u1 * target / e1))
    slope = math.log(u1 / u0) / math.log(e1 / e0)
    return max(1_000, round(u0 * (target / e0) ** slope))


def _made() -> list[tuple[int, int]]:
    """(users, core edges) of every Zipf core under ``bench/data/components``."""
    made = []
    for meta in sorted((DATA_DIR / "components").glob("core-*/meta.json")):
        doc = json.loads(meta.read_text())
        made.append((int(doc["users"]), int(doc["core_edges"])))
    return made


def _core(target: int, memory: str) -> tuple[Path, dict[str, Any]]:
    """The data of a core of about ``target`` edges (made once, by the Spark 4 line; made again
    when the one made earlier is more than :data:`TOLERANCE` off the target)."""
    out = DATA_DIR / "components" / f"core-{target}"
    meta = out / "meta.json"
    known = _made()  # before an off-target core goes: it still tells the fit about its size
    if meta.exists():
        edges = json.loads(meta.read_text())["core_edges"]
        if abs(edges / target - 1) > TOLERANCE:
            print(f"[components] core-{target} has {edges:,} edges, more than "
                  f"{TOLERANCE:.0%} off its target: making it again", flush=True)  # fmt: skip
            shutil.rmtree(out)
    if not meta.exists():
        users = users_for(target, known)
        print(f"[components] making a core of about {target:,} edges ({users:,} users)", flush=True)
        step = ["-m", "bench.components_worker", "core", "--users", str(users), "--out", str(out)]
        made, err = _run(LINES["4"][0], [*step, "--driver-memory", memory], 6 * 3600)
        if made is None:
            raise SystemExit(f"bench.components: making core-{target} failed: {err}")
    return out, json.loads(meta.read_text())


def _path(vertices: int, memory: str) -> tuple[Path, dict[str, Any]]:
    """The path graph of ``vertices`` vertices (made once)."""
    out = DATA_DIR / "components" / f"path-{vertices}"
    if not (out / "meta.json").exists():
        step = ["-m", "bench.components_worker", "path", "--vertices", str(vertices)]
        made, err = _run(LINES["4"][0], [*step, "--out", str(out), "--driver-memory", memory], 3600)
        if made is None:
            raise SystemExit(f"bench.components: making path-{vertices} failed: {err}")
    return out, json.loads((out / "meta.json").read_text())


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _components(line: str, graph: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    python, jar = LINES[line]
    path = graph.parent.name.startswith("path")
    timeout = min(args.timeout, PATH_TIMEOUT_S) if path else args.timeout
    rows = []
    for method in args.methods:
        load = _load()
        step = ["-m", "bench.components_worker", "cc", "--graph", str(graph), "--method", method]
        step += ["--jar", str(jar), "--driver-memory", args.driver_memory]
        got, err = _run(python, step, timeout)
        row = {"line": line, "method": method, "load_before": load, "load_after": _load()}
        row.update(got if got is not None else {"seconds": None, "error": err})
        print(f"[components] Spark {line} {graph.parent.name} {method}: {row.get('seconds')} s "
              f"(load {load}) {row.get('error', '')}", flush=True)  # fmt: skip
        rows.append(row)
    return rows


def _job(line: str, pairs: Path, method: str, args: argparse.Namespace) -> dict[str, Any]:
    """The whole distinct-count job on ``pairs``, timed as a process (start-up included)."""
    python, jar = LINES[line]
    report = REPO / "bench" / "work" / "components" / f"job-{line}-{method}.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    cmd = [str(python), "jobs/distinct_count.py", "--input", str(pairs), "--epsilon", "1"]
    cmd += ["--method", "exact", "--seed", "1", "--components", method, "--master", "local[2]"]
    cmd += ["--spark-conf", f"spark.driver.memory={args.driver_memory}", "--overwrite"]
    cmd += ["--report", str(report), "--log-level", "ERROR"]
    if method == "graphframes":
        cmd += ["--spark-conf", f"spark.jars={jar}"]
    if SCALES[args.scale]["job_min_rows"] is not None:
        cmd += ["--components-min-rows", str(SCALES[args.scale]["job_min_rows"])]
    env = _env(python)
    load, start = _load(), time.perf_counter()
    done = run_worker(cmd, args.timeout, cwd=REPO, env=env, **_CAPTURE)
    code = None if done is None else done.returncode
    row: dict[str, Any] = {"line": line, "components": method, "exit": code, "load_before": load}
    row["seconds"] = round(time.perf_counter() - start, 1) if code == 0 else None
    if code == 0:
        ran = json.loads(report.read_text())["privacy"]["mechanism"].get("components")
        row["report_components"] = ran
    print(f"[components] Spark {line} job --components {method}: {row['seconds']} s", flush=True)
    return row


def _table(rows: list[dict[str, Any]], cores: dict[str, dict[str, Any]]) -> list[str]:
    out = ["| Spark | core | edges | " + " | ".join(METHODS) + " | fastest | same partition |"]
    out.append("|---|---|---:|" + "---:|" * len(METHODS) + "---|---|")
    for line in LINES:
        for name, meta in cores.items():
            mine = [r for r in rows if r["line"] == line and r.get("core") == name]
            if not mine:
                continue
            secs = {r["method"]: r.get("seconds") for r in mine}
            timed = {m: s for m, s in secs.items() if s is not None}
            fastest = min(timed, key=lambda m: timed[m]) if timed else "-"
            prints = {r.get("fingerprint") for r in mine if r.get("fingerprint")}
            cells = [f"{secs[m]:.1f}" if secs.get(m) is not None else "-" for m in METHODS]
            loads = "/".join(f"{r['load_before']:.1f}" for r in mine)
            out.append(
                f"| {line} | {name} | {meta['core_edges']:,} | " + " | ".join(cells)
                + f" | {fastest} | {_same(prints)} (load {loads}) |"
            )  # fmt: skip
    return out


def _same(prints: set[str]) -> str:
    """Whether the methods that finished found one partition (``-``: none finished)."""
    return "-" if not prints else "yes" if len(prints) == 1 else "NO"


def _markdown(doc: dict[str, Any]) -> str:
    lines = [
        f"# Connected components of the peeled core ({doc['scale']})",
        "",
        f"{doc['started']}; {doc['machine']}; driver memory {doc['driver_memory']}, local[2]; "
        f"whole run {doc['wall_minutes']} min. Seconds from the cached core graph to the "
        "persisted, counted labels; load average (1 min) before each measurement in brackets.",
        "",
        *_table(doc["components"], doc["cores"]),
        "",
        "Whole distinct-count job (exact, ε = 1), process wall seconds:",
        "",
        "| Spark | core | --components | seconds | report says | load before |",
        "|---|---|---|---:|---|---:|",
    ]
    for r in doc["jobs"]:
        lines.append(
            f"| {r['line']} | {doc['job_core']} | {r['components']} | {r['seconds']} | "
            f"{r.get('report_components', '-')} | {r['load_before']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.components", description=__doc__)
    ap.add_argument("--scale", choices=sorted(SCALES), default="quick")
    ap.add_argument("--lines", default="4,3.5", help="Spark lines to run (comma-separated)")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--no-job", action="store_true", help="leave out the whole-job runs")
    ap.add_argument(
        "--cores",
        help="core sizes to run instead of the scale's (comma-separated target edges; 'none' "
        "for the path graph alone, with --no-job); the results are then named "
        "results-<scale>-<sizes> (results-<scale>-path)",
    )
    ap.add_argument("--no-path", action="store_true", help="leave out the path graph")
    ap.add_argument("--timeout", type=float, default=2 * 3600, help="seconds per measurement")
    ap.add_argument("--driver-memory", default="6g")
    ap.add_argument("--out", type=Path, default=RESULTS_DIR / "components")
    args = ap.parse_args(argv)
    args.methods = [m for m in args.methods.split(",") if m]
    lines = [line for line in args.lines.split(",") if line]
    for line in lines:
        python, jar = LINES[line]
        if not python.exists() or not jar.exists():
            raise SystemExit(f"bench.components: Spark {line} needs {python} and {jar} "
                             "(make setup spark35-setup graphframes-jars)")  # fmt: skip
    t0 = time.time()
    scale = SCALES[args.scale]
    targets, tag = _targets(args.scale, args.cores, job=not args.no_job)
    if not targets and args.no_path:
        raise SystemExit("bench.components: --cores none --no-path leaves nothing to measure")
    doc: dict[str, Any] = {
        "scale": tag,
        "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{os.cpu_count()} cores, load average at start {_load()}",
        "driver_memory": args.driver_memory,
        "wall_minutes": None,
        "cores": {},
        "components": [],
        "job_core": f"core-{scale['job']}",
        "jobs": [],
    }
    for target in targets:
        out, meta = _core(target, args.driver_memory)
        doc["cores"][out.name] = meta
    if not args.no_path:
        out, meta = _path(scale["path"], args.driver_memory)
        doc["cores"][out.name] = meta
    for line in lines:
        for name in doc["cores"]:
            for row in _components(line, DATA_DIR / "components" / name / "graph", args):
                doc["components"].append({"core": name, **row})
            _write(doc, args.out, t0)  # after every core: a long run keeps what it measured
        if not args.no_job:
            pairs = DATA_DIR / "components" / doc["job_core"] / "pairs"
            doc["jobs"] += [_job(line, pairs, m, args) for m in ("dataframe", "graphframes")]
            _write(doc, args.out, t0)
    print(_markdown(doc))
    return 0


def _targets(scale: str, cores: str | None, *, job: bool) -> tuple[tuple[int, ...], str]:
    """The core sizes to run (``cores``, comma-separated, ``none``, or the scale's) and the
    results' name (``full``, ``full-1m-5m`` for chosen sizes, ``full-path`` for none)."""
    if not cores:
        return SCALES[scale]["cores"], scale
    if cores == "none":
        if job:
            raise SystemExit("bench.components: --cores none measures the path graph alone: "
                             "pass --no-job")  # fmt: skip
        return (), f"{scale}-path"
    targets = tuple(int(c) for c in cores.split(",") if c)
    if job and SCALES[scale]["job"] not in targets:
        raise SystemExit(f"bench.components: the job runs on core {SCALES[scale]['job']}: add "
                         "it to --cores, or pass --no-job")  # fmt: skip
    return targets, "-".join([scale, *(_short(t) for t in targets)])


def _short(edges: int) -> str:
    """``1000000`` -> ``1m``, ``250000`` -> ``250k`` (a results file's name)."""
    for unit, size in (("m", 1_000_000), ("k", 1_000)):
        if edges % size == 0:
            return f"{edges // size}{unit}"
    return str(edges)


def _write(doc: dict[str, Any], out: Path, t0: float) -> None:
    doc["wall_minutes"] = round((time.time() - t0) / 60, 1)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"results-{doc['scale']}.json").write_text(json.dumps(doc, indent=2) + "\n")
    (out / f"results-{doc['scale']}.md").write_text(_markdown(doc))


if __name__ == "__main__":
    sys.exit(main())
