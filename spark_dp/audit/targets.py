"""What the audit runs: each mechanism through its real code path, with its own calibration.

A target knows how to run the mechanism on the audit's datasets (the registry's ``plan``/``run``
through :func:`~spark_dp.partition_selection.select.run_plan`, the in-memory oracle, or the
distinct-count curve and release), the guarantee it claims (:class:`Claim`: the parameters'
(ε, δ) and the proof's δ shares), its worst cases (``probes``, :mod:`.worst_cases`), a model of
one item's release probability (only to place probes before any run), and its public
parameters for the report.

The shares are read from the calibration objects through the
:class:`~spark_dp.dp.protocol.RoundCalibration` protocol, never restated: the share of
an event on novel items is the sum of the rounds' ``delta_threshold``; of an event on items
others also hold, the sum of their ``delta_noise`` (δ/2 of a Gaussian round, 0 of pure-ε
Laplace noise, the per-item δ' of the truncated-geometric keep probabilities, Desfontaines et
al. 2022 Thm. 1). A comparison is held to the smaller of the claim and the share
(:meth:`Claim.delta_for`), and the statement is checked against the claim
(:func:`step_problems`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from spark_dp.audit.choice import ChoiceTarget
from spark_dp.audit.claims import Claim, step_problems
from spark_dp.audit.probes import Probe
from spark_dp.audit.scenario import Copies
from spark_dp.audit.worst_cases import oracle_probes, selection_probes
from spark_dp.distinct_count.params import DistinctCountParams
from spark_dp.distinct_count.plan import DistinctCountPlan
from spark_dp.distinct_count.registry import CurveMethod, curve_method
from spark_dp.distinct_count.release import DPResult, release_curve
from spark_dp.dp.calibration import Budget
from spark_dp.dp.protocol import RoundCalibration
from spark_dp.dp.registry import Algorithm
from spark_dp.partition_selection import PartitionSelectionParams, plan_selection
from spark_dp.partition_selection.auto.plan import AutoPlan
from spark_dp.partition_selection.calibration import LaplaceThresholding, WeightAndThreshold
from spark_dp.partition_selection.columns import ITEM, USER_ID
from spark_dp.partition_selection.oracles import OracleResult, greedy_update, policy_gaussian
from spark_dp.partition_selection.registry import REGISTRY
from spark_dp.partition_selection.result import SelectionPlan
from spark_dp.partition_selection.select import run_plan
from spark_dp.randomness import Randomness
from spark_dp.report import Step

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "AUTO_CHOICE",
    "FAST_PARAMETERS",
    "MECHANISMS",
    "Claim",
    "CountTarget",
    "OracleSelection",
    "SparkSelection",
    "Target",
    "build_target",
    "step_problems",
]

ORACLES = ("policy-gaussian", "greedy-update")
DISTINCT_COUNT = "distinct-count"
AUTO_CHOICE = "auto-choice"
MECHANISMS: tuple[str, ...] = (*REGISTRY.names, *ORACLES, DISTINCT_COUNT, AUTO_CHOICE)
"""Every real mechanism the audit knows, in report order."""

_WEIGHTED = {"epsilon": 1.0, "delta": 0.2, "max_contributions": 2}
_COUNTED = {"epsilon": 1.0, "delta": 0.2, "max_contributions": 1}
FAST_PARAMETERS: dict[str, dict[str, Any]] = {
    **{name: _WEIGHTED for name in REGISTRY.names},
    "mad2r": {**_WEIGHTED, "b_max": 1.0},
    "truncated-geometric": _COUNTED,
    "laplace-thresholding": _COUNTED,
    "gaussian-thresholding": _COUNTED,
    "policy-gaussian": _WEIGHTED,
    "greedy-update": {"epsilon": 1.0, "delta": 0.2},
    DISTINCT_COUNT: {"epsilon": 1.0, "failure_probability": 0.05, "max_contributions": 4},
    AUTO_CHOICE: {
        "epsilon": 8.0,
        "delta": 0.2,
        "max_contributions": "auto",
        "tuning_share": 0.5,
        "tuning_candidates": (1, 4),
    },
}
"""``--fast``: a large δ and small Δ0 make the claimed δ shares measurable (count thresholding
uses k = 1 so that one canary item carries the whole ε; MAD2R b_max = 1, where its round-2
threshold is tight: with b_max > 1 no novel item reaches the b_max/√t it is calibrated for)."""


# --------------------------------------------------------------------------- selection


def selection_claim(plan: SelectionPlan, params: PartitionSelectionParams) -> Claim:
    """The parameters' (ε, δ) and the plan's two δ shares, summed over the rounds."""
    return Claim(
        epsilon=params.epsilon,
        delta=params.delta,
        delta_novel=sum(s.calibration.delta_threshold for s in plan.steps),
        delta_event=sum(s.calibration.delta_noise for s in plan.steps),
    )


@dataclass(frozen=True)
class SparkSelection:
    """A partition-selection registry entry, run by ``run_plan`` (what ``select_partitions``
    runs) on Spark.

    Attributes:
        entry: the registry entry whose ``run`` executes the plan.
        params: the public parameters.
        plan: the data-free calibration, computed once from ``params``: what the run uses and
            what the audit reads the claim from.
    """

    name: str
    entry: Algorithm[PartitionSelectionParams, SelectionPlan]
    params: PartitionSelectionParams
    plan: SelectionPlan
    change: str | None = None

    @property
    def claim(self) -> Claim:
        """The parameters' (ε, δ) and the plan's δ shares."""
        return selection_claim(self.plan, self.params)

    def claim_problems(self) -> list[str]:
        """The plan's statement against the claim (:func:`step_problems`)."""
        return step_problems(self.plan.steps, self.params.epsilon, self.params.delta)

    def probes(self, runs: int, alpha: float) -> list[Probe]:
        """The worst cases of this mechanism (:func:`~.worst_cases.selection_probes`)."""
        return selection_probes(self, runs, alpha)

    @property
    def parameters(self) -> dict[str, Any]:
        """Public parameters for the report."""
        p = self.params
        out: dict[str, Any] = {"epsilon": p.epsilon, "delta": p.delta}
        out["max_contributions"] = p.max_contributions
        if "split" in self.plan.options:  # the algorithms that split the budget over rounds
            out["split"] = list(self.plan.options["split"])
        if self.entry.name == "mad2r":  # its round-2 bias bound (the audit moves it)
            out["b_max"] = p.b_max
        return out

    def release_probability(self, weight: float) -> float:
        """Model of the round with the largest ε share (the last such round)."""
        steps = self.plan.steps
        dominant = max(range(len(steps)), key=lambda k: (steps[k].epsilon, k))
        return steps[dominant].calibration.release_probability(weight)

    def released(self, copies: Copies, randomness: Randomness, spark: SparkSession) -> set[str]:
        """The items released by one run on the union of ``copies`` (the audit's data)."""
        pairs = copies.frame(spark)
        # as select_partitions runs it, with the audit's own entry and the key the audit bound
        # (the job validates in load_pairs; the audit builds valid rows)
        with run_plan(pairs, self.entry, self.plan, randomness) as result:
            return {str(r[ITEM]) for r in result.items.collect()}


