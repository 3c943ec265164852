"""The audit through Spark: every real mechanism passes, a broken variant of each fails, and
``spark-dp audit`` writes its outputs and runs the self-test.

The suite runs the ``--fast`` audit of every real mechanism and one broken variant per mechanism
(each a factor-2 mistake in its noise, its δ or its weights). The whole self-test, every real
mechanism at each variant's parameters and every broken variant, is ``make audit`` (its table:
docs/privacy/audit-results.md); it exits non-zero on any unexpected verdict. The audits use a
fixed test key (``seed``), so their verdicts are reproducible; the power of each comparison that
fails a broken variant is printed and asserted (≥ 0.9 at the observed rates).
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from spark_dp.audit import MECHANISMS, audit
from spark_dp.audit.selftest import SelfTestResult, self_test_plan
from spark_dp.audit.system import SYSTEM
from spark_dp.audit.targets import Settings, build_target
from spark_dp.cli import main
from spark_dp_selftest import UNDERPOWERED

SEED = 20240615

SAMPLE = [
    # one broken variant per mechanism, the cheapest that is a factor-2 mistake in its noise,
    # its δ or its weights
    "broken-sigma-2eps",
    "broken-full-delta",  # σ and ρ both from the whole δ: δ off by 2
    "broken-double-singletons",  # weights of single-user items doubled
    "broken-basic-laplace-scale-2eps",
    "broken-dp-sips-sigma-2eps",
    "broken-mad-sigma-2eps",
    "broken-mad2r-sigma-2eps",
    "broken-truncated-geometric-2eps",
    "broken-laplace-thresholding-scale-2eps",
    "broken-gaussian-thresholding-half-k",
    "broken-distinct-count-half-scale",
    "broken-auto-noiseless",
    "broken-key-reuse",
    "broken-accountant-pure-gaussian",
]
"""Broken variants the suite runs (``make audit``, the self-test, runs all of them)."""

MAIN_RUNS = 5000
"""Runs per dataset of the main suite's real audits (the self-test runs the default 20,000)."""


@pytest.mark.parametrize("name", [*MECHANISMS, *SYSTEM])
def test_every_mechanism_passes_its_fast_audit(spark, name):
    runs = None if name in SYSTEM or name in ("distinct-count", "auto-choice") else MAIN_RUNS
    result = audit(name, seed=SEED, spark=spark, runs=runs)
    report = result.to_dict()
    print(json.dumps({k: report[k] for k in ("mechanism", "verdict", "seconds")}))
    assert result.passed, report
    assert result.power < 0.05  # at the observed rates a correct mechanism rarely fails
    if result.novel_rate() is not None:
        rate, _, share = result.novel_rate()
        assert rate > 0.0 and share > 0.0


@pytest.mark.parametrize("name", SAMPLE)
def test_a_sample_of_broken_variants_fails(spark, name):
    result = audit(name, seed=SEED, spark=spark)
    assert not result.passed, result.to_dict()
    assert result.power >= 0.9, result.to_dict()


def test_the_self_test_audits_the_real_mechanism_where_a_variant_moves():
    plan = self_test_plan(["mad2r", "broken-mad2r-noiseless-bias", "broken-mad2r-sigma-2eps"])
    assert [(p.name, dict(p.parameters)) for p in plan] == [
        ("mad2r", {}),
        ("mad2r", {"b_max": 2.0, "split": (0.02, 0.98)}),
        ("broken-mad2r-noiseless-bias", {}),
        ("broken-mad2r-sigma-2eps", {}),
    ]
    assert [p.broken for p in plan] == [False, False, True, True]
    # the report names the moved bias bound (the table's "at" column)
    moved = build_target("mad2r", Settings(True, dict(plan[1].parameters)))
    assert moved.parameters["b_max"] == 2.0 and moved.parameters["split"] == [0.02, 0.98]


@pytest.mark.slow
def test_cli_writes_json_markdown_and_plot(spark, tmp_path):
    out = tmp_path / "audit"
    code = main(
        ["audit", "--mechanism", "policy-gaussian", "--fast", "--seed", "3", "--runs", "2000",
         "--json", str(out / "a.json"), "--markdown", str(out / "a.md"),
         "--plot", str(out / "a.png")]
    )  # fmt: skip
    assert code == 0
    doc = json.loads((out / "a.json").read_text())
    (entry,) = doc["audits"]
    assert entry["mechanism"] == "policy-gaussian" and entry["verdict"] == "pass"
    assert entry["claim"]["delta_novel"] == pytest.approx(0.1)
    assert set(entry["randomness"]) == {"mode", "key_fingerprint"}  # never a seed or a key
    assert "| policy-gaussian |" in (out / "a.md").read_text()
    assert (out / "a.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_cli_self_test_exit_code(spark):
    only = "greedy-update,broken-greedy-update-prefix"
    assert main(["audit", "--self-test", "--only", only, "--seed", "4"]) == 0


def test_cli_rejects_bad_arguments():
    assert main(["audit", "--mechanism", "nope"]) == 2
    assert main(["audit", "--self-test", "--only", "nope"]) == 2
    # distinct count without --fast needs ε (no default): a clear error, exit 2
    assert main(["audit", "--mechanism", "distinct-count"]) == 2


def test_self_test_result_flags_unexpected_verdicts():
    real = audit("accountant")
    broken = audit("broken-accountant-pure-gaussian")
    assert real.passed and not broken.passed
    assert SelfTestResult([real, broken]).ok
    # a real mechanism that failed, or a broken one that passed, is unexpected
    as_broken = replace(real, change="pretend broken")
    assert not SelfTestResult([real, as_broken]).ok
    as_real = replace(broken, change=None)
    assert SelfTestResult([as_real]).unexpected == [as_real]


def test_only_the_documented_blind_spots_may_pass_the_self_test():
    assert UNDERPOWERED == {"broken-mad-reroute-uncapped", "broken-gem-half-sensitivity"}
    passed = replace(audit("accountant"), change="pretend broken")
    assert not SelfTestResult([passed], UNDERPOWERED).ok
    blind = replace(passed, mechanism="broken-gem-half-sensitivity")
    assert SelfTestResult([blind], UNDERPOWERED).ok
    assert not SelfTestResult([blind]).ok  # a blind spot only where the variants name it
