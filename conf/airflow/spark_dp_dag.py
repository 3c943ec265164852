"""Airflow DAG: keys, budget cap -> generate -> bound contributions -> select -> count.

Copy this file into your DAGs folder (or point ``dags_folder`` at ``conf/airflow``). It runs the
spark_dp jobs with ``SparkSubmitOperator`` (provider ``apache-airflow-providers-apache-spark``)
on the cluster behind the ``spark_default`` connection, shipping the package as
``dist/spark_dp.zip`` (``make package``) and each job's YAML config from ``conf/`` with
``--files`` (so a driver in ``--deploy-mode cluster`` gets it too). ``make airflow-test`` runs
it end to end with ``airflow dags test`` on local Spark.

Settings (environment variables of the Airflow workers, read without touching the metadata
database while the DAG is parsed):

* ``SPARK_DP_HOME``: the spark_dp checkout on the Airflow workers (default: two levels above
  this file);
* ``SPARK_DP_DATA``: root folder or URI of the data (default ``<home>/demo_output/airflow``);
* ``SPARK_DP_KEYS``: a private directory for the release keys, readable by the Airflow workers
  only and shared by them (default ``<home>/demo_output/airflow-keys``; in production a mount of
  your secret store);
* ``SPARK_DP_DATASET_ID``: the dataset's id in the budget store (default
  ``spark_dp_demo.user_items``);
* ``SPARK_DP_BUDGET_STORE``: the budget store's URL (default
  ``sqlite:///<home>/demo_output/airflow-budget.db``; a team uses PostgreSQL), and
  ``SPARK_DP_DEMO_CAP_EPSILON`` / ``SPARK_DP_DEMO_CAP_DELTA``: the cap the demo's ``budget_cap``
  task sets when the dataset has none (defaults 10 and 1e-3). In production an operator sets
  caps with ``spark-dp budget set-cap``: a cap is policy, never a DAG parameter that whoever
  triggers a run could raise;
* ``SPARK_DP_PYTHON``: the Python that runs ``spark-dp budget`` and ``spark-dp keygen`` on the
  Airflow worker, with spark_dp's dependencies (default ``PYSPARK_PYTHON``, else ``python3``;
  spark_dp itself comes from the zip);
* ``SPARK_DP_SPARK_CONF``: extra Spark settings as a JSON object (tests: small shuffles);
* ``SPARK_DP_TASK_TIMEOUT_MINUTES``: each task's ``execution_timeout`` (default 120);
* ``SPARK_DP_TABLE_CONF``: the Spark settings of the table-based tasks as a JSON object: the
  metastore that keeps their tables from one spark-submit to the next (default: Hive's, in a
  local Derby database under ``<data>``; on a cluster, your metastore:
  ``spark.hadoop.hive.metastore.uris``, Glue, ...).

Tables: ``generate_pairs_table`` writes demo pairs to the catalog table ``spark_dp_demo_pairs``
(``--output-table``), and ``selection_from_table`` releases its items to the table
``spark_dp_demo_items`` (``--input-table`` / ``--output-table``, docs/operations/tables.md).

Privacy and re-runs:

* ε, δ, ℓ_max (and the bound, and the demo data sizes) are DAG ``params``: set them when
  triggering (``--conf '{"epsilon": 0.5}'``); they are validated before any task runs.
* The privacy unit is the user, not the day: every run spends from one stable dataset id
  (``SPARK_DP_DATASET_ID``) in the budget store, which each privacy job checks and reserves
  before reading data (``spark-dp budget --store URL`` lists the spending); a run over the cap
  fails with exit 3 and is not retried.
* ``release_keys`` creates one key per privacy task and run (``<keys>/<dag>/<run>/<task>.key``,
  written by ``spark-dp keygen``: 32 random bytes in spark_dp's key file format, mode 0600)
  unless it exists; a retry reads the same key, so it is the same release, never a second draw
  of the noise. Delete a run's keys when its outputs are final.
* Outputs live under ``<data>/runs/{{ ds }}/<run id>``: a retry or a cleared task replaces its
  own output (``--overwrite``, atomic), and another date or another run never shares a path.
* A job that exits 2 (bad arguments, configuration or input) or 3 (the privacy budget refused
  the release) fails at once: retrying cannot help (:class:`SparkDPSubmitOperator`). Other
  failures are retried twice; one run at a time (``max_active_runs=1``).
* Production runs pass no ``--seed`` to the privacy jobs (the keys come from OS entropy); the
  demo pins the seed of the generated data only.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.providers.common.compat.sdk import (
    DAG,
    AirflowException,
    AirflowFailException,
    Param,
)

try:  # Airflow 3
    from airflow.providers.standard.operators.bash import BashOperator
    from airflow.providers.standard.operators.python import PythonOperator
except ImportError:  # Airflow 2
    from airflow.operators.bash import BashOperator  # type: ignore[no-redef]
    from airflow.operators.python import PythonOperator  # type: ignore[no-redef]


def _setting(name: str, default: str) -> str:
    """Read a setting from the environment (no metadata-database access while parsing)."""
    return os.environ.get(name, default)


HOME = _setting("SPARK_DP_HOME", str(Path(__file__).resolve().parents[2]))
DATA = _setting("SPARK_DP_DATA", f"{HOME}/demo_output/airflow")
KEYS = _setting("SPARK_DP_KEYS", f"{HOME}/demo_output/airflow-keys")
DATASET_ID = _setting("SPARK_DP_DATASET_ID", "spark_dp_demo.user_items")
TIMEOUT = timedelta(minutes=int(_setting("SPARK_DP_TASK_TIMEOUT_MINUTES", "120")))
BUDGET_STORE = _setting("SPARK_DP_BUDGET_STORE", f"sqlite:///{HOME}/demo_output/airflow-budget.db")
DEMO_CAP = (
    _setting("SPARK_DP_DEMO_CAP_EPSILON", "10"),
    _setting("SPARK_DP_DEMO_CAP_DELTA", "1e-3"),
)
PYTHON = _setting("SPARK_DP_PYTHON", os.environ.get("PYSPARK_PYTHON", "python3"))
PY_FILES = f"{HOME}/dist/spark_dp.zip"
SPARK_CONF = {
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.adaptive.skewJoin.enabled": "true",
    **json.loads(_setting("SPARK_DP_SPARK_CONF", "{}")),
}
TABLE_CONF = {
    "spark.sql.catalogImplementation": "hive",
    "spark.sql.warehouse.dir": f"{DATA}/warehouse",
    "spark.hadoop.javax.jdo.option.ConnectionURL": (
        f"jdbc:derby:;databaseName={DATA}/metastore_db;create=true"
    ),
    **json.loads(_setting("SPARK_DP_TABLE_CONF", "{}")),
}
RUN = DATA + "/runs/{{ ds }}/{{ run_id | pathsafe }}"
KEY_DIR = KEYS + "/{{ dag.dag_id }}/{{ run_id | pathsafe }}"
PRIVACY_TASKS = (
    "contribution_bounding",
    "partition_selection",
    "distinct_count",
    "selection_from_table",
)
# Where each release is charged: one stable dataset id across run dates (the privacy unit is the
# user, not the day).
BUDGET_FLAGS = {"--budget-store": BUDGET_STORE, "--dataset-id": DATASET_ID}

# spark_dp's exit codes that a retry cannot fix (spark_dp/jobs/publish.py).
NO_RETRY_EXIT_CODES = {
    2: "bad arguments, configuration or input",
    3: "the privacy budget refused the release",
}


def pathsafe(value: str) -> str:
    """``value`` with every character but letters, digits, ``.``, ``_`` and ``-`` replaced by
    ``_`` (a run id such as ``manual__2026-01-01T00:00:00+00:00`` has ``:`` and ``+``, which
    Hadoop paths refuse)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", str(value))


