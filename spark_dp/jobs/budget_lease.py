"""A run's one claim on the books (a budget store, or the default ledger), from its reservation
to its end (see :mod:`spark_dp.jobs.runner` and :mod:`.budget_hooks`):

* :meth:`BudgetLease.reserve` (before any data is read): the (ε, δ) of the job's data-free plan,
  under the run's request. A refusal is :class:`~spark_dp.errors.BudgetRefused` (exit code 3,
  one line); a request committed before is not run again
  (:class:`~spark_dp.errors.AlreadyReleased`: exit 0 when this run asks for exactly the paths
  that release wrote, else exit 2, nothing read, written or charged). The run's lease is then
  renewed from a daemon thread (:class:`~spark_dp.budget.leases.Heartbeat`).
* :meth:`BudgetLease.binding`: the job's :class:`~spark_dp.jobs.binding.ReleaseBinding`, whose
  hooks are :meth:`BudgetLease.charge` (right before the first read of rows: the charge becomes
  durable) and :meth:`BudgetLease.bind` (every table digested: the release id, recorded before
  the key is bound to it, so before anything is drawn).
* :meth:`BudgetLease.commit` before the staged outputs go into place (after
  :func:`~.budget_hooks.check_spent`): a crash between the two leaves a release recorded as
  committed that nobody can read (never the reverse); :meth:`BudgetLease.end` at the end of
  every run: a run that never read data frees its reservation, one that did stays charged.
* :meth:`BudgetLease.replacing` and :meth:`BudgetLease.replaced`: ``--overwrite`` of an output
  whose release spent ε says, in one line, what it replaced and what the input has now spent.

Without a store or ledger (``--no-ledger``) a job runs unrecorded and its report says so.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spark_dp.errors import AlreadyReleased
from spark_dp.io.digest import ContentDigest
from spark_dp.io.paths import READ, WRITE, default_report_path
from spark_dp.jobs.binding import ReleaseBinding
from spark_dp.jobs.budget_hooks import plan_steps, planned_spend, recorded_path
from spark_dp.jobs.release_args import release_arguments
from spark_dp.jobs.run import Run
from spark_dp.jobs.signals import raise_pending

if TYPE_CHECKING:
    from spark_dp.budget.leases import Heartbeat
    from spark_dp.budget.records import Reservation, RunRecord
    from spark_dp.budget.store import BudgetStore

__all__ = ["BudgetLease"]


class BudgetLease:
    """One run's claim on the books (a budget store or the default ledger), from the
    reservation to the run's end (module docstring). Without books (``--no-ledger``, or a job
    that spends nothing) every step is a no-op and the report says nothing was recorded.

    Attributes:
        store: the open store (``None``: unrecorded).
        reservation: the store's reservation, as each step hands it back.
    """

    def __init__(self, run: Run) -> None:
        self._run = run
        self.store: BudgetStore | None = None
        self.reservation: Reservation | None = None
        self.committed = False
        self._heartbeat: Heartbeat | None = None

    # ------------------------------------------------------------------ reserve
    @classmethod
    def reserve(cls, run: Run) -> BudgetLease:
        """Reserve the plan's (ε, δ) before any data is read (exit 3 if refused); the lease is
        ``run.lease`` from here on, so the run's end closes it whatever happens.

        Raises:
            AlreadyReleased: this request (same arguments, key, input locations and listings)
                was committed before: nothing is read, written or charged.
        """
        from spark_dp.budget import BudgetStore, noise_steps
        from spark_dp.budget.leases import Heartbeat
        from spark_dp.release_ids import default_dataset_id

        assert run.randomness is not None and run.plan is not None
        lease = run.lease = cls(run)
        if not run.spec.spends_budget or not (run.budget_store or run.ledger is not None):
            return lease
        algorithm, steps = plan_steps(run)
        input_path = getattr(run.args, "input", None)
        dataset = run.dataset_id or (
            default_dataset_id(input_path) if input_path else run.spec.name
        )
        run.dataset_id = dataset
        run.planned_spend = planned_spend(run, steps)
        written = {s.role: recorded_path(s.path) for s in run.plan.specs if s.access == WRITE}
        if run.ledger is not None:
            lease.store = BudgetStore.open(run.ledger.prepare(), ledger=True)
        else:
            assert run.budget_store is not None
            lease.store = BudgetStore.open(run.budget_store)
        res = lease.reservation = lease.store.reserve(
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
        if res.done is not None:
            lease.reservation = None  # nothing of it is this run's to end
            _already_released(res.done, written)
        lease._heartbeat = Heartbeat(lease.store, res)
        if res.adopted:
            run.log.info(
                "budget: run %s took over the charge of an earlier run of the same request "
                "that was charged and ended before it recorded a release id",
                res.run,
            )
        else:
            run.log.info(
                "budget: reserved ε=%g, δ=%g on dataset %s (run %s, %s)",
                res.epsilon,
                res.delta,
                dataset,
                res.run,
                lease.store.url,
            )
        return lease

    # ------------------------------------------------------------------ charge, bind
    def binding(self, moment: Callable[[str], None]) -> ReleaseBinding:
        """The job's binding: its unbound key, the tables it reads, the charge and bind hooks
        (``moment(name)`` after each: the run's test moments, :mod:`spark_dp.jobs.runner`)."""
        run = self._run
        assert run.randomness is not None and run.plan is not None
        tables = [s.role for s in run.plan.specs if s.access == READ and s.table]

        def charge() -> None:
            self.charge()
            moment("charged")

        def bind(digests: list[ContentDigest]) -> str:
            release = self.bind(digests)
            moment("bound")
            return release

        return ReleaseBinding(run.randomness, tables, charge=charge, bind=bind)

    def charge(self) -> None:
        """Right before the first read of input rows: the charge becomes durable (unless the
        run was interrupted before: then nothing is read and nothing charged)."""
        raise_pending()
        if self.store is not None and self.reservation is not None:
            self.reservation = self.store.charge(self.reservation)
            self._run.log.info("budget: charged (the run now reads data; it will not be refunded)")

    def bind(self, digests: list[ContentDigest]) -> str:
        """Every table is digested: the release id (the key is bound to it once this returns,
        so the store records it before anything is drawn), in the store and the report."""
        from spark_dp.release_ids import release_id

        run = self._run
        assert run.randomness is not None
        algorithm, _ = plan_steps(run)
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
        if self.store is not None and self.reservation is not None:
            self.reservation = self.store.bind(self.reservation, run.release_id)
        return run.release_id

    # ------------------------------------------------------------------ the report, the commit
    def report(self) -> dict[str, Any]:
        """The report's ``budget`` entry: what was recorded and enforced, never credentials."""
        run = self._run
        store, res = self.store, self.reservation
        if store is None or res is None:
            return {
                "enforced": False,
                "recorded": False,
                "note": "no budget store (--budget-store) and no ledger (--no-ledger): this "
                "release was not recorded, checked against or charged to any budget",
            }
        out: dict[str, Any] = {
            "enforced": not store.ledger or store.has_cap(res.dataset),
            "recorded": True,
            "store": store.url,
            "dataset": run.dataset_id,
            "charged": res.charged,
            "epsilon": res.epsilon,
            "delta": res.delta,
            "accountant": store.accountant,
            "run": res.run,
        }
        if store.ledger:
            out["ledger"] = True  # the default ledger: recorded; refused only over a cap set
        if res.adopted:
            out["adopted"] = True  # the charge of an earlier run that drew nothing
        if run.randomness is not None and run.randomness.seeded:
            out["test_seed"] = True
        return out

    def commit(self) -> None:
        """Book the run as committed, right before its staged outputs go into place.

        Raises:
            BudgetError: the store no longer holds the run as this process's charged run
                (settled or taken over meanwhile): the outputs must not go into place.
        """
        if self.store is not None and self.reservation is not None:
            self.store.commit(self.reservation)
        self.committed = True

    def replacing(self, role: str, path: str) -> dict[str, Any] | None:
        """Before the commit: what the existing ``path`` (the run's ``role``, an output it
        replaces with ``--overwrite``) holds, if its release spent ε: the committed run of the
        books that wrote it, else the ε its report states (the report beside it)."""
        where = recorded_path(path)
        if self.store is not None:
            found: RunRecord | None = self.store.committed_writer(role, where)
            if found is not None:
                return {"run": found.run, "epsilon": found.epsilon, "delta": found.delta}
        beside = Path(default_report_path(path, self._run.spec.confidential))
        try:
            doc = json.loads(beside.read_text(encoding="utf-8"))
            privacy = doc["privacy"]
            return {"epsilon": float(privacy["epsilon_spent"]), "delta": privacy["delta_spent"]}
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def replaced(self, path: str, old: dict[str, Any]) -> None:
        """After the commit: one line, what ``path`` held and what its input has now spent."""
        what = f"ε={old['epsilon']:g}, δ={float(old['delta']):.3g}"
        if "run" in old:
            what = f"run {old['run']}, {what}"
        line = f"--overwrite replaced the release at {path} ({what}); "
        res = self.reservation
        total = self.store.dataset_budget(res.dataset) if self.store and res else None
        if total is None or res is None:
            line += "no ledger records what its input has spent in all (--no-ledger)"
        else:
            line += (
                f"dataset {res.dataset} has now spent ε={total.spent_epsilon:g}, "
                f"δ={total.spent_delta:.3g} in all (basic composition; {self._books()})"
            )
        self._run.log.warning("%s", line)

    def _books(self) -> str:
        assert self.store is not None
        return f"ledger {self.store.url}" if self.store.ledger else f"store {self.store.url}"

    # ------------------------------------------------------------------ the end
    def end(self) -> None:
        """At the end of every run: a run without a commit is abandoned (freed if it read no
        data, else failed and charged), the lease's heartbeat stopped and the store closed."""
        store, res, run = self.store, self.reservation, self._run
        if store is None:
            return
        try:
            if self._heartbeat is not None:
                self._heartbeat.stop()
            if res is not None and not self.committed:
                state = store.abandon(res)
                if state == "failed":
                    run.log.warning(
                        "budget: run %s failed after reading data: it stays charged (spark-dp "
                        "budget runs lists it as failed (charged)); a retry of the same request "
                        "costs nothing more only if it failed before its release id was recorded",
                        res.run,
                    )
                elif state == "released":
                    run.log.info("budget: run %s read no data: its reservation is freed", res.run)
        finally:
            store.close()
            self.store = None


def _already_released(done: RunRecord, written: dict[str, str]) -> None:
    """This request was committed before (run ``done``): nothing is read or charged. Exit 0
    only when this run asks for exactly the paths that release wrote and its report is still
    there (an Airflow retry of a task that finished); else exit 2, saying where it is."""
    import datetime as dt

    from spark_dp.release_ids import is_uri

    when = dt.datetime.fromtimestamp(done.ended_at or done.started_at, dt.timezone.utc)
    stamp = when.isoformat(timespec="seconds")
    recorded = done.written
    where = recorded.get("report") or "stdout"
    report = written.get("report")
    same = report is not None and written == recorded
    if same and report is not None and (is_uri(report) or Path(report).exists()):
        raise AlreadyReleased(
            f"this request (same key, arguments and input listing) was committed by run "
            f"{done.run} at {stamp}; its report is {where}; nothing was read, written or charged",
            exit_code=0,
        )
    other = [
        f"--{role.replace('_', '-')} {path} (it wrote {recorded[role]})"
        for role, path in sorted(written.items())
        if role in recorded and recorded[role] != path
    ]
    asked = f"; this run asks for {', '.join(other)}" if other else ""
    raise AlreadyReleased(
        f"this request (same key, arguments and input listing) was committed by run {done.run} "
        f"at {stamp} with its report at {where}{asked}; nothing was read, written or charged. "
        "Read that release, or use a fresh key (--noise-key-file) for a new release",
        exit_code=2,
    )