# --------------------------------------------------------------------------- oracles

OracleRun = Callable[..., OracleResult]


@dataclass(frozen=True)
class OracleSelection:
    """A sequential in-memory oracle (PolicyGaussian, GreedyUpdate) on pandas pairs."""

    name: str
    run: OracleRun
    claim: Claim
    calibration: RoundCalibration
    gamma: float
    max_contributions: int | None
    beta: float
    change: str | None = None

    @property
    def parameters(self) -> dict[str, Any]:
        """Public parameters for the report."""
        out: dict[str, Any] = {"epsilon": self.claim.epsilon, "delta": self.claim.delta}
        if self.max_contributions is not None:
            out["max_contributions"] = self.max_contributions
        out["beta"] = self.beta
        return out

    def claim_problems(self) -> list[str]:
        """The calibration's statement against the claim."""
        step = Step("round 1", self.calibration)
        return step_problems((step,), self.claim.epsilon, self.claim.delta)

    def probes(self, runs: int, alpha: float) -> list[Probe]:
        """The novel canaries and the ε item (:func:`~.worst_cases.oracle_probes`)."""
        return oracle_probes(self, runs, alpha)

    def release_probability(self, weight: float) -> float:
        """Both oracles fill an item at most to Γ before the noise."""
        return self.calibration.release_probability(min(weight, self.gamma))

    def released(
        self, copies: Copies, randomness: Randomness, spark: SparkSession | None
    ) -> set[str]:
        """The items released by one run on the union of ``copies`` (in memory; ``spark`` is
        unused)."""
        pairs = pd.DataFrame(copies.rows(), columns=[USER_ID, ITEM])
        kwargs: dict[str, Any] = {"epsilon": self.claim.epsilon, "delta": self.claim.delta}
        if self.max_contributions is not None:
            kwargs["max_contributions"] = self.max_contributions
        return set(self.run(pairs, beta=self.beta, randomness=randomness, **kwargs).items)


def policy_gaussian_target(
    epsilon: float, delta: float, max_contributions: int = 100, beta: float = 4.0
) -> OracleSelection:
    """PolicyGaussian: Basic's σ and ρ (δ/2 each), Γ = ρ + β·σ
    (docs/design/selection.md#oracles)."""
    cal = WeightAndThreshold.for_budget(Budget(epsilon, delta), max_contributions)
    claim = Claim(epsilon, delta, cal.delta_threshold, cal.delta_noise)
    gamma = cal.rho + beta * cal.sigma
    return OracleSelection(
        "policy-gaussian", policy_gaussian, claim, cal, gamma, max_contributions, beta
    )


