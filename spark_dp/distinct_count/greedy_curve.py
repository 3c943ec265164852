"""The greedy curve ĝ[ℓ], ℓ = 1..ℓ_max, in one incremental round-robin pass (Algorithm 2).

Knop & Steinke 2023, Algorithm 2 and Theorem 1.2 (the incremental form is Algorithm 4,
App. A); docs/design/counting.md#greedy.

Round ℓ gives every person one more slot: in a fixed person order, each person takes the first
item of its list (in a fixed item order ≺) that nobody has covered yet; ĝ[ℓ] = |S| after the
round. ĝ[ℓ] is the size of a maximal matching in the ℓ-copy graph, so

    ½·DC(D; ℓ) ≤ ĝ[ℓ] ≤ DC(D; ℓ) ≤ DC(D),

and removing one person lowers every ĝ[ℓ] by at most ℓ (sensitivity ℓ) **provided** the orders
do not depend on other persons' data (docs/design/counting.md#greedy):

* C1 item order: byte-lexicographic order of the item string (Spark's binary string order,
  which equals Python's code-point order) — never global frequency or first-appearance ids;
* C2 person order: ``(xxhash64(PERSON_ORDER_SALT, user_id), user_id)``, a function of the
  person's own id with a public constant salt;
* C3 determinism: lists are sorted explicitly (``array_sort``), never ``collect_list`` order;
* C4 the same function for every dataset: the early stop below only fills values that are
  known to be final (every list exhausted).

The pass is sequential by nature, so it runs in one task (``mapInPandas`` after
``repartition(1)``); its cost is O(|D| + n·ℓ_max) Python steps with exhausted persons dropped.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from spark_dp.io import ITEM, USER_ID

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["PERSON_ORDER_SALT", "greedy_curve", "greedy_curve_arrays", "person_order_key"]

#: Public, data-independent salt of the person order (docs/design/counting.md#person-order; C2).
# Changing it : changes the (still private and valid) curve, never the privacy guarantee.
PERSON_ORDER_SALT = 0x5D1C0D15


def person_order_key(user_col: str = USER_ID) -> Column:
    """Spark column ``xxhash64(PERSON_ORDER_SALT, user)``; ties broken by the user id (C2)."""
    from pyspark.sql import functions as F

    return F.xxhash64(F.lit(PERSON_ORDER_SALT), F.col(user_col))


def greedy_curve_arrays(
    indptr: NDArray[np.integer], items: NDArray[np.integer], max_contributions: int
) -> NDArray[np.int64]:
    """ĝ[1..ℓ_max] for persons given in their fixed order as CSR lists.

    Person i's items are ``items[indptr[i]:indptr[i+1]]``, already sorted by ≺ (any int ids
    that identify the items). Each person keeps a pointer: every item before it is covered,
    and the covered set only grows, so "the first uncovered item" is found by advancing it.

    Returns:
        int64 array ``g`` with ``g[ℓ-1] = ĝ[ℓ]``.
    """
    items = np.asarray(items, dtype=np.int64)
    flat = items.tolist()
    n_items = int(items.max()) + 1 if len(items) else 0
    ptr = [int(v) for v in indptr[:-1]]
    end = [int(v) for v in indptr[1:]]
    covered = bytearray(n_items)
    size = 0
    active = [i for i in range(len(ptr)) if ptr[i] < end[i]]
    out = np.zeros(max_contributions, dtype=np.int64)
    for round_ in range(max_contributions):
        still: list[int] = []
        keep = still.append
        for i in active:
            k, e = ptr[i], end[i]
            while k < e and covered[flat[k]]:
                k += 1
            if k < e:  # match copy (i, ℓ) to the first uncovered item
                covered[flat[k]] = 1
                size += 1
                k += 1
                if k < e:
                    ptr[i] = k
                    keep(i)
        active = still
        out[round_] = size
        if not active:  # every list exhausted: the curve is final (C4-safe shortcut)
            out[round_:] = size
            break
    return out


def greedy_curve(pairs: DataFrame, max_contributions: int) -> NDArray[np.int64]:
    """ĝ[1..ℓ_max] of a (user_id, item) DataFrame (Spark, one task).

    Builds each person's sorted set of items (``array_sort(collect_set)`` on the item string:
    order ≺, C1/C3; a repeated pair counts once, so the input need not be deduplicated: the
    pass would skip a repeat anyway, its item being covered by then),
    orders persons by :func:`person_order_key` (C2) and runs :func:`greedy_curve_arrays` in a
    single ``mapInPandas`` task that reads every batch first (rounds interleave persons). The
    driver receives the ℓ_max curve values only.

    Args:
        pairs: (user_id, item) pairs (strings); repeated pairs are dropped here.
        max_contributions: ℓ_max, public and data-independent.

    Returns:
        int64 array of length ℓ_max. Private: never log it.
    """
    import pandas as pd
    from pyspark.sql import functions as F

    lists = (
        pairs.groupBy(USER_ID)
        .agg(F.array_sort(F.collect_set(ITEM)).alias("items"))
        .withColumn("pkey", person_order_key())
    )  # -> (user_id, items, pkey)
    ordered = lists.repartition(1).sortWithinPartitions("pkey", USER_ID).select("items")

    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        frames = [b["items"] for b in batches]
        col = pd.concat(frames, ignore_index=True) if frames else pd.Series([], dtype=object)
        sizes = col.map(len).to_numpy(dtype=np.int64)
        indptr = np.r_[0, np.cumsum(sizes)]
        flat: NDArray[np.object_] | list[str] = (
            np.concatenate([np.asarray(v, dtype=object) for v in col]) if len(col) else []
        )
        codes, _ = pd.factorize(pd.Series(flat, dtype=object))
        curve = greedy_curve_arrays(indptr, codes, max_contributions)
        yield pd.DataFrame({"ell": np.arange(1, max_contributions + 1), "value": curve})

    rows = ordered.mapInPandas(run, "ell int, value long").collect()
    out = np.zeros(max_contributions, dtype=np.int64)
    for r in rows:
        out[r["ell"] - 1] = r["value"]
    return out
