"""Argument checks shared by every parameter object and mechanism.

Each ``check_*`` returns the value when it is in its domain and raises
:class:`~spark_dp.errors.ParameterError` otherwise, with a message that names the parameter, shows
the value found and says what is allowed. Pure Python: no Spark, no numpy, no configuration
machinery, so the calibration modules can use them without importing anything heavier.
"""

from __future__ import annotations

import difflib
import math
import sys
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from spark_dp.errors import ParameterError

__all__ = [
    "BUDGET_MIN",
    "DELTA_CONFIRM",
    "DELTA_MAX",
    "DELTA_WARN",
    "EPSILON_MAX",
    "EPSILON_WARN",
    "check_at_most",
    "check_choice",
    "check_delta",
    "check_delta_confirmed",
    "check_epsilon",
    "check_fractions",
    "check_int_at_least",
    "check_nonnegative",
    "check_positive",
    "check_probability",
    "check_release_delta",
    "check_release_epsilon",
    "is_real",
    "privacy_warnings",
]

T = TypeVar("T")

EPSILON_MAX = 100.0
"""Largest total ε a job releases with. Beyond it the guarantee bounds likelihood ratios by
e^100 ≈ 10^43, which protects nothing, and the samplers' δ floor (spark_dp.dp.calibration) and the
exact samplers' integer arithmetic grow with e^ε."""

EPSILON_WARN = 10.0
"""A job warns above this ε (a likelihood ratio above e^10 ≈ 22026)."""

DELTA_MAX = 0.5
"""Largest total δ a mechanism accepts: with δ ≥ ½ the guarantee allows publishing any one
user's data with probability ½, which protects nothing. δ between :data:`DELTA_WARN` and this
bound is allowed with a warning: the privacy audit (``spark-dp audit --fast``) runs the real
mechanisms at δ = 0.2, where its statistics have power; releases want δ well below 1/n."""

DELTA_WARN = 1e-4
"""A job warns above this δ: it exceeds 1/n for every dataset of fewer than 10^4 users, and δ
should be well below 1/n."""

DELTA_CONFIRM = 1e-3
"""A job refuses a δ above this unless the user confirms it (``--allow-large-delta``): δ is the
probability that the guarantee fails outright, and above 1e-3 it exceeds 1/n for every dataset
of fewer than a thousand users (docs/privacy/caveats.md). The library and the privacy
audit accept any δ up to :data:`DELTA_MAX`."""

BUDGET_MIN = sys.float_info.min
"""Smallest total ε or δ a job releases with: the smallest normal double (about 2.2e-308).
Below it a share of the budget (a round's, half of it) underflows to 0; the data-free plan then
refuses an ε whose noise scale overflows (:func:`check_finite_plan`)."""


def check_positive(name: str, value: float) -> float:
    """Return ``value`` if it is a finite number > 0, else raise :class:`ParameterError`."""
    if not is_real(value) or not math.isfinite(value) or value <= 0:
        raise ParameterError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def check_nonnegative(name: str, value: float) -> float:
    """Return ``value`` if it is a finite number ≥ 0."""
    if not is_real(value) or not math.isfinite(value) or value < 0:
        raise ParameterError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def check_epsilon(value: float, name: str = "epsilon") -> float:
    """ε must be finite and > 0."""
    if not is_real(value) or not math.isfinite(value) or value <= 0:
        raise ParameterError(
            f"{name} must be a finite number > 0 (the privacy loss), got {value!r}; "
            "typical values are 0.1 to 10"
        )
    return float(value)


def check_delta(value: float, name: str = "delta") -> float:
    """δ must lie strictly between 0 and 1."""
    if not is_real(value) or not (0.0 < value < 1.0):
        raise ParameterError(
            f"{name} must lie strictly between 0 and 1, got {value!r}; "
            "choose it well below 1/(number of users), e.g. 1e-5 to 1e-11"
        )
    return float(value)


def check_release_epsilon(value: float, name: str = "epsilon") -> float:
    """The total ε of a job's release: finite, in [:data:`BUDGET_MIN`, :data:`EPSILON_MAX`]."""
    check_epsilon(value, name)
    _check_normal(name, value)
    return check_at_most(name, value, EPSILON_MAX, "larger values protect nothing")


def check_release_delta(value: float, name: str = "delta") -> float:
    """The total δ of a job's release: in [:data:`BUDGET_MIN`, :data:`DELTA_MAX`]."""
    check_delta(value, name)
    _check_normal(name, value)
    return check_at_most(
        name, value, DELTA_MAX, "choose δ well below 1/(number of users), e.g. 1e-5 to 1e-11"
    )


def _check_normal(name: str, value: float) -> None:
    if value < BUDGET_MIN:
        raise ParameterError(
            f"{name} must be at least {BUDGET_MIN:.3g} (the smallest normal double: a share of "
            f"a smaller value underflows to 0), got {value!r}"
        )


