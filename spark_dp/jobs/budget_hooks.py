"""Where the privacy-budget store plugs into a job run (see :mod:`spark_dp.jobs.runner`).

* :func:`split_budget_conf` (before the parameters): ``--budget-store`` and ``--dataset-id``,
  or ``budget_store:`` / ``dataset_id:`` in the config file (a team's default store).
* :func:`budget_path_spec`: an SQLite store's file joins the path plan (it is written).
* :func:`budget_reserve` (after the key, **before any data is read**): the release id (job,
  algorithm, parameters, input identity, key fingerprint; :func:`spark_dp.budget.release_id`)
  and, with a store, the reservation of the (ε, δ) that the job's data-free plan (computed once,
  ``run.algorithm_plan``) will spend. A
  refusal is :class:`~spark_dp.errors.BudgetRefused` (exit code 3, one line); a release id the
  store has committed before (a retry with the same key) is charged nothing.
* :func:`budget_commit` once the report is in place (after checking that the run spent exactly
  what was reserved); :func:`budget_release` when the run ends without a commit, so a failure
  before anything is written costs no budget, while one after the commit keeps its charge.

Without a store a job runs as before and its report says that no budget was enforced.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from spark_dp.config import params_to_dict
from spark_dp.errors import ConfigError
from spark_dp.jobs.paths import APPEND, READ, PathSpec
from spark_dp.jobs.run import Run
from spark_dp.report import Plan, Step

__all__ = [
    "budget_commit",
    "budget_path_spec",
    "budget_release",
    "budget_report",
    "budget_reserve",
    "check_spent",
    "needs_session_for_identity",
    "split_budget_conf",
]

_FILE_KEYS = {"budget_store": "budget_store", "budget-store": "budget_store"}
_FILE_KEYS |= {"dataset_id": "dataset_id", "dataset-id": "dataset_id"}


def split_budget_conf(run: Run) -> None:
    """Take the store and dataset id from the flags, else from the config file's top level."""
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


def _first(flag: str | None, from_file: Any) -> str | None:
    """The flag's value if given (even empty: refused below), else the config file's."""
    if flag is not None:
        return flag
    return None if from_file is None else str(from_file)


def budget_path_spec(run: Run) -> list[PathSpec]:
    """The SQLite file of a store, as a path the job writes (never inside its input)."""
    url = run.budget_store
    if not url or not url.lower().startswith("sqlite:"):
        return []
    path = url.split(":///", 1)[1] if ":///" in url else ""
    if not path or path.startswith(":memory:"):
        return []  # BudgetStore.open refuses it with a clear message
    return [PathSpec("budget_store", "--budget-store", path.split("?", 1)[0], APPEND, file=True)]


def needs_session_for_identity(run: Run) -> bool:
    """With a store, a table the job reads from a Hadoop URI is listed through Spark (the
    session starts first; still no data is read before the reservation)."""
    if not run.budget_store or run.plan is None:
        return False
    return any(s.access == READ and s.table and not run.plan.is_local(s) for s in run.plan.specs)


def _release_parameters(run: Run) -> dict[str, Any]:
    """The job's parameters without path-valued ones: where outputs go is not part of a
    release, and what is read enters through its input identity."""
    assert run.plan is not None
    roles = {s.role for s in run.plan.specs}
    return {k: v for k, v in params_to_dict(run.params).items() if k not in roles}


def _input_identity(run: Run) -> str:
    from spark_dp.budget import input_identity

    assert run.plan is not None
    tables = sorted((s.role, s.path) for s in run.plan.specs if s.access == READ and s.table)
    return ";".join(f"{role}={input_identity(path, spark=run.spark)}" for role, path in tables)


def budget_reserve(run: Run) -> None:
    """The release id, and with a store the reservation (before any data is read)."""
    from spark_dp.budget import default_dataset_id, noise_steps, release_id

    assert run.randomness is not None
    algorithm: str | None = None
    steps: Sequence[Step] = ()
    if run.spec.spends_budget:
        plan: Plan = run.algorithm_plan
        algorithm, steps = plan.algorithm, plan.steps
    run.release_id = release_id(
        run.spec.name,
        algorithm,
        _release_parameters(run),
        _input_identity(run),
        run.randomness.fingerprint,
    )
    if not run.budget_store:
        return
    from spark_dp.budget import BudgetStore

    input_path = getattr(run.args, "input", None)
    dataset = run.dataset_id or (default_dataset_id(input_path) if input_path else run.spec.name)
    run.dataset_id = dataset
    run.planned_spend = (
        float(sum(s.epsilon for s in steps)),
        float(sum(s.delta for s in steps)),
    )
    run.store = BudgetStore.open(run.budget_store)
    run.reservation = run.store.reserve(
        dataset=dataset,
        release=run.release_id,
        job=run.spec.name,
        epsilon=run.planned_spend[0],
        delta=run.planned_spend[1],
        noise=noise_steps(steps),
        algorithm=algorithm,
    )
    res = run.reservation
    if res.already_committed:
        run.log.info("budget: release %s was committed before; charged nothing now", res.release)
    else:
        run.log.info(
            "budget: reserved ε=%g, δ=%g on dataset %s (release %s)",
            res.epsilon,
            res.delta,
            dataset,
            res.release,
        )


def budget_report(run: Run) -> dict[str, Any]:
    """The report's ``budget`` entry: what was enforced, never the store's credentials."""
    store = run.store
    if store is None:
        return {
            "enforced": False,
            "note": "no budget store was given (--budget-store): this release was not checked "
            "against or charged to any budget",
        }
    res = run.reservation
    return {
        "enforced": True,
        "store": store.url,
        "dataset": run.dataset_id,
        "charged": not res.already_committed,
        "epsilon": res.epsilon,
        "delta": res.delta,
        "accountant": store.accountant,
    }


def _check_spent(run: Run) -> None:
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


def check_spent(run: Run) -> None:
    """Before the commit: the report's spending must be what the data-free plan reserved."""
    _check_spent(run)


def budget_commit(run: Run) -> None:
    """Book the reservation once output and report are in place."""
    if run.reservation is None:
        return
    run.store.commit(run.reservation)


def budget_release(run: Run) -> None:
    """At the end of every run: give the reservation back if nothing was committed (a
    failure after the commit keeps its charge), and close the store."""
    store = run.store
    if store is None:
        return
    try:
        if run.reservation is not None and not run.committed:
            store.release(run.reservation)
    finally:
        store.close()
        run.store = None
