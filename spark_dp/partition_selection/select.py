"""One entry point for every partition-selection algorithm: :func:`select_partitions`."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame

from spark_dp.io import validate_edges
from spark_dp.logs import StageTimer
from spark_dp.partition_selection.basic import basic, basic_laplace
from spark_dp.partition_selection.classic import count_thresholding
from spark_dp.partition_selection.columns import ITEM, USER_ID
from spark_dp.partition_selection.dp_sips import dp_sips
from spark_dp.partition_selection.mad import mad
from spark_dp.partition_selection.mad2r import mad2r
from spark_dp.partition_selection.params import CLASSIC_ALGORITHMS, PartitionSelectionParams
from spark_dp.partition_selection.result import Selection
from spark_dp.randomness import Randomness

__all__ = ["run_selection", "select_partitions"]


def run_selection(
    pairs: DataFrame,
    params: PartitionSelectionParams,
    randomness: Randomness,
    *,
    timer: StageTimer | None = None,
    validate: bool = True,
    user_col: str = USER_ID,
    item_col: str = ITEM,
) -> Selection:
    """Run ``params.algorithm`` on ``pairs`` and return the full :class:`Selection`.

    Args:
        pairs: user-item pairs.
        params: validated parameters.
        randomness: ``Randomness.create()`` (OS entropy) in production; seeded for tests.
        timer: stage logger.
        validate: check ``pairs`` first (null ids, types, empty input); pass False for a
            table from :func:`spark_dp.io.load_pairs`, which is already checked. Repeated
            pairs need no separate pass: every algorithm's cap drops them.
        user_col: user column of ``pairs`` (when validating).
        item_col: item column of ``pairs`` (when validating).

    Raises:
        InputContractError: when validating and the input breaks the pairs contract.
    """
    checked = pairs
    if validate:
        checked, _ = validate_edges(
            pairs, {USER_ID: user_col, ITEM: item_col}, dedupe=False, persist=False
        )  # the cap of every algorithm drops repeated pairs (capping.cap_user_items)
    p = params
    common = {"epsilon": p.epsilon, "delta": p.delta, "randomness": randomness, "timer": timer}
    if p.algorithm == "basic":
        selection = basic(checked, max_items=p.max_items_per_user, **common)
    elif p.algorithm == "basic-laplace":
        selection = basic_laplace(checked, max_items=p.max_items_per_user, **common)
    elif p.algorithm == "mad":
        selection = mad(
            checked,
            max_items=p.max_items_per_user,
            d_max=p.max_adaptive_degree,
            beta=p.beta,
            **common,
        )
    elif p.algorithm == "dp-sips":
        selection = dp_sips(
            checked,
            max_items=p.max_items_per_user,
            split=p.split,
            recap_each_round=p.recap_each_round,
            **common,
        )
    elif p.algorithm == "mad2r":
        selection = mad2r(
            checked,
            max_items=p.max_items_per_user,
            split=p.split,
            d_max=p.max_adaptive_degree,
            beta=p.beta,
            b_min=p.b_min,
            b_max=p.b_max,
            c_lb=p.c_lb,
            c_ub=p.c_ub,
            **common,
        )
    elif p.algorithm in CLASSIC_ALGORITHMS:
        selection = count_thresholding(
            checked, strategy=p.algorithm, max_partitions=p.max_items_per_user, **common
        )
    else:  # unreachable: the parameters validate the name
        raise ValueError(f"unknown algorithm {p.algorithm!r}")
    return selection


def select_partitions(
    pairs: DataFrame,
    params: PartitionSelectionParams,
    randomness: Randomness,
    **kwargs: Any,
) -> tuple[DataFrame, dict[str, Any]]:
    """Privately select items: ``(items, report_info)``.

    ``items`` is a DataFrame with the single column ``item`` (materialized: reading it twice
    never redraws noise). ``report_info`` is the public account of the run (algorithm,
    per-round σ, ρ, τ, α, (ε, δ) spent, released item counts); it never holds weights,
    per-item counts or the union. Keyword arguments go to :func:`run_selection`.
    """
    selection = run_selection(pairs, params, randomness, **kwargs)
    return selection.items, selection.report_info()
