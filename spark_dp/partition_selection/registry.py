"""The partition-selection algorithms: the one list the job, ``calibrate``, the audit and the
bench read (see :mod:`spark_dp.dp.registry`).

Each entry's ``plan(params)`` calibrates every round from the public parameters without reading
data; ``run(pairs, plan, randomness, timer=...)`` runs the algorithm and returns a
:class:`~spark_dp.partition_selection.result.Selection`. To add an algorithm, write its module
(a ``plan`` and a ``run``) and add one entry here; CONTRIBUTING.md walks through an example.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spark_dp.dp.registry import Algorithm, Registry
from spark_dp.partition_selection import basic, calibration, classic, dp_sips, mad, mad2r
from spark_dp.partition_selection.result import SelectionPlan

if TYPE_CHECKING:
    from spark_dp.partition_selection.params import PartitionSelectionParams

__all__ = ["ALGORITHMS", "REGISTRY"]

REGISTRY: Registry[PartitionSelectionParams, SelectionPlan] = Registry(
    "partition-selection",
    [
        Algorithm(
            "basic", "w(i) = Σ 1/√d_u, Gaussian noise (Gopi et al. 2020)", basic.plan, basic.run
        ),
        Algorithm(
            "basic-laplace",
            "w(i) = Σ 1/d_u, Laplace noise",
            basic.plan_laplace,
            basic.run_laplace,
        ),
        Algorithm(
            "dp-sips",
            "Basic over several rounds with a split budget, found items removed",
            dp_sips.plan,
            dp_sips.run,
        ),
        Algorithm("mad", "one round of adaptive reweighting (MAD)", mad.plan, mad.run),
        Algorithm(
            "mad2r",
            "two MAD rounds, round 2 biased by round 1's noisy weights",
            mad2r.plan,
            mad2r.run,
        ),
        Algorithm(
            "truncated-geometric",
            "count thresholding with the optimal keep probabilities (Desfontaines et al. 2022)",
            classic.planner(calibration.TruncatedGeometric),
            classic.run_keep_probability,
        ),
        Algorithm(
            "laplace-thresholding",
            "count thresholding with Laplace noise",
            classic.planner(calibration.LaplaceThresholding),
            classic.noisy_count_runner(calibration.LaplaceThresholding),
        ),
        Algorithm(
            "gaussian-thresholding",
            "count thresholding with Gaussian noise",
            classic.planner(calibration.GaussianThresholding),
            classic.noisy_count_runner(calibration.GaussianThresholding),
        ),
    ],
)

ALGORITHMS: tuple[str, ...] = REGISTRY.names
"""The algorithm names, in registry order (``--algorithm`` choices)."""
