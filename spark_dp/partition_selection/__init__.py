"""Private partition selection: release as many items as possible under user-level (ε, δ)-DP.

Users hold sets of items from an unbounded universe; neighbouring datasets add or remove one
whole user. Chen, Cohen-Addad, Epasto, Zadimoghaddam, "Scalable Private Partition Selection
via Adaptive Weighting" (ICML 2025; arXiv numbering differs), spec partition_selection.md.

Entry point: :func:`select_partitions` with :class:`PartitionSelectionParams`.

Modules (one concept each):

* :mod:`.capping`: uniform random Δ0 subsample per user.
* :mod:`.weighting`: Basic (1/√d) and Laplace (1/d) item weights.
* :mod:`.user_weights`: UserWeights (biased ℓ2 weights per user; vectorized pandas UDF).
* :mod:`.mad`: MAD weighting and the single-round MAD mechanism.
* :mod:`.thresholding`: noise + keep w̃ ≥ ρ + drop the noise (Spark and driver).
* :mod:`.basic`, :mod:`.dp_sips`, :mod:`.mad2r`: the weight-and-threshold mechanisms.
* :mod:`.classic`: count thresholding as Google's DP library / PipelineDP offer it.
* :mod:`.oracles`: sequential in-memory PolicyGaussian and GreedyUpdate (NOT scalable).
"""

from spark_dp.partition_selection.basic import basic, basic_laplace
from spark_dp.partition_selection.classic import count_thresholding
from spark_dp.partition_selection.dp_sips import dp_sips
from spark_dp.partition_selection.mad import mad, max_adaptive_degree
from spark_dp.partition_selection.mad2r import mad2r
from spark_dp.partition_selection.oracles import greedy_update, policy_gaussian
from spark_dp.partition_selection.params import ALGORITHMS, PartitionSelectionParams
from spark_dp.partition_selection.result import RoundResult, Selection
from spark_dp.partition_selection.select import run_selection, select_partitions

__all__ = [
    "ALGORITHMS",
    "PartitionSelectionParams",
    "RoundResult",
    "Selection",
    "basic",
    "basic_laplace",
    "count_thresholding",
    "dp_sips",
    "greedy_update",
    "mad",
    "mad2r",
    "max_adaptive_degree",
    "policy_gaussian",
    "run_selection",
    "select_partitions",
]
