"""The goals table of issue 36 (``python -m bench.tuning_report``) on known figures."""

from __future__ import annotations

import json

from bench.tuning_report import report
from spark_dp.partition_selection.preview import MODELS

GRID = (1, 3, 10, 30, 100, 300, 1000)


def _detail() -> dict:
    basic = {1: 10, 3: 30, 10: 100, 30: 200, 100: 150, 300: 120, 1000: 100}
    mad2r = {1: 10, 3: 30, 10: 90, 30: 180, 100: 175, 300: 100, 1000: 90}
    runs = {
        "chosen": [30, 100],
        "auto_seconds": [3.0, 5.0],
        "fixed_seconds_at_chosen": [2.0, 2.0],
        "choice_stage_seconds": [1.0, 1.0],
    }
    predictions = [
        {"algorithm": "basic", "max_contributions": c, "predicted_items": 1.1 * n,
         "interval": [0.9 * n, 1.2 * n]}
        for c, n in basic.items()
    ] + [
        {"algorithm": "mad2r", "max_contributions": c, "predicted_items": n,
         "interval": [n + 1, n + 2]}
        for c, n in basic.items()
    ]  # fmt: skip
    return {
        "dataset": "toy",
        "grid": list(GRID),
        "keys": 2,
        "fixed": {
            "basic": {str(c): [n - 1, n + 1] for c, n in basic.items()},
            "mad2r": {str(c): [n] for c, n in mad2r.items()},
        },
        "auto": {
            "basic": {**runs, "items": [190, 170]},
            "mad2r": {**runs, "items": [160, 170]},
        },
        "preview": {"0.2": {"predictions": predictions, "seconds": 4.0}},
    }


def test_report_states_each_goal_from_the_means(tmp_path):
    (tmp_path / "toy.json").write_text(json.dumps(_detail()))
    (tmp_path / "other.json").write_text(json.dumps({"no": "tuning detail"}))
    empty = _detail()
    empty["dataset"] = "void"
    for algorithm in ("basic", "mad2r"):
        empty["fixed"][algorithm] = {str(c): [0] for c in GRID}
        empty["auto"][algorithm]["items"] = [0, 0]
    (tmp_path / "void.json").write_text(json.dumps(empty))
    text = report(tmp_path)
    assert "(Basic's sweep and the auto runs; MAD2R's sweep): toy 2/1, void 2/1." in text
    # Basic: best 200 at 30, 100 gives 150 (not within 10%), auto mean 180 -> 0.900, beats 150.
    assert "| toy | basic | 200 at 30 | 150 | 180 (30,100) | 0.900 | 0.875 | True |" in text
    # MAD2R: best 180 at 30, 100 gives 175 (within 10%), auto mean 165 -> 0.917; the chosen
    # 30 and 100 give (180 + 175)/2 / 180 = 0.986 at the whole ε (Basic: 175 / 200 = 0.875).
    assert (
        "| toy | mad2r | 180 at 30 | 175 | 165 (30,100) | 0.917 | 0.986 | n/a (100 within 10%) |"
        in text
    )
    assert "2.0 / 4.0 (+2.0; choice stage 1.0)" in text
    assert "| void | basic | 0 at 1 | 0 | 0 (30,100) | – (none released) | – | n/a" in text
    # Preview: Basic +10% everywhere with >= 20 items and inside its interval at every Δ0.
    assert "| toy | 0.2 | basic | 3: +10%; 10: +10%; 30: +10%; 100: +10%; 300: +10%; " in text
    assert "| 7/7 | 4.0 |" in text
    # MAD2R's predictions are the current model applied to Basic's (the detail file's own
    # MAD2R rows, written under another model, are not read): 1.1·n·factor(c) against the
    # actual mean, inside when 0.9·n·low ≤ actual ≤ 1.2·n·high.
    basic = {1: 10, 3: 30, 10: 100, 30: 200, 100: 150, 300: 120, 1000: 100}
    mad2r = {1: 10, 3: 30, 10: 90, 30: 180, 100: 175, 300: 100, 1000: 90}
    model = MODELS["mad2r"]
    cells = "; ".join(
        f"{c}: {1.1 * basic[c] * model.at(c)[0] / mad2r[c] - 1:+.0%}" for c in GRID if c > 1
    )
    inside = sum(
        0.9 * basic[c] * model.at(c)[1] <= mad2r[c] <= 1.2 * basic[c] * model.at(c)[2] for c in GRID
    )
    assert f"| toy | 0.2 | mad2r | {cells} | {inside}/7 | 4.0 |" in text
    assert 0 < inside < 7  # the case tells an interval that holds from one that does not
    # MAD2R / Basic by Δ0 where both have >= 20 items (3..1000), beside the model there.
    f, lo, hi = model.at(100)
    assert f"| 100 | 1 | 1.17 | [1.17, 1.17] | {f:.2f} [{lo:.2f}, {hi:.2f}] |" in text
    rows = text.split("## The preview's MAD2R model")[1]
    assert "\n| 3 | 1 | 1.00 |" in rows and "\n| 1 | " not in rows  # Δ0 = 1: 10 items