def check_finite_plan(steps: Iterable[dict[str, Any]], given: str) -> None:
    """Every number of a data-free plan (the reports of its steps) is finite.

    Args:
        steps: each step's report (``Step.to_report()``: label, ε, δ, scales, thresholds).
        given: the budget as the user gave it, for the message (``--epsilon 1e-308``).

    Raises:
        ParameterError: a noise scale or threshold overflowed (an ε too small for the plan),
            found before any data is read instead of after the whole computation.
    """
    for step in steps:
        for key, value in step.items():
            if isinstance(value, float) and not math.isfinite(value):
                raise ParameterError(
                    f"{given} is too small: {step.get('label', 'a step')} would have {key} = "
                    f"{value} (its noise scale overflows); choose a larger value (typical ε: "
                    "0.1 to 10)"
                )


def check_at_most(name: str, value: float, maximum: float, why: str) -> float:
    """Value must be at most ``maximum``; ``why`` says what a larger value would cost."""
    if value > maximum:
        raise ParameterError(f"{name} must be at most {maximum:g}, got {value!r}: {why}")
    return value


def privacy_warnings(epsilon: float | None, delta: float | None = None) -> list[str]:
    """Sentences warning about a weak but accepted (ε, δ): ε > :data:`EPSILON_WARN`,
    δ > :data:`DELTA_WARN`."""
    out = []
    if epsilon is not None and epsilon > EPSILON_WARN:
        out.append(
            f"epsilon={epsilon:g} is above {EPSILON_WARN:g}: the release protects little "
            "(typical values are 0.1 to 10)"
        )
    if delta is not None and delta > DELTA_WARN:
        out.append(
            f"delta={delta:g} is above {DELTA_WARN:g}: δ must be well below 1/(number of "
            "users), which this is not for fewer than 10^4 users"
        )
    return out


def check_delta_confirmed(delta: float | None, given: str, *, allowed: bool) -> None:
    """A job's δ is at most :data:`DELTA_CONFIRM`, or confirmed (``allowed``).

    Args:
        delta: the resolved δ (``None``: the job has none).
        given: how the user gave it, for the message (``--delta 0.1``).
        allowed: ``--allow-large-delta`` (or the config key ``allow_large_delta``) was given.

    Raises:
        ParameterError: δ above :data:`DELTA_CONFIRM` without the confirmation (one line
            saying why and how to go on).
    """
    if delta is None or allowed or delta <= DELTA_CONFIRM:
        return
    raise ParameterError(
        f"{given} is above {DELTA_CONFIRM:g}: δ is the probability that the guarantee fails "
        "outright (a user's data may be published), so keep it below 1/(number of users), "
        "typically 1e-5 to 1e-9; add --allow-large-delta (config: allow_large_delta: true) if "
        "you mean it"
    )


def check_probability(name: str, value: float, *, low: float = 0.0, high: float = 1.0) -> float:
    """Value must lie in the open interval (low, high)."""
    if not is_real(value) or not (low < value < high):
        raise ParameterError(f"{name} must lie strictly between {low} and {high}, got {value!r}")
    return float(value)


def check_fractions(name: str, values: Sequence[float]) -> tuple[float, ...]:
    """A budget split: non-empty, every share > 0, shares sum to at most 1 (+1e-9)."""
    values = tuple(values)
    if not values:
        raise ParameterError(f"{name} must list at least one budget share, got an empty list")
    for v in values:
        if not is_real(v) or not (0.0 < v <= 1.0):
            raise ParameterError(f"{name}: every share must lie in (0, 1], got {list(values)}")
    if sum(values) > 1.0 + 1e-9:
        raise ParameterError(
            f"{name} must sum to at most 1 (basic composition), got {list(values)} "
            f"(sum {sum(values):.6g})"
        )
    return tuple(float(v) for v in values)


def check_int_at_least(
    name: str, value: int, minimum: int, *, private: bool = False, hint: str = ""
) -> int:
    """Value must be an integer ≥ minimum (bools are rejected).

    ``private``: the value may be a count of the data (e.g. an input's row count), so the error
    names only its kind ("a smaller integer", its type), never the value. ``hint``: how to fix it.
    """
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if not is_int or value < minimum:
        shown = (
            ("a smaller integer" if is_int else type(value).__name__) if private else repr(value)
        )
        fix = f"; {hint}" if hint else ""
        raise ParameterError(f"{name} must be an integer >= {minimum}, got {shown}{fix}")
    return value


def check_choice(name: str, value: T, choices: Iterable[T]) -> T:
    """Value must be one of ``choices``."""
    choices = list(choices)
    if value not in choices:
        hint = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1)
        extra = f"; did you mean {hint[0]!r}?" if hint else ""
        raise ParameterError(f"{name} must be one of {choices}, got {value!r}{extra}")
    return value


def is_real(value: Any) -> bool:
    """True for an int or float that is not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)
