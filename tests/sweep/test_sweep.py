"""The sweep (issue 39): every case of :mod:`tests.sweep.cases` run as a user would run it, each
checked for its exit code, one line on stderr, no trace, the inputs unchanged and no stray files
(and, after a signal, no record of Spark's JVM).

``make sweep`` runs it (``SPARK_DP_TEST_SUITE=sweep``: it runs in its own pytest process, out of
the main suite). All cases run up front, three groups at once: the ``fork`` cases in the fork
server, four at a time; the ``warm`` cases one at a time on the one JVM of a ``--spark`` fork
server (first the releases the kill cases start from); the ``cold`` cases two at a time, each
its own process. Then one test per case checks its result. A case that needs a tmpfs mount is
skipped, saying why, where mounting is not permitted.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.support.cli_forkserver import serve
from tests.sweep.cases import FAMILIES, Case, cb, dc, ps
from tests.sweep.spark_cases import ALL as CASES
from tests.sweep.workspace import TRACE, apply, build_template, error_lines, snapshot, unmount

ROOT = Path(__file__).resolve().parents[2]
JVM_RECORD = re.compile(r"^\d\d:\d\d:\d\d \w+ (?!spark_dp[.:])\S+: ")
"""A log record of Spark's JVM (log4j2.properties' pattern), not of spark_dp's loggers."""
INPUTS = ("words", "graph", "caps", "weights")
TEMPLATES = {  # the releases the kill and signal cases start from
    "ps": ps("--seed", "1", out="out"),
    "cb": cb("--seed", "1", out="out"),
    "dc": dc(
        "--seed", "1", "--report", "count.json", "--debug-report", "d.json", "--allow-unsafe-debug"
    ),
}
COLD_PARALLEL = 2


def _cold(case: Case, cwd: Path) -> dict[str, Any]:
    """One cold case in its own process: the console script, spark-submit, or a signal."""
    bin_dir = Path(sys.executable).parent
    if case.submit:
        log4j = (ROOT / "spark_dp" / "log4j2.properties").as_uri()
        cmd = [
            str(bin_dir / "spark-submit"),
            "--master",
            "local[1]",
            "--driver-java-options",
            f"-Dlog4j2.configurationFile={log4j}",
            str(ROOT / "jobs" / "cli.py"),
            *case.argv,
        ]
    else:
        cmd = [str(bin_dir / "spark-dp"), *case.argv]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT), **dict(case.env)),
    )
    lines: list[str] = []
    if case.signal_at:
        name, _, trigger = case.signal_at.partition("@")
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if trigger in line:
                proc.send_signal(getattr(signal, f"SIG{name}"))
                break
    out, err = proc.communicate(timeout=900)
    return {
        "id": case.id,
        "code": proc.returncode,
        "stdout": out,
        "stderr": "".join(lines) + err,
        "after_signal": err if case.signal_at else "",
        "seconds": round(time.monotonic() - t0, 2),
        "files": snapshot(cwd),
    }


def _serve(cases: list[dict[str, Any]], spark: bool = False) -> list[dict[str, Any]]:
    """The results of ``cases`` from a fork server (none started for no cases)."""
    return serve(cases, spark=spark) if cases else []


def _prepare(case: Case, base: Path, template: Path) -> tuple[Path, str | None]:
    root = base / case.id
    if case.copy_from is None:
        shutil.copytree(template, root, symlinks=True)
    for op in case.setup:
        reason = apply(root, op)
        if reason:
            return root, reason
    return root, None


