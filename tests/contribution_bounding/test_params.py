"""Parameter validation: clear errors naming the parameter and the fix."""

from __future__ import annotations

from typing import Any

import pytest

from spark_dp.config import resolve_params
from spark_dp.contribution_bounding import (
    BoundingParams,
    ContributionBoundingParams,
    plan_bounding,
)
from spark_dp.errors import ParameterError
from spark_dp.jobs.contribution_bounding import SPEC


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_contributions": -1}, "max_contributions must be an integer >= 0, got -1"),
        ({"algorithm": "greedy", "order": "per-user"}, "only defined for algorithm 'proposal'"),
        ({"algorithm": "greedy-dup", "finish": "none"}, "defined at exhaustion"),
        ({"algorithm": "bias-mitigating", "order": "hash"}, "--order size-hash"),
        ({"algorithm": "dp-mf"}, "--iterations T and --batch-size B"),
        ({"order": "sizehash"}, "did you mean 'size-hash'"),
        ({"finish": "driver"}, "finish must be one of"),
        ({"max_rounds": 0}, "max_rounds must be an integer >= 1"),
        ({"salt_buckets": 1}, "salt_buckets must be an integer >= 2"),
        ({"small_block": 0}, "small_block must be an integer >= 1"),
    ],
)
def test_bad_parameters_are_named(kwargs: dict[str, Any], message: str) -> None:
    # each parameter checks itself when built, the algorithm's plan what depends on it: both
    # before any data is read
    with pytest.raises(ParameterError, match=message):
        plan_bounding(BoundingParams(**kwargs))


def test_spec_spellings_are_accepted_and_canonicalized() -> None:
    p = BoundingParams(order="size_hash", finish="driver_greedy", max_contributions=0)
    assert (p.order, p.finish, p.max_contributions) == ("size-hash", "driver-greedy", 0)
    assert plan_bounding(BoundingParams(algorithm="greedy-dup")).duplicates


def test_job_parameters_come_from_config_then_command_line() -> None:
    p = resolve_params(
        ContributionBoundingParams,
        {"max_contributions": 2, "order": "hash", "max-rounds": 10},
        {"max_contributions": 4, "order": None},
    )
    assert (p.max_contributions, p.order, p.max_rounds) == (4, "hash", 10)
    with pytest.raises(ParameterError, match="work_dir must be a path"):
        ContributionBoundingParams(work_dir=" ")


def test_job_parameters_need_a_bound_unless_the_algorithm_measures_it() -> None:
    """The job refuses to run without a bound or --capacities, except dp-mf
    (docs/design/bounding.md#min-sep), whose bound k is measured afterwards; the check is the job's
    plan, before Spark starts."""
    with pytest.raises(ParameterError, match="pass the contribution bound"):
        SPEC.plan(ContributionBoundingParams())
    assert SPEC.plan(ContributionBoundingParams(capacities="caps")).params.max_contributions is None
    p = ContributionBoundingParams(algorithm="dp-mf", iterations=4, batch_size=2)
    assert p.max_contributions is None and p.capacities is None
    assert SPEC.plan(p).algorithm == "dp-mf"


def test_the_weighted_global_order_needs_the_weights_table_before_spark() -> None:
    """``--order weighted-global`` without ``--record-weights`` is refused with the other flag
    checks (data-free, before Spark starts and before a work directory is made), naming both
    flags; with the table it is accepted."""
    with pytest.raises(ParameterError, match="--order weighted-global needs --record-weights"):
        ContributionBoundingParams(max_contributions=2, order="weighted-global")
    p = ContributionBoundingParams(max_contributions=2, order="weighted_global", record_weights="w")
    assert p.order == "weighted-global"
