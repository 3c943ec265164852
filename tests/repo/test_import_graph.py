"""The import graph of spark_dp: no cycle, even through type-only imports, and no import up
the layers.

Every ``import`` and ``from ... import`` of spark_dp's modules is read with ``ast``, wherever
it stands (module level, inside a function, under ``if TYPE_CHECKING:``): a type-only import is
a dependency of the reader too. The layers, bottom up:

* the foundation (errors, checks, config, calibration, randomness, io, report, ...);
* the families (partition_selection, distinct_count, contribution_bounding, generators) and
  the budget store, which never import one another;
* the applications (jobs, audit, cli).

Inside a family the layers read parameters → plan → algorithms → registry → entry points: the
registry imports the algorithms and is imported only by the entry points (``select``, ``api``,
the package ``__init__``), so no parameter class, plan or algorithm can reach it; and a
family's ``params`` module imports nothing of its family that imports it back (a cycle).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "spark_dp"

FAMILIES = (
    "spark_dp.partition_selection",
    "spark_dp.distinct_count",
    "spark_dp.contribution_bounding",
    "spark_dp.generators",
    "spark_dp.budget",
)
APPLICATIONS = ("spark_dp.jobs", "spark_dp.audit", "spark_dp.cli", "spark_dp.__main__")
ALGORITHM_FAMILIES = FAMILIES[:3]
ENTRY_POINTS = {"__init__": 3, "api": 2, "select": 2, "registry": 1}
"""Rank of a family module by name (every other module of the family ranks 0)."""


def modules() -> dict[str, Path]:
    """Module name → file, for every module of spark_dp (a package is its ``__init__``)."""
    out = {}
    for path in (ROOT / PACKAGE).rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The spark_dp modules ``name`` imports (``from pkg import mod`` counts as ``pkg.mod``)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parent, *([node.module] if node.module else [])])
            for alias in node.names:
                target = f"{base}.{alias.name}"
                if target in known:
                    out.add(target)
                elif base in known:
                    out.add(base)
    out.discard(name)
    return out


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports(name, path, known) for name, path in found.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def _within(name: str, prefixes: tuple[str, ...]) -> str | None:
    return next((p for p in prefixes if name == p or name.startswith(p + ".")), None)


def layer(name: str) -> int:
    """0 foundation, 1 families and the budget store, 2 applications."""
    if _within(name, APPLICATIONS):
        return 2
    return 1 if _within(name, FAMILIES) else 0


def family_rank(name: str) -> int:
    if name in ALGORITHM_FAMILIES:
        return ENTRY_POINTS["__init__"]
    return ENTRY_POINTS.get(name.rpartition(".")[2], 0)


def upward(edges: dict[str, set[str]]) -> list[str]:
    """Imports from a lower layer to a higher one, or between two families."""
    found = []
    for a, targets in edges.items():
        for b in targets:
            if layer(a) < layer(b):
                found.append(f"{a} -> {b} (layer {layer(a)} imports layer {layer(b)})")
            fa, fb = _within(a, FAMILIES), _within(b, FAMILIES)
            if fa and fb and fa != fb:
                found.append(f"{a} -> {b} (one family imports another)")
            if fa and fa == fb and fa in ALGORITHM_FAMILIES and family_rank(a) < family_rank(b):
                found.append(f"{a} -> {b} (up the family: {family_rank(a)} < {family_rank(b)})")
    return sorted(found)


def reachable(edges: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for w in edges[todo.pop()]:
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def test_the_graph_sees_type_only_and_function_level_imports():
    edges = graph()
    # imported under TYPE_CHECKING only
    assert "spark_dp.partition_selection.params" in edges["spark_dp.partition_selection.basic"]
    # imported inside a function
    assert "spark_dp.budget.store" in edges["spark_dp.budget"]
    # relative and package-relative spellings resolve to modules
    assert "spark_dp.partition_selection.registry" in edges["spark_dp.partition_selection"]


def test_no_import_cycle_even_through_type_only_imports():
    assert cycles(graph()) == []


def test_no_import_goes_up_the_layers():
    assert upward(graph()) == []


def test_parameters_reach_no_registry_plan_or_algorithm():
    # parameters → plan → algorithm: what params reaches is below every module that reads
    # the parameters (the plans and algorithms type against them) and below the registry
    edges = graph()
    for family in ALGORITHM_FAMILIES:
        params = f"{family}.params"
        reached = {m for m in reachable(edges, params) if m.startswith(family + ".")}
        readers = {m for m, targets in edges.items() if params in targets}
        assert {f"{family}.registry", f"{family}.plan", f"{family}.basic"} & readers
        assert not {m for m in reached if family_rank(m) > 0}, params
        assert not reached & readers, params


DP_CORE_READS = ("spark_dp.errors", "spark_dp.checks", "spark_dp.randomness", "spark_dp.report")


def test_the_dp_core_reads_only_the_basics_and_itself():
    """``spark_dp.dp`` (calibration, composition, accounting, GEM, the registry) sits at the
    bottom: it imports errors, checks, randomness, the report protocol and its own modules,
    never Spark-side code, I/O, the budget store or a family."""
    edges = graph()
    core = [m for m in edges if _within(m, ("spark_dp.dp",))]
    assert "spark_dp.dp.calibration" in core and "spark_dp.dp.composition" in core
    outside = {
        f"{a} -> {b}"
        for a in core
        for b in edges[a]
        if not _within(b, ("spark_dp.dp", *DP_CORE_READS))
    }
    assert outside == set()


def self_test_imports() -> list[str]:
    """Every import of the self-test package (the broken variants) by a spark_dp module."""
    found = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                targets = [node.module or ""]
            else:
                continue
            found += [f"{name} -> {t}" for t in targets if t.split(".")[0] == "spark_dp_selftest"]
    return found


def test_spark_dp_never_imports_the_broken_variants():
    """The broken variants are a package of their own (selftest/): the audit loads it by name
    when it is installed (``spark_dp.audit.api.variants``), no module imports it."""
    assert self_test_imports() == []
    assert not (ROOT / PACKAGE / "audit" / "broken.py").exists()


def test_the_checks_find_a_cycle_and_an_upward_import():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert cycles(edges) == [["a", "b", "c"]]
    fake = {
        "spark_dp.checks": {"spark_dp.jobs.runner"},
        "spark_dp.jobs.runner": set(),
        "spark_dp.partition_selection.mad": {"spark_dp.partition_selection.registry"},
        "spark_dp.partition_selection.registry": {"spark_dp.distinct_count.plan"},
        "spark_dp.distinct_count.plan": set(),
    }
    assert upward(fake) == [
        "spark_dp.checks -> spark_dp.jobs.runner (layer 0 imports layer 2)",
        "spark_dp.partition_selection.mad -> spark_dp.partition_selection.registry "
        "(up the family: 0 < 1)",
        "spark_dp.partition_selection.registry -> spark_dp.distinct_count.plan "
        "(one family imports another)",
    ]
