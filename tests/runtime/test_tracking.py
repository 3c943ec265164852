"""Every Spark job a library call launches is named in the Spark UI (issue 16.3).

Reads the session's status store (what the UI's Jobs page shows): each job launched inside a
call has the group ``spark_dp <family> <algorithm>`` and a description naming the stage, and
the caller's own job group is back in place afterwards.
"""

from __future__ import annotations

import logging

import pytest

from spark_dp.logs import StageTimer
from spark_dp.partition_selection.params import PartitionSelectionParams
from spark_dp.partition_selection.select import select_partitions
from spark_dp.randomness import Randomness
from spark_dp.session import spark_info
from spark_dp.tracking import describe, labels, spark_stage


def job_ids(spark) -> set[int]:
    return set(spark.sparkContext.statusTracker()._jtracker.getActiveJobIds()) | {
        int(j.jobId()) for j in _jobs(spark)
    }


def scala_list(collection) -> list:
    """A Scala collection's elements (Scala 2.12 and 2.13 alike: Spark 3.5 and 4)."""
    seq = collection.toSeq()
    return [seq.apply(i) for i in range(seq.size())]


def _jobs(spark) -> list:
    return scala_list(spark.sparkContext._jsc.sc().statusStore().jobsList(None))


def descriptions(spark, ids: set[int]) -> dict[int, tuple[str | None, str | None]]:
    """job id -> (job group, description) for the finished jobs ``ids``."""
    out = {}
    for j in _jobs(spark):
        if int(j.jobId()) in ids:
            group, desc = j.jobGroup(), j.description()
            out[int(j.jobId())] = (
                group.get() if group.isDefined() else None,
                desc.get() if desc.isDefined() else None,
            )
    return out


def test_describe_names_job_or_family_algorithm_and_stage():
    assert describe("read") == "spark_dp: read"
    with labels(family="partition_selection", algorithm="mad2r"):
        assert describe("round 1") == "spark_dp partition_selection mad2r: round 1"
        with labels(job="partition_selection_job"):  # the job name wins over the family
            assert describe() == "spark_dp partition_selection_job mad2r"
    assert describe() == "spark_dp"
    with labels(family="contribution_bounding", hide_numbers=True):  # data-dependent rounds
        assert describe("pass-1 round 17") == "spark_dp contribution_bounding: pass-# round #"
    assert describe("round 2") == "spark_dp: round 2"
    with pytest.raises(TypeError, match="unknown tracking labels"):
        with labels(stage="x"):
            pass


def test_every_job_of_a_selection_is_named_and_the_callers_group_is_restored(spark, pairs_df):
    sc = spark.sparkContext
    sc.setJobGroup("callers-group", "the caller's own work")
    pairs = pairs_df({u: [f"w{u % 7}", "common"] for u in range(120)})
    before = job_ids(spark)
    params = PartitionSelectionParams(algorithm="mad2r", epsilon=1.0, delta=1e-5)
    with select_partitions(pairs, params, Randomness.create(2)) as selection:
        launched = job_ids(spark) - before
    assert sc.getLocalProperty("spark.jobGroup.id") == "callers-group"
    assert sc.getLocalProperty("spark.job.description") == "the caller's own work"
    named = descriptions(spark, launched)
    assert launched and set(named) == launched
    for group, desc in named.values():
        assert group == "spark_dp partition_selection mad2r"
        assert desc is not None and desc.startswith("spark_dp partition_selection mad2r")
    stages = {d.split(": ", 1)[1] for _, d in named.values() if ": " in d}
    assert {"round 1", "round 2"} <= stages, stages
    assert selection.rounds
    sc.setLocalProperty("spark.jobGroup.id", None)
    sc.setLocalProperty("spark.job.description", None)


def test_stage_timer_names_its_stage_under_the_jobs_labels(spark):
    timer = StageTimer(logging.getLogger("spark_dp.test"))
    before = job_ids(spark)
    with labels(spark, job="distinct_count", algorithm="exact"), timer.stage("read"):
        spark.range(10).count()
    launched = job_ids(spark) - before
    assert set(descriptions(spark, launched).values()) == {
        ("spark_dp distinct_count exact", "spark_dp distinct_count exact: read")
    }
    assert spark.sparkContext.getLocalProperty("spark.jobGroup.id") is None


def test_stage_without_a_session_is_a_no_op():
    with spark_stage("x", None):
        pass


def test_spark_info_names_the_application(spark):
    info = spark_info(spark)
    assert info["application_id"] == spark.sparkContext.applicationId
    assert info["master"] == spark.sparkContext.master
    assert info["version"] == spark.version
    assert info["connect"] is False


def test_bounding_jobs_never_show_the_data_dependent_round_number(spark, incidences_df):
    from spark_dp.contribution_bounding import BoundingParams, bound_contributions

    graph = incidences_df({f"r{k}": [f"u{k % 5}", f"u{(k * 3) % 7}"] for k in range(30)})
    before = job_ids(spark)
    params = BoundingParams(algorithm="proposal", max_contributions=2, driver_threshold_rows=0)
    with bound_contributions(graph, params, randomness=Randomness.create(1)) as result:
        assert result.summary["rounds"] >= 1
    named = descriptions(spark, job_ids(spark) - before)
    assert named
    stages = set()
    for group, desc in named.values():
        assert group == "spark_dp contribution_bounding proposal"
        assert desc is not None and not any(ch.isdigit() for ch in desc), desc
        stages.add(desc.split(": ", 1)[-1])
    assert any("round #" in s for s in stages), stages