def greedy_update_target(
    epsilon: float, delta: float, beta: float = 4.0, run: OracleRun = greedy_update
) -> OracleSelection:
    """GreedyUpdate: Laplace(1/ε) noise, ρ_GW for one novel item with the whole δ, no Δ0 cap,
    Γ = ρ_GW + β/ε (docs/design/selection.md#oracles); ρ_GW is Laplace count thresholding's
    threshold at k = 1."""
    cal = LaplaceThresholding.for_budget(Budget(epsilon, delta), 1)
    claim = Claim(epsilon, delta, cal.delta_threshold, 0.0)
    gamma = cal.threshold + beta * cal.scale
    return OracleSelection("greedy-update", run, claim, cal, gamma, None, beta)


# --------------------------------------------------------------------------- distinct count


@dataclass(frozen=True)
class CountTarget:
    """The distinct count: the method's curve on Spark, then the driver-side release."""

    name: str
    method: CurveMethod
    plan: DistinctCountPlan
    change: str | None = None

    @property
    def claim(self) -> Claim:
        """Pure ε-DP: no δ, no novel-item event."""
        return Claim(self.plan.epsilon, 0.0, None, 0.0)

    def claim_problems(self) -> list[str]:
        """GEM's and the count's ε against the claimed ε."""
        return step_problems(self.plan.steps, self.plan.epsilon, 0.0)

    @property
    def parameters(self) -> dict[str, Any]:
        """Public parameters for the report."""
        return {
            "epsilon": self.claim.epsilon,
            "beta": self.plan.beta,
            "max_contributions": self.plan.max_contributions,
            "method": self.plan.method,
        }

    def curve(self, sets: Mapping[str, list[str]], spark: SparkSession) -> NDArray[np.int64]:
        """c(D; ℓ), ℓ = 1..ℓ_max, by the method's own Spark path (the job's curve step)."""
        rows = [(u, i) for u, items in sets.items() for i in items]
        pairs = spark.createDataFrame(rows, f"{USER_ID} string, {ITEM} string")
        return self.method.curve(pairs, self.plan.max_contributions)

    def release(self, curve: NDArray[np.int64], randomness: Randomness) -> DPResult:
        """One release (GEM and the noisy count) from the curve, as the job's run does it."""
        return release_curve(curve, self.plan, randomness)


Target = SparkSelection | OracleSelection | CountTarget | ChoiceTarget


# --------------------------------------------------------------------------- catalogue


@dataclass(frozen=True)
class Settings:
    """Parameters of one target: the fast set or the family's defaults, then overrides."""

    fast: bool = True
    overrides: Mapping[str, Any] = field(default_factory=dict)

    def values(self, name: str) -> dict[str, Any]:
        """The parameter values for mechanism ``name``."""
        base = dict(FAST_PARAMETERS.get(name, _WEIGHTED)) if self.fast else {}
        base.update({k: v for k, v in self.overrides.items() if v is not None})
        return base


def build_target(name: str, settings: Settings | None = None) -> Target:
    """The target of a real mechanism (see :data:`MECHANISMS`).

    Raises:
        ParameterError: unknown name or bad parameters (from the family's own checks).
    """
    values = (settings or Settings()).values(name)
    if name == DISTINCT_COUNT:
        keys = ("epsilon", "max_contributions", "method")
        given = {k: values[k] for k in keys if k in values}
        if "failure_probability" in values:  # the distinct count's β (not MAD's truncation β)
            given["beta"] = values["failure_probability"]
        count_params = DistinctCountParams(**given)
        method = curve_method(count_params.method)
        return CountTarget(name, method, method.plan(count_params))
    if name in ORACLES:
        eps, delta = float(values.get("epsilon", 1.0)), float(values.get("delta", 1e-5))
        beta = float(values.get("beta", 4.0))
        if name == "policy-gaussian":
            cap = int(values.get("max_contributions", 100))
            return policy_gaussian_target(eps, delta, cap, beta)
        return greedy_update_target(eps, delta, beta)
    fields = set(PartitionSelectionParams.__dataclass_fields__)
    given = {k: v for k, v in values.items() if k in fields and k != "algorithm"}
    if name == AUTO_CHOICE:
        params = PartitionSelectionParams(
            algorithm="basic", **{**given, "max_contributions": "auto"}
        )
        plan = plan_selection(params)
        assert isinstance(plan, AutoPlan)
        return ChoiceTarget(name, params, plan)
    entry = REGISTRY[name]
    params = PartitionSelectionParams(algorithm=name, **given)
    return SparkSelection(name, entry, params, entry.plan(params))
