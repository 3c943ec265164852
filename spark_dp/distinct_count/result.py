"""The result of a distinct-count run and what it may say: the privacy report, the debug file.

:class:`DistinctCountResult` is what ``REGISTRY[method].run`` returns. It fills a
:class:`~spark_dp.report.PrivacyReport` itself (the :class:`~spark_dp.report.Release`
protocol): the two budget steps from the plan's calibration objects, the mechanism description
and the released values, never the curve or any other statistic of the data. The curve is kept
only for :meth:`DistinctCountResult.debug_payload`, the NON-PRIVATE debug file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spark_dp.distinct_count.plan import DistinctCountPlan
from spark_dp.distinct_count.release import DPResult
from spark_dp.report import PrivacyReport, Step

__all__ = ["DistinctCountResult"]


@dataclass(frozen=True)
class DistinctCountResult:
    """One release and the plan that calibrated it.

    Attributes:
        plan: the data-free calibration (ε split, GEM, count noise).
        release: the released values (ε-DP).
        count_function: public description of the curve c(D; ℓ) the method computed.
        curve: c(D; ℓ), ℓ = 1..ℓ_max. PRIVATE: only :meth:`debug_payload` reads it; it is
            left out of ``repr`` and of comparisons.
        components: the connected-components method the run used for its core (``graphframes``
            or ``dataframe``, resolved from the session, never from the data), or ``None`` for
            a method that splits nothing (greedy).
    """

    plan: DistinctCountPlan
    release: DPResult
    count_function: str
    curve: NDArray[np.int64] = field(repr=False, compare=False)
    components: str | None = None

    @property
    def steps(self) -> tuple[Step, Step]:
        """The plan's two steps, the count's calibration fixed at the released ℓ̂."""
        select, count = self.plan.steps
        return select, Step(count.label, self.plan.count.at(self.release.ell))

    def mechanism(self) -> dict[str, Any]:
        """Public description of the release for the report (no data values).

        ``components`` is the method that ran, not the flag: a core of at least
        ``components_min_rows`` rows is split with it. Whether this core was that large depends
        on the data, so the report does not say it (a released bit about the input's size)."""
        out = {
            "count_function": self.count_function,
            **self.plan.to_report(),
            "lower_bound_shift": self.release.shift,
            "noise_scale": self.release.noise_scale,
        }
        if self.components is not None:
            out["components"] = self.components
        return out

    def released_values(self) -> dict[str, Any]:
        """Everything the job releases: the DP values and public parameters, nothing else."""
        r = self.release
        return {
            "estimate": r.estimate,
            "ell": r.ell,
            "lower_bound": r.lower_bound,
            "lower_bound_clamped": r.lower_bound_clamped,
            "epsilon": r.epsilon,
            "beta": r.beta,
            "max_contributions": r.max_contributions,
            "method": r.method,
        }

    def fill_report(self, report: PrivacyReport) -> None:
        """Book the two steps, describe the mechanism and add the released values."""
        for step in self.steps:
            report.spend_step(step)
        report.mechanism = self.mechanism()
        report.extra.update(self.released_values())
        report.note(
            "lower_bound is ν̂ (P[ν̂ ≤ true count] ≥ 1 − β); lower_bound_clamped = max(0, ν̂); "
            f"estimate = ν̂ + shift is the un-shifted noisy count c(D; ℓ̂) + "
            f"{self.plan.count.mechanism} noise, not a lower bound."
        )

    def debug_payload(self, true_count: int) -> dict[str, Any]:
        """The NON-PRIVATE debug record: curve, true count, scores and GEM probabilities."""
        q = self.plan.scores(self.curve)
        return {
            "NONPRIVATE": True,
            "warning": "NON-PRIVATE debug values computed from the raw data; do not publish",
            "method": self.release.method,
            "true_count": int(true_count),
            "curve": [int(v) for v in self.curve],
            "scores": q.tolist(),
            "argmax_score_ell": int(np.argmax(q)) + 1,
            "selection_probabilities": self.plan.select.probabilities(q).tolist(),
            "release": self.release.to_dict(),
        }
