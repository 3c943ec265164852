"""The docs run: every snippet of the README and of ``docs/`` marked runnable executes,
CONTRIBUTING's worked example of a new algorithm works as written, the README's relative links
resolve, the module layout page names every module, the configuration reference is the one
the parsers generate, and the wheel's long description is the README."""

from __future__ import annotations

import email
import os
import re
import shutil
import subprocess
import sys
import types
import zipfile
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from spark_dp.dp.registry import Algorithm, Registry
from spark_dp.partition_selection import PartitionSelectionParams
from spark_dp.randomness import Randomness

ROOT = Path(__file__).resolve().parents[2]


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
    return (ROOT / "docs" / "reference" / "layout.md").read_text(encoding="utf-8")


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


def test_the_layout_page_names_every_module_and_nothing_that_is_gone():
    section = _layout_section()
    named = _named_modules(section)
    modules = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "spark_dp").rglob("*.py")
        if p.name != "__init__.py"
    }
    assert modules - named == set(), "modules missing from docs/reference/layout.md"
    assert named - modules == set(), "docs/reference/layout.md names modules that are gone"
    packages = {p.parent.relative_to(ROOT).as_posix() for p in (ROOT / "spark_dp").rglob("*.py")}
    for package in packages - {"spark_dp"}:
        assert f"`{package}/`" in section, package
    for path in re.findall(r"`((?:jobs|conf|tests|bench|notebooks|\.ci)/[\w./]*)`", section):
        assert (ROOT / path).exists(), path


# --------------------------------------------------------------------------- runnable snippets
MARKER = "<!-- docs-test: run -->"
SNIPPET = re.compile(re.escape(MARKER) + r"\n```(python|bash)\n(.*?)```", re.S)
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def runnable_snippets(path: Path) -> list[tuple[str, str]]:
    """(language, code) of every block marked runnable on a page, in page order."""
    return SNIPPET.findall(path.read_text(encoding="utf-8"))


def _pages_with_snippets() -> list[Path]:
    return [p for p in PAGES if runnable_snippets(p)]


def test_every_runnable_marker_marks_a_python_or_bash_block():
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        assert text.count(MARKER) == len(runnable_snippets(page)), page
    # the README's three families and the getting-started page at least: never a vacuous run
    names = {p.relative_to(ROOT).as_posix() for p in _pages_with_snippets()}
    assert {"README.md", "docs/getting-started.md"} <= names
    assert len(runnable_snippets(ROOT / "README.md")) >= 3


@pytest.mark.parametrize(
    "page", _pages_with_snippets(), ids=lambda p: p.relative_to(ROOT).as_posix()
)
def test_runnable_snippets_execute(page: Path, spark, tmp_path: Path, monkeypatch):
    """A page's snippets run in order in one empty directory: bash blocks as ``bash -euo
    pipefail`` with this interpreter's ``spark-dp`` first on the PATH, Python blocks in one
    namespace that holds the test session as ``spark``."""
    monkeypatch.chdir(tmp_path)
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    namespace: dict[str, object] = {"spark": spark}
    for k, (language, code) in enumerate(runnable_snippets(page)):
        if language == "bash":
            run = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", code],
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert run.returncode == 0, f"{page.name} block {k}:\n{run.stdout}\n{run.stderr}"
        else:
            exec(compile(code, f"{page.name}[{k}]", "exec"), namespace)


# --------------------------------------------------------------------------- links, reference
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_the_readme_relative_links_resolve():
    links = LINK.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    relative = [x for x in links if not re.match(r"[a-z]+:", x) and not x.startswith("#")]
    assert len(relative) >= 10
    missing = [x for x in relative if not (ROOT / x.split("#", 1)[0]).exists()]
    assert missing == []


def test_the_readme_is_short_and_starts_with_the_two_commands():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300
    assert lines[3].startswith("make demo") and lines[4].startswith("make test")


def test_the_configuration_reference_is_the_generated_one():
    from spark_dp.jobs.reference import configuration_reference

    page = (ROOT / "docs" / "reference" / "configuration.md").read_text(encoding="utf-8")
    assert page == configuration_reference(), "stale: run `make docs`"
    for flag in ("--max-contributions", "--epsilon", "--truncation-beta", "--failure-probability"):
        assert f"`{flag}`" in page
    assert "removed in 0.2.0" in page and "`--max-items-per-user`" in page


@pytest.mark.main_python
def test_the_wheel_long_description_is_the_readme(tmp_path: Path):
    """Build the wheel from a copy of the sources (no network: the test extra brings
    ``wheel``) and read its METADATA, as PyPI would."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(
        ROOT / "spark_dp", src / "spark_dp", ignore=shutil.ignore_patterns("__pycache__")
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(tmp_path / "dist"),
            str(src),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = (tmp_path / "dist").glob("spark_dp-*.whl")
    from spark_dp import __version__

    assert wheel.name.startswith(f"spark_dp-{__version__}-")
    with zipfile.ZipFile(wheel) as z:
        (meta,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        text = z.read(meta).decode("utf-8")
        # a user install holds no deliberately broken mechanism (they are in selftest/)
        assert not [n for n in z.namelist() if "spark_dp_selftest" in n or "broken" in n]
    head, body = text.split("\n\n", 1)  # core metadata: headers, a blank line, the description
    message = email.message_from_string(head + "\n\n")
    assert message["Version"] == __version__
    assert message["Description-Content-Type"] == "text/markdown"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert body.strip() == readme.strip()
