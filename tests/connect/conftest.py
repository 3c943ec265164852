"""Spark Connect fixtures: the ``spark`` of these tests is a Spark Connect session.

``SparkSession.builder.remote("local[2]")`` starts a local Spark Connect server inside the test
process (pyspark 4's bundled server; pip extra ``[connect]`` for the client's gRPC libraries)
and connects to it. A process cannot hold a classic session and a Connect client at once, so
these tests run in their own pytest process (``make test-connect``); tests/conftest.py leaves
this folder out of the main run.
"""

from __future__ import annotations

import warnings

import pytest

from tests.support.spark_session import session_builder


@pytest.fixture(scope="session")
def spark():
    """The Spark Connect session of the run (overrides the classic one of tests/conftest.py)."""
    try:
        import grpc  # noqa: F401
        from pyspark.sql.connect.session import SparkSession  # noqa: F401
    except ImportError as exc:
        pytest.fail(f"Spark Connect client missing ({exc}): pip install -e '.[connect]'")
    builder = session_builder(connect=True)
    with warnings.catch_warnings():  # the server takes the core settings at start; the
        warnings.simplefilter("ignore", UserWarning)  # client then warns it cannot set them
        session = builder.getOrCreate()
    assert getattr(session, "_jsparkSession", None) is None, "not a Spark Connect session"
    yield session
    session.stop()


@pytest.fixture(scope="session")
def server(spark):
    """The local server's SparkContext, for the tests' own checks of the server's state (the
    library never sees it: its session is the Connect client)."""
    from pyspark import SparkContext

    sc = SparkContext._active_spark_context
    assert sc is not None
    return sc
