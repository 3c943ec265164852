"""What a calibration states about itself: the one interface its readers use.

A calibration is the data-free object that spends the budget of one step (a partition-selection
round, the distinct count's GEM choice or its noisy count). It is built from public parameters
before any data is read and is the only place its constants are written down. The privacy
report (:mod:`spark_dp.report`), the budget accountant (:mod:`spark_dp.dp.accounting`) and
the privacy audit (:mod:`spark_dp.audit`) read it through these protocols only: none of them
asks which class it is or parses its report.

* :class:`Calibration`, every budget-spending step: its (ε, δ) under basic composition, the
  share ``delta_noise`` of δ that its noise spends at that ε, the event :meth:`dp_event` that
  describes that noise to Google's dp-accounting library, and :meth:`to_report`.
* :class:`RoundCalibration`, a partition-selection round (noise on each item's weight or user
  count, then a threshold): the δ share of the novel-item threshold, the per-user bound the
  threshold is calibrated for, and the probability that an item of a given weight is released
  (the model the audit tests the round against).

The events (``dp_accounting.DpEvent``; each must be (ε, delta_noise)-DP by itself, which the
accountant checks):

* ``GaussianDpEvent(σ/Δ2)``: N(0, σ²) noise on a query of ℓ2 sensitivity Δ2;
* ``LaplaceDpEvent(b/Δ1)``: Laplace(b) noise on a query of ℓ1 sensitivity Δ1;
* :func:`pure_dp_event` (ε): any ε-DP mechanism, described by the pair that dominates them all;
* :func:`basic_only_event`: no accountant composes it, and the step counts by basic
  composition with the (ε, δ) it states.

dp-accounting is imported when an event is built, never when a calibration is: its import
takes most of a second, and executors never need it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from dp_accounting import DpEvent

__all__ = [
    "Calibration",
    "PureDp",
    "RoundCalibration",
    "basic_only_event",
    "gaussian_event",
    "laplace_event",
    "pure_dp_event",
]


class Calibration(Protocol):
    """A calibrated budget-spending step.

    ``to_report()`` holds the mechanism's name, its sensitivity and its constants (σ, ρ, scale,
    thresholds), all public.
    """

    @property
    def epsilon(self) -> float:
        """ε of the step (basic composition adds it to the others')."""
        ...

    @property
    def delta(self) -> float:
        """δ of the step: its noise's share plus any threshold's share."""
        ...

    @property
    def delta_noise(self) -> float:
        """The share of δ the noise spends at ε on what other users also hold (0 for pure-ε
        noise); the event :meth:`dp_event` describes that noise."""
        ...

    def dp_event(self) -> DpEvent:
        """The dp-accounting event of the step's noise (see the module docstring)."""
        ...

    def to_report(self) -> dict[str, Any]:
        """Public description for the privacy report."""
        ...


class RoundCalibration(Calibration, Protocol):
    """A partition-selection round: noise on every item's weight (or user count), then a
    threshold that an item of a user nobody else has crosses with probability at most
    ``delta_threshold`` (Chen et al. 2025, proof of Thm. 3.3; Gopi et al. 2020)."""

    @property
    def delta_threshold(self) -> float:
        """δ share of the novel-item threshold: a bound on the probability that some item of
        a new user that nobody else holds is released."""
        ...

    @property
    def max_contributions(self) -> int:
        """The per-user bound Δ0 (k of count thresholding) the threshold is calibrated for."""
        ...

    @property
    def argmax_t(self) -> int | None:
        """The number of novel items t at which the threshold attains its maximum, when the
        threshold is a maximum over t (``None`` otherwise)."""
        ...

    def release_probability(self, weight: float) -> float:
        """P[an item of weight (or user count) ``weight`` is released] in this round."""
        ...


class PureDp:
    """What every pure ε-DP step states alike (GEM's choices): δ = δ_noise = 0 and the event
    of :func:`pure_dp_event` at its ``epsilon``. Mix it into a calibration dataclass that has
    an ``epsilon`` field."""

    epsilon: float

    @property
    def delta(self) -> float:
        """0: the step is pure ε-DP."""
        return 0.0

    @property
    def delta_noise(self) -> float:
        """0: pure ε-DP."""
        return 0.0

    def dp_event(self) -> DpEvent:
        """The event that dominates every ε-DP mechanism (:func:`pure_dp_event`)."""
        return pure_dp_event(self.epsilon)


def gaussian_event(sigma: float, l2_sensitivity: float) -> DpEvent:
    """N(0, σ²) noise on a query of ℓ2 sensitivity Δ2: ``GaussianDpEvent(σ/Δ2)``."""
    from dp_accounting import dp_event

    return dp_event.GaussianDpEvent(noise_multiplier=float(sigma) / float(l2_sensitivity))


def laplace_event(scale: float, l1_sensitivity: float) -> DpEvent:
    """Laplace(b) noise on a query of ℓ1 sensitivity Δ1: ``LaplaceDpEvent(b/Δ1)``."""
    from dp_accounting import dp_event

    return dp_event.LaplaceDpEvent(noise_multiplier=float(scale) / float(l1_sensitivity))


def pure_dp_event(epsilon: float) -> DpEvent:
    """The event of any ε-DP mechanism: dp-accounting's discrete Laplace with parameter ε and
    sensitivity 1.

    Its privacy loss is +ε with probability e^ε/(1 + e^ε) and −ε otherwise (X ~ DLap(ε) against
    X + 1: P[X ≤ 0] = 1/(1 + e^−ε)), the randomized-response pair. Every ε-DP mechanism is a
    post-processing of that pair on each pair of neighbours (Kairouz, Oh & Viswanath 2015,
    Thm. 2.1, with δ = 0), so the pair dominates it, and adaptively composed mechanisms are
    dominated by the composition of their dominating pairs (Dong, Roth & Su 2022, Thm. 4): a
    tight accountant may compose this event for any ε-DP step, whatever its parameters depend
    on earlier in the same release (the discrete Laplace count at sensitivity ℓ̂ chosen by
    GEM).
    """
    from dp_accounting import dp_event

    return dp_event.DiscreteLaplaceDpEvent(noise_parameter=float(epsilon), sensitivity=1)


def basic_only_event() -> DpEvent:
    """The event of a step that only basic composition accounts for (dp-accounting's
    ``UnsupportedDpEvent``: every accountant refuses it)."""
    from dp_accounting import dp_event

    return dp_event.UnsupportedDpEvent()
