"""The distinct count's audit: GEM's choice, the noisy count, and the release as a whole.

The release (ℓ̂, ν̂) spends ε_select on GEM's choice of ℓ̂ and ε_count on ν̂ = q_ℓ̂ + X, X of
scale ℓ̂/ε_count (Knop & Steinke 2023, Alg. 1 lines 9–15, Lemma 3.2; docs/design/counting.md).
On D and D' = D + a person with ℓ_max items nobody else holds (c(D; ℓ) rises by ℓ, the
sensitivity of q_ℓ), ``runs`` releases per dataset are compared three ways, each at δ = 0:

* **the release** against the claimed ε: {ℓ̂ = ℓ (or any) and ν̂ ≥ c}, the event of largest
  plug-in bound under the claimed mechanism (:func:`~.placement.place_count_event`);
* **the count** against ε_count, given ℓ̂: among the runs that chose ℓ* (the ℓ̂ the claimed
  mechanism picks most often on D), {ν̂ ≥ c}. Given ℓ̂, ν̂ is a discrete Laplace of an integer
  query of sensitivity ℓ̂, so its tail ratio is exactly e^ε_count at every c past both
  centres: a wrong noise scale shows at its full size. Conditioning is valid: given the runs
  that chose ℓ*, their ν̂ are independent draws;
* **GEM** against ε_select: {ℓ̂ = ℓ} for every ℓ.

A wrong scale of the count (÷ 2, which the release-level event sees only as ε_count's half
of ε plus little of GEM's) fails the second comparison; GEM's sensitivities halved, the third
when its realised privacy loss on these datasets exceeds ε_select (tests/audit/test_power.py
gives its power).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from spark_dp.audit.events import Comparison, four_ways
from spark_dp.audit.placement import place_count_event, two_way_plugin
from spark_dp.audit.scenario import distinct_count_datasets
from spark_dp.audit.statistics import Confidence, EventCounts
from spark_dp.audit.targets import CountTarget
from spark_dp.randomness import Randomness

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["COUNT_PLACEMENT_COMPARISONS", "count_comparisons", "place_conditional_cut"]

COUNT_PLACEMENT_COMPARISONS = 24
"""The number of comparisons the placement of the events assumes (any public value is valid)."""


def place_conditional_cut(
    target: CountTarget, curve_d: Any, curve_n: Any, runs: int
) -> tuple[int, int]:
    """(ℓ*, c): the ℓ̂ the claimed GEM picks most often on D, and the cut c of {ν̂ ≥ c} with
    the largest plug-in bound at ε_count over the runs expected to pick ℓ*."""
    plan = target.plan
    alpha = Confidence(0.001, COUNT_PLACEMENT_COMPARISONS).per_bound
    q_d, q_n = (np.asarray(plan.scores(c), dtype=float) for c in (curve_d, curve_n))
    chosen = plan.select.probabilities(q_d)
    ell = int(np.argmax(chosen)) + 1
    n = max(10, int(runs * chosen[ell - 1]))
    reach = 12.0 * plan.count.scale(ell)
    cuts = np.arange(math.floor(q_d[ell - 1] - reach), math.ceil(q_n[ell - 1] + reach) + 1)
    p = plan.count.noise_at_least(cuts - q_n[ell - 1], ell)
    q = plan.count.noise_at_least(cuts - q_d[ell - 1], ell)
    scores = [two_way_plugin(float(a), float(b), 0.0, n, alpha) for a, b in zip(p, q, strict=True)]
    return ell, int(cuts[int(np.argmax(scores))])


def count_comparisons(
    target: CountTarget,
    runs: int,
    randomness: Randomness,
    confidence: Confidence,
    spark: SparkSession,
) -> tuple[list[Comparison], list[dict[str, Any]], Confidence]:
    """The comparisons of the module docstring, at α split over their number."""
    plan = target.plan
    base, neighbour = distinct_count_datasets(plan.max_contributions)
    curve_d, curve_n = target.curve(base, spark), target.curve(neighbour, spark)
    alpha0 = Confidence(confidence.alpha, COUNT_PLACEMENT_COMPARISONS).per_bound
    event = place_count_event(plan, curve_d, curve_n, runs, alpha0)
    ell_star, cut = place_conditional_cut(target, curve_d, curve_n, runs)
    releases = {}
    for label, curve in (("D", curve_d), ("D'", curve_n)):
        stream = randomness.child("audit", label)
        out = [target.release(curve, stream.child("run", i)) for i in range(runs)]
        releases[label] = (
            np.array([r.ell for r in out]),
            np.array([float(r.lower_bound) for r in out]),
        )
    (ell_d, nu_d), (ell_n, nu_n) = releases["D"], releases["D'"]
    whole = [
        ("release", counts, target.claim.epsilon)
        for counts in four_ways(
            event.describe(),
            int(sum(event.holds(int(e), v) for e, v in zip(ell_n, nu_n, strict=True))),
            runs,
            int(sum(event.holds(int(e), v) for e, v in zip(ell_d, nu_d, strict=True))),
            runs,
        )
    ]
    count_eps, select_eps = plan.count.epsilon, plan.select.epsilon
    on_d, on_n = ell_d == ell_star, ell_n == ell_star
    conditional = []
    if on_d.sum() and on_n.sum():
        conditional = [
            ("count given ℓ̂", counts, count_eps)
            for counts in four_ways(
                f"ν̂ ≥ {cut} given ℓ̂ = {ell_star}",
                int((nu_n[on_n] >= cut).sum()),
                int(on_n.sum()),
                int((nu_d[on_d] >= cut).sum()),
                int(on_d.sum()),
            )
        ]
    gem = [
        ("GEM", counts, select_eps)
        for ell in range(1, plan.max_contributions + 1)
        for counts in four_ways(
            f"ℓ̂ = {ell}", int((ell_n == ell).sum()), runs, int((ell_d == ell).sum()), runs
        )
    ]
    chosen: list[tuple[str, EventCounts, float]] = [*whole, *conditional, *gem]
    confidence = confidence.over(len(chosen))
    comparisons = [
        Comparison(name, counts, eps, 0.0, 0.0, confidence.per_bound, False, target.claim.epsilon)
        for name, counts, eps in chosen
    ]
    probes = [
        {
            "name": "novel person",
            "targets": "sensitivity ℓ of c(D; ℓ): a person with ℓ_max items nobody else holds",
            "persons_in_D": len(base),
            "canary_items": plan.max_contributions,
            "runs_per_dataset": runs,
            "release_event": event.describe(),
            "count_event": f"ν̂ ≥ {cut} given ℓ̂ = {ell_star}",
        }
    ]
    return comparisons, probes, confidence
