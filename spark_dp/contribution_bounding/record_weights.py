"""The record-weights table of contribution bounding: checked and digested in one pass.

Weights are content-free numbers per record (``weighted-global``) or per (record, user)
(``per-user``) that order the records (docs/design/bounding.md#orders); they are read once,
checked here, and digested in the same aggregation (the release is bound to the rows read,
:mod:`spark_dp.io.digest`). Nothing private reaches a message: counts go through
:func:`spark_dp.logs.private`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spark_dp.contribution_bounding.columns import RECORD_ID, USER_ID, WEIGHT
from spark_dp.errors import InputContractError
from spark_dp.io.digest import ContentDigest, ReadGate, digested, finish_digest
from spark_dp.io.read import id_column
from spark_dp.logs import private

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["check_weights"]


def check_weights(
    weights: DataFrame, *, per_user: bool, gate: ReadGate | None = None, strict: bool = False
) -> tuple[DataFrame, ContentDigest | None]:
    """Validate a content-free weight table: (record_id[, user_id], weight).

    Invalid rows have a fixed reading, so no row value decides the exit code
    (docs/privacy/caveats.md#bad-rows): a row with a null key is dropped, a null, NaN or
    infinite weight reads as 0, and a key listed twice gets its smallest weight. ``strict``
    (``--strict-input``) fails on any of them instead.

    With a ``gate``, the same aggregation digests the rows read (keys and weight as strings,
    :mod:`spark_dp.io.digest`), after ``gate.before_read``.

    Returns:
        ((record_id string[, user_id string], weight double), one row per key; the digest or
        ``None`` without a gate).

    Raises:
        InputContractError: missing columns or a non-numeric weight column (the schema); with
            ``strict``, null or non-finite weights or a key listed twice.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    keys = [RECORD_ID, USER_ID] if per_user else [RECORD_ID]
    missing = [c for c in [*keys, WEIGHT] if c not in weights.columns]
    if missing:
        raise InputContractError(
            f"record weights need columns {[*keys, WEIGHT]}; missing {missing}, present "
            f"{weights.columns}"
        )
    if not isinstance(weights.schema[WEIGHT].dataType, T.NumericType):
        raise InputContractError(
            f"record weights column {WEIGHT!r} must be numeric, got "
            f"{weights.schema[WEIGHT].dataType.simpleString()}"
        )
    w = weights.select(
        *[id_column(weights, k, k, "record weights").alias(k) for k in keys],
        F.col(WEIGHT).cast("double"),
    )
    aggs = [
        F.count(F.lit(1)).alias("n"),
        F.sum((F.col(WEIGHT).isNull() | F.isnan(WEIGHT)).cast("long")).alias("bad"),
        F.sum(F.col(WEIGHT).isin(float("inf"), float("-inf")).cast("long")).alias("inf"),
        F.count_distinct(*[F.col(k) for k in keys]).alias("keys"),
    ]
    checked = w
    if gate is not None:
        read = [F.col(k) for k in keys] + [F.col(WEIGHT).cast("string")]
        checked, sums = digested(w, read, gate)
        aggs += sums
        gate.before_read()
    s = checked.agg(*aggs).collect()[0]
    digest = None if gate is None else finish_digest("record weights", int(s["n"]), s, gate)
    if strict and (s["bad"] or s["inf"]):
        bad = private(int(s["bad"] or 0) + int(s["inf"] or 0))
        raise InputContractError(
            f"record weights: {bad} weights are null, NaN or infinite (--strict-input); give "
            "every listed record a finite weight, or run without --strict-input (they read as 0)"
        )
    if strict and s["keys"] != s["n"]:
        raise InputContractError(
            f"record weights: {private(s['n'] - s['keys'])} rows repeat a key {keys} "
            "(--strict-input); keep one per key, or run without --strict-input (the smallest "
            "weight is kept)"
        )
    finite = (
        F.col(WEIGHT).isNotNull()
        & ~F.isnan(WEIGHT)
        & ~F.col(WEIGHT).isin(float("inf"), float("-inf"))
    )
    named = F.lit(True)
    for k in keys:
        named = named & F.col(k).isNotNull()
    one_per_key = (
        w.where(named)
        .groupBy(*keys)
        .agg(F.min(F.when(finite, F.col(WEIGHT)).otherwise(F.lit(0.0))).alias(WEIGHT))
    )  # -> (record_id[, user_id], weight): one row per key, invalid weights as 0
    return one_per_key, digest
