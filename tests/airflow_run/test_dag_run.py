"""The shipped Airflow DAG runs end to end (``make airflow-test``; issue 16.1, issue 14.5).

A real Airflow (``.venv-airflow``, its own SQLite metadata database in a temporary
AIRFLOW_HOME) runs ``airflow dags test spark_dp_pipeline`` with ``spark_default`` pointing at
local[2]: every task is a real spark-submit of a spark_dp job (spark-submit from this
interpreter's pyspark), on small demo data set through the DAG's params. The test then reads
the run's task states from Airflow's metadata database and checks the outputs, the reports,
the budget store and the keys. A second test submits failing jobs through the DAG's operator and
checks that exit codes 2 and 3 are not retried while others are.

It takes minutes (five spark-submits), so it runs in its own pytest process, not in the main
suite (tests/conftest.py leaves this folder out unless SPARK_DP_TEST_SUITE=airflow_run).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from spark_dp.budget import BudgetStore
from spark_dp.randomness import Randomness
from spark_dp.randomness.key_file import KEY_FILE_HEADER

ROOT = Path(__file__).resolve().parents[2]
AIRFLOW_BIN = Path(
    os.environ.get("SPARK_DP_AIRFLOW_PYTHON", ROOT / ".venv-airflow" / "bin" / "python")
).parent
DAG_FILE = ROOT / "conf" / "airflow" / "spark_dp_dag.py"
DATASET_ID = "spark_dp_demo.user_items"
# small demo data and test-speed Spark settings (what tests/conftest.py uses for its session)
RUN_CONF = {"users": 1500, "records": 2000, "count_max_contributions": 8, "epsilon": 0.8}
SPARK_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.sql.codegen.wholeStage": "false",
    "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
}
TASKS = {
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


def airflow_env(home: Path) -> dict[str, str]:
    """Environment of the Airflow commands: a fresh home and SQLite database, the DAG folder,
    ``spark_default`` = local[2], spark-submit and the workers from this interpreter."""
    if not (AIRFLOW_BIN / "airflow").exists():
        pytest.fail(f"no Airflow at {AIRFLOW_BIN}; run `make airflow-venv`")
    if not (ROOT / "dist" / "spark_dp.zip").exists():
        pytest.fail("dist/spark_dp.zip is missing; run `make package` (make airflow-test does)")
    venv_bin = str(Path(sys.executable).parent)
    return dict(
        os.environ,
        AIRFLOW_HOME=str(home),
        AIRFLOW__CORE__DAGS_FOLDER=str(DAG_FILE.parent),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__CORE__UNIT_TEST_MODE="False",
        AIRFLOW_CONN_SPARK_DEFAULT=json.dumps({"conn_type": "spark", "host": "local[2]"}),
        SPARK_DP_HOME=str(ROOT),
        SPARK_DP_DATA=str(home / "data"),
        SPARK_DP_KEYS=str(home / "keys"),
        SPARK_DP_BUDGET_STORE=f"sqlite:///{home / 'budget.db'}",
        XDG_STATE_HOME=str(home / "state"),  # a run without a store: its ledger, never ~/.local
        SPARK_DP_PYTHON=sys.executable,
        SPARK_DP_SPARK_CONF=json.dumps(SPARK_CONF),
        PATH=f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}",
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        SPARK_LOCAL_IP=os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
    )


def airflow(env: dict[str, str], *args: str, timeout: int = 1800) -> str:
    done = subprocess.run(
        [str(AIRFLOW_BIN / "airflow"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    output = f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    assert done.returncode == 0, f"airflow {' '.join(args)} failed:\n{output}"
    return done.stdout


@pytest.fixture(scope="module")
def dag_run(tmp_path_factory):
    """One ``airflow dags test`` of the shipped DAG; returns (home, run_id, task states)."""
    home = tmp_path_factory.mktemp("airflow_home")
    env = airflow_env(home)
    airflow(env, "db", "migrate")
    airflow(env, "dags", "test", "spark_dp_pipeline", "2026-01-01", "--conf", json.dumps(RUN_CONF))
    db = sqlite3.connect(home / "airflow.db")
    try:
        runs = db.execute(
            "SELECT run_id, state FROM dag_run WHERE dag_id = 'spark_dp_pipeline'"
        ).fetchall()
        assert len(runs) == 1, runs
        run_id, state = runs[0]
        tasks = dict(
            db.execute(
                "SELECT task_id, state FROM task_instance WHERE run_id = ?", (run_id,)
            ).fetchall()
        )
    finally:
        db.close()
    assert state == "success", tasks
    return home, run_id, tasks


def test_every_task_succeeded(dag_run):
    _, _, tasks = dag_run
    assert tasks == dict.fromkeys(TASKS, "success")


def test_outputs_reports_budget_and_keys_of_the_run(dag_run):
    home, run_id, _ = dag_run
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in run_id)
    run = home / "data" / "runs" / "2026-01-01" / safe
    for table in ("pairs", "graph", "bounded_records", "released_items"):
        assert (run / table / "_SUCCESS").exists(), table
    assert pq.read_table(run / "released_items").num_rows >= 1
    # the table-based tasks: tables of the Hive metastore, written under the warehouse
    warehouse = home / "data" / "warehouse"
    assert pq.read_table(warehouse / "spark_dp_demo_items").num_rows >= 1
    table_report = json.loads((run / "items_table.json").read_text())
    assert table_report["budget"]["dataset"] == DATASET_ID
    keys = home / "keys" / "spark_dp_pipeline" / safe
    selection = json.loads((run / "released_items.report.json").read_text())
    count = json.loads((run / "distinct_count.json").read_text())
    # the DAG's params reached the jobs (epsilon and count_max_contributions were set for this run)
    assert selection["parameters"]["epsilon"] == RUN_CONF["epsilon"]
    assert count["parameters"]["max_contributions"] == RUN_CONF["count_max_contributions"]
    # each privacy job used its own key of this run: a retry reads the same file
    for report, task in ((selection, "partition_selection"), (count, "distinct_count")):
        assert report["randomness"]["mode"] == "key-file"
        key = Randomness.from_key_file(str(keys / f"{task}.key"))
        assert report["randomness"]["key_fingerprint"] == key.fingerprint
    # both releases were charged to the one dataset of the store, under the demo's cap
    for report in (selection, count):
        assert report["budget"]["enforced"] and report["budget"]["dataset"] == DATASET_ID
    with BudgetStore.open(f"sqlite:///{home / 'budget.db'}") as store:
        (budget,) = store.summary()
    assert budget.dataset == DATASET_ID and budget.releases == 3 and budget.cap_epsilon == 10
    spent = 2 * RUN_CONF["epsilon"] + count["privacy"]["epsilon_spent"]
    assert budget.spent_epsilon == pytest.approx(spent) and budget.reserved_epsilon == 0


def test_exit_codes_2_and_3_are_not_retried(tmp_path):
    env = airflow_env(tmp_path)
    scripts = {}
    for code in (0, 1, 3):
        script = tmp_path / f"exit_{code}.py"
        script.write_text(f"import sys\nsys.exit({code})\n")
        scripts[code] = str(script)
    cases = {
        # a real usage error of a real job: distinct_count without epsilon (exit 2)
        "usage_error": [str(ROOT / "jobs" / "distinct_count.py"), ["--input", str(tmp_path)]],
        "budget_refused": [scripts[3], []],
        "crash": [scripts[1], []],
        "ok": [scripts[0], []],
    }
    done = subprocess.run(
        [
            str(AIRFLOW_BIN / "python"),
            str(Path(__file__).with_name("operator_probe.py")),
            str(DAG_FILE),
            str(tmp_path),
            json.dumps(cases),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["usage_error"] == "no-retry"
    assert out["budget_refused"] == "no-retry"
    assert out["crash"] == "retry"
    assert out["ok"] == "ok"
    assert out["keys_kept"] and out["keys_distinct"]
    assert out["key_headers"] == [KEY_FILE_HEADER] * 2  # spark-dp keygen's files
    assert out["key_modes"] == ["0o600", "0o600"]
    assert out["pathsafe"] == "manual__2026-01-01T00_00_00_00_00"
