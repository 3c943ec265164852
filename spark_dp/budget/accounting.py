"""Composition of the releases charged to one dataset: basic, or tight with dp-accounting.

**Basic composition** (the default, valid for any mix of mechanisms): k releases that are
(ε_i, δ_i)-DP together are (Σ ε_i, Σ δ_i)-DP (Dwork & Roth 2014, Thm. 3.16). A release states
its (ε, δ) as the sum over its steps, or as a tight certificate of them all below that sum
(``--max-contributions auto``, :class:`~spark_dp.noise_composition.Charge`).

**Tight accounting** (``pld`` or ``rdp``, chosen per store): the noise events of every release
composed with Google's dp-accounting, the rest added by basic composition
(:mod:`spark_dp.noise_composition`, where the proof and its caveats are). A set of releases
fits a cap (ε_cap, δ_cap) when either bound shows it (:func:`fits_cap`).
"""

from __future__ import annotations

from collections.abc import Iterable

from spark_dp.errors import ConfigError
from spark_dp.noise_composition import (
    REL_TOL,
    Charge,
    NoiseStep,
    composed_multiplier,
    noise_steps,
    tight_delta,
    tight_epsilon,
    tight_profile,
)

__all__ = [
    "ACCOUNTANTS",
    "Charge",
    "NoiseStep",
    "basic_totals",
    "check_accountant",
    "composed_multiplier",
    "fits_cap",
    "noise_steps",
    "tight_delta",
    "tight_epsilon",
    "tight_profile",
]

ACCOUNTANTS = ("basic", "pld", "rdp")
"""Accountants a store can use: basic composition, or basic plus PLD or RDP for the noise."""


def check_accountant(name: str) -> str:
    """``name`` if it is an accountant (dp-accounting, which ``pld``/``rdp`` use, is a
    dependency of spark_dp).

    Raises:
        ConfigError: unknown accountant.
    """
    if name not in ACCOUNTANTS:
        raise ConfigError(f"accountant must be one of {', '.join(ACCOUNTANTS)}, got {name!r}")
    return name


def basic_totals(charges: Iterable[Charge]) -> tuple[float, float]:
    """(Σ ε, Σ δ) of the charges (basic composition)."""
    charges = list(charges)
    return sum((c.epsilon for c in charges), 0.0), sum((c.delta for c in charges), 0.0)


def fits_cap(
    charges: Iterable[Charge], cap_epsilon: float, cap_delta: float, accountant: str
) -> bool:
    """Whether the charges' composition is (cap_epsilon, cap_delta)-DP: by basic composition,
    or (``pld``/``rdp``) by the tight bound at ε = cap_epsilon; either bound is valid, so
    either suffices."""
    charges = list(charges)
    eps, delta = basic_totals(charges)
    if eps <= cap_epsilon * (1 + REL_TOL) and delta <= cap_delta * (1 + REL_TOL):
        return True
    if accountant == "basic" or not any(c.noise for c in charges):
        return False
    return tight_delta(charges, cap_epsilon, accountant) <= cap_delta
