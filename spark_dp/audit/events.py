"""Events on a probe's runs, the comparisons that test them, and the pilot search.

A run's outcome on a probe is how many items of each watched group it released. An event is a
union of thresholds on those counts ({y ≥ 3}, {novel ≥ 1 or x ≥ 1}); each event is compared
four ways: the event and its complement, each bounded D' over D and D over D' (so D − user,
the same pair read the other way, is covered).

**The δ a comparison is held to.** The claimed (ε, δ) bounds every event:
P_A[E] − e^ε·P_B[E] ≤ δ. The mechanism's proof splits δ into the noise's share δ_noise and the
novel-item threshold's share δ_threshold (Chen et al. 2025, proof of Thm. 3.3; Gopi et al.
2020), which bounds some events more tightly: an event on novel items only (nobody else holds
them, so D never releases them) by δ_threshold, an event on shared items only by δ_noise (it
is post-processing of the noise on what both datasets hold), any other by their sum. A
comparison is held to min(claimed δ, that share): failing it shows the mechanism breaks its
claim or its own proof; :attr:`Comparison.beyond_claim` says which.

**Designed and searched events.** Events on groups of at most :data:`DESIGNED_MAX` items are
fixed before any run (every threshold of every group, {novel ≥ 1} of a larger novel group, and
the union of all groups) and tested on all runs. On larger shared groups (MAD2R's bias probe)
the threshold is searched: the first
:data:`PILOT_FRACTION` of the runs of each dataset choose the (event, order) whose holdout
power is largest at the pilot's rates (DP Auditorium's search, Kong et al. 2024), and the rest
test that one comparison, so the search does not bias the test.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

import numpy as np

from spark_dp.audit.probes import Probe
from spark_dp.audit.statistics import EventCounts

__all__ = [
    "DESIGNED_MAX",
    "PILOT_FRACTION",
    "Comparison",
    "Event",
    "Outcomes",
    "designed_events",
    "four_ways",
    "searched_events",
]

DESIGNED_MAX = 4
"""Groups with at most this many items get every threshold as a designed event."""

PILOT_FRACTION = 0.3
"""Share of a searched probe's runs that choose its event (the rest test it)."""

Counts = Mapping[str, np.ndarray]
"""Per group, the number of its items each run released (one entry per run)."""


@dataclass(frozen=True)
class Event:
    """The union of {count of group g ≥ c} over its clauses (g, c)."""

    clauses: tuple[tuple[str, int], ...]

    def holds(self, counts: Counts) -> np.ndarray:
        """Per run, whether the event happened."""
        runs = len(next(iter(counts.values())))
        out = np.zeros(runs, dtype=bool)
        for group, cut in self.clauses:
            out |= counts[group] >= cut
        return out

    def describe(self) -> str:
        """In words, e.g. ``novel ≥ 1 or y ≥ 3``."""
        return " or ".join(f"{g} ≥ {c}" for g, c in self.clauses)

    def kind(self, probe: Probe) -> str:
        """``novel``, ``shared`` or ``mixed``: which δ shares bound the event."""
        kinds = {probe.group_kind(g) for g, _ in self.clauses}
        return kinds.pop() if len(kinds) == 1 else "mixed"


@dataclass(frozen=True)
class Outcomes:
    """A probe's counts on its D runs and its D' runs."""

    probe: Probe
    base: Counts
    neighbour: Counts

    def split(self, fraction: float) -> tuple[Outcomes, Outcomes]:
        """(the first ``fraction`` of each dataset's runs, the rest)."""
        k = max(1, min(self.probe.runs - 1, round(fraction * self.probe.runs)))

        def part(counts: Counts, sl: slice) -> dict[str, np.ndarray]:
            return {g: v[sl] for g, v in counts.items()}

        head, tail = slice(None, k), slice(k, None)
        return (
            Outcomes(self.probe, part(self.base, head), part(self.neighbour, head)),
            Outcomes(self.probe, part(self.base, tail), part(self.neighbour, tail)),
        )

    def counts_of(self, event: Event) -> tuple[EventCounts, ...]:
        """The four comparisons of ``event`` on these runs."""
        on_base, on_neighbour = event.holds(self.base), event.holds(self.neighbour)
        return four_ways(
            event.describe(),
            int(on_neighbour.sum()),
            len(on_neighbour),
            int(on_base.sum()),
            len(on_base),
        )


