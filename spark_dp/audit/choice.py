"""The audit of the private choice of Δ0 (``--max-contributions auto``): target and comparisons.

The choice reads the whole dataset (the scores sum over every item), so copies of D in one run
would share one choice: instead, as for the distinct count, the scores of D and of D' are
computed once each by the release's own Spark pass, and the choice is drawn ``runs`` times per
dataset on the driver, each from its own key stream (docs/design/tuning.md#audit).

D holds users of degree 1 only and D' = D + a canary of maximal degree holding the largest
candidate's items (:func:`~.scenario.choice_datasets`); the event is {Δ0 = top chosen}, compared
four ways (:func:`~.events.four_ways`) against the claimed ε of the choice (ε_t = the tuning
share of the parameters' ε) at δ = 0, like every event of the audit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from spark_dp.audit.claims import Claim, plan_problems, step_problems
from spark_dp.audit.events import Comparison, four_ways
from spark_dp.audit.scenario import choice_datasets
from spark_dp.partition_selection.auto.calibration import DeltaChoice
from spark_dp.partition_selection.auto.plan import AutoPlan
from spark_dp.partition_selection.auto.scores import CHOICE_LABEL
from spark_dp.partition_selection.columns import ITEM, USER_ID
from spark_dp.partition_selection.params import PartitionSelectionParams
from spark_dp.report import Step

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from spark_dp.audit.statistics import Confidence
    from spark_dp.randomness import DriverNoise, Randomness

__all__ = ["ChoiceTarget", "Choose", "choice_comparisons", "gem_choice"]

Choose = Callable[[DeltaChoice, list[int], "DriverNoise"], int]


def gem_choice(choice: DeltaChoice, totals: list[int], noise: DriverNoise) -> int:
    """The release's own choice: GEM on the exact scores (:meth:`DeltaChoice.choose`)."""
    return choice.choose(totals, noise)


@dataclass(frozen=True)
class ChoiceTarget:
    """The choice of Δ0: the scores by the release's Spark pass (once per dataset), then the
    choice, repeated on the driver.

    Attributes:
        name: the audited name.
        params: the public parameters (``max_contributions='auto'``).
        plan: the release's data-free plan (its GEM choice and a plan per candidate).
        choose: the choice from the exact totals (GEM; a broken variant swaps it).
        change: for a broken variant, the one thing it changes.
    """

    name: str
    params: PartitionSelectionParams
    plan: AutoPlan
    choose: Choose = gem_choice
    change: str | None = None

    @property
    def choice(self) -> DeltaChoice:
        """The plan's GEM choice (ε_t, the candidates' score calibrations)."""
        return self.plan.choice

    @property
    def claim(self) -> Claim:
        """Pure ε_t-DP, ε_t the parameters' tuning share of ε: the choice spends no δ."""
        return Claim(self.params.tuning_share * self.params.epsilon, 0.0, None, 0.0)

    def claim_problems(self) -> list[str]:
        """The choice's stated ε against ε_t, and the whole plan's against (ε, δ)."""
        choice = (Step(CHOICE_LABEL, self.choice),)
        problems = step_problems(choice, self.claim.epsilon, 0.0)
        return problems + plan_problems(self.plan, self.params.epsilon, self.params.delta)

    @property
    def parameters(self) -> dict[str, Any]:
        """Public parameters for the report."""
        p = self.params
        return {
            "epsilon": p.epsilon,
            "delta": p.delta,
            "max_contributions": "auto",
            "tuning_share": p.tuning_share,
            "tuning_candidates": list(p.tuning_candidates),
        }

    def scores(
        self, sets: Mapping[str, list[str]], randomness: Randomness, spark: SparkSession
    ) -> list[int]:
        """The exact score totals of every candidate, by the release's own pass."""
        from spark_dp.partition_selection.auto.scores import candidate_weights, score_totals
        from spark_dp.partition_selection.capping import ranked_cap

        rows = [(u, i) for u, items in sets.items() for i in items]
        pairs = spark.createDataFrame(rows, f"{USER_ID} string, {ITEM} string")
        candidates = self.choice.candidates
        ranked = ranked_cap(pairs, max(candidates), randomness.child("capping", 1))
        return score_totals(candidate_weights(ranked, candidates), self.choice.scores)


def choice_comparisons(
    target: ChoiceTarget,
    runs: int,
    randomness: Randomness,
    confidence: Confidence,
    spark: SparkSession,
) -> tuple[list[Comparison], list[dict[str, Any]], Confidence]:
    """The choice on D and D' = D + a canary of maximal degree: the scores once per dataset
    (the release's Spark pass, one ranking key), the choice ``runs`` times each; the event
    {Δ0 = top chosen} four ways at the claimed ε_t and δ = 0, at α split over the four."""
    choice = target.choice
    low, top = choice.scores[0], choice.scores[-1]
    base, neighbour = choice_datasets(low.sigma, low.rho, top.rho, top.max_contributions)
    ranking = randomness.child("audit", "ranking")
    hits = {}
    for label, sets in (("D", base), ("D'", neighbour)):
        totals = target.scores(sets, ranking, spark)
        stream = randomness.child("audit", label)
        draws = (
            target.choose(choice, totals, stream.child("run", i).driver()) for i in range(runs)
        )
        hits[label] = sum(c == top.max_contributions for c in draws)
    event = f"Δ0 = {top.max_contributions} chosen"
    counts = four_ways(event, hits["D'"], runs, hits["D"], runs)
    confidence = confidence.over(len(counts))
    claim = target.claim
    name = "canary of maximal degree"
    comparisons = [
        Comparison(name, c, claim.epsilon, 0.0, 0.0, confidence.per_bound) for c in counts
    ]
    probes = [
        {
            "name": name,
            "targets": "the sensitivity of every candidate's score: one user holding the "
            "largest candidate's number of items, each held by users of degree 1 at the "
            "weight where the canary moves the score most",
            "users_in_D": len(base),
            "canary_items": top.max_contributions,
            "runs_per_dataset": runs,
            "event": event,
        }
    ]
    return comparisons, probes, confidence
