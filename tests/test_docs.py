"""The docs run: CONTRIBUTING's worked example of a new algorithm works as written."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

from pyspark.sql import functions as F

from spark_dp.partition_selection import PartitionSelectionParams
from spark_dp.randomness import Randomness
from spark_dp.registry import Algorithm, Registry

ROOT = Path(__file__).resolve().parents[1]


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), re.S)


def test_contributing_worked_example_adds_an_algorithm(spark, monkeypatch):
    module_src, entry_src = python_blocks(ROOT / "CONTRIBUTING.md")[:2]
    assert module_src.startswith("# spark_dp/partition_selection/basic_l1.py")
    module = types.ModuleType("spark_dp.partition_selection.basic_l1")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(module_src, "basic_l1.py", "exec"), module.__dict__)
    namespace = {"Algorithm": Algorithm, "basic_l1": module}
    exec(compile(entry_src, "registry_entry.py", "exec"), namespace)
    entry = namespace["entry"]
    registry = Registry("partition-selection", [entry])
    assert registry.names == ("basic-l1",)

    params = PartitionSelectionParams(algorithm="basic", epsilon=1.0, delta=1e-5)
    plan = registry["basic-l1"].plan(params)
    assert plan.algorithm == "basic-l1" and plan.epsilon == 1.0
    pairs = spark.range(3000).select(
        F.concat(F.lit("u"), F.col("id").cast("string")).alias("user_id"),
        F.when(F.col("id") % 3 == 0, F.lit("popular"))
        .otherwise(F.concat(F.lit("solo"), F.col("id").cast("string")))
        .alias("item"),
    )
    with registry["basic-l1"].run(pairs, plan, Randomness.create(1)) as selection:
        items = {r["item"] for r in selection.items.collect()}
        assert items == {"popular"}  # 1000 users hold it; singletons never cross ρ ≈ 20.8
        info = selection.report_info()
    assert info["rounds"][0]["sigma"] == plan.steps[0].calibration.to_report()["sigma"]
