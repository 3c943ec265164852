"""Tests of spark_dp.distinct_count (person-level DP distinct count)."""
