"""System-level audits: keys bound to their release, and the budget accountant's certificate.

* **Key binding** (docs/privacy/keys.md). An analyst who gets a release on X and another on D
  (X = D, or X = D plus one user) with one key must learn no more about X than the first
  release allows. The library binds every release's noise to its release id, which covers the
  content digest of the rows read (:func:`~spark_dp.release_ids.bind_release`), so the two
  releases of different tables draw independent noise. The audit runs Basic through
  ``select_partitions`` (binding as the library does, ``validate=True``) on a table of copies of
  X and on a table of copies of D whose item names match copy for copy, and compares the event
  "the two releases differ on the copy" between copies where X = D and copies where X = D plus a
  canary on an item near the threshold, against the claimed (ε, δ) of the one release that reads
  X. Reusing the noise (both releases bound to one id) makes the releases identical wherever
  X = D and different with the canary's crossing probability elsewhere: ε = ∞ with probability
  ≈ 1/3.
* **Accountant** (docs/privacy/budget.md). For k releases of Basic (k = 1, 2, 5), the store's
  PLD accountant (:func:`~spark_dp.dp.accounting.tight_delta`, reading each step's
  ``dp_event()``) certifies a δ at every ε of a grid. The audit recomputes the privacy profile
  of the same releases independently: the thresholds' shares by basic composition plus the
  analytic Gaussian δ (Balle & Wang 2018) of the composed Gaussian, multiplier
  (Σ σ_i⁻²)^(−1/2) (Dong, Roth & Su 2022, Cor. 3.3), from the σ each round adds; a certificate
  below the true δ anywhere fails. An accountant that composes a Gaussian step as if it were
  pure ε (its event the randomized-response pair of its ε, its δ share dropped) certifies, for
  one release at the fast parameters, δ = 0.2 at ε ≈ 0.85 where the Gaussian gives 0.226.

Both take the part a broken system changes as an argument (``keys``, ``accounted``); the broken
variants that pass them are in the self-test package (docs/privacy/audit.md#self-test).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from spark_dp.audit.events import Comparison, four_ways
from spark_dp.audit.probes import CANARY
from spark_dp.audit.runner import AuditResult
from spark_dp.audit.scenario import Copies, split_by_copy
from spark_dp.audit.statistics import Confidence
from spark_dp.audit.targets import Settings, SparkSelection, build_target
from spark_dp.dp.accounting import Charge, noise_steps, tight_profile
from spark_dp.dp.calibration import gaussian_delta
from spark_dp.partition_selection import select_partitions
from spark_dp.partition_selection.calibration import WeightAndThreshold
from spark_dp.partition_selection.columns import ITEM
from spark_dp.partition_selection.result import SelectionPlan
from spark_dp.randomness import Randomness, ReleaseKey

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "ACCOUNTANT_RELEASES",
    "SYSTEM",
    "accountant_audit",
    "key_binding_audit",
    "separate_keys",
]

ACCOUNTANT_RELEASES = (1, 2, 5)
"""Numbers of releases whose composition the accountant audit checks (Basic, fast parameters)."""

PROFILE_POINTS = 60
"""Points of the ε grid, from ε_total/60 to ε_total, where the two profiles are compared."""


def _basic(settings: Settings) -> SparkSelection:
    target = build_target("basic", settings)
    assert isinstance(target, SparkSelection)
    return target


def _released(
    target: SparkSelection, copies: Copies, key: Randomness, spark: SparkSession
) -> dict[int, set[str]]:
    with select_partitions(copies.frame(spark), target.plan, key, validate=True) as result:
        return split_by_copy(str(r[ITEM]) for r in result.items.collect())


def separate_keys(material: ReleaseKey) -> list[Randomness]:
    """One key, two releases: the same key material in two objects (a key file read by two
    runs), as a key object binds once; each release binds its own to the digest of its rows."""
    return [Randomness(ReleaseKey(material.secret, material.mode)) for _ in range(2)]


def key_binding_audit(
    *,
    runs: int,
    seed: int | None,
    alpha: float,
    spark: SparkSession,
    keys: Callable[[ReleaseKey], list[Randomness]] = separate_keys,
) -> AuditResult:
    """The key-binding audit of the module docstring: ``keys`` makes the two releases' keys
    from one key's material (as a library caller would: :func:`separate_keys`)."""
    start = time.perf_counter()
    target = _basic(Settings())
    cal = target.plan.calibration(0, WeightAndThreshold)
    fillers = max(0, round(cal.rho - 0.5))  # x's crossing window [ρ − m − 1, ρ − m) centred
    base = {f"filler{k}": ["x"] for k in range(fillers)}
    with_canary = {**base, CANARY: ["x"]}
    first = Copies(((base, runs), (with_canary, runs)))  # X = D, then X = D + canary
    second = Copies(((base, 2 * runs),))  # D, the same names copy for copy
    pair = keys(Randomness.create(seed).key)
    key = pair[0]
    one, two = (_released(target, c, k, spark) for c, k in zip((first, second), pair, strict=True))
    differ = [one.get(k, set()) != two.get(k, set()) for k in range(2 * runs)]
    hits_d, hits_n = sum(differ[:runs]), sum(differ[runs:])
    confidence = Confidence(alpha).over(4)
    claim = target.claim
    comparisons = [
        Comparison(
            "two releases", counts, claim.epsilon, claim.delta, claim.delta, confidence.per_bound
        )
        for counts in four_ways("the releases differ", hits_n, runs, hits_d, runs)
    ]
    return AuditResult(
        mechanism="key-binding",
        change=None,
        claim=claim,
        parameters=target.parameters,
        runs=runs,
        confidence=confidence,
        probes=[{"name": "two releases", "targets": "one key, one release", "x_fillers": fillers}],
        comparisons=comparisons,
        seconds=time.perf_counter() - start,
        randomness={"mode": key.mode, "key_fingerprint": key.fingerprint},
    )


