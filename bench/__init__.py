"""Benchmark harness of spark_dp (``make bench``); see bench/harness.py."""
