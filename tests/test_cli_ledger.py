"""The spark-dp command (dispatch, help, exit codes) and the deprecated budget ledger."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from spark_dp import cli
from spark_dp.errors import ConfigError
from spark_dp.ledger import LedgerEntry, append_entry, read_ledger, totals


def _entry(dataset="d1", eps=0.5, delta=1e-6, mode="entropy", job="partition_selection"):
    return LedgerEntry(dataset, job, "mad2r", eps, delta, "/out", "/out.report.json", mode)


def test_ledger_sums_per_dataset(tmp_path):
    led = tmp_path / "l" / "ledger.jsonl"
    append_entry(led, _entry())
    append_entry(led, _entry(eps=1.0, delta=2e-6))
    append_entry(led, _entry(dataset="d2", eps=2.0, delta=0.0, mode="fixed-seed"))
    rows = totals(read_ledger(led))
    assert [(t.dataset, t.releases) for t in rows] == [("d1", 2), ("d2", 1)]
    assert rows[0].epsilon == pytest.approx(1.5) and rows[0].delta == pytest.approx(3e-6)
    assert rows[1].fixed_seed_releases == 1
    assert len(totals(read_ledger(led), "d2")) == 1


def test_ledger_errors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a URI taken as a local path would create ./s3a: here
    for uri in ("s3a://bucket/ledger.jsonl", "hdfs:///data/ledger.jsonl"):
        with pytest.raises(ConfigError, match=r"is a URI.*--budget-store sqlite:///"):
            append_entry(uri, _entry())
    assert not (tmp_path / "s3a:").exists() and not (tmp_path / "hdfs:").exists()
    with pytest.raises(ConfigError, match="does not exist"):
        read_ledger(tmp_path / "none.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"dataset": "x"}\n')
    with pytest.raises(ConfigError, match="line 1 is not a ledger entry"):
        read_ledger(bad)


def test_dispatch_help_and_unknown(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in (
        "generate",
        "partition-selection",
        "contribution-bounding",
        "distinct-count",
        "calibrate",
        "budget",
    ):
        assert name in out
    assert cli.main([]) == 2
    assert cli.main(["frobnicate"]) == 2
    assert "unknown command 'frobnicate'" in capsys.readouterr().err
    assert cli.main(["generate", "--help"]) == 0  # the job's own help
    assert "--kind" in capsys.readouterr().out
    assert cli.main(["--version"]) == 0


def test_python_dash_m_entry_point():
    done = subprocess.run(
        [sys.executable, "-m", "spark_dp", "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and "spark-dp" in done.stdout


def test_jobs_append_to_the_ledger(spark, tmp_path):
    from dataclasses import dataclass

    from spark_dp.config import param
    from spark_dp.jobs.common import JobSpec, run_job

    @dataclass(frozen=True)
    class P:
        epsilon: float = param(0.25, "ε")

    def job(ctx):
        ctx.load_pairs()
        ctx.report.spend("release", ctx.params.epsilon, 1e-7)
        return "ok"

    src = str(tmp_path / "in")
    spark.createDataFrame([("u", "a")], "user_id string, item string").write.parquet(src)
    led = tmp_path / "ledger.jsonl"
    spec = JobSpec("ledger_test", "t", P, job, output="none", spends_budget=True)
    for _ in range(2):
        assert (
            run_job(
                spec,
                [
                    *("--input", src, "--ledger", str(led), "--overwrite"),
                    *("--report", str(tmp_path / "r.json")),
                ],
            )
            == 0
        )
    entries = read_ledger(led)
    assert len(entries) == 2 and entries[0].dataset == str(tmp_path / "in")
    assert json.loads(led.read_text().splitlines()[0])["epsilon"] == 0.25
    assert totals(entries)[0].epsilon == pytest.approx(0.5)
