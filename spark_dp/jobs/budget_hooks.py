"""Where the books (a budget store, or the default ledger) and the release binding plug into a
job run (see :mod:`spark_dp.jobs.runner`).

* :func:`split_budget_conf` (before the parameters): ``--budget-store`` and ``--dataset-id``,
  or ``budget_store:`` / ``dataset_id:`` in the config file (a team's default store); without a
  store, the default ledger (:class:`~spark_dp.budget.ledger.Ledger`: ``--ledger-file``,
  ``$SPARK_DP_LEDGER`` or the user's state directory) unless ``--no-ledger``.
* :func:`budget_path_spec`: an SQLite store's (or the ledger's) file joins the path plan.
* :func:`request_identity` (after the key, **before any data is read**): the run's request,
  :func:`spark_dp.release_ids.run_identity` of its effective arguments, key and the metadata
  identity of every table it reads (location and listing, never rows; for a Delta table its
  location and the version read, :func:`spark_dp.io.delta.delta_identity`).
* :func:`check_spent` (before the commit): the run spent exactly what its plan reserved.
* The run's claim on the books itself, from its reservation to its end, is
  :class:`spark_dp.jobs.budget_lease.BudgetLease`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spark_dp.dp.protocol import Calibration
from spark_dp.errors import ConfigError
from spark_dp.io.fs import is_connect
from spark_dp.io.paths import APPEND, READ, PathSpec
from spark_dp.jobs.release_args import release_arguments
from spark_dp.jobs.run import Run
from spark_dp.report import Plan, Step

__all__ = [
    "budget_path_spec",
    "check_spent",
    "needs_session_for_identity",
    "plan_steps",
    "planned_spend",
    "recorded_path",
    "request_identity",
    "split_budget_conf",
]

_FILE_KEYS = {"budget_store": "budget_store", "budget-store": "budget_store"}
_FILE_KEYS |= {"dataset_id": "dataset_id", "dataset-id": "dataset_id"}


def split_budget_conf(run: Run) -> None:
    """Take the store and dataset id from the flags, else from the config file's top level;
    without a store, find the ledger (checked writable now: one line if not)."""
    from_file = {
        _FILE_KEYS[k]: run.file_conf.pop(k) for k in list(run.file_conf) if k in _FILE_KEYS
    }
    if not run.spec.spends_budget:
        if from_file:
            raise ConfigError(
                f"config key {next(iter(from_file))!r}: job {run.spec.command} spends no privacy "
                "budget"
            )
        return
    args = run.args
    run.budget_store = _first(args.budget_store, from_file.get("budget_store"))
    run.dataset_id = _first(args.dataset_id, from_file.get("dataset_id"))
    if run.dataset_id is not None and not run.dataset_id.strip():
        raise ConfigError("--dataset-id is an empty string; pass a stable name of the users")
    if run.budget_store is not None and not run.budget_store.strip():
        raise ConfigError("--budget-store is an empty string; pass a URL such as sqlite:///b.db")
    if run.budget_store and getattr(args, "debug_report", None):
        raise ConfigError(
            "--debug-report writes the private curve: it is refused with a budget store "
            "(--budget-store); run it on test data without a store"
        )
    if run.budget_store and getattr(args, "unsafe_debug_logs", False):
        raise ConfigError(
            "--unsafe-debug-logs writes private counts to the log: it is refused with a budget "
            "store (--budget-store); run it on test data without a store"
        )
    if run.budget_store and args.seed is not None and not args.allow_test_seed_with_budget_store:
        raise ConfigError(
            "--seed derives the key from a seed anyone can guess: it is refused with a budget "
            "store (a charged release must have secret noise); use --noise-key-file, or add "
            "--allow-test-seed-with-budget-store for a test store (the store marks the release)"
        )
    _split_ledger(run)


def _split_ledger(run: Run) -> None:
    """The default ledger of a run without a store (``--no-ledger``: none)."""
    from spark_dp.budget.ledger import Ledger

    args = run.args
    if run.budget_store:
        given = "--no-ledger" if args.no_ledger else "--ledger-file" if args.ledger_file else ""
        if given:
            raise ConfigError(
                f"{given}: this run is charged to the budget store {run.budget_store!r}; "
                f"{given} only applies to a run without a store"
            )
        return
    if args.no_ledger:
        return
    run.ledger = Ledger.resolve(args.ledger_file)
    run.ledger.check()


def _first(flag: str | None, from_file: Any) -> str | None:
    """The flag's value if given (even empty: refused below), else the config file's."""
    if flag is not None:
        return flag
    return None if from_file is None else str(from_file)


def budget_path_spec(run: Run) -> list[PathSpec]:
    """The SQLite file of a store or of the ledger, as a path the job writes (never inside its
    input)."""
    if run.ledger is not None:
        flag = "--ledger-file" if not run.ledger.default else "the default ledger"
        return [PathSpec("ledger", flag, str(run.ledger.path), APPEND, file=True)]
    url = run.budget_store
    if not url or not url.lower().startswith("sqlite:"):
        return []
    path = url.split(":///", 1)[1] if ":///" in url else ""
    if not path or path.startswith(":memory:"):
        return []  # BudgetStore.open refuses it with a clear message
    return [PathSpec("budget_store", "--budget-store", path.split("?", 1)[0], APPEND, file=True)]


def plan_steps(run: Run) -> tuple[str | None, Sequence[Step[Calibration]]]:
    """The algorithm and the budget steps of the run's one plan (``run.algorithm_plan``)."""
    if run.spec.spends_budget:
        plan: Plan = run.algorithm_plan
        return plan.algorithm, plan.steps
    return getattr(run.params, "algorithm", None) or getattr(run.params, "method", None), ()


