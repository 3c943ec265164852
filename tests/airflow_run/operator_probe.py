"""Run by tests/airflow_run/test_dag_run.py with the Python of the Airflow installation.

Loads the shipped DAG file, submits each case with its ``SparkDPSubmitOperator`` (a real
spark-submit on local Spark) and prints, per case, whether Airflow would retry the failure:
``ok``, ``retry`` (an ``AirflowException``) or ``no-retry`` (an ``AirflowFailException``, which
Airflow never retries). Also checks that ``release_keys`` keeps an existing key.

    python operator_probe.py DAG_FILE WORK_DIR CASES_JSON
"""

import importlib.util
import json
import os
import sys
import warnings

warnings.simplefilter("ignore")

from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException  # noqa: E402

dag_file, work, cases = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
spec = importlib.util.spec_from_file_location("spark_dp_dag", dag_file)
dag_module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dag_module)

out = {}
for name, (application, args) in cases.items():
    op = dag_module.SparkDPSubmitOperator(
        task_id=name, application=application, application_args=args, conn_id="spark_default"
    )
    try:
        op.execute({})
        out[name] = "ok"
    except AirflowFailException:
        out[name] = "no-retry"
    except AirflowException:
        out[name] = "retry"

keys = os.path.join(work, "keys")
first = dag_module.release_keys(keys, ["a", "b"])
before = [open(p, "rb").read() for p in first]
again = dag_module.release_keys(keys, ["a", "b"])
out["keys_kept"] = again == first and [open(p, "rb").read() for p in again] == before
out["key_headers"] = [b.split(b"\n", 1)[0].decode() for b in before]
out["key_modes"] = [oct(os.stat(p).st_mode & 0o777) for p in first]
out["keys_distinct"] = before[0] != before[1]
out["pathsafe"] = dag_module.pathsafe("manual__2026-01-01T00:00:00+00:00")
print(json.dumps(out))
