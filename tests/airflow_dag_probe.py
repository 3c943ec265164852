"""Run by tests/test_airflow_dag.py with the Python of an Airflow installation.

Loads conf/airflow with a real DagBag and prints the DAG's import errors and tasks as JSON.
"""

import json
import sys
import warnings

warnings.simplefilter("ignore")

from airflow.models.dagbag import DagBag  # noqa: E402

bag = DagBag(dag_folder=sys.argv[1])
out = {"import_errors": {str(k): str(v) for k, v in bag.import_errors.items()}, "tasks": {}}
dag = bag.dags.get("spark_dp_pipeline")
if dag is not None:
    for t in dag.tasks:
        out["tasks"][t.task_id] = {
            "operator": type(t).__name__,
            "application": t.application,
            "application_args": list(t.application_args),
            "py_files": t.py_files,
            "conn_id": getattr(t, "_conn_id", None),
            "upstream": sorted(u.task_id for u in t.upstream_list),
        }
print(json.dumps(out))
