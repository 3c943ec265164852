"""spark_dp: user-level differential privacy on Apache Spark."""

__version__ = "0.1.0"
