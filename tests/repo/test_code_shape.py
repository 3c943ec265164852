"""The shape rules of CONTRIBUTING.md, checked on the source of spark_dp/ (no Spark).

* no module over 800 lines (cohesion, not size, decides a split below that);
* no function over 80 lines (from its ``def`` to its last line, its docstring left out: a
  longer one is split into named steps);
* no ``isinstance`` over a calibration class (a class with a ``dp_event`` method) outside the
  module that defines it: its readers use the protocol of spark_dp.dp.protocol.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "spark_dp").rglob("*.py"))
MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 80


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _trees() -> dict[str, ast.Module]:
    return {_rel(p): ast.parse(p.read_text(encoding="utf-8"), _rel(p)) for p in SOURCES}


def test_no_module_is_over_800_lines():
    long = {
        _rel(p): n
        for p in SOURCES
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}, "split these modules"


def function_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from ``def`` (its decorators excluded) to the end, less the docstring's."""
    lines = node.end_lineno - node.lineno + 1
    first = node.body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        lines -= first.end_lineno - first.lineno + 1
    return lines


def test_no_function_is_over_80_lines():
    long = {
        f"{module}:{node.lineno} {node.name}": n
        for module, tree in _trees().items()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (n := function_lines(node)) > MAX_FUNCTION_LINES
    }
    assert long == {}, "split these functions into named steps"


def test_function_lines_leave_out_the_docstring_only():
    source = 'def f(x):\n    """Doc,\n    two lines."""\n    y = x\n\n    return y\n'
    (node,) = ast.parse(source).body
    assert isinstance(node, ast.FunctionDef) and function_lines(node) == 4


def _calibration_classes(trees: dict[str, ast.Module]) -> dict[str, str]:
    """class name -> defining module, for every class with a ``dp_event`` method, its own or
    inherited from a class of the package."""
    out: dict[str, str] = {}
    defs = [(m, n) for m, t in trees.items() for n in ast.walk(t) if isinstance(n, ast.ClassDef)]
    for module, node in defs:
        if any(isinstance(f, ast.FunctionDef) and f.name == "dp_event" for f in node.body):
            out[node.name] = module
    grown = True
    while grown:  # subclasses of a calibration class, to any depth
        grown = False
        for module, node in defs:
            if node.name not in out and any(n in out for b in node.bases for n in _names(b)):
                out[node.name] = module
                grown = True
    return out


def _names(node: ast.expr) -> list[str]:
    """The class names in the second argument of an isinstance call (``A``, ``(A, B)``,
    ``A | B``)."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.Tuple):
        return [n for e in node.elts for n in _names(e)]
    if isinstance(node, ast.BinOp):
        return _names(node.left) + _names(node.right)
    return []


def test_no_isinstance_over_calibration_classes_outside_their_module():
    trees = _trees()
    classes = _calibration_classes(trees)
    assert {"WeightAndThreshold", "TruncatedGeometric", "GemSelection"} <= set(classes)
    found = []
    for module, tree in trees.items():
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "isinstance"
                and len(node.args) == 2
            ):
                continue
            for name in _names(node.args[1]):
                if name in classes and classes[name] != module:
                    found.append(f"{module}:{node.lineno} isinstance(..., {name})")
    assert found == [], "read the calibration through its protocol instead"
