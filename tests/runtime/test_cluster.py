"""Every job under a real ``spark-submit``, on local[2] and on a standalone cluster.

A Spark standalone master and two workers run on 127.0.0.1 from the pip pyspark install. The
data is generated in the test's session. Every job is submitted with ``--py-files <zip from
spark_dp.packaging>`` to ``--master spark://...``, and run in local mode with the same seed
(partition selection under ``spark-submit --master local[2]``, the others in the test's own
local session, which saves start-ups); the outputs must be equal.

To prove the zip is what ships the code, the driver and executors run an interpreter that sees
spark_dp's dependencies but not spark_dp itself (a bare venv whose ``.pth`` adds this venv's
site-packages as a plain path, so the editable install's finder never loads), and the job
scripts are copied out of the checkout (their fallback to the checkout cannot trigger).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cluster_helpers import submit, submit_env
from tests.support.standalone_cluster import StandaloneCluster

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """Zip, job scripts outside the checkout, and an interpreter without spark_dp."""
    return submit_env(tmp_path_factory.mktemp("submit"), JOBS)


def rows(spark, path: Path) -> list:
    return sorted(tuple(r) for r in spark.read.parquet(str(path)).collect())


JOBS = {
    "partition_selection": "--input {data}/words --output {out}/items --algorithm mad2r "
    "--epsilon 4 --delta 1e-4 --seed 11 --overwrite",
    "distinct_count": "--input {data}/words --epsilon 1 --max-contributions 20 "
    "--report {out}/count.json --seed 11",
    "contribution_bounding": "--input {data}/graph --output {out}/records --max-contributions 2 "
    "--driver-threshold-rows 0 --finish continue --seed 11 --overwrite",
}


def run_all(env, master: str, out: Path, data: Path, in_process: tuple[str, ...] = ()) -> None:
    """Run every job on ``master``; jobs in ``in_process`` run in the test's local session."""
    import importlib

    for job, flags in JOBS.items():
        argv = [t.format(data=data, out=out) for t in flags.split()]
        if job in in_process:
            module = importlib.import_module(f"spark_dp.jobs.{job}")
            assert module.main([*argv, "--log-level", "WARNING"]) == 0
        else:
            submit(env, master, job, argv)


def test_jobs_from_the_zip_give_the_same_outputs_on_local_and_on_a_standalone_cluster(spark, env):
    from spark_dp.generators.spark_frames import hypergraph_frame, pairs_frame

    data = env["base"] / "data"
    words, _ = pairs_frame(spark, "zipf", n_users=3000, seed=5)
    words.write.parquet(str(data / "words"))
    graph, _ = hypergraph_frame(spark, "skewed", n_records=4000, seed=5)
    graph.write.parquet(str(data / "graph"))
    local, remote = env["base"] / "local", env["base"] / "cluster"
    # local[2] under spark-submit for one job; the others in this session's local mode (the
    # cluster runs below submit all three from the zip)
    run_all(env, "local[2]", local, data, in_process=("distinct_count", "contribution_bounding"))
    shipped = env["base"] / "conf_elsewhere" / "shipped.yaml"  # not in the driver's cwd
    shipped.parent.mkdir()
    shipped.write_text("algorithm: mad2r\nepsilon: 4\ndelta: 1.0e-4\n")
    with StandaloneCluster(workers=2, cores=1, memory="1g") as cluster:
        run_all(env, cluster.master_url, remote, data)
        # issue 16: the config reaches the driver by spark-submit --files only (client mode)
        argv = ["--input", f"{data}/words", "--output", f"{remote}/items_conf", "--seed", "11"]
        options = ("--files", str(shipped))
        submit(env, cluster.master_url, "partition_selection", [*argv, "--config", "shipped.yaml"],
               conf=options)  # fmt: skip
        apps = cluster.status().get("completedapps", [])
        procs = list(cluster.procs)
    assert all(p.poll() is not None for p in procs), "cluster processes left running"
    assert len(apps) == 4, "the four submissions did not run on the standalone master"
    assert not (env["base"] / "shipped.yaml").exists()
    assert rows(spark, remote / "items_conf") == rows(spark, local / "items")
    shipped_report = json.loads((remote / "items_conf.report.json").read_text())
    assert shipped_report["parameters"]["epsilon"] == 4

    assert rows(spark, local / "items") == rows(spark, remote / "items")
    assert len(rows(spark, local / "items")) > 0
    assert rows(spark, local / "records") == rows(spark, remote / "records")
    count_local = json.loads((local / "count.json").read_text())
    count_remote = json.loads((remote / "count.json").read_text())
    for key in ("estimate", "ell", "lower_bound"):
        assert count_local[key] == count_remote[key]
    for name in ("items.report.json", "records.report.confidential.json", "count.json"):
        report = json.loads((remote / name).read_text())
        assert report["randomness"]["mode"] != "entropy"
        assert report["randomness"]["production_safe"] is False
        assert report["spark"]["master"].startswith("spark://")
