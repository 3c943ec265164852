"""Which probes each selection mechanism is audited on, placed from its public constants.

Every selection mechanism gets the novel canaries and the ε item of :mod:`.probes`; MAD gets
the reroute probes and MAD2R with b_max > 1 the bias probe (docs/privacy/audit.md#worst-cases
says which proof step each one targets and why it is the worst case there). The constants that
place them (Δ0, the threshold's arg-max t, the release model of the round with the largest ε
share, τ, σ1, ρ2, C_lb) are public, read from the plan's calibration objects; a wrong constant
can only misplace a probe (less power), never make a broken mechanism pass a comparison, whose
δ is held to the claim (:mod:`.events`).

Runs per probe: the audit's ``runs`` for the small probes; the reroute probes hold about
τ/(1 − r) users per copy and the bias probe about 2·(ρ2 + C_lb·σ1), so they run on
``runs``/:data:`REROUTE_RUN_DIVISOR` and ``runs``/:data:`BIAS_RUN_DIVISOR` copies (the
reroute's power is computed in tests/audit/test_power.py; the bias probe's searched event is
held out on 70% of its copies, and at 20,000 runs the noiseless-bias variant's rates (about
0.21 on D against 0.02 on D' for its strongest event) fail it with power ≥ 0.99 on those
7,000, against 0.05 at 1,400).
"""

from __future__ import annotations

from typing import Any

from spark_dp.audit.placement import place_epsilon_item
from spark_dp.audit.probes import Probe, bias_probe, epsilon_probe, novel_probes, reroute_probes
from spark_dp.audit.statistics import Confidence
from spark_dp.partition_selection.calibration import MadRound

__all__ = [
    "BIAS_RUN_DIVISOR",
    "PLACEMENT_COMPARISONS",
    "REROUTE_RUN_DIVISOR",
    "oracle_probes",
    "selection_probes",
]

REROUTE_RUN_DIVISOR = 2
BIAS_RUN_DIVISOR = 2
PLACEMENT_COMPARISONS = 24
"""The number of comparisons the placement assumes when it picks the ε item's fillers (any
public value is valid; this is about what a selection audit makes)."""


def _placement_alpha(alpha: float) -> float:
    return Confidence(alpha, PLACEMENT_COMPARISONS).per_bound


def _common(
    cap: int, argmax_t: int | None, width: int, target: Any, runs: int, alpha: float
) -> list[Probe]:
    fillers = place_epsilon_item(
        target.release_probability, target.claim.delta_event, runs, _placement_alpha(alpha)
    )
    return [*novel_probes(cap, argmax_t, runs), epsilon_probe(fillers, width, runs)]


def selection_probes(target: Any, runs: int, alpha: float) -> list[Probe]:
    """The probes of a registry mechanism (or of a broken variant of it): ``target`` is a
    :class:`~.targets.SparkSelection` (its ``plan``, ``entry``, ``claim`` and release model)."""
    plan = target.plan
    steps = plan.steps
    known = [t for t in (s.calibration.argmax_t for s in steps) if t]
    # count thresholding (its plan names a strategy): the canary adds 1 to each of k items
    width = plan.max_contributions if "strategy" in plan.options else 1
    cap = max(s.calibration.max_contributions for s in steps)
    probes = _common(cap, max(known) if known else None, width, target, runs, alpha)
    name = target.entry.name
    if name == "mad":
        probes += _mad_probes(target, runs, alpha)
    elif name == "mad2r":
        probes += _mad2r_probes(target, runs)
    return probes


def _mad_probes(target: Any, runs: int, alpha: float) -> list[Probe]:
    constants = target.plan.calibration(0, MadRound).constants
    fillers = place_epsilon_item(
        target.release_probability, target.claim.delta_event, runs, _placement_alpha(alpha)
    )
    return reroute_probes(constants.tau, fillers, max(100, runs // REROUTE_RUN_DIVISOR))


def _mad2r_probes(target: Any, runs: int) -> list[Probe]:
    first, second = target.plan.calibration(0, MadRound), target.plan.calibration(1, MadRound)
    if second.constants.b_max <= 1.0 or second.c_lb is None:
        return []  # with b_max = 1 every UserWeight is 1/√d: the biases change nothing
    return [bias_probe(first.sigma, second.rho, second.c_lb, max(100, runs // BIAS_RUN_DIVISOR))]


def oracle_probes(target: Any, runs: int, alpha: float) -> list[Probe]:
    """The probes of a sequential oracle (a :class:`~.targets.OracleSelection`): the novel
    canaries and the ε item."""
    cap = target.max_contributions if target.max_contributions is not None else 2
    return _common(cap, target.calibration.argmax_t, 1, target, runs, alpha)
