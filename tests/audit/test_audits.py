"""Every mechanism passes its fast audit, every deliberately broken variant fails it, and
``spark-dp audit`` writes its outputs and runs the self-test.

The audits use a fixed test key (``seed``), so their verdicts are reproducible; the power of each
test against each broken variant is computed in ``test_statistics.py`` (≥ 0.95 at these
parameters), so the broken verdicts do not hinge on a lucky key.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from spark_dp.audit import BROKEN, MECHANISMS, audit
from spark_dp.audit.api import SelfTestResult
from spark_dp.cli import main

SEED = 20240615


@pytest.mark.slow
@pytest.mark.parametrize("name", MECHANISMS)
def test_every_mechanism_passes_its_fast_audit(spark, name):
    result = audit(name, seed=SEED, spark=spark)
    report = result.to_dict()
    print(json.dumps({k: report[k] for k in ("mechanism", "verdict", "seconds")}))
    assert result.passed, report
    if result.novel is not None:
        # the canary attains the share for single-round mechanisms: the rate is near it
        assert result.novel.released > 0
    assert 0.0 < result.epsilon.lower_bound <= result.claim.epsilon


@pytest.mark.slow
@pytest.mark.parametrize("name", list(BROKEN))
def test_every_broken_variant_fails_the_test_that_targets_it(spark, name):
    result = audit(name, seed=SEED, spark=spark)
    assert not result.passed, result.to_dict()
    if BROKEN[name].caught_by == "novel-item test":
        assert result.novel is not None and not result.novel.passed
    else:
        assert not result.epsilon.passed
        assert result.epsilon.lower_bound > result.claim.epsilon


@pytest.mark.slow
def test_cli_writes_json_markdown_and_plot(spark, tmp_path):
    out = tmp_path / "audit"
    code = main(
        ["audit", "--mechanism", "policy-gaussian", "--fast", "--seed", "3",
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


@pytest.mark.slow
def test_self_test_result_flags_unexpected_verdicts(spark):
    real = audit("greedy-update", seed=5, spark=spark)
    broken = audit("broken-greedy-update-prefix", seed=5, spark=spark)
    assert real.passed and not broken.passed
    assert SelfTestResult([real, broken]).ok
    # a real mechanism that failed, or a broken one that passed, is unexpected
    as_broken = replace(real, change="pretend broken")
    assert not SelfTestResult([real, as_broken]).ok
    as_real = replace(broken, change=None)
    assert SelfTestResult([as_real]).unexpected == [as_real]
