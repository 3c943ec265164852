"""The registry: every algorithm once, data-free plans, and dispatch by name."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from spark_dp.contribution_bounding import (
    ALGORITHMS,
    REGISTRY,
    BoundingParams,
    BoundingPlan,
    BoundingResult,
    api,
    bound_contributions,
    plan_bounding,
)
from spark_dp.contribution_bounding.plan import RunContext
from spark_dp.contribution_bounding.prepare import Prepared
from spark_dp.dp.registry import Algorithm, Registry
from spark_dp.errors import ParameterError
from spark_dp.jobs.cli_args import build_parser
from spark_dp.jobs.contribution_bounding import SPEC
from spark_dp.randomness import Randomness
from tests.contribution_bounding.helpers import key_seed

NAMES = (
    "proposal",
    "greedy",
    "greedy-dup",
    "bias-mitigating",
    "ilp",
    "ilp-dup",
    "dp-mf",
    "bias-sweep",
)


def _params(name: str, **kw: Any) -> BoundingParams:
    schedule = {"iterations": 4, "batch_size": 2} if name == "dp-mf" else {}
    return BoundingParams(algorithm=name, **{"max_contributions": 2, **schedule, **kw})


def test_every_name_resolves_and_every_list_is_the_registry() -> None:
    assert REGISTRY.names == NAMES == ALGORITHMS
    assert len(REGISTRY) == len(NAMES)
    (action,) = [a for a in build_parser(SPEC)._actions if a.dest == "algorithm"]
    assert tuple(action.choices or ()) == NAMES  # --algorithm choices
    for name in NAMES:
        algorithm = REGISTRY[name]
        assert algorithm.name == name and name in REGISTRY
        assert algorithm.summary in str(action.help)  # --algorithm help


@pytest.mark.parametrize(
    ("name", "hint"),
    [("greedy_dup", "greedy-dup"), ("ilpdup", "ilp-dup"), ("proposals", "proposal")],
)
def test_an_unknown_name_errors_with_a_hint(name: str, hint: str) -> None:
    with pytest.raises(ParameterError, match=f"did you mean '{hint}'"):
        REGISTRY[name]
    with pytest.raises(ParameterError, match=f"did you mean '{hint}'"):
        plan_bounding(BoundingParams(algorithm=name, max_contributions=1))


@pytest.mark.parametrize(
    ("name", "order", "on_driver", "duplicates", "user_state", "max_contributions_required"),
    [
        ("proposal", "hash", False, False, True, True),
        ("greedy", "hash", False, False, True, True),
        ("greedy-dup", "hash", False, True, True, True),
        ("ilp", "size-hash", True, False, True, True),  # the driver scans [B]'s sort
        ("ilp-dup", "size-hash", True, True, True, True),
        # k measured afterwards (docs/design/bounding.md#min-sep)
        ("dp-mf", "size-hash", True, False, False, False),
        ("bias-sweep", "size-hash", True, False, False, True),
    ],
)
def test_plans_are_decided_from_the_parameters_alone(
    name: str,
    order: str,
    on_driver: bool,
    duplicates: bool,
    user_state: bool,
    max_contributions_required: bool,
) -> None:
    params = _params(name, order="hash", max_rounds=7)
    plan = REGISTRY[name].plan(params)
    assert (plan.algorithm, plan.order, plan.on_driver) == (name, order, on_driver)
    assert (plan.duplicates, plan.user_state) == (duplicates, user_state)
    assert plan.max_contributions_required == max_contributions_required
    assert plan.interleave is None and plan_bounding(params) == plan
    if not on_driver:
        assert plan.rounds is not None and plan.rounds.max_rounds == 7
    assert plan.order_plan(5).to_dict() == {"order": order, "seed": 5}


def test_the_bias_mitigating_plan_carries_its_interleave() -> None:
    params = _params("bias-mitigating", size_threshold=1, small_block=2, large_block=3)
    plan = REGISTRY["bias-mitigating"].plan(params)
    assert plan.interleave == (1, 2, 3) and not plan.on_driver and plan.order == "size-hash"
    assert plan.order_plan(0).to_dict()["interleave"] == {"u_thr": 1, "c1": 2, "c2": 3}


def test_bound_contributions_dispatches_to_the_named_algorithm(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each name runs its own registry entry with its own plan; the report names it by its
    registry summary. Preparation is stubbed: no Spark job runs."""
    ran: list[tuple[str, BoundingPlan]] = []
    prepared: list[tuple[str, int | None]] = []

    def recorder(name: str) -> Any:
        def run(prep: Prepared, plan: BoundingPlan, ctx: RunContext) -> BoundingResult:
            ran.append((name, plan))
            return BoundingResult(prep.inc, None, {"ran": name})

        return run

    def fake_prepare(
        incidences: DataFrame, *, plan: Any, max_contributions: int | None, **_: Any
    ) -> Any:
        prepared.append((plan.order, max_contributions))
        return Prepared(incidences, incidences, incidences, 1, 2, 3, 0, 0)

    recording = Registry(
        "contribution bounding",
        [Algorithm(a.name, a.summary, a.plan, recorder(a.name)) for a in REGISTRY],
    )
    monkeypatch.setattr(api, "REGISTRY", recording)
    monkeypatch.setattr(api, "prepare", fake_prepare)
    inc = spark.createDataFrame([("r1", "u1")], "record_id string, user_id string")
    for name in NAMES:
        params = _params(name, max_contributions=None if name == "dp-mf" else 2)
        res = bound_contributions(
            inc, params, randomness=Randomness.create(5).bind("test"), validate=False
        )
        got, plan = ran[-1]
        assert got == name and plan.algorithm == name and plan == REGISTRY[name].plan(params)
        assert res.summary == {
            "algorithm": name,
            "order": plan.order_plan(key_seed(5)).to_dict(),
            "input": {
                "n_records": 1,
                "n_incidences": 2,
                "n_users": 3,
                "zero_cap_users": 0,
                "heavy_users": 0,
            },
            "ran": name,
            "seed": key_seed(5),
        }
        summary = REGISTRY[name].summary
        assert res.description == f"{summary}; order {plan.order}; finish driver-greedy"
    assert [name for name, _ in ran] == list(NAMES)
    assert prepared[NAMES.index("dp-mf")] == ("size-hash", 0)  # no capacities: k measured
    assert prepared[NAMES.index("proposal")] == ("size-hash", 2)
