"""``spark-dp``: one command-line front door to every job and tool.

    spark-dp generate --kind zipf --users 100000 --output data/zipf
    spark-dp partition-selection --input data/zipf --output out/items --algorithm mad2r
    spark-dp contribution-bounding --input data/graph --output out/records --max-contributions 4
    spark-dp distinct-count --input data/zipf --epsilon 1 --report out/count.json
    spark-dp preview --input data/zipf --epsilon 0.2
    spark-dp calibrate --epsilon 1 --delta 1e-5 --max-contributions 100
    spark-dp keygen --out /run/secrets/words-2026-11-24.key
    spark-dp budget set-cap --store sqlite:///var/spark_dp/budget.db --dataset words --epsilon 4
    spark-dp budget --store sqlite:///var/spark_dp/budget.db
    spark-dp audit --mechanism mad2r --fast

Each job subcommand takes exactly the flags of ``jobs/<name>.py`` (``spark-dp <job> --help``);
``python -m spark_dp`` is the same command. Under spark-submit use ``jobs/<name>.py`` or
``jobs/cli.py`` with ``--py-files dist/spark_dp.zip``.

Exit codes: 0 ok, 2 bad arguments or input (the message says what to fix), 3 refused by the
budget store (the dataset has no cap, or the cap would be exceeded), 1 other failure. Output cut
short by a closed pipe (``| head``) ends quietly.
"""

from __future__ import annotations

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
    "preview": (
        "preview",
        "predicted released items per algorithm and Δ0 from a small DP release",
    ),
}

TOOLS = {
    "calibrate": "print σ, ρ and thresholds for (ε, δ, Δ0) without touching data",
    "budget": "list or set the caps and spending of a budget store (set-cap, set-accountant, "
    "runs, settle)",
    "audit": "empirical privacy audit of a mechanism (spark-dp audit --help)",
    "keygen": "write a new release key file for --noise-key-file (mode 0600, never over a file)",
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
    try:
        return _dispatch(list(sys.argv[1:] if argv is None else argv))
    except BrokenPipeError:  # `spark-dp calibrate --json | head`: the reader has what it wanted
        _silence_stdout()
        return 0


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's flush at exit stays quiet."""
    import os

    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _dispatch(args: list[str]) -> int:
    from spark_dp.jobs.failures import say

    if not args:
        say("spark-dp: error: a command is required (see spark-dp --help)")
        return 2
    if args[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0
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
    if command == "keygen":
        return _keygen(rest)
    say(f"spark-dp: error: unknown command {args[0]!r} (see spark-dp --help)")
    return 2


def _calibrate(argv: list[str]) -> int:
    from spark_dp.checks import privacy_warnings
    from spark_dp.config import resolve_params
    from spark_dp.config_flags import (
        add_param_arguments,
        cli_overrides,
        deprecation_warnings,
        name_flags,
    )
    from spark_dp.jobs.cli_args import OneLineParser
    from spark_dp.jobs.failures import say
    from spark_dp.partition_selection import REGISTRY, PartitionSelectionParams, calibration_table

    ap = OneLineParser(
        prog="spark-dp calibrate",
        description="Print the public constants each partition-selection algorithm would use "
        "(no data is read). Without --algorithm every algorithm is shown. --epsilon is "
        "required, as in the jobs.",
        allow_abbrev=False,
    )
    add_param_arguments(ap, PartitionSelectionParams, {"algorithm": REGISTRY}, ("epsilon",))
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    try:
        ns = ap.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    values = cli_overrides(ns, PartitionSelectionParams)
    chosen = values.pop("algorithm")
    try:
        if values.get("epsilon") is None:
            raise SparkDPUserError("--epsilon is required (the total privacy loss ε, e.g. 1)")
        params = resolve_params(PartitionSelectionParams, {"algorithm": chosen or "basic"}, values)
        table = calibration_table(params, [chosen] if chosen else None)
    except SparkDPUserError as exc:
        message = name_flags(" ".join(str(exc).split()), PartitionSelectionParams)
        say(f"spark-dp calibrate: error: {message}")
        return 2
    for sentence in deprecation_warnings(ns) + privacy_warnings(params.epsilon, params.delta):
        print(f"spark-dp calibrate: warning: {sentence}", file=sys.stderr)
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


def _keygen(argv: list[str]) -> int:
    """``spark-dp keygen --out PATH``: a new key file (docs/privacy/keys.md#key-files)."""
    from spark_dp.jobs.cli_args import OneLineParser
    from spark_dp.jobs.failures import say
    from spark_dp.randomness import ReleaseKey
    from spark_dp.randomness.key_file import write_key_file

    ap = OneLineParser(
        prog="spark-dp keygen",
        description="Write a new release key for --noise-key-file: 32 bytes from the "
        "operating system, in spark_dp's key file format, created with mode 0600. An existing "
        "file is never overwritten. Prints the key's fingerprint (public).",
        allow_abbrev=False,
    )
    ap.add_argument("--out", required=True, metavar="PATH", help="the key file to create")
    ap.add_argument(
        "--if-missing",
        action="store_true",
        help="keep an existing key file at PATH (after checking it is one) instead of failing",
    )
    try:
        ns = ap.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        write_key_file(ns.out)
        made = "wrote"
    except FileExistsError:
        if not ns.if_missing:
            say(
                f"spark-dp keygen: error: {ns.out} exists; a key file is never overwritten "
                "(choose another --out, or pass --if-missing to keep it)"
            )
            return 2
        made = "kept"
    except OSError as exc:
        say(f"spark-dp keygen: error: cannot create {ns.out} ({exc.strerror})")
        return 2
    try:
        key = ReleaseKey.from_file(ns.out)
    except SparkDPUserError as exc:
        say(f"spark-dp keygen: error: {exc}")
        return 2
    print(f"{made} release key {ns.out} (fingerprint {key.fingerprint})")
    return 0


def _budget(argv: list[str]) -> int:
    from spark_dp.budget.command import main as budget_main

    return budget_main(argv)


if __name__ == "__main__":
    sys.exit(main())
