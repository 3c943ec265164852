"""A spark_dp job over Spark Connect (issue 16.4): ``partition_selection`` run in-process while
the Connect session is active (what a notebook or an orchestrator on a Connect client does).

It reads Parquet, selects with MAD2R, writes the items atomically and writes its report naming
the Connect application: the job runner and spark_dp.io use no JVM on a Connect session.
"""

from __future__ import annotations

import json

from spark_dp.jobs.partition_selection import main


def test_partition_selection_job_over_connect(spark, server, tmp_path):
    rows = [(f"u{u}", "common") for u in range(300)] + [(f"u{u}", f"solo{u}") for u in range(300)]
    spark.createDataFrame(rows, "user_id string, item string").write.parquet(
        str(tmp_path / "pairs")
    )
    out = tmp_path / "items"
    code = main(
        [
            "--input", str(tmp_path / "pairs"),
            "--output", str(out),
            "--algorithm", "mad2r",
            "--epsilon", "1",
            "--delta", "1e-5",
            "--seed", "3",
        ]
    )  # fmt: skip
    assert code == 0
    assert [r["item"] for r in spark.read.parquet(str(out)).collect()] == ["common"]
    report = json.loads((tmp_path / "items.report.json").read_text())
    assert report["spark"]["application_id"] == server.applicationId
