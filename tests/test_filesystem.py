"""spark_dp.filesystem on a classic session (Hadoop FileSystem through the JVM); the Spark
Connect path (pyarrow.fs on the client) is tested in tests/connect."""

from __future__ import annotations

import pytest

from spark_dp import filesystem
from spark_dp.errors import ConfigError
from tests.filesystem_checks import check_makedirs_and_rename


def test_exists_read_delete_on_local_paths(spark, tmp_path):
    folder = tmp_path / "state"
    (folder / "sub").mkdir(parents=True)
    doc = folder / "meta.json"
    doc.write_text('{"round": 3, "name": "ε"}', encoding="utf-8")
    for path in (str(doc), f"file://{doc}"):
        assert filesystem.exists(spark, path)
        assert filesystem.read_text(spark, path) == '{"round": 3, "name": "ε"}'
    assert not filesystem.exists(spark, str(folder / "missing"))
    filesystem.delete(spark, str(folder / "missing"))  # absent: nothing to do
    filesystem.delete(spark, str(folder))
    assert not folder.exists()


def test_hadoop_style_uri(spark, tmp_path):
    doc = tmp_path / "x.json"
    doc.write_text("[1, 2]", encoding="utf-8")
    uri = f"file:{doc}"  # Hadoop's short form of a local URI
    assert filesystem.exists(spark, uri)
    assert filesystem.read_text(spark, uri) == "[1, 2]"


def test_makedirs_and_rename(spark, tmp_path):
    check_makedirs_and_rename(spark, tmp_path)


def test_unreachable_scheme_on_the_client_is_a_config_error():
    with pytest.raises(ConfigError, match="cannot be reached from this Spark Connect client"):
        filesystem._arrow("nosuchscheme://bucket/state")
