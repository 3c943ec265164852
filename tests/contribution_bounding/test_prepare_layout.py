"""Where the prepared users table is aggregated (issue 18: 100M incidences on Spark 3.5).

Adaptive execution merges small shuffle partitions up to 64 MB; at 100M incidences it merged
the per-user aggregation's 200 partitions into 12 of about 7M users each, and Spark 3.5's hash
aggregation of one of them could not acquire memory to spill in a 1 GiB driver. The users table
is therefore shuffled into an explicit number of partitions, which adaptive execution keeps.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from spark_dp.contribution_bounding.orders import OrderPlan
from spark_dp.contribution_bounding.prepare import prepare
from spark_dp.contribution_bounding.state_store import StateStore


def _users_plan(spark: SparkSession) -> tuple[str, dict[str, int]]:
    rows = [(f"r{i}", f"u{j}") for i in range(30) for j in (i % 7, (i + 3) % 7)]
    inc = spark.createDataFrame(rows, "record_id string, user_id string")
    store = StateStore(spark)  # in memory: the kept tables are their lazy plans
    prepare(inc, plan=OrderPlan("size-hash", 1), capacity=2, store=store)
    users = store.load("users")
    assert users is not None
    plan = users._jdf.queryExecution().executedPlan().toString()
    degrees = {r["user_id"]: r["deg"] for r in users.collect()}
    return plan, degrees


def test_users_are_counted_in_partitions_adaptive_execution_keeps(spark: SparkSession) -> None:
    partitions = int(spark.conf.get("spark.sql.shuffle.partitions") or 200)
    plan, degrees = _users_plan(spark)
    assert "hashpartitioning(user_id#" in plan and "REPARTITION_BY_NUM" in plan, plan
    assert f", {partitions}), REPARTITION_BY_NUM" in plan, plan
    # the same counts as before the explicit shuffle: each user's number of records
    want = {f"u{j}": sum((i % 7 == j) + ((i + 3) % 7 == j) for i in range(30)) for j in range(7)}
    assert degrees == want
