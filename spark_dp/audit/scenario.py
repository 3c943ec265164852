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

The private choice of Δ0 (``--max-contributions auto``) is audited on D (users of degree 1
only, so no ranking of anyone's items matters) and D' = D + a **canary of maximal degree**, who
holds the largest candidate's number of items (:func:`choice_datasets`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "CHOICE_CANARY",
    "NOVEL_PREFIX",
    "SEPARATOR",
    "Copies",
    "choice_datasets",
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


def distinct_count_datasets(
    max_contributions: int,
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
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
    neighbour["canary"] = [f"{NOVEL_PREFIX}{k}" for k in range(max_contributions)]
    return base, neighbour


CHOICE_CANARY = "canary-max-degree"


def choice_datasets(
    sigma: float, rho_low: float, rho_top: float, top: int
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(D, D') of the audit of the choice of Δ0 between a small candidate and ``top``.

    D holds only users of degree 1, so every candidate sees the same weights (the thresholds
    ρ differ): ``top`` target items held by n users each, n the integer nearest
    ρ(top) − 1/(2√top), where the canary's 1/√top moves a term of the score at Δ0 = top most;
    and K saturated items (held by enough users that their terms are 1 − Φ(−ρ/σ), which favour
    the larger ρ a little). The canary holds the ``top`` targets: it raises s(top) by about
    its sensitivity and s(small) much less. K is the smallest number that brings the score gap
    s_D(small) − s_D(top) below half the canary's shift, so the noiseless argmax differs
    between D and D' (docs/design/tuning.md#audit). Public synthetic data: the scores are
    computed here exactly as the release computes them.
    """
    import numpy as np

    from spark_dp.partition_selection.auto.calibration import (
        WEIGHT_SCALE,
        fixed_point_weight,
        quantized_terms,
    )

    n = max(1, round(rho_top - 0.5 / math.sqrt(top)))
    saturated = math.ceil(rho_top + 12 * sigma)

    def score(rho: float, counts: list[int], extra: int = 0, lifted: int = 0) -> int:
        w = np.array(counts, dtype=np.int64) * WEIGHT_SCALE
        w[:lifted] += extra
        return int(quantized_terms(w, sigma, rho).sum())

    targets = [n] * top
    gap = score(rho_low, targets) - score(rho_top, targets)
    one, quarter = WEIGHT_SCALE, int(fixed_point_weight(top))
    shift = score(rho_top, targets, quarter, top) - score(rho_top, targets)
    shift -= score(rho_low, targets, one, 1) - score(rho_low, targets)
    step = score(rho_top, [saturated]) - score(rho_low, [saturated])
    k = max(0, math.ceil((gap - shift / 2) / step)) if step > 0 else 0
    base: dict[str, list[str]] = {}
    for j in range(top):
        base.update({f"t{j}-{u}": [f"target{j}"] for u in range(n)})
    for j in range(k):
        base.update({f"s{j}-{u}": [f"saturated{j}"] for u in range(saturated)})
    neighbour = dict(base)
    neighbour[CHOICE_CANARY] = [f"target{j}" for j in range(top)]
    return base, neighbour
