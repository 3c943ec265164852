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

ROOT = Path(__file__).resolve().parents[2]
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
        SPARK_DP_KEYS="/secrets/spark_dp",
        SPARK_DP_DATASET_ID="warehouse.user_items",
        SPARK_DP_BUDGET_STORE="postgresql://dp@budget-db/spark_dp",
    )
    done = subprocess.run(
        [
            AIRFLOW_PYTHON,
            str(ROOT / "tests" / "support" / "airflow_dag_probe.py"),
            str(ROOT / "conf/airflow"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


RUN_DIR = "hdfs:///data/spark_dp/runs/{{ ds }}/{{ run_id | pathsafe }}"
KEY_DIR = "/secrets/spark_dp/{{ dag.dag_id }}/{{ run_id | pathsafe }}"
PRIVACY_TASKS = (
    "contribution_bounding",
    "partition_selection",
    "distinct_count",
    "selection_from_table",
)


def test_dag_has_no_import_errors(dag):
    assert dag["import_errors"] == {}
    assert set(dag["tasks"]) == {
        "release_keys",
        "budget_cap",
        "generate_pairs",
        "generate_hypergraph",
        "contribution_bounding",
        "partition_selection",
        "distinct_count",
        "generate_pairs_table",
        "selection_from_table",
    }


def test_order_keys_generate_bound_select_count(dag):
    t = dag["tasks"]
    assert t["contribution_bounding"]["upstream"] == ["generate_hypergraph", "release_keys"]
    assert t["partition_selection"]["upstream"] == [
        "budget_cap",
        "contribution_bounding",
        "generate_pairs",
        "release_keys",
    ]
    assert t["distinct_count"]["upstream"] == ["budget_cap", "partition_selection", "release_keys"]
    assert t["selection_from_table"]["upstream"] == [
        "budget_cap",
        "generate_pairs_table",
        "release_keys",
    ]


def test_the_table_tasks_write_and_read_catalog_tables(dag):
    t = dag["tasks"]
    generate = t["generate_pairs_table"]["application_args"]
    assert generate[generate.index("--output-table") + 1] == "spark_dp_demo_pairs"
    select = t["selection_from_table"]["application_args"]
    assert select[select.index("--input-table") + 1] == "spark_dp_demo_pairs"
    assert select[select.index("--output-table") + 1] == "spark_dp_demo_items"


def test_one_run_at_a_time_with_timeouts_and_retries(dag):
    assert dag["max_active_runs"] == 1
    for task in dag["tasks"].values():
        assert task["retries"] == 2
        assert task["execution_timeout_s"] == 120 * 60


def test_budget_and_bounds_are_dag_params(dag):
    params = dag["params"]
    assert params["epsilon"] == 1.0 and params["delta"] == 1e-5
    assert params["count_epsilon"] == 1.0 and params["count_max_contributions"] == 100
    args = {name: dag["tasks"][name]["application_args"] for name in PRIVACY_TASKS}
    assert args["partition_selection"][args["partition_selection"].index("--epsilon") + 1] == (
        "{{ params.epsilon }}"
    )
    assert "{{ params.delta }}" in args["partition_selection"]
    assert "{{ params.count_epsilon }}" in args["distinct_count"]
    assert "{{ params.count_max_contributions }}" in args["distinct_count"]


@pytest.mark.parametrize(
    ("task", "job"),
    [
        ("generate_pairs", "generate"),
        ("generate_hypergraph", "generate"),
        ("contribution_bounding", "contribution_bounding"),
        ("partition_selection", "partition_selection"),
        ("distinct_count", "distinct_count"),
        ("generate_pairs_table", "generate"),
        ("selection_from_table", "partition_selection"),
    ],
)
def test_every_job_is_a_spark_submit_with_its_config_shipped(dag, task, job):
    t = dag["tasks"][task]
    assert t["operator"] == "SparkDPSubmitOperator"
    assert "SparkSubmitOperator" in t["bases"]  # exit 2/3 not retried: tests/airflow_run
    assert t["application"] == f"/opt/spark_dp/jobs/{job}.py"
    assert t["py_files"] == "/opt/spark_dp/dist/spark_dp.zip"
    assert t["conn_id"] == "spark_default"
    config = f"/opt/spark_dp/conf/{job}.yaml"
    assert t["files"] == config  # shipped with --files: a cluster-mode driver gets it too
    args = t["application_args"]
    assert args[:2] == ["--config", config]
    assert (ROOT / "conf" / f"{job}.yaml").exists()
    assert any(a.startswith(RUN_DIR) for a in args)  # outputs per date and run
    if job != "distinct_count":
        assert "--overwrite" in args  # a retry replaces its own output


def test_each_privacy_task_reads_its_own_key_of_the_run(dag):
    keys = dag["tasks"]["release_keys"]["op_kwargs"]
    assert keys == {"directory": KEY_DIR, "names": list(PRIVACY_TASKS)}
    for task in PRIVACY_TASKS:
        args = dag["tasks"][task]["application_args"]
        assert args[args.index("--noise-key-file") + 1] == f"{KEY_DIR}/{task}.key"
        assert "--seed" not in args  # production noise from the key, never a seed


def test_privacy_tasks_spend_from_one_stable_dataset(dag):
    for task in ("partition_selection", "distinct_count", "selection_from_table"):
        args = dag["tasks"][task]["application_args"]
        assert args[args.index("--budget-store") + 1] == "postgresql://dp@budget-db/spark_dp"
        # the privacy unit is the user, not the day: no date in the dataset id
        assert args[args.index("--dataset-id") + 1] == "warehouse.user_items"
    cap = dag["tasks"]["budget_cap"]["bash_command"]
    assert "budget set-cap --if-missing --store postgresql://dp@budget-db/spark_dp" in cap
    assert "--dataset warehouse.user_items" in cap  # a cap only where none is set
