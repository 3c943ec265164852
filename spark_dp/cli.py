"""``spark-dp``: one command-line front door to every job and tool.

    spark-dp generate --kind zipf --users 100000 --output data/zipf
    spark-dp partition-selection --input data/zipf --output out/items --algorithm mad2r
    spark-dp contribution-bounding --input data/graph --output out/records --capacity 4
    spark-dp distinct-count --input data/zipf --epsilon 1 --report out/count.json
    spark-dp calibrate --epsilon 1 --delta 1e-5 --max-items-per-user 100
    spark-dp budget --ledger ledger.jsonl --max-epsilon 4
    spark-dp audit --mechanism mad2r --fast

Each job subcommand takes exactly the flags of ``jobs/<name>.py`` (``spark-dp <job> --help``);
``python -m spark_dp`` is the same command. Under spark-submit use ``jobs/<name>.py`` or
``jobs/cli.py`` with ``--py-files dist/spark_dp.zip``.

Exit codes: 0 ok, 2 bad arguments or input (the message says what to fix), 1 other failure.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from spark_dp import __version__
from spark_dp.errors import SparkDPUserError

__all__ = ["JOBS", "main"]

# subcommand -> (module of spark_dp.jobs, one-line description)
JOBS: dict[str, tuple[str, str]] = {
    "generate": ("generate", "write a synthetic dataset (Zipf, heavy/light, hypergraphs)"),
    "partition-selection": (
        "partition_selection",
        "release items of the union of users' sets under user-level (ε, δ)-DP",
    ),
    "contribution-bounding": (
        "contribution_bounding",
        "select multi-owner records so that no user exceeds its capacity",
    ),
    "distinct-count": (
        "distinct_count",
        "person-level ε-DP lower bound on the number of distinct items",
    ),
}

TOOLS = {
    "calibrate": "print σ, ρ and thresholds for (ε, δ, Δ0) without touching data",
    "budget": "sum the ε, δ a ledger records per dataset (basic composition)",
    "audit": "empirical privacy audit of a mechanism (spark-dp audit --help)",
}


def _usage() -> str:
    lines = [f"spark-dp {__version__}: user-level differential privacy on Apache Spark", ""]
    lines.append("usage: spark-dp <command> [flags]   (spark-dp <command> --help for its flags)")
    lines.append("")
    lines.append("jobs:")
    lines += [f"  {name:24s}{desc}" for name, (_, desc) in JOBS.items()]
    lines.append("")
    lines.append("tools:")
    lines += [f"  {name:24s}{desc}" for name, desc in TOOLS.items()]
    lines.append("")
    lines.append(__doc__.split("\n\n")[1])
    return "\n".join(lines)


def _normalize(command: str) -> str:
    return command.replace("_", "-")


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch to a job's ``main`` or to a tool; return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0 if args else 2
    if args[0] in ("-V", "--version"):
        print(__version__)
        return 0
    command, rest = _normalize(args[0]), args[1:]
    if command in JOBS:
        module = importlib.import_module(f"spark_dp.jobs.{JOBS[command][0]}")
        return int(module.main(rest))
    if command == "calibrate":
        return _calibrate(rest)
    if command == "budget":
        return _budget(rest)
    if command == "audit":
        from spark_dp.audit.cli import main as audit_main

        return audit_main(rest)
    print(f"spark-dp: error: unknown command {args[0]!r}\n\n{_usage()}", file=sys.stderr)
    return 2


def _calibrate(argv: list[str]) -> int:
    from spark_dp.config import add_param_arguments, cli_overrides, resolve_params
    from spark_dp.partition_selection import PartitionSelectionParams, calibration_table

    ap = argparse.ArgumentParser(
        prog="spark-dp calibrate",
        description="Print the public constants each partition-selection algorithm would use "
        "(no data is read). Without --algorithm every algorithm is shown.",
    )
    add_param_arguments(ap, PartitionSelectionParams)
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    try:
        ns = ap.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    values = cli_overrides(ns, PartitionSelectionParams)
    chosen = values.pop("algorithm")
    try:
        params = resolve_params(PartitionSelectionParams, {"algorithm": chosen or "basic"}, values)
        table = calibration_table(params, [chosen] if chosen else None)
    except SparkDPUserError as exc:
        print(f"spark-dp calibrate: error: {exc}", file=sys.stderr)
        return 2
    if ns.json:
        import json

        print(json.dumps(table, indent=2))
    else:
        for row in table:
            fields = ", ".join(f"{k}={_fmt(v)}" for k, v in row.items() if k != "algorithm")
            print(f"{row['algorithm']:28s} {fields}")
    return 0


def _fmt(v: object) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _budget(argv: list[str]) -> int:
    from spark_dp.ledger import check_budget_values, check_totals, read_ledger, totals

    ap = argparse.ArgumentParser(
        prog="spark-dp budget",
        description="Sum ε and δ per dataset over a ledger (basic composition).",
    )
    ap.add_argument("--ledger", required=True, help="ledger file written by jobs with --ledger")
    ap.add_argument("--dataset", help="only this dataset id (default: all)")
    ap.add_argument("--max-epsilon", type=float, help="warn when a dataset's Σ ε exceeds this")
    ap.add_argument("--max-delta", type=float, help="warn when a dataset's Σ δ exceeds this")
    ap.add_argument("--strict", action="store_true", help="exit 3 when a budget is exceeded")
    try:
        ns = ap.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        check_budget_values(ns.max_epsilon, ns.max_delta)
        rows = totals(read_ledger(ns.ledger), ns.dataset)
    except SparkDPUserError as exc:
        print(f"spark-dp budget: error: {exc}", file=sys.stderr)
        return 2
    print(f"{'dataset':50s} {'releases':>8s} {'epsilon':>10s} {'delta':>10s}")
    for t in rows:
        flag = f"  ({t.fixed_seed_releases} with a fixed seed)" if t.fixed_seed_releases else ""
        print(f"{t.dataset:50s} {t.releases:8d} {t.epsilon:10.4g} {t.delta:10.3g}{flag}")
    warnings = check_totals(rows, ns.max_epsilon, ns.max_delta)
    for w in warnings:
        print(f"WARNING: {w}", file=sys.stderr)
    return 3 if warnings and ns.strict else 0


if __name__ == "__main__":
    sys.exit(main())
