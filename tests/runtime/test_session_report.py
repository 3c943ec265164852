"""Session reuse, GraphFrames detection, the privacy report builder, the package surface."""

from __future__ import annotations

import importlib
import json

import pytest

import spark_dp
from spark_dp.report import PrivacyReport
from spark_dp.session import get_session, graphframes_available


def test_active_session_is_reused(spark):
    assert get_session("other", {"spark.sql.shuffle.partitions": "99"}) is spark
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"  # a caller's conf is kept


def test_graphframes_detection_is_consistent(spark):
    try:
        importlib.import_module("graphframes")
        python_ok = True
    except ImportError:
        python_ok = False
    try:
        spark.sparkContext._jvm.java.lang.Class.forName("org.graphframes.GraphFrame")
        jar_ok = True
    except Exception:
        jar_ok = False
    assert graphframes_available(spark) == (python_ok and jar_ok)


def test_report_sums_budget_and_holds_public_fields(tmp_path):
    r = PrivacyReport("demo", "user-level (ε, δ)-DP")
    r.spend("round 1", 0.1, 1e-6, sigma=37.8)
    r.spend("round 2", 0.9, 9e-6)
    r.note("Round 1 ran Basic.")
    r.outputs["items"] = 3
    d = r.to_dict()
    assert d["privacy"]["epsilon_spent"] == pytest.approx(1.0)
    assert d["privacy"]["delta_spent"] == pytest.approx(1e-5)
    assert d["privacy"]["steps"][0] == {
        "label": "round 1",
        "epsilon": 0.1,
        "delta": 1e-6,
        "sigma": 37.8,
    }
    assert d["software"]["spark_dp"] == spark_dp.__version__
    path = tmp_path / "r.json"
    r.write(str(path))
    assert json.loads(path.read_text())["outputs"] == {"items": 3}


def test_package_all_matches_its_imports():
    for name in (
        "spark_dp.dp.calibration",
        "spark_dp.randomness",
        "spark_dp.io",
        "spark_dp.config",
        "spark_dp.checks",
        "spark_dp.errors",
        "spark_dp.report",
        "spark_dp.session",
        "spark_dp.generators",
    ):
        mod = importlib.import_module(name)
        for exported in mod.__all__:
            assert hasattr(mod, exported), f"{name}.__all__ lists missing {exported}"
