"""How much of the release's ε the selection keeps after the private choice of Δ0, driver only.

docs/design/tuning.md#composition. ``--max-contributions auto`` spends ε_t = share·ε on GEM's
choice. Basic composition leaves the selection ε − ε_t. The choice and the selection's noise
compose much better than that: the choice is ε_t-DP, dominated by the randomized-response pair
(:func:`~spark_dp.dp.protocol.pure_dp_event`), and the rounds' noise is Gaussian (or
Laplace) with a privacy loss that is nearly symmetric around a small mean, so the privacy loss
distribution (PLD) of the pair and the rounds puts far less than ε_t of extra loss on the
tail that δ pays for. At ε = 1, δ = 10⁻⁵ and a Basic Gaussian round, ε_t = 0.05 costs the
selection 0.019 of ε instead of 0.05.

:func:`selection_budget` finds the largest ε_s ∈ [ε − ε_t, ε] such that the release, the choice
at ε_t followed by the algorithm planned at (ε_s, δ), is (ε, δ)-DP by the budget store's own
tight bound (:func:`spark_dp.dp.composition.tight_delta` with the PLD accountant: the
composed events, the thresholds' δ by basic composition, the floating-point samplers'
divergence), by bisection. Nothing is data-dependent: (ε, δ, ε_t, the algorithm's parameters).

When it proves nothing better than basic composition (an algorithm with a step no accountant
composes, a pure-ε Laplace algorithm whose noise may spend no δ), the selection runs at
ε − ε_t and the release's account is the sum of its steps, as before.

*Proof.* The certificate is the store's bound applied to this one release: each step's event
dominates its noise given any history (its (ε, δ_noise) claim is checked, and the rounds'
event is the same at every candidate, :class:`~.plan.calibration.AnyCandidate`), the choice's
output only selects which thresholds the rounds use, and the thresholds' δ is added by basic
composition (:mod:`spark_dp.dp.composition`, proof steps (1)–(4); Dong, Roth & Su 2022,
Thm. 4 for the adaptive composition of dominating pairs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from spark_dp.dp.calibration import Budget
from spark_dp.report import Step

if TYPE_CHECKING:
    from spark_dp.dp.protocol import Calibration
    from spark_dp.partition_selection.params import PartitionSelectionParams

__all__ = ["ACCOUNTANT", "TightComposition", "certified_delta", "selection_budget"]

ACCOUNTANT = "pld"
"""The accountant of the certificate: dp-accounting's PLD accountant, pessimistic
discretization (an upper bound on δ)."""

BISECTION_STEPS = 12
"""Bisection steps on [ε − ε_t, ε]: ε_s is within ε_t/4096 of the largest certified value."""


@dataclass(frozen=True)
class TightComposition:
    """The (ε, δ) of an auto release proven by the PLD accountant over all its steps.

    Attributes:
        epsilon: the release's ε (the parameters').
        delta: the release's δ.
        choice_epsilon: ε_t of the choice.
        selection_epsilon: ε_s, the budget the algorithm is planned at (≥ ε − ε_t).
        certified_delta: the δ the accountant gives for the steps at ε (≤ ``delta``).
    """

    epsilon: float
    delta: float
    choice_epsilon: float
    selection_epsilon: float
    certified_delta: float

    def to_report(self) -> dict[str, Any]:
        """Public description for the privacy report."""
        return {
            "composition": "tight: the choice and the rounds composed by the PLD accountant "
            "(dp-accounting, pessimistic), the thresholds' δ added (docs/design/tuning.md"
            "#composition)",
            "epsilon": self.epsilon,
            "delta": self.delta,
            "choice_epsilon": self.choice_epsilon,
            "selection_epsilon": self.selection_epsilon,
            "certified_delta": self.certified_delta,
            "basic_sum_epsilon": self.choice_epsilon + self.selection_epsilon,
        }


def certified_delta(steps: Sequence[Step[Calibration]], epsilon: float, delta: float) -> float:
    """The δ the PLD bound gives at ``epsilon`` for one release made of ``steps`` (``inf`` when
    a step is not composable: its whole release is then left to basic composition).

    Raises:
        ParameterError: a step whose event does not give the (ε, δ_noise) it claims.
    """
    from spark_dp.dp.composition import Charge, noise_steps, tight_delta

    noise = noise_steps(steps)
    if len(noise) != len(steps):
        return float("inf")
    return tight_delta([Charge(epsilon, delta, noise)], epsilon, ACCOUNTANT)


def selection_budget(
    params: PartitionSelectionParams,
    planner: Callable[[PartitionSelectionParams], Any],
) -> tuple[Budget, TightComposition | None]:
    """(ε_s, δ) for the algorithm after a choice at ε_t = share·ε, and the certificate.

    Bisection on the algorithm planned at the first candidate: every candidate's rounds have
    the same events (the caller certifies the whole plan again, and falls back to basic
    composition if that fails). Cached: the same public parameters give the same budget.

    Args:
        params: checked parameters with ``max_contributions='auto'``.
        planner: the algorithm's plan function (a module-level function).

    Returns:
        the selection's budget, and the certificate, or ``None`` when the PLD bound does not
        beat basic composition (the selection then gets ε − ε_t).
    """
    return _selection_budget(params, planner)


@lru_cache(maxsize=256)
def _selection_budget(
    params: PartitionSelectionParams,
    planner: Callable[[PartitionSelectionParams], Any],
) -> tuple[Budget, TightComposition | None]:
    from spark_dp.partition_selection.auto.calibration import DeltaChoice

    epsilon, delta = params.epsilon, params.delta
    epsilon_choice = epsilon * params.tuning_share
    choice = Step("private choice of Δ0", DeltaChoice(epsilon=epsilon_choice, scores=()))
    first = params.tuning_candidates[0]

    def certify(selection_epsilon: float) -> float:
        plan = planner(replace(params, epsilon=selection_epsilon, max_contributions=first))
        return certified_delta((choice, *plan.steps), epsilon, delta)

    low, high = epsilon - epsilon_choice, epsilon
    found = certify(low)
    if found > delta:
        return Budget(low, delta), None
    at_high = certify(high)
    if at_high <= delta:
        low, found = high, at_high
    else:
        for _ in range(BISECTION_STEPS):
            middle = (low + high) / 2.0
            at_middle = certify(middle)
            if at_middle <= delta:
                low, found = middle, at_middle
            else:
                high = middle
    return Budget(low, delta), TightComposition(epsilon, delta, epsilon_choice, low, found)
