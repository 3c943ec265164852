"""The job contract: flags, config files, exit codes, reports, atomic outputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from spark_dp.checks import check_positive
from spark_dp.config import param
from spark_dp.jobs import generate
from spark_dp.jobs.publish import write_rows
from spark_dp.jobs.runner import Outcome, run_job, run_outcome
from spark_dp.jobs.spec import JobSpec

ROOT = Path(__file__).resolve().parents[2]


def test_generate_job_writes_data_and_report(spark, tmp_path):
    out = str(tmp_path / "zipf")
    argv = ["--kind", "zipf", "--users", "300", "--mean-items", "8", "--output", out, "--seed", "3"]
    assert generate.main(argv) == 0
    report = json.loads(Path(out + ".report.json").read_text())
    assert report["job"] == "generate"
    assert report["dataset"]["seed"] == 3 and report["dataset"]["rows"] > 300
    assert report["parameters"]["users"] == 300
    assert report["release"]["kind"] == "normal"
    assert "timings_seconds" not in report  # wall seconds depend on the data: logged only
    first = sorted(map(tuple, spark.read.parquet(out).collect()))

    assert generate.main(argv) == 2  # output exists, nothing touched
    assert generate.main([*argv, "--overwrite"]) == 0  # same arguments again: same data
    assert sorted(map(tuple, spark.read.parquet(out).collect())) == first


def test_a_run_returns_its_stages_seconds_as_a_value(spark, tmp_path):
    """The stages' seconds come back with the exit code, for the caller (the bench); none
    for a run that ended before its job ran, and never in the report."""
    out = str(tmp_path / "zipf")
    argv = ["--kind", "zipf", "--users", "50", "--output", out, "--seed", "3"]
    done = run_outcome(generate.SPEC, argv)
    assert done.exit_code == 0 and {"generate", "write output"} <= set(done.stage_seconds)
    assert all(seconds > 0 for seconds in done.stage_seconds.values())
    report = json.loads(Path(out + ".report.json").read_text())
    assert not [key for key in _keys(report) if "second" in key or "stage" in key]
    assert run_outcome(generate.SPEC, argv) == Outcome(2)  # the output exists: refused
    assert run_outcome(generate.SPEC, ["--help"]) == Outcome(0)


def _keys(tree):
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield key
            yield from _keys(value)
    elif isinstance(tree, list):
        for value in tree:
            yield from _keys(value)


def test_generate_hypergraph_reports_empty_records(spark, tmp_path):
    out = str(tmp_path / "g")
    rep = str(tmp_path / "custom.json")
    assert (
        generate.main(
            [
                "--kind",
                "regular",
                "--records",
                "2000",
                "--output",
                out,
                "--seed",
                "1",
                "--report",
                rep,
            ]
        )
        == 0
    )
    d = json.loads(Path(rep).read_text())["dataset"]
    kept = spark.read.parquet(out).select("record_id").distinct().count()
    assert d["empty_records"] == 2000 - kept > 0
    assert not Path(out + ".report.json").exists()


def test_config_file_and_precedence(spark, tmp_path):
    conf = tmp_path / "gen.yaml"
    conf.write_text("kind: heavy-light\nusers: 50\nlight_items: 5\nspark:\n  spark.x.y: '1'\n")
    out = str(tmp_path / "hl")
    assert (
        generate.main(["--config", str(conf), "--users", "40", "--output", out, "--seed", "1"]) == 0
    )
    assert spark.read.parquet(out).count() == 40 * 3  # the command line wins over the file


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--users", "0"], "users must be an integer >= 1"),
        (["--config", "missing.yaml"], "does not exist"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(tmp_path, capsys, extra, message):
    code = generate.main(["--output", str(tmp_path / "x"), *extra])
    assert code == 2
    assert message in capsys.readouterr().err


def test_unknown_config_key_exit_2(tmp_path, capsys):
    conf = tmp_path / "c.json"
    conf.write_text(json.dumps({"userz": 3}))
    assert generate.main(["--output", str(tmp_path / "x"), "--config", str(conf)]) == 2
    assert "did you mean 'users'" in capsys.readouterr().err


def test_usage_errors_and_help(capsys):
    assert generate.main(["--kind", "nope", "--output", "x"]) == 2
    assert generate.main([]) == 2  # --output is required
    assert generate.main(["--help"]) == 0
    assert "examples:" in capsys.readouterr().out


@dataclass(frozen=True)
class _Params:
    factor: float = param(1.0, "a factor")

    def __post_init__(self):
        check_positive("factor", self.factor)


def _count_job(ctx):
    df = ctx.load_pairs()
    if ctx.params.factor == 13.0:
        raise RuntimeError("simulated failure")
    ctx.report.outputs["rows"] = write_rows(ctx, df.select("item").distinct())
    return "ok"


SPEC = JobSpec("count_test", "test job", _Params, _count_job, guarantee="none (test)")


def test_input_errors_exit_2_and_crashes_exit_1(spark, tmp_path, capsys):
    src = str(tmp_path / "in")
    spark.createDataFrame([(1, "a")], "uid long, item string").write.parquet(src)
    out = str(tmp_path / "out")
    assert run_job(SPEC, ["--input", src, "--output", out]) == 2
    assert "no column 'user_id'" in capsys.readouterr().err
    assert not os.path.exists(out)
    assert (
        run_job(SPEC, ["--input", src, "--output", out, "--user-col", "uid", "--factor", "13"]) == 1
    )
    assert not os.path.exists(out)
    assert sorted(os.listdir(tmp_path)) == ["in"]  # the failure left no staged files
    assert run_job(SPEC, ["--input", src, "--output", out, "--user-col", "uid"]) == 0
    rep = json.loads(Path(out + ".report.json").read_text())
    assert rep["outputs"] == {"rows": 1} and rep["randomness"]["mode"] == "entropy"
    assert sorted(os.listdir(tmp_path)) == ["in", "out", "out.report.json"]


def test_report_goes_to_stdout_without_output(spark, tmp_path, capsys):
    src = str(tmp_path / "in")
    spark.createDataFrame([("u", "a")], "user_id string, item string").write.parquet(src)

    def _no_output(ctx):
        ctx.load_pairs()
        ctx.report.outputs["answer"] = 42
        return "done"

    spec = JobSpec("stdout_test", "t", _Params, _no_output, output="none")
    assert run_job(spec, ["--input", src, "--seed", "5"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["outputs"]["answer"] == 42
    assert rep["randomness"]["production_safe"] is False


@pytest.mark.main_python
def test_job_file_runs_as_a_plain_python_script(tmp_path):
    """`python jobs/generate.py ...` from a clean process, with local Spark."""
    out = tmp_path / "plain"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    cmd = [
        sys.executable,
        str(ROOT / "jobs" / "generate.py"),
        "--kind",
        "heavy-light",
        "--users",
        "20",
        "--output",
        str(out),
        "--seed",
        "2",
        "--spark-conf",
        "spark.ui.enabled=false",
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (out.parent / "plain.report.json").exists()
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 2 and "already exists" in again.stderr
    assert again.stderr.count("\n") == 1  # one line, before any JVM start


def test_unsafe_debug_logs_need_confirmation_and_mark_the_report(spark, tmp_path, capsys):
    src = str(tmp_path / "in")
    spark.createDataFrame([("u", "a")], "user_id string, item string").write.parquet(src)
    argv = ["--input", src, "--output", str(tmp_path / "out"), "--unsafe-debug-logs"]
    assert run_job(SPEC, argv) == 2
    assert "--allow-unsafe-debug" in capsys.readouterr().err
    assert run_job(SPEC, [*argv, "--allow-unsafe-debug"]) == 0
    from spark_dp.logs import unsafe_debug_enabled

    assert not unsafe_debug_enabled()  # the run's switch ends with it (the report below shows
    # it was on): the caller keeps its own setting
    release = json.loads((tmp_path / "out.report.json").read_text())["release"]
    assert release["kind"] == "debug: NOT a normal release"
    assert release["unsafe_debug"] == [
        "--unsafe-debug-logs: private counts were written to the logs"
    ]
    assert run_job(SPEC, ["--input", src, "--output", str(tmp_path / "o2")]) == 0
    assert not unsafe_debug_enabled()  # a run without the flag is safe too
