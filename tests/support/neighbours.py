"""Two runs of a job on neighbouring inputs, one key bound by hand, and every artefact compared.

:func:`run_job_in_process` runs a job in this process on the tests' shared session with its key
bound to one release id chosen by the test (:class:`spark_dp.jobs.runner.RunHooks`), so that a run
on D and a run on D + u draw the same noise. It collects everything the run leaves behind
(docs/privacy/boundary.md#neighbour-test): the exit code, stdout, the spark_dp log above DEBUG,
every file written (name and bytes), the report, the budget store's rows and the executed
query plans (with their Spark job descriptions). :func:`differences` names what differs between
two runs once what may differ is taken out: times, run ids, hosts and paths of the run's own
directory, and, for runs whose releases differ, the documented public fields
(:data:`spark_dp.jobs.publish.PUBLIC_REPORT_FIELDS`).
"""

from __future__ import annotations

import contextlib
import difflib
import io
import json
import logging
import re
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from spark_dp.jobs.publish import CONFIDENTIAL_REPORT_FIELDS, PUBLIC_REPORT_FIELDS
from spark_dp.jobs.runner import RunHooks, run_job
from spark_dp.jobs.spec import JobSpec
from tests.support.query_plans import layout_session

__all__ = ["Artefacts", "differences", "run_job_in_process", "without_public_fields"]

FIXED_RELEASE = "neighbour-test-release"
"""The release id both runs of a comparison bind their key to."""

INITIAL_PLANS = {"spark.sql.adaptive.enabled": "false"}
"""The runs execute the plans spark_dp builds, as built: adaptive execution's changes at run
time (coalesced partitions, joins turned into broadcasts, runtime statistics) are Spark's own
monitoring, on the trusted side (docs/privacy/spark-monitoring.md)."""

_TIMING = re.compile(r"(seconds=|done in )\d+(\.\d+)?( s)?")
_EXPRESSION_ID = re.compile(r"#\d+L?")
_LAMBDA = re.compile(r"\b([a-z]+)_\d+#")  # pyspark numbers its lambda variables per process
_PLAN_IDS = re.compile(r"\b(plan_id|id)=#?\d+|\b(\w*RDD)\[\d+\]")
_TOKEN = re.compile(r"(\.[0-9a-f]{8,})?\.tmp-[0-9a-f]+|(?<=/tmp/)[0-9a-f]{12}\b")
_CALL_SITE = re.compile(r" at [\w$.<>]+ at [\w$.<>]+:\d+")  # where py4j created an RDD
_OBJECT = re.compile(r"(?<=[\w$])@[0-9a-f]{6,8}\b|\$\$Lambda\$\d+/0x[0-9a-f]+")  # JVM objects
_RUN_ID = re.compile(r"\brun [0-9a-f]{32}\b")
_RUN_COLUMNS = re.compile(r"^(run|host|pid|identity)$|_at$|heartbeat|process")


@dataclass
class Artefacts:
    """What one run left behind (see the module docstring)."""

    code: int
    stdout: str
    stderr: str
    log: list[str]
    files: dict[str, bytes]
    report: dict[str, Any] | None
    budget: list[dict[str, Any]]
    plans: list[str]
    root: Path = field(repr=False)


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname} {record.name}: {record.getMessage()}")


_LOG_LINE = re.compile(r"^\d\d:\d\d:\d\d (DEBUG|INFO|WARNING|ERROR|CRITICAL) spark_dp")


def _said(text: str) -> str:
    """What a run wrote to stderr but its log lines (collected apart, and in this process
    the log's handler may still write to the stream of an earlier run)."""
    return "".join(line for line in text.splitlines(True) if not _LOG_LINE.match(line))


def _executions(spark: SparkSession) -> list[Any]:
    seq = spark._jsparkSession.sharedState().statusStore().executionsList().toSeq()
    return [seq.apply(i) for i in range(seq.size())]


def _normal(text: str, root: Path) -> str:
    """``text`` with the run's own directory, expression, plan and RDD ids (and where an RDD
    was created), JVM object ids, staging and temporary names, the budget store's run ids and
    timings replaced by placeholders (they differ between any two runs, whatever their
    data)."""
    text = text.replace(f"file:{root}", "<root>").replace(str(root), "<root>")
    text = _EXPRESSION_ID.sub("#", text)
    text = _LAMBDA.sub(r"\1_#", text)
    text = _PLAN_IDS.sub(r"\1\2[id]", text)
    text = _TOKEN.sub("<token>", text)
    text = _CALL_SITE.sub("", text)
    text = _OBJECT.sub("@<object>", text)
    text = _RUN_ID.sub("run <id>", text)
    return _TIMING.sub(r"\1<t>", text)


def _files(root: Path, skip: Sequence[Path]) -> tuple[dict[str, bytes], dict[str, Any] | None]:
    """Every file under ``root`` but ``skip`` (name -> bytes), and the report (a ``*.json``
    whose name holds ``report``), which is compared apart."""
    files: dict[str, bytes] = {}
    report = None
    for path in sorted(root.rglob("*")):
        if not path.is_file() or any(path.is_relative_to(s) for s in skip):
            continue
        name = str(path.relative_to(root))
        if path.name.endswith(".json") and "report" in path.name:
            report = json.loads(path.read_text())
            continue
        files[name] = path.read_bytes()
    return files, report


