"""The per-user capacity table of contribution bounding: read, checked and digested.

An invalid row has a fixed reading (docs/design/bounding.md#inputs) so that no row value
decides the exit code (docs/privacy/caveats.md#bad-rows); ``strict=True`` (``--strict-input``)
fails on it instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from spark_dp.errors import InputContractError
from spark_dp.io.columns import CAPACITY, USER_ID, quoted
from spark_dp.io.digest import ContentDigest, ReadGate, digested, finish_digest
from spark_dp.io.read import id_column, missing_column, read_table
from spark_dp.logs import private

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["capacity_type_problem", "load_capacities"]

_INTEGRAL = ("tinyint", "smallint", "int", "bigint")


def capacity_type_problem(cap_col: str, type_name: str) -> str | None:
    """Why a capacity column of Spark type ``type_name`` cannot be read, or None: integers, or
    text (CSV) read as integers."""
    if type_name == "string" or type_name in _INTEGRAL:
        return None
    return f"capacities column {cap_col!r} has type {type_name}; capacities must be integers >= 0"


def load_capacities(
    spark: SparkSession,
    path: str,
    *,
    user_col: str = USER_ID,
    cap_col: str = CAPACITY,
    fmt: str | None = None,
    gate: ReadGate | None = None,
    strict: bool = False,
) -> tuple[DataFrame, ContentDigest | None]:
    """Read a per-user capacity table: (user_id string, cap long ≥ 0), one row per user.

    Invalid rows have a fixed reading (docs/design/bounding.md#inputs), so no row value decides
    the exit code: a row with a null user is dropped (it names nobody); a null, negative or
    non-integer capacity reads as 0 (the user's records are never selected: the most
    conservative bound); a user listed with several capacities gets the smallest; an empty
    table lists nobody (every user gets the default). ``strict`` (``--strict-input``) fails on
    any of them instead, as the exit code then may (one bit about the data).

    Returns:
        (the table; its keyed content digest over (user, capacity as read) when ``gate`` is
        given, computed in the checks' own aggregation, see :func:`validate_edges`).

    Raises:
        InputContractError: missing columns or a capacity column that is not integers or text
            (the schema); with ``strict``, an empty table, null users, null, negative or
            non-integer capacities, or a user listed twice with different capacities.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    df = read_table(spark, path, fmt, flag="--capacities")
    user = id_column(df, user_col, "user id of the capacities table", str(path), flag="--user-col")
    if cap_col not in df.columns:
        where = f"capacities {path!r}"
        raise InputContractError(missing_column(where, cap_col, df.columns, "--capacity-col"))
    cap_type = df.schema[cap_col].dataType
    problem = capacity_type_problem(cap_col, cap_type.simpleString())
    if problem:
        raise InputContractError(problem)
    if isinstance(cap_type, T.StringType):  # CSV
        cap = F.expr(f"try_cast({quoted(cap_col)} AS BIGINT)")  # ANSI mode: cast would throw
        bad_cast = F.col(quoted(cap_col)).isNotNull() & cap.isNull()
    else:  # integral (capacity_type_problem)
        cap = F.col(quoted(cap_col)).cast("long")
        bad_cast = F.lit(False)
    read = F.col(cap_col).cast("string").alias("_read")
    t = df.select(user.alias(USER_ID), cap.alias(CAPACITY), bad_cast.alias("_bad"), read)
    aggs = [
        F.count(F.lit(1)).alias("rows"),
        F.sum(F.col(USER_ID).isNull().cast("long")).alias("null_users"),
        F.sum((F.col(CAPACITY).isNull() & ~F.col("_bad")).cast("long")).alias("null_caps"),
        F.sum(F.col("_bad").cast("long")).alias("bad"),
        F.sum((F.col(CAPACITY) < 0).cast("long")).alias("negative"),
    ]
    checked = t
    if gate is not None:
        checked, sums = digested(t, [F.col(USER_ID), F.col("_read")], gate)
        aggs += sums
        gate.before_read()
    s = checked.agg(*aggs).collect()[0]
    digest = None if gate is None else finish_digest("capacities", int(s["rows"]), s, gate)
    if strict:
        _strict_capacities(path, t, s, user_col, cap_col)
    valid = F.col(CAPACITY).isNotNull() & (F.col(CAPACITY) >= 0)
    # -> (user_id, cap): one row per named user, its smallest capacity, invalid ones as 0
    return (
        t.where(F.col(USER_ID).isNotNull())
        .groupBy(USER_ID)
        .agg(F.min(F.when(valid, F.col(CAPACITY)).otherwise(F.lit(0))).alias(CAPACITY)),
        digest,
    )


def _strict_capacities(path: str, t: DataFrame, s: Any, user_col: str, cap_col: str) -> None:
    """``--strict-input``: any invalid capacity row fails (one bit about the data)."""
    if not s["rows"]:
        raise InputContractError(
            f"capacities {path!r} is empty and --strict-input is set; omit --capacities "
            "instead, or run without --strict-input (an empty table lists nobody)"
        )
    problems = []
    if s["null_users"]:
        problems.append(f"{private(s['null_users'])} rows with a null {user_col!r}")
    if s["null_caps"]:
        problems.append(f"{private(s['null_caps'])} rows with a null {cap_col!r}")
    if s["bad"]:
        problems.append(f"{private(s['bad'])} values of {cap_col!r} that are not integers")
    if s["negative"]:
        problems.append(f"{private(s['negative'])} negative capacities")
    if problems:
        raise InputContractError(
            f"capacities {path!r}: {'; '.join(problems)} (--strict-input). Capacities must be "
            "integers >= 0 (0 means the user contributes nothing); without --strict-input "
            "such rows read as capacity 0"
        )
    conflicts = (
        t.select(USER_ID, CAPACITY).distinct().groupBy(USER_ID).count().where("count > 1").count()
    )
    if conflicts:
        raise InputContractError(
            f"capacities {path!r}: {private(conflicts)} users are listed with different "
            "capacities (--strict-input); keep one row per user, or run without --strict-input "
            "(each gets its smallest)"
        )