@pytest.fixture(scope="module")
def sweep(request, tmp_path_factory) -> dict[str, Any]:
    """Every selected case (all of them unless ``-k`` chose some), run once: id -> (case,
    result, snapshot before, workspace) or a skip."""
    chosen = {
        item.callspec.params["case"].id
        for item in request.session.items
        if "case" in getattr(getattr(item, "callspec", None), "params", {})
    }
    selected = [c for c in CASES if c.id in chosen]
    templates = {job: TEMPLATES[job] for job in TEMPLATES if any(
        c.copy_from == f"tpl-{job}" for c in selected)}  # fmt: skip
    base = tmp_path_factory.mktemp("sweep")
    template = build_template(base / "template")
    before: dict[str, dict[str, str]] = {}
    skipped: dict[str, str] = {}
    groups: dict[str, list[dict[str, Any]]] = {"fork": [], "warm": [], "cold": []}
    cold: list[tuple[Case, Path]] = []
    for job, argv in templates.items():
        shutil.copytree(template, base / f"tpl-{job}", symlinks=True)
        groups["warm"].append(
            {"id": f"tpl-{job}", "argv": list(argv), "cwd": str(base / f"tpl-{job}")}
        )
    try:
        for case in selected:
            root, reason = _prepare(case, base, template)
            if reason:
                skipped[case.id] = reason
                continue
            before[case.id] = snapshot(template if case.copy_from else root)
            entry: dict[str, Any] = {"id": case.id, "cwd": str(root), "env": dict(case.env)}
            if case.copy_from:
                entry["copy_from"] = str(base / case.copy_from)
            if case.steps:
                entry["steps"] = [{"argv": list(s.argv), "env": dict(s.env)} for s in case.steps]
            else:
                entry["argv"] = list(case.argv)
            if case.kind == "cold":
                cold.append((case, root))
            else:
                groups[case.kind].append(entry)
        t0 = time.monotonic()
        with ThreadPoolExecutor(max_workers=2 + COLD_PARALLEL) as pool:
            forked = pool.submit(_serve, groups["fork"])
            warm = pool.submit(_serve, groups["warm"], spark=True)
            with ThreadPoolExecutor(max_workers=COLD_PARALLEL) as cold_pool:
                colds = list(cold_pool.map(lambda c: _cold(*c), cold))
            results = {r["id"]: r for r in [*forked.result(), *warm.result(), *colds]}
        seconds = time.monotonic() - t0
    finally:
        unmount(base)
    for job in templates:
        assert results[f"tpl-{job}"]["code"] == 0, results[f"tpl-{job}"]["stderr"][-3000:]
    runs = [s for r in results.values() for s in r.get("steps", [r])]
    kinds = {c.id: c.kind for c in CASES}
    busy = {
        k: sum(s["seconds"] for s in runs if kinds.get(s["id"].split(".")[0], "warm") == k)
        for k in ("fork", "warm", "cold")
    }
    print(
        f"\nsweep: {len(runs)} runs in {seconds:.0f} s (busy: "
        + ", ".join(f"{k} {v:.0f} s" for k, v in busy.items())
        + ")"
    )
    (base / "results.json").write_text(json.dumps(results, indent=1))
    return {"results": results, "before": before, "skipped": skipped, "base": base}


# --------------------------------------------------------------------------- checks


def _one_run(result: dict[str, Any], code: int, words: tuple[str, ...], submit: bool) -> list[str]:
    """The problems of one run: exit code, stderr's one line (or none), a trace."""
    problems = []
    err = result["stderr"]
    if result["code"] != code:
        problems.append(f"exit code {result['code']}, not {code}")
    lines = error_lines(err, submit=submit)
    if code == -9:
        lines = []  # killed: it said nothing, by design
    elif code == 0 and lines:
        problems.append(f"a success printed {lines}")
    elif code != 0 and len(lines) != 1:
        problems.append(f"{len(lines)} lines on stderr instead of one: {lines}")
    elif code != 0 and not lines[0].startswith("spark-dp"):
        problems.append(f"the line does not start with spark-dp: {lines[0]}")
    for word in words if code != 0 else ():
        if not any(word in line for line in lines):
            problems.append(f"{word!r} not in {lines}")
    if TRACE.search(err):
        problems.append(f"a trace on stderr: {err[-1500:]}")
    jvm = [ln for ln in result.get("after_signal", "").splitlines() if JVM_RECORD.match(ln)]
    if jvm:  # the run's one line is all an interrupt prints: no JVM record about its tasks
        problems.append(f"the JVM spoke after the signal: {jvm}")
    return problems