def release_keys(directory: str, names: list[str]) -> list[str]:
    """Create ``<directory>/<name>.key`` with ``spark-dp keygen`` (spark_dp's key file: 32 bytes
    from OS entropy, mode 0600) for each name unless it exists; return the paths. Idempotent: a
    retry or a re-run keeps the keys (``--if-missing`` checks that a kept file is a key)."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=PY_FILES)  # spark_dp from the zip the jobs ship
    paths = []
    for name in names:
        path = os.path.join(directory, f"{name}.key")
        keygen = [PYTHON, "-m", "spark_dp", "keygen", "--out", path, "--if-missing"]
        done = subprocess.run(keygen, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise AirflowFailException(f"spark-dp keygen failed: {done.stderr.strip()}")
        paths.append(path)
    return paths


def exit_code(operator: SparkSubmitOperator, error: BaseException) -> int | None:
    """spark-submit's exit code after a failed submit (the driver's, in client mode)."""
    process = getattr(getattr(operator, "_hook", None), "_submit_sp", None)
    code = getattr(process, "returncode", None)
    if code is None:
        found = re.search(r"Error code is: (-?\d+)", str(error))
        code = int(found.group(1)) if found else None
    return code


class SparkDPSubmitOperator(SparkSubmitOperator):
    """``SparkSubmitOperator`` that fails without retrying when a spark_dp job exits 2 or 3.

    Exit 2 is a usage error (arguments, configuration, input) and exit 3 a refused budget: the
    same submit would fail again, and a privacy release must not be attempted blindly twice.
    Airflow does not retry an ``AirflowFailException``; any other failure keeps ``retries``.
    """

    def execute(self, context: Any) -> Any:
        try:
            return super().execute(context)
        except AirflowFailException:
            raise
        except AirflowException as error:
            code = exit_code(self, error)
            if code in NO_RETRY_EXIT_CODES:
                raise AirflowFailException(
                    f"{self.task_id}: spark_dp job exited {code} "
                    f"({NO_RETRY_EXIT_CODES[code]}); not retried: fix it, then clear the task"
                ) from error
            raise


def _job(
    task_id: str,
    job: str,
    flags: dict[str, str],
    *,
    overwrite: bool = True,
    key: bool = False,
    tables: bool = False,
) -> SparkSubmitOperator:
    """One spark-submit of ``jobs/<job>.py`` with its config shipped and passed by path, then
    ``flags`` (flag -> value); ``--overwrite`` replaces the task's own output on a retry;
    ``key``: the task's release key from ``release_keys``; ``tables``: with the metastore of
    the table-based tasks (``TABLE_CONF``)."""
    config = f"{HOME}/conf/{job}.yaml"
    args = ["--config", config]
    for flag, value in flags.items():
        args += [flag, value]
    if key:
        args += ["--noise-key-file", f"{KEY_DIR}/{task_id}.key"]
    if overwrite:
        args.append("--overwrite")
    return SparkDPSubmitOperator(
        task_id=task_id,
        application=f"{HOME}/jobs/{job}.py",
        py_files=PY_FILES,
        files=config,
        conn_id="spark_default",
        conf=SPARK_CONF | TABLE_CONF if tables else SPARK_CONF,
        name=f"spark_dp.{job}",
        application_args=args,
    )


with DAG(
    dag_id="spark_dp_pipeline",
    description="spark_dp: generate, bound contributions, select partitions, count distinct",
    start_date=datetime(2026, 1, 1),
    schedule=None,
    catchup=False,
    max_active_runs=1,
    tags=["spark_dp", "differential-privacy"],
    user_defined_filters={"pathsafe": pathsafe},
    default_args={
        "retries": 2,
        "retry_delay": timedelta(minutes=5),
        "execution_timeout": TIMEOUT,
    },
    params={
        "epsilon": Param(1.0, type="number", exclusiveMinimum=0, description="ε of the selection"),
        "delta": Param(
            1e-5, type="number", exclusiveMinimum=0, maximum=1e-3, description="δ (≤ 1e-3)"
        ),
        "count_epsilon": Param(
            1.0, type="number", exclusiveMinimum=0, description="ε of the distinct count"
        ),
        "count_max_contributions": Param(
            100, type="integer", minimum=1, description="ℓ_max of the distinct count (public)"
        ),
        "bounding_max_contributions": Param(
            4, type="integer", minimum=1, description="records per user (the bound)"
        ),
        "users": Param(20000, type="integer", minimum=1, description="demo data: users"),
        "records": Param(50000, type="integer", minimum=1, description="demo data: records"),
    },
) as dag:
    keys = PythonOperator(
        task_id="release_keys",
        python_callable=release_keys,
        op_kwargs={"directory": KEY_DIR, "names": list(PRIVACY_TASKS)},
    )
    # The demo bootstraps its store: a cap only where the dataset has none (an operator's cap
    # is kept). spark_dp comes from the zip the jobs ship.
    cap = BashOperator(
        task_id="budget_cap",
        bash_command=(
            f"PYTHONPATH={shlex.quote(PY_FILES)} {shlex.quote(PYTHON)} -m spark_dp budget "
            f"set-cap --if-missing --store {shlex.quote(BUDGET_STORE)} "
            f"--dataset {shlex.quote(DATASET_ID)} --epsilon {DEMO_CAP[0]} --delta {DEMO_CAP[1]}"
        ),
    )
    generate_pairs = _job(
        "generate_pairs",
        "generate",
        {"--kind": "zipf", "--users": "{{ params.users }}", "--output": f"{RUN}/pairs"}
        | {"--seed": "7"},
    )
    generate_graph = _job(
        "generate_hypergraph",
        "generate",
        {"--kind": "skewed", "--records": "{{ params.records }}", "--output": f"{RUN}/graph"}
        | {"--seed": "7"},
    )
    bound = _job(
        "contribution_bounding",
        "contribution_bounding",
        {"--input": f"{RUN}/graph", "--output": f"{RUN}/bounded_records"}
        | {"--max-contributions": "{{ params.bounding_max_contributions }}"},
        key=True,
    )
    select = _job(
        "partition_selection",
        "partition_selection",
        {"--input": f"{RUN}/pairs", "--output": f"{RUN}/released_items"}
        | {"--epsilon": "{{ params.epsilon }}", "--delta": "{{ params.delta }}"}
        | BUDGET_FLAGS,
        key=True,
    )
    count = _job(
        "distinct_count",
        "distinct_count",
        {"--input": f"{RUN}/pairs", "--report": f"{RUN}/distinct_count.json"}
        | {"--epsilon": "{{ params.count_epsilon }}"}
        | {"--max-contributions": "{{ params.count_max_contributions }}"}
        | BUDGET_FLAGS,
        overwrite=False,
        key=True,
    )
    pairs_table = _job(
        "generate_pairs_table",
        "generate",
        {"--kind": "zipf", "--users": "{{ params.users }}", "--seed": "7"}
        | {"--output-table": "spark_dp_demo_pairs", "--report": f"{RUN}/pairs_table.json"},
        tables=True,
    )
    select_table = _job(
        "selection_from_table",
        "partition_selection",
        {"--input-table": "spark_dp_demo_pairs", "--output-table": "spark_dp_demo_items"}
        | {"--report": f"{RUN}/items_table.json"}
        | {"--epsilon": "{{ params.epsilon }}", "--delta": "{{ params.delta }}"}
        | BUDGET_FLAGS,
        key=True,
        tables=True,
    )
    keys >> [bound, select, count, select_table]
    cap >> select_table
    pairs_table >> select_table
    cap >> [select, count]
    generate_graph >> bound
    [generate_pairs, bound] >> select >> count
