"""``spark-dp preview``: its plan, its statistics against exact small cases, their noise, the
predictions and the job's one charge (docs/design/tuning.md#preview)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from spark_dp.budget import BudgetStore, noise_steps
from spark_dp.errors import ParameterError
from spark_dp.jobs import preview as preview_job
from spark_dp.partition_selection import PreviewParams, preview_partitions
from spark_dp.partition_selection.auto.calibration import TERM_SCALE, score_sensitivity
from spark_dp.partition_selection.capping import ranked_cap
from spark_dp.partition_selection.columns import CAP_RANK, ITEM, USER_ID
from spark_dp.partition_selection.preview import (
    MODELS,
    QUANTUM,
    RULE,
    Prediction,
    Preview,
    best_rows,
    plan_preview,
    preview_table,
    preview_view,
    recommend,
)
from spark_dp.randomness import Randomness
from spark_dp.randomness.key_file import write_key_file
from tests.reference import partition_selection as ref


def test_the_plan_splits_epsilon_by_sensitivity():
    plan = plan_preview(PreviewParams(epsilon=0.3, tuning_candidates=(1, 10, 100)))
    stats = plan.statistics
    assert plan.epsilon == pytest.approx(0.3) and plan.delta == 0.0
    sens = [score_sensitivity(s.max_contributions, s.basic.sigma) for s in stats]
    units = [math.ceil(QUANTUM * d) + 1 for d in sens]
    assert [s.sensitivity_units for s in stats] == units
    assert [s.epsilon for s in stats] == pytest.approx([0.3 * u / sum(units) for u in units])
    assert len({round(s.scale, 9) for s in stats}) == 1  # the same noise scale in items
    assert [n.kind for n in noise_steps(plan.steps)] == ["discrete_laplace"] * 3
    assert stats[1].basic.sigma == pytest.approx(3.8838, rel=1e-4)  # Basic at (1, 1e-5)


def test_the_released_statistic_has_its_stated_noise():
    # exact discrete Laplace of scale ⌈QΔ⌉+1 / ε_c units: its variance is 2p/(1 − p)², p = e^(−1/b)
    (stat,) = plan_preview(PreviewParams(epsilon=0.05, tuning_candidates=(30,))).statistics
    root = Randomness.create(3).bind("test-preview")
    total = 500 * TERM_SCALE
    draws = np.array([stat.release(total, root.child("n", k).driver()) for k in range(4000)])
    b = stat.sensitivity_units / stat.epsilon
    p = math.exp(-1.0 / b)
    variance = 2 * p / (1 - p) ** 2 / QUANTUM**2
    assert abs(draws.mean() - 500) < 4 * math.sqrt(variance / 4000)
    assert draws.var() == pytest.approx(variance, rel=0.15)  # a noise off by 2x fails
    assert (np.abs(draws - 500) >= stat.noise_bound()).mean() <= 0.05 + 0.01


def _pairs(spark, sets: dict):
    rows = [(u, i) for u, items in sets.items() for i in items]
    return spark.createDataFrame(rows, f"{USER_ID} string, {ITEM} string")


def test_the_estimates_are_the_expected_counts_of_a_small_exact_case(spark):
    rng = np.random.default_rng(5)
    pool = [f"p{k}" for k in range(6)] + [f"r{k}" for k in range(30)]
    sets = {f"u{u}": list(rng.choice(pool, int(rng.integers(1, 8)), False)) for u in range(400)}
    pairs = _pairs(spark, sets)
    params = PreviewParams(epsilon=100.0, release_epsilon=8.0, release_delta=1e-3)
    plan = plan_preview(params)
    randomness = Randomness.create(9).bind("test-preview")
    result = preview_partitions(pairs, plan, randomness, validate=False)
    ranked = ranked_cap(pairs, max(plan.candidates), randomness.child("capping", 1))
    lists: dict = {}
    for r in sorted(ranked.collect(), key=lambda r: (r[USER_ID], r[CAP_RANK])):
        lists.setdefault(r[USER_ID], []).append(r[ITEM])
    stats = plan.statistics
    want = ref.tuning_totals(
        lists, plan.candidates, stats[0].basic.sigma, [s.basic.rho for s in stats]
    )
    for got, total, stat in zip(result.estimates, want, stats, strict=True):
        exact = total / TERM_SCALE
        assert abs(got - exact) <= 40 / QUANTUM + 8 * stat.scale  # ±36 terms of 2^−32, noise
    assert result.estimates[-1] > 5  # the case releases items: the comparison means something
    # Basic's estimate is its expected number of released items (up to Φ(−ρ/σ) per item)
    doc = result.to_dict()
    assert [p["algorithm"] for p in doc["predictions"]][:1] == ["basic"]
    assert doc["recommended"]["max_contributions"] in plan.candidates


def test_a_model_interpolates_its_measured_factors_in_log_delta0():
    model = MODELS["mad2r"]
    (c0, f0, *_), (c1, f1, *_) = model.points[1], model.points[2]
    assert model.at(c0)[0] == f0 and model.at(c1)[0] == f1
    middle = round(math.sqrt(c0 * c1))  # halfway in log Δ0
    expected = f0 + (f1 - f0) * math.log(middle / c0) / math.log(c1 / c0)
    assert model.at(middle)[0] == pytest.approx(expected)
    assert model.at(10**6) == model.points[-1][1:] and model.at(1) == model.points[0][1:]
    for c in (1, 2, 3, 7, 10, 20, 30, 100, 5000):
        factor, low, high = model.at(c)
        assert low <= factor <= high


def test_predictions_are_the_models_of_the_estimates():
    plan = plan_preview(PreviewParams(epsilon=0.5, tuning_candidates=(3, 30)))
    result = Preview(plan, (100.0, 400.0))
    by = {(p.algorithm, p.max_contributions): p for p in result.predictions}
    assert by[("basic", 30)].items == 400.0
    assert by[("mad2r", 30)].items == pytest.approx(MODELS["mad2r"].at(30)[0] * 400.0)
    assert by[("mad2r", 3)].items == pytest.approx(MODELS["mad2r"].at(3)[0] * 100.0)
    for p in result.predictions:
        assert p.low <= p.items <= p.high
    basic = by[("basic", 3)]
    half = plan.statistics[0].noise_bound() + 2 * math.sqrt(100.0)
    assert (basic.low, basic.high) == pytest.approx((100 - half, 100 + half))
    best = result.recommended
    assert best.items == max(p.items for p in result.predictions) and best.max_contributions == 30
    assert f"recommended: --algorithm {best.algorithm} --max-contributions 30" in result.table()


def _row(algorithm: str, c: int, items: float) -> Prediction:
    return Prediction(algorithm, c, items, items - 1, items + 1)


def test_the_best_row_of_each_algorithm_and_the_recommendation_follow_the_stated_rule():
    rows = [
        _row("basic", 1, 90.0),
        _row("basic", 3, 120.2),
        _row("basic", 10, 119.8),  # 120 items as printed: a tie, the smaller Δ0 wins
        _row("mad2r", 1, 50.0),
        _row("mad2r", 10, 120.0),  # ties basic's best: the simpler algorithm wins
        _row("dp-sips", 3, 110.0),
        _row("dp-sips", 30, 100.0),
    ]
    best = best_rows(rows)
    assert [(p.algorithm, p.max_contributions) for p in best] == [
        ("basic", 3),
        ("mad2r", 10),
        ("dp-sips", 3),
    ]
    assert (recommend(rows).algorithm, recommend(rows).max_contributions) == ("basic", 3)
    # one more item predicted beats simplicity and Δ0
    more = [*rows, _row("mad2r", 30, 121.0)]
    assert (recommend(more).algorithm, recommend(more).max_contributions) == ("mad2r", 30)
    # mad is simpler than dp-sips, and dp-sips than mad2r
    tie = [_row("mad2r", 1, 7.0), _row("dp-sips", 1, 7.0), _row("mad", 3, 7.0)]
    assert recommend(tie).algorithm == "mad"
    assert recommend(tie[:2]).algorithm == "dp-sips"


def test_the_table_shows_the_best_rows_by_default_and_the_grid_with_all():
    plan = plan_preview(PreviewParams(epsilon=0.5, tuning_candidates=(3, 30, 100)))
    doc = Preview(plan, (100.0, 400.0, 380.0)).to_dict()
    assert len(doc["predictions"]) == 3 * len(MODELS)  # the report keeps the whole grid
    assert [p["algorithm"] for p in doc["best"]] == list(plan.algorithms)
    assert {p["max_contributions"] for p in doc["best"] if p["algorithm"] == "basic"} == {30}

    def rows(text: str) -> list[str]:
        return [ln for ln in text.splitlines() if ln.split()[0] in MODELS]

    short, full = preview_table(doc), preview_table(doc, all_rows=True)
    assert len(rows(short)) == len(MODELS) and len(rows(full)) == 3 * len(MODELS)
    assert "best Δ0 of each algorithm (--all: all)" in short and "every (algorithm, Δ0)" in full
    for text in (short, full):
        last = text.splitlines()[-1]
        assert last.startswith(f"recommended: --algorithm {doc['recommended']['algorithm']} ")
        assert RULE in last
    view = preview_view(doc)
    assert view["predictions"] == doc["best"] and view["rows"] == "best per algorithm"
    assert "best" not in view and view["recommended"] == doc["recommended"]
    every = preview_view(doc, all_rows=True)
    assert every["predictions"] == doc["predictions"] and every["rows"] == "all"


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ({"algorithms": ("basic", "truncated-geometric")}, "algorithms"),
        ({"tuning_candidates": ()}, "tuning_candidates"),
        ({"release_delta": 0.9}, "release_delta"),
        ({"epsilon": 0.0}, "epsilon"),
    ],
)
def test_bad_preview_parameters_name_the_problem(values, match):
    with pytest.raises(ParameterError, match=match):
        PreviewParams(**values)


@pytest.fixture(scope="module")
def words(spark, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("preview_job")
    rows = [(f"u{u}", f"w{(u * 7 + k) % 40}") for u in range(300) for k in range(3)]
    spark.createDataFrame(rows, "user_id string, item string").write.parquet(str(root / "words"))
    return root / "words"


def test_the_preview_job_prints_its_table_and_json_and_is_charged_once(words, tmp_path, capsys):
    store = f"sqlite:///{tmp_path / 'budget.db'}"
    with BudgetStore.open(store) as s:
        s.set_cap("words", 0.5, 1e-3)
    key = tmp_path / "key"
    write_key_file(key)
    argv = ["--input", str(words), "--epsilon", "0.3", "--budget-store", store]
    argv += ["--dataset-id", "words", "--log-level", "WARNING"]
    report = tmp_path / "preview.json"
    assert preview_job.main([*argv, "--noise-key-file", str(key), "--report", str(report)]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0]  # what it spent, and the release its predictions are for
    assert header.startswith("preview: spent ε=0.3 (--epsilon")
    assert "predictions for a release at ε=1, δ=1e-05 (--release-epsilon" in header
    assert out.splitlines()[-1].startswith("recommended: --algorithm")
    assert sum(ln.split()[0] in MODELS for ln in out.splitlines()) == len(MODELS)  # best rows
    doc = json.loads(report.read_text())
    assert doc["budget"]["charged"] and doc["budget"]["epsilon"] == pytest.approx(0.3)
    assert doc["privacy"]["epsilon_spent"] == pytest.approx(0.3)
    assert len(doc["privacy"]["steps"]) == 7 and doc["outputs"]["preview"]["predictions"]
    with BudgetStore.open(store) as s:
        assert len(s.runs("words")) == 1
    # 0.3 + 0.3 > 0.5: refused with exit 3 where no JVM can start, so before any read
    done = subprocess.run(
        [sys.executable, "-m", "spark_dp", "preview", *argv, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, JAVA_HOME=str(tmp_path / "no-java")),
    )
    assert done.returncode == 3 and "budget refused" in done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr


def test_the_preview_job_prints_json_for_scripts(words, tmp_path, capsys):
    argv = ["--input", str(words), "--epsilon", "0.3", "--json", "--seed", "4", "--all"]
    report = tmp_path / "preview.json"
    assert preview_job.main([*argv, "--log-level", "WARNING", "--report", str(report)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) >= {"estimates", "predictions", "recommended", "release"}
    assert doc["rows"] == "all" and len(doc["predictions"]) == 7 * len(MODELS)
    assert {p["algorithm"] for p in doc["predictions"]} == set(MODELS)
    # without --all the same release prints each algorithm's best row, as its report holds them
    kept = json.loads(report.read_text())["outputs"]["preview"]
    assert doc["predictions"] == kept["predictions"] and "best" not in doc
    assert preview_view(kept)["predictions"] == kept["best"]
    assert [p["algorithm"] for p in kept["best"]] == sorted(MODELS)
    assert Fraction(doc["preview_epsilon"]).limit_denominator(1000) == Fraction(3, 10)
