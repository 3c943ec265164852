"""Run one audit: the datasets, the mechanism's real code, the counts and the verdict.

Selection mechanisms run once on the disjoint union of ``runs`` copies of D and ``runs`` copies
of D' (:mod:`.scenario`): copy k's outcome is the outcome of one run on its dataset, and the
copies' outcomes are independent. The in-memory oracles get the same union: users of different
copies touch disjoint items, so their sequential updates commute, the random user order
restricted to one copy is a uniform order independent of the other copies', and the noise of
each item is its own draw. The distinct count computes each dataset's curve once on Spark
(the method's own curve function) and then runs the driver-side release ``runs`` times per
dataset, each from its own key stream.

Logs carry the mechanism, the number of runs and seconds: the audit's data are synthetic, but
no count of any kind is logged (the result object holds them).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from spark_dp.audit.choice import ChoiceTarget
from spark_dp.audit.placement import place_count_event, place_epsilon_item
from spark_dp.audit.scenario import (
    EPSILON_ITEM,
    NOVEL_PREFIX,
    Copies,
    Scenario,
    choice_datasets,
    distinct_count_datasets,
    split_by_copy,
)
from spark_dp.audit.statistics import Claim, Confidence, EventCounts, clopper_pearson
from spark_dp.audit.targets import CountTarget, Target
from spark_dp.logs import get_logger
from spark_dp.randomness import Randomness

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "AuditResult",
    "EpsilonTest",
    "NovelTest",
    "novel_item_test",
    "run_audit",
    "two_ways",
]

log = get_logger("spark_dp.audit")


@dataclass(frozen=True)
class NovelTest:
    """How often some item of the novel canary was released, against the claimed share.

    Attributes:
        released: runs on a dataset with the novel canary that released one of its items.
        runs: those runs.
        share: the claimed bound δ_novel on that probability.
        lower, upper: one-sided Clopper–Pearson bounds at the audit's per-test level.
    """

    released: int
    runs: int
    share: float
    lower: float
    upper: float

    @classmethod
    def from_counts(cls, released: int, runs: int, share: float, alpha: float) -> NovelTest:
        """The test for ``released`` of ``runs`` at level ``alpha``."""
        lower, upper = clopper_pearson(released, runs, alpha)
        return cls(released, runs, share, lower, upper)

    @property
    def passed(self) -> bool:
        """False when the rate's lower bound exceeds the claimed share."""
        return self.lower <= self.share

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, with the verdict."""
        return {**asdict(self), "rate": self.released / self.runs, "passed": self.passed}


@dataclass(frozen=True)
class EpsilonTest:
    """The empirical ε lower bound from one event, its complement, both directions.

    Attributes:
        claimed: the mechanism's claimed ε.
        delta: the δ share the bound is computed at (what the verdict uses).
        comparisons: the four (event, direction) counts.
        alpha: level of each one-sided bound.
        total_delta: the mechanism's whole δ, for the (weaker) bound reported beside it.
    """

    claimed: float
    delta: float
    comparisons: tuple[EventCounts, ...]
    alpha: float
    total_delta: float = 0.0

    @property
    def bounds(self) -> list[float]:
        """ln((p_lo − δ)/q_hi) per comparison."""
        return [c.epsilon_lower_bound(self.delta, self.alpha) for c in self.comparisons]

    @property
    def lower_bound(self) -> float:
        """The empirical ε lower bound: the largest of the comparisons' bounds."""
        return max(self.bounds)

    @property
    def lower_bound_at_total_delta(self) -> float:
        """The same bound at the mechanism's whole δ (the DP definition's, reported only)."""
        return max(c.epsilon_lower_bound(self.total_delta, self.alpha) for c in self.comparisons)

    @property
    def passed(self) -> bool:
        """False when the lower bound exceeds the claimed ε."""
        return self.lower_bound <= self.claimed

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, with each comparison's bound and the verdict."""
        return {
            "claimed_epsilon": self.claimed,
            "delta": self.delta,
            "alpha_per_bound": self.alpha,
            "epsilon_lower_bound": self.lower_bound,
            "total_delta": self.total_delta,
            "epsilon_lower_bound_at_total_delta": self.lower_bound_at_total_delta,
            "comparisons": [
                {**asdict(c), "epsilon_lower_bound": b}
                for c, b in zip(self.comparisons, self.bounds, strict=True)
            ],
            "passed": self.passed,
        }


