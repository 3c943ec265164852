"""``spark-dp budget``: list and set the caps of a budget store.

    spark-dp budget --store sqlite:///var/spark_dp/budget.db [--json]
    spark-dp budget set-cap --store URL --dataset ID --epsilon E [--delta D] [--window-days N]
                            [--if-missing]
    spark-dp budget set-accountant --store URL --accountant basic|pld|rdp

Exit codes: 0 ok, 2 bad arguments or an unusable store (one line says what to fix).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from spark_dp.budget.accounting import ACCOUNTANTS
from spark_dp.errors import SparkDPUserError

if TYPE_CHECKING:
    from spark_dp.budget.store import DatasetBudget

__all__ = ["main"]

_PROG = "spark-dp budget"
_STORE_HELP = "budget store URL: sqlite:///path/budget.db or postgresql://user@host/db"


def _parser(command: str | None) -> argparse.ArgumentParser:
    if command == "set-cap":
        ap = argparse.ArgumentParser(
            prog=f"{_PROG} set-cap",
            description="Set (or replace) the (ε, δ) cap of a dataset. Jobs run with "
            "--budget-store refuse a dataset that has no cap.",
        )
        ap.add_argument("--store", required=True, help=_STORE_HELP)
        ap.add_argument("--dataset", required=True, help="dataset id (a job's --dataset-id)")
        ap.add_argument("--epsilon", required=True, type=float, help="ε cap (> 0)")
        ap.add_argument("--delta", type=float, default=0.0, help="δ cap in [0, 1) (default 0)")
        ap.add_argument(
            "--window-days",
            type=float,
            default=None,
            help="the cap holds for every sliding window of this many days instead of for all "
            "time (a release counts until this long after it was committed)",
        )
        ap.add_argument(
            "--if-missing",
            action="store_true",
            help="set the cap only if the dataset has none (keep an operator's cap; for "
            "pipelines that bootstrap a store)",
        )
        return ap
    if command == "set-accountant":
        ap = argparse.ArgumentParser(
            prog=f"{_PROG} set-accountant",
            description="Choose how the store composes releases: basic (Σ ε, Σ δ), or basic "
            "plus a tight PLD or RDP accountant for Gaussian noise (dp-accounting).",
        )
        ap.add_argument("--store", required=True, help=_STORE_HELP)
        ap.add_argument("--accountant", required=True, choices=ACCOUNTANTS)
        return ap
    ap = argparse.ArgumentParser(
        prog=_PROG,
        description="List spent, reserved and remaining budget per dataset of a budget store. "
        "Subcommands: set-cap, set-accountant (spark-dp budget <subcommand> --help).",
    )
    ap.add_argument("--store", required=True, help=_STORE_HELP)
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
            f"{r.dataset:40s} {r.cap_epsilon:8.4g} {r.cap_delta:9.3g} {r.spent_epsilon:8.4g} "
            f"{r.spent_delta:9.3g} {r.reserved_epsilon:8.4g} {r.reserved_delta:9.3g} "
            f"{r.remaining_epsilon:8.4g} {r.remaining_delta:9.3g} {r.releases:8d}"
        )
        if tight:
            line += f" {r.tight_epsilon if r.tight_epsilon is not None else float('nan'):9.4g}"
        if r.window_days is not None:
            line += f"  (per {r.window_days:g} days)"
        lines.append(line)
    if tight:
        lines.append(
            f"({rows[0].accountant} ε: what the tight accountant proves for the spent and "
            "reserved releases at δ = cap δ; inf: not within the cap δ)"
        )
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    """Run ``spark-dp budget``; return the exit code."""
    from spark_dp.budget.store import BudgetStore

    args = list(argv)
    command = args[0] if args and args[0] in ("set-cap", "set-accountant") else None
    try:
        ns = _parser(command).parse_args(args[1:] if command else args)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        with BudgetStore.open(ns.store) as store:
            if command == "set-cap":
                if ns.if_missing and any(b.dataset == ns.dataset for b in store.summary()):
                    print(f"cap of {ns.dataset!r}: kept (--if-missing)")
                    return 0
                store.set_cap(ns.dataset, ns.epsilon, ns.delta, window_days=ns.window_days)
                print(f"cap of {ns.dataset!r}: ε={ns.epsilon:g}, δ={ns.delta:g}")
                return 0
            if command == "set-accountant":
                store.set_accountant(ns.accountant)
                print(f"accountant of {store.url}: {ns.accountant}")
                return 0
            rows = store.summary()
    except SparkDPUserError as exc:
        print(f"{_PROG}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    if ns.json:
        print(json.dumps([r.to_dict() for r in rows], indent=2))
    else:
        print(_table(rows))
    return 0
