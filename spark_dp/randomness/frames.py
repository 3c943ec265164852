"""Randomness in DataFrames: noise keyed by each row's key, and keyed hashes for ranking.

:func:`add_noise_column` draws the noise of a row from the PRF at the row's key (the first 16
bytes of SHA-256 of its encoded key columns, computed by Spark SQL), in a vectorized pandas UDF:
a row's noise is the same on every recomputation (task retry, lost executor, speculative
execution, a second action), whatever the partitioning, row order or Spark version. Nothing
needs to be checkpointed for privacy. The stream's keys are captured in the UDF's closure
(shipped to executors pickled, never shown in plans, logs or the UI).

A secret that a Spark expression needs itself (the salt of a keyed hash, the seed of an order)
never enters a query plan as a literal either, where Spark's UI, its event log and a history
server would show it (docs/privacy/boundary.md#plans): :func:`with_secrets` joins it to the
rows from a one-row table, so it is data of the query. The table is broadcast to every task and
the join keeps the rows' partitioning; Spark evaluates the same expression on the column as it
would on the literal, so the values (hashes, ranks, digests) are those of the literal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from spark_dp.pandas_udfs import series_udf
from spark_dp.randomness import continuous
from spark_dp.randomness.prf import BLOCK_BYTES, prf_words
from spark_dp.randomness.streams import Randomness

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import Column, DataFrame

__all__ = [
    "DISTRIBUTIONS",
    "add_noise_column",
    "row_digest_column",
    "with_hash_column",
    "with_secrets",
]

DISTRIBUTIONS = ("gaussian", "laplace")


def row_digest_column(key_cols: Sequence[str]) -> Column:
    """The PRF input of each row: SHA-256 of ``<len>:<value>`` per key column, first 16 bytes.

    The driver-side twin is :func:`spark_dp.randomness.prf.row_digest`.
    """
    from pyspark.sql import functions as F

    parts = []
    for c in key_cols:
        value = F.col(c).cast("string")
        parts += [F.length(value).cast("string"), F.lit(":"), value]
    return F.substring(F.unhex(F.sha2(F.concat(*parts), 256)), 1, BLOCK_BYTES)


def add_noise_column(
    df: DataFrame,
    key_cols: Sequence[str],
    out_col: str,
    *,
    distribution: str,
    scale: float,
    randomness: Randomness,
) -> DataFrame:
    """Append ``out_col`` = noise of each row (Gaussian σ = scale, or Laplace b = scale).

    Args:
        df: one row per noised key.
        key_cols: the columns that identify a row (e.g. ``["item"]``); the noise of a row is a
            function of (key, stream, row key) only.
        out_col: name of the noise column (name it ``*_private`` if it must not leave the job).
        distribution: ``"gaussian"`` or ``"laplace"``.
        scale: σ or the Laplace scale b.
        randomness: the stream (a fresh :meth:`Randomness.child` per round).

    Returns:
        ``df`` with the float64 column ``out_col``; its values are a function of the key and
        the row key only, safe to read any number of times (Spark sees the column as
        nondeterministic, so it is computed where it is added: repartition ``df`` first to
        choose the tasks that run the UDF).
    """

    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"distribution must be 'gaussian' or 'laplace', got {distribution!r}")
    transform = continuous.gaussian if distribution == "gaussian" else continuous.laplace
    words = continuous.WORDS[distribution]
    counters = range((words + 1) // 2)
    key = randomness.stream_key
    scale = float(scale)

    def _keyed_noise(digests: pd.Series) -> pd.Series:
        import pandas as pd

        w = prf_words(key, counters, b"".join(digests.tolist()))
        return pd.Series(scale * transform(w[:, :words]), index=digests.index)

    # A pure function of (key, stream, row key), declared nondeterministic only as a plan
    # barrier: Spark then evaluates it where it is written (after the caller's repartition)
    # instead of pushing a filter on the noise, and with it the UDF, below that repartition.
    keyed_noise = series_udf(_keyed_noise, "double").asNondeterministic()
    return df.withColumn(out_col, keyed_noise(row_digest_column(key_cols)))


def with_secrets(df: DataFrame, secrets: Mapping[str, int | str]) -> DataFrame:
    """``df`` with one more column per secret (name → value, a 64-bit integer or a string),
    its value on every row, so that expressions read the secret as data, not as a literal of
    the plan (module docstring).

    The values come from a one-row table cross-joined as a broadcast: on a classic session an
    RDD's single row (the plan shows a scan of an RDD, never its rows, and no optimizer rule
    folds an RDD's values into the plan); over Spark Connect the client sends the row to the
    server inside the plan, as it sends every UDF's closure (docs/privacy/spark-monitoring.md).
    """
    from pyspark.sql import functions as F

    from spark_dp.session import is_classic

    spark = df.sparkSession
    schema = ", ".join(
        f"`{name}` {'bigint' if isinstance(v, int) else 'string'}" for name, v in secrets.items()
    )
    row = [tuple(secrets.values())]
    source = spark.sparkContext.parallelize(row, 1) if is_classic(spark) else row
    return df.crossJoin(F.broadcast(spark.createDataFrame(source, schema)))


def with_hash_column(
    df: DataFrame, out: str, randomness: Randomness, *cols: str | Column, purpose: str = "hash"
) -> DataFrame:
    """``df`` with ``out`` = a keyed 64-bit hash of ``cols`` (Spark ``xxhash64`` of a secret
    salt and the columns), for ranking; the salt joins as data (:func:`with_secrets`).

    Used where a random choice must be a function of a row's own key, e.g. the uniform subsample
    of a user's items (docs/design/selection.md#cap). This is a sampling device, not privacy
    noise: the mechanisms are private for every value of the salt (it only makes the choice
    uniform), and the salt is derived from the key by the PRF, so it reveals nothing about it.
    """
    from pyspark.sql import functions as F

    salt = f"_salt_{purpose}"
    salted = with_secrets(df, {salt: randomness.salt(purpose)})
    return salted.withColumn(out, F.xxhash64(F.col(salt), *cols)).drop(salt)