def _profiles(
    plan: SelectionPlan, sigmas: list[float], releases: int
) -> list[tuple[float, float, float]]:
    """(ε, the δ the store's PLD accountant certifies at ε, the true δ at ε) on a grid of ε,
    for ``releases`` copies of ``plan``."""
    charges = [Charge(plan.epsilon, plan.delta, noise_steps(plan.steps))] * releases
    composed = math.fsum(s**-2 for s in sigmas * releases) ** -0.5
    thresholds = releases * sum(s.calibration.delta_threshold for s in plan.steps)
    grid = [releases * plan.epsilon * j / PROFILE_POINTS for j in range(1, PROFILE_POINTS + 1)]
    certified = tight_profile(charges, grid, "pld")
    return [
        (e, c, thresholds + gaussian_delta(composed, e))
        for e, c in zip(grid, certified, strict=True)
    ]


def accountant_audit(
    *, accounted: Callable[[SelectionPlan], SelectionPlan] = lambda plan: plan
) -> AuditResult:
    """The accountant audit of the module docstring: the store's accountant certifies the
    releases of ``accounted(plan)`` (the plan itself; a broken system changes what the
    accountant reads), the true profile is the plan's own σ."""
    start = time.perf_counter()
    target = _basic(Settings())
    sigmas = [
        target.plan.calibration(k, WeightAndThreshold).sigma for k in range(len(target.plan.steps))
    ]
    plan = accounted(target.plan)
    problems, report = [], []
    for k in ACCOUNTANT_RELEASES:
        profile = _profiles(plan, sigmas, k)
        worst = max(profile, key=lambda row: row[2] - row[1])
        report.append(
            {
                "releases": k,
                "epsilon": worst[0],
                "certified_delta": worst[1],
                "true_delta": worst[2],
            }
        )
        if worst[2] > worst[1] * (1 + 1e-6) + 1e-12:
            problems.append(
                f"{k} release(s): the accountant certifies δ = {worst[1]:.4g} at ε = "
                f"{worst[0]:.3g}, the composed Gaussian and the thresholds give {worst[2]:.4g}"
            )
    return AuditResult(
        mechanism="accountant",
        change=None,
        claim=target.claim,
        parameters={
            **target.parameters,
            "releases": list(ACCOUNTANT_RELEASES),
            "accountant": "pld",
        },
        runs=0,
        confidence=Confidence(),
        probes=[
            {
                "name": "composition",
                "targets": "the store's PLD certificate against the composed privacy profile",
                "closest": report,
            }
        ],
        comparisons=[],
        problems=problems,
        seconds=time.perf_counter() - start,
    )


def _key_binding(*, runs: int, seed: int | None, alpha: float, spark: SparkSession) -> AuditResult:
    return key_binding_audit(runs=runs, seed=seed, alpha=alpha, spark=spark)


def _accountant(**_: Any) -> AuditResult:
    return accountant_audit()


SYSTEM = {"key-binding": _key_binding, "accountant": _accountant}
"""The system checks a correct spark_dp passes (name → runner)."""
