"""Many copies of small datasets in one: how the audit makes thousands of runs in one job.

The probes of :mod:`.probes` give each run a pair of small datasets. A copy's names are
prefixed with its index (``17/x``), so copies share no user and no item. Every per-user step of
the selection mechanisms (cap, degree, weights, MAD's excess) reads only the user's items,
every per-item step (noise, threshold, MAD's truncation, MAD2R's and DP-SIPS' later-round
decisions) only the item's users, and the noise of an item is a keyed pseudorandom function of
its name: so one run on the disjoint union of R copies gives, copy by copy, what R runs on the
copies alone would give with the same key (``tests/audit/test_union.py`` checks this item by
item), and the copies' outcomes are independent because their names differ.

Distinct count is audited on D (a few persons sharing items) and D' = D + a person holding
ℓ_max items nobody else holds, which raises c(D; ℓ) by ℓ for every ℓ: the largest change the
sensitivity allows (:func:`distinct_count_datasets`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "NOVEL_PREFIX",
    "SEPARATOR",
    "Copies",
    "copy_of",
    "disjoint_union",
    "distinct_count_datasets",
    "split_by_copy",
]

Sets = Mapping[str, Sequence[str]]
"""A dataset: user → items (a list; GreedyUpdate reads repeats as priorities)."""

SEPARATOR = "/"
NOVEL_PREFIX = "novel"


@dataclass(frozen=True)
class Copies:
    """Groups of identical copies, numbered in order: (dataset, number of copies) per group.

    :meth:`rows` lists the disjoint union on the driver (for the in-memory oracles);
    :meth:`frame` builds the same rows in Spark from the small per-copy datasets, so the
    union is never shipped from the driver.
    """

    groups: tuple[tuple[Sets, int], ...]

    @property
    def total(self) -> int:
        """The number of copies."""
        return sum(n for _, n in self.groups)

    def rows(self) -> list[tuple[str, str]]:
        """(user_id, item) rows of the union, names prefixed by copy index."""
        return disjoint_union([sets for sets, n in self.groups for _ in range(n)])

    def frame(self, spark: SparkSession) -> DataFrame:
        """The same rows as a DataFrame (user_id, item): each group's dataset cross-joined
        with its range of copy indices."""
        from pyspark.sql import functions as F

        parts = []
        start = 0
        for sets, n in self.groups:
            rows = [(u, i) for u, items in sets.items() for i in items]
            if not rows:  # an empty dataset (a novel probe's D): its copies hold no row
                start += n
                continue
            template = spark.createDataFrame(rows, "u string, i string")
            index = spark.range(start, start + n).select(F.col("id").cast("string").alias("k"))
            prefix = F.concat(F.col("k"), F.lit(SEPARATOR))
            parts.append(
                index.crossJoin(template).select(
                    F.concat(prefix, F.col("u")).alias("user_id"),
                    F.concat(prefix, F.col("i")).alias("item"),
                )
            )
            start += n
        out = parts[0]
        for part in parts[1:]:
            out = out.unionByName(part)
        return out


def copy_of(index: int, name: str) -> str:
    """The name ``name`` takes in copy ``index``."""
    return f"{index}{SEPARATOR}{name}"


def disjoint_union(copies: Sequence[Sets]) -> list[tuple[str, str]]:
    """(user_id, item) rows of the disjoint union of ``copies`` (names prefixed by index)."""
    return [
        (copy_of(k, user), copy_of(k, item))
        for k, sets in enumerate(copies)
        for user, items in sets.items()
        for item in items
    ]


def split_by_copy(items: Iterable[str]) -> dict[int, set[str]]:
    """Released items of a union run, per copy index (names without the prefix)."""
    out: dict[int, set[str]] = {}
    for name in items:
        index, _, item = name.partition(SEPARATOR)
        out.setdefault(int(index), set()).add(item)
    return out


def distinct_count_datasets(ell_max: int) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(D, D') of the distinct-count audit: D' adds a person with ℓ_max novel items.

    D is six persons with overlapping items (so c(D; ℓ) grows with ℓ and GEM has a real
    choice); the canary's items are new, so c(D'; ℓ) = c(D; ℓ) + ℓ for ℓ ≤ ℓ_max.
    """
    base = {
        "p0": ["a", "b", "c", "d", "e", "f"],
        "p1": ["a", "b", "g"],
        "p2": ["c", "h", "i", "j"],
        "p3": ["a"],
        "p4": ["k", "l", "m", "n", "o"],
        "p5": ["b", "k"],
    }
    neighbour = dict(base)
    neighbour["canary"] = [f"{NOVEL_PREFIX}{k}" for k in range(ell_max)]
    return base, neighbour
