"""Composition of the releases charged to one dataset: basic, or tight for Gaussian noise.

**Basic composition** (the default, valid for any mix of mechanisms): k releases that are
(ε_i, δ_i)-DP together are (Σ ε_i, Σ δ_i)-DP (Dwork & Roth 2014, Thm. 3.16). Every release
states its (ε, δ) this way already (the sum over its steps).

**Tight accounting** (``pld`` or ``rdp``, chosen per store) for releases with Gaussian noise,
through Google's ``dp-accounting``. A release describes each Gaussian mechanism in it as a
:class:`GaussianStep`: its noise multiplier σ/Δ2 (the noise standard deviation over the
query's ℓ2 sensitivity), and the (ε, δ_noise) that step claims under basic composition, where
δ_noise is the analytic-Gaussian δ of the noise alone. What the tight accountant composes:

* the Gaussian mechanisms of all releases, by their noise multipliers only, with the privacy
  loss distribution (``pld``: ``PLDAccountant``, pessimistic discretization, an upper bound) or
  Rényi DP (``rdp``: ``RdpAccountant``), under add-or-remove-one neighbours; this gives
  δ_G(ε_G) for the Gaussian part. They are handed over as the one Gaussian they compose to
  exactly, σ = (Σ σ_i⁻²)^{-1/2} (:func:`composed_multiplier`);
* **everything else by basic composition**, added on top: each release's ε minus its Gaussian
  steps' ε, and its δ minus its Gaussian steps' δ_noise. That remainder holds the pure-ε
  mechanisms (Laplace rounds, GEM, the distinct count's Laplace release) and the δ terms that
  are not noise: in partition selection a Gaussian weight-and-threshold round (or Gaussian count
  thresholding) spends δ/2 on the Gaussian noise and δ/2 on the event that a novel item crosses
  the threshold ρ (docs/design/selection.md#budget-split); only the first half is composed tightly,
  the threshold's δ/2 is always added as is (a union bound over the rounds' bad events).

So the charged datasets' releases are (ε_rest + ε_G, δ_rest + δ_G(ε_G))-DP for every ε_G ≥ 0.
A set of releases fits a cap (ε_cap, δ_cap) when basic composition shows it, or when
δ_G(ε_cap − ε_rest) ≤ δ_cap − δ_rest; equivalently the tight ε at δ_cap,
ε_rest + ε_G(δ_cap − δ_rest), is at most ε_cap.

Caveats, stated plainly. Basic composition holds even when the parameters of a release are
chosen after seeing earlier outputs (a privacy filter, Rogers et al. 2016). For Gaussian
mechanisms alone the PLD composition equals μ-GDP composition, μ = (Σ σ_i⁻²)^{1/2}, which also
holds for adaptively chosen σ_i (Smith & Thakurta 2022), and RDP filters hold likewise (Feldman
& Zrnic 2021); the hybrid with the basic remainder assumes the releases' parameters are not
chosen from earlier outputs of the same dataset. The floating-point samplers' δ floor
(:func:`spark_dp.calibration.sampler_delta_floor`, below 1e-20 for ε ≤ 10) is added per Gaussian
step in the tight bound.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spark_dp.errors import ConfigError, ParameterError

__all__ = [
    "ACCOUNTANTS",
    "Charge",
    "GaussianStep",
    "basic_totals",
    "check_accountant",
    "composed_multiplier",
    "fits_cap",
    "gaussian_steps",
    "tight_epsilon",
]

ACCOUNTANTS = ("basic", "pld", "rdp")
"""Accountants a store can use: basic composition, or basic plus PLD or RDP for Gaussians."""

_REL_TOL = 1e-9  # float sums such as 0.1 + 0.2 must fit a cap of 0.3
PLD_DISCRETIZATION = 1e-4
"""Value discretization interval of the PLD accountant (dp-accounting's default)."""


@dataclass(frozen=True)
class GaussianStep:
    """One Gaussian mechanism inside a release, as a tight accountant composes it.

    Attributes:
        noise_multiplier: σ/Δ2, the noise standard deviation over the ℓ2 sensitivity.
        epsilon: the ε the step claims under basic composition.
        delta_noise: the δ the Gaussian noise alone claims at that ε (for weight-and-threshold
            rounds δ/2 of the round; the threshold's δ/2 is not part of it).
    """

    noise_multiplier: float
    epsilon: float
    delta_noise: float

    def __post_init__(self) -> None:
        for name in ("noise_multiplier", "epsilon", "delta_noise"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ParameterError(f"GaussianStep.{name} must be a finite number >= 0")
        if self.noise_multiplier <= 0:
            raise ParameterError("GaussianStep.noise_multiplier must be > 0")

    def to_dict(self) -> dict[str, float]:
        """JSON-ready form (stored with the reservation)."""
        return {
            "noise_multiplier": self.noise_multiplier,
            "epsilon": self.epsilon,
            "delta_noise": self.delta_noise,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> GaussianStep:
        """Inverse of :meth:`to_dict`."""
        return cls(float(d["noise_multiplier"]), float(d["epsilon"]), float(d["delta_noise"]))


def gaussian_steps(steps: Iterable[Any]) -> tuple[GaussianStep, ...]:
    """The Gaussian mechanisms of a plan's steps (:class:`spark_dp.report.Step`, or bare
    calibrations), read from each calibration's public ``to_report()``.

    A step counts as Gaussian when its description names a ``gaussian`` mechanism and gives
    ``sigma``, ``l2_sensitivity`` and ``delta_noise`` (weight-and-threshold rounds, MAD rounds,
    Gaussian count thresholding). Each is checked: the analytic Gaussian mechanism with that σ
    and sensitivity must be (ε, δ_noise)-DP, so a mis-described step cannot loosen the account.
    Other steps (Laplace, GEM, ...) are left to basic composition.

    Raises:
        ParameterError: a Gaussian step whose σ does not give the (ε, δ_noise) it claims.
    """
    from spark_dp.calibration import gaussian_delta

    out = []
    for step in steps:
        calibration = getattr(step, "calibration", step)
        report = calibration.to_report()
        if not str(report.get("mechanism", "")).startswith("gaussian"):
            continue
        if not {"sigma", "l2_sensitivity", "delta_noise"} <= report.keys():
            continue
        sigma, l2 = float(report["sigma"]), float(report["l2_sensitivity"])
        epsilon, delta_noise = float(step.epsilon), float(report["delta_noise"])
        if gaussian_delta(sigma, epsilon, l2) > delta_noise * (1 + 1e-6):
            raise ParameterError(
                f"step {getattr(step, 'label', '?')!r}: sigma={sigma:.6g} with l2 sensitivity "
                f"{l2:.6g} is not ({epsilon:.6g}, {delta_noise:.3g})-DP"
            )
        out.append(GaussianStep(sigma / l2, epsilon, delta_noise))
    return tuple(out)


@dataclass(frozen=True)
class Charge:
    """What one release costs: its basic (ε, δ) and its Gaussian steps."""

    epsilon: float
    delta: float
    gaussian: tuple[GaussianStep, ...] = ()

    @property
    def rest(self) -> tuple[float, float]:
        """(ε, δ) of everything but the Gaussian noise (never below 0)."""
        eps = self.epsilon - sum(g.epsilon for g in self.gaussian)
        delta = self.delta - sum(g.delta_noise for g in self.gaussian)
        return max(eps, 0.0), max(delta, 0.0)


def check_accountant(name: str) -> str:
    """``name`` if it is an accountant (and dp-accounting is importable for ``pld``/``rdp``).

    Raises:
        ConfigError: unknown accountant, or dp-accounting missing.
    """
    if name not in ACCOUNTANTS:
        raise ConfigError(f"accountant must be one of {', '.join(ACCOUNTANTS)}, got {name!r}")
    if name != "basic":
        try:
            import dp_accounting  # noqa: F401
        except ImportError as exc:  # pragma: no cover - a dependency of spark_dp
            raise ConfigError(
                f"the {name} accountant needs dp-accounting: pip install dp-accounting"
            ) from exc
    return name


def basic_totals(charges: Iterable[Charge]) -> tuple[float, float]:
    """(Σ ε, Σ δ) of the charges (basic composition)."""
    eps = delta = 0.0
    for c in charges:
        eps += c.epsilon
        delta += c.delta
    return eps, delta


def _sampler_floor(gaussian: Sequence[GaussianStep]) -> float:
    from spark_dp.calibration import sampler_delta_floor

    return sum(sampler_delta_floor(g.epsilon, "gaussian") for g in gaussian if g.epsilon > 0)


def composed_multiplier(multipliers: Sequence[float]) -> float:
    """σ = (Σ σ_i⁻²)^{-1/2}: Gaussian mechanisms with noise multipliers σ_i compose to exactly
    one Gaussian mechanism with this multiplier (μ-GDP composition, Dong, Roth & Su 2022,
    Cor. 3.3: G_μ1 ⊗ G_μ2 = G_√(μ1² + μ2²) with μ = 1/σ)."""
    return math.fsum(m**-2 for m in multipliers) ** -0.5


def _gaussian_epsilon(multipliers: Sequence[float], delta: float, accountant: str) -> float:
    """ε of the composition of Gaussian mechanisms with these noise multipliers at ``delta``.

    The composition is handed to the accountant as the one equivalent Gaussian
    (:func:`composed_multiplier`): the same privacy loss distribution and the same Rényi
    divergences as composing them one by one, in constant time and with one discretization
    instead of one per release (PLD with many distinct σ_i otherwise takes seconds while the
    dataset's cap row is locked).
    """
    import dp_accounting
    from dp_accounting import pld, rdp

    acc: Any
    if accountant == "pld":
        acc = pld.PLDAccountant(value_discretization_interval=PLD_DISCRETIZATION)
    else:
        acc = rdp.RdpAccountant()
    acc.compose(dp_accounting.GaussianDpEvent(composed_multiplier(multipliers)))
    return float(acc.get_epsilon(delta))


def tight_epsilon(charges: Iterable[Charge], delta: float, accountant: str) -> float:
    """The smallest ε the tight accountant proves for the charges at total δ = ``delta``.

    ε_rest + ε_G(δ − δ_rest − floor), with the Gaussian steps composed by ``accountant``
    (``pld`` or ``rdp``) and the rest by basic composition (module docstring). ``inf`` when
    ``delta`` does not exceed the non-Gaussian δ.
    """
    charges = list(charges)
    eps_rest = sum(c.rest[0] for c in charges)
    delta_rest = sum(c.rest[1] for c in charges)
    gaussian = [g for c in charges for g in c.gaussian]
    if not gaussian:
        return eps_rest if delta_rest <= delta * (1 + _REL_TOL) else math.inf
    budget = delta - delta_rest - _sampler_floor(gaussian)
    if budget <= 0:
        return math.inf
    return eps_rest + _gaussian_epsilon([g.noise_multiplier for g in gaussian], budget, accountant)


def fits_cap(
    charges: Iterable[Charge], cap_epsilon: float, cap_delta: float, accountant: str
) -> bool:
    """Whether the charges' composition is (cap_epsilon, cap_delta)-DP: by basic composition,
    or (``pld``/``rdp``) by the tight accountant; either bound is valid, so either suffices."""
    charges = list(charges)
    eps, delta = basic_totals(charges)
    if eps <= cap_epsilon * (1 + _REL_TOL) and delta <= cap_delta * (1 + _REL_TOL):
        return True
    if accountant == "basic" or not any(c.gaussian for c in charges):
        return False
    return tight_epsilon(charges, cap_delta, accountant) <= cap_epsilon
