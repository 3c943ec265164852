"""The layout rules of issue 18 hold in every query a selection runs (spark_dp/.../layout.py).

A ``coalesce`` merges partitions into one task without a shuffle, and every operator below it
runs once per merged partition inside that task. Over an aggregation this keeps one hash map
per merged partition until the task ends: on Spark 3.5 with 200 shuffle partitions and a 1 GiB
driver, the coalesced item sums ran out of execution memory before the noise UDF and the task
hung. These tests run every registered algorithm with more shuffle partitions than cores and
adaptive execution off (so the plans show every exchange), read the physical plan of every
query from Spark's SQL status store, and check that no coalesced task holds an aggregation.
"""

from __future__ import annotations

import random
import re

import pytest

from spark_dp.partition_selection import PartitionSelectionParams, select_partitions
from spark_dp.partition_selection.registry import REGISTRY
from spark_dp.randomness import Randomness
from spark_dp.session import SPARK_SHUFFLE_PARTITIONS, shuffle_partitions
from tests.support.query_plans import UNSET_PARTITIONS, layout_session, plans_of, user_exchanges

STAGE_BOUNDARIES = ("Exchange", "InMemoryTableScan", "Scan ", "BroadcastExchange", "ReusedExchange")
AGGREGATIONS = ("HashAggregate", "ObjectHashAggregate", "SortAggregate")


def _tree(description: str) -> list[tuple[int, str]]:
    """(depth, operator) for each line of the plan tree of a physical plan description."""
    text = description.split("== Physical Plan ==", 1)[-1].strip().split("\n\n", 1)[0]
    nodes = []
    for line in text.splitlines():
        m = re.match(r"^([\s:+\-]*)(?:\*\s)?(.+)$", line)
        if m:
            nodes.append((len(m.group(1)), m.group(2).strip()))
    return nodes


def coalesced_aggregations(description: str) -> list[str]:
    """Aggregations that run inside a coalesced task: below a ``Coalesce`` with no stage
    boundary (exchange, cache or scan) between them."""
    nodes = _tree(description)
    found = []
    for i, (depth, name) in enumerate(nodes):
        if not name.startswith("Coalesce"):
            continue
        cut: int | None = None  # depth of the boundary whose subtree is skipped
        for d, below in nodes[i + 1 :]:
            if d <= depth:
                break
            if cut is not None and d > cut:
                continue
            cut = None
            if below.startswith(AGGREGATIONS):
                found.append(f"{name} > {below}")
            if below.startswith(STAGE_BOUNDARIES):
                cut = d
    return found


def test_the_check_finds_a_coalesced_aggregation(spark):
    """The check has power: a coalesce over a groupBy is found, one over a shuffle is not."""
    df = spark.range(100).selectExpr("id % 7 AS k", "id AS v")
    bad = plans_of(spark, df.groupBy("k").count().coalesce(1).collect)
    good = plans_of(spark, df.groupBy("k").count().repartition(1).collect)
    assert any(coalesced_aggregations(p) for p in bad), bad
    assert not any(coalesced_aggregations(p) for p in good), good


@pytest.fixture(scope="module")
def heavy_tailed(spark):
    """300 users with 1-30 items of a heavy-tailed vocabulary (so every MAD path runs)."""
    rng = random.Random(18)
    rows = [
        (f"u{u}", f"i{int(rng.paretovariate(1.1))}")
        for u in range(300)
        for _ in range(rng.randrange(1, 30))
    ]
    return spark.createDataFrame(rows, "user_id string, item string").cache()


AUTO = {"max_contributions": "auto", "tuning_candidates": (1, 5, 20)}  # the choice's pass too


@pytest.mark.parametrize(
    ("algorithm", "extra"),
    [(a.name, {}) for a in REGISTRY]
    + [("dp-sips", {"recap_each_round": False}), ("basic", AUTO), ("mad2r", AUTO)],
)
def test_no_coalesced_task_holds_an_aggregation(spark, heavy_tailed, algorithm, extra):
    values = {"algorithm": algorithm, "max_contributions": 5, "delta": 0.05, **extra}
    params = PartitionSelectionParams(**values)

    def run() -> None:
        with select_partitions(heavy_tailed, params, Randomness.create(3)) as selection:
            selection.items.count()

    plans = plans_of(spark, run)
    if algorithm in ("basic", "dp-sips", "mad", "mad2r"):  # their item sums run per core
        assert any("Coalesce" in p for p in plans), "no coalesce: the check saw nothing"
    bad = {f: p for p in plans for f in coalesced_aggregations(p)}
    assert bad == {}, next(iter(bad.values()), "")


def udf_inputs(description: str) -> list[str]:
    """For each pandas UDF evaluation (``ArrowEvalPython``) of a plan, the first stage boundary
    below it: where the rows its Python tasks read come from."""
    nodes = _tree(description)
    found = []
    for i, (depth, name) in enumerate(nodes):
        if not name.startswith("ArrowEvalPython"):
            continue
        below = [n for d, n in nodes[i + 1 :] if d > depth]
        boundary = next((n for n in below if n.startswith(STAGE_BOUNDARIES)), "(none)")
        found.append(f"{boundary}: {_arguments(description, boundary)}")
    return found