def planned_spend(run: Run, steps: Sequence[Step[Calibration]]) -> tuple[float, float]:
    """The plan's total (ε, δ): its certificate's when it has one (an ``auto`` selection's
    PLD certificate is below the sum of its steps), else basic composition over the steps."""
    plan = run.algorithm_plan if run.spec.spends_budget else None
    if plan is not None and getattr(plan, "composition", None) is not None:
        return float(plan.epsilon), float(plan.delta)
    return float(sum(s.epsilon for s in steps)), float(sum(s.delta for s in steps))


def request_identity(run: Run) -> None:
    """The run's request (before any data is read): its effective arguments, key and the
    metadata identity of every table it reads (location and listing: names, sizes, times)."""
    from spark_dp.release_ids import input_identity, run_identity

    assert run.randomness is not None and run.plan is not None
    spark = None
    if run.spark is not None and not is_connect(run.spark):
        spark = run.spark  # lists a Hadoop URI through Spark (no row is read)
    run.inputs = {}
    for s in run.plan.specs:
        if s.access != READ or not s.table:
            continue
        if s.fmt == "delta":  # its version, pinned: the run reads that version
            run.inputs[s.role] = _delta_input(run, s, spark)
        else:
            run.inputs[s.role] = input_identity(s.path, spark=spark)
    algorithm, _ = plan_steps(run)
    run.identity = run_identity(
        job=run.spec.name,
        algorithm=algorithm,
        arguments=release_arguments(run),
        key_fingerprint=run.randomness.fingerprint,
        inputs=run.inputs,
    )


def _delta_input(run: Run, spec: PathSpec, spark: Any) -> str:
    """The identity of the version of a Delta input the run reads (``--input-version``, else
    the latest now), recorded in ``run.input_versions`` so that the read is of that version."""
    from spark_dp.io.delta import check_version, delta_identity
    from spark_dp.io.fs import filesystem

    assert run.plan is not None
    fs = filesystem(spec.path, spark, plain_is_local=run.plan.plain_is_local)
    given = getattr(run.args, "input_version", None) if spec.role == "input" else None
    version = check_version(fs, spec.path, given, flag=spec.flag)
    run.input_versions[spec.role] = version
    return delta_identity(fs, run.plan.resolved[spec], spec.path, version)


def needs_session_for_identity(run: Run) -> bool:
    """A table the job reads from a Hadoop URI is listed through Spark when the books (a store
    or the ledger) need its identity, and a Delta table's version is always read from its log
    there (the session starts first; still no data is read before the reservation)."""
    if run.plan is None:
        return False
    remote = [
        s for s in run.plan.specs if s.access == READ and s.table and not run.plan.is_local(s)
    ]
    books = bool(run.budget_store) or run.ledger is not None
    return any(books or s.fmt == "delta" for s in remote)


def recorded_path(path: str) -> str:
    """A written path as the store records it: local paths resolved, URIs as given."""
    from spark_dp.release_ids import is_uri

    return path if is_uri(path) else str(Path(path).expanduser().resolve())


def check_spent(run: Run) -> None:
    """Before the commit: the report's spending must be what the data-free plan reserved."""
    assert run.report is not None
    planned = run.planned_spend
    if planned is None:
        return
    spent = (run.report.epsilon_spent, run.report.delta_spent)
    if not all(
        math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-15) for a, b in zip(planned, spent, strict=True)
    ):
        raise RuntimeError(
            f"the run spent (ε={spent[0]:g}, δ={spent[1]:g}) but its plan reserved "
            f"(ε={planned[0]:g}, δ={planned[1]:g}): a bug in the job's plan"
        )
