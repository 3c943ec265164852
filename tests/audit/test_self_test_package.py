"""The broken variants live outside spark_dp, in the self-test package: without it the audit
of every real mechanism works and the self-test says in one line how to install it; with it,
every variant is audited through the same entry points. The public API has no audit-only
parameter: the audit runs its own entries through ``run_plan``."""

from __future__ import annotations

import inspect
import sys

import pytest

from spark_dp.audit import AUDITED, MECHANISMS, audit
from spark_dp.audit.api import BROKEN_PREFIX, default_runs, variants
from spark_dp.audit.selftest import self_test, self_test_plan
from spark_dp.cli import main
from spark_dp.errors import ConfigError, ParameterError
from spark_dp.partition_selection import PartitionSelectionParams, basic, select_partitions
from spark_dp.partition_selection.registry import REGISTRY
from spark_dp.partition_selection.select import plan_selection, run_plan
from spark_dp.randomness import Randomness
from spark_dp_selftest import BROKEN, SYSTEM_BROKEN


@pytest.fixture
def without_the_package(monkeypatch):
    """The package hidden, as in a user install (an import of it fails as a missing one)."""
    for name in [m for m in sys.modules if m.split(".")[0] == "spark_dp_selftest"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "spark_dp_selftest", None)


def test_spark_dp_audits_only_its_own_mechanisms():
    assert not [n for n in AUDITED if n.startswith(BROKEN_PREFIX)]
    assert set(MECHANISMS) < set(AUDITED)
    assert all(n.startswith(BROKEN_PREFIX) for n in (*BROKEN, *SYSTEM_BROKEN))


@pytest.mark.parametrize(
    "argv",
    [
        ["audit", "--self-test"],
        ["audit", "--self-test", "--only", "basic,broken-sigma-2eps"],
        ["audit", "--mechanism", "broken-sigma-2eps", "--fast"],
        ["audit", "--mechanism", "broken-key-reuse"],
    ],
)
def test_without_the_package_the_self_test_says_how_to_install_it(
    without_the_package, capsys, argv
):
    assert main(argv) == 2
    out, err = capsys.readouterr()
    (line,) = err.strip().splitlines()
    assert "not installed" in line and "pip install -e selftest" in line
    assert out == ""


def test_without_the_package_an_unknown_name_is_still_unknown(without_the_package, capsys):
    assert main(["audit", "--mechanism", "nope"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "--mechanism: unknown mechanism 'nope'" in line and "not installed" not in line
    with pytest.raises(ParameterError, match="unknown mechanism 'basci'"):
        audit("basci")


def test_without_the_package_the_library_refuses_before_any_audit(without_the_package):
    with pytest.raises(ConfigError, match="make setup"):
        self_test(["basic"])  # a real name alone still needs the variants: it is the self-test
    with pytest.raises(ConfigError):
        audit("broken-accountant-pure-gaussian")
    with pytest.raises(ConfigError):
        default_runs("broken-sigma-2eps")
    # the real mechanisms need nothing of it
    assert audit("accountant").passed
    assert default_runs("basic") > 0


@pytest.mark.parametrize("runs", [[], ["--runs", "5"]])
def test_the_command_line_names_the_flag_of_an_unknown_name(capsys, runs):
    assert main(["audit", "--mechanism", "nope", *runs]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("spark-dp audit: error: --mechanism: unknown mechanism 'nope'")


def test_an_unknown_name_is_refused_with_the_names_to_choose_from():
    with pytest.raises(ParameterError, match="choose one of: basic"):
        audit("basci")
    with pytest.raises(ParameterError, match="broken-"):
        audit("broken-nothing")
    with pytest.raises(ParameterError, match="unknown names"):
        self_test_plan(["basic", "nope"])


def test_the_self_test_plan_holds_every_variant_once():
    plan = self_test_plan()
    broken = [p.name for p in plan if p.broken]
    assert sorted(broken) == sorted([*BROKEN, *SYSTEM_BROKEN])
    assert {p.name for p in plan if not p.broken} == set(AUDITED)
    assert variants().BROKEN is BROKEN


def test_the_public_api_has_no_audit_only_parameter():
    assert "algorithm" not in inspect.signature(select_partitions).parameters
    assert "weighting" not in inspect.signature(basic.run).parameters
    assert list(inspect.signature(run_plan).parameters)[:4] == [
        "pairs",
        "algorithm",
        "plan",
        "randomness",
    ]


def test_run_plan_refuses_a_key_not_bound_to_its_release(spark):
    pairs = spark.createDataFrame([(1, "a")], "user_id long, item string")
    plan = plan_selection(PartitionSelectionParams(epsilon=1.0, delta=1e-5, max_contributions=1))
    with pytest.raises(ParameterError, match="bound"):
        run_plan(pairs, REGISTRY["basic"], plan, Randomness.create(seed=1))
