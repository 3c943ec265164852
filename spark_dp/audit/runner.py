"""Run one audit: the probes' datasets, the mechanism's real code, the comparisons, the verdict.

Selection mechanisms run once on the disjoint union of every probe's copies (``runs`` copies
of D and of D' per probe, :mod:`.scenario`): copy k's outcome is the outcome of one run on its
dataset, and the copies' outcomes are independent. The in-memory oracles get the same union:
users of different copies touch disjoint items, so their sequential updates commute, the random
user order restricted to one copy is a uniform order independent of the other copies', and the
noise of each item is its own draw. The distinct count is audited by :mod:`.count_audit`, the
private choice of Δ0 by :mod:`.choice`.

A verdict: the calibration's own statement must fit the claim (``problems``, before any run),
and no comparison of :mod:`.events` may exceed the δ it is held to. The comparisons share the
audit's family-wise error α (Bonferroni), so a correct mechanism fails with probability at
most α.

Logs carry the mechanism, the number of runs and seconds: the audit's data are synthetic, but
no count of any kind is logged (the result object holds them).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from spark_dp.audit.choice import ChoiceTarget, choice_comparisons
from spark_dp.audit.events import (
    PILOT_FRACTION,
    Comparison,
    Outcomes,
    designed_events,
    searched_events,
)
from spark_dp.audit.probes import Probe, probe_copies
from spark_dp.audit.scenario import Copies, split_by_copy
from spark_dp.audit.statistics import Confidence, EventCounts, clopper_pearson
from spark_dp.audit.targets import Claim, CountTarget, Target
from spark_dp.logs import get_logger
from spark_dp.randomness import Randomness

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["AuditResult", "NovelTest", "audit_session", "evaluate", "novel_item_test", "run_audit"]

log = get_logger("spark_dp.audit")


@dataclass
class AuditResult:
    """The outcome of one audit (all values public: synthetic data, public constants).

    Attributes:
        mechanism: the audited name (a real mechanism or a ``broken-...`` variant).
        change: for a broken variant, the one thing it changes.
        claim: the claimed (ε, δ) and the proof's δ shares.
        parameters: the mechanism's public parameters.
        runs: runs per dataset of the audit's main probes.
        confidence: the family-wise error α and the number of comparisons it is split over.
        probes: the probes, described.
        comparisons: every comparison, with its counts and verdict.
        problems: what the calibration states beyond the claim (found before any run).
        seconds: wall-clock time of the audit.
        randomness: key mode and fingerprint (never the key or a seed).
    """

    mechanism: str
    change: str | None
    claim: Claim
    parameters: dict[str, Any]
    runs: int
    confidence: Confidence
    probes: list[dict[str, Any]]
    comparisons: list[Comparison]
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    randomness: dict[str, Any] = field(default_factory=dict)

    @property
    def failures(self) -> list[Comparison]:
        """The comparisons that exceed the δ they are held to."""
        return [c for c in self.comparisons if c.failed]

    @property
    def passed(self) -> bool:
        """True when the statement fits the claim and no comparison exceeds its δ."""
        return not self.problems and not self.failures

    @property
    def beyond_claim(self) -> bool:
        """A failure that exceeds even the claimed (ε, δ) (not only the proof's share)."""
        return bool(self.problems) or any(c.beyond_claim for c in self.comparisons)

    @property
    def epsilon_lower_bound(self) -> float:
        """The largest ε a comparison shows at its δ (0 without evidence)."""
        return max((c.epsilon_lower_bound for c in self.comparisons), default=0.0)

    @property
    def power(self) -> float:
        """Estimated power: the largest probability that one comparison fails, were the
        observed rates the true ones (a lower bound on the audit's; 1 for a statement that
        exceeds the claim)."""
        if self.problems:
            return 1.0
        return max((c.power for c in self.comparisons), default=0.0)

    @property
    def caught_by(self) -> list[str]:
        """What failed, in words."""
        found = [f"statement: {p}" for p in self.problems]
        found += [f"{c.probe}: {c.counts.event} ({c.counts.numerator})" for c in self.failures]
        return found

    @property
    def strongest(self) -> Comparison | None:
        """The comparison closest to failing (largest p_lo − e^ε·q_hi − δ)."""
        return max(self.comparisons, key=lambda c: c.lower - c.delta, default=None)

    def novel_rate(self) -> tuple[float, float, float] | None:
        """(rate, its lower bound, the δ it is held to) of the novel-only comparison with the
        highest rate (D' over D), or None without one."""
        novel = [
            c
            for c in self.comparisons
            if c.counts.numerator == "D'"
            and not c.counts.event.startswith("not")
            and c.counts.hits_denominator == 0
            and c.probe.startswith("novel")
        ]
        if not novel:
            return None
        best = max(novel, key=lambda c: c.counts.rates[0])
        lower, _ = clopper_pearson(
            best.counts.hits_numerator, best.counts.runs_numerator, best.alpha
        )
        return best.counts.rates[0], lower, best.delta

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description of the audit and its verdict."""
        strongest = self.strongest
        return {
            "mechanism": self.mechanism,
            "broken_change": self.change,
            "claim": asdict(self.claim),
            "parameters": self.parameters,
            "runs_per_dataset": self.runs,
            "family_alpha": self.confidence.alpha,
            "comparisons_made": self.confidence.comparisons,
            "probes": self.probes,
            "statement_problems": self.problems,
            "epsilon_lower_bound": self.epsilon_lower_bound,
            "estimated_power": self.power,
            "strongest": None if strongest is None else strongest.to_dict(),
            "caught_by": self.caught_by,
            "comparisons": [c.to_dict() for c in self.comparisons],
            "verdict": "pass" if self.passed else "FAIL",
            "beyond_claim": self.beyond_claim,
            "seconds": round(self.seconds, 1),
            "randomness": self.randomness,
        }


def run_audit(
    target: Target,
    *,
    runs: int,
    randomness: Randomness,
    confidence: Confidence | None = None,
    spark: SparkSession | None = None,
) -> AuditResult:
    """Audit ``target`` with ``runs`` runs per dataset (per probe).

    Args:
        target: from :func:`~spark_dp.audit.targets.build_target` or
            a broken variant's ``build_broken`` (the self-test package).
        runs: runs on each of D and D' of the main probes.
        randomness: the audit's key (copies and runs draw on independent streams of it).
        confidence: the family-wise error α (default 1e-3).
        spark: the session for Spark mechanisms (the active one, or a new local one).
    """
    if runs < 10:
        raise ValueError(f"an audit needs at least 10 runs per dataset, got {runs}")
    confidence = confidence or Confidence()
    spark = audit_session(spark)
    randomness = _bound(randomness, target, runs)
    start = time.perf_counter()
    if isinstance(target, CountTarget):
        from spark_dp.audit.count_audit import count_comparisons

        comparisons, probes, confidence = count_comparisons(
            target, runs, randomness, confidence, spark
        )
    elif isinstance(target, ChoiceTarget):
        comparisons, probes, confidence = choice_comparisons(
            target, runs, randomness, confidence, spark
        )
    else:
        comparisons, probes, confidence = _selection_comparisons(
            target, runs, randomness, confidence, spark
        )
    seconds = time.perf_counter() - start
    log.info("audit %s: %d runs per dataset, %.1f s", target.name, runs, seconds)
    return AuditResult(
        mechanism=target.name,
        change=target.change,
        claim=target.claim,
        parameters=target.parameters,
        runs=runs,
        confidence=confidence,
        probes=probes,
        comparisons=comparisons,
        problems=target.claim_problems(),
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


def audit_session(spark: SparkSession | None) -> SparkSession:
    """``spark``, or the active session, or a new local one."""
    if spark is not None:
        return spark
    from spark_dp.session import get_session

    # a few partitions suit the audit's small data (AQE coalesces further)
    return get_session("spark_dp audit", {"spark.sql.shuffle.partitions": "8"})


def probe_outcomes(probes: list[Probe], released: dict[int, set[str]]) -> list[Outcomes]:
    """Per probe, the counts of each watched group on its D runs and its D' runs."""
    out, start = [], 0
    for p in probes:
        sides = []
        for offset in (0, p.runs):
            sets = [released.get(start + offset + k, set()) for k in range(p.runs)]
            sides.append(
                {g: np.array([len(s.intersection(items)) for s in sets]) for g, items in p.watched}
            )
        out.append(Outcomes(p, sides[0], sides[1]))
        start += 2 * p.runs
    return out


def _selection_comparisons(
    target: Any, runs: int, randomness: Randomness, confidence: Confidence, spark: SparkSession
) -> tuple[list[Comparison], list[dict[str, Any]], Confidence]:
    probes = target.probes(runs, confidence.alpha)
    released = split_by_copy(
        target.released(probe_copies(probes), randomness.child("audit"), spark)
    )
    outcomes = probe_outcomes(probes, released)
    comparisons, confidence = evaluate(outcomes, target.claim, confidence)
    return comparisons, [p.to_report() for p in probes], confidence


def evaluate(
    outcomes: list[Outcomes], claim: Claim, confidence: Confidence
) -> tuple[list[Comparison], Confidence]:
    """Every designed comparison on all runs, and one searched comparison per searched probe
    (chosen on its pilot runs, tested on the rest), all at α split over their number."""
    designed = [
        (o.probe, event.kind(o.probe), counts)
        for o in outcomes
        for event in designed_events(o.probe)
        for counts in o.counts_of(event)
    ]
    searched = [o for o in outcomes if searched_events(o.probe)]
    confidence = confidence.over(len(designed) + len(searched))
    alpha = confidence.per_bound

    def comparison(probe: Probe, kind: str, counts: EventCounts, pick: bool) -> Comparison:
        delta = claim.delta_for(kind)
        return Comparison(probe.name, counts, claim.epsilon, delta, claim.delta, alpha, pick)

    out = [comparison(p, kind, counts, False) for p, kind, counts in designed]
    for o in searched:
        pilot, holdout = o.split(PILOT_FRACTION)
        kind, counts = _search(pilot, holdout, claim, alpha)
        out.append(comparison(o.probe, kind, counts, True))
    return out, confidence


def _search(
    pilot: Outcomes, holdout: Outcomes, claim: Claim, alpha: float
) -> tuple[str, EventCounts]:
    """The (event, order) whose holdout comparison is most likely to fail at the pilot's
    rates (ties: the largest plug-in p − e^ε·q − δ); its counts on the holdout runs."""
    probe = pilot.probe
    n = len(next(iter(holdout.base.values())))  # holdout runs per dataset (equal on both)
    best: tuple[float, float, int, int] | None = None
    candidates = searched_events(probe)
    for i, event in enumerate(candidates):
        delta = claim.delta_for(event.kind(probe))
        for j, counts in enumerate(pilot.counts_of(event)):
            p, q = counts.rates
            power = EventCounts("", "", "", round(p * n), n, round(q * n), n).power(
                claim.epsilon, delta, alpha
            )
            score = (power, p - float(np.exp(claim.epsilon)) * q - delta)
            if best is None or score > best[:2]:
                best = (*score, i, j)
    assert best is not None
    event = candidates[best[2]]
    return event.kind(probe), holdout.counts_of(event)[best[3]]


@dataclass(frozen=True)
class NovelTest:
    """How often some item of a novel canary was released, against the claimed share.

    Attributes:
        released: runs on a dataset with the novel canary that released one of its items.
        runs: those runs.
        share: the claimed bound on that probability.
        lower, upper: one-sided Clopper–Pearson bounds at the test's level.
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


def novel_item_test(
    target: Any,
    *,
    runs: int,
    randomness: Randomness,
    confidence: Confidence | None = None,
    spark: SparkSession | None = None,
) -> NovelTest:
    """The novel-item test alone: ``runs`` copies of the largest novel canary (more items than
    the cap), one run on their union, the rate against the δ a novel event is held to."""
    confidence = confidence or Confidence()
    spark = audit_session(spark)
    randomness = _bound(randomness, target, runs)
    probe = max(
        (p for p in target.probes(runs, confidence.alpha) if p.name.startswith("novel")),
        key=lambda p: len(p.canary),
    )
    copies = Copies(((probe.neighbour(), runs),))
    released = split_by_copy(target.released(copies, randomness.child("audit"), spark))
    hits = sum(bool(released.get(k, set()) & probe.novel) for k in range(runs))
    return NovelTest.from_counts(hits, runs, target.claim.delta_for("novel"), confidence.alpha)
