"""One entry point for every partition-selection algorithm: :func:`select_partitions`.

The algorithm is looked up in the registry (:mod:`.registry`): its ``plan`` calibrates every
round from the public parameters (:func:`plan_selection`, once per run), its ``run`` does the
work with that plan. :func:`calibration_table` is the same plans without data, for
``spark-dp calibrate``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from spark_dp.caching import CacheScope
from spark_dp.dp.registry import Algorithm
from spark_dp.errors import ParameterError
from spark_dp.io import ContentDigest, InputSummary, ReadGate, validate_edges
from spark_dp.logs import StageTimer, get_logger
from spark_dp.partition_selection.auto.plan import AutoPlan, plan_auto
from spark_dp.partition_selection.auto.scores import choose_max_contributions
from spark_dp.partition_selection.capping import ranked_input
from spark_dp.partition_selection.columns import ITEM, USER_ID
from spark_dp.partition_selection.layout import SPARK_SQL_DEFAULTS
from spark_dp.partition_selection.params import PartitionSelectionParams, PreviewParams
from spark_dp.partition_selection.preview import (
    Preview,
    PreviewPlan,
    plan_preview,
    preview_statistics,
)
from spark_dp.partition_selection.registry import REGISTRY
from spark_dp.partition_selection.result import Selection, SelectionPlan
from spark_dp.randomness import Randomness
from spark_dp.release_ids import bind_release, digests_of
from spark_dp.session import sql_defaults
from spark_dp.tracking import labels

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "calibration_rows",
    "calibration_table",
    "plan_selection",
    "preview_partitions",
    "run_plan",
    "select_partitions",
]


def plan_selection(params: PartitionSelectionParams) -> SelectionPlan | AutoPlan:
    """The data-free calibration of ``params.algorithm`` (every round's σ, ρ, τ, α, (ε, δ)).

    Gaussian rounds spend (f·ε, f·δ) of their split share f: σ for (f·ε, f·δ/2) and Δ2 = 1, ρ
    for f·δ/2 and h(t) = h_scale/√t (Chen et al. 2025 Thm. 3.3; docs/design/selection.md#sigma). MAD
    rounds add τ = ρ + β·σ and α = b_min − 1/(2√d_max) (docs/design/selection.md#mad-constants);
    MAD2R's second round is calibrated with h_scale = b_max. Basic-Laplace uses scale 1/ε and ρ_Lap
    (docs/design/selection.md#basic-laplace). With ``max_contributions='auto'``, an
    :class:`~.auto.plan.AutoPlan`: the private choice of Δ0 and the algorithm's plan at every
    candidate Δ0 with the rest of the budget (docs/design/tuning.md).

    Raises:
        ParameterError: an unknown algorithm, or parameters it cannot use.
    """
    entry = REGISTRY[params.algorithm]
    return plan_auto(params, entry.plan) if params.auto else entry.plan(params)


def select_partitions(
    pairs: DataFrame,
    plan: SelectionPlan | AutoPlan | PartitionSelectionParams,
    randomness: Randomness,
    *,
    timer: StageTimer | None = None,
    validate: bool = True,
    user_col: str = USER_ID,
    item_col: str = ITEM,
    digest: InputSummary | ContentDigest | None = None,
) -> Selection:
    """Privately select items from user-item pairs with ``params.algorithm``.

    Args:
        pairs: user-item pairs.
        plan: the data-free plan (:func:`plan_selection`; the job computes it once, before
            the budget reservation), or the parameters, planned here once before any data is
            touched. An :class:`~.auto.plan.AutoPlan` first chooses Δ0 privately
            (:func:`~.auto.scores.choose_max_contributions`), then runs the algorithm's plan at ĉ.
        randomness: ``Randomness.create()`` (OS entropy) in production, or
            ``Randomness.from_key_file(path)``; seeded for tests. An unbound one is bound here
            to the release of (algorithm, the plan, the content digest of ``pairs``, key): see
            :func:`spark_dp.release_ids.bind_release` for the rule (a key-file or seeded key
            needs the digest); a bound one is used as is.
        timer: stage logger.
        validate: check ``pairs``' types first, drop rows with a null id (an empty input
            releases no item, docs/privacy/caveats.md#bad-rows) and digest them in the same
            pass; pass False for a table from :func:`spark_dp.io.load_pairs`, which is
            already checked (then pass its summary as ``digest``). Repeated pairs need no
            separate pass: every algorithm's cap drops them.
        user_col: user column of ``pairs`` (when validating).
        item_col: item column of ``pairs`` (when validating).
        digest: with ``validate=False`` and an unbound key-file or seeded ``randomness``: the
            :class:`~spark_dp.io.InputSummary` of ``load_pairs(..., gate=ReadGate.keyed_by(
            randomness))`` (or its digest).

    Returns:
        the :class:`Selection`: ``items`` (one column ``item``, cached), the per-round public
        account, and :meth:`~Selection.fill_report` for a privacy report. It never holds
        weights, per-item counts or the union of items. Everything the run cached is released
        before it returns, but the released items; use the selection in a ``with`` block (or
        call ``release()``) to unpersist those too.

    Raises:
        InputContractError: when validating and the input breaks the pairs contract.
        ParameterError: parameters the algorithm cannot use.
    """
    if isinstance(plan, PartitionSelectionParams):
        plan = plan_selection(plan)
    spark = pairs.sparkSession
    with (
        labels(spark, family="partition_selection", algorithm=plan.algorithm),
        sql_defaults(spark, SPARK_SQL_DEFAULTS),
    ):
        checked, randomness = _bound_input(
            pairs,
            randomness,
            (validate, user_col, item_col, digest),
            plan.algorithm,
            {"rounds": plan.to_report(), "options": dict(plan.options)},
        )
    return run_plan(checked, REGISTRY[plan.algorithm], plan, randomness, timer=timer)


def run_plan(
    pairs: DataFrame,
    algorithm: Algorithm[PartitionSelectionParams, SelectionPlan],
    plan: SelectionPlan | AutoPlan,
    randomness: Randomness,
    *,
    timer: StageTimer | None = None,
) -> Selection:
    """Run ``plan`` with ``algorithm``'s ``run`` on checked pairs, with a key already bound.

    The lower level under :func:`select_partitions`, which validates, binds the key to the
    release and calls this with ``REGISTRY[plan.algorithm]``. The privacy audit calls it with
    its own entries (docs/privacy/audit.md), so that every variant it runs goes through the
    same caching, tracking and Δ0 choice as a release.

    Args:
        pairs: (user_id, item) pairs, already checked (:func:`spark_dp.io.validate_edges`).
        algorithm: the entry whose ``run`` executes the plan.
        plan: the data-free plan (:func:`plan_selection`).
        randomness: a key bound to this release (:func:`spark_dp.release_ids.bind_release`).
        timer: stage logger.

    Returns:
        the :class:`Selection`, as :func:`select_partitions` returns it.

    Raises:
        ParameterError: an unbound key (binding is the caller's: the release id covers what
            only the caller knows, the rows read and the parameters).
    """
    if not randomness.bound:
        raise ParameterError(
            "run_plan needs a key bound to its release: call select_partitions, which binds "
            "it, or pass randomness.bind(release_id)"
        )
    spark = pairs.sparkSession
    with (
        labels(spark, family="partition_selection", algorithm=plan.algorithm),
        sql_defaults(spark, SPARK_SQL_DEFAULTS),
    ):
        cache = CacheScope()
        try:
            if isinstance(plan, AutoPlan):
                selection = _run_auto(pairs, plan, randomness, algorithm, timer, cache)
            else:
                selection = algorithm.run(pairs, plan, randomness, timer=timer, cache=cache)
        except BaseException:
            cache.release()
            raise
        cache.retain(*(r.items for r in selection.rounds))  # only the released items stay cached
    return selection


def _bound_input(
    pairs: DataFrame,
    randomness: Randomness,
    read: tuple[bool, str, str, InputSummary | ContentDigest | None],
    name: str,
    parameters: dict[str, Any],
) -> tuple[DataFrame, Randomness]:
    """The pairs validated and digested (when ``validate``), and the key bound to the release
    of (``name``, ``parameters``, their digest)."""
    validate, user_col, item_col, digest = read
    checked, digests = pairs, digests_of(digest)
    if validate:
        gate = None if randomness.bound else ReadGate.keyed_by(randomness)
        checked, summary = validate_edges(
            pairs, {USER_ID: user_col, ITEM: item_col}, dedupe=False, persist=False, gate=gate
        )  # the cap of every algorithm drops repeated pairs (capping.cap_user_items)
        summary.log(get_logger("spark_dp.partition_selection"))  # counts: unsafe debug only
        digests = digests_of(summary)
    bound = bind_release(
        randomness,
        family="partition_selection",
        algorithm=name,
        parameters=parameters,
        digests=digests,
        tables=["pairs"],
    )
    return checked, bound


def preview_partitions(
    pairs: DataFrame,
    plan: PreviewPlan | PreviewParams,
    randomness: Randomness,
    *,
    timer: StageTimer | None = None,
    validate: bool = True,
    user_col: str = USER_ID,
    item_col: str = ITEM,
    digest: InputSummary | ContentDigest | None = None,
) -> Preview:
    """Predicted released items per algorithm and Δ0 from pure ε_p-DP statistics
    (``spark-dp preview``; docs/design/tuning.md#preview).

    Arguments as :func:`select_partitions` (the key is bound to the preview's own release);
    ``plan`` is :func:`~.preview.plan_preview` of the parameters, or the parameters.

    Returns:
        the :class:`~.preview.Preview`: ``table()``, ``to_dict()``, ``recommended`` and
        ``fill_report``. It holds released values only.
    """
    if not isinstance(plan, PreviewPlan):
        plan = plan_preview(plan)
    timer = timer or StageTimer(get_logger("spark_dp.partition_selection"))
    spark = pairs.sparkSession
    with (
        labels(spark, family="partition_selection", algorithm="preview"),
        sql_defaults(spark, SPARK_SQL_DEFAULTS),
    ):
        checked, randomness = _bound_input(
            pairs,
            randomness,
            (validate, user_col, item_col, digest),
            "preview",
            {"statistics": plan.to_report(), "algorithms": list(plan.algorithms)},
        )
        return preview_statistics(checked, plan, randomness, timer=timer)


def _run_auto(
    pairs: DataFrame,
    plan: AutoPlan,
    randomness: Randomness,
    algorithm: Algorithm[PartitionSelectionParams, SelectionPlan],
    timer: StageTimer | None,
    cache: CacheScope,
) -> Selection:
    """Choose ĉ privately, then run the algorithm's plan at ĉ on the same ranked pairs."""
    timer = timer or StageTimer(get_logger("spark_dp.partition_selection"))
    tuning, ranked = choose_max_contributions(
        pairs, plan.choice, randomness, timer=timer, cache=cache
    )
    capping = randomness.child("capping", 1)
    with ranked_input(pairs, ranked, max(plan.candidates), capping):
        selection: Selection = algorithm.run(
            pairs, plan.plan_for(tuning.max_contributions), randomness, timer=timer, cache=cache
        )
    cache.drop(ranked)  # the selected items are computed and cached (counted) by now
    selection.tuning = replace(tuning, composition=plan.composition)
    return selection


def calibration_table(
    params: PartitionSelectionParams, algorithms: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """One row per (algorithm, round) with the constants an operator checks before a run.

    Args:
        params: the public parameters (ε, δ, Δ0, split, β, ...).
        algorithms: registry names to show (default: every algorithm). MAD2R has exactly two
            rounds: when ``params.split`` has another length it is shown at the paper's
            split (0.1, 0.9).

    Raises:
        ParameterError: an unknown algorithm name.
    """
    rows = []
    for name in algorithms or REGISTRY.names:
        split = params.split
        if name == "mad2r" and len(split) != 2:
            split = (0.1, 0.9)
        rows += calibration_rows(plan_selection(replace(params, algorithm=name, split=split)))
    return rows


def calibration_rows(plan: SelectionPlan | AutoPlan) -> list[dict[str, Any]]:
    """One row per round of ``plan`` with the constants an operator checks before a run; for
    an auto plan, the choice's row, then every candidate's rounds (with their Δ0)."""
    if isinstance(plan, AutoPlan):
        choice = plan.steps[0]
        rows = [
            {
                "algorithm": plan.algorithm,
                "round": choice.label,
                "epsilon": choice.epsilon,
                "delta": choice.delta,
                "candidates": list(plan.candidates),
                "sensitivities": list(plan.choice.sensitivities),
                "selection_epsilon": plan.plans[0].epsilon,
                "composition": "pld certificate" if plan.composition else "basic",
            }
        ]
        for candidate in plan.plans:
            rows += [
                {**r, "max_contributions": candidate.max_contributions}
                for r in calibration_rows(candidate)
            ]
        return rows
    keys: tuple[str, ...] = ("epsilon", "delta", "sigma", "scale", "rho", "threshold", "tau")
    keys += ("alpha", "crossover_1", "crossover_2")
    rows = []
    for step in plan.to_report():
        row = {"algorithm": plan.algorithm, "round": step["label"]}
        row.update({k: step[k] for k in keys if k in step})
        rows.append(row)
    return rows
