"""Input identities, requests, release ids, dataset ids and the library's binding rule
(spark_dp.release_ids)."""

from __future__ import annotations

import os
import shutil

import pytest

from spark_dp import release_ids as ids_module
from spark_dp.errors import ParameterError
from spark_dp.io import ContentDigest
from spark_dp.randomness import Randomness
from spark_dp.release_ids import (
    bind_release,
    default_dataset_id,
    input_identity,
    release_id,
    run_identity,
)

KEY = "f" * 32
DIGEST = ContentDigest("input", KEY, "a" * 32)
ARGS = dict(
    job="distinct_count",
    algorithm="exact",
    arguments={"epsilon": 1.0, "beta": 0.05, "item_col": "item"},
    digests=[DIGEST],
    key_fingerprint=KEY,
    inputs={"input": "/data/words#0123"},
)


def test_release_id_is_a_stable_hash_of_what_determines_the_release():
    rid = release_id(**ARGS)
    assert rid == release_id(**ARGS) and len(rid) == 64
    reordered = {**ARGS, "arguments": {"item_col": "item", "beta": 0.05, "epsilon": 1.0}}
    assert rid == release_id(**reordered)
    changed = [
        {"job": "partition_selection"},
        {"algorithm": "greedy"},
        {"arguments": {"epsilon": 1.0, "beta": 0.1, "item_col": "item"}},
        {"arguments": {"epsilon": 1.0, "beta": 0.05, "item_col": "item2"}},
        {"digests": [ContentDigest("input", KEY, "b" * 32)]},  # other rows
        {"digests": [ContentDigest("capacities", KEY, "a" * 32)]},  # another table
        {"digests": []},
        {"key_fingerprint": "e" * 32},  # another key: a new release
        {"inputs": {"input": "/data/copy#0123"}},  # the same rows elsewhere: another request
        {"inputs": {"input": "/data/words#4567"}},  # a rewritten listing
        {"inputs": None},  # a library call (no input identity)
    ]
    assert len({rid, *(release_id(**{**ARGS, **c}) for c in changed)}) == len(changed) + 1


def test_the_compat_version_enters_every_id(monkeypatch):
    rid = release_id(**ARGS)
    identity = run_identity(job="j", algorithm=None, arguments={}, key_fingerprint=KEY, inputs={})
    monkeypatch.setattr(ids_module, "RELEASE_COMPAT_VERSION", ids_module.RELEASE_COMPAT_VERSION + 1)
    assert release_id(**ARGS) != rid
    assert run_identity(job="j", algorithm=None, arguments={}, key_fingerprint=KEY,
                        inputs={}) != identity  # fmt: skip


def test_one_digest_per_table():
    with pytest.raises(ValueError, match="one digest per table"):
        release_id(**{**ARGS, "digests": [DIGEST, DIGEST]})


def test_the_run_identity_changes_with_each_part():
    base = dict(job="j", algorithm="a", arguments={"x": 1}, key_fingerprint=KEY,
                inputs={"input": "/d#1"})  # fmt: skip
    ident = run_identity(**base)
    others = [{"job": "k"}, {"algorithm": "b"}, {"arguments": {"x": 2}}, {"key_fingerprint": "0"},
              {"inputs": {"input": "/e#1"}}, {"inputs": {"input": "/d#2"}},
              {"inputs": {"input": "/d#1", "capacities": "/c#1"}}]  # fmt: skip
    assert len({ident, *(run_identity(**{**base, **o}) for o in others)}) == len(others) + 1


def test_the_input_identity_is_metadata_location_and_listing(tmp_path):
    """Where a table is and what its files look like: another location, a file added, renamed
    or resized, or a new modification time is another identity; no file is opened."""
    data = tmp_path / "data"
    data.mkdir()
    part = data / "part-0.parquet"
    part.write_bytes(b"x" * 10)
    (data / "_SUCCESS").write_bytes(b"")  # skipped, as Spark's readers skip it
    first = input_identity(str(data))
    assert first.startswith(f"{data}#") and input_identity(str(data) + "/") == first
    (data / ".part-0.parquet.crc").write_bytes(b"c")
    assert input_identity(str(data)) == first  # hidden files do not count
    st = part.stat()
    part.write_bytes(b"y" * 10)  # same size, new content: the listing cannot see it ...
    os.utime(part, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert input_identity(str(data)) == first  # ... the content digest does (release id)
    os.utime(part, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    touched = input_identity(str(data))
    part.write_bytes(b"y" * 11)
    resized = input_identity(str(data))
    copy = tmp_path / "copy"
    shutil.copytree(data, copy)
    assert len({first, touched, resized, input_identity(str(copy))}) == 4
    assert input_identity(str(tmp_path / "nope")).endswith("#absent")
    assert input_identity("hdfs:///data/words/") == "hdfs:///data/words"


def test_default_dataset_id_is_the_canonical_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert default_dataset_id("data/words/") == str(tmp_path / "data" / "words")
    assert default_dataset_id("file:///data/words") == "/data/words"
    assert default_dataset_id("hdfs:///data/words/") == "hdfs:///data/words"


def _bind(randomness, digests, tables=("pairs",)):
    return bind_release(
        randomness, family="f", algorithm="a", parameters={"p": 1}, digests=digests, tables=tables
    )


def test_the_library_binding_rule():
    seeded = Randomness.create(3)
    mine = ContentDigest("pairs", seeded.fingerprint, "1" * 32)
    bound = _bind(seeded, [mine])
    assert bound.bound and bound.release == _bind(Randomness.create(3), [mine]).release
    other_rows = _bind(Randomness.create(3), [ContentDigest("pairs", seeded.fingerprint, "2" * 32)])
    assert other_rows.release != bound.release
    assert _bind(bound, []) is bound  # bound by the caller: used as is
    with pytest.raises(ParameterError, match=r"test-seed key must be bound.*pairs has no digest"):
        _bind(seeded, [])
    with pytest.raises(ParameterError, match="made with another key"):
        _bind(seeded, [ContentDigest("pairs", "0" * 32, "1" * 32)])
    fresh = _bind(Randomness.create(), [])  # an entropy key is never reused
    assert fresh.bound
