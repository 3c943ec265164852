"""The boundary of a run: everything that leaves it, and what each thing may depend on.

A run's released rows, its report, what it prints, its exit code and its last log line leave
through this module; docs/privacy/boundary.md states the contract and lists where the other
channels (log lines above DEBUG, Spark job descriptions, query plans) are made. In short, what
leaves a run may depend on the public parameters, the released rows and the public release id,
and on nothing else of the data:

* **released rows** (:func:`write_rows`, :func:`canonical_rows`, :func:`canonical_part_names`):
  written in an order
  set by the rows alone (sorted by every column, the release's key first), into part files
  assigned the same way (one file for a DP release; for confidential outputs a fixed number of
  files chosen by a hash of the first column), named ``part-00000.snappy.parquet`` and so on,
  so that two runs that release the same rows write byte-identical directories;
* **the report**: its fields are parameters, public constants and the release itself; the
  fields that may differ between two runs on neighbouring inputs are listed in
  :data:`PUBLIC_REPORT_FIELDS` (a confidential report's counts: :data:`CONFIDENTIAL_REPORT_FIELDS`);
* **stdout, the exit code and the last log line** (:func:`publish`): the job's public answer
  (:class:`~spark_dp.jobs.spec.Answer`: one line of parameters, paths and released values, or
  one JSON object with ``--json``; the preview's own table), after the report when it has no
  file; exit code 0; and one log line with the released summary.

:func:`publish` is the last phase of a run (:mod:`spark_dp.jobs.runner`): the budget commit,
then the outputs and the report into place (the report last), then stdout.
"""

from __future__ import annotations

import json
import re
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from argparse import Namespace

    from pyspark.sql import DataFrame

    from spark_dp.io.fs import FileSystem
    from spark_dp.io.staging import Staging
    from spark_dp.jobs.lease import BudgetLease
    from spark_dp.jobs.request import Request
    from spark_dp.jobs.spec import JobContext, JobSpec, Release, RunHooks
    from spark_dp.report import PrivacyReport

__all__ = [
    "CONFIDENTIAL_PART_FILES",
    "CONFIDENTIAL_REPORT_FIELDS",
    "EXIT_BUDGET",
    "EXIT_FAILURE",
    "EXIT_OK",
    "EXIT_USAGE",
    "PUBLIC_REPORT_FIELDS",
    "RELEASE_PART_FILES",
    "canonical_part_names",
    "canonical_rows",
    "printed",
    "publish",
    "write_rows",
]

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_BUDGET = 0, 1, 2, 3
"""Exit codes: success; a failure of the environment or a bug; bad arguments, settings, paths
or input (decided before the data is read, or from its schema); the privacy budget refused."""

RELEASE_PART_FILES = 1
"""Part files of a DP release's Parquet output (partition selection's items): one, whatever
the size of the input, its rows sorted (an explicit repartition, which adaptive execution never
coalesces)."""

CONFIDENTIAL_PART_FILES = 16
"""Part files of a confidential output (contribution bounding's records and user state): a
fixed number, each row in the file of its first column's hash (Spark's ``hashpartitioning``,
the same on every run and Spark version), rows sorted within each; a file whose hash bucket is
empty is not written, so which files exist depends on the rows only."""

PUBLIC_REPORT_FIELDS: tuple[tuple[str, ...], ...] = (
    ("created_utc",),
    ("release", "id"),
    ("spark", "application_id"),
    ("budget", "run"),
    ("outputs", "output_items"),
    ("privacy", "steps", "*", "output_items"),
    ("privacy", "steps", "*", "chosen_max_contributions"),
    ("privacy", "steps", "*", "released_estimate"),
    ("privacy", "mechanism", "max_contributions"),
    ("parameters", "max_contributions_chosen"),
    ("outputs", "preview"),
    ("estimate",),
    ("ell",),
    ("lower_bound",),
    ("lower_bound_clamped",),
)
"""The fields of a report that may differ between two runs on neighbouring inputs: the time
and ids of the run, and the release itself (released sizes and values). ``*``: every element
of a list."""

CONFIDENTIAL_REPORT_FIELDS: tuple[tuple[str, ...], ...] = (
    ("selected",),
    ("rounds",),
    ("max_degree",),
    ("contribution_bounding",),
    ("privacy", "mechanism", "contribution_bound_k"),
    ("privacy", "mechanism", "dataset_size"),
    ("outputs", "selected", "rows"),
    ("outputs", "user_state", "rows"),
)
"""The fields of a confidential report (contribution bounding's) that hold counts of the
hypergraph: like its outputs, they are confidential and not released."""


def printed(spec: JobSpec, args: Namespace, report: PrivacyReport, path: str | None) -> str:
    """What a committed run prints: the job's own text (the preview's table), else its answer
    as one line (the report's JSON before it when the report has no file), or with ``--json``
    one JSON object: the answer's fields and ``report``, the report's path or, when it has no
    file, the report itself."""
    if spec.stdout is not None:
        return spec.stdout(report, args)
    if spec.answer is None:
        return report.to_json() if path is None else ""
    answer = spec.answer(report, args)
    if getattr(args, "json", False):
        where: Any = report.to_dict() if path is None else path
        return json.dumps({**answer.fields, "report": where}, ensure_ascii=False) + "\n"
    if path is None:
        return f"{report.to_json().rstrip()}\n{answer.line}; report: above\n"
    return f"{answer.line}; report: {path}\n"


