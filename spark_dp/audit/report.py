"""The audit's outputs: a JSON file, a markdown table (docs/privacy/audit-results.md) and a plot.

Plotting needs matplotlib (the ``test`` and ``notebooks`` extras install it); without it the
plot is skipped with a message that says how to get it, and everything else is written.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spark_dp import __version__
from spark_dp.audit.api import variants
from spark_dp.audit.runner import AuditResult
from spark_dp.audit.targets import FAST_PARAMETERS
from spark_dp.io import write_json_atomic

__all__ = ["audit_document", "markdown_table", "plot_results", "write_json", "write_markdown"]


def audit_document(results: Sequence[AuditResult]) -> dict[str, Any]:
    """The JSON document: the version and one entry per audit."""
    return {
        "spark_dp_version": __version__,
        "what_it_shows": (
            "hockey-stick tests of each mechanism's claimed (epsilon, delta) on worst-case "
            "neighbouring datasets, empirical lower bounds on epsilon and the estimated power "
            "of each audit; a lower bound, not a proof of privacy"
        ),
        "audits": [r.to_dict() for r in results],
    }


def write_json(results: Sequence[AuditResult], path: str) -> None:
    """Write :func:`audit_document` to ``path`` atomically."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(audit_document(results), path)


def write_markdown(results: Sequence[AuditResult], path: str) -> None:
    """Write :func:`markdown_table` to ``path``."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(markdown_table(results), encoding="utf-8")


def _fmt(x: float) -> str:
    return "∞" if math.isinf(x) else f"{x:.2f}"


def _listed(value: object) -> object:
    """A tuple as a list (the report's parameters are JSON-ready, the fast ones may be tuples)."""
    return list(value) if isinstance(value, tuple) else value


def _variant(r: AuditResult) -> Any:
    """The broken variant ``r`` audited (from the self-test package, which ran it), or None
    for a real mechanism or a system check."""
    return None if r.change is None else variants().BROKEN.get(r.mechanism)


def _blind_spot(r: AuditResult) -> bool:
    """A broken variant that no affordable run count detects (docs/privacy/audit.md)."""
    variant = _variant(r)
    return variant is not None and bool(variant.blind_spot)


def _moved(r: AuditResult) -> str:
    """The parameters that differ from the fast ones (a broken variant's, or the self-test's
    real audit at them)."""
    variant = _variant(r)
    fast = FAST_PARAMETERS.get(r.mechanism if variant is None else variant.base)
    moved = {
        k: v
        for k, v in r.parameters.items()
        if fast is not None and k in fast and _listed(fast[k]) != _listed(v)
    }
    moved.update(
        {k: v for k, v in r.parameters.items() if k == "split" and r.mechanism != "dp-sips"}
    )
    return ", ".join(f"{k}={v}" for k, v in moved.items() if k != "split" or v != [0.1, 0.9])


def markdown_table(results: Sequence[AuditResult]) -> str:
    """One row per audit: claim, worst case, novel-item rate, ε bound, power, verdict, time."""
    lines = [
        "| mechanism | at | claimed (ε, δ) | worst case (strongest comparison) "
        "| novel-item rate [lower bound] vs its δ | empirical ε | estimated power | verdict "
        "| caught by | seconds |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        name = r.mechanism if r.change is None else f"{r.mechanism} ({r.change})"
        claim = f"({r.claim.epsilon:g}, {r.claim.delta:g})"
        strongest = r.strongest
        worst = "–" if strongest is None else f"{strongest.probe}: {strongest.counts.event}"
        novel = r.novel_rate()
        rate = "–" if novel is None else f"{novel[0]:.3f} [{novel[1]:.3f}] vs {novel[2]:g}"
        verdict = "pass" if r.passed else ("**FAIL** (claim)" if r.beyond_claim else "**FAIL**")
        if r.passed and _blind_spot(r):
            verdict = "pass (blind spot: docs/privacy/audit.md#measured-power)"
        caught = "; ".join(r.caught_by[:2]) or "–"
        lines.append(
            f"| {name} | {_moved(r) or 'fast'} | {claim} | {worst} | {rate} "
            f"| {_fmt(r.epsilon_lower_bound)} | {r.power:.3f} | {verdict} | {caught} "
            f"| {r.seconds:.0f} |"
        )
    return "\n".join(lines) + "\n"


def plot_results(results: Sequence[AuditResult], path: str) -> bool:
    """Claimed vs empirical ε per audit, and the estimated power of each.

    Returns:
        False (and prints why) when matplotlib is missing; True when the plot was written.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(
            "spark-dp audit: matplotlib is not installed, so no plot was written; "
            "install it with `pip install matplotlib` (or the package's [test] extra)"
        )
        return False
    names = [r.mechanism if not _moved(r) else f"{r.mechanism} ({_moved(r)})" for r in results]
    y = list(range(len(results)))
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 0.32 * len(results) + 1.8), sharey=True)
    colors = ["tab:blue" if r.passed else "tab:red" for r in results]
    left.barh(y, [min(r.epsilon_lower_bound, 5.0) for r in results], color=colors)
    left.scatter([r.claim.epsilon for r in results], y, marker="|", s=200, color="black",
                 label="claimed ε", zorder=3)  # fmt: skip
    left.set_xlabel("empirical ε lower bound (bar), claimed ε (|)")
    left.legend(loc="lower right")
    right.barh(y, [r.power for r in results], color=colors)
    right.axvline(0.9, color="black", linestyle="--", label="0.9")
    right.set_xlabel("estimated power (broken: ≥ 0.9)")
    right.set_xlim(0.0, 1.0)
    right.legend(loc="lower right")
    left.set_yticks(y, names)
    left.invert_yaxis()
    fig.suptitle("spark-dp audit: red = fails its claim")
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
