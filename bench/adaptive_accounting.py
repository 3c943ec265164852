"""What each accountant certifies for a realistic sequence of releases on one dataset.

docs/privacy/budget.md#what-the-filter-costs. The sequence a team runs against one dataset: a
preview (ε = 0.2, for a release at ε = 1), the ``--max-contributions auto`` release it leads
to, a distinct count, three more releases (MAD2R, Basic, DP-SIPS), each planned by the job's
own plan functions (driver-side, no Spark), charged as the job charges them. For one δ (the
cap's), the ε each accountant certifies for the whole sequence, after each release:

* ``basic``: Σ ε (a privacy filter: valid when each release is chosen from earlier ones);
* ``zcdp``: the zCDP filter (:mod:`spark_dp.dp.filters`), the smallest cap ε whose filter
  admits the sequence (valid for adaptive choices);
* ``pld`` / ``rdp``: what the store certified before (dp-accounting's PLD/RDP composition of the
  releases), valid only if no release's parameters were chosen from earlier outputs, which
  the preview-then-release workflow does not give; shown for comparison.

A second sequence, twenty Basic releases (Gaussian only), shows where the filter gains.

    python -m bench.adaptive_accounting [--delta 1e-5] [--out bench/results/adaptive_accounting]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from spark_dp.distinct_count.params import DistinctCountParams
from spark_dp.distinct_count.registry import REGISTRY as DC_REGISTRY
from spark_dp.dp.accounting import Charge, certified_epsilon, noise_steps, tight_epsilon
from spark_dp.partition_selection.params import PartitionSelectionParams, PreviewParams
from spark_dp.partition_selection.preview import plan_preview
from spark_dp.partition_selection.select import plan_selection

RESULTS = Path(__file__).resolve().parent / "results" / "adaptive_accounting"
DELTA = 1e-5
RELEASE_DELTA = 1e-6
ACCOUNTANTS = ("basic", "zcdp", "pld", "rdp")


def _charge(plan: Any) -> Charge:
    """What the job reserves for a plan (spark_dp.jobs.lease.planned_spend): its certificate's
    (ε, δ) when it has one, else the sums over its steps; and its steps' noise."""
    if getattr(plan, "composition", None) is not None:
        epsilon, delta = float(plan.epsilon), float(plan.delta)
    else:
        epsilon = math.fsum(s.epsilon for s in plan.steps)
        delta = math.fsum(s.delta for s in plan.steps)
    return Charge(epsilon, delta, noise_steps(plan.steps))


def _selection(algorithm: str, **kw: Any) -> Charge:
    base = PartitionSelectionParams(algorithm=algorithm, epsilon=1.0, delta=RELEASE_DELTA)
    params = replace(base, **kw)
    return _charge(plan_selection(params))


def realistic() -> list[tuple[str, Charge]]:
    """The sequence of the module docstring."""
    preview = plan_preview(PreviewParams(epsilon=0.2, release_epsilon=1.0, release_delta=1e-6))
    count = DC_REGISTRY["exact"].plan(DistinctCountParams(epsilon=1.0, max_contributions=10))
    return [
        ("preview (ε 0.2, pure)", _charge(preview)),
        ("Basic, Δ0 auto (ε 1, δ 1e-6)", _selection("basic", max_contributions="auto")),
        ("distinct count (ε 1, pure)", _charge(count)),
        ("MAD2R, Δ0 = 10 (ε 1, δ 1e-6)", _selection("mad2r", max_contributions=10)),
        ("Basic, Δ0 = 10 (ε 1, δ 1e-6)", _selection("basic", max_contributions=10)),
        ("DP-SIPS, Δ0 = 10 (ε 1, δ 1e-6)", _selection("dp-sips", max_contributions=10)),
    ]


def gaussian_only(n: int = 20) -> list[tuple[str, Charge]]:
    """``n`` Basic releases at ε = 1, δ = 1e-6 (Gaussian noise only)."""
    one = _selection("basic", max_contributions=10)
    return [(f"Basic #{k + 1}", one) for k in range(n)]


def certified(charges: list[Charge], delta: float) -> dict[str, float]:
    """The ε each accountant certifies for ``charges`` at δ (``inf``: none at that δ)."""
    return {
        "basic": certified_epsilon(charges, delta, "basic"),
        "zcdp": certified_epsilon(charges, delta, "zcdp"),
        "pld": tight_epsilon(charges, delta, "pld"),
        "rdp": tight_epsilon(charges, delta, "rdp"),
    }


def measure(sequence: list[tuple[str, Charge]], delta: float) -> list[dict[str, Any]]:
    """After each release: its (ε, δ) and the ε each accountant certifies so far."""
    rows, charges = [], []
    for label, charge in sequence:
        charges.append(charge)
        row = {"release": label, "epsilon": charge.epsilon, "delta": charge.delta}
        rows.append({**row, **certified(charges, delta)})
    return rows


def _cell(value: float) -> str:
    return "∞" if not math.isfinite(value) else f"{value:.3f}"


def markdown(tables: dict[str, list[dict[str, Any]]], delta: float) -> str:
    lines = [
        "# What each accountant certifies for a sequence of releases",
        "",
        f"`python -m bench.adaptive_accounting` (driver-side, no Spark). Total ε certified at "
        f"δ = {delta:g} after each release; basic and zcdp are privacy filters (valid when a "
        "release is chosen from earlier outputs), pld and rdp are what the store certified "
        "before, valid only for releases fixed in advance.",
    ]
    for title, rows in tables.items():
        lines += ["", f"## {title}", "", "| after | release (ε, δ) | " + " | ".join(ACCOUNTANTS)]
        lines[-1] += " |"
        lines.append("|---|---|" + "---:|" * len(ACCOUNTANTS))
        for row in rows:
            cells = " | ".join(_cell(row[a]) for a in ACCOUNTANTS)
            lines.append(
                f"| {row['release']} | {row['epsilon']:.3g}, {row['delta']:.2g} | {cells} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--delta", type=float, default=DELTA, help="the cap's δ (default 1e-5)")
    ap.add_argument("--out", type=Path, default=None, help="write results.md and results.json")
    ns = ap.parse_args(argv)
    tables = {
        "A preview, an auto release, a distinct count, three more releases": measure(
            realistic(), ns.delta
        ),
        "Twenty Basic releases (Gaussian noise only)": measure(gaussian_only(), ns.delta),
    }
    text = markdown(tables, ns.delta)
    if ns.out is not None:
        ns.out.mkdir(parents=True, exist_ok=True)
        (ns.out / "results.md").write_text(text, encoding="utf-8")
        doc = {"delta": ns.delta, "tables": tables}
        (ns.out / "results.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