def four_ways(
    event: str, hits_neighbour: int, runs_neighbour: int, hits_base: int, runs_base: int
) -> tuple[EventCounts, ...]:
    """The event and its complement, each bounded D' over D and D over D'."""
    miss_neighbour, miss_base = runs_neighbour - hits_neighbour, runs_base - hits_base
    n, b = runs_neighbour, runs_base
    return (
        EventCounts(event, "D'", "D", hits_neighbour, n, hits_base, b),
        EventCounts(event, "D", "D'", hits_base, b, hits_neighbour, n),
        EventCounts(f"not ({event})", "D", "D'", miss_base, b, miss_neighbour, n),
        EventCounts(f"not ({event})", "D'", "D", miss_neighbour, n, miss_base, b),
    )


def _searched_groups(probe: Probe) -> list[tuple[str, tuple[str, ...]]]:
    """Shared groups of more than DESIGNED_MAX items: their thresholds are searched."""
    return [
        (g, items)
        for g, items in probe.watched
        if len(items) > DESIGNED_MAX and probe.group_kind(g) == "shared"
    ]


def designed_events(probe: Probe) -> list[Event]:
    """Every threshold of every group of ≤ DESIGNED_MAX items, {novel ≥ 1} of a larger novel
    group, and with several groups the union {any watched item released}; none on a probe
    whose thresholds are searched."""
    if _searched_groups(probe):
        return []
    events = [
        Event(((g, c),))
        for g, items in probe.watched
        for c in range(1, (len(items) if len(items) <= DESIGNED_MAX else 1) + 1)
    ]
    if len(probe.watched) > 1:
        events.append(Event(tuple((g, 1) for g, _ in probe.watched)))
    return events


def searched_events(probe: Probe) -> list[Event]:
    """The family the pilot searches on a probe with a large shared group: every threshold of
    every group, and each threshold of a shared group joined with {novel ≥ 1} when the probe
    watches novel items."""
    searched = _searched_groups(probe)
    if not searched:
        return []
    events = [Event(((g, c),)) for g, items in probe.watched for c in range(1, len(items) + 1)]
    novel = [g for g, _ in probe.watched if probe.group_kind(g) == "novel"]
    if novel:
        events += [
            Event(((novel[0], 1), (g, c)))
            for g, items in searched
            for c in range(1, len(items) + 1)
        ]
    return events


@dataclass(frozen=True)
class Comparison:
    """One comparison of the audit: P_A[E] − e^ε·P_B[E] ≤ δ, tested on counts.

    Attributes:
        probe: the probe's name.
        counts: the event's counts on A's and B's runs.
        epsilon: the claimed ε.
        delta: the δ it is held to: min(claimed δ, the proof's share for the event).
        delta_claim: the claimed δ.
        alpha: level of each of its two one-sided bounds.
        searched: chosen by the pilot search (tested on the holdout runs).
        epsilon_claim: the claimed ε when ``epsilon`` is a step's share of it (the distinct
            count's GEM and count steps); None when it is the claim itself.
    """

    probe: str
    counts: EventCounts
    epsilon: float
    delta: float
    delta_claim: float
    alpha: float
    searched: bool = False
    epsilon_claim: float | None = None

    @property
    def lower(self) -> float:
        """p_lo − e^ε·q_hi."""
        return self.counts.hockey_stick_lower(self.epsilon, self.alpha)

    @property
    def failed(self) -> bool:
        """The mechanism exceeds the δ this comparison is held to (at the audit's level)."""
        return self.lower > self.delta

    @property
    def beyond_claim(self) -> bool:
        """It exceeds even the claimed (ε, δ)."""
        epsilon = self.epsilon if self.epsilon_claim is None else self.epsilon_claim
        return self.counts.hockey_stick_lower(epsilon, self.alpha) > self.delta_claim

    @property
    def epsilon_lower_bound(self) -> float:
        """ln((p_lo − δ)/q_hi): the ε this comparison shows at its δ."""
        return self.counts.epsilon_lower_bound(self.delta, self.alpha)

    @property
    def power(self) -> float:
        """P[it fails] were the observed rates the true ones (estimated power)."""
        return self.counts.power(self.epsilon, self.delta, self.alpha)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready, with the verdict."""
        return {
            "probe": self.probe,
            **asdict(self.counts),
            "epsilon": self.epsilon,
            "delta": self.delta,
            "alpha_per_bound": self.alpha,
            "searched": self.searched,
            "hockey_stick_lower": self.lower,
            "epsilon_lower_bound": self.epsilon_lower_bound,
            "estimated_power": self.power,
            "failed": self.failed,
            "beyond_claim": self.beyond_claim,
        }