@dataclass
class AuditResult:
    """The outcome of one audit (all values public: synthetic data, public constants).

    Attributes:
        mechanism: the audited name (a real mechanism or a ``broken-...`` variant).
        change: for a broken variant, the one thing it changes.
        claim: what the calibration claims.
        parameters: the mechanism's public parameters.
        runs: runs per dataset.
        confidence: the audit's family-wise error.
        scenario: the canaries and events, in words and numbers.
        novel: the novel-item test (None for the distinct count).
        epsilon: the ε test.
        seconds: wall-clock time of the audit.
        randomness: key mode and fingerprint (never the key or a seed).
    """

    mechanism: str
    change: str | None
    claim: Claim
    parameters: dict[str, Any]
    runs: int
    confidence: Confidence
    scenario: dict[str, Any]
    novel: NovelTest | None
    epsilon: EpsilonTest
    seconds: float
    randomness: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """True when no test found the mechanism beyond its claim."""
        return self.epsilon.passed and (self.novel is None or self.novel.passed)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description of the audit and its verdict."""
        return {
            "mechanism": self.mechanism,
            "broken_change": self.change,
            "claim": asdict(self.claim),
            "parameters": self.parameters,
            "runs_per_dataset": self.runs,
            "family_alpha": self.confidence.alpha,
            "scenario": self.scenario,
            "novel_item_test": None if self.novel is None else self.novel.to_dict(),
            "epsilon_test": self.epsilon.to_dict(),
            "verdict": "pass" if self.passed else "FAIL",
            "seconds": round(self.seconds, 1),
            "randomness": self.randomness,
        }


def two_ways(event: str, hits_neighbour: int, hits_base: int, runs: int) -> tuple[EventCounts, ...]:
    """The event and its complement, each bounded D' over D and D over D'."""
    miss_neighbour, miss_base = runs - hits_neighbour, runs - hits_base
    return (
        EventCounts(event, "D'", "D", hits_neighbour, runs, hits_base, runs),
        EventCounts(event, "D", "D'", hits_base, runs, hits_neighbour, runs),
        EventCounts(f"not ({event})", "D", "D'", miss_base, runs, miss_neighbour, runs),
        EventCounts(f"not ({event})", "D'", "D", miss_neighbour, runs, miss_base, runs),
    )


def run_audit(
    target: Target,
    *,
    runs: int,
    randomness: Randomness,
    confidence: Confidence | None = None,
    spark: SparkSession | None = None,
) -> AuditResult:
    """Audit ``target`` with ``runs`` runs per dataset.

    Args:
        target: from :func:`~spark_dp.audit.targets.build_target` or
            :func:`~spark_dp.audit.broken.build_broken`.
        runs: runs on each of D and D'.
        randomness: the audit's key (copies and runs draw on independent streams of it).
        confidence: the family-wise error α (default 1e-3).
        spark: the session for Spark mechanisms (the active one, or a new local one).
    """
    if runs < 10:
        raise ValueError(f"an audit needs at least 10 runs per dataset, got {runs}")
    confidence = confidence or Confidence()
    spark = _session(spark)
    randomness = _bound(randomness, target, runs)
    start = time.perf_counter()
    if isinstance(target, CountTarget):
        novel, epsilon, scenario = _count_audit(target, runs, randomness, confidence, spark)
    elif isinstance(target, ChoiceTarget):
        novel, epsilon, scenario = _choice_audit(target, runs, randomness, confidence, spark)
    else:
        novel, epsilon, scenario = _selection_audit(target, runs, randomness, confidence, spark)
    seconds = time.perf_counter() - start
    log.info("audit %s: %d runs per dataset, %.1f s", target.name, runs, seconds)
    return AuditResult(
        mechanism=target.name,
        change=target.change,
        claim=target.claim,
        parameters=target.parameters,
        runs=runs,
        confidence=confidence,
        scenario=scenario,
        novel=novel,
        epsilon=epsilon,
        seconds=seconds,
        randomness={"mode": randomness.mode, "key_fingerprint": randomness.fingerprint},
    )


def _bound(randomness: Randomness, target: Any, runs: int) -> Randomness:
    """The audit's key bound to one audit (mechanism, parameters, runs): an audit is not a
    release of private data, its datasets are synthetic and public; a key the caller bound is
    used as is."""
    if randomness.bound:
        return randomness
    from spark_dp.release_ids import release_id

    rid = release_id(
        job="audit",
        algorithm=target.name,
        arguments={"parameters": target.parameters, "runs": runs},
        digests=[],
        key_fingerprint=randomness.fingerprint,
    )
    return randomness.bind(rid)


def _session(spark: SparkSession | None) -> SparkSession:
    """``spark``, or the active session, or a new local one."""
    if spark is not None:
        return spark
    from spark_dp.session import get_session

    # a few partitions suit the audit's small data (AQE coalesces further)
    return get_session("spark_dp audit", {"spark.sql.shuffle.partitions": "8"})


def _selection_audit(
    target: Any, runs: int, randomness: Randomness, confidence: Confidence, spark: SparkSession
) -> tuple[NovelTest, EpsilonTest, dict[str, Any]]:
    claim: Claim = target.claim
    fillers = place_epsilon_item(
        target.release_probability, claim.delta_event, runs, confidence.per_bound
    )
    scenario = Scenario(fillers=fillers, novel_items=target.novel_items())
    released = split_by_copy(
        target.released(scenario.copies(runs), randomness.child("audit"), spark)
    )
    items = [released.get(k, set()) for k in range(2 * runs)]
    novel_hits = sum(_has_novel(s) for s in items)
    on_base = sum(EPSILON_ITEM in s for s in items[:runs])
    on_neighbour = sum(EPSILON_ITEM in s for s in items[runs:])
    if claim.delta_novel is None:
        raise TypeError(f"{target.name}: a selection mechanism claims a novel-item share")
    novel = NovelTest.from_counts(novel_hits, 2 * runs, claim.delta_novel, confidence.per_test)
    comparisons = two_ways("ε item released", on_neighbour, on_base, runs)
    epsilon = EpsilonTest(
        claim.epsilon, claim.delta_event, comparisons, confidence.per_bound, claim.delta
    )
    return novel, epsilon, scenario.to_report()


def _has_novel(released: set[str]) -> bool:
    return any(i.startswith(NOVEL_PREFIX) for i in released)


def novel_item_test(
    target: Any,
    *,
    runs: int,
    randomness: Randomness,
    confidence: Confidence | None = None,
    spark: SparkSession | None = None,
) -> NovelTest:
    """The novel-item test alone: ``runs`` copies of the novel canary, one run on their union.

    Cheaper than :func:`run_audit` (no ε item) for tests that only check the release of
    single-user items; same canary, same share, same level.
    """
    confidence = confidence or Confidence()
    spark = _session(spark)
    randomness = _bound(randomness, target, runs)
    scenario = Scenario(fillers=0, novel_items=target.novel_items())
    copies = Copies(((scenario.base(), runs),))
    released = split_by_copy(target.released(copies, randomness.child("audit"), spark))
    hits = sum(_has_novel(released.get(k, set())) for k in range(runs))
    share = target.claim.delta_novel
    if share is None:
        raise TypeError(f"{target.name}: a selection mechanism claims a novel-item share")
    return NovelTest.from_counts(hits, runs, share, confidence.per_test)


def _count_audit(
    target: CountTarget,
    runs: int,
    randomness: Randomness,
    confidence: Confidence,
    spark: SparkSession,
) -> tuple[None, EpsilonTest, dict[str, Any]]:
    base, neighbour = distinct_count_datasets(target.plan.ell_max)
    curve_d, curve_n = target.curve(base, spark), target.curve(neighbour, spark)
    event = place_count_event(target.plan, curve_d, curve_n, runs, confidence.per_bound)
    hits = {}
    for label, curve in (("D", curve_d), ("D'", curve_n)):
        stream = randomness.child("audit", label)
        releases = (target.release(curve, stream.child("run", i)) for i in range(runs))
        hits[label] = sum(event.holds(r.ell, r.lower_bound) for r in releases)
    comparisons = two_ways(event.describe(), hits["D'"], hits["D"], runs)
    epsilon = EpsilonTest(target.claim.epsilon, 0.0, comparisons, confidence.per_bound)
    scenario = {
        "persons_in_D": len(base),
        "canary_items": target.plan.ell_max,
        "canary": "one person whose items nobody else holds, raising c(D; ℓ) by ℓ",
        "event": event.describe(),
    }
    return None, epsilon, scenario


def _choice_audit(
    target: ChoiceTarget,
    runs: int,
    randomness: Randomness,
    confidence: Confidence,
    spark: SparkSession,
) -> tuple[None, EpsilonTest, dict[str, Any]]:
    """The choice of Δ0 on D and D' = D + a canary of maximal degree: the scores once per
    dataset (the release's Spark pass, one ranking key), the choice ``runs`` times each."""
    choice = target.choice
    low, top = choice.scores[0], choice.scores[-1]
    base, neighbour = choice_datasets(low.sigma, low.rho, top.rho, top.max_items)
    ranking = randomness.child("audit", "ranking")
    hits = {}
    for label, sets in (("D", base), ("D'", neighbour)):
        totals = target.scores(sets, ranking, spark)
        stream = randomness.child("audit", label)
        draws = (
            target.choose(choice, totals, stream.child("run", i).driver()) for i in range(runs)
        )
        hits[label] = sum(c == top.max_items for c in draws)
    event = f"Δ0 = {top.max_items} chosen"
    comparisons = two_ways(event, hits["D'"], hits["D"], runs)
    epsilon = EpsilonTest(target.claim.epsilon, 0.0, comparisons, confidence.per_bound)
    scenario = {
        "users_in_D": len(base),
        "canary_items": top.max_items,
        "canary": "one user holding the largest candidate's number of items, each held by "
        "users of degree 1 at the weight where the canary moves the score most",
        "event": event,
    }
    return None, epsilon, scenario
