"""Packaging for spark_dp (``pip install -e .`` or ``python -m build``)."""

from __future__ import annotations

import re
from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent
VERSION = re.search(
    r'^__version__ = "([^"]+)"', (HERE / "spark_dp" / "__init__.py").read_text(), re.M
).group(1)

TEST_CORE = [
    "pytest>=7",
    "chispa>=0.9",
    "hypothesis>=6.80",
    "mpmath>=1.3",
    # an independent discrete-Laplace sampler the exact samplers are tested against
    "opendp>=0.10",
    # tests/test_docs.py builds the wheel without network (--no-build-isolation)
    "wheel>=0.40",
]

# graphframes-py pinned to the JVM code of the jar (0.12 calls JVM methods that 0.11 lacks), with
# the two imports it needs but does not declare: numpy (through pyspark.ml) and, before Python
# 3.12, typing_extensions
GRAPHFRAMES = [
    "graphframes-py==0.11.0",
    "numpy>=1.23",
    "typing_extensions>=4.0; python_version < '3.12'",
]

setup(
    name="spark_dp",
    version=VERSION,
    description="User-level differential privacy on Apache Spark: partition selection, "
    "contribution bounding for multi-owner records, person-level distinct count.",
    long_description=(HERE / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.10",
    packages=find_packages(include=["spark_dp", "spark_dp.*"]),
    package_data={"spark_dp": ["py.typed", "log4j2.properties"]},
    install_requires=[
        "pyspark>=3.5,<5",
        "numpy>=1.23",
        "scipy>=1.10",
        # pandas UDFs need pandas and pyarrow; PySpark warns on pandas 3.
        "pandas>=1.5,<3",
        "pyarrow>=11",
        "pyyaml>=6",
        # the keyed PRF of spark_dp.randomness (AES-256 on executors and the driver)
        "cryptography>=41",
        # spark_dp.budget: the budget store (SQLite built in; any SQLAlchemy database) and the
        # tight PLD/RDP accountant for Gaussian releases
        "sqlalchemy>=2.0",
        "dp-accounting>=0.5",  # DiscreteLaplaceDpEvent (pure-ε steps in the PLD accountant)
    ],
    extras_require={
        # what the tests themselves import (make test-pythons installs only this)
        "test-core": TEST_CORE,
        "test": [
            *TEST_CORE,
            # make test runs the suite in two processes (WORKERS in the Makefile)
            "pytest-xdist>=3.5",
            "ruff>=0.5",
            "mypy>=1.10",
            "pandas-stubs",
            "types-PyYAML",
            # notebooks/quickstart.ipynb is executed by the tests
            "nbclient>=0.7",
            "nbformat>=5",
            "ipykernel>=6",
            "matplotlib>=3.6",
            # the budget store's PostgreSQL tests: the driver, and a PostgreSQL server built
            # into a wheel (started and stopped by pid by tests/budget/postgres.py)
            "psycopg[binary]>=3.1",
            "pgserver>=0.1.4",
            # GraphFrames' Python side; its JVM jar (make graphframes-jars) is added to the
            # session of tests/graphframes (make test-graphframes)
            *GRAPHFRAMES,
        ],
        # `--components graphframes` (with the jar on the classpath,
        # docs/operations/cluster.md#graphframes)
        "graphframes": GRAPHFRAMES,
        # a PostgreSQL budget store (--budget-store postgresql://...)
        "postgres": ["psycopg[binary]>=3.1"],
        # Spark Connect clients (make test-connect starts a local server: pyspark >= 4)
        "connect": ["pyspark[connect]>=3.5,<5"],
        # the documentation site (make docs; make lint builds it with --strict)
        "docs": ["mkdocs>=1.6,<2"],
        # running the notebooks by hand
        "notebooks": ["jupyterlab>=4", "matplotlib>=3.6"],
        # `make bench`: the PipelineDP peer comparison and the TPC-H generator
        "bench": ["pipeline-dp>=0.2", "tpchgen-cli>=1"],
    },
    entry_points={"console_scripts": ["spark-dp=spark_dp.cli:main"]},
    classifiers=[
        "Programming Language :: Python :: 3",
        "License :: OSI Approved :: Apache Software License",
        "Topic :: Security",
    ],
)
