"""The outputs of a bounding run: selected records, per-user final degrees, the report.

docs/design/bounding.md#outputs. Both tables are confidential
(docs/design/bounding.md#confidential): together with the hypergraph they reveal who shares records.
The per-user degrees are recomputed here from the full incidence table and the final selection,
independently of the round bookkeeping, and every run checks d(u) ≤ cap(u) on them
(docs/design/bounding.md#feasibility) before anything is written.

:class:`BoundingResult` is what :func:`~.api.bound_contributions` returns; it writes its own
account into a privacy report (:meth:`BoundingResult.fill_report`): the algorithm, the bound
k = ``max_degree`` that downstream accounting must use, and the confidentiality notes.
Selection spends no privacy budget (fixed-graph DP, docs/design/bounding.md#fixed-graph-dp), so it
books no budget step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from spark_dp.caching import CacheScope, HoldsCache
from spark_dp.contribution_bounding.columns import (
    CAPACITY,
    DEGREE,
    MULTIPLICITY,
    REC,
    RECORD_ID,
    STATUS,
    USER_ID,
)
from spark_dp.logs import private

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from spark_dp.contribution_bounding.prepare import Prepared
    from spark_dp.logs import StageTimer
    from spark_dp.report import PrivacyReport

__all__ = [
    "STATUSES",
    "BoundingResult",
    "check_feasible",
    "finish_outputs",
    "selected_records",
    "user_state",
]

PRIVACY_UNIT = "user (fixed-graph DP, [B] Def. 2.1)"
ACCOUNTING = (
    "DP-SGD: Poisson-subsampled Gaussian with group size k (mixture of Gaussians PLD, "
    "docs/design/bounding.md#accounting); DP-MF with these min-sep batches: one Gaussian with "
    "noise multiplier σ/√k"
)


@dataclass
class BoundingResult(HoldsCache):
    """What a bounding run produced.

    Its tables are computed once and kept (checkpointed) by the run's ``cache``, which holds
    nothing else when :func:`~.api.bound_contributions` returns; read or write them, then
    release them (use the result as a context manager, or call :meth:`release`). After the
    release the session holds nothing the run kept, and the tables cannot be read again (on a
    classic session their checkpoints are gone).

    Attributes:
        selected: (record_id) or (record_id, multiplicity); dp-mf: (batch_index, position,
            record_id); bias-sweep: one row per setting. Confidential.
        user_state: (user_id, cap, d, status), or ``None`` (dp-mf, bias-sweep). Confidential.
        summary: counts for the report: algorithm, order, input, selected, distinct_selected,
            rounds, max_degree, round_log, finish, seed, ... (confidential aggregates).
        selected_by_round: (record_id, round) for the single-pass round algorithms (round 0 =
            driver finish), else ``None``. Confidential.
        description: the algorithm as the report names it (its registry summary, the order
            and the finish mode).
        cache: what the run kept for these tables.
    """

    selected: DataFrame
    user_state: DataFrame | None
    summary: dict[str, Any] = field(default_factory=dict)
    selected_by_round: DataFrame | None = None
    description: str = ""
    cache: CacheScope = field(default_factory=CacheScope, repr=False)

    def keep_only_outputs(self, cache: CacheScope) -> None:
        """Compute the result's tables once into ``cache`` and release everything else it
        holds (the rounds' state), so the result is the only thing the run leaves behind."""
        self.selected = cache.checkpoint(self.selected)
        if self.selected_by_round is not None:
            self.selected_by_round = cache.checkpoint(self.selected_by_round)
        tables = [self.selected, self.user_state, self.selected_by_round]
        cache.retain(*[t for t in tables if t is not None])
        self.cache = cache

    def fill_report(self, report: PrivacyReport) -> None:
        """Write the algorithm, the released counts, the bound k and the notes into ``report``.

        The bound to use in the training's accounting is k = ``max_degree``
        (docs/design/bounding.md#accounting); the run itself spends no budget, so ``report`` gains
        no budget step.
        """
        s = self.summary
        report.algorithm = self.description
        report.extra["selected"] = s.get("selected")
        report.extra["rounds"] = s.get("rounds", 0)
        report.extra["max_degree"] = s.get("max_degree")
        report.extra["contribution_bounding"] = _without_seed(s)
        report.mechanism = {
            "privacy_unit": PRIVACY_UNIT,
            "contribution_bound_k": s.get("max_degree"),
            "dataset_size": s.get("selected"),
            "accounting": ACCOUNTING,
        }
        report.note(
            "Selection read record and user ids only, never record content (fixed-graph DP); "
            "it spends no privacy budget. Account for the training run with k = max_degree."
        )
        report.note(
            "CONFIDENTIAL: the selected ids, per-user degrees, round log and counts in this "
            "report reveal the hypergraph; store them with the same access controls as the raw "
            "graph (docs/design/bounding.md#confidential)."
        )
        report.note(
            "The order's hash is keyed by the release key (its fingerprint is in the randomness "
            "section): it only breaks ties in the preference order and is not sensitive under "
            "fixed-graph DP (docs/design/bounding.md#seed); the same key reproduces the selection."
        )
        if s.get("resumed_from_round") is not None:
            report.note(f"Resumed from the saved state after round {s['resumed_from_round']}.")

    def headline(self) -> str:
        """One line for the job's log: the algorithm; |S|, k and the number of rounds (they
        follow the bounded data, which is not released) only with unsafe debug logging on."""
        s = self.summary
        return (
            f"{private(s.get('selected'))} records selected ({s.get('algorithm')}), max degree "
            f"{private(s.get('max_degree'))}, {private(s.get('rounds', 0))} rounds"
        )


def _without_seed(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary for the report: the order's seed (derived from the key) left out."""
    out = {k: v for k, v in summary.items() if k != "seed"}
    if isinstance(out.get("order"), dict):
        out["order"] = {k: v for k, v in out["order"].items() if k != "seed"}
    return out


# SATURATED: d = cap; EXHAUSTED: d < cap and nothing eligible is left; OPEN: d < cap with
# eligible records left (only when the rounds stopped early with finish=none).
STATUSES = ("SATURATED", "EXHAUSTED", "OPEN")


def selected_records(
    chosen: DataFrame, records: DataFrame, *, with_multiplicity: bool
) -> DataFrame:
    """Map positions back to ids.

    Args:
        chosen: (rec, multiplicity) of selected records.
        records: (rec, record_id).
        with_multiplicity: keep the ``multiplicity`` column (duplicate algorithms).

    Returns:
        (record_id[, multiplicity]).
    """
    out = chosen.join(records, REC)
    # -> (rec, multiplicity, record_id)
    cols = [RECORD_ID, MULTIPLICITY] if with_multiplicity else [RECORD_ID]
    selected = out.select(*cols)
    # -> (record_id[, multiplicity])
    return selected


def user_state(
    inc: DataFrame, users: DataFrame, chosen: DataFrame, remaining: DataFrame | None = None
) -> DataFrame:
    """(user_id, cap, d, status) for every user of the incidences.

    Args:
        inc: (rec, user_id) of all records.
        users: (user_id, cap) of all users.
        chosen: (rec, multiplicity) of the selection.
        remaining: (rec, user_id) still eligible when the run stopped (finish=none), or None.
    """
    from pyspark.sql import functions as F

    deg = (
        inc.select(REC, USER_ID)
        .join(chosen, REC)
        .groupBy(USER_ID)
        .agg(F.sum(MULTIPLICITY).cast("long").alias(DEGREE))
    )
    # -> (user_id, d)
    out = (
        users.select(USER_ID, CAPACITY)
        .join(deg, USER_ID, "left")
        .withColumn(DEGREE, F.coalesce(F.col(DEGREE), F.lit(0).cast("long")))
    )
    # -> (user_id, cap, d)
    open_flag = F.lit(False)
    if remaining is not None:
        still = remaining.select(USER_ID).distinct().withColumn("_open", F.lit(True))
        out = out.join(still, USER_ID, "left")
        # -> (user_id, cap, d, _open)
        open_flag = F.coalesce(F.col("_open"), F.lit(False))
    status = (
        F.when(F.col(DEGREE) >= F.col(CAPACITY), F.lit("SATURATED"))
        .when(open_flag, F.lit("OPEN"))
        .otherwise(F.lit("EXHAUSTED"))
    )
    state = out.select(USER_ID, CAPACITY, DEGREE, status.alias(STATUS))
    # -> (user_id, cap, d, status)
    return state


def check_feasible(state: DataFrame) -> dict[str, Any]:
    """Degree summary of a user_state table; raises if any user exceeds its capacity.

    Returns:
        {"max_degree": k, "saturated": n, "exhausted": n, "open": n}.

    Raises:
        RuntimeError: some d(u) > cap(u) (a bug: every algorithm here is feasible by design).
    """
    from pyspark.sql import functions as F

    row = state.agg(
        F.max(DEGREE).alias("k"),
        F.sum((F.col(DEGREE) > F.col(CAPACITY)).cast("long")).alias("over"),
        *[F.sum((F.col(STATUS) == s).cast("long")).alias(s) for s in STATUSES],
    ).collect()[0]
    if row["over"]:
        raise RuntimeError(f"{row['over']} users exceed their capacity: refusing to write")
    return {
        "max_degree": int(row["k"] or 0),
        "saturated": int(row["SATURATED"] or 0),
        "exhausted": int(row["EXHAUSTED"] or 0),
        "open": int(row["OPEN"] or 0),
    }


def finish_outputs(
    prep: Prepared,
    chosen: DataFrame,
    remaining: DataFrame | None,
    *,
    duplicates: bool,
    totals: tuple[int, int],
    summary: dict[str, Any],
    timer: StageTimer,
    cache: CacheScope,
    selected: DataFrame | None = None,
) -> BoundingResult:
    """Degrees from the input and the selection, the feasibility check, the id mapping.

    Args:
        prep: the prepared tables (incidences, users, the rec → record_id mapping).
        chosen: (rec, multiplicity) of the selection.
        remaining: (rec, user_id) still eligible when the run stopped early, else ``None``.
        duplicates: keep the ``multiplicity`` column in the output.
        totals: (|S| with multiplicity, distinct records), known from the run's own counts.
        summary: the run's summary so far; the degree counts are added to it.
        timer: one stage, ``outputs``.
        cache: the run's scope; it keeps the per-user state (computed once here).
        selected: the selected record ids when the caller mapped them already
            ((record_id[, multiplicity]) of ``chosen``), else they are mapped here.

    Raises:
        RuntimeError: a user exceeds its capacity (see :func:`check_feasible`).
    """
    with timer.stage("outputs") as info:
        state = cache.checkpoint(user_state(prep.inc, prep.users, chosen, remaining))
        degrees = check_feasible(state)
        summary.update(selected=totals[0], distinct_selected=totals[1], **degrees)
        info.update(selected=totals[0], max_degree=degrees["max_degree"])
    if selected is None:
        selected = selected_records(chosen, prep.records, with_multiplicity=duplicates)
    return BoundingResult(selected, state, summary)