_SPARK_PART = re.compile(r"^part-(\d+)-[0-9a-f-]{36}-c(\d+)(\..+)$")
"""A part file as Spark names it: ``part-<task>-<job uuid>-c<file>.<codec>.parquet``."""


def canonical_rows(df: DataFrame, *, confidential: bool) -> DataFrame:
    """``df`` in the order and the partitions it is written in (module docstring): sorted by
    every column in order, in :data:`RELEASE_PART_FILES` partition, or for a confidential
    output in :data:`CONFIDENTIAL_PART_FILES` hash partitions of its first column."""
    from pyspark.sql import functions as F

    columns = [F.col(f"`{c}`") for c in df.columns]
    if confidential:
        parts = df.repartition(CONFIDENTIAL_PART_FILES, columns[0])
    else:
        parts = df.repartition(RELEASE_PART_FILES)
    return parts.sortWithinPartitions(*columns)


def canonical_part_names(fs: FileSystem, directory: str) -> None:
    """Rename Spark's part files in ``directory`` (``part-00003-<uuid>-c000.snappy.parquet``,
    and the ``.crc`` checksum beside it on a local disk) to names without the write's random id
    (``part-00003.snappy.parquet``; a task's second file ``part-00003-c001.snappy.parquet``)."""
    names = fs.list_names(directory)
    for name in sorted(names):
        m = _SPARK_PART.match(name)
        if m is None:
            continue
        task, file, suffix = m.groups()
        new = f"part-{task}{'' if int(file) == 0 else f'-c{file}'}{suffix}"
        fs.rename(f"{directory}/{name}", f"{directory}/{new}")
        crc = f".{name}.crc"  # a Hadoop checksum filesystem renames it with its file
        if crc in names and fs.exists(f"{directory}/{crc}"):
            fs.rename(f"{directory}/{crc}", f"{directory}/.{new}.crc")


def write_rows(
    ctx: JobContext, df: DataFrame, path: str | None = None, *, name: str = "output"
) -> int:
    """Stage ``df`` as Parquet (or Delta: :meth:`~spark_dp.jobs.spec.JobContext.output_format`)
    for ``path`` (``ctx.path("output")`` by default); return its rows.

    The rows of a DP release or of a confidential output are written in their canonical order
    and part files (:func:`canonical_rows`), under canonical names (:func:`canonical_part_names`;
    a Delta table keeps the names its log gives them). The count is read back from the staged
    files, so the DataFrame is computed exactly once (a second computation could draw fresh
    noise). The path must be in the plan. A confidential job's output is made readable by its
    owner only before the commit moves it into place.
    """
    target = path or ctx.path("output")
    canonical = ctx.spec.spends_budget or ctx.spec.confidential
    fmt = ctx.output_format(name)
    if canonical:
        df = canonical_rows(df, confidential=ctx.spec.confidential)
    with ctx.timer.stage(f"write {name}") as info:
        staged = ctx.staging.stage(name, target)
        mode = "overwrite" if ctx.staging.direct and ctx.args.overwrite else "error"
        df.write.format(fmt).mode(mode).save(staged)
        fs = ctx.staging.fs_for(target)
        if canonical and fmt != "delta":  # Delta's log names its files
            canonical_part_names(fs, staged)
        if ctx.spec.confidential:
            fs.make_private(staged)
        rows = ctx.read_staged(name).count()
        info["rows"] = rows
    ctx.outputs[name] = target
    return rows


def publish(
    request: Request,
    release: Release,
    lease: BudgetLease,
    staging: Staging,
    *,
    hooks: RunHooks,
    started: float,
) -> int:
    """The last phase of a run: the budget commit, the outputs into place with the report last
    (its presence marks the release), stdout (:func:`printed`), the hooks that run after the
    commit, an output table registered in the catalog, and the run's last log line; returns
    :data:`EXIT_OK`.

    Args:
        request: the run's request.
        release: the job's outputs (staged in ``staging``), report and summary.
        lease: the run's claim on the books, committed first.
        staging: the staged outputs.
        hooks: the run's test moments ``staged`` and ``booked``.
        started: ``time.perf_counter()`` when the run started (the line gives its seconds).
    """
    spec, report = request.spec, release.report
    if spec.spends_budget:
        report.extra["budget"] = lease.report()  # charged, or adopted from which run
    path = request.report
    text = report.to_json() if path is not None else None
    output = request.paths.get("output")
    fs = staging.fs_for(output) if output is not None and spec.spends_budget else None
    replacing = None
    if fs is not None and output is not None and fs.exists(output):
        replacing = lease.replacing("output", output)
    hooks.moment("staged")
    lease.commit(report)  # first: a crash before the move leaves a charge, never a free release
    hooks.moment("booked")
    staging.commit(path, text, private_report=spec.confidential)
    if replacing is not None and output is not None:
        lease.replaced(output, replacing)
    sys.stdout.write(printed(spec, request.flags, report, path))
    sys.stdout.flush()
    for hook in release.after_commit:  # the job's, then the catalog's (--output-table)
        hook()
    request.log.info(
        "%s done in %.1f s: %s", spec.name, time.perf_counter() - started, release.summary
    )
    return EXIT_OK
