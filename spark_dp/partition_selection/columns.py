"""Column names used inside the partition-selection pipelines.

The input columns come from :mod:`spark_dp.io` (``user_id``, ``item``). Every column that
holds a private statistic ends in ``_private``: it must never be written, logged or shown.
Only :data:`ITEM` leaves a job.
"""

from __future__ import annotations

from spark_dp.io import ITEM, USER_ID

__all__ = [
    "BIAS",
    "CAP_RANK",
    "DEGREE",
    "ITEM",
    "NEEDS_LOOP",
    "NOISY_WEIGHT",
    "USER_COUNT",
    "USER_ID",
    "USER_WEIGHT",
    "WEIGHT",
]

CAP_RANK = "cap_rank"
"""A pair's keyed rank among its user's distinct items (1 = kept first by every cap)."""

DEGREE = "degree"
"""d_u, the user's number of items after capping (and after removals in later rounds)."""

BIAS = "bias_private"
"""b(i) ∈ (0, 1] of MAD2R round 2 (1 = unbiased); derived from round-1 noisy weights."""

USER_WEIGHT = "user_weight_private"
"""w_b^u(i), the user's ℓ2-bounded weight on one of its items (UserWeights)."""

WEIGHT = "weight_private"
"""w(i), an item's weight before noise."""

NOISY_WEIGHT = "noisy_weight_private"
"""w̃(i) = w(i) + noise."""

USER_COUNT = "user_count_private"
"""n(i), the number of users holding an item (classic count thresholding)."""

NEEDS_LOOP = "needs_loop"
"""Whether a user's UserWeights needs the rescaling loop (computed per user, then dropped)."""
