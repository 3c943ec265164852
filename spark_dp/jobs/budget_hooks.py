"""Where the privacy-budget store and the release binding plug into a job run (see
:mod:`spark_dp.jobs.runner`).

* :func:`split_budget_conf` (before the parameters): ``--budget-store`` and ``--dataset-id``,
  or ``budget_store:`` / ``dataset_id:`` in the config file (a team's default store).
* :func:`budget_path_spec`: an SQLite store's file joins the path plan (it is written).
* :func:`request_identity` (after the key, **before any data is read**): the run's request,
  :func:`spark_dp.budget.run_identity` of its effective arguments, key and the metadata
  identity of every table it reads (location and listing, never rows; for a Delta table its
  location and the version read, :func:`spark_dp.io.delta.delta_identity`).
* :func:`budget_reserve`: with a store, the reservation of the (ε, δ) the job's data-free plan
  will spend, under that request. A refusal is :class:`~spark_dp.errors.BudgetRefused` (exit
  code 3, one line); a request committed before is not run again
  (:class:`~spark_dp.errors.AlreadyReleased`: exit 0 when this run asks for the same report,
  else exit 2, nothing read or written).
* :func:`release_binding`: the job's :class:`~spark_dp.jobs.binding.ReleaseBinding`, whose two
  hooks are :func:`budget_charge` (right before the first read of rows: the charge becomes
  durable) and :func:`bind_release_id` (every table digested: the release id, which the key is
  bound to; the store records it).
* :func:`budget_commit` before the staged outputs go into place (after checking that the run
  spent exactly what was reserved, :func:`check_spent`): a crash between the two leaves a
  release recorded as committed that nobody can read (never the reverse: a readable release
  the store does not know); :func:`budget_end` at the end of every run: a run that never read
  data frees its reservation, one that did stays charged (``failed``).

Without a store a job runs as before and its report says that no budget was enforced.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spark_dp.calibration_protocol import Calibration
from spark_dp.errors import AlreadyReleased, ConfigError
from spark_dp.io.digest import ContentDigest
from spark_dp.io.fs import is_connect
from spark_dp.jobs.binding import ReleaseBinding
from spark_dp.jobs.paths import APPEND, READ, WRITE, PathSpec
from spark_dp.jobs.release_args import release_arguments
from spark_dp.jobs.run import Run, report_path
from spark_dp.jobs.signals import raise_pending
from spark_dp.report import Plan, Step

__all__ = [
    "bind_release_id",
    "budget_charge",
    "budget_commit",
    "budget_end",
    "budget_path_spec",
    "budget_report",
    "budget_reserve",
    "check_spent",
    "needs_session_for_identity",
    "release_binding",
    "request_identity",
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
    if run.budget_store and args.seed is not None and not args.allow_test_seed_with_budget_store:
        raise ConfigError(
            "--seed derives the key from a seed anyone can guess: it is refused with a budget "
            "store (a charged release must have secret noise); use --noise-key-file, or add "
            "--allow-test-seed-with-budget-store for a test store (the store marks the release)"
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


def _plan(run: Run) -> tuple[str | None, Sequence[Step[Calibration]]]:
    """The algorithm and the budget steps of the run's one plan (``run.algorithm_plan``)."""
    if run.spec.spends_budget:
        plan: Plan = run.algorithm_plan
        return plan.algorithm, plan.steps
    return getattr(run.params, "algorithm", None) or getattr(run.params, "method", None), ()


def _planned_spend(run: Run, steps: Sequence[Step[Calibration]]) -> tuple[float, float]:
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
    algorithm, _ = _plan(run)
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
    """A table the job reads from a Hadoop URI is listed through Spark when a store needs its
    identity, and a Delta table's version is always read from its log there (the session starts
    first; still no data is read before the reservation)."""
    if run.plan is None:
        return False
    remote = [
        s for s in run.plan.specs if s.access == READ and s.table and not run.plan.is_local(s)
    ]
    return any(run.budget_store or s.fmt == "delta" for s in remote)


def budget_reserve(run: Run) -> None:
    """With a store: reserve the plan's (ε, δ) before any data is read (exit 3 if refused).

    Raises:
        AlreadyReleased: this request (same arguments, key, input locations and listings) was
            committed before: nothing is read, written or charged.
    """
    from spark_dp.budget import noise_steps
    from spark_dp.release_ids import default_dataset_id

    assert run.randomness is not None and run.plan is not None
    if not run.budget_store:
        return
    from spark_dp.budget import BudgetStore

    algorithm, steps = _plan(run)
    input_path = getattr(run.args, "input", None)
    dataset = run.dataset_id or (default_dataset_id(input_path) if input_path else run.spec.name)
    run.dataset_id = dataset
    run.planned_spend = _planned_spend(run, steps)
    written = {s.role: _where(s.path) for s in run.plan.specs if s.access == WRITE}
    report = report_path(run.args, run.spec.confidential)
    if report is not None:
        report = written["report"] = _where(report)
    run.store = BudgetStore.open(run.budget_store)
    run.reservation = run.store.reserve(
        dataset=dataset,
        identity=run.identity,
        job=run.spec.name,
        epsilon=run.planned_spend[0],
        delta=run.planned_spend[1],
        noise=noise_steps(steps),
        algorithm=algorithm,
        test_seed=run.randomness.seeded,
        outputs=written,
    )
    res = run.reservation
    if res.done is not None:
        _already_released(run, res.done, report)
    if res.adopted:
        run.log.info(
            "budget: run %s took over the charge of an earlier run of the same request that "
            "released nothing",
            res.run,
        )
    else:
        run.log.info(
            "budget: reserved ε=%g, δ=%g on dataset %s (run %s)",
            res.epsilon,
            res.delta,
            dataset,
            res.run,
        )


