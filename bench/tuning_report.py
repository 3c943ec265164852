"""``python -m bench.tuning_report``: the tables of issue 36's goals from the tuning cases' detail.

Reads ``DIR/<dataset>.json`` (written by ``bench/cases/tuning.py``; ``DIR`` is
``bench/results/tuning`` by default, ``bench/results/tuning-quick`` at the quick scale) and
writes ``DIR/goals.md``: per dataset, the fixed sweeps of Basic and MAD2R (mean
released items per Δ0 over the keys), the auto runs against the best fixed Δ0 and the default
100, what the choice added to the run's seconds, and the preview's predictions against the mean
actual release; last, the ratios MAD2R/Basic that the preview's model rests on
(:data:`spark_dp.partition_selection.preview.MODELS`).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

from bench.harness import RESULTS_DIR

__all__ = ["main", "report"]

MIN_ITEMS = 20
"""Relative errors and ratios are reported where the mean actual release has at least this many
items (a relative error of 3 items against 5 says nothing)."""


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def _fixed(detail: dict[str, Any], algorithm: str) -> dict[int, float]:
    return {int(c): _mean(v) for c, v in detail["fixed"][algorithm].items()}


def _mad2r_keys(detail: dict[str, Any]) -> int:
    return len(next(iter(detail["fixed"]["mad2r"].values())))


def _goal_rows(detail: dict[str, Any]) -> list[str]:
    rows = []
    for algorithm in ("basic", "mad2r"):
        fixed = _fixed(detail, algorithm)
        best = max(fixed, key=lambda c: fixed[c])
        runs = detail["auto"][algorithm]
        auto = _mean(runs["items"])
        default_ok = fixed[100] >= 0.9 * fixed[best]
        beats_default = "n/a (100 within 10%)" if default_ok else f"{auto > fixed[100]}"
        ratio = f"{auto / fixed[best]:.3f}" if fixed[best] else "– (none released)"
        at_chosen = _mean([fixed[int(c)] for c in runs["chosen"]])  # the choice's own loss
        choice = f"{at_chosen / fixed[best]:.3f}" if fixed[best] else "–"
        extra = _mean(runs["auto_seconds"]) - _mean(runs["fixed_seconds_at_chosen"])
        rows.append(
            f"| {detail['dataset']} | {algorithm} | {fixed[best]:.0f} at {best} | "
            f"{fixed[100]:.0f} | {auto:.0f} ({','.join(map(str, runs['chosen']))}) | "
            f"{ratio} | {choice} | {beats_default} | "
            f"{_mean(runs['fixed_seconds_at_chosen']):.1f} / {_mean(runs['auto_seconds']):.1f} "
            f"({extra:+.1f}; choice stage {_mean(runs['choice_stage_seconds']):.1f}) |"
        )
    return rows


def _predictions(preview: dict[str, Any], algorithm: str) -> list[dict[str, Any]]:
    """The preview's predictions for ``algorithm`` under the package's current model: the
    model applied to Basic's (its estimate Ŝ(c) and interval; post-processing, as
    :func:`spark_dp.partition_selection.preview.predict`), so a detail file written under an
    earlier model is read with today's."""
    from spark_dp.partition_selection.preview import MODELS

    out = []
    for p in preview["predictions"]:
        if p["algorithm"] != "basic":
            continue
        factor, low, high = MODELS[algorithm].at(p["max_contributions"])
        out.append(
            {
                "max_contributions": p["max_contributions"],
                "predicted_items": factor * p["predicted_items"],
                "interval": [low * p["interval"][0], high * p["interval"][1]],
            }
        )
    return out


def _preview_rows(detail: dict[str, Any]) -> list[str]:
    rows = []
    for eps, preview in detail["preview"].items():
        for algorithm in ("basic", "mad2r"):
            fixed = _fixed(detail, algorithm)
            cells, inside = [], 0
            for p in _predictions(preview, algorithm):
                actual = fixed[p["max_contributions"]]
                low, high = p["interval"]
                inside += low <= actual <= high
                if actual >= MIN_ITEMS:
                    cells.append(
                        f"{p['max_contributions']}: {p['predicted_items'] / actual - 1:+.0%}"
                    )
            rows.append(
                f"| {detail['dataset']} | {eps} | {algorithm} | {'; '.join(cells) or '–'} | "
                f"{inside}/{len(fixed)} | {preview['seconds']:.1f} |"
            )
    return rows


