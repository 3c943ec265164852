"""Every job ends with one line on stdout stating its public answer (``--json``: one object).

Partition selection: how many items it released and where; the distinct count: the released
lower bound (the report's ``lower_bound_clamped``, which the report names as its ``answer``)
with ε and 1 − β; contribution bounding: its parameters and where the confidential outputs
went, never a count of them; generate: what it wrote. The jobs run in this process on the
shared session (small inputs); the ``--json`` form is checked on the same answers without
Spark (:func:`spark_dp.jobs.publish.printed`). That stdout depends on the released values
only is the neighbour test's (tests/privacy/test_neighbours.py).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from spark_dp import cli
from spark_dp.jobs import contribution_bounding, distinct_count, generate, partition_selection
from spark_dp.jobs.publish import printed
from spark_dp.report import PrivacyReport

QUIET = ["--log-level", "WARNING", "--no-ledger"]


def _run(capsys, argv: list[str]) -> str:
    assert cli.main(argv) == 0
    return capsys.readouterr().out


def _rows(path: Path) -> int:
    return sum(pq.read_metadata(p).num_rows for p in sorted(path.glob("part-*")))


@pytest.fixture(scope="module")
def words(spark, tmp_path_factory) -> Path:
    """(user_id, item) pairs: 200 users hold ``common`` and ``shared``, each also one word of
    its own (never released)."""
    path = tmp_path_factory.mktemp("answers") / "words"
    rows = [(f"u{i}", w) for i in range(200) for w in ("common", "shared", f"own{i}")]
    spark.createDataFrame(rows, "user_id string, item string").write.parquet(str(path))
    return path


def test_generate_says_what_it_wrote(spark, tmp_path, capsys):
    out = tmp_path / "g"
    argv = ["generate", "--kind", "zipf", "--users", "50", "--output", str(out), "--seed", "3"]
    (line,) = _run(capsys, [*argv, "--log-level", "WARNING"]).splitlines()
    assert line == (
        f"wrote {_rows(out)} rows of zipf data to {out} (seed 3); report: {out}.report.json"
    )


def test_partition_selection_says_how_many_items_it_released_and_where(words, tmp_path, capsys):
    out = tmp_path / "vocab"
    argv = ["partition-selection", "--input", str(words), "--output", str(out), "--epsilon", "1"]
    argv += ["--algorithm", "basic", "--max-contributions", "4", "--seed", "1", *QUIET]
    (line,) = _run(capsys, argv).splitlines()
    released = _rows(out)
    assert released == 2  # common and shared: 200 holders each, far above the threshold
    assert line == (
        f"released 2 items to {out} (ε=1, δ=1e-05, basic, Δ0=4); report: {out}.report.json"
    )
    report = json.loads(Path(f"{out}.report.json").read_text())
    assert report["outputs"]["output_items"] == released


def test_distinct_count_states_the_released_lower_bound(words, tmp_path, capsys):
    path = tmp_path / "count.json"
    argv = ["distinct-count", "--input", str(words), "--epsilon", "1", "--method", "greedy"]
    (line,) = _run(capsys, [*argv, "--seed", "2", "--report", str(path), *QUIET]).splitlines()
    report = json.loads(path.read_text())
    assert report["answer"] == "lower_bound_clamped"
    bound = report["lower_bound_clamped"]
    assert 0 <= bound <= 202 and bound == max(0, report["lower_bound"])
    assert line == (
        f"distinct count ≥ {bound} (ε=1, 1−β=0.95: a lower bound with probability ≥ 0.95; "
        f"ℓ̂={report['ell']}, greedy); report: {path}"
    )


def test_contribution_bounding_prints_only_its_public_summary(spark, tmp_path, capsys):
    """Two graphs of different sizes, the same arguments: the same line (paths aside), so
    nothing the bounding selected shows (its counts are confidential)."""
    lines = []
    for name, records in (("small", 5), ("large", 60)):
        graph = tmp_path / name / "graph"
        rows = [(f"r{r}", f"u{(r * k) % 17}") for r in range(records) for k in (1, 2, 3)]
        spark.createDataFrame(rows, "record_id string, user_id string").write.parquet(str(graph))
        out = tmp_path / name / "records"
        argv = ["contribution-bounding", "--input", str(graph), "--output", str(out)]
        argv += ["--max-contributions", "2", "--seed", "1", "--log-level", "WARNING"]
        (line,) = _run(capsys, argv).splitlines()
        lines.append(line.replace(str(tmp_path / name), "<dir>"))
    assert (
        lines[0]
        == lines[1]
        == (
            "bounded contributions (proposal): at most 2 records per user; the selected records "
            "in <dir>/records and the report are confidential (owner-only), not a release; "
            "report: <dir>/records.report.confidential.json"
        )
    )


# --------------------------------------------------------------------------- --json, no Spark


def _report(job: str, **extra) -> PrivacyReport:
    report = PrivacyReport(job, "test")
    report.extra.update(extra)
    return report


def _printed(spec, report: PrivacyReport, path: str | None, **args) -> str:
    defaults = {"json": False, "output": "out/o", "output_table": None}
    return printed(spec, argparse.Namespace(**{**defaults, **args}), report, path)


def _count_report() -> PrivacyReport:
    return _report(
        "distinct_count", estimate=57.4, ell=3, lower_bound=-4, lower_bound_clamped=0,
        epsilon=0.5, beta=0.1, method="exact", answer="lower_bound_clamped",
    )  # fmt: skip


def test_json_is_one_object_with_the_same_answer_and_where_the_report_is():
    report = _report("partition_selection")
    report.parameters = {"epsilon": 2.0, "delta": 1e-7, "max_contributions": 10}
    report.algorithm = "mad2r"
    report.outputs["output_items"] = 31
    text = _printed(partition_selection.SPEC, report, "out/o.report.json", json=True)
    assert text.count("\n") == 1 and json.loads(text) == {
        "job": "partition_selection", "released_items": 31, "output": "out/o", "epsilon": 2.0,
        "delta": 1e-7, "algorithm": "mad2r", "max_contributions": 10,
        "report": "out/o.report.json",
    }  # fmt: skip
    line = _printed(partition_selection.SPEC, report, "out/o.report.json")
    assert line == "released 31 items to out/o (ε=2, δ=1e-07, mad2r, Δ0=10); report: " \
        "out/o.report.json\n"  # fmt: skip


def test_the_distinct_count_s_answer_is_the_clamped_bound_with_or_without_a_report_file():
    report = _count_report()
    doc = json.loads(_printed(distinct_count.SPEC, report, None, json=True))
    assert doc["distinct_count_at_least"] == 0 and doc["confidence"] == 0.9
    assert doc["report"] == json.loads(report.to_json())  # no file: the report itself
    text = _printed(distinct_count.SPEC, report, None)  # no file: the report, then the line
    *head, last = text.splitlines()
    assert json.loads("\n".join(head)) == doc["report"]
    assert re.fullmatch(r"distinct count ≥ 0 \(ε=0\.5, 1−β=0\.9: .*; report: above", last)


def test_contribution_bounding_s_json_holds_parameters_and_paths_only():
    report = _report("contribution_bounding", selected=1234, max_degree=7, rounds=3)
    report.parameters = {"algorithm": "greedy", "max_contributions": None, "capacities": "caps"}
    path = "out/o.report.confidential.json"
    doc = json.loads(_printed(contribution_bounding.SPEC, report, path, json=True))
    assert doc == {
        "job": "contribution_bounding", "algorithm": "greedy", "max_contributions": None,
        "capacities": "caps", "output": "out/o", "confidential": True, "report": path,
    }  # fmt: skip
    line = _printed(contribution_bounding.SPEC, report, path)
    assert "per-user caps from caps" in line and not re.search(r"1234|\b7\b|\b3\b", line)


def test_generate_json():
    report = _report("generate", dataset={"rows": 9, "seed": 4})
    report.parameters = {"kind": "regular"}
    doc = json.loads(_printed(generate.SPEC, report, "g.report.json", json=True))
    assert doc == {"job": "generate", "kind": "regular", "rows": 9, "output": "out/o",
                   "seed": 4, "report": "g.report.json"}  # fmt: skip
