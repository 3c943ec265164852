"""Peer comparisons: PipelineDP's partition selection and the authors' distinct-count code.

* ``peer/pipeline-dp/<dataset>``: PipelineDP (PyPI ``pipeline-dp``, ``pip install -e
  .[bench]``) ``DPEngine.select_partitions`` on Spark (``SparkRDDBackend``), same Parquet
  input, ε = 1, δ = 1e-5 and max_partitions_contributed = 100 (our Δ0), read + select + write
  Parquet, mean over runs. PipelineDP's default strategy is the truncated geometric one, which
  spark_dp also offers (``--algorithm truncated-geometric``, registered beside it so the
  same strategy is compared); the figures name the strategy PipelineDP applied. PipelineDP
  draws its own noise (no seed).
* ``peer/knop-reference-dc/<dataset>``: the DC(D; ℓ) values of the public reference code of
  Knop & Steinke 2023 (``privately_counting_distinct_elements``, scipy max-flow), on the same
  small pairs, against our exact curve. The code is not on PyPI and not bundled (Apache-2.0,
  google-research); point ``SPARK_DP_DC_REFERENCE`` at a directory holding the
  ``privately_counting_distinct_elements`` package to run it. Without it the case reports
  ``status=reference not available`` and no comparison.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

from bench.cases.baseline import ZIPF_SMALL
from bench.cases.partition_selection import ZIPF_5M, _selection_case
from bench.harness import register

EPSILON, DELTA, MAX_PARTITIONS = 1.0, 1e-5, 100
REFERENCE_ELLS = (1, 2, 3, 5, 10, 20, 50, 100)


def _pipeline_dp_run(spark, data_path: str, out: str) -> tuple[float, int, str]:
    import pipeline_dp

    t0 = time.perf_counter()
    rdd = spark.read.parquet(data_path).select("user_id", "item").rdd.map(tuple)
    accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=EPSILON, total_delta=DELTA)
    engine = pipeline_dp.DPEngine(accountant, pipeline_dp.SparkRDDBackend(spark.sparkContext))
    params = pipeline_dp.SelectPartitionsParams(max_partitions_contributed=MAX_PARTITIONS)
    extractors = pipeline_dp.DataExtractors(
        privacy_id_extractor=lambda r: r[0], partition_extractor=lambda r: r[1]
    )
    selected = engine.select_partitions(rdd, params, extractors)
    accountant.compute_budgets()
    items = spark.createDataFrame(selected.map(lambda p: (p,)), "item string")
    items.write.mode("overwrite").parquet(out)
    seconds = time.perf_counter() - t0
    return seconds, spark.read.parquet(out).count(), params.partition_selection_strategy.value


def _pipeline_dp_case(runs: int):
    def run(spark, data_path: str, work_dir: str) -> dict:
        try:
            import pipeline_dp  # noqa: F401
        except ImportError:
            return {"status": "pipeline-dp not installed: pip install -e '.[bench]'"}
        sizes, times, strategy = [], [], ""
        for k in range(runs):
            seconds, size, strategy = _pipeline_dp_run(spark, data_path, f"{work_dir}/items-{k}")
            sizes.append(size)
            times.append(seconds)
        return {
            "strategy": strategy,
            "runs": runs,
            "output_mean": statistics.fmean(sizes),
            "output_sd": statistics.stdev(sizes) if runs > 1 else 0.0,
            "seconds": statistics.fmean(times),
        }

    return run


def _knop_reference(spark, data_path: str, work_dir: str) -> dict:
    ref_dir = os.environ.get("SPARK_DP_DC_REFERENCE")
    if not ref_dir or not (Path(ref_dir) / "privately_counting_distinct_elements").is_dir():
        return {"status": "reference not available (set SPARK_DP_DC_REFERENCE)"}
    sys.path.insert(0, ref_dir)
    from privately_counting_distinct_elements import dataset, distinct_count

    from spark_dp.distinct_count import exact_curve
    from spark_dp.io import load_pairs

    pairs, _ = load_pairs(spark, data_path)
    t0 = time.perf_counter()
    ours = exact_curve(pairs, max(REFERENCE_ELLS)).curve
    ours_s = time.perf_counter() - t0
    # The reference takes a list of users, each a list of integer item ids.
    rows = pairs.toPandas()  # small bench data only: the reference is single-machine code
    codes = {item: k for k, item in enumerate(sorted(rows["item"].unique()))}
    users = rows.groupby("user_id")["item"].apply(lambda s: sorted(codes[i] for i in s))
    data = dataset.DataSet(list(users))
    t0 = time.perf_counter()
    theirs = {ell: int(distinct_count.flow_distinct_count(data, ell)) for ell in REFERENCE_ELLS}
    ref_s = time.perf_counter() - t0
    diffs = [abs(int(ours[ell - 1]) - theirs[ell]) for ell in REFERENCE_ELLS]
    pairs.unpersist()
    return {
        "ells_compared": len(REFERENCE_ELLS),
        "max_abs_difference": max(diffs),
        "reference_seconds": ref_s,
        "ours_seconds": ours_s,
        "seconds": ours_s,
    }


for _ds, _scales, _runs in ((ZIPF_5M, ("full",), 2), (ZIPF_SMALL, ("quick",), 1)):
    register(
        f"peer/pipeline-dp/{_ds.name}",
        "peer",
        _ds,
        _scales,
        notes="PipelineDP 0.3 select_partitions on SparkRDDBackend (same data, ε, δ, k = 100)",
    )(_pipeline_dp_case(_runs))
    register(
        f"partition_selection/truncated-geometric/{_ds.name}",
        "partition_selection",
        _ds,
        _scales,
        notes="spark_dp with PipelineDP's default strategy, for a same-strategy comparison",
    )(
        _selection_case(
            "truncated-geometric", ["--algorithm", "truncated-geometric"], seeds=_runs + 1
        )
    )
register(
    "peer/knop-reference-dc/zipf-100k",
    "peer",
    ZIPF_SMALL,
    ("quick", "full"),
    notes="Knop & Steinke reference flow_distinct_count vs our exact curve, ℓ in "
    + ",".join(map(str, REFERENCE_ELLS)),
)(_knop_reference)