def _where(path: str) -> str:
    """A written path as the store records it: local paths resolved, URIs as given."""
    from spark_dp.release_ids import is_uri

    return path if is_uri(path) else str(Path(path).expanduser().resolve())


def _already_released(run: Run, done: Any, report: str | None) -> None:
    """This request was committed before (run ``done``): say where, and stop before any read."""
    import datetime as dt

    when = dt.datetime.fromtimestamp(done.ended_at or done.started_at, dt.timezone.utc)
    where = done.written.get("report") or "stdout"
    from spark_dp.release_ids import is_uri

    same = report is not None and report == done.written.get("report")
    if same and report is not None and (is_uri(report) or Path(report).exists()):
        run.log.warning(
            "budget: this request (same key, arguments and input listing) was committed by run "
            "%s at %s; its report is %s; nothing was read, written or charged",
            done.run,
            when.isoformat(timespec="seconds"),
            where,
        )
        raise AlreadyReleased(f"release already committed (report {where})", exit_code=0)
    raise AlreadyReleased(
        f"this request (same key, arguments and input listing) was committed by run {done.run} "
        f"at {when.isoformat(timespec='seconds')} with its report at {where}; nothing was read, "
        "written or charged. Read that release, or use a fresh key (--noise-key-file) for a "
        "new release",
        exit_code=2,
    )


def budget_charge(run: Run) -> None:
    """Right before the first read of input rows: the charge becomes durable (unless the run
    was interrupted before: then nothing is read and nothing charged)."""
    raise_pending()
    if run.reservation is not None:
        run.reservation = run.store.charge(run.reservation)
        run.log.info("budget: charged (the run now reads data; it will not be refunded)")


def bind_release_id(run: Run, digests: list[ContentDigest]) -> str:
    """Every table is digested: the release id (the key is bound to it), recorded in the
    store and the report."""
    from spark_dp.release_ids import release_id

    assert run.randomness is not None
    algorithm, _ = _plan(run)
    run.release_id = release_id(
        job=run.spec.name,
        algorithm=algorithm,
        arguments=release_arguments(run),
        digests=digests,
        key_fingerprint=run.randomness.fingerprint,
        inputs=run.inputs,
    )
    if run.hooks.release_id is not None:  # a test binds one key by hand (RunHooks)
        run.release_id = run.hooks.release_id(run.release_id)
    if run.report is not None:
        run.report.release_id = run.release_id
    if run.reservation is not None:
        run.reservation = run.store.bind(run.reservation, run.release_id)
    return run.release_id


def release_binding(run: Run) -> ReleaseBinding:
    """The job's binding: its unbound key, the tables it reads, the charge and bind hooks."""
    assert run.randomness is not None and run.plan is not None
    tables = [s.role for s in run.plan.specs if s.access == READ and s.table]
    return ReleaseBinding(
        run.randomness,
        tables,
        charge=lambda: budget_charge(run),
        bind=lambda digests: bind_release_id(run, digests),
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
    out = {
        "enforced": True,
        "store": store.url,
        "dataset": run.dataset_id,
        "charged": res.charged,
        "epsilon": res.epsilon,
        "delta": res.delta,
        "accountant": store.accountant,
        "run": res.run,
    }
    if res.adopted:
        out["adopted"] = True  # the charge of an earlier run of this request that released nothing
    if run.randomness is not None and run.randomness.seeded:
        out["test_seed"] = True
    return out


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


def budget_commit(run: Run) -> None:
    """Book the run as committed, right before its staged outputs go into place."""
    if run.reservation is None:
        return
    run.store.commit(run.reservation)


def budget_end(run: Run) -> None:
    """At the end of every run: a run without a commit is abandoned (freed if it read no data,
    else failed and charged), and the store is closed."""
    store = run.store
    if store is None:
        return
    try:
        if run.reservation is not None and not run.committed:
            state = store.abandon(run.reservation)
            if state == "failed":
                run.log.warning(
                    "budget: run %s failed after reading data: it stays charged (spark-dp budget "
                    "lists it as failed (charged); a retry with the same key and data costs "
                    "nothing more)",
                    run.reservation.run,
                )
            elif state == "released":
                run.log.info(
                    "budget: run %s read no data: its reservation is freed", run.reservation.run
                )
    finally:
        store.close()
        run.store = None
