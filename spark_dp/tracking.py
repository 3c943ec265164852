"""What the Spark UI shows while spark_dp runs: a job group and description per stage.

Every Spark job spark_dp launches carries a description naming the job (or the library family),
the algorithm and the stage, e.g. ``spark_dp partition_selection mad2r: round 2``, so an operator
can tell which step of a run is slow. Two pieces:

* :func:`labels` (a context manager) names the job, family and algorithm for everything inside
  it; the library entry points (``select_partitions``, ``bound_contributions``, the distinct
  count's ``run``) and the job runner set them.
* :func:`spark_stage` (a context manager) marks one stage; :class:`spark_dp.logs.StageTimer`
  calls it for every timed stage, and :func:`labels` marks the whole block with the labels
  alone, so Spark jobs outside any stage are named too.

On a classic session the mark is the thread's job group (``SparkContext.setJobGroup``: group id
and description, shown on the UI's Jobs page and usable with ``cancelJobGroup``); on Spark
Connect, which has no SparkContext, it is a job tag (``SparkSession.addTag``, shown on the Jobs
page and usable with ``interruptTag``). The previous group, description or tags are restored
when the block ends, so the caller's session keeps its own. Descriptions and tags hold names
only (job, algorithm, stage): never counts, sizes or values of the data. Where the number of
iterations depends on the data (contribution bounding's rounds), the caller passes
``hide_numbers=True`` and stage numbers show as ``#`` (``pass-1 round #``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["PREFIX", "active_session", "describe", "labels", "spark_stage"]

PREFIX = "spark_dp"
"""First word of every description and tag spark_dp sets."""

_LABELS: ContextVar[Mapping[str, str] | None] = ContextVar("spark_dp_tracking_labels", default=None)
_KEYS = ("job", "family", "algorithm")
_GROUP = "spark.jobGroup.id"
_DESCRIPTION = "spark.job.description"
_INTERRUPT = "spark.job.interruptOnCancel"


def describe(stage: str | None = None) -> str:
    """The description of ``stage`` under the current labels, e.g.
    ``spark_dp partition_selection mad2r: round 1`` (the job name wins over the family)."""
    current = _LABELS.get() or {}
    words = [PREFIX, current.get("job") or current.get("family") or "", current.get("algorithm")]
    head = " ".join(w for w in words if w)
    if stage and current.get("hide_numbers"):
        stage = re.sub(r"\d+", "#", stage)
    return f"{head}: {stage}" if stage else head


def active_session() -> SparkSession | None:
    """The active SparkSession (classic or Spark Connect), or None."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:  # pragma: no cover - pyspark is a dependency
        return None
    try:
        return SparkSession.getActiveSession()
    except Exception:  # no JVM and no remote session
        return None


@contextmanager
def labels(
    spark: SparkSession | None = None, *, hide_numbers: bool = False, **values: str | None
) -> Iterator[None]:
    """Name the job, family and algorithm of everything inside the block.

    Args:
        spark: the session whose Spark jobs are marked (default: the active session).
        hide_numbers: stage numbers inside the block count data-dependent iterations: show
            them as ``#``.
        values: any of ``job``, ``family``, ``algorithm``; None or empty leaves a label as it is
            (an outer job name stays when a library call sets its family).
    """
    unknown = set(values) - set(_KEYS)
    if unknown:
        raise TypeError(f"unknown tracking labels {sorted(unknown)}; use {list(_KEYS)}")
    merged = dict(_LABELS.get() or {})
    merged.update({k: str(v) for k, v in values.items() if v})
    if hide_numbers:
        merged["hide_numbers"] = "1"
    token = _LABELS.set(merged)
    try:
        with spark_stage(None, spark):
            yield
    finally:
        _LABELS.reset(token)


@contextmanager
def spark_stage(stage: str | None, spark: SparkSession | None = None) -> Iterator[None]:
    """Mark the Spark jobs launched inside the block with :func:`describe` of ``stage``."""
    session = spark if spark is not None else active_session()
    if session is None:
        yield
        return
    description = describe(stage)
    if getattr(session, "_jsparkSession", None) is not None:
        with _job_group(session, description):
            yield
    else:
        with _job_tag(session, description):
            yield


@contextmanager
def _job_group(spark: SparkSession, description: str) -> Iterator[None]:
    """Classic session: the thread's job group and description, restored afterwards."""
    sc: Any = spark.sparkContext
    saved = {key: sc.getLocalProperty(key) for key in (_GROUP, _DESCRIPTION, _INTERRUPT)}
    group = description.split(":", 1)[0]
    sc.setJobGroup(group, description, interruptOnCancel=False)
    try:
        yield
    finally:
        for key, value in saved.items():
            sc.setLocalProperty(key, value)


def _tag(description: str) -> str:
    """A valid job tag (no commas, not empty) for ``description``."""
    return re.sub(r"\s*,\s*", " ", description).strip() or PREFIX


@contextmanager
def _job_tag(spark: SparkSession, description: str) -> Iterator[None]:
    """Spark Connect: a job tag for the block (removed afterwards unless it was already set)."""
    tag = _tag(description)
    session: Any = spark
    had = tag in session.getTags()
    if not had:
        session.addTag(tag)
    try:
        yield
    finally:
        if not had:
            session.removeTag(tag)