def _ratios(details: list[dict[str, Any]]) -> dict[int, list[float]]:
    """MAD2R / Basic of the fixed sweeps' means, by Δ0, where both release enough items."""
    out: dict[int, list[float]] = {}
    for detail in details:
        basic, mad2r = _fixed(detail, "basic"), _fixed(detail, "mad2r")
        for c in basic:
            if min(basic[c], mad2r[c]) >= MIN_ITEMS:
                out.setdefault(c, []).append(mad2r[c] / basic[c])
    return dict(sorted(out.items()))


def _shares(details: list[dict[str, Any]]) -> str:
    """'share s, selection ε e (algorithm)' for each distinct setting of the auto runs."""
    seen = []
    for d in details:
        for algorithm, runs in d["auto"].items():
            share = runs.get("tuning_share", 0.1)  # detail files of the first runs: 0.1
            eps = runs.get("selection_epsilon", 1.0 - share)
            text = f"share {share:g}, selection ε {eps:.4f} ({algorithm})"
            if text not in seen:
                seen.append(text)
    return "; ".join(seen)


def report(directory: Path) -> str:
    """The Markdown tables of every ``<dataset>.json`` in ``directory``."""
    details = [json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))]
    details = [d for d in details if "fixed" in d]
    lines = [
        "# `--max-contributions auto` and `spark-dp preview`: the goals of issue 36",
        "",
        "ε = 1, δ = 1e-5, grid {1, 3, 10, 30, 100, 300, 1000}; auto's tuning share and the "
        "selection's ε: " + _shares(details) + ".",
        "Generated by `python -m bench.tuning_report` from the tuning cases' detail files; keys "
        "per dataset (Basic's sweep and the auto runs; MAD2R's sweep): "
        + ", ".join(f"{d['dataset']} {d['keys']}/{_mad2r_keys(d)}" for d in details)
        + ".",
        "",
        "## auto against the best fixed Δ0 (that Δ0 with the whole ε)",
        "",
        "'fixed at ĉ / best': the fixed sweep's mean at each chosen Δ0 (whole ε) over the best, "
        "the loss of the choice alone; auto / best also pays the tuning share.",
        "",
        "| dataset | algorithm | best fixed | fixed 100 | auto (chosen) | auto / best | "
        "fixed at ĉ / best | auto > 100? | seconds: fixed at ĉ / auto |",
        "|---|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for detail in details:
        lines += _goal_rows(detail)
    lines += [
        "",
        "## preview: predicted against the mean actual release (same algorithm and Δ0)",
        "",
        f"Relative error per Δ0 where the actual mean has at least {MIN_ITEMS} items; "
        "'inside': candidates whose actual mean lies in the printed interval.",
        "",
        "| dataset | ε_p | algorithm | error by Δ0 | inside | seconds |",
        "|---|---|---|---|---|---:|",
    ]
    for detail in details:
        lines += _preview_rows(detail)
    ratios = _ratios(details)
    if ratios:
        from spark_dp.partition_selection.preview import MODELS

        lines += [
            "",
            "## The preview's MAD2R model",
            "",
            f"MAD2R / Basic (fixed runs, same Δ0, both ≥ {MIN_ITEMS} items) by Δ0, and the "
            "model's factor [low, high] there (`spark_dp/partition_selection/preview.py`).",
            "",
            "| Δ0 | cells | median | range | model |",
            "|---:|---:|---:|---|---|",
        ]
        for c, r in ratios.items():
            factor, low, high = MODELS["mad2r"].at(c)
            lines.append(
                f"| {c} | {len(r)} | {statistics.median(r):.2f} | [{min(r):.2f}, {max(r):.2f}] "
                f"| {factor:.2f} [{low:.2f}, {high:.2f}] |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.tuning_report [DIR]``: write ``DIR/goals.md`` (default
    ``bench/results/tuning``; the quick scale's is ``bench/results/tuning-quick``)."""
    args = sys.argv[1:] if argv is None else argv
    directory = Path(args[0]) if args else RESULTS_DIR / "tuning"
    (directory / "goals.md").write_text(report(directory))
    print((directory / "goals.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
