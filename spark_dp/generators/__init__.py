"""Synthetic data generators (deterministic given a seed).

* :mod:`~spark_dp.generators.hypergraphs`: multi-owner records (record_id, user_id):
  probabilistic regular graphs (Poisson arity) and skewed graphs (preferential attachment),
  docs/design/bounding.md#generators.
* :mod:`~spark_dp.generators.user_items`: user item sets (user_id, item): Zipf-like
  vocabularies with a heavy tail of singletons, and the heavy/light example of
  docs/design/selection.md#heavy-light.
* :mod:`~spark_dp.generators.spark_frames`: the same as Spark DataFrames, generated in
  parallel chunks whose seeds depend only on (seed, chunk), never on partitioning.
"""

from spark_dp.generators.hypergraphs import (
    GraphSample,
    regular_hypergraph,
    skewed_hypergraph,
    skewed_hypergraph_exact,
)
from spark_dp.generators.user_items import heavy_light_user_items, zipf_user_items

__all__ = [
    "GraphSample",
    "heavy_light_user_items",
    "regular_hypergraph",
    "skewed_hypergraph",
    "skewed_hypergraph_exact",
    "zipf_user_items",
]
