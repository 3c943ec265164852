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
from spark_dp.audit.runner import AuditResult
from spark_dp.io import write_json_atomic

__all__ = ["audit_document", "markdown_table", "plot_results", "write_json", "write_markdown"]


def audit_document(results: Sequence[AuditResult]) -> dict[str, Any]:
    """The JSON document: the version and one entry per audit."""
    return {
        "spark_dp_version": __version__,
        "what_it_shows": (
            "empirical lower bounds on epsilon and the measured novel-item release rate, "
            "against each mechanism's claim; a lower bound, not a proof of privacy"
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


def markdown_table(results: Sequence[AuditResult]) -> str:
    """One row per audit: claim, novel-item rate against its share, ε bound, verdict, time."""
    lines = [
        "| mechanism | claimed (ε, δ) | novel-item rate [lower bound] vs claimed share "
        "| empirical ε lower bound (δ share) | verdict | seconds |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        name = r.mechanism if r.change is None else f"{r.mechanism} ({r.change})"
        claim = f"({r.claim.epsilon:g}, {r.claim.delta:g})"
        if r.novel is None:
            novel = "–"
        else:
            n = r.novel
            novel = f"{n.released / n.runs:.3f} [{n.lower:.3f}] vs {n.share:g}"
        eps = f"{_fmt(r.epsilon.lower_bound)} ({r.epsilon.delta:g})"
        verdict = "pass" if r.passed else "**FAIL**"
        lines.append(f"| {name} | {claim} | {novel} | {eps} | {verdict} | {r.seconds:.0f} |")
    return "\n".join(lines) + "\n"


def plot_results(results: Sequence[AuditResult], path: str) -> bool:
    """Claimed vs empirical ε per mechanism, and the novel-item rates against their shares.

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
    names = [r.mechanism for r in results]
    y = list(range(len(results)))
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 0.45 * len(results) + 1.6), sharey=True)
    colors = ["tab:blue" if r.passed else "tab:red" for r in results]
    left.barh(y, [min(r.epsilon.lower_bound, 5.0) for r in results], color=colors)
    left.scatter([r.claim.epsilon for r in results], y, marker="|", s=300, color="black",
                 label="claimed ε", zorder=3)  # fmt: skip
    left.set_xlabel("empirical ε lower bound (bar) vs claimed ε")
    left.legend(loc="lower right")
    for k, r in enumerate(results):
        if r.novel is None:
            continue
        n = r.novel
        rate = n.released / n.runs
        right.errorbar(rate / n.share, k, xerr=[[(rate - n.lower) / n.share], [0.0]], fmt="o",
                       color=colors[k])  # fmt: skip
    right.axvline(1.0, color="black", linestyle="--", label="claimed share")
    right.set_xlabel("novel-item release rate / claimed δ share (with lower bound)")
    right.legend(loc="lower right")
    left.set_yticks(y, names)
    left.invert_yaxis()
    fig.suptitle("spark-dp audit: red = fails its claim")
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
