"""``spark-dp audit``: empirical privacy audit of one mechanism, all of them, or the self-test.

    spark-dp audit --mechanism basic --fast
    spark-dp audit --mechanism mad2r --epsilon 1 --delta 0.1 --max-contributions 4 --runs 5000
    spark-dp audit --all --fast --json docs/privacy/audit.json --plot docs/privacy/audit.png
    spark-dp audit --self-test

Exit codes: 0 every audit passed (self-test: every real mechanism passed and every broken
variant failed), 1 otherwise, 2 bad arguments (one line: ``--runs`` ≥ 1, ``--alpha`` in (0, 1),
output files whose directory can be written, all checked before any audit runs).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from spark_dp.audit.api import AUDITED, BROKEN_PREFIX, audit, default_runs
from spark_dp.audit.report import markdown_table, plot_results, write_json, write_markdown
from spark_dp.audit.runner import AuditResult
from spark_dp.audit.selftest import self_test
from spark_dp.audit.targets import MECHANISMS
from spark_dp.checks import check_int_at_least, check_probability
from spark_dp.config_flags import SpellingAction, deprecation_warnings
from spark_dp.errors import ParameterError, SparkDPUserError
from spark_dp.io.paths import WRITE, PathPlan, PathSpec
from spark_dp.jobs.cli_args import OneLineParser
from spark_dp.jobs.failures import say

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    ap = OneLineParser(
        prog="spark-dp audit",
        allow_abbrev=False,
        description="Run a mechanism's real code many times on neighbouring datasets built "
        "to be worst cases for its proof, and test every event's counts against the claimed "
        "(ε, δ) (a hockey-stick test with Clopper–Pearson bounds, the family-wise error split "
        "over the comparisons), printing the empirical ε and the estimated power. A lower "
        "bound, not a proof.",
    )
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--mechanism",
        metavar="NAME",
        help=f"the mechanism: one of {', '.join(AUDITED)}; or a {BROKEN_PREFIX}* variant when "
        "the self-test package is installed (a clone's `make setup`)",
    )
    what.add_argument("--all", action="store_true", help="every real mechanism")
    what.add_argument(
        "--self-test",
        action="store_true",
        help="fast audits of every real mechanism and system check (must pass, also at the "
        "parameters a variant moves to) and every deliberately broken variant (must fail); "
        "exit 0 only if all verdicts are as expected. The variants are not part of spark_dp: "
        "a clone's `make setup` installs them (`pip install -e selftest`)",
    )
    ap.add_argument("--only", help="with --self-test: a comma-separated subset of names")
    ap.add_argument(
        "--fast",
        action="store_true",
        help="large δ and tiny data (ε=1, δ=0.2, Δ0=2; k=1 for count thresholding; MAD2R "
        "b_max=1; ℓ_max=4 for the distinct count): a 2x error in ε or δ fails with power >= 0.9 "
        "(docs/privacy/audit.md lists the exceptions)",
    )
    ap.add_argument(
        "--runs", type=int, help="runs per dataset (default 20000; 3000 distinct count)"
    )
    ap.add_argument(
        "--alpha",
        type=float,
        default=1e-3,
        help="family-wise error per audit: a correct mechanism fails with probability <= alpha",
    )
    ap.add_argument("--seed", type=int, help="test-only key seed (reproducible audit)")
    ap.add_argument("--json", help="write the results as JSON here")
    ap.add_argument("--plot", help="write the claimed-vs-empirical plot (PNG) here")
    ap.add_argument("--markdown", help="write the results table (markdown) here")
    flags = ap.add_argument_group("mechanism parameters (default: the family's, or --fast's)")
    flags.add_argument("--epsilon", type=float)
    flags.add_argument("--delta", type=float)
    flags.add_argument(
        "--max-contributions",
        action=SpellingAction,
        type=int,
        metavar="N",
        help="the per-user bound: Δ0 of partition selection (k of count thresholding), ℓ_max "
        "of the distinct count",
    )
    _deprecated(flags, "--max-contributions", int, "--max-items-per-user", "--max-contribution")
    flags.add_argument("--max-adaptive-degree", type=int, help="d_max of MAD/MAD2R")
    flags.add_argument("--split", help="budget shares of dp-sips/mad2r, e.g. 0.1,0.9")
    flags.add_argument(
        "--truncation-beta",
        action=SpellingAction,
        type=float,
        help="MAD's truncation level τ = ρ + β·σ, the oracles' fill level",
    )
    _deprecated(flags, "--truncation-beta", float, "--beta")
    flags.add_argument(
        "--failure-probability",
        type=float,
        help="the distinct count's β: P[lower bound > true count] <= β",
    )
    flags.add_argument("--method", help="distinct-count curve method (exact, greedy)")
    return ap


def _deprecated(group: argparse._ArgumentGroup, flag: str, kind: type, *aliases: str) -> None:
    """Old flags that still set ``flag``'s value, with the jobs' deprecation warning."""
    dest = flag.lstrip("-").replace("-", "_")
    for alias in aliases:
        group.add_argument(
            alias,
            dest=dest,
            type=kind,
            help=argparse.SUPPRESS,
            action=SpellingAction,
            new_flag=flag,
        )


def _parameters(ns: argparse.Namespace) -> dict[str, Any]:
    keys = ("epsilon", "delta", "max_adaptive_degree", "failure_probability")
    out: dict[str, Any] = {k: getattr(ns, k) for k in keys if getattr(ns, k) is not None}
    if ns.split is not None:
        out["split"] = tuple(float(x) for x in ns.split.split(","))
    if ns.max_contributions is not None:  # Δ0 for partition selection, ℓ_max for distinct count
        out["max_contributions"] = ns.max_contributions
    if ns.truncation_beta is not None:
        out["beta"] = ns.truncation_beta
    if ns.method is not None:
        out["method"] = ns.method
    return out


def _outputs(ns: argparse.Namespace, results: Sequence[AuditResult]) -> None:
    print(markdown_table(results))
    if ns.markdown:
        write_markdown(results, ns.markdown)
    if ns.json:
        write_json(results, ns.json)
    if ns.plot:
        plot_results(results, ns.plot)


def _check(ns: argparse.Namespace) -> None:
    """The arguments no audit would use well, refused before any audit runs."""
    if ns.runs is not None:
        check_int_at_least("--runs", ns.runs, 1)
    check_probability("--alpha", ns.alpha)
    outputs = [
        PathSpec(flag.lstrip("-"), flag, getattr(ns, flag.lstrip("-")), WRITE, file=True)
        for flag in ("--json", "--plot", "--markdown")
    ]
    plan = PathPlan([s for s in outputs if s.path is not None])
    plan.check_conflicts()
    plan.prepare_local(overwrite=True)  # the audit replaces its own outputs


def _default_runs(name: str) -> int:
    """The runs of ``--mechanism NAME``, the name checked first (an unknown one is refused in
    one line naming the flag; a broken variant needs the self-test package)."""
    try:
        return default_runs(name)
    except ParameterError as exc:
        raise ParameterError(f"--mechanism: {exc}") from None


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, run, print the table; return the exit code."""
    ap = _parser()
    try:
        ns = ap.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    for sentence in deprecation_warnings(ns):
        print(f"spark-dp audit: warning: {sentence}", file=sys.stderr)
    try:
        _check(ns)
        if ns.self_test:
            names = ns.only.split(",") if ns.only else None
            outcome = self_test(names, alpha=ns.alpha, seed=ns.seed)
            _outputs(ns, outcome.results)
            for r in outcome.unexpected:
                expected = "fail" if r.change is not None else "pass"
                print(f"UNEXPECTED: {r.mechanism} should {expected}", file=sys.stderr)
            return 0 if outcome.ok else 1
        names = list(MECHANISMS) if ns.all else [ns.mechanism]
        parameters = _parameters(ns)
        runs = {n: _default_runs(n) for n in names}  # every name checked before any audit runs
        if ns.runs is not None:
            runs = dict.fromkeys(names, ns.runs)
        results = [
            audit(name, fast=ns.fast, runs=runs[name], alpha=ns.alpha, seed=ns.seed, **parameters)
            for name in names
        ]
    except SparkDPUserError as exc:
        say(f"spark-dp audit: error: {' '.join(str(exc).split())}")
        return 2
    _outputs(ns, results)
    return 0 if all(r.passed for r in results) else 1
