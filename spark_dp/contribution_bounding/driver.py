"""Everything that moves contribution-bounding data between Spark and the driver.

Spark tables reach the driver only here, through an explicit collect of a table whose size
is known first, and always become a :class:`~.hypergraph.CompactHypergraph` through the one
conversion :meth:`~.hypergraph.CompactHypergraph.from_frames`:

* :func:`collect_graph`: the whole prepared hypergraph, for the driver-side algorithms (ILP,
  Alg. 4, the bias sweep); refused above ``driver_max_rows`` incidences;
* :func:`compact_state`: the eligible remainder of a pass with residual capacities
  cap(u) − d(u), and :func:`driver_finish`, which completes the pass on it
  (docs/design/bounding.md#driver-finish: Greedy(π) over the remainder gives the answer more rounds
  would give);
* :func:`to_spark`: driver results (record positions, batches, sweep points) back to Spark.

Records are collected by their position ``rec`` in the shared order, so the graph's record
index order *is* the order π (docs/design/bounding.md#orders) and the greedy scans need no sequence.
Everything collected is confidential (docs/design/bounding.md#confidential) and is never logged,
only counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from spark_dp.contribution_bounding.columns import CAPACITY, DEGREE, REC, URANK, USER_ID
from spark_dp.contribution_bounding.driver_rounds import simulate_rounds
from spark_dp.contribution_bounding.greedy import greedy
from spark_dp.contribution_bounding.hypergraph import CompactHypergraph
from spark_dp.contribution_bounding.ilp import ProblemTooLargeError
from spark_dp.logs import private

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession

    from spark_dp.contribution_bounding.prepare import Prepared
    from spark_dp.contribution_bounding.proposal_rounds import RoundState
    from spark_dp.logs import StageTimer

__all__ = ["collect_graph", "compact_state", "driver_finish", "to_spark"]


def _to_pandas(df: DataFrame, *cols: str) -> pd.DataFrame:
    """``df[cols]`` on the driver; ``rec`` as int64 (also for an empty table)."""
    pdf = df.select(*cols).toPandas()
    if REC in pdf.columns:
        pdf[REC] = pdf[REC].to_numpy(np.int64)
    return pdf


def to_spark(
    spark: SparkSession,
    data: Mapping[str, np.ndarray] | Sequence[Mapping[str, Any]],
    schema: str,
) -> DataFrame:
    """A small driver result as a DataFrame.

    Args:
        spark: the session.
        data: columns (name → array) or rows (dicts), as :class:`pandas.DataFrame` takes them.
        schema: the DDL schema, e.g. ``"rec long"``.
    """
    import pandas as pd

    return spark.createDataFrame(pd.DataFrame(data), schema)


def collect_graph(prep: Prepared, limit: int, what: str, timer: StageTimer) -> CompactHypergraph:
    """The whole hypergraph on the driver, records in rec order (the shared order).

    Args:
        prep: the prepared tables; ``prep.n_incidences`` is checked before any collect.
        limit: ``driver_max_rows``.
        what: the algorithm's name, for the error message.
        timer: one stage, ``collect to driver``.

    Raises:
        ProblemTooLargeError: more than ``limit`` incidences.
    """
    if prep.n_incidences > limit:
        raise ProblemTooLargeError(
            f"{what} runs on the driver and would collect {private(prep.n_incidences)} "
            f"incidences, more than driver_max_rows={limit}; raise --driver-max-rows if the "
            "driver has the memory, or use a distributed algorithm"
        )
    with timer.stage("collect to driver") as info:
        inc = _to_pandas(prep.inc, REC, USER_ID)
        users = _to_pandas(prep.users, USER_ID, CAPACITY)
        graph = CompactHypergraph.from_frames(inc, users)
        info.update(records=graph.n_records, incidences=len(graph.users))
    return graph


def compact_state(
    state: RoundState, *, with_rank: bool
) -> tuple[CompactHypergraph, np.ndarray | None]:
    """Driver arrays of a pass's state: records in rec order, residual capacities cap − d.

    Returns:
        (graph of the eligible records over the unsaturated users, the per-user rank
        ``urank`` of every incidence aligned with ``graph.users`` when ``with_rank``).
    """
    cols = [REC, USER_ID, *([URANK] if with_rank else [])]
    inc = _to_pandas(state.inc, *cols).sort_values([REC, USER_ID], kind="mergesort")
    users = _to_pandas(state.users, USER_ID, CAPACITY, DEGREE)
    users[CAPACITY] = (users[CAPACITY] - users[DEGREE]).to_numpy(np.int64)
    graph = CompactHypergraph.from_frames(inc, users)
    rank = inc[URANK].to_numpy(np.int64) if with_rank else None
    return graph, rank


def driver_finish(
    state: RoundState, order_col: str, spark: SparkSession
) -> tuple[DataFrame, dict[str, Any]]:
    """Finish a pass on the driver: Greedy(π) over the remainder (P6), or, for per-user
    orders, the rounds themselves (P6 does not hold for them) with the hash fallback on a
    stall (P7).

    Returns:
        ((rec) of the records the driver accepted, counts for the pass's finish record).
    """
    graph, rank = compact_state(state, with_rank=order_col == URANK)
    info: dict[str, Any] = {
        "driver_records": graph.n_records,
        "driver_incidences": len(graph.users),
    }
    if rank is None:
        mask = greedy(graph)
    else:
        sim = simulate_rounds(graph, rank)
        mask = sim.selected.copy()
        info["driver_rounds"] = sim.rounds
        if sim.stalled:
            info["order_switched"] = "on the driver"
            mask |= greedy(graph, np.flatnonzero(sim.eligible), counts=sim.degree)
    chosen = graph.record_ids[mask].astype(np.int64)
    info["driver_accepted"] = len(chosen)
    df = to_spark(spark, {REC: chosen}, f"{REC} long")
    # -> (rec)
    return df, info
