"""The baseline datasets: Zipf user-item pairs at about 1M and 10M pairs.

The baseline (read Parquet, groupBy(item).count(), write Parquet) is timed by the harness on
every dataset a case uses; registering these two makes sure the reference sizes of the
foundation issue are always in the table.
"""

from bench.harness import Dataset, register_dataset

# mean_items=36 draws per user with exponent 1.3 gives ≈ 21 distinct words per user.
ZIPF_SMALL = Dataset("zipf-100k", "zipf", {"n_users": 4_800, "mean_items": 36.0, "exponent": 1.3})
ZIPF_1M = Dataset("zipf-1m", "zipf", {"n_users": 48_000, "mean_items": 36.0, "exponent": 1.3})
ZIPF_10M = Dataset("zipf-10m", "zipf", {"n_users": 480_000, "mean_items": 36.0, "exponent": 1.3})

register_dataset(ZIPF_SMALL, scales=("quick",))
register_dataset(ZIPF_1M)
register_dataset(ZIPF_10M)
