"""What it costs to keep the key's secrets out of query plans (issue 43): a salt as a literal of
the plan (before) against the same salt joined from a broadcast one-row table
(:func:`spark_dp.randomness.with_secrets`, after), in the two places a salt meets every row:

* ``digest``: validation's one aggregation over a Parquet input (row count, null counts and the
  content digest's two salted ``xxhash64`` limb sums, :mod:`spark_dp.io.digest`);
* ``cap``: the per-user cap's ranking, a shuffle by user and a window ordered by a salted
  ``xxhash64`` of (user, item) (:func:`spark_dp.partition_selection.capping.ranked_cap`),
  written to a no-op sink.

Both variants compute the same values (checked). Runs alternate after a warm-up.

    .venv/bin/python -m bench.secret_columns [--rows 5000000] [--runs 3] [--out FILE]

Prints one JSON document (seconds, medians, ratios, the load average before and after).
Timings depend on the machine and its load: say so with any number quoted from it.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.digest_cost import bench_arguments, write_pairs
from bench.harness import emit_json
from spark_dp.io import ITEM, USER_ID, ReadGate
from spark_dp.io.digest import digested
from spark_dp.randomness import Randomness, with_hash_column


def _digest_literal(df: Any, gate: ReadGate) -> list[Any]:
    """The digest's aggregation as it was: the salts literals of the plan."""
    from pyspark.sql import functions as F

    flagged = [x for c in (USER_ID, ITEM) for x in (F.col(c), F.col(c).isNull())]
    out = [F.count(F.lit(1)).alias("_rows")]
    for j, salt in enumerate(gate.salts):
        h = F.xxhash64(F.lit(salt), *flagged)
        limbs = [F.shiftrightunsigned(h, 16 * k).bitwiseAND(0xFFFF) for k in range(4)]
        out += [F.sum(limb).alias(f"s{j}{k}") for k, limb in enumerate(limbs)]
    return df.agg(*out).collect()[0]


def _digest_joined(df: Any, gate: ReadGate) -> list[Any]:
    from pyspark.sql import functions as F

    salted, sums = digested(df, [F.col(USER_ID), F.col(ITEM)], gate)
    return salted.agg(F.count(F.lit(1)).alias("_rows"), *sums).collect()[0]


def _cap(df: Any, randomness: Randomness, joined: bool) -> None:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    pairs = df.repartition(200, USER_ID)
    if joined:
        ranked = with_hash_column(pairs, "_h", randomness, USER_ID, ITEM, purpose="capping")
    else:
        salt = F.lit(randomness.salt("capping"))
        ranked = pairs.withColumn("_h", F.xxhash64(salt, F.col(USER_ID), F.col(ITEM)))
    rank = F.dense_rank().over(Window.partitionBy(USER_ID).orderBy("_h", ITEM))
    ranked.select(USER_ID, ITEM, rank.alias("r")).where("r <= 100").write.format("noop").mode(
        "overwrite"
    ).save()


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main() -> None:
    ns, spark = bench_arguments(__doc__, "secret-columns", "runs", "alternating runs")
    key = Randomness.create(11)
    gate, stream = ReadGate.keyed_by(key), key.bind("bench").child("capping", 1)
    load_before = os.getloadavg()
    seconds: dict[str, list[float]] = {k: [] for k in ("digest", "cap")}
    seconds |= {f"{k} literal": [] for k in ("digest", "cap")}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pairs"
        write_pairs(spark, path, ns.rows)
        pairs = spark.read.parquet(str(path))
        same = _digest_literal(pairs, gate)[1:] == _digest_joined(pairs, gate)[1:]  # warm-up
        _cap(pairs, stream, True), _cap(pairs, stream, False)
        for _ in range(ns.runs):
            seconds["digest literal"].append(_timed(lambda: _digest_literal(pairs, gate))[0])
            seconds["digest"].append(_timed(lambda: _digest_joined(pairs, gate))[0])
            seconds["cap literal"].append(_timed(lambda: _cap(pairs, stream, False))[0])
            seconds["cap"].append(_timed(lambda: _cap(pairs, stream, True))[0])
    median = {k: round(statistics.median(v), 3) for k, v in seconds.items()}
    doc = {
        "rows": ns.rows,
        "spark": spark.version,
        "same_digest_sums": same,
        "seconds": {k: [round(x, 3) for x in v] for k, v in seconds.items()},
        "median": median,
        "ratio_joined_to_literal": {
            k: round(median[k] / median[f"{k} literal"], 3) for k in ("digest", "cap")
        },
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }
    emit_json(doc, Path(ns.out) if ns.out else None)


if __name__ == "__main__":
    main()
