"""One entry point for a distinct-count release from (user, item) pairs: :func:`distinct_count`.

It validates the pairs (and digests them in the same pass), binds the key to the release, runs
the method's curve and releases it (the registry entry's run, :mod:`.registry`). The job calls it
with the runner's bound key; a library caller gets the same binding rule as
:func:`~spark_dp.partition_selection.select_partitions` (:func:`spark_dp.release_ids.bind_release`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spark_dp.caching import CacheScope
from spark_dp.distinct_count.params import DistinctCountParams
from spark_dp.distinct_count.registry import curve_method
from spark_dp.distinct_count.release import plan_parameters
from spark_dp.distinct_count.result import DistinctCountResult
from spark_dp.io import ITEM, USER_ID, ContentDigest, InputSummary, ReadGate, validate_edges
from spark_dp.logs import StageTimer, get_logger
from spark_dp.release_ids import bind_release, digests_of

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from spark_dp.randomness import Randomness

__all__ = ["distinct_count"]


def distinct_count(
    pairs: DataFrame,
    params: DistinctCountParams,
    randomness: Randomness,
    *,
    validate: bool = True,
    user_col: str = USER_ID,
    item_col: str = ITEM,
    digest: InputSummary | ContentDigest | None = None,
    timer: StageTimer | None = None,
) -> DistinctCountResult:
    """A person-level ε-DP lower bound on the number of distinct items of ``pairs``.

    Args:
        pairs: user-item pairs.
        params: validated parameters (method, ε, β, ℓ_max and the exact curve's engineering
            options, which never change a value).
        randomness: an unbound key (bound here to the release of (method, the plan's
            constants, the content digest of ``pairs``, key): a key-file or seeded key needs
            that digest), or one the caller bound. The release draws on its child stream
            ``distinct_count``.
        validate: check ``pairs``' types, drop rows with a null id (an empty input counts 0
            items, docs/privacy/caveats.md#bad-rows) and digest them in one pass, and
            deduplicate them unless the method does that itself; pass False for a table from
            :func:`spark_dp.io.load_pairs` (with its summary as ``digest``).
        user_col: user column of ``pairs`` (when validating).
        item_col: item column of ``pairs`` (when validating).
        digest: with ``validate=False``, the :class:`~spark_dp.io.InputSummary` of
            ``load_pairs(..., gate=ReadGate.keyed_by(randomness))``.
        timer: stage timer for progress logging.

    Returns:
        the :class:`DistinctCountResult` (``fill_report`` writes the release into a report).
    """
    method = curve_method(params.method)
    plan = method.plan(params)
    method.components_method(pairs.sparkSession, params.components)  # refused before any read
    digests = digests_of(digest)
    cache = CacheScope()
    try:
        if validate:
            gate = None if randomness.bound else ReadGate.keyed_by(randomness)
            once = method.dedupes  # the curve dedupes and reads its input once
            pairs, summary = validate_edges(
                pairs,
                {USER_ID: user_col, ITEM: item_col},
                dedupe=not once,
                persist=not once,
                gate=gate,
            )
            summary.log(get_logger("spark_dp.distinct_count"))  # counts: unsafe debug only
            cache.adopt(pairs)
            digests = digests_of(summary)
        bound = bind_release(
            randomness,
            family="distinct_count",
            algorithm=params.method,
            parameters=plan_parameters(plan),
            digests=digests,
            tables=["pairs"],
        )
        return method(
            pairs,
            plan,
            bound.child("distinct_count"),
            timer=timer,
            components=params.components,
            spark_rounds=params.spark_rounds,
            spark_rounds_min_rows=params.spark_rounds_min_rows,
            components_min_rows=params.components_min_rows,
            ell_blocks=params.ell_blocks,
        )
    finally:
        cache.release()
