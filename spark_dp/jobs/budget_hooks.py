"""Where the privacy-budget store plugs into a job run (see :mod:`spark_dp.jobs.runner`).

:func:`budget_reserve` runs after the key and before the session (no data read yet);
:func:`budget_commit` after the report is in place; :func:`budget_release` when the run ends
without a commit. Today they keep ``--ledger``'s behaviour: an append at commit.
"""

from __future__ import annotations

from spark_dp.jobs.run import Run, report_path

__all__ = ["budget_commit", "budget_release", "budget_reserve"]


def budget_reserve(run: Run) -> None:
    """Reserve the release's (ε, δ) before any data is read (the budget store's ``reserve``;
    a refusal is a :class:`~spark_dp.errors.SparkDPUserError` with exit code 3)."""
    run.reservation = None


def budget_commit(run: Run) -> None:
    """Book the reservation once the report is in place; today: append to ``--ledger``."""
    args, report = run.args, run.report
    if not getattr(args, "ledger", None) or report is None or not report.budget:
        return
    from spark_dp.ledger import LedgerEntry, append_entry, dataset_id

    source = args.dataset_id or (dataset_id(args.input) if getattr(args, "input", None) else "")
    append_entry(
        args.ledger,
        LedgerEntry(
            dataset=source,
            job=run.spec.name,
            algorithm=report.algorithm,
            epsilon=report.epsilon_spent,
            delta=report.delta_spent,
            output=getattr(args, "output", None),
            report=report_path(args),
            seed_mode=report.randomness.get("mode", "unknown"),
        ),
    )


def budget_release(run: Run) -> None:
    """Give the reservation back when nothing was committed (the store's ``release``)."""
    run.reservation = None
