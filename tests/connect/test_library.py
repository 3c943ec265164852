"""The three families' library calls and the generators over Spark Connect (issue 16.4).

A Connect session has no SparkContext and no JVM gateway on the client: any py4j, RDD or
SparkContext use on these paths raises here. Each result is checked against an independent
answer (a known selection, the reference greedy, the local exact curve, the numpy generator),
and the server's state is read through its own SparkContext (tests only) to check that the
jobs carry spark_dp's tags and that no cached query is left behind.
"""

from __future__ import annotations

import numpy as np

from spark_dp.contribution_bounding import BoundingParams, bound_contributions
from spark_dp.distinct_count import exact_curve, exact_curve_local
from spark_dp.distinct_count.params import DistinctCountParams
from spark_dp.distinct_count.registry import REGISTRY as DC_REGISTRY
from spark_dp.generators import user_items
from spark_dp.generators.spark_frames import pairs_frame
from spark_dp.partition_selection.params import PartitionSelectionParams
from spark_dp.partition_selection.select import select_partitions
from spark_dp.randomness import Randomness
from spark_dp.session import default_parallelism, get_session, graphframes_available, spark_info
from tests.contribution_bounding.helpers import batch, incidence_rows, key_seed
from tests.reference import contribution_bounding as ref


def scala_list(collection) -> list:
    seq = collection.toSeq()
    return [seq.apply(i) for i in range(seq.size())]


def server_jobs(server) -> list:
    return scala_list(server._jsc.sc().statusStore().jobsList(None))


def job_tags(server, after: int) -> set[str]:
    """The user tags (``..._Tag_<tag>``) of the server's jobs with an id above ``after``."""
    tags: set[str] = set()
    for job in server_jobs(server):
        if int(job.jobId()) > after:
            for t in scala_list(job.jobTags()):
                if "_Tag_" in t:
                    tags.add(t.split("_Tag_", 1)[1])
    return tags


def last_job(server) -> int:
    return max([int(j.jobId()) for j in server_jobs(server)], default=-1)


def no_cached_query(server) -> bool:
    from pyspark.sql import SparkSession

    active = SparkSession._instantiatedSession  # the server's classic session
    return bool(active._jsparkSession.sharedState().cacheManager().isEmpty())


def test_session_helpers_need_no_jvm(spark, server):
    info = spark_info(spark)
    assert info["connect"] is True
    assert info["application_id"] == server.applicationId
    assert info["master"] == server.master
    assert default_parallelism(spark) >= 1
    assert graphframes_available(spark) is False
    assert get_session() is spark  # the active Connect session is reused


def test_selection_over_connect(spark, server):
    # 400 users share "common"; everything else is held by one user: MAD2R at ε = 1 selects
    # "common" (weight 400 ≫ ρ ≈ 40) and never a singleton (weight 1 ≪ ρ)
    rows = [(f"u{u}", "common") for u in range(400)] + [(f"u{u}", f"solo{u}") for u in range(400)]
    pairs = spark.createDataFrame(rows, "user_id string, item string")
    before = last_job(server)
    params = PartitionSelectionParams(algorithm="mad2r", epsilon=1.0, delta=1e-5)
    with select_partitions(pairs, params, Randomness.create(3)) as selection:
        assert [r["item"] for r in selection.items.collect()] == ["common"]
        assert selection.output_items == 1
    assert {
        "spark_dp partition_selection mad2r",
        "spark_dp partition_selection mad2r: round 1",
        "spark_dp partition_selection mad2r: round 2",
    } <= job_tags(server, before)
    assert not spark.getTags()  # the session's tags are back as they were
    assert no_cached_query(server)


def test_bounding_over_connect_equals_the_reference_greedy(spark, server):
    records, caps, table = batch(seed=11, n=8)
    incidences = spark.createDataFrame(incidence_rows(records), "record_id string, user_id string")
    capacities = spark.createDataFrame(list(table.items()), "user_id string, cap long")
    params = BoundingParams(algorithm="greedy", max_contributions=2, driver_threshold_rows=0)
    with bound_contributions(
        incidences, params, capacities=capacities, randomness=Randomness.create(4).bind("test")
    ) as result:  # distributed rounds: every round's state is checkpointed over Connect
        chosen = {r["record_id"] for r in result.selected.collect()}
        assert result.summary["rounds"] >= 1
    key = ref.shared_key("size-hash", records, key_seed(4))
    assert chosen == ref.greedy(records, caps, key)
    assert no_cached_query(server)


def test_distinct_count_over_connect_equals_the_local_curve(spark, server):
    rng = np.random.default_rng(5)
    person = rng.integers(0, 60, 400)
    item = rng.integers(0, 90, 400)
    rows = sorted({(f"p{p}", f"i{i}") for p, i in zip(person, item, strict=True)})
    pairs = spark.createDataFrame(rows, "user_id string, item string")
    p = np.array([int(a[1:]) for a, _ in rows])
    x = np.array([int(b[1:]) for _, b in rows])
    # force the Spark rounds and the connected components (materialized every round)
    curve = exact_curve(pairs, 6, components_min_rows=0, spark_rounds_min_rows=0).curve
    assert list(curve) == list(exact_curve_local(p, x, 6))
    entry = DC_REGISTRY["greedy"]
    plan = entry.plan(DistinctCountParams(epsilon=1.0, max_contributions=6, method="greedy"))
    result = entry.run(pairs, plan, Randomness.create(5))
    assert 1 <= result.release.ell <= 6
    assert no_cached_query(server)


def test_generator_over_connect_equals_numpy(spark):
    n_users = 700
    df, _ = pairs_frame(spark, "zipf", n_users=n_users, mean_items=4, max_items=50, seed=9)
    got = sorted((int(r["user_id"]), r["item"]) for r in df.collect())
    expected = user_items.zipf_user_items(n_users, mean_items=4, max_items=50, seed=9)
    assert got == sorted(zip(expected["user_id"].tolist(), expected["item"].tolist(), strict=True))


def test_filesystem_on_the_client(spark, tmp_path):
    """The state store's filesystem on a Connect session: no JVM on this side."""
    from spark_dp.io.fs import LocalFS
    from spark_dp.io.write import session_filesystems

    fs_for = session_filesystems(spark)
    folder = tmp_path / "state"
    folder.mkdir()
    doc = folder / "meta.json"
    doc.write_text('{"round": 3}', encoding="utf-8")
    assert isinstance(fs_for(str(doc)), LocalFS)  # a local Connect server shares the disk
    for path in (str(doc), f"file://{doc}"):
        assert fs_for(path).exists(path)
        assert fs_for(path).read_text(path) == '{"round": 3}'
    assert not fs_for(str(folder / "missing")).exists(str(folder / "missing"))
    fs_for(str(folder)).delete(str(folder))
    assert not folder.exists()
