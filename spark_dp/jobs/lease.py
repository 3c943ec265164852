"""A run's one claim on the books (a budget store, or the default ledger), from its reservation
to its end, and the binding of its key to the rows it reads (see :mod:`spark_dp.jobs.runner`;
docs/design/job-line.md):

* ``with BudgetLease(request, identity, hooks) as lease`` (before any data is read): reserves the
  (ε, δ) of the job's data-free plan, under the run's request. A refusal is
  :class:`~spark_dp.errors.BudgetRefused` (exit code 3, one line); a request committed before is
  not run again (:class:`~spark_dp.errors.AlreadyReleased`: exit 0 when this run asks for
  exactly the paths that release wrote, else exit 2, nothing read, written or charged). The
  run's lease is then renewed from a daemon thread (:class:`~spark_dp.budget.leases.Heartbeat`).
* :meth:`BudgetLease.binding`: the job's :class:`~spark_dp.io.digest.ReleaseBinding`. Each
  table the job reads goes through a validation pass with the binding's gate: right before the
  first such pass reads rows the charge becomes durable (:meth:`BudgetLease.charge`; from then
  on it is never refunded); when the last table's digest arrives the release id is recorded
  (:meth:`BudgetLease.bind`) and only then is the key bound to it, so nothing can be drawn
  before: the binding's ``randomness`` refuses.
* :meth:`BudgetLease.commit` before the staged outputs go into place (after :meth:`check_spent`):
  a crash between the two leaves a release recorded as committed that nobody can read (never
  the reverse); the ``with`` block's end: a run that never read data frees its reservation, one
  that did stays charged.
* :meth:`BudgetLease.replacing` and :meth:`BudgetLease.replaced`: ``--overwrite`` of an output
  whose release spent ε says, in one line, what it replaced and what the input has now spent.

Without a store or ledger (``--no-ledger``) a job runs unrecorded and its report says so.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from spark_dp.errors import AlreadyReleased
from spark_dp.io.digest import ContentDigest, ReleaseBinding
from spark_dp.io.paths import READ, WRITE, default_report_path
from spark_dp.jobs.request import Identity, Request
from spark_dp.jobs.signals import raise_pending
from spark_dp.report import PrivacyReport

if TYPE_CHECKING:
    from spark_dp.budget.leases import Heartbeat
    from spark_dp.budget.records import Reservation, RunRecord
    from spark_dp.budget.store import BudgetStore
    from spark_dp.jobs.spec import RunHooks

__all__ = ["BudgetLease", "recorded_path"]


class BudgetLease:
    """One run's claim on the books (a budget store or the default ledger), from the
    reservation to the run's end (module docstring). Without books (``--no-ledger``, or a job
    that spends nothing) every step is a no-op and the report says nothing was recorded.

    Attributes:
        store: the open store (``None``: unrecorded).
        reservation: the store's reservation, as each step hands it back.
        release_id: the release id, once the key is bound (:meth:`bind`).
    """

    def __init__(self, request: Request, identity: Identity, hooks: RunHooks) -> None:
        self._request = request
        self._identity = identity
        self._hooks = hooks
        self._log = request.log
        self.store: BudgetStore | None = None
        self.reservation: Reservation | None = None
        self.committed = False
        self.release_id = ""
        self._planned: tuple[float, float] | None = None
        self._dataset: str | None = None
        self._heartbeat: Heartbeat | None = None

    # ------------------------------------------------------------------ reserve
    def __enter__(self) -> BudgetLease:
        """Reserve the plan's (ε, δ) before any data is read (exit 3 if refused).

        Raises:
            AlreadyReleased: this request (same arguments, key, input locations and listings)
                was committed before: nothing is read, written or charged.
        """
        try:
            self._reserve()
            self._hooks.moment("reserved")
        except BaseException:  # the with block's end does not run for its own entry
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        from spark_dp.jobs.signals import ignored_signals

        with ignored_signals():
            self.end()

    def _reserve(self) -> None:
        from spark_dp.budget.leases import Heartbeat
        from spark_dp.budget.store import BudgetStore
        from spark_dp.dp.composition import noise_steps
        from spark_dp.release_ids import default_dataset_id

        request, identity = self._request, self._identity
        spec, books = request.spec, request.settings.books
        if not spec.spends_budget or not books.kept:
            return
        steps = request.plan.steps
        input_path = getattr(request.flags, "input", None)
        dataset = books.dataset_id or (default_dataset_id(input_path) if input_path else spec.name)
        self._dataset = dataset
        self._planned = planned_spend(request.plan, steps)
        paths = request.paths
        written = {s.role: recorded_path(s.path) for s in paths.specs if s.access == WRITE}
        if books.ledger is not None:
            self.store = BudgetStore.open(books.ledger.prepare(), ledger=True)
        else:
            assert books.store is not None
            self.store = BudgetStore.open(books.store)
        res = self.reservation = self.store.reserve(
            dataset=dataset,
            identity=identity.request_id,
            job=spec.name,
            epsilon=self._planned[0],
            delta=self._planned[1],
            noise=noise_steps(steps),
            algorithm=request.algorithm,
            test_seed=identity.key.seeded,
            outputs=written,
        )
        if res.done is not None:
            self.reservation = None  # nothing of it is this run's to end
            _already_released(res.done, written)
        self._heartbeat = Heartbeat(self.store, res)
        if res.adopted:
            self._log.info(
                "budget: run %s took over the charge of an earlier run of the same request "
                "that was charged and ended before it recorded a release id",
                res.run,
            )
        else:
            self._log.info(
                "budget: reserved ε=%g, δ=%g on dataset %s (run %s, %s)",
                res.epsilon,
                res.delta,
                dataset,
                res.run,
                self.store.url,
            )

    # ------------------------------------------------------------------ charge, bind
    def binding(self, report: PrivacyReport) -> ReleaseBinding:
        """The job's binding: its unbound key, the tables it reads, the charge and bind hooks
        (the run's test moments ``charged`` and ``bound`` after each); the release id goes
        into ``report`` when it is recorded."""
        paths = self._request.paths
        tables = [s.role for s in paths.specs if s.access == READ and s.table]

        def charge() -> None:
            self.charge()
            self._hooks.moment("charged")

        def bind(digests: list[ContentDigest]) -> str:
            report.release_id = self.bind(digests)
            self._hooks.moment("bound")
            return self.release_id

        return ReleaseBinding(self._identity.key, tables, charge=charge, bind=bind)

    def charge(self) -> None:
        """Right before the first read of input rows: the charge becomes durable (unless the
        run was interrupted before: then nothing is read and nothing charged)."""
        raise_pending()
        if self.store is not None and self.reservation is not None:
            self.reservation = self.store.charge(self.reservation)
            self._log.info("budget: charged (the run now reads data; it will not be refunded)")

    def bind(self, digests: list[ContentDigest]) -> str:
        """Every table is digested: the release id (the key is bound to it once this returns,
        so the store records it before anything is drawn)."""
        from spark_dp.release_ids import release_id

        request, identity = self._request, self._identity
        self.release_id = release_id(
            job=request.spec.name,
            algorithm=request.algorithm,
            arguments=dict(identity.arguments),
            digests=digests,
            key_fingerprint=identity.key.fingerprint,
            inputs=dict(identity.inputs),
        )
        if self._hooks.release_id is not None:  # a test binds one key by hand (RunHooks)
            self.release_id = self._hooks.release_id(self.release_id)
        if self.store is not None and self.reservation is not None:
            self.reservation = self.store.bind(self.reservation, self.release_id)
        return self.release_id

    # ------------------------------------------------------------------ the report, the commit
    def report(self) -> dict[str, Any]:
        """The report's ``budget`` entry: what was recorded and enforced, never credentials."""
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
            "dataset": self._dataset,
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
        if self._identity.key.seeded:
            out["test_seed"] = True
        return out

    def commit(self, report: PrivacyReport) -> None:
        """Book the run as committed, right before its staged outputs go into place, once the
        ``report``'s spending is checked to be what the data-free plan reserved.

        Raises:
            RuntimeError: the run spent other than its plan reserved (a bug in the job's plan).
            BudgetError: the store no longer holds the run as this process's charged run
                (settled or taken over meanwhile): the outputs must not go into place.
        """
        self._check_spent(report)
        if self.store is not None and self.reservation is not None:
            self.store.commit(self.reservation)
        self.committed = True

    def _check_spent(self, report: PrivacyReport) -> None:
        planned = self._planned
        if planned is None:
            return
        spent = (report.epsilon_spent, report.delta_spent)
        pairs = zip(planned, spent, strict=True)
        if not all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-15) for a, b in pairs):
            raise RuntimeError(
                f"the run spent (ε={spent[0]:g}, δ={spent[1]:g}) but its plan reserved "
                f"(ε={planned[0]:g}, δ={planned[1]:g}): a bug in the job's plan"
            )

    def replacing(self, role: str, path: str) -> dict[str, Any] | None:
        """Before the commit: what the existing ``path`` (the run's ``role``, an output it
        replaces with ``--overwrite``) holds, if its release spent ε: the committed run of the
        books that wrote it, else the ε its report states (the report beside it)."""
        where = recorded_path(path)
        if self.store is not None:
            found: RunRecord | None = self.store.committed_writer(role, where)
            if found is not None:
                return {"run": found.run, "epsilon": found.epsilon, "delta": found.delta}
        beside = Path(default_report_path(path, self._request.spec.confidential))
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
        self._log.warning("%s", line)

    def _books(self) -> str:
        assert self.store is not None
        return f"ledger {self.store.url}" if self.store.ledger else f"store {self.store.url}"

    # ------------------------------------------------------------------ the end
    def end(self) -> None:
        """At the end of every run: a run without a commit is abandoned (freed if it read no
        data, else failed and charged), the lease's heartbeat stopped and the store closed."""
        store, res = self.store, self.reservation
        if store is None:
            return
        try:
            if self._heartbeat is not None:
                self._heartbeat.stop()
            if res is not None and not self.committed:
                state = store.abandon(res)
                if state == "failed":
                    self._log.warning(
                        "budget: run %s failed after reading data: it stays charged (spark-dp "
                        "budget runs lists it as failed (charged)); a retry of the same request "
                        "costs nothing more only if it failed before its release id was recorded",
                        res.run,
                    )
                elif state == "released":
                    self._log.info("budget: run %s read no data: its reservation is freed", res.run)
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


def planned_spend(plan: Any, steps: Sequence[Any]) -> tuple[float, float]:
    """The plan's total (ε, δ): its certificate's when it has one (an ``auto`` selection's
    PLD certificate is below the sum of its steps), else basic composition over the steps."""
    if getattr(plan, "composition", None) is not None:
        return float(plan.epsilon), float(plan.delta)
    return float(sum(s.epsilon for s in steps)), float(sum(s.delta for s in steps))


def recorded_path(path: str) -> str:
    """A written path as the store records it: local paths resolved, URIs as given."""
    from spark_dp.release_ids import is_uri

    return path if is_uri(path) else str(Path(path).expanduser().resolve())
