"""Parameters of private partition selection, shared by the library API and the job.

One frozen dataclass declares every parameter once: its default, its ``--help`` sentence and
its check. The ``partition_selection`` job and ``spark-dp calibrate`` derive their command-line
flags and config keys from it (see :mod:`spark_dp.config`). It checks its own fields only; the
algorithm's plan (:func:`~spark_dp.partition_selection.select.plan_selection`, computed once
from the checked parameters) refuses what the chosen algorithm cannot use (an unknown name, a
three-share split for MAD2R, a b_max above its threshold's h_scale), still before any data is
read. Defaults follow the paper's experiments (Chen et al. 2025, Sec. 6 ICML / Sec. 7 arXiv;
docs/design/selection.md#paper-parameters).
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_dp.checks import (
    check_at_most,
    check_fractions,
    check_int_at_least,
    check_nonnegative,
    check_probability,
    check_release_delta,
    check_release_epsilon,
)
from spark_dp.config import param
from spark_dp.errors import ParameterError
from spark_dp.partition_selection.calibration import check_bias_bounds

__all__ = [
    "AUTO",
    "MAX_CONTRIBUTIONS_LIMIT",
    "PREVIEWED",
    "TUNING_CANDIDATES",
    "PartitionSelectionParams",
    "PreviewParams",
]

MAX_CONTRIBUTIONS_LIMIT = 1_000_000
"""Largest Δ0: the calibrations hold arrays of Δ0 floats (memory and time grow linearly with
Δ0: megabytes and seconds at this limit)."""

AUTO = "auto"
"""The value of ``max_contributions`` that chooses Δ0 privately (docs/design/tuning.md)."""

TUNING_CANDIDATES = (1, 3, 10, 30, 100, 300, 1000)
"""The default grid of Δ0 the private choice picks from: half-decades from 1 to 1000."""

PREVIEWED = ("basic", "dp-sips", "mad", "mad2r")
"""The algorithms ``spark-dp preview`` predicts (docs/design/tuning.md#preview-models)."""


@dataclass(frozen=True)
class PartitionSelectionParams:
    """Parameters of :func:`spark_dp.partition_selection.select_partitions`.

    Every value here is a public constant chosen before seeing the data
    (docs/design/selection.md#public-constants): tuning any of them on the private data voids the
    guarantee.
    """

    algorithm: str = param("mad2r", "selection algorithm (one of the registry's)")
    epsilon: float = param(1.0, "total privacy loss ε of the selection (at most 100)")
    delta: float = param(1e-5, "total δ; keep it well below 1/(number of users)")
    max_contributions: int | str = param(
        100,
        "the per-user bound Δ0: each user keeps a uniform random subset of at most this many "
        "items (k of the classic strategies); larger values raise the threshold, smaller ones "
        f"drop data (at most {MAX_CONTRIBUTIONS_LIMIT}); or 'auto': chosen privately from "
        "--tuning-candidates, spending --tuning-share of ε (docs/design/tuning.md)",
        aliases=("--max-items-per-user",),
        metavar="INT|auto",
    )
    tuning_share: float = param(
        0.05,
        "with --max-contributions auto: the share of ε spent on choosing Δ0; the selection "
        "runs with what the PLD bound of both leaves, at least the rest; in (0, 1)",
    )
    tuning_candidates: tuple[int, ...] = param(
        TUNING_CANDIDATES,
        "with --max-contributions auto: the Δ0 values the private choice picks from",
    )
    max_adaptive_degree: int = param(
        50, "d_max of MAD/MAD2R: users with more items do not reroute excess weight (>= 4)"
    )
    beta: float = param(
        2.0,
        "β of MAD/MAD2R: truncation level τ = ρ + β·σ in noise standard deviations",
        flag="--truncation-beta",
        aliases=("--beta",),
    )
    split: tuple[float, ...] = param(
        (0.1, 0.9),
        "budget shares of the rounds, applied to ε and δ alike: two shares for mad2r, any "
        "number for dp-sips (the paper also uses 0.05,0.15,0.8)",
    )
    b_min: float = param(0.5, "minimum bias multiplier of MAD2R round 2, in [0.5, 1]")
    b_max: float = param(
        2.0, "maximum bias multiplier of MAD2R round 2 (>= 1); raises round 2's threshold"
    )
    c_lb: float = param(
        1.0, "C_lb of MAD2R: round-2 biases use the lower bound w̃1 − C_lb·σ1 (>= 0)"
    )
    c_ub: float = param(
        3.0, "C_ub of MAD2R: items with w̃1 + C_ub·σ1 < ρ2 are dropped from round 2 (>= 0)"
    )
    recap_each_round: bool = param(
        True, "dp-sips: re-cap each round from the user's remaining uncapped items"
    )

    def __post_init__(self) -> None:
        check_release_epsilon(self.epsilon)
        check_release_delta(self.delta)
        if isinstance(self.max_contributions, str):
            if self.max_contributions != AUTO:
                raise ParameterError(
                    f"max_contributions (--max-contributions) must be an integer >= 1 or "
                    f"{AUTO!r}, got {self.max_contributions!r}"
                )
        else:
            _check_bound("max_contributions", self.max_contributions)
        check_probability("tuning_share", self.tuning_share)
        object.__setattr__(self, "tuning_candidates", _candidates(self.tuning_candidates))
        check_int_at_least("max_adaptive_degree", self.max_adaptive_degree, 4)
        check_nonnegative("beta", self.beta)
        split = check_fractions("split", self.split)
        object.__setattr__(self, "split", split)
        check_bias_bounds(self.b_min, self.b_max)
        check_nonnegative("c_lb", self.c_lb)
        check_nonnegative("c_ub", self.c_ub)

    @property
    def auto(self) -> bool:
        """Whether Δ0 is chosen privately from the data (``max_contributions='auto'``)."""
        return self.max_contributions == AUTO

    def fixed_max_contributions(self) -> int:
        """Δ0 as an integer, as the algorithms' plans read it (docs/design/naming.md).

        Raises:
            ParameterError: Δ0 is ``auto``: :func:`~.select.plan_selection` plans each
                candidate with its own fixed Δ0 instead.
        """
        if isinstance(self.max_contributions, str):
            raise ParameterError(
                "max_contributions is 'auto': plan with plan_selection, which plans every "
                "candidate Δ0"
            )
        return self.max_contributions


def _candidates(values: tuple[int, ...]) -> tuple[int, ...]:
    """A grid of Δ0: at least one, each a valid bound; returned sorted, without repeats."""
    candidates = tuple(values)
    if not candidates:
        raise ParameterError("tuning_candidates must list at least one Δ0, e.g. 1,10,100")
    for c in candidates:
        _check_bound("tuning_candidates", c)
    return tuple(sorted(set(candidates)))


def _check_bound(name: str, value: int) -> None:
    check_int_at_least(name, value, 1)
    check_at_most(
        name,
        value,
        MAX_CONTRIBUTIONS_LIMIT,
        "the calibration would hold arrays of that many floats",
    )


@dataclass(frozen=True)
class PreviewParams:
    """Parameters of ``spark-dp preview``: what the preview spends and the release it previews.

    The preview is a release of its own (charged to the budget store like any other): its
    (ε, δ) are ``epsilon`` and δ = 0. The predictions are for a release at
    (``release_epsilon``, ``release_delta``) with the algorithms' default parameters
    (docs/design/tuning.md#preview).
    """

    epsilon: float = param(0.2, "ε the preview spends (pure ε-DP, charged like a release)")
    release_epsilon: float = param(1.0, "ε of the release the preview predicts")
    release_delta: float = param(1e-5, "δ of the release the preview predicts")
    tuning_candidates: tuple[int, ...] = param(
        TUNING_CANDIDATES, "the Δ0 values the preview predicts for"
    )
    algorithms: tuple[str, ...] = param(
        PREVIEWED, f"algorithms to predict ({', '.join(PREVIEWED)})"
    )

    def __post_init__(self) -> None:
        check_release_epsilon(self.epsilon)
        check_release_epsilon(self.release_epsilon, "release_epsilon")
        check_release_delta(self.release_delta, "release_delta")
        object.__setattr__(self, "tuning_candidates", _candidates(self.tuning_candidates))
        algorithms = tuple(self.algorithms)
        if not algorithms or any(a not in PREVIEWED for a in algorithms):
            raise ParameterError(
                f"algorithms must be among {', '.join(PREVIEWED)}, got {', '.join(algorithms)}"
            )
        object.__setattr__(self, "algorithms", tuple(dict.fromkeys(algorithms)))
