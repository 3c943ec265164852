"""The audit's target for the private choice of Δ0 (``--max-contributions auto``).

The choice reads the whole dataset (the scores sum over every item), so copies of D in one run
would share one choice: instead, as for the distinct count, the scores of D and of D' are
computed once each by the release's own Spark pass, and the choice is drawn ``runs`` times per
dataset on the driver, each from its own key stream (docs/design/tuning.md#audit).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from spark_dp.audit.statistics import Claim
from spark_dp.partition_selection.columns import ITEM, USER_ID
from spark_dp.partition_selection.params import PartitionSelectionParams
from spark_dp.partition_selection.tuning_calibration import DeltaChoice

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from spark_dp.randomness import DriverNoise, Randomness

__all__ = ["ChoiceTarget", "Choose", "gem_choice"]

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
        choice: the plan's GEM choice (ε_t, the candidates' score calibrations).
        choose: the choice from the exact totals (GEM; a broken variant swaps it).
        change: for a broken variant, the one thing it changes.
    """

    name: str
    params: PartitionSelectionParams
    choice: DeltaChoice
    choose: Choose = gem_choice
    change: str | None = None

    @property
    def claim(self) -> Claim:
        """Pure ε_t-DP: the choice spends the tuning share of ε only, and no δ."""
        return Claim(self.choice.epsilon, 0.0, None, 0.0)

    @property
    def parameters(self) -> dict[str, Any]:
        """Public parameters for the report."""
        p = self.params
        return {
            "epsilon": p.epsilon,
            "delta": p.delta,
            "tuning_share": p.tuning_share,
            "tuning_candidates": list(p.tuning_candidates),
        }

    def scores(
        self, sets: Mapping[str, list[str]], randomness: Randomness, spark: SparkSession
    ) -> list[int]:
        """The exact score totals of every candidate, by the release's own pass."""
        from spark_dp.partition_selection.capping import ranked_cap
        from spark_dp.partition_selection.tuning import candidate_weights, score_totals

        rows = [(u, i) for u, items in sets.items() for i in items]
        pairs = spark.createDataFrame(rows, f"{USER_ID} string, {ITEM} string")
        candidates = self.choice.candidates
        ranked = ranked_cap(pairs, max(candidates), randomness.child("capping", 1))
        return score_totals(candidate_weights(ranked, candidates), self.choice.scores)
