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
    with registry["basic-l1"].run(pairs, plan, Randomness.create(1).bind("test")) as selection:
        items = {r["item"] for r in selection.items.collect()}
        assert items == {"popular"}  # 1000 users hold it; singletons never cross ρ ≈ 20.8
        info = selection.report_info()
    assert info["rounds"][0]["sigma"] == plan.steps[0].calibration.to_report()["sigma"]


def _layout_section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]


def _named_modules(section: str) -> set[str]:
    """``spark_dp/<pkg>/<module>.py`` for every module a bullet of the section names: a bullet
    opens with its folder (`spark_dp/x/`) and names its modules in backticks."""
    named = set()
    for bullet in re.split(r"\n- ", "\n" + section):
        tokens = re.findall(r"`([^`]+)`", bullet)
        if not tokens or not tokens[0].startswith("spark_dp/"):
            continue
        folder = tokens[0].rstrip("/")
        named |= {f"{folder}/{t}" for t in tokens[1:] if re.fullmatch(r"\w+\.py", t)}
    return named


def test_the_readme_layout_names_every_module_and_nothing_that_is_gone():
    section = _layout_section()
    named = _named_modules(section)
    modules = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "spark_dp").rglob("*.py")
        if p.name != "__init__.py"
    }
    assert modules - named == set(), "modules missing from the README's layout section"
    assert named - modules == set(), "the README's layout section names modules that are gone"
    packages = {p.parent.relative_to(ROOT).as_posix() for p in (ROOT / "spark_dp").rglob("*.py")}
    for package in packages - {"spark_dp"}:
        assert f"`{package}/`" in section, package
    for path in re.findall(r"`((?:jobs|conf|tests|bench|notebooks|\.ci)/[\w./]*)`", section):
        assert (ROOT / path).exists(), path
