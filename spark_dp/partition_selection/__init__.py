"""Private partition selection: release as many items as possible under user-level (ε, δ)-DP.

Users hold sets of items from an unbounded universe; neighbouring datasets add or remove one
whole user. Chen, Cohen-Addad, Epasto, Zadimoghaddam, "Scalable Private Partition Selection
via Adaptive Weighting" (ICML 2025; arXiv numbering differs), docs/design/selection.md.

Entry point: :func:`select_partitions` with :class:`PartitionSelectionParams`; the algorithms
are listed once, in :data:`~.registry.REGISTRY`.

Modules (one concept each):

* :mod:`.registry`: the algorithms, name → (plan, run).
* :mod:`.calibration`: thresholds ρ, σ per round, MAD constants (driver-only maths).
* :mod:`.capping`: uniform random Δ0 subsample per user.
* :mod:`.weighting`: Basic (1/√d) and Laplace (1/d) item weights.
* :mod:`.user_weights`: UserWeights (biased ℓ2 weights per user; vectorized pandas UDF).
* :mod:`.mad`: MAD weighting and the single-round MAD mechanism.
* :mod:`.thresholding`: noise + keep w̃ ≥ ρ + drop the noise (Spark and driver).
* :mod:`.basic`, :mod:`.dp_sips`, :mod:`.mad2r`: the weight-and-threshold mechanisms.
* :mod:`.classic`: count thresholding as Google's DP library / PipelineDP offer it.
* :mod:`.oracles`: sequential in-memory PolicyGaussian and GreedyUpdate (NOT scalable).
* :mod:`.auto`: ``max_contributions='auto'``, Δ0 chosen privately (docs/design/tuning.md);
  :mod:`.preview`: :func:`preview_partitions`.
"""

from spark_dp.partition_selection.params import PartitionSelectionParams, PreviewParams
from spark_dp.partition_selection.registry import ALGORITHMS, REGISTRY
from spark_dp.partition_selection.result import RoundResult, Selection, SelectionPlan
from spark_dp.partition_selection.select import (
    calibration_rows,
    calibration_table,
    plan_selection,
    preview_partitions,
    select_partitions,
)

__all__ = [
    "ALGORITHMS",
    "REGISTRY",
    "PartitionSelectionParams",
    "PreviewParams",
    "RoundResult",
    "Selection",
    "SelectionPlan",
    "calibration_rows",
    "calibration_table",
    "greedy_update",
    "plan_selection",
    "policy_gaussian",
    "preview_partitions",
    "select_partitions",
]


_ORACLES = ("greedy_update", "policy_gaussian")


def __getattr__(name: str) -> object:
    """The in-memory oracles load on first use (pandas): a job's ``--help`` needs neither."""
    if name in _ORACLES:
        from spark_dp.partition_selection import oracles

        return getattr(oracles, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_ORACLES})