def _arguments(description: str, node: str) -> str:
    """The ``Arguments:`` line of ``node`` (e.g. ``"Exchange (9)"``) in the plan's details."""
    m = re.search(r"\((\d+)\)$", node)
    if not m:
        return ""
    block = re.search(rf"^\({m.group(1)}\) .*?(?:\n\n|\Z)", description, re.M | re.S)
    args = re.search(r"^Arguments: (.*)$", block.group(0), re.M) if block else None
    return args.group(1) if args else ""


@pytest.mark.parametrize(
    ("algorithm", "extra"),
    [(a, {}) for a in ("basic", "dp-sips", "mad", "mad2r")] + [("basic", AUTO)],
)
def test_noise_runs_in_one_python_task_per_core(spark, heavy_tailed, algorithm, extra):
    """The noise UDF (and the choice's score UDF) reads a round-robin shuffle into one
    partition per core, never the item sums' hash partitions (Spark 3.5 ran it in 200 Python
    tasks per round; and a threshold filter pushed below the shuffle would take the UDF with
    it)."""
    values = {"algorithm": algorithm, "max_contributions": 5, "delta": 0.05, **extra}
    params = PartitionSelectionParams(**values)

    def run() -> None:
        with select_partitions(heavy_tailed, params, Randomness.create(3)) as selection:
            selection.items.count()

    inputs = [i for p in plans_of(spark, run) for i in udf_inputs(p)]
    assert inputs, "no pandas UDF in the plans: the check saw nothing"
    tasks = spark.sparkContext.defaultParallelism
    assert all(f": RoundRobinPartitioning({tasks})," in i for i in inputs), inputs


def test_the_udf_check_sees_a_udf_over_an_aggregation(spark):
    """Power: a deterministic pandas UDF under a filter is pushed below the round-robin
    shuffle and reads the aggregation's hash exchange."""
    from pyspark.sql import functions as F

    @F.pandas_udf("double")
    def plus_one(v):
        return v + 1.0

    df = spark.range(100).selectExpr("id % 7 AS k", "CAST(id AS DOUBLE) AS v")
    sums = df.groupBy("k").agg(F.sum("v").alias("s")).repartition(2)
    (plan,) = plans_of(spark, sums.select(plus_one("s").alias("t")).where("t > 3").collect)
    assert any(": hashpartitioning(" in i for i in udf_inputs(plan)), plan


@pytest.mark.parametrize("algorithm", ["basic", "dp-sips", "mad2r"])
def test_the_shuffle_by_user_follows_the_settings_never_the_input(spark, heavy_tailed, algorithm):
    """A partition count is a literal of the plan, which Spark's UI and event log show: with
    ``spark.sql.shuffle.partitions`` unset, a selection shuffles by user into Spark's 200 on a
    small input and on one ten times larger (adaptive execution merges them at run time); a
    session that sets the count keeps it (8). The same key releases the same items either way:
    the partitioning chooses tasks, never values."""
    params = PartitionSelectionParams(algorithm=algorithm, max_contributions=5, delta=0.05)
    released: list[set[str]] = []

    def run(pairs):
        def action() -> None:
            with select_partitions(pairs, params, Randomness.create(3)) as selection:
                released.append({r["item"] for r in selection.items.collect()})

        return action

    larger = heavy_tailed.crossJoin(spark.range(10)).selectExpr(
        "concat(user_id, '-', CAST(id AS STRING)) AS user_id", "item"
    )  # ten copies of every user
    for pairs in (heavy_tailed, larger):
        plans = plans_of(spark, run(pairs), UNSET_PARTITIONS)
        assert {n for p in plans for n in user_exchanges(p)} == {SPARK_SHUFFLE_PARTITIONS}
    configured = {n for p in plans_of(spark, run(heavy_tailed)) for n in user_exchanges(p)}
    assert configured == {8}
    assert released[0] == released[2] and released[0]


def test_the_job_shuffles_by_user_into_the_settings_partitions(spark, heavy_tailed, tmp_path):
    """The job path: the same count as the library, whatever the rows it read."""
    from spark_dp.jobs.partition_selection import main

    path = str(tmp_path / "pairs")
    heavy_tailed.write.parquet(path)

    def run() -> None:
        flags = ["--input", path, "--output", str(tmp_path / "out"), "--algorithm", "basic",
                 "--epsilon", "1", "--delta", "0.05", "--allow-large-delta",
                 "--max-contributions", "5", "--seed", "3",
                 "--overwrite", "--log-level", "WARNING"]  # fmt: skip
        assert main(flags) == 0

    unset = {n for p in plans_of(spark, run, UNSET_PARTITIONS) for n in user_exchanges(p)}
    assert unset == {SPARK_SHUFFLE_PARTITIONS}


def test_the_partition_count_is_a_setting(spark):
    """Spark's 200 when the session leaves ``spark.sql.shuffle.partitions`` unset, else the
    session's count: nothing else decides it."""
    with layout_session(spark, {"spark.sql.shuffle.partitions": None}):
        assert shuffle_partitions(spark) == SPARK_SHUFFLE_PARTITIONS == 200
        spark.conf.set("spark.sql.shuffle.partitions", "7")
        assert shuffle_partitions(spark) == 7
