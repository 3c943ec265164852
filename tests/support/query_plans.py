"""The physical plans of the queries a piece of code runs, read from Spark's SQL status store.

The layout tests of both families (issue 18) run an action under given SQL settings and check
the plans of every query it ran: where exchanges sit, how many partitions they have.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession

LAYOUT_SETTINGS = {"spark.sql.shuffle.partitions": "8", "spark.sql.adaptive.enabled": "false"}
"""More shuffle partitions than cores (a coalesce is kept in the plan), no adaptive execution
(the plans show every exchange)."""

UNSET_PARTITIONS = {"spark.sql.shuffle.partitions": None, "spark.sql.adaptive.enabled": "false"}
"""``spark.sql.shuffle.partitions`` unset (Spark's default count), adaptive execution off (the
plans as they were built)."""


def _scala_list(collection) -> list:
    seq = collection.toSeq()
    return [seq.apply(i) for i in range(seq.size())]


def _executions(spark: SparkSession) -> list:
    return _scala_list(spark._jsparkSession.sharedState().statusStore().executionsList())


@contextmanager
def layout_session(spark: SparkSession, settings: dict) -> Iterator[None]:
    """The block runs with ``settings`` (a value None unsets its key); restored on exit."""
    saved = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def plans_of(
    spark: SparkSession, action: Callable[[], object], settings: dict | None = None
) -> list[str]:
    """The physical plans of the queries ``action()`` runs, in a :func:`layout_session` with
    ``settings`` (default :data:`LAYOUT_SETTINGS`)."""
    with layout_session(spark, settings or LAYOUT_SETTINGS):
        # by id, not by position: the store keeps the last spark.sql.ui.retainedExecutions
        # (1,000) queries, and a long suite fills it, so the list no longer grows
        last = max((e.executionId() for e in _executions(spark)), default=-1)
        action()
        ran = sorted(
            (e for e in _executions(spark) if e.executionId() > last),
            key=lambda e: e.executionId(),
        )
    assert ran, "no query ran"
    return [e.physicalPlanDescription() for e in ran]


def user_exchanges(description: str) -> list[int]:
    """The partition counts of the plan's repartitions by ``user_id`` (``repartition(n,
    user_id)`` and ``repartition(user_id)``; an aggregation's own exchange by user is not
    listed)."""
    return [
        int(n)
        for n in re.findall(
            r"hashpartitioning\(user_id#\d+, (\d+)\), REPARTITION_BY_(?:NUM|COL)", description
        )
    ]
