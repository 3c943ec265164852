"""Person-level ε-DP distinct count (Knop & Steinke 2023; docs/design/counting.md).

Each person contributes a set of items; the release is a DP lower bound ν̂ on the number of
distinct items DC(D), with P[ν̂ ≤ DC(D)] ≥ 1 − β, under pure ε-DP when one person (with all
their items) is added or removed.

Pipeline (driver maths in numpy, data in Spark). Each method (``exact``, ``greedy``) is one entry
of :data:`spark_dp.distinct_count.registry.REGISTRY`: ``plan(params)``, then
``run(pairs, plan, randomness)``:

* :class:`DistinctCountParams` (:mod:`.params`): the public parameters, declared once;
* :func:`plan_release` (:mod:`.plan`): the data-free :class:`DistinctCountPlan`, ε split into
  the GEM choice of ℓ and the Laplace count, calibrated by :mod:`.calibration`;
* the contribution-bounded curve c(D; ℓ), ℓ = 1..ℓ_max, sensitivity ℓ each
  (:func:`contribution_curve` picks by method): :func:`exact_curve` (max-flow DC(D; ℓ),
  Algorithm 1: peeling, components, warm-started max-flow per component) or
  :func:`greedy_curve` (Algorithm 2, ≥ ½ of exact, one pass);
* :func:`release_curve` / :func:`dp_distinct_count`: GEM picks ℓ̂ at ε/2
  (:mod:`spark_dp.dp.gem`), then
  ν̂ = c(D; ℓ̂) − (2ℓ̂/ε)·ln(1/(2β)) + Lap(2ℓ̂/ε) at ε/2, returned as a :class:`DPResult`;
  the run wraps it in a :class:`DistinctCountResult`, which fills the privacy report;
* :mod:`.baselines`: the paper's comparison points (fixed ℓ, non-private best ℓ, sampling,
  R2T) — not DP where docs/design/counting.md#baselines says so.

Example::

    from spark_dp.distinct_count import DistinctCountParams, distinct_count
    from spark_dp.randomness import Randomness

    params = DistinctCountParams(epsilon=1.0, max_contributions=100)
    result = distinct_count(pairs, params, Randomness.create())   # validates, binds, releases
    print(result.release.ell, result.release.lower_bound)

    # or from a curve you computed (the key is bound to the curve's keyed digest):
    from spark_dp.distinct_count import dp_distinct_count, exact_curve

    curve = exact_curve(pairs, max_contributions=100).curve  # private: never print it
    result = dp_distinct_count(curve, epsilon=1.0, beta=0.05, randomness=Randomness.create())
    print(result.ell, result.lower_bound)

    # or as the job does it, through the registry:
    from spark_dp.distinct_count.registry import REGISTRY

    method = REGISTRY["exact"]
    plan = method.plan(DistinctCountParams(epsilon=1.0, max_contributions=100))
    run = method.run(pairs, plan, Randomness.create())     # DistinctCountResult (the release
                                                            # binds to the curve's digest)
    run.fill_report(report)                                 # a spark_dp.report.PrivacyReport
"""

from __future__ import annotations

from spark_dp.distinct_count.api import distinct_count
from spark_dp.distinct_count.dc_curve import CurveResult, exact_curve
from spark_dp.distinct_count.greedy_curve import greedy_curve, greedy_curve_arrays
from spark_dp.distinct_count.local_solver import exact_curve_local
from spark_dp.distinct_count.params import DistinctCountParams
from spark_dp.distinct_count.plan import DistinctCountPlan, plan_release
from spark_dp.distinct_count.registry import contribution_curve
from spark_dp.distinct_count.release import (
    DPResult,
    dp_distinct_count,
    release_curve,
    selection_probabilities,
    utility_scores,
)
from spark_dp.distinct_count.result import DistinctCountResult
from spark_dp.dp.gem import gem_probabilities, gem_scores, gem_select

__all__ = [
    "CurveResult",
    "DPResult",
    "DistinctCountParams",
    "DistinctCountPlan",
    "DistinctCountResult",
    "contribution_curve",
    "distinct_count",
    "dp_distinct_count",
    "exact_curve",
    "exact_curve_local",
    "gem_probabilities",
    "gem_scores",
    "gem_select",
    "greedy_curve",
    "greedy_curve_arrays",
    "plan_release",
    "release_curve",
    "selection_probabilities",
    "utility_scores",
]
