"""Events, comparisons and the pilot search on synthetic outcomes (no Spark), and the claim
checks made before any run."""

from __future__ import annotations

import numpy as np
import pytest

from spark_dp.audit.events import Event, Outcomes, designed_events, four_ways, searched_events
from spark_dp.audit.probes import Probe, bias_probe, epsilon_probe, novel_probes
from spark_dp.audit.runner import evaluate
from spark_dp.audit.statistics import Confidence
from spark_dp.audit.targets import Claim, Settings, build_target, step_problems

CLAIM = Claim(epsilon=1.0, delta=0.2, delta_novel=0.1, delta_event=0.1)


def mixed_probe(runs: int) -> Probe:
    base = {"f0": ["x"], "f1": ["x"]}
    return Probe("mixed", base, ("x", "n0"), (("x", ("x",)), ("novel", ("n0",))), runs, "test")


def test_event_holds_on_the_union_of_its_thresholds():
    counts = {"y": np.array([0, 2, 5, 1]), "novel": np.array([0, 0, 0, 1])}
    assert Event((("y", 2),)).holds(counts).tolist() == [False, True, True, False]
    union = Event((("novel", 1), ("y", 5)))
    assert union.holds(counts).tolist() == [False, False, True, True]
    assert union.describe() == "novel ≥ 1 or y ≥ 5"


def test_event_kinds_follow_what_the_canary_shares():
    probe = mixed_probe(10)
    assert probe.novel == frozenset({"n0"})
    assert Event((("novel", 1),)).kind(probe) == "novel"
    assert Event((("x", 1),)).kind(probe) == "shared"
    assert Event((("novel", 1), ("x", 1))).kind(probe) == "mixed"
    # the δ each kind is held to: min(claimed δ, the proof's share)
    assert CLAIM.delta_for("novel") == 0.1
    assert CLAIM.delta_for("shared") == 0.1
    assert CLAIM.delta_for("mixed") == pytest.approx(0.2)
    assert Claim(1.0, 0.15, 0.1, 0.1).delta_for("mixed") == 0.15


def test_designed_events_cover_every_threshold_and_the_union():
    probe = mixed_probe(10)
    assert [e.describe() for e in designed_events(probe)] == [
        "x ≥ 1",
        "novel ≥ 1",
        "x ≥ 1 or novel ≥ 1",
    ]
    assert searched_events(probe) == []
    width = epsilon_probe(3, 2, 10)
    assert [e.describe() for e in designed_events(width)] == ["x ≥ 1", "x ≥ 2"]


def test_large_groups_are_searched_not_designed():
    probe = bias_probe(sigma1=47.0, rho2=3.43, c_lb=1.0, runs=100)
    ((group, items),) = probe.watched
    assert group == "y" and len(items) > 4
    assert designed_events(probe) == []
    assert len(searched_events(probe)) == len(items)


def test_four_ways_reads_the_pair_both_ways():
    ways = four_ways("e", 30, 100, 10, 80)
    assert [(w.numerator, w.hits_numerator, w.runs_numerator) for w in ways] == [
        ("D'", 30, 100),
        ("D", 10, 80),
        ("D", 70, 80),
        ("D'", 70, 100),
    ]
    assert ways[2].event == "not (e)" and ways[2].hits_denominator == 70


def outcomes_with(probe: Probe, rng, p_base: dict, p_neighbour: dict) -> Outcomes:
    def draw(rates):
        return {g: rng.binomial(len(items), rates[g], probe.runs) for g, items in probe.watched}

    return Outcomes(probe, draw(p_base), draw(p_neighbour))


def test_a_mechanism_at_its_claim_passes_and_one_beyond_it_fails():
    rng = np.random.default_rng(3)
    probe = mixed_probe(20_000)
    # novel rate exactly δ_threshold, x released with p = e^ε·q + δ_noise: at the claim
    q = 0.05
    tight = outcomes_with(probe, rng, {"x": q, "novel": 0.0}, {"x": np.e * q + 0.1, "novel": 0.1})
    comparisons, confidence = evaluate([tight], CLAIM, Confidence(1e-3))
    assert confidence.comparisons == len(comparisons) == 12
    assert not any(c.failed for c in comparisons)
    # the novel rate at 1.5 times its share fails, beyond the share but not beyond the claim
    loose = outcomes_with(probe, rng, {"x": q, "novel": 0.0}, {"x": q, "novel": 0.15})
    comparisons, _ = evaluate([loose], CLAIM, Confidence(1e-3))
    failed = [c for c in comparisons if c.failed]
    assert failed and all(c.counts.event == "novel ≥ 1" for c in failed)
    assert not any(c.beyond_claim for c in failed)
    assert all(c.power > 0.9 for c in failed)


def test_the_pilot_search_picks_the_revealing_threshold_and_tests_it_on_the_rest():
    rng = np.random.default_rng(4)
    probe = bias_probe(sigma1=47.0, rho2=3.43, c_lb=1.0, runs=1000)
    ((_, ys),) = probe.watched
    # D releases each y with 0.5, D' with 0.75: the count of released y's moves by 3.5 sd
    outcomes = outcomes_with(probe, rng, {"y": 0.5}, {"y": 0.75})
    comparisons, confidence = evaluate([outcomes], CLAIM, Confidence(1e-3))
    (searched,) = comparisons
    assert searched.searched and confidence.comparisons == 1
    assert searched.counts.runs_numerator == 700  # the holdout: 70% of the runs
    assert searched.failed and searched.beyond_claim
    cut = int(searched.counts.event.split("≥ ")[1].rstrip(")"))
    assert 0.5 * len(ys) < cut <= 0.75 * len(ys) + 2


def test_novel_probes_search_the_size_of_the_canary():
    sizes = [len(p.canary) for p in novel_probes(cap=2, argmax_t=2, runs=10)]
    assert sizes == [1, 2, 20]
    assert [len(p.canary) for p in novel_probes(cap=5, argmax_t=3, runs=10)] == [1, 3, 5, 50]


def test_a_statement_beyond_the_claim_fails_before_any_run():
    target = build_target("dp-sips", Settings(overrides={"split": (0.5, 0.5)}))
    assert target.claim_problems() == []
    assert step_problems(target.plan.steps, 1.0, 0.1) == [
        "the steps spend δ = 0.2, more than the claimed 0.1"
    ]
    assert step_problems(target.plan.steps, 0.9, 0.2) == [
        "the steps spend ε = 1, more than the claimed 0.9"
    ]
