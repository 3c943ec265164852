"""The prepared tables: repeated pairs dropped by the first step, and where the users table is
aggregated (issue 18: 100M incidences on Spark 3.5).

Adaptive execution merges small shuffle partitions up to 64 MB; at 100M incidences it merged
the per-user aggregation's 200 partitions into 12 of about 7M users each, and Spark 3.5's hash
aggregation of one of them could not acquire memory to spill in a 1 GiB driver. The users table
is therefore shuffled into an explicit number of partitions, which adaptive execution keeps:
``spark.sql.shuffle.partitions`` when the session sets it, else Spark's 200
(:func:`spark_dp.session.shuffle_partitions`): a setting, never the input's size, which the
count (a literal of the plan) would show to whoever reads Spark's UI or event log.
"""

from __future__ import annotations

from pathlib import Path

from chispa import assert_df_equality
from pyspark.sql import SparkSession

from spark_dp.contribution_bounding import BoundingParams, bound_contributions
from spark_dp.contribution_bounding.orders import OrderPlan
from spark_dp.contribution_bounding.prepare import Prepared, prepare
from spark_dp.contribution_bounding.state_store import StateStore
from spark_dp.randomness import Randomness
from spark_dp.session import SPARK_SHUFFLE_PARTITIONS
from tests.support.query_plans import UNSET_PARTITIONS, layout_session, plans_of, user_exchanges

SCHEMA = "record_id string, user_id string"


def _users_plan(spark: SparkSession, copies: int = 1) -> tuple[str, dict[str, int]]:
    rows = [(f"r{i}", f"u{j}") for i in range(30 * copies) for j in (i % 7, (i + 3) % 7)]
    inc = spark.createDataFrame(rows, SCHEMA)
    store = StateStore(spark)  # in memory: the kept tables are their lazy plans
    prepare(inc, plan=OrderPlan("size-hash", 1), max_contributions=2, store=store)
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


def test_users_are_counted_in_partitions_the_settings_give(spark: SparkSession) -> None:
    """Without a session setting: Spark's 200 on an input and on one ten times larger; the
    counts do not change."""
    with layout_session(spark, {"spark.sql.shuffle.partitions": None}):
        small, degrees = _users_plan(spark)
        larger, _ = _users_plan(spark, copies=10)
    assert ", 200), REPARTITION_BY_NUM" in small, small
    assert ", 200), REPARTITION_BY_NUM" in larger, larger
    assert sum(degrees.values()) == 60


GRAPH = [(f"r{i}", f"u{j}") for i in range(40) for j in {i % 9, (i * 5 + 1) % 9}]


def test_a_validating_run_shuffles_by_user_into_the_settings_partitions(
    spark: SparkSession,
) -> None:
    """``bound_contributions`` validating its input: Spark's 200 without a session setting (not
    a count read from the data); a session that sets the count keeps it (8). The same key
    selects the same records either way."""
    inc = spark.createDataFrame(GRAPH, SCHEMA)
    selected: list[set[str]] = []

    def run() -> None:
        params = BoundingParams(max_contributions=2, finish="continue")
        with bound_contributions(inc, params, randomness=Randomness.create(4)) as result:
            selected.append({r["record_id"] for r in result.selected.collect()})

    unset = {n for p in plans_of(spark, run, UNSET_PARTITIONS) for n in user_exchanges(p)}
    assert unset == {SPARK_SHUFFLE_PARTITIONS}
    configured = {n for p in plans_of(spark, run) for n in user_exchanges(p)}
    assert configured == {8}
    assert selected[0] == selected[1] and selected[0]


def test_the_job_shuffles_by_user_into_the_settings_partitions(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The job path: the same count as the library, whatever the rows it read, and the user
    state's part files (a constant: :data:`~spark_dp.jobs.publish.CONFIDENTIAL_PART_FILES`)."""
    from spark_dp.jobs.contribution_bounding import main
    from spark_dp.jobs.publish import CONFIDENTIAL_PART_FILES

    path = str(tmp_path / "incidences")
    spark.createDataFrame(GRAPH, SCHEMA).write.parquet(path)

    def run() -> None:
        flags = ["--input", path, "--output", str(tmp_path / "out"), "--max-contributions", "2",
                 "--seed", "4", "--overwrite", "--log-level", "WARNING"]  # fmt: skip
        assert main(flags) == 0

    unset = {n for p in plans_of(spark, run, UNSET_PARTITIONS) for n in user_exchanges(p)}
    assert unset == {SPARK_SHUFFLE_PARTITIONS, CONFIDENTIAL_PART_FILES}


def _prepared(spark: SparkSession, rows: list[tuple[str, str]]) -> tuple[Prepared, StateStore]:
    store = StateStore(spark)
    inc = spark.createDataFrame(rows, SCHEMA)
    return prepare(inc, plan=OrderPlan("size-hash", 3), max_contributions=2, store=store), store


def test_repeated_pairs_count_once(spark: SparkSession) -> None:
    """The first step (a window over each record's users) drops repeated (record, user) rows:
    |h| counts distinct users, one lead row per record, each user's degree counts a record
    once; the tables equal those of the deduplicated input (docs/design/bounding.md#inputs)."""
    distinct = [("r1", "a"), ("r1", "b"), ("r2", "a"), ("r3", "c"), ("r3", "a"), ("r3", "b")]
    repeated = [*distinct, ("r1", "a"), ("r1", "a"), ("r2", "a"), ("r3", "c")]
    prep, store = _prepared(spark, repeated)
    clean, clean_store = _prepared(spark, distinct)
    counts = {"n_records": 3, "n_incidences": 6, "n_users": 3}
    assert {k: v for k, v in prep.counts().items() if k in counts} == counts
    assert prep.counts() == clean.counts()
    inc = {(r["user_id"], r["size"], r["lead"]) for r in prep.inc.collect()}
    assert prep.inc.count() == 6
    sizes = {("a", 2), ("b", 2), ("a", 1), ("c", 3), ("a", 3), ("b", 3)}
    assert {(u, s) for u, s, _ in inc} == sizes
    assert sorted(u for u, _, lead in inc if lead) == ["a", "a", "a"]  # the smallest user id
    assert_df_equality(prep.inc, clean.inc, ignore_row_order=True, ignore_nullable=True)
    users, clean_users = store.load("users"), clean_store.load("users")
    assert users is not None and clean_users is not None
    assert {r["user_id"]: r["deg"] for r in users.collect()} == {"a": 3, "b": 2, "c": 1}
    assert_df_equality(users, clean_users, ignore_row_order=True, ignore_nullable=True)
