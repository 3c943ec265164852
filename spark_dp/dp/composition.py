"""How the noise of releases composes: basic, or tight with dp-accounting (foundation layer).

The budget store (:mod:`spark_dp.dp.accounting`) applies it to the releases charged to one
dataset; ``--max-contributions auto`` to the steps of one release
(:mod:`spark_dp.partition_selection.auto.composition`).

**Basic composition** (the default, valid for any mix of mechanisms): k releases that are
(ε_i, δ_i)-DP together are (Σ ε_i, Σ δ_i)-DP (Dwork & Roth 2014, Thm. 3.16). Every release
states its (ε, δ) this way already (the sum over its steps).

**Tight accounting** (``pld`` or ``rdp``, chosen per store) through Google's dp-accounting.
Each step of a release names the event of its noise (:meth:`Calibration.dp_event
<spark_dp.dp.protocol.Calibration.dp_event>`): ``GaussianDpEvent`` (Gaussian rounds,
MAD rounds, Gaussian count thresholding), ``LaplaceDpEvent`` (Laplace rounds and count
thresholding, the continuous Laplace count), the pure-ε event of
:func:`~spark_dp.dp.protocol.pure_dp_event` (GEM, the discrete-Laplace count), or an
event only basic composition accounts for (truncated-geometric selection). A release records
them as :class:`NoiseStep` (the event, and the (ε, δ_noise) the step claims for its noise).

The tight accountant composes every event it supports (``accountant.supports``): PLD
(``PLDAccountant``, pessimistic discretization, an upper bound) supports all three kinds, RDP
(``RdpAccountant``) the Gaussian and the Laplace; both under add-or-remove-one neighbours. That
gives δ_N(ε_N), the noise's δ at every ε_N. **Everything else is added by basic composition**:
the (ε, δ) of the steps whose event the accountant does not support, and each composed step's
δ minus its δ_noise, which is the novel-item threshold's share of a selection round (δ/2 of a
Gaussian round, all of δ of a Laplace one; docs/design/selection.md#budget-split). With ε_rest and
δ_rest those sums, and η the floating-point samplers' divergence from exact noise
(:func:`spark_dp.dp.calibration.sampler_divergence`), the releases are
(ε_rest + ε_N, δ_rest + δ_N(ε_N) + (1 + e^ε)·η)-DP for every ε_N ≥ 0, ε = ε_rest + ε_N.

The proof (add-or-remove-one neighbours): docs/design/adaptive-composition.md#hybrid-proof.

So a set of releases fits a cap (ε_cap, δ_cap) when basic composition shows it, or when
ε_rest ≤ ε_cap and δ_rest + δ_N(ε_cap − ε_rest) + (1 + e^ε_cap)·η ≤ δ_cap
(:func:`spark_dp.dp.accounting.fits_cap`);
:func:`tight_epsilon` is the smallest ε that bound gives at δ_cap. A Laplace step's whole δ is
its threshold's, so composing Laplace rounds tightly changes only the ε side: their noise is
composed by the PLD (or RDP) of the Laplace mechanism instead of Σ ε.

Caveats, stated plainly. Basic composition holds even when the parameters of a release are
chosen after seeing earlier outputs (a privacy filter, Rogers et al. 2016). For Gaussian
mechanisms alone the PLD composition equals μ-GDP composition, μ = (Σ σ_i⁻²)^{1/2}, which also
holds for adaptively chosen σ_i (Smith & Thakurta 2022), and RDP filters hold likewise (Feldman
& Zrnic 2021); the hybrid with the basic remainder, and any composition with Laplace or pure-ε
events, assumes the releases' parameters are not chosen from earlier outputs of the same
dataset (a release's own steps may depend on its earlier steps, as above).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from spark_dp.errors import ConfigError, ParameterError

if TYPE_CHECKING:
    from spark_dp.dp.protocol import Calibration
    from spark_dp.report import Step

__all__ = [
    "PLD_DISCRETIZATION",
    "REL_TOL",
    "Charge",
    "NoiseStep",
    "composed_multiplier",
    "noise_steps",
    "tight_delta",
    "tight_epsilon",
    "tight_profile",
]

REL_TOL = 1e-9  # float sums such as 0.1 + 0.2 must fit a cap of 0.3
PLD_DISCRETIZATION = 1e-4
"""Value discretization interval of the PLD accountant (dp-accounting's default)."""

# event kind -> (dp-accounting class name, its parameters, the sampler of its noise or None for
# an exact one)
_KINDS: dict[str, tuple[str, tuple[str, ...], str | None]] = {
    "gaussian": ("GaussianDpEvent", ("noise_multiplier",), "gaussian"),
    "laplace": ("LaplaceDpEvent", ("noise_multiplier",), "laplace"),
    "discrete_laplace": ("DiscreteLaplaceDpEvent", ("noise_parameter", "sensitivity"), None),
}


def _kind(event: Any) -> str:
    from dp_accounting import dp_event

    for kind, (cls, _, _) in _KINDS.items():
        if isinstance(event, getattr(dp_event, cls)):
            return kind
    raise ParameterError(f"the budget accountant does not record a {type(event).__name__}")


@dataclass(frozen=True)
class NoiseStep:
    """The noise of one step of a release, as a tight accountant composes it.

    Attributes:
        event: the dp-accounting event (``GaussianDpEvent``, ``LaplaceDpEvent`` or
            ``DiscreteLaplaceDpEvent``).
        epsilon: the ε the step claims under basic composition.
        delta_noise: the δ its noise alone claims at that ε (for weight-and-threshold rounds
            δ/2 of the round; the threshold's share is not part of it).
    """

    event: Any
    epsilon: float
    delta_noise: float

    def __post_init__(self) -> None:
        for name in ("epsilon", "delta_noise"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ParameterError(f"NoiseStep.{name} must be a finite number >= 0")
        for name in _KINDS[self.kind][1]:
            value = getattr(self.event, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ParameterError(f"NoiseStep: the event's {name} must be a finite number > 0")

    @property
    def kind(self) -> str:
        """``gaussian``, ``laplace`` or ``discrete_laplace``."""
        return _kind(self.event)

    @property
    def sampler(self) -> str | None:
        """The floating-point sampler of the noise (``None``: an exact sampler)."""
        return _KINDS[self.kind][2]

    def check_claim(self, label: str) -> NoiseStep:
        """This step, once its event is shown to be (ε, δ_noise)-DP by itself.

        Gaussian (multiplier m = σ/Δ2): the analytic Gaussian δ at ε must be at most δ_noise;
        Laplace (m = b/Δ1): 1/m ≤ ε; discrete Laplace (parameter a, sensitivity C): a·C ≤ ε.
        A mis-described step cannot loosen the account.

        Raises:
            ParameterError: naming the step.
        """
        from spark_dp.dp.calibration import gaussian_delta

        e = self.event
        tol = 1 + 1e-9
        if self.kind == "gaussian":
            ok = gaussian_delta(e.noise_multiplier, self.epsilon) <= self.delta_noise * (1 + 1e-6)
        elif self.kind == "laplace":
            ok = 1.0 / e.noise_multiplier <= self.epsilon * tol
        else:
            ok = e.noise_parameter * e.sensitivity <= self.epsilon * tol
        if not ok:
            raise ParameterError(
                f"step {label!r}: its {type(e).__name__} is not "
                f"({self.epsilon:.6g}, {self.delta_noise:.3g})-DP"
            )
        return self

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (stored with the reservation)."""
        params = {name: getattr(self.event, name) for name in _KINDS[self.kind][1]}
        return {
            "event": self.kind,
            **params,
            "epsilon": self.epsilon,
            "delta_noise": self.delta_noise,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> NoiseStep:
        """Inverse of :meth:`to_dict`; a dict without ``event`` is a Gaussian step (the form
        stores kept before Laplace steps were composed)."""
        from dp_accounting import dp_event

        kind = str(d.get("event", "gaussian"))
        if kind not in _KINDS:
            raise ParameterError(f"unknown noise event {kind!r} in the budget store")
        event_cls, names, _ = _KINDS[kind]
        values = {n: int(d[n]) if n == "sensitivity" else float(d[n]) for n in names}
        event = getattr(dp_event, event_cls)(**values)
        return cls(event, float(d["epsilon"]), float(d["delta_noise"]))


def noise_steps(steps: Iterable[Step[Calibration]]) -> tuple[NoiseStep, ...]:
    """The noise of a plan's steps, read from each calibration's ``dp_event()``.

    Steps whose event only basic composition accounts for are left out (their whole (ε, δ)
    stays in the release's basic total). Each step is checked (:meth:`NoiseStep.check_claim`).

    Raises:
        ParameterError: a step whose event does not give the (ε, δ_noise) it claims.
    """
    from dp_accounting import dp_event

    out = []
    for step in steps:
        calibration = step.calibration
        event = calibration.dp_event()
        if isinstance(event, dp_event.UnsupportedDpEvent):
            continue
        noise = NoiseStep(event, float(calibration.epsilon), float(calibration.delta_noise))
        out.append(noise.check_claim(step.label))
    return tuple(out)


@dataclass(frozen=True)
class Charge:
    """What one release costs: its basic (ε, δ) and the noise of its steps."""

    epsilon: float
    delta: float
    noise: tuple[NoiseStep, ...] = ()

    def split(
        self, composed: Callable[[NoiseStep], bool]
    ) -> tuple[tuple[NoiseStep, ...], float, float]:
        """The steps a tight accountant composes (``composed``), and the (ε, δ) of the rest
        of the release (never below 0); a :attr:`certified` release whole or not at all."""
        steps = tuple(s for s in self.noise if composed(s))
        if len(steps) < len(self.noise) and self.certified:
            return (), self.epsilon, self.delta
        eps = self.epsilon - sum(s.epsilon for s in steps)
        delta = self.delta - sum(s.delta_noise for s in steps)
        return steps, max(eps, 0.0), max(delta, 0.0)

    @property
    def certified(self) -> bool:
        """Whether the release's (ε, δ) is below its steps' sum, proven by a tight composition
        of them all (``auto``): the rest of a part of it is not its total minus that part."""
        return self.epsilon < sum(s.epsilon for s in self.noise) * (1 - REL_TOL)

    @property
    def rest(self) -> tuple[float, float]:
        """(ε, δ) of everything but the noise, when all of it is composed."""
        _, eps, delta = self.split(lambda s: True)
        return eps, delta


def composed_multiplier(multipliers: Sequence[float]) -> float:
    """σ = (Σ σ_i⁻²)^{-1/2}: Gaussian mechanisms with noise multipliers σ_i compose to exactly
    one Gaussian mechanism with this multiplier (μ-GDP composition, Dong, Roth & Su 2022,
    Cor. 3.3: G_μ1 ⊗ G_μ2 = G_√(μ1² + μ2²) with μ = 1/σ)."""
    return math.fsum(m**-2 for m in multipliers) ** -0.5


def _accountant(name: str) -> Any:
    from dp_accounting import pld, rdp

    if name == "pld":
        return pld.PLDAccountant(value_discretization_interval=PLD_DISCRETIZATION)
    if name == "rdp":
        return rdp.RdpAccountant()
    raise ConfigError(f"accountant must be pld or rdp for a tight bound, got {name!r}")


@dataclass(frozen=True)
class _Composition:
    """The releases split as the module docstring says: the composed noise, and the rest."""

    noise: Any  # a dp-accounting accountant that has composed the supported events
    steps: int
    epsilon_rest: float
    delta_rest: float
    divergence: float  # η of the composed steps' floating-point samplers

    def delta(self, epsilon: float) -> float:
        """The total δ at total ε (``inf`` when ε is below ε_rest)."""
        from spark_dp.dp.calibration import divergence_delta

        if epsilon < self.epsilon_rest:
            return math.inf
        noise = float(self.noise.get_delta(epsilon - self.epsilon_rest)) if self.steps else 0.0
        return self.delta_rest + noise + divergence_delta(epsilon, self.divergence)


def _compose(charges: Iterable[Charge], accountant: str) -> _Composition:
    """Compose the supported noise events with ``accountant``; the rest goes to basic.

    The Gaussian events are handed over as the one Gaussian they compose to exactly
    (:func:`composed_multiplier`: the same privacy loss distribution and Rényi divergences, in
    constant time and one discretization), and equal events as one self-composed event, so a
    reservation stays fast while the dataset's cap row is locked.
    """
    from dp_accounting import dp_event

    from spark_dp.dp.calibration import sampler_divergence

    acc = _accountant(accountant)
    steps: list[NoiseStep] = []
    eps_rest = delta_rest = 0.0
    for charge in charges:
        composed, eps, delta = charge.split(lambda s: bool(acc.supports(s.event)))
        steps += composed
        eps_rest += eps
        delta_rest += delta
    gaussian = [s.event.noise_multiplier for s in steps if s.kind == "gaussian"]
    if gaussian:
        acc.compose(dp_event.GaussianDpEvent(composed_multiplier(gaussian)))
    for event, count in Counter(s.event for s in steps if s.kind != "gaussian").items():
        acc.compose(event, count)
    divergence = sum(sampler_divergence(s.sampler) for s in steps if s.sampler is not None)
    return _Composition(acc, len(steps), eps_rest, delta_rest, divergence)


def tight_delta(charges: Iterable[Charge], epsilon: float, accountant: str) -> float:
    """The δ the tight bound gives for the charges at total ε = ``epsilon`` (module
    docstring): δ_rest + δ_N(ε − ε_rest) + (1 + e^ε)·η; ``inf`` below ε_rest."""
    return tight_profile(charges, [epsilon], accountant)[0]


def tight_profile(
    charges: Iterable[Charge], epsilons: Sequence[float], accountant: str
) -> list[float]:
    """:func:`tight_delta` at each of ``epsilons``, from one composition (the privacy profile
    the store certifies; the privacy audit compares it with an independent one)."""
    composition = _compose(charges, accountant)
    return [composition.delta(e) for e in epsilons]


def tight_epsilon(charges: Iterable[Charge], delta: float, accountant: str) -> float:
    """The smallest ε the tight bound proves for the charges at total δ = ``delta``.

    ε_rest + ε_N(δ − δ_rest − (1 + e^ε)·η), found by iterating from the floor at ε_rest: the
    floor grows with ε, so the iterates grow to the least ε that pays its own floor; one that
    does is returned (``inf`` when none does, or when ``delta`` does not exceed δ_rest).
    """
    from spark_dp.dp.calibration import divergence_delta

    comp = _compose(charges, accountant)
    if not comp.steps:
        return comp.epsilon_rest if comp.delta_rest <= delta * (1 + REL_TOL) else math.inf
    epsilon = comp.epsilon_rest
    for _ in range(20):
        budget = delta - comp.delta_rest - divergence_delta(epsilon, comp.divergence)
        if budget <= 0:
            return math.inf
        found = comp.epsilon_rest + float(comp.noise.get_epsilon(budget))
        if found <= epsilon:  # it pays its own floor
            return epsilon
        epsilon = found
    return math.inf
