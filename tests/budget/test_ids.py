"""Release ids, input identities and dataset ids."""

from __future__ import annotations

import os
import threading

from spark_dp.budget import default_dataset_id, input_identity, release_id
from spark_dp.budget.ids import _hadoop_listing, _listing

ARGS = ("distinct_count", "exact", {"epsilon": 1.0, "beta": 0.05}, "/data/x#abc", "f" * 32)


def test_release_id_is_a_stable_hash_of_what_determines_the_release():
    rid = release_id(*ARGS)
    assert rid == release_id(*ARGS) and len(rid) == 64
    assert rid == release_id(ARGS[0], ARGS[1], {"beta": 0.05, "epsilon": 1.0}, *ARGS[3:])
    changed = [
        ("partition_selection", *ARGS[1:]),
        (ARGS[0], "greedy", *ARGS[2:]),
        (*ARGS[:2], {"epsilon": 1.0, "beta": 0.1}, *ARGS[3:]),
        (*ARGS[:3], "/data/x#abd", ARGS[4]),
        (*ARGS[:4], "e" * 32),  # a fresh key: a new release
    ]
    assert len({rid, *(release_id(*a) for a in changed)}) == 6


def test_input_identity_follows_the_listing_and_opens_no_file(tmp_path):
    d = tmp_path / "pairs"
    d.mkdir()
    (d / "part-0.parquet").write_bytes(b"x" * 10)
    os.mkfifo(d / "part-1.parquet")  # opening a FIFO would block: the identity must not
    result = []
    t = threading.Thread(target=lambda: result.append(input_identity(str(d))), daemon=True)
    t.start()
    t.join(timeout=10)
    assert result, "input_identity opened a file"
    first = result[0]
    assert first.startswith(f"{d}#") and input_identity(f"{d}/") == first
    assert input_identity(f"file://{d}") == first
    (d / "part-0.parquet").write_bytes(b"y" * 11)  # rewritten input: another identity
    assert input_identity(str(d)) != first


def test_a_missing_input_has_an_identity_and_uris_are_kept():
    assert input_identity("/no/such/input").endswith("/no/such/input#absent")
    assert input_identity("s3a://bucket/pairs/") == "s3a://bucket/pairs"
    assert input_identity("hdfs:///data/pairs") == "hdfs:///data/pairs"


def test_default_dataset_id_is_the_canonical_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert default_dataset_id("data/words/") == str(tmp_path / "data" / "words")
    assert default_dataset_id("file:///data/words") == "/data/words"
    assert default_dataset_id("hdfs:///data/words/") == "hdfs:///data/words"


def test_uris_are_listed_through_hadoop(spark, tmp_path):
    d = tmp_path / "pairs"
    spark.createDataFrame([("u", "a")], "user_id string, item string").write.parquet(str(d))
    local = [(name, size) for name, size, _ in _listing(d)]
    hadoop = [(name, size) for name, size, _ in _hadoop_listing(spark, f"file://{d}")]
    assert hadoop == local and any(n.endswith(".parquet") for n, _ in local)
    assert input_identity("hdfs:///x", spark=None) == "hdfs:///x"
