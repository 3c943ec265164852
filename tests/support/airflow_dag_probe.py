"""Run by tests/repo/test_airflow_dag.py with the Python of an Airflow installation.

Loads conf/airflow with a real DagBag and prints the DAG's import errors, settings and tasks as
JSON.
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
    out["max_active_runs"] = dag.max_active_runs
    out["params"] = {k: dag.params[k] for k in dag.params}
    for t in dag.tasks:
        timeout = t.execution_timeout
        task = {
            "operator": type(t).__name__,
            "bases": [c.__name__ for c in type(t).__mro__],
            "upstream": sorted(u.task_id for u in t.upstream_list),
            "retries": t.retries,
            "execution_timeout_s": timeout.total_seconds() if timeout else None,
        }
        if hasattr(t, "application"):
            task.update(
                application=t.application,
                application_args=list(t.application_args),
                py_files=t.py_files,
                files=t.files,
                conn_id=getattr(t, "_conn_id", None),
            )
        elif hasattr(t, "bash_command"):
            task["bash_command"] = t.bash_command
        else:
            task["op_kwargs"] = t.op_kwargs
        out["tasks"][t.task_id] = task
print(json.dumps(out, default=str))
