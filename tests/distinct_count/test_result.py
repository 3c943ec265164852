"""DistinctCountResult.fill_report: steps from the calibrations, released values, no leaks."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from spark_dp.distinct_count import DistinctCountParams, DistinctCountResult, release_curve
from spark_dp.distinct_count.registry import REGISTRY, curve_method
from spark_dp.randomness import Randomness
from spark_dp.report import PrivacyReport, Step

ELL_MAX = 30
# A private curve whose values appear nowhere else: no public parameter or DP output equals one.
# Its values are 10,007 apart, so a released c(D; ℓ̂) + noise (scale 2ℓ̂/ε ≤ 60 here) cannot
# land on another ℓ's value unless the noise exceeds 166 scales.
CURVE = 987_601 + 10_007 * np.arange(ELL_MAX, dtype=np.int64)
RELEASED = {
    "estimate",
    "ell",
    "lower_bound",
    "lower_bound_clamped",
    "epsilon",
    "beta",
    "max_contributions",
    "method",
}


def _result(method: str = "greedy", epsilon: float = 1.0, seed: int = 3) -> DistinctCountResult:
    params = DistinctCountParams(epsilon=epsilon, method=method, max_contributions=ELL_MAX)
    plan = REGISTRY[method].plan(params)
    release = release_curve(CURVE, plan, Randomness.create(seed))
    return DistinctCountResult(plan, release, curve_method(method).count_function, CURVE)


def _filled(result: DistinctCountResult) -> dict[str, Any]:
    report = PrivacyReport("distinct_count")
    result.fill_report(report)
    out: dict[str, Any] = json.loads(json.dumps(report.to_dict(), default=str))
    return out


def _numbers(value: Any) -> Iterator[float]:
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, list):
        for v in value:
            yield from _numbers(v)


@pytest.mark.parametrize("method", ["exact", "greedy"])
def test_steps_are_the_calibration_objects_own_entries(method: str) -> None:
    result = _result(method, epsilon=2.0)
    steps = _filled(result)["privacy"]["steps"]
    select, count = result.plan.steps
    expected = [
        select.to_report(),
        Step(count.label, result.plan.count.at(result.release.ell)).to_report(),
    ]
    assert steps == json.loads(json.dumps(expected))
    assert [s["epsilon"] for s in steps] == [1.0, 1.0]
    assert steps[0]["label"] == "GEM selection of the contribution bound ℓ"
    assert steps[1]["label"] == "discrete Laplace release of c(D; ℓ̂)"
    assert steps[1]["sensitivity"] == result.release.ell
    assert steps[1]["scale"] == pytest.approx(2 * result.release.ell / 2.0)
    assert steps[1]["lower_bound_shift"] == pytest.approx(result.release.shift)


def test_budget_and_mechanism_come_from_the_plan() -> None:
    result = _result(epsilon=3.0)
    report = _filled(result)
    privacy = report["privacy"]
    assert privacy["epsilon_spent"] == 3.0 and privacy["delta_spent"] == 0.0
    mechanism = privacy["mechanism"]
    assert mechanism["epsilon_total"] == 3.0
    assert mechanism["epsilon_select"] == result.plan.select.epsilon == 1.5
    assert mechanism["epsilon_count"] == result.plan.count.epsilon == 1.5
    assert mechanism["count_function"] == curve_method("greedy").count_function
    assert mechanism["lower_bound_shift"] == result.release.shift
    assert mechanism["noise_scale"] == result.release.noise_scale == 2 * result.release.ell / 3.0
    assert "one person" in mechanism["neighbouring"]


def test_released_values_are_the_release() -> None:
    result = _result()
    report = _filled(result)
    r = result.release
    assert {k: report[k] for k in RELEASED} == {
        "estimate": r.estimate,
        "ell": r.ell,
        "lower_bound": r.lower_bound,
        "lower_bound_clamped": r.lower_bound_clamped,
        "epsilon": 1.0,
        "beta": 0.05,
        "max_contributions": ELL_MAX,
        "method": "greedy",
    }
    assert report["estimate"] == pytest.approx(report["lower_bound"] + r.shift)
    assert any("lower_bound is ν̂" in note for note in report["notes"])


@pytest.mark.parametrize("method", ["exact", "greedy"])
def test_nothing_private_in_the_report(method: str) -> None:
    result = _result(method)
    report = _filled(result)
    assert RELEASED <= set(report)
    private = {float(v) for v in CURVE} | {float(v) for v in result.plan.scores(CURVE)}
    assert not private & set(_numbers(report))
    text = json.dumps(report)
    for key in ("curve", "scores", "true_count", "selection_probabilities", "NONPRIVATE"):
        assert f'"{key}"' not in text
    assert "987601" not in repr(result) and str(CURVE[-1]) not in repr(result)


def test_debug_payload_is_labelled_and_holds_the_private_values() -> None:
    result = _result()
    payload = result.debug_payload(true_count=int(CURVE[-1]) + 39)
    assert payload["NONPRIVATE"] is True and "do not publish" in payload["warning"]
    assert payload["curve"] == CURVE.tolist() and payload["true_count"] == int(CURVE[-1]) + 39
    assert payload["scores"] == pytest.approx(result.plan.scores(CURVE).tolist())
    assert sum(payload["selection_probabilities"]) == pytest.approx(1.0)
    assert 1 <= payload["argmax_score_ell"] <= ELL_MAX
    assert payload["release"] == result.release.to_dict()
    assert math.isfinite(payload["release"]["lower_bound"])
