"""Generated data as Spark DataFrames.

Independent-per-row generators (regular hypergraphs, Zipf vocabularies, heavy/light sets) run
on the executors with ``mapInPandas``: the work is cut into fixed chunks and chunk c is drawn
from SeedSequence([seed, c]) only, so the data is identical whatever the partitioning. The
skewed hypergraph is sequential by nature and is drawn on the driver (numpy, a few seconds
at 8M records), then handed to Spark through Arrow.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from spark_dp.checks import check_int_at_least
from spark_dp.generators import hypergraphs, user_items
from spark_dp.session import default_parallelism

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["KINDS", "hypergraph_frame", "pairs_frame"]

KINDS = ("regular", "skewed", "zipf", "heavy-light")


def _chunk_ids(spark: SparkSession, n: int, chunk: int) -> tuple[DataFrame, int]:
    n_chunks = max(1, math.ceil(n / chunk))
    slices = max(1, min(n_chunks, 4 * default_parallelism(spark)))
    return spark.range(0, n_chunks, numPartitions=slices).withColumnRenamed("id", "chunk"), n_chunks


def hypergraph_frame(
    spark: SparkSession,
    kind: str,
    *,
    n_records: int,
    records_per_user: float = 2.0,
    mean_size: float = 2.0,
    alpha: float = 1.5,
    seed: int = 0,
) -> tuple[DataFrame, dict[str, Any]]:
    """Incidences (record_id long, user_id long) of a ``regular`` or ``skewed`` hypergraph.

    Returns:
        (DataFrame, description dict with the model, m and the parameters).
    """
    import pandas as pd

    check_int_at_least("n_records", n_records, 1)
    m = hypergraphs.n_users_for(n_records, mean_size, records_per_user)
    desc = {
        "kind": kind,
        "n_records_generated": n_records,
        "n_users": m,
        "mean_size": mean_size,
        "records_per_user": records_per_user,
        "empty_policy": "drop",
        "seed": seed,
    }
    if kind == "regular":
        chunk = hypergraphs.CHUNK_RECORDS
        ids, _ = _chunk_ids(spark, n_records, chunk)

        def gen(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
            for b in batches:
                for c in b["chunk"].tolist():
                    start = c * chunk
                    rec, users, _ = hypergraphs.regular_hypergraph_chunk(
                        seed, c, start, min(start + chunk, n_records), m, mean_size
                    )
                    yield pd.DataFrame({"record_id": rec, "user_id": users})

        desc["generator"] = "regular"
        return ids.mapInPandas(gen, "record_id long, user_id long"), desc
    if kind == "skewed":
        g = hypergraphs.skewed_hypergraph(
            n_records,
            records_per_user=records_per_user,
            mean_size=mean_size,
            alpha=alpha,
            seed=seed,
        )
        desc.update(generator=g.generator, alpha=alpha, empty_records=g.empty_records)
        df = spark.createDataFrame(g.to_pandas(), "record_id long, user_id long")
        return df, desc
    raise ValueError(f"unknown hypergraph kind {kind!r}; use 'regular' or 'skewed'")


def pairs_frame(
    spark: SparkSession,
    kind: str,
    *,
    n_users: int,
    mean_items: float = 30.0,
    exponent: float = 1.3,
    degree_sigma: float = 1.0,
    max_items: int = 100_000,
    n_light: int = 1_000,
    seed: int = 0,
) -> tuple[DataFrame, dict[str, Any]]:
    """(user_id long, item string) pairs of a ``zipf`` or ``heavy-light`` dataset.

    Returns:
        (DataFrame, description dict).
    """
    import pandas as pd
    from pyspark.sql import functions as F

    check_int_at_least("n_users", n_users, 1)
    chunk = user_items.CHUNK_USERS
    ids, _ = _chunk_ids(spark, n_users, chunk)
    desc = {"kind": kind, "n_users": n_users, "seed": seed}
    if kind == "zipf":
        user_items._check_zipf(n_users, mean_items, exponent, degree_sigma)

        def gen(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
            for b in batches:
                for c in b["chunk"].tolist():
                    start = c * chunk
                    u, r = user_items.zipf_chunk(
                        seed,
                        c,
                        start,
                        min(start + chunk, n_users),
                        mean_items=mean_items,
                        exponent=exponent,
                        degree_sigma=degree_sigma,
                        max_items=max_items,
                    )
                    yield pd.DataFrame({"user_id": u, "rank": r})

        df = ids.mapInPandas(gen, "user_id long, rank long").select(
            "user_id", F.concat(F.lit("w"), F.col("rank").cast("string")).alias("item")
        )
        desc.update(
            generator="zipf",
            mean_items=mean_items,
            exponent=exponent,
            degree_sigma=degree_sigma,
            max_items=max_items,
        )
        return df, desc
    if kind == "heavy-light":
        check_int_at_least("n_light", n_light, 2)

        def gen_hl(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
            for b in batches:
                for c in b["chunk"].tolist():
                    start = c * chunk
                    u, i = user_items.heavy_light_chunk(
                        seed, c, start, min(start + chunk, n_users), n_light=n_light
                    )
                    yield pd.DataFrame({"user_id": u, "item": i})

        desc.update(generator="heavy-light", n_light=n_light)
        return ids.mapInPandas(gen_hl, "user_id long, item string"), desc
    raise ValueError(f"unknown pairs kind {kind!r}; use 'zipf' or 'heavy-light'")
