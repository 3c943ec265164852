"""Preference orders over records: the keys of docs/design/bounding.md#orders.

A preference order is a strict total order on records (smaller key = more preferred). Every
key ends with ``record_id`` so it stays total even on hash collisions.

================  ==============================================  ===========
order             key per (user, record), ascending = preferred   shared?
================  ==============================================  ===========
``size-hash``     (size(h), prio(h), record_id)  (project default) yes
``hash``          (prio(h), record_id)           ([A]'s default)   yes
``weighted-global`` (−w(h), prio(h), record_id)                   yes
``per-user``      (−w(u, h), prio_u(u, h), record_id)              no
================  ==============================================  ===========

``prio(h)`` is the SHA-256 of the UTF-8 string ``f"{seed}:{record_id}"`` and ``prio_u(u, h)``
the SHA-256 of ``f"{seed}:{user_id}:{record_id}"`` (docs/design/bounding.md#orders, #order-hash).
Spark compares them as 32-byte binaries (``unhex`` of the lowercase hex digest), Python as
``bytes``: both are unsigned lexicographic comparisons, the same as comparing the 64-character hex
strings or the 256-bit integers. Record ids are strings; Spark orders strings by their UTF-8 bytes
and Python by code points, which is the same order. In Spark the seed, a secret of the key, joins
the rows as data, never as a literal of a plan (:func:`~spark_dp.randomness.with_secrets`).

Weights ``w`` must be content-free (computed from the hypergraph or public metadata, never from
record content: fixed-graph DP, docs/design/bounding.md#fixed-graph-dp, #orders).

For the distributed algorithm a shared order is turned once into a dense global position
``rec`` (0 = most preferred) by :func:`global_positions`; afterwards every round sorts a single
long column, and the position doubles as the record's compact id.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from spark_dp.checks import check_choice

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "ORDERS",
    "SHARED_ORDERS",
    "OrderPlan",
    "canonical_order",
    "global_positions",
    "negated_weight",
    "per_user_key",
    "prio_bytes",
    "prio_hex",
    "shared_key",
    "shared_sequence",
    "user_prio_bytes",
    "user_prio_hex",
    "with_prio",
]

ORDERS = ("size-hash", "hash", "weighted-global", "per-user")
SHARED_ORDERS = ("size-hash", "hash", "weighted-global")


@dataclass(frozen=True)
class OrderPlan:
    """The order a run uses: a name of :data:`ORDERS`, its seed, and optionally the
    small/large interleave (u_thr, c1, c2) of the bias-mitigating variant
    (docs/design/bounding.md#bias-mitigating)."""

    order: str
    seed: int | str
    interleave: tuple[int, int, int] | None = None

    @property
    def per_user(self) -> bool:
        """True for per-user orders (no shared order; docs/design/bounding.md#per-user-orders
        applies)."""
        return self.order == "per-user"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description."""
        out: dict[str, Any] = {"order": self.order, "seed": self.seed}
        if self.interleave:
            out["interleave"] = dict(zip(("u_thr", "c1", "c2"), self.interleave, strict=True))
        return out


def canonical_order(name: str) -> str:
    """The order's canonical (dashed) name; accepts underscores (``size_hash``)."""
    value = str(name).strip().lower().replace("_", "-")
    return check_choice("order", value, ORDERS)


# --------------------------------------------------------------------------- Python keys


def prio_hex(seed: int | str, record_id: Any) -> str:
    """prio(h): lowercase hex SHA-256 of ``f"{seed}:{record_id}"``
    (docs/design/bounding.md#orders)."""
    return hashlib.sha256(f"{seed}:{record_id}".encode()).hexdigest()


def prio_bytes(seed: int | str, record_id: Any) -> bytes:
    """prio(h) as the 32-byte digest (orders exactly like :func:`prio_hex`)."""
    return hashlib.sha256(f"{seed}:{record_id}".encode()).digest()


def user_prio_hex(seed: int | str, user_id: Any, record_id: Any) -> str:
    """prio_u(u, h): lowercase hex SHA-256 of ``f"{seed}:{user_id}:{record_id}"``
    (docs/design/bounding.md#orders)."""
    return hashlib.sha256(f"{seed}:{user_id}:{record_id}".encode()).hexdigest()


def user_prio_bytes(seed: int | str, user_id: Any, record_id: Any) -> bytes:
    """prio_u(u, h) as the 32-byte digest."""
    return hashlib.sha256(f"{seed}:{user_id}:{record_id}".encode()).digest()


def negated_weight(weight: float) -> float:
    """−w with −0.0 folded into +0.0, so zero weights tie (in Python and in Spark)."""
    return -float(weight) + 0.0


def shared_key(
    order: str, record_id: str, size: int, seed: int | str, weight: float = 0.0
) -> tuple[Any, ...]:
    """The sort key of a record under a shared order (docs/design/bounding.md#orders).

    Returns:
        ``(size, prio, record_id)`` for ``size-hash``, ``(prio, record_id)`` for ``hash``,
        ``(−w, prio, record_id)`` for ``weighted-global``; ``prio`` as bytes.
    """
    order = canonical_order(order)
    p = prio_bytes(seed, record_id)
    if order == "size-hash":
        return (int(size), p, record_id)
    if order == "hash":
        return (p, record_id)
    if order == "weighted-global":
        return (negated_weight(weight), p, record_id)
    raise ValueError("per-user is not a shared order; use per_user_key")


def per_user_key(
    user_id: str, record_id: str, seed: int | str, weight: float = 0.0
) -> tuple[float, bytes, str]:
    """The key of record h in user u's own order: (−w(u, h), prio_u(u, h), record_id)."""
    return (negated_weight(weight), user_prio_bytes(seed, user_id, record_id), record_id)


def shared_sequence(
    record_ids: Sequence[str] | np.ndarray,
    sizes: Sequence[int] | np.ndarray,
    order: str = "size-hash",
    seed: int | str = 0,
    weights: Sequence[float] | np.ndarray | None = None,
) -> np.ndarray:
    """Indices of the records, best first, under a shared order (driver side).

    Args:
        record_ids: record ids as strings.
        sizes: record sizes |h| (distinct users), same length.
        order: ``size-hash``, ``hash`` or ``weighted-global``.
        seed: the order's seed.
        weights: content-free record weights (``weighted-global`` only).

    Returns:
        int64 permutation ``seq``: ``record_ids[seq[0]]`` is the most preferred record.
    """
    order = canonical_order(order)
    if order not in SHARED_ORDERS:
        raise ValueError(f"order {order!r} is not shared; the greedy algorithms need one")
    n = len(record_ids)
    if order == "weighted-global" and weights is None:
        raise ValueError("the weighted-global order needs record weights")
    w = weights if weights is not None else [0.0] * n
    keys = [shared_key(order, str(record_ids[i]), int(sizes[i]), seed, w[i]) for i in range(n)]
    return np.array(sorted(range(n), key=keys.__getitem__), dtype=np.int64)


# --------------------------------------------------------------------------- Spark


def with_prio(df: DataFrame, seed: int | str, out: str, *cols: str) -> DataFrame:
    """``df`` with ``out`` = prio as a 32-byte binary column: ``unhex(sha2(concat_ws(':', seed,
    *cols), 256))``: prio(h) of ``cols = (record_id,)``, prio_u(u, h) of ``(user_id,
    record_id)``. The seed joins as data (:func:`~spark_dp.randomness.with_secrets`)."""
    from pyspark.sql import functions as F

    from spark_dp.randomness import with_secrets

    seeded = with_secrets(df, {"_order_seed": str(seed)})
    text = F.concat_ws(":", F.col("_order_seed"), *[F.col(c) for c in cols])
    return seeded.withColumn(out, F.unhex(F.sha2(text, 256))).drop("_order_seed")


def global_positions(
    df: DataFrame,
    sort_cols: Sequence[Any],
    out_col: str,
    *,
    checkpoint: Callable[[DataFrame], DataFrame],
    group_col: str | None = None,
) -> tuple[DataFrame, dict[Any, int]]:
    """Append the 0-based position of every row in the order ``sort_cols`` (a dense rank).

    A distributed sort (range partitioning), then each row's position is its partition's
    offset plus its index inside the partition, from ``spark_partition_id`` and
    ``monotonically_increasing_id`` (which puts the partition index in the upper 31 bits and
    the row index in the lower 33). The sorted frame is checkpointed first so both ids come
    from one evaluation. Only (partition, group) counts reach the driver. ``sort_cols`` must be
    a strict total order (end with a unique column) for the result not to depend on
    partitioning.

    Args:
        df: any DataFrame.
        sort_cols: sort keys (columns or names), ascending.
        out_col: name of the new long column.
        checkpoint: ``DataFrame -> DataFrame`` that materializes its argument once.
        group_col: optional leading key; positions then restart at 0 within each group.

    Returns:
        (``df``'s columns plus ``out_col``, the same rows; {group value: row count}, with the
        single key 0 when there is no ``group_col``).
    """
    from pyspark.sql import functions as F

    keys = ([F.col(group_col)] if group_col else []) + [
        F.col(c) if isinstance(c, str) else c for c in sort_cols
    ]
    group = F.col(group_col) if group_col else F.lit(0)
    ordered = (
        df.orderBy(*keys)
        .withColumn("_pid", F.spark_partition_id())
        .withColumn("_mid", F.monotonically_increasing_id())
        .withColumn("_grp", group)
    )
    ordered = checkpoint(ordered)
    # -> (df columns..., _pid, _mid, _grp)
    parts = ordered.groupBy("_pid", "_grp").agg(
        F.count(F.lit(1)).alias("n"), F.min("_mid").alias("first")
    )
    seen: dict[Any, int] = {}
    bases = []
    for row in sorted(parts.collect(), key=lambda r: (r["_grp"], r["_pid"])):
        before = seen.get(row["_grp"], 0)
        bases.append((int(row["_pid"]), row["_grp"], before - int(row["first"])))
        seen[row["_grp"]] = before + int(row["n"])
    spark = df.sparkSession
    grp_type = ordered.schema["_grp"].dataType.simpleString()
    base_df = spark.createDataFrame(bases, f"_pid int, _grp {grp_type}, _base long")
    out = (
        ordered.join(F.broadcast(base_df), ["_pid", "_grp"])
        .withColumn(out_col, F.col("_mid") + F.col("_base"))
        .drop("_pid", "_mid", "_grp", "_base")
    )
    # -> (df columns..., out_col)
    return out, seen
