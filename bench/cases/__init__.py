"""Benchmark cases; every module here is imported by the harness and registers its cases."""
