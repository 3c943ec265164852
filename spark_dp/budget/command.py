"""``spark-dp budget``: list and set the caps of a budget store, list and settle its runs.

    spark-dp budget [--store sqlite:///var/spark_dp/budget.db] [--json]
    spark-dp budget set-cap [--store URL] --dataset ID --epsilon E [--delta D] [--window-days N]
                            [--if-missing]
    spark-dp budget set-accountant [--store URL] --accountant basic|zcdp
    spark-dp budget runs [--store URL] [--dataset ID] [--json]
    spark-dp budget settle [--store URL] (--run ID [--force] | --stale)

Without ``--store`` each command works on the default ledger, where every job run without a
store is recorded (:mod:`spark_dp.budget.ledger`; ``$SPARK_DP_LEDGER`` names another file).

A run left ``reserved`` or ``charged`` by a process that is provably gone (on this host its pid
is not alive or is another process; on any host its lease expired) is listed as **stale**;
``settle`` ends it by the budget rules: a reservation that never read data is freed, a charge
stays spent (``failed (charged)``).

Exit codes: 0 ok, 2 bad arguments or an unusable store, 1 a store that cannot be written (one
line says what to fix). Arguments are checked before the store is opened: a bad value never
creates a store file.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from spark_dp.dp.accounting import ACCOUNTANTS
from spark_dp.errors import SparkDPUserError

if TYPE_CHECKING:
    from spark_dp.budget.records import DatasetBudget, RunRecord
    from spark_dp.budget.store import BudgetStore

__all__ = ["COMMANDS", "main"]

_PROG = "spark-dp budget"
_STORE_HELP = (
    "budget store URL: sqlite:///path/budget.db or postgresql://user@host/db (default: the "
    "default ledger, $SPARK_DP_LEDGER or $XDG_STATE_HOME/spark-dp/ledger.db)"
)
COMMANDS = ("set-cap", "set-accountant", "runs", "settle")


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line (the full usage is ``--help``)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {message} (see {self.prog} --help)\n")
        raise SystemExit(2)


def _parser(command: str | None) -> argparse.ArgumentParser:
    if command == "set-cap":
        ap = _Parser(
            prog=f"{_PROG} set-cap",
            description="Set (or replace) the (ε, δ) cap of a dataset. Jobs run with "
            "--budget-store refuse a dataset that has no cap; the default ledger records one "
            "without a cap and enforces a cap set on it.",
        )
        ap.add_argument("--store", help=_STORE_HELP)
        ap.add_argument("--dataset", required=True, help="dataset id (a job's --dataset-id)")
        ap.add_argument("--epsilon", required=True, type=float, help="ε cap (> 0)")
        ap.add_argument("--delta", type=float, default=0.0, help="δ cap in [0, 1) (default 0)")
        ap.add_argument(
            "--window-days",
            type=float,
            default=None,
            help="the cap holds for every sliding window of this many days instead of for all "
            "time (a release counts until this long after it ended)",
        )
        ap.add_argument(
            "--if-missing",
            action="store_true",
            help="set the cap only if the dataset has none (keep an operator's cap; for "
            "pipelines that bootstrap a store)",
        )
        return ap
    if command == "set-accountant":
        ap = _Parser(
            prog=f"{_PROG} set-accountant",
            description="Choose how the store composes releases: basic (Σ ε, Σ δ), or the zcdp "
            "privacy filter (Σ ρ of the noise; tighter for many Gaussian releases). Both hold "
            "when releases are chosen from earlier ones (docs/privacy/budget.md).",
        )
        ap.add_argument("--store", help=_STORE_HELP)
        ap.add_argument("--accountant", required=True, metavar="{" + ",".join(ACCOUNTANTS) + "}")
        return ap
    if command == "runs":
        ap = _Parser(
            prog=f"{_PROG} runs",
            description="List the runs of a store: state (reserved, charged, committed, failed "
            "(charged), released), stale ones marked, test-seed releases marked.",
        )
        ap.add_argument("--store", help=_STORE_HELP)
        ap.add_argument("--dataset", help="only the runs of this dataset")
        ap.add_argument("--json", action="store_true", help="print a JSON list of objects")
        return ap
    if command == "settle":
        ap = _Parser(
            prog=f"{_PROG} settle",
            description="End a run whose process is provably gone by the budget rules: a "
            "reservation that read no data is freed, a charged run stays spent as failed "
            "(charged).",
        )
        ap.add_argument("--store", help=_STORE_HELP)
        which = ap.add_mutually_exclusive_group(required=True)
        which.add_argument("--run", help="the run id (spark-dp budget runs lists them)")
        which.add_argument("--stale", action="store_true", help="every stale run")
        ap.add_argument(
            "--force",
            action="store_true",
            help="settle --run even if its process may still be running (another host whose "
            "lease has not expired; a run of an earlier spark_dp without a lease)",
        )
        return ap
    ap = _Parser(
        prog=_PROG,
        description="List spent, in-flight and remaining budget per dataset of a budget store "
        "(default: the default ledger). "
        f"Subcommands: {', '.join(COMMANDS)} (spark-dp budget <subcommand> --help).",
    )
    ap.add_argument("--store", help=_STORE_HELP)
    ap.add_argument("--json", action="store_true", help="print a JSON list of objects")
    return ap


def _table(rows: list[DatasetBudget]) -> str:
    head = (
        f"{'dataset':40s} {'cap ε':>8s} {'cap δ':>9s} {'spent ε':>8s} {'spent δ':>9s} "
        f"{'resv ε':>8s} {'resv δ':>9s} {'left ε':>8s} {'left δ':>9s} {'releases':>8s}"
    )
    tight = bool(rows) and rows[0].accountant != "basic"
    if tight:
        head += f" {rows[0].accountant + ' ε':>9s}"
    lines = [head]
    for r in rows:
        line = (
            f"{r.dataset:40s} {_num(r.cap_epsilon, 8, '.4g')} {_num(r.cap_delta, 9, '.3g')} "
            f"{r.spent_epsilon:8.4g} {r.spent_delta:9.3g} {r.reserved_epsilon:8.4g} "
            f"{r.reserved_delta:9.3g} {_num(r.remaining_epsilon, 8, '.4g')} "
            f"{_num(r.remaining_delta, 9, '.3g')} {r.releases:8d}"
        )
        if tight:
            line += f" {r.tight_epsilon if r.tight_epsilon is not None else float('nan'):9.4g}"
        if r.window_days is not None:
            line += f"  (per {r.window_days:g} days)"
        if r.failed_releases:
            line += f"  {r.failed_releases} failed (charged)"
        if r.stale_runs:
            line += f"  {r.stale_runs} stale: spark-dp budget settle"
        lines.append(line)
    if tight:
        lines.append(
            f"({rows[0].accountant} ε: the smallest cap ε at the cap's δ whose privacy filter "
            "admits the spent and reserved releases; inf: their own δ exceeds the filter's share)"
        )
    lines.append("(spent: committed and failed (charged) runs; resv: runs in flight)")
    if any(r.cap_epsilon is None for r in rows):
        lines.append("(-: no cap: the run is recorded, never refused; spark-dp budget set-cap)")
    return "\n".join(lines)


def _num(value: float | None, width: int, spec: str) -> str:
    return f"{'-':>{width}s}" if value is None else f"{value:{width}{spec}}"


def _when(t: float | None) -> str:
    if t is None:
        return "-"
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")


def _runs_table(runs: list[RunRecord]) -> str:
    lines = [f"{'run':34s} {'dataset':30s} {'job':22s} {'ε':>7s} {'state':24s} {'started':20s}"]
    for r in runs:
        state = r.shown_state + (" [test seed]" if r.test_seed else "")
        lines.append(
            f"{r.run:34s} {r.dataset:30s} {r.job:22s} {r.epsilon:7.4g} {state:24s} "
            f"{_when(r.started_at):20s} pid {r.pid} on {r.host or '?'}"
        )
    return "\n".join(lines)


def _check_before_opening(command: str | None, ns: argparse.Namespace) -> None:
    """What can be refused without the store, so a bad value creates no store file."""
    if command == "set-accountant":
        from spark_dp.dp.accounting import check_accountant

        check_accountant(ns.accountant)
    if command == "set-cap":
        from spark_dp.budget.store import check_cap
        from spark_dp.errors import ConfigError

        check_cap(ns.epsilon, ns.delta, ns.window_days)
        if not ns.dataset:
            raise ConfigError("--dataset must be a non-empty dataset id")


def _open(command: str | None, ns: argparse.Namespace) -> BudgetStore | None:
    """The store ``--store`` names, else the default ledger (``None`` when the ledger has no
    file yet and the command only reads: nothing was recorded, nothing is created)."""
    from spark_dp.budget.ledger import Ledger
    from spark_dp.budget.store import BudgetStore

    if ns.store is not None:
        return BudgetStore.open(ns.store)
    ledger = Ledger.resolve()
    if not ledger.path.exists() and command not in ("set-cap", "set-accountant"):
        print(f"{ledger.shown}: no run recorded yet")
        return None
    return BudgetStore.open(ledger.prepare(), ledger=True)


def _run(command: str | None, ns: argparse.Namespace) -> int:
    opened = _open(command, ns)
    if opened is None:
        return 0
    with opened as store:
        if command == "set-cap":
            if ns.if_missing and store.has_cap(ns.dataset):
                print(f"cap of {ns.dataset!r}: kept (--if-missing)")
                return 0
            store.set_cap(ns.dataset, ns.epsilon, ns.delta, window_days=ns.window_days)
            print(f"cap of {ns.dataset!r}: ε={ns.epsilon:g}, δ={ns.delta:g}")
        elif command == "set-accountant":
            store.set_accountant(ns.accountant)
            print(f"accountant of {store.url}: {ns.accountant}")
        elif command == "runs":
            runs = store.runs(ns.dataset)
            print(
                json.dumps([r.to_dict() for r in runs], indent=2) if ns.json else _runs_table(runs)
            )
        elif command == "settle":
            targets = [r.run for r in store.runs() if r.stale] if ns.stale else [ns.run]
            for run in targets:
                print(f"run {run}: {store.settle(run, force=ns.force)}")
            if ns.stale and not targets:
                print("no stale runs")
        else:
            rows = store.summary()
            if ns.json:
                print(json.dumps([r.to_dict() for r in rows], indent=2))
            else:
                print(_table(rows))
                print(f"({'ledger' if store.ledger else 'store'} {store.url})")
    return 0


def main(argv: Sequence[str]) -> int:
    """Run ``spark-dp budget``; return the exit code."""
    args = list(argv)
    command = args[0] if args and args[0] in COMMANDS else None
    try:
        ns = _parser(command).parse_args(args[1:] if command else args)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        _check_before_opening(command, ns)
        return _run(command, ns)
    except SparkDPUserError as exc:
        message = " ".join(str(exc).split())
        print(f"{_PROG}: error: {message}", file=sys.stderr)
        return exc.exit_code
