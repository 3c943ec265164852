"""Deliberately broken mechanisms: the audit must fail every one of them.

Each variant wraps a real mechanism and changes exactly one thing (:mod:`.breakages`), then runs
through the same code path as the real one: a registry entry with a changed plan or run goes
through :func:`~spark_dp.partition_selection.select.run_plan` (what ``select_partitions``
runs); an oracle, a distinct-count step, a curve or the choice of Δ0 is
swapped in the same way. Every mechanism gets σ (or the Laplace scale) for 2ε, its threshold with
the whole δ instead of its share, the cap off, and its own likely mistake; ``parameters`` moves a
variant to where its mistake shows (MAD2R's bias needs b_max > 1 and a small round-1 share; count
thresholding's k/2 needs k ≥ 2), and the self-test audits the real mechanism there too. The table
of every variant, the test that catches it and its power is in docs/privacy/audit.md
(``make audit`` refreshes it); the system-level variants (a key reused on neighbouring data, an
accountant that composes a Gaussian step as if pure) are in :mod:`.system`.

Nothing here is registered, and none of it is in the spark_dp package: the job, ``calibrate``
and the bench cannot reach it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from spark_dp.audit.targets import (
    CountTarget,
    OracleSelection,
    Settings,
    SparkSelection,
    Target,
    build_target,
)
from spark_dp.dp.registry import Algorithm
from spark_dp.partition_selection import basic, mad2r
from spark_dp.partition_selection.calibration import (
    GaussianThresholding,
    LaplaceThresholding,
    LaplaceWeightAndThreshold,
    MadRound,
    TruncatedGeometric,
    WeightAndThreshold,
)
from spark_dp_selftest import breakages as b

__all__ = ["BROKEN", "UNDERPOWERED", "BrokenVariant", "build_broken"]


@dataclass(frozen=True)
class BrokenVariant:
    """A real mechanism with one deliberate mistake.

    Attributes:
        name: the variant's name (``broken-...``).
        base: the real mechanism it breaks.
        change: the one thing it changes.
        apply: real target → broken target.
        parameters: parameters the variant is audited at, over the fast ones (the real
            mechanism is audited there too).
        blind_spot: why no affordable run count detects it (docs/privacy/audit.md#measured-power);
            the self-test then accepts a pass and reports its measured power.
    """

    name: str
    base: str
    change: str
    apply: Callable[[Any], Target]
    parameters: Mapping[str, Any] = field(default_factory=dict)
    blind_spot: str = ""


def _rounds(kind: type, change: Callable[[Any], Any]) -> Callable[[SparkSelection], Target]:
    def apply(target: SparkSelection) -> SparkSelection:
        return replace(target, plan=b.map_rounds(target.plan, kind, change))

    return apply


def _mad_rounds(change: Callable[[Any], Any]) -> Callable[[SparkSelection], Target]:
    return _rounds(MadRound, b.on_mad(change))


def _run_with(kind: type, change: Callable[[Any], Any]) -> Callable[[SparkSelection], Target]:
    """The run gets the changed plan; the target keeps the real one (so the claim and the
    probes are the real mechanism's: a run without the cap must face canaries larger than the
    cap it claims)."""

    def apply(target: SparkSelection) -> SparkSelection:
        entry = target.entry

        def run(pairs: Any, plan: Any, *args: Any, **kw: Any) -> Any:
            return entry.run(pairs, b.map_rounds(plan, kind, change), *args, **kw)

        return replace(target, entry=Algorithm(entry.name, entry.summary, entry.plan, run))

    return apply


def _double_singletons(target: SparkSelection) -> Target:
    """Basic's own ``run`` with its weighting swapped for the doubled one (its module's
    ``basic_weights``, for the duration of the run)."""
    entry = target.entry

    def run(*args: Any, **kw: Any) -> Any:
        with b.patched(basic, basic_weights=b.doubled_singleton_weights):
            return entry.run(*args, **kw)

    return replace(target, entry=Algorithm(entry.name, entry.summary, entry.plan, run))


def _noiseless_bias(target: SparkSelection) -> Target:
    entry = target.entry

    def run(*args: Any, **kw: Any) -> Any:
        with b.patched(
            mad2r,
            noisy_weights=b.noiseless_column(mad2r.noisy_weights),
            round_two_items=b.noiseless_biases(mad2r.round_two_items),
        ):
            return entry.run(*args, **kw)

    return replace(target, entry=Algorithm(entry.name, entry.summary, entry.plan, run))


def _undivided_delta(target: SparkSelection) -> Target:
    change = b.undivided_delta(target.params.delta)
    return replace(target, plan=b.map_rounds(target.plan, WeightAndThreshold, change))


def _greedy_prefix(target: OracleSelection) -> Target:
    return replace(target, run=b.greedy_update_prefix)


def _count(make: Callable[[Any], Any]) -> Callable[[CountTarget], Target]:
    def apply(target: CountTarget) -> CountTarget:
        return replace(target, plan=replace(target.plan, count=make(target.plan.count)))

    return apply


def _half_gem(target: CountTarget) -> Target:
    select = target.plan.select
    gem = b.HalfSensitivityGem(select.epsilon, select.beta, select.max_contributions)
    return replace(target, plan=replace(target.plan, select=gem))


def _uncapped_curve(target: CountTarget) -> Target:
    method = target.method
    return replace(target, method=replace(method, curve=b.uncapped_curve(method.curve)))


def _scaled(factor: float) -> Callable[[Any], Any]:
    return lambda count: b.ScaledCount(count.epsilon, count.beta, count.ell, factor)


K2 = {"max_contributions": 2}
BIAS = {"b_max": 2.0, "split": (0.02, 0.98)}
V = BrokenVariant
_GAUSSIAN = (
    # Basic
    V(
        "broken-sigma-2eps",
        "basic",
        "σ calibrated for 2ε",
        _rounds(WeightAndThreshold, b.sigma_double_epsilon),
    ),
    V(
        "broken-rho-full-delta",
        "basic",
        "ρ calibrated with the full δ, not δ/2",
        _rounds(WeightAndThreshold, b.rho_full_delta),
    ),
    V(
        "broken-full-delta",
        "basic",
        "σ and ρ both calibrated with the full δ",
        _rounds(WeightAndThreshold, b.full_delta),
    ),
    V(
        "broken-double-singletons",
        "basic",
        "weights of single-user items doubled",
        _double_singletons,
    ),
    V(
        "broken-no-cap",
        "basic",
        "no Δ0 cap (ρ still calibrated for Δ0)",
        _run_with(WeightAndThreshold, b.uncapped),
    ),
    # DP-SIPS
    V(
        "broken-dp-sips-sigma-2eps",
        "dp-sips",
        "every round's σ for 2ε_r",
        _rounds(WeightAndThreshold, b.sigma_double_epsilon),
    ),
    V(
        "broken-dp-sips-rho-full-delta",
        "dp-sips",
        "every round's ρ for δ_r, not δ_r/2",
        _rounds(WeightAndThreshold, b.rho_full_delta),
    ),
    V("broken-dp-sips-no-cap", "dp-sips", "no Δ0 cap", _run_with(WeightAndThreshold, b.uncapped)),
    V(
        "broken-dp-sips-undivided-delta",
        "dp-sips",
        "each round's σ and ρ for the whole δ, not its share f_r·δ",
        _undivided_delta,
    ),
    # MAD
    V("broken-mad-sigma-2eps", "mad", "σ calibrated for 2ε", _mad_rounds(b.sigma_double_epsilon)),
    V(
        "broken-mad-rho-full-delta",
        "mad",
        "ρ for the full δ, not δ/2",
        _mad_rounds(b.rho_full_delta),
    ),
    V("broken-mad-no-cap", "mad", "no Δ0 cap", _run_with(MadRound, b.on_mad(b.uncapped))),
    V(
        "broken-mad-reroute-uncapped",
        "mad",
        "re-sent excess α·e_u not divided by d_max",
        _rounds(MadRound, b.reroute_undivided),
        blind_spot="a sensitivity about 14% above 1 at Δ0 = 2: power 0.9 needs ~60,000 runs",
    ),
    # MAD2R
    V(
        "broken-mad2r-sigma-2eps",
        "mad2r",
        "both rounds' σ for 2ε_r",
        _mad_rounds(b.sigma_double_epsilon),
    ),
    V(
        "broken-mad2r-rho-full-delta",
        "mad2r",
        "both rounds' ρ for δ_r, not δ_r/2",
        _mad_rounds(b.rho_full_delta),
    ),
    V(
        "broken-mad2r-full-delta",
        "mad2r",
        "both rounds' σ and ρ for the full δ_r",
        _mad_rounds(b.full_delta),
    ),
    V("broken-mad2r-no-cap", "mad2r", "no Δ0 cap", _run_with(MadRound, b.on_mad(b.uncapped))),
    V(
        "broken-mad2r-noiseless-bias",
        "mad2r",
        "round-2 biases from round 1's noiseless weights",
        _noiseless_bias,
        BIAS,
    ),
)
_OTHERS = (
    # Basic-Laplace (its threshold already holds all of δ: the per-item share is what breaks)
    V(
        "broken-basic-laplace-scale-2eps",
        "basic-laplace",
        "Laplace scale 1/(2ε)",
        _rounds(LaplaceWeightAndThreshold, b.laplace_double_epsilon),
    ),
    V(
        "broken-basic-laplace-rho-full-delta",
        "basic-laplace",
        "ρ_Lap with the whole δ per novel item",
        _rounds(LaplaceWeightAndThreshold, b.laplace_rho_full_delta),
    ),
    V(
        "broken-basic-laplace-no-cap",
        "basic-laplace",
        "no Δ0 cap",
        _run_with(LaplaceWeightAndThreshold, b.uncapped),
    ),
    # count thresholding
    V(
        "broken-truncated-geometric-2eps",
        "truncated-geometric",
        "keep probabilities for 2ε",
        _rounds(TruncatedGeometric, b.tg_double_epsilon),
    ),
    V(
        "broken-truncated-geometric-full-delta",
        "truncated-geometric",
        "δ' = δ per item, not its share",
        _rounds(TruncatedGeometric, b.tg_full_delta),
        K2,
    ),
    V(
        "broken-truncated-geometric-half-k",
        "truncated-geometric",
        "keep probabilities for k/2",
        _rounds(TruncatedGeometric, b.half_k(TruncatedGeometric)),
        K2,
    ),
    V(
        "broken-truncated-geometric-no-cap",
        "truncated-geometric",
        "no cap of k items",
        _run_with(TruncatedGeometric, b.uncapped),
    ),
    V(
        "broken-laplace-thresholding-scale-2eps",
        "laplace-thresholding",
        "scale k/(2ε)",
        _rounds(LaplaceThresholding, b.laplace_count_double_epsilon),
    ),
    V(
        "broken-laplace-thresholding-full-delta",
        "laplace-thresholding",
        "threshold with δ per item, not its share",
        _rounds(LaplaceThresholding, b.laplace_count_full_delta),
        K2,
    ),
    V(
        "broken-laplace-thresholding-half-k",
        "laplace-thresholding",
        "scale and threshold for k/2",
        _rounds(LaplaceThresholding, b.half_k(LaplaceThresholding)),
        K2,
    ),
    V(
        "broken-laplace-thresholding-no-cap",
        "laplace-thresholding",
        "no cap of k items",
        _run_with(LaplaceThresholding, b.uncapped),
    ),
    V(
        "broken-gaussian-thresholding-sigma-2eps",
        "gaussian-thresholding",
        "σ for 2ε",
        _rounds(GaussianThresholding, b.gaussian_count_double_epsilon),
    ),
    V(
        "broken-gaussian-thresholding-full-delta",
        "gaussian-thresholding",
        "threshold for the full δ, not δ/2",
        _rounds(GaussianThresholding, b.gaussian_count_full_delta),
    ),
    V(
        "broken-gaussian-thresholding-half-k",
        "gaussian-thresholding",
        "σ and threshold for k/2",
        _rounds(GaussianThresholding, b.half_k(GaussianThresholding)),
        K2,
    ),
    V(
        "broken-gaussian-thresholding-no-cap",
        "gaussian-thresholding",
        "no cap of k items",
        _run_with(GaussianThresholding, b.uncapped),
    ),
    # the GreedyUpdate oracle
    V(
        "broken-greedy-update-prefix",
        "greedy-update",
        "noise on every item of the union, zero weights too (before issue 14)",
        _greedy_prefix,
    ),
    # distinct count
    V(
        "broken-distinct-count-4eps",
        "distinct-count",
        "count noise scale for 4·ε_count",
        _count(_scaled(4.0)),
    ),
    V(
        "broken-distinct-count-half-scale",
        "distinct-count",
        "count noise scale ÷ 2",
        _count(_scaled(2.0)),
    ),
    V(
        "broken-gem-half-sensitivity",
        "distinct-count",
        "GEM's sensitivities ℓ/2",
        _half_gem,
        blind_spot="its privacy loss stays within ε_select on every neighbour searched",
    ),
    V(
        "broken-distinct-count-no-cap",
        "distinct-count",
        "c(D; ℓ) without the bound ℓ per person",
        _uncapped_curve,
    ),
    V(
        "broken-auto-noiseless",
        "auto-choice",
        "Δ0 chosen as the argmax of the noiseless scores (no GEM)",
        b.noiseless_choice,
    ),
)

BROKEN: dict[str, BrokenVariant] = {v.name: v for v in (*_GAUSSIAN, *_OTHERS)}
"""The broken variants by name."""

UNDERPOWERED: frozenset[str] = frozenset(n for n, v in BROKEN.items() if v.blind_spot)
"""Variants no affordable run count detects: the self-test reports them and accepts a pass."""


def build_broken(name: str, settings: Settings | None = None) -> Target:
    """The target of broken variant ``name``: its base mechanism's target at the variant's
    parameters (under ``settings``' own overrides), changed."""
    variant = BROKEN[name]
    settings = settings or Settings()
    merged = Settings(settings.fast, {**variant.parameters, **settings.overrides})
    target = variant.apply(build_target(variant.base, merged))
    return replace(target, name=name, change=variant.change)