def _budget_rows(store: Path | None, root: Path) -> list[dict[str, Any]]:
    """The rows of every table of an SQLite budget store, without run ids, hosts, process ids
    and times (they differ between any two runs), paths under the run's directory replaced."""
    if store is None or not store.exists():
        return []
    out = []
    with contextlib.closing(sqlite3.connect(store)) as db:
        db.row_factory = sqlite3.Row
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in sorted(tables):
            for row in db.execute(f"SELECT * FROM {table}"):  # the names sqlite listed
                kept = {k: row[k] for k in row.keys() if not _RUN_COLUMNS.search(k)}
                out.append({"table": table, **{k: _normal(str(v), root) for k, v in kept.items()}})
    return sorted(out, key=lambda r: json.dumps(r, sort_keys=True))


def run_job_in_process(
    spark: SparkSession,
    spec: JobSpec,
    argv: Iterable[str],
    root: Path,
    *,
    out: Path | None = None,
    store: Path | None = None,
    release_id: str = FIXED_RELEASE,
) -> Artefacts:
    """Run ``spec`` with ``argv`` (``{root}`` replaced by ``root``) at INFO, its key bound to
    ``release_id``, and collect its artefacts: the files under ``out`` (default ``root``),
    ``store``: the SQLite file of its budget store, if any (not compared as a file)."""
    args = [a.replace("{root}", str(root)) for a in argv]
    handler = _Lines()
    logger = logging.getLogger("spark_dp")
    last = max((e.executionId() for e in _executions(spark)), default=-1)
    printed, said = io.StringIO(), io.StringIO()
    logger.addHandler(handler)
    try:
        with (
            contextlib.redirect_stdout(printed),
            contextlib.redirect_stderr(said),
            layout_session(spark, INITIAL_PLANS),
        ):
            code = run_job(
                spec,
                [*args, "--log-level", "INFO"],
                hooks=RunHooks(release_id=lambda computed: release_id),
            )
    finally:
        logger.removeHandler(handler)
    ran = sorted(
        (e for e in _executions(spark) if e.executionId() > last), key=lambda e: e.executionId()
    )
    plans = [_normal(f"{e.description()}\n{e.physicalPlanDescription()}", root) for e in ran]
    files, report = _files(out or root, [store] if store is not None else [])
    return Artefacts(
        code=code,
        stdout=_normal(printed.getvalue(), root),
        stderr=_normal(_said(said.getvalue()), root),
        log=[_normal(line, root) for line in handler.lines],
        files=files,
        report=report,
        budget=_budget_rows(store, root),
        plans=plans,
        root=root,
    )


def without_public_fields(report: dict[str, Any] | None, root: Path) -> Any:
    """The report without its documented public fields (:data:`PUBLIC_REPORT_FIELDS`: times
    and the release itself), paths under ``root`` replaced: what must not differ."""
    if report is None:
        return None
    doc = json.loads(_normal(json.dumps(report), root))
    for path in PUBLIC_REPORT_FIELDS + CONFIDENTIAL_REPORT_FIELDS:
        _drop(doc, path)
    return doc


def _drop(node: Any, path: tuple[str, ...]) -> None:
    if not path:
        return
    head, rest = path[0], path[1:]
    if head == "*" and isinstance(node, list):
        for item in node:
            _drop(item, rest)
    elif isinstance(node, dict) and head in node:
        if rest:
            _drop(node[head], rest)
        else:
            del node[head]


def _diff(name: str, a: Sequence[str], b: Sequence[str]) -> str:
    lines = difflib.unified_diff(list(a), list(b), "D", "D+u", lineterm="", n=1)
    return f"{name}:\n" + "\n".join(list(lines)[:60])


_OPERATOR_ID = re.compile(r"\s*\(\d+\)|\[codegen id : \d+\]")
_TREE = re.compile(r"^[\s:+\-*]*")


def plan_lines(plans: Sequence[str]) -> set[str]:
    """Every line of the plans (job descriptions, operators and their expressions, hence every
    literal), without tree drawing and operator numbers: a set, so that a query an iteration
    runs once more, or a plan whose lineage an extra round deepens, adds nothing (how many
    queries run, and how deep, is Spark's own monitoring); a literal or an expression that
    only one run has shows."""
    out = set()
    for plan in plans:
        for line in plan.splitlines():
            line = _TREE.sub("", _OPERATOR_ID.sub("", line)).strip()
            if line:
                out.add(line)
    return out


def differences(a: Artefacts, b: Artefacts, *, files: bool = True) -> list[str]:
    """What differs between two runs (empty: nothing but what may), each with a short diff.
    ``files``: compare the files byte for byte (off when the released rows differ)."""
    found = []
    if a.code != b.code:
        found.append(f"exit code: {a.code} != {b.code}")
    for name in ("stdout", "stderr"):
        if getattr(a, name) != getattr(b, name):
            found.append(_diff(name, getattr(a, name).splitlines(), getattr(b, name).splitlines()))
    if a.log != b.log:
        found.append(_diff("log", a.log, b.log))
    if files and a.files != b.files:
        names = sorted(set(a.files) | set(b.files))
        changed = [n for n in names if a.files.get(n) != b.files.get(n)]
        found.append(_diff("file names", sorted(a.files), sorted(b.files)) + f"\nbytes: {changed}")
    ra, rb = without_public_fields(a.report, a.root), without_public_fields(b.report, b.root)
    if ra != rb:
        found.append(
            _diff(
                "report",
                json.dumps(ra, indent=1, sort_keys=True).splitlines(),
                json.dumps(rb, indent=1, sort_keys=True).splitlines(),
            )
        )
    if a.budget != b.budget:
        found.append(_diff("budget rows", [str(r) for r in a.budget], [str(r) for r in b.budget]))
    lines_a, lines_b = plan_lines(a.plans), plan_lines(b.plans)
    if lines_a != lines_b:
        only_a, only_b = sorted(lines_a - lines_b), sorted(lines_b - lines_a)
        found.append(f"plans: on D only {only_a[:10]}; on D + u only {only_b[:10]}")
    return found
