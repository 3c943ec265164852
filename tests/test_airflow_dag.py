"""The example Airflow DAG loads in a real Airflow installation, with the right spark-submits.

Airflow cannot share a virtualenv with pyspark's pins, so it lives in its own (``make
airflow-venv`` creates ``.venv-airflow``; ``make test`` does it first). The DagBag is loaded in
a subprocess with that interpreter (``SPARK_DP_AIRFLOW_PYTHON`` overrides the path).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
AIRFLOW_PYTHON = os.environ.get(
    "SPARK_DP_AIRFLOW_PYTHON", str(ROOT / ".venv-airflow" / "bin" / "python")
)


@pytest.fixture(scope="module")
def dag(tmp_path_factory):
    if not Path(AIRFLOW_PYTHON).exists():
        pytest.fail(
            f"no Airflow interpreter at {AIRFLOW_PYTHON}; run `make airflow-venv` "
            "(make test does it) or set SPARK_DP_AIRFLOW_PYTHON"
        )
    home = tmp_path_factory.mktemp("airflow_home")
    env = dict(
        os.environ,
        AIRFLOW_HOME=str(home),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        SPARK_DP_HOME="/opt/spark_dp",
        SPARK_DP_DATA="hdfs:///data/spark_dp",
    )
    done = subprocess.run(
        [AIRFLOW_PYTHON, str(ROOT / "tests" / "airflow_dag_probe.py"), str(ROOT / "conf/airflow")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_dag_has_no_import_errors(dag):
    assert dag["import_errors"] == {}
    assert set(dag["tasks"]) == {
        "generate_pairs",
        "generate_hypergraph",
        "contribution_bounding",
        "partition_selection",
        "distinct_count",
    }


def test_order_generate_bound_select_count(dag):
    t = dag["tasks"]
    assert t["contribution_bounding"]["upstream"] == ["generate_hypergraph"]
    assert t["partition_selection"]["upstream"] == ["contribution_bounding", "generate_pairs"]
    assert t["distinct_count"]["upstream"] == ["partition_selection"]


@pytest.mark.parametrize(
    ("task", "job"),
    [
        ("generate_pairs", "generate"),
        ("generate_hypergraph", "generate"),
        ("contribution_bounding", "contribution_bounding"),
        ("partition_selection", "partition_selection"),
        ("distinct_count", "distinct_count"),
    ],
)
def test_every_task_is_a_spark_submit_of_its_job_with_its_config(dag, task, job):
    t = dag["tasks"][task]
    assert t["operator"] == "SparkSubmitOperator"
    assert t["application"] == f"/opt/spark_dp/jobs/{job}.py"
    assert t["py_files"] == "/opt/spark_dp/dist/spark_dp.zip"
    assert t["conn_id"] == "spark_default"
    args = t["application_args"]
    assert args[:2] == ["--config", f"/opt/spark_dp/conf/{job}.yaml"]
    assert (ROOT / "conf" / f"{job}.yaml").exists()
    run_dir = "hdfs:///data/spark_dp/{{ ds }}"
    assert any(a.startswith(run_dir) for a in args)
    if job != "distinct_count":
        assert "--overwrite" in args  # a retry of the same date is safe


def test_privacy_tasks_append_to_the_ledger(dag):
    for task in ("partition_selection", "distinct_count"):
        args = dag["tasks"][task]["application_args"]
        assert args[args.index("--ledger") + 1] == "hdfs:///data/spark_dp/ledger.jsonl"
        assert "--seed" not in args  # production noise from OS entropy
