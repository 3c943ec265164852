"""Parameter declaration, file loading, precedence, coercion and validation."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass

import pytest

from spark_dp import checks as K
from spark_dp import config as C
from spark_dp import config_flags as F
from spark_dp.errors import ConfigError, ParameterError


@dataclass(frozen=True)
class DemoParams:
    epsilon: float = C.param(1.0, "privacy loss")
    delta: float = C.param(1e-5, "failure probability")
    max_items: int = C.param(100, "Δ0")
    split: tuple[float, ...] = C.param((0.1, 0.9), "budget split")
    mode: str = C.param("a", "mode", choices=("a", "b"))
    flag: bool = C.param(False, "a switch")
    note: str | None = C.param(None, "optional")

    def __post_init__(self):
        K.check_epsilon(self.epsilon)
        K.check_delta(self.delta)
        K.check_int_at_least("max_items", self.max_items, 1)
        K.check_fractions("split", self.split)
        K.check_choice("mode", self.mode, ("a", "b"))


def test_precedence_defaults_file_cli():
    p = C.resolve_params(DemoParams)
    assert p.epsilon == 1.0 and p.split == (0.1, 0.9)
    p = C.resolve_params(DemoParams, {"epsilon": 2, "max-items": "50"}, {"epsilon": 3.0})
    assert p.epsilon == 3.0 and p.max_items == 50
    p = C.resolve_params(DemoParams, {"epsilon": 2}, {"epsilon": None})  # flag not passed
    assert p.epsilon == 2.0


def test_coercion_of_lists_bools_and_optionals():
    p = C.resolve_params(DemoParams, {"split": "0.05,0.15,0.8", "flag": "yes", "note": None})
    assert p.split == (0.05, 0.15, 0.8) and p.flag is True and p.note is None


@pytest.mark.parametrize(
    ("values", "error", "message"),
    [
        ({"epsilno": 1}, ConfigError, "did you mean 'epsilon'"),
        ({"max_items": 2.5}, ConfigError, "expects int"),
        ({"flag": "maybe"}, ConfigError, "expects bool"),
        ({"epsilon": 0}, ParameterError, "epsilon must be a finite number > 0"),
        ({"delta": 1.5}, ParameterError, "delta must lie strictly between 0 and 1"),
        ({"split": [0.6, 0.6]}, ParameterError, "must sum to at most 1"),
        ({"split": []}, ParameterError, "at least one budget share"),
        ({"mode": "c"}, ParameterError, "mode must be one of"),
        ({"max_items": 0}, ParameterError, "max_items must be an integer >= 1"),
    ],
)
def test_bad_values_name_the_parameter(values, error, message):
    with pytest.raises(error, match=message):
        C.resolve_params(DemoParams, values)


def test_cli_flags_are_generated_from_fields():
    ap = argparse.ArgumentParser()
    F.add_param_arguments(ap, DemoParams)
    args = ap.parse_args(["--max-items", "7", "--split", "0.5,0.5", "--flag", "--mode", "b"])
    p = C.resolve_params(DemoParams, {}, F.cli_overrides(args, DemoParams))
    assert (p.max_items, p.split, p.flag, p.mode) == (7, (0.5, 0.5), True, "b")
    with pytest.raises(SystemExit):
        ap.parse_args(["--mode", "z"])


def test_config_files(tmp_path):
    y = tmp_path / "c.yaml"
    y.write_text("epsilon: 0.5\nspark:\n  spark.x: '1'\n")
    assert C.load_config_file(y) == {"epsilon": 0.5, "spark": {"spark.x": "1"}}
    j = tmp_path / "c.json"
    j.write_text(json.dumps({"delta": 1e-6}))
    assert C.load_config_file(j) == {"delta": 1e-6}
    bad = tmp_path / "c.yaml.txt"
    bad.write_text("a: 1")
    with pytest.raises(ConfigError, match="unknown extension"):
        C.load_config_file(bad)
    with pytest.raises(ConfigError, match="does not exist"):
        C.load_config_file(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("a: [1, 2\n")
    with pytest.raises(ConfigError, match="cannot be parsed"):
        C.load_config_file(broken)
    notmap = tmp_path / "list.json"
    notmap.write_text("[1, 2]")
    with pytest.raises(ConfigError, match="must hold a mapping"):
        C.load_config_file(notmap)


def test_spark_conf_overrides():
    assert C.parse_spark_conf_overrides(["a=1", "b = x=y"]) == {"a": "1", "b": "x=y"}
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        C.parse_spark_conf_overrides(["nokey"])


def test_params_to_dict_is_json_ready():
    d = C.params_to_dict(C.resolve_params(DemoParams))
    assert d["split"] == [0.1, 0.9]
    json.dumps(d)


def test_the_budget_bounds_in_conf_files_and_readme_are_the_code_s():
    """Issue 39: the code's bounds (spark_dp.checks) are the one source; the comments of
    conf/*.yaml and the flag table of docs/operations/configuration.md state the same numbers."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    stated = {"epsilon": (K.EPSILON_MAX, K.EPSILON_WARN), "delta": (K.DELTA_MAX, K.DELTA_WARN)}
    seen = set()
    for conf in sorted((root / "conf").glob("*.yaml")):
        text = conf.read_text()
        for name, (most, warn) in stated.items():
            block = re.search(rf"^{name}:.*?(?=^\S)", text, re.M | re.S)
            if block is None:
                continue
            m = re.search(r"at most ([\d.e+-]+),\s*#?\s*a warning above ([\d.e+-]+)", block[0])
            assert m, f"{conf.name}: the comment of {name} states no bound"
            assert (float(m[1]), float(m[2])) == (most, warn), (conf.name, name, m.groups())
            seen.add(name)
    assert seen == set(stated)
    page = (root / "docs" / "operations" / "configuration.md").read_text()
    for name, (most, warn) in stated.items():
        row = re.search(rf"^\| `--{name}` \|.*$", page, re.M)
        assert row, f"the flag table of docs/operations/configuration.md has no --{name} row"
        m = re.search(r"at most ([\d.e+-]+); a warning above ([\d.e+-]+)", row[0])
        assert m and (float(m[1]), float(m[2])) == (most, warn), row[0]
    # and the δ refused unless confirmed (--allow-large-delta)
    row = re.search(r"^\| `--delta` \|.*$", page, re.M)
    conf = (root / "conf" / "partition_selection.yaml").read_text()
    for text in (row[0] if row else "", conf):
        m = re.search(r"refused above ([\d.e+-]+) unless", text)
        assert m and float(m[1]) == K.DELTA_CONFIRM, text[:300]
