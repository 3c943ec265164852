"""Example Airflow DAG: generate -> contribution bounding -> partition selection -> distinct count.

Copy this file into your DAGs folder (or point ``dags_folder`` at ``conf/airflow``). It runs the
spark_dp jobs with ``SparkSubmitOperator`` (provider ``apache-airflow-providers-apache-spark``)
on the cluster behind the ``spark_default`` connection, shipping the package as
``dist/spark_dp.zip`` (``make package``) and passing each job its YAML config from ``conf/``.

Settings (environment variables of the Airflow workers, read without touching the metadata
database while the DAG is parsed):

* ``SPARK_DP_HOME``: the spark_dp checkout on the Airflow workers (default: two levels above
  this file);
* ``SPARK_DP_DATA``: root folder or URI of the data (default ``<home>/demo_output/airflow``).

Every task writes with ``--overwrite`` to a folder of its run date, so an Airflow retry or a
re-run of the same date is safe (outputs are replaced atomically). Each privacy job appends what
it spends to ``<data>/ledger.jsonl``; ``spark-dp budget --ledger ...`` sums it per dataset.
Production runs omit ``--seed`` (noise from OS entropy); the demo pins the data seed only.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from airflow import DAG
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator


def _setting(name: str, default: str) -> str:
    """Read a setting from the environment (no metadata-database access while parsing)."""
    return os.environ.get(name, default)


HOME = _setting("SPARK_DP_HOME", str(Path(__file__).resolve().parents[2]))
DATA = _setting("SPARK_DP_DATA", f"{HOME}/demo_output/airflow")
RUN = DATA + "/{{ ds }}"
LEDGER = f"{DATA}/ledger.jsonl"
PY_FILES = f"{HOME}/dist/spark_dp.zip"
SPARK_CONF = {
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.adaptive.skewJoin.enabled": "true",
}


def _job(task_id: str, job: str, flags: str, overwrite: bool = True) -> SparkSubmitOperator:
    """One spark-submit task; ``flags`` is split on spaces, then ``{RUN}``/``{LEDGER}`` are
    filled in per token (so paths with spaces survive). Re-runs overwrite their own output."""
    args = [t.format(RUN=RUN, LEDGER=LEDGER) for t in flags.split()]
    if overwrite:
        args.append("--overwrite")
    return SparkSubmitOperator(
        task_id=task_id,
        application=f"{HOME}/jobs/{job}.py",
        py_files=PY_FILES,
        conn_id="spark_default",
        conf=SPARK_CONF,
        name=f"spark_dp.{job}",
        application_args=["--config", f"{HOME}/conf/{job}.yaml", *args],
        retries=2,
    )


with DAG(
    dag_id="spark_dp_pipeline",
    description="spark_dp: generate, bound contributions, select partitions, count distinct",
    start_date=datetime(2026, 1, 1),
    schedule=None,
    catchup=False,
    tags=["spark_dp", "differential-privacy"],
) as dag:
    generate_pairs = _job(
        "generate_pairs", "generate", "--kind zipf --users 20000 --output {RUN}/pairs --seed 7"
    )
    generate_graph = _job(
        "generate_hypergraph",
        "generate",
        "--kind skewed --records 50000 --output {RUN}/graph --seed 7",
    )
    bound = _job(
        "contribution_bounding",
        "contribution_bounding",
        "--input {RUN}/graph --output {RUN}/bounded_records --capacity 4",
    )
    select = _job(
        "partition_selection",
        "partition_selection",
        "--input {RUN}/pairs --output {RUN}/released_items --ledger {LEDGER} "
        "--dataset-id {RUN}/pairs",
    )
    count = _job(
        "distinct_count",
        "distinct_count",
        "--input {RUN}/pairs --report {RUN}/distinct_count.json --ledger {LEDGER} "
        "--dataset-id {RUN}/pairs",
        overwrite=False,
    )
    generate_graph >> bound
    [generate_pairs, bound] >> select >> count