def _stray(files: dict[str, str], before: dict[str, str]) -> list[str]:
    """Hidden paths that were not there before: a staged copy and what is in it, a backup, a
    journal (Spark's checksum files inside an output directory are part of the output)."""
    return sorted(
        p
        for p in set(files) - set(before)
        if any(part.startswith(".") for part in p.split("/")[:-1])
        or (p.split("/")[-1].startswith(".") and not p.endswith(".crc"))
    )


def _inputs_unchanged(files: dict[str, str], before: dict[str, str]) -> list[str]:
    changed = [p for p in before if p.split("/")[0] in INPUTS and files.get(p) != before[p]]
    return [f"inputs changed: {changed}"] if changed else []


def _release_problems(root: Path, report: str) -> list[str]:
    """A report and the outputs it lists: present, with the rows it states."""
    path = root / report
    if not path.exists():
        return [f"no report {report}"]
    doc = json.loads(path.read_text())
    outputs = doc.get("outputs", {})
    found = []
    if "items" in outputs:
        found.append((outputs["items"], outputs["output_items"]))
    for key in ("selected", "user_state"):
        if key in outputs:
            found.append((outputs[key]["path"], outputs[key]["rows"]))
    problems = []
    for where, rows in found:
        target = Path(where) if os.path.isabs(where) else root / where
        if not target.exists():
            problems.append(f"{report} lists {where}, which is missing")
        elif pq.read_table(target).num_rows != rows:
            problems.append(f"{report} states {rows} rows in {where}, which holds another count")
    return problems


def _default_report(job: str | None) -> str:
    """The report of the signal and kill cases' release (bounding's is confidential)."""
    reports = {"dc": "count.json", "cb": "out.report.confidential.json"}
    return reports.get(job or "", "out.report.json")


def _check(case: Case, result: dict[str, Any], before: dict[str, str], root: Path) -> list[str]:
    if not case.steps:
        problems = _one_run(result, case.code, case.words, case.submit)
        files = result["files"]
        problems += _inputs_unchanged(files, before)
        if case.copy_from:  # a signal: the earlier release, or the new one complete
            problems += [f"stray files {_stray(files, before)}" for _ in _stray(files, before)[:1]]
            problems += _release_problems(root, _default_report(case.job))
        elif case.code != 0 and files != before:
            new = sorted(set(files) - set(before))
            gone = sorted(set(before) - set(files))
            problems.append(f"the workspace changed: new {new}, gone {gone}")
        elif case.code == 0:
            problems += [f"stray files {_stray(files, before)}" for _ in _stray(files, before)[:1]]
            for report in case.outputs:
                problems += _release_problems(root, report)
        return problems
    problems = []
    steps = result["steps"]
    for k, (step, res) in enumerate(zip(case.steps, steps, strict=True)):
        problems += [f"step {k}: {p}" for p in _one_run(res, step.code, step.words, False)]
    last = steps[-1]["files"]
    problems += _inputs_unchanged(last, before)
    problems += [f"stray files {_stray(last, before)}" for _ in _stray(last, before)[:1]]
    if len(steps) == 3:  # killed; another release to some of its paths; a plain re-run
        later = steps[1]["files"]
        changed = sorted(
            p
            for p in set(last) | set(later)  # a stray file may go, nothing else
            if last.get(p) != later.get(p) and p not in _stray(later, before)
        )
        if changed:
            problems.append(f"the plain re-run changed {changed}")
        later = [a for a in case.steps[1].argv if a.endswith(".json") and "NONPRIVATE" not in a]
        problems += _release_problems(root, later[0] if later else _default_report(case.job))
    else:
        problems += [p for r in case.outputs for p in _release_problems(root, r)]
    return problems


def test_the_table_holds_every_family_and_300_cases() -> None:
    assert len(CASES) >= 300
    assert len({c.id for c in CASES}) == len(CASES)
    assert {c.family for c in CASES} == set(FAMILIES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(sweep, case: Case) -> None:
    if case.id in sweep["skipped"]:
        pytest.skip(sweep["skipped"][case.id])
    result = sweep["results"][case.id]
    root = sweep["base"] / case.id
    problems = _check(case, result, sweep["before"][case.id], root)
    assert not problems, "\n".join(problems)
