"""Composition of the releases charged to one dataset: basic, or the zCDP privacy filter.

Both are **privacy filters**: their cap holds even when each release's parameters are chosen
from the outputs of earlier ones (the documented workflow: ``spark-dp preview``, then a release
with what it recommends; docs/design/adaptive-composition.md).

**Basic composition** (the default, valid for any mix of mechanisms): releases that are
(ε_i, δ_i)-DP are (Σ ε_i, Σ δ_i)-DP together (Dwork & Roth 2014, Thm. 3.16), also when the
(ε_i, δ_i) are chosen adaptively and the sums are kept within the cap (Rogers, Roth, Ullman &
Vadhan 2016). A release states its (ε, δ) as the sum over its steps, or as a tight certificate
of them all below that sum (``--max-contributions auto``: PLD inside one release, whose
parameters are fixed before it runs; :class:`~spark_dp.dp.composition.Charge`).

**zcdp** (chosen per store): the approximate-zCDP filter of :mod:`.filters`: each release's
noise as zero-concentrated DP (ρ), its other δ as δ; a cap with δ = 0 uses basic composition.

``pld`` and ``rdp``, the tight accountants of earlier versions, composed the releases as if
their parameters had been fixed in advance, which the workflow above does not give: a store set
to either is moved to ``zcdp`` when it is opened (:data:`LEGACY_ACCOUNTANTS`), and choosing
them is refused with a one-line instruction. PLD stays where it is valid: inside one release.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from spark_dp.dp.composition import (
    REL_TOL,
    Charge,
    NoiseStep,
    composed_multiplier,
    noise_steps,
    tight_delta,
    tight_epsilon,
    tight_profile,
)
from spark_dp.dp.filters import ZcdpFilter, filter_epsilon
from spark_dp.errors import ConfigError

__all__ = [
    "ACCOUNTANTS",
    "LEGACY_ACCOUNTANTS",
    "Charge",
    "NoiseStep",
    "basic_totals",
    "certified_epsilon",
    "check_accountant",
    "composed_multiplier",
    "fits_cap",
    "fmt",
    "noise_steps",
    "refusal",
    "tight_delta",
    "tight_epsilon",
    "tight_profile",
]

ACCOUNTANTS = ("basic", "zcdp")
"""Accountants a store can use: basic composition, or the zCDP filter (both privacy filters)."""

LEGACY_ACCOUNTANTS = ("pld", "rdp")
"""Accountants of earlier versions, not valid across adaptively chosen releases: a store set to
one of them is moved to ``zcdp`` (which never certifies less than they spent: it re-counts every
release)."""


def check_accountant(name: str) -> str:
    """``name`` if a store may use it.

    Raises:
        ConfigError: a legacy accountant (one line: why, and what to use) or an unknown one.
    """
    if name in LEGACY_ACCOUNTANTS:
        raise ConfigError(
            f"accountant {name} composes releases as if each one's parameters were fixed before "
            "any release ran, which choosing a release from a preview does not give; use zcdp "
            "(a privacy filter valid for such choices) or basic (docs/privacy/budget.md)"
        )
    if name not in ACCOUNTANTS:
        raise ConfigError(f"accountant must be one of {', '.join(ACCOUNTANTS)}, got {name!r}")
    return name


def basic_totals(charges: Iterable[Charge]) -> tuple[float, float]:
    """(Σ ε, Σ δ) of the charges (basic composition)."""
    charges = list(charges)
    return (
        math.fsum(c.epsilon for c in charges),
        math.fsum(c.delta for c in charges),
    )


def _filtered(cap_delta: float, accountant: str) -> bool:
    """Whether the zCDP filter applies (a cap with δ = 0 leaves it no conversion δ)."""
    return accountant == "zcdp" and cap_delta > 0


def fits_cap(
    charges: Iterable[Charge], cap_epsilon: float, cap_delta: float, accountant: str
) -> bool:
    """Whether the charges fit the cap under the store's filter: basic composition, or
    (``zcdp``, δ > 0) the zCDP filter of the cap. One filter, fixed by the cap and the store
    before any release: never whichever of two happens to admit (that would not be a filter)."""
    charges = list(charges)
    if _filtered(cap_delta, accountant):
        return ZcdpFilter(cap_epsilon, cap_delta).admits(charges)
    eps, delta = basic_totals(charges)
    return eps <= cap_epsilon * (1 + REL_TOL) and delta <= cap_delta * (1 + REL_TOL)


def certified_epsilon(charges: Iterable[Charge], cap_delta: float, accountant: str) -> float:
    """The smallest cap ε, at δ = ``cap_delta``, that the store's filter would need for the
    charges: Σ ε (basic; ``inf`` if Σ δ exceeds δ), or :func:`~.filters.filter_epsilon`."""
    charges = list(charges)
    if _filtered(cap_delta, accountant):
        return filter_epsilon(charges, cap_delta)
    eps, delta = basic_totals(charges)
    return eps if delta <= cap_delta * (1 + REL_TOL) else math.inf


def fmt(eps: float, delta: float) -> str:
    """(ε, δ) as messages show it."""
    return f"ε={eps:.6g}, δ={delta:.3g}"


def refusal(dataset: str, cap: Any, others: list[Charge], charge: Charge, accountant: str) -> str:
    """The one line of a refused reservation: what the dataset has spent (basic sums), what the
    release requests, the cap (``cap``: its row), and the filter's figure when it is not basic."""
    eps, delta = basic_totals(others)
    window = f" per {cap.window_days:g} days" if cap.window_days is not None else ""
    msg = (
        f"budget refused: dataset {dataset!r} has spent {fmt(eps, delta)} (committed, "
        f"failed and in flight, basic composition); this release requests "
        f"{fmt(charge.epsilon, charge.delta)}; cap {fmt(cap.epsilon, cap.delta)}{window}"
    )
    if _filtered(cap.delta, accountant):
        needed = certified_epsilon([*others, charge], cap.delta, accountant)
        msg += f"; {accountant} filter: with it they need a cap of ε={needed:.6g}"
    return msg
