"""What a job is (:class:`JobSpec`), what a running job sees (:class:`JobContext`) and hands
back (:class:`Release`), and what a caller may plug into a run (:class:`RunHooks`)."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from spark_dp.io import ReadGate, load_incidences, load_pairs, read_table
from spark_dp.io.digest import ReleaseBinding
from spark_dp.io.paths import PathPlan, PathSpec
from spark_dp.io.staging import Staging
from spark_dp.logs import StageTimer
from spark_dp.randomness import Randomness
from spark_dp.report import Plan, PrivacyReport

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from spark_dp.dp.registry import Registry
    from spark_dp.io.schema_peek import ColumnRule

__all__ = ["Answer", "JobContext", "JobSpec", "Release", "RunHooks"]


@dataclass(frozen=True)
class Answer:
    """A job's public answer, the last thing it prints (:func:`spark_dp.jobs.publish.publish`):
    ``line`` on stdout, or ``fields`` as one JSON object with ``--json``. Built from the report
    and the arguments only: parameters, paths and released values, never a count of the input
    or of a confidential output (docs/privacy/boundary.md)."""

    line: str
    fields: dict[str, Any]


@dataclass
class JobSpec:
    """What a job is: its name, parameters, flags, paths and the function that runs it.

    Attributes:
        name: job name (``jobs/<name>.py``; the ``spark-dp`` command is :attr:`command`).
        description: first paragraph of ``--help``.
        params_cls: parameter dataclass (see :mod:`spark_dp.config`).
        execute: ``execute(ctx) -> one-line summary``; writes outputs through ``ctx``.
        needs_input: the job reads ``--input``.
        output: ``"required"``, ``"optional"`` or ``"none"``.
        guarantee: DP guarantee sentence for the report.
        examples: lines shown at the end of ``--help``.
        columns: the id columns the job reads (``user``, ``item``, ``record``): one
            ``--<col>-col`` flag each, and no other.
        columns_read: ``columns_read(args, params, plan) -> {role: [ColumnRule]}``: the
            columns the job reads from its other tables (capacities, record weights), checked
            with the input's id columns against each local table's schema before Spark starts
            (:mod:`spark_dp.io.schema_peek`).
        spends_budget: the job releases with ε > 0 (``--budget-store``, ``--dataset-id``).
        plan: ``plan(params) -> Plan``: the algorithm's data-free plan
            (:class:`spark_dp.report.Plan`), computed once from the checked parameters; the
            budget store reserves its steps before any data is read, and ``execute`` runs it
            (``ctx.algorithm_plan``). Required when ``spends_budget``.
        registries: field → the registry whose names are its choices (``algorithm``,
            ``method``), for the parser and ``--help``.
        uses_key: ``--noise-key-file``/``--seed`` make the release key (else ``--seed`` is
            the job's own public seed).
        required: parameters the user must give (command line or config file), e.g. ε.
        paths: ``paths(args, params, plan) -> [PathSpec]``: the job's own paths beyond input,
            output, report and budget store (all of them, so the path plan checks them).
        add_flags: adds job-only flags that are not parameters (never set by a config file).
        describe: ``describe(plan) -> dict``: the calibration shown by ``--dry-run``.
        unsafe_flags: (dest, flag) of job flags that expose private data: refused without
            ``--allow-unsafe-debug`` (like ``--unsafe-debug-logs``).
        stdout: ``stdout(report, args) -> text``: what the job prints instead of its
            :attr:`answer` (the preview's table, or its JSON with ``--json``).
        answer: ``answer(report, args) -> Answer``: the job's public answer, printed last (one
            line, or one JSON object with ``--json``).
        confidential: everything the job writes holds private values (contribution bounding:
            the selection, the user state and the report's counts reveal the hypergraph): the
            report is named ``*.confidential.json`` and created with mode 0600, the Parquet
            outputs are made readable by their owner only (0600 files, 0700 directories) before
            they are committed.
    """

    name: str
    description: str
    params_cls: type
    execute: Callable[[JobContext], str]
    needs_input: bool = True
    output: str = "required"
    guarantee: str = ""
    examples: Sequence[str] = ()
    columns: tuple[str, ...] = ("user", "item")
    columns_read: Callable[[argparse.Namespace, Any, Any], dict[str, list[ColumnRule]]] | None = (
        None
    )
    spends_budget: bool = False
    uses_key: bool = True
    required: tuple[str, ...] = ()
    paths: Callable[[argparse.Namespace, Any, Any], list[PathSpec]] | None = None
    add_flags: Callable[[argparse.ArgumentParser], None] | None = None
    describe: Callable[[Any], dict[str, Any]] | None = None
    unsafe_flags: tuple[tuple[str, str], ...] = ()
    plan: Callable[[Any], Plan] | None = None
    registries: Mapping[str, Registry[Any, Any]] = field(default_factory=dict)
    confidential: bool = False
    stdout: Callable[[PrivacyReport, argparse.Namespace], str] | None = None
    answer: Callable[[PrivacyReport, argparse.Namespace], Answer] | None = None

    def __post_init__(self) -> None:
        if self.spends_budget and self.plan is None:
            raise ValueError(f"job {self.name} spends budget: give its plan")

    @property
    def command(self) -> str:
        """The ``spark-dp`` subcommand (``partition-selection``)."""
        return self.name.replace("_", "-")


@dataclass
class JobContext:
    """Everything a running job needs; built by :func:`spark_dp.jobs.runner.run_job`.

    Every input table is read through a validation pass with the binding's gate
    (:meth:`load_pairs`, :meth:`load_incidences`, :meth:`gate`), which charges the budget before
    the read and digests the rows; :attr:`randomness` is the key bound to the release once all
    of them are read (:class:`~spark_dp.io.digest.ReleaseBinding`, made by :mod:`.lease`).
    Outputs are staged and become visible only at the commit, together with the report: tables
    through :func:`spark_dp.jobs.publish.write_rows` (the run's boundary), small debug files through
    :meth:`stage_text`.
    """

    spec: JobSpec
    args: argparse.Namespace
    params: Any
    spark: Any
    binding: ReleaseBinding
    report: PrivacyReport
    timer: StageTimer
    log: logging.Logger
    plan: PathPlan
    staging: Staging
    outputs: dict[str, str] = field(default_factory=dict)
    after_commit: list[Callable[[], None]] = field(default_factory=list)
    algorithm_plan: Any = None
    """The job's data-free plan (``spec.plan(params)``), computed once before the reservation."""
    input_versions: dict[str, int] = field(default_factory=dict)
    """The version of each Delta table read (role -> version), pinned by the request."""

    @property
    def randomness(self) -> Randomness:
        """The key bound to this release (every input table must have been read)."""
        return self.binding.randomness

    # ---------------------------------------------------------------- input helpers
    def gate(self, role: str) -> ReadGate:
        """The gate of the validation pass that reads the table ``role`` (charge, digest)."""
        return self.binding.gate(role)

    def load_pairs(self, *, dedupe: bool = True, persist: bool = True) -> DataFrame:
        """(user_id, item) pairs from ``--input``: validated; deduplicated and cached unless
        the job's first step does that itself (see :func:`spark_dp.io.validate_edges`)."""
        with self.timer.stage("read"):
            df, summary = load_pairs(
                self.spark,
                self.path("input"),
                user_col=self.args.user_col,
                item_col=self.args.item_col,
                fmt=self.args.input_format,
                strict=self.args.strict_input,
                dedupe=dedupe,
                persist=persist,
                gate=self.gate("input"),
                version=self.input_versions.get("input"),
            )
        summary.log(self.log)
        return df

    def load_incidences(self) -> DataFrame:
        """(record_id, user_id) incidences from ``--input``: validated, not deduplicated or
        cached (the bounding's first step drops repeated pairs, see
        :func:`spark_dp.contribution_bounding.prepare.prepare`)."""
        with self.timer.stage("read"):
            df, summary = load_incidences(
                self.spark,
                self.path("input"),
                record_col=self.args.record_col,
                user_col=self.args.user_col,
                fmt=self.args.input_format,
                strict=self.args.strict_input,
                dedupe=False,
                persist=False,
                gate=self.gate("input"),
                version=self.input_versions.get("input"),
            )
        summary.log(self.log)
        return df

    def path(self, role: str) -> str:
        """The path of ``role`` (``input``, ``output``, ``capacities``, ...) for Spark: local
        paths absolute. Raises ``KeyError`` if the job has no such path."""
        path = self.plan.for_spark(role)
        if path is None:
            raise KeyError(role)
        return path

    def read_table(self, role: str, flag: str) -> DataFrame:
        """Another input table of the job (capacities, weights), errors naming ``flag``."""
        return read_table(self.spark, self.path(role), flag=flag)

    # ---------------------------------------------------------------- output helpers
    def output_format(self, name: str = "output") -> str:
        """``parquet``, or ``delta`` for the main output with ``--output-format delta`` (a new
        Delta table in one commit at the staged path, moved into place by the commit)."""
        fmt = getattr(self.args, "output_format", None) or "parquet"
        return fmt if name == "output" else "parquet"

    def read_staged(self, name: str = "output") -> DataFrame:
        """Output ``name`` read back from where it is staged, before the commit.

        Reads its part files by name: Spark warns about a hidden directory or a glob.
        """
        entry = next(e for e in self.staging.entries if e.name == name)
        if self.output_format(name) == "delta":  # its log names its files
            return self.spark.read.format("delta").load(entry.staged)
        if self.staging.direct:
            return self.spark.read.parquet(entry.staged)
        names = self.staging.fs_for(entry.target).list_names(entry.staged)
        parts = sorted(f"{entry.staged}/{n}" for n in names if n.startswith("part-"))
        if not parts:
            return self.spark.createDataFrame([], "empty string")  # nothing was written
        return self.spark.read.parquet(*parts)

    def stage_text(self, name: str, path: str, text: str, *, private: bool = False) -> None:
        """Stage a small text file (a debug file) for ``path``; the path must be in the plan.
        ``private``: a confidential file, created with mode 0600."""
        self.staging.stage_text(name, path, text, private=private)
        self.outputs[name] = path


@dataclass(frozen=True)
class RunHooks:
    """What a caller of :func:`spark_dp.jobs.runner.run_job` may plug into a run (tests; never
    a command line, a config file or the environment).

    Attributes:
        release_id: ``release_id(computed) -> id``: the release id the key is bound to instead
            of the one computed from the request and the rows read. The neighbour test
            (tests/privacy/test_neighbours.py) binds one key by hand this way, so that two
            runs on neighbouring inputs draw the same noise and every other difference between
            their artefacts is a leak (docs/privacy/boundary.md#neighbour-test).
        moments: ``moments(name)`` at each named moment of the run (:mod:`spark_dp.jobs.runner`),
            where
            a test may raise, wait or kill the process.
    """

    release_id: Callable[[str], str] | None = None
    moments: Callable[[str], None] | None = None

    def moment(self, name: str) -> None:
        """The named moment ``name`` of the run: ``moments(name)``, if given."""
        if self.moments is not None:
            self.moments(name)


@dataclass(frozen=True)
class Release:
    """What :func:`spark_dp.jobs.runner.execute` hands to :func:`~spark_dp.jobs.publish.publish`:
    the filled report, the job's one-line summary (released sizes and values, parameters), what runs
    after the commit, and each stage's seconds (logged and returned, never reported)."""

    report: PrivacyReport
    summary: str
    after_commit: Sequence[Callable[[], None]]
    stage_seconds: Mapping[str, float]
