"""A key that can come back (a key file, a seed) on a Parquet or CSV input of local files binds to
the keyed digest of its files' bytes (spark_dp/io/file_snapshot.py), hashed after the charge,
with no Spark pass over the rows; other inputs keep the rows' digest."""

from __future__ import annotations

import hashlib
import os
import re

import pytest
from chispa import assert_df_equality

from spark_dp.errors import InputContractError
from spark_dp.io import ITEM, USER_ID, ReadGate, load_pairs, validate_edges
from spark_dp.io.file_snapshot import _local, file_hashes, snapshot
from spark_dp.randomness import Randomness
from tests.support.gates import recording_gate

SCHEMA = "user_id string, item string"
COLUMNS = {USER_ID: USER_ID, ITEM: ITEM}
ROWS = [(f"u{u}", f"w{(u * 7 + k) % 40}") for u in range(60) for k in range(3)]


def _parquet(spark, rows, path) -> str:
    spark.createDataFrame(rows, SCHEMA).repartition(2).write.mode("overwrite").parquet(str(path))
    return str(path)


def _jobs(spark) -> int:
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup())


def _load(spark, path, gate, **kw):
    return load_pairs(spark, path, dedupe=False, persist=False, gate=gate, **kw)


def test_a_key_file_read_of_local_parquet_digests_its_files_not_its_rows(spark, tmp_path):
    """The same files give the same digest, read with no Spark job beyond an entropy key's read;
    other rows, other columns, another scan setting or another key give another; the rows
    returned are the input's."""
    path = _parquet(spark, [*ROWS, (None, "w1")], tmp_path / "a b%c")  # a URI-escaped name
    events: list[str] = []
    gate = recording_gate(events)
    before = _jobs(spark)
    _load(spark, path, ReadGate.keyed_by(Randomness.create()))  # no digest: the floor
    floor = _jobs(spark) - before
    before = _jobs(spark)
    pairs, summary = _load(spark, path, gate)
    assert _jobs(spark) - before == floor  # the digest ran no Spark job of its own
    assert events == ["charge", "digest pairs"]
    assert summary.rows_read is None and summary.digest is not None  # nothing counted
    expected = spark.createDataFrame(ROWS, SCHEMA)
    assert_df_equality(pairs, expected, ignore_row_order=True, ignore_nullable=True)

    assert _load(spark, path, recording_gate([]))[1].digest == summary.digest  # a retry
    other = _load(spark, path, ReadGate.keyed_by(Randomness.create(2)))[1].digest
    swapped = _load(spark, path, recording_gate([]), user_col=ITEM, item_col=USER_ID)[1]
    edited = _parquet(spark, [("u0", "w39"), *ROWS[1:], (None, "w1")], tmp_path / "edited")
    spark.conf.set("spark.sql.files.ignoreCorruptFiles", "true")  # a setting a scan obeys
    spark.conf.set("spark.sql.caseSensitive", "FALSE")  # the default, said out loud
    try:
        lenient = _load(spark, path, recording_gate([]))[1].digest
        spark.conf.set("spark.sql.files.ignoreCorruptFiles", "false")
        assert _load(spark, path, recording_gate([]))[1].digest == summary.digest
    finally:
        spark.conf.unset("spark.sql.files.ignoreCorruptFiles")
        spark.conf.unset("spark.sql.caseSensitive")
    digests = {
        summary.digest.value,
        other.value,
        swapped.digest.value,
        _load(spark, edited, recording_gate([]))[1].digest.value,
        lenient.value,
    }
    assert len(digests) == 5


def test_an_edit_that_keeps_the_size_gives_another_digest(spark, tmp_path):
    """CSV: one user renamed in place (same size, same modification time) is other rows."""
    path = tmp_path / "pairs.csv"
    path.write_text("user_id,item\n" + "".join(f"{u},{i}\n" for u, i in ROWS))
    stat = path.stat()
    first = _load(spark, str(path), recording_gate([]))[1]
    path.write_text(path.read_text().replace("u10,", "u99,", 1))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns
    second = _load(spark, str(path), recording_gate([]))[1]
    assert first.rows_read is None and second.rows_read is None
    assert first.digest.value != second.digest.value


def test_the_files_are_hashed_after_the_charge(spark, tmp_path):
    """The description reads the files' bytes when it is made, and the gate makes it after the
    charge; an entropy key's gate never makes it."""
    path = _parquet(spark, ROWS, tmp_path / "pairs")
    df = spark.read.parquet(path)
    describe = snapshot(df, "parquet", COLUMNS)
    assert describe is not None
    files = sorted(df.inputFiles())
    text = describe()
    assert text.splitlines()[:2] == ["parquet files sha-256", "columns user_id=user_id,item=item"]
    part = _local(files[0])
    with open(part, "rb") as fh:
        want = hashlib.sha256(fh.read()).hexdigest()
    assert f"{files[0]} {os.path.getsize(part)} {want}" in text.splitlines()
    with open(part, "ab") as fh:  # bytes changed after the listing: seen when it is made
        fh.write(b"\0")
    assert describe() != text
    os.remove(part)  # gone after the listing: a clear error naming the file
    with pytest.raises(InputContractError, match=re.escape(part) + ".*while the job runs"):
        describe()

    rows = spark.createDataFrame(ROWS, SCHEMA)
    events: list[str] = []
    made = lambda: events.append("hash") or text
    for gate in (recording_gate(events), ReadGate.keyed_by(Randomness.create())):
        validate_edges(rows, COLUMNS, dedupe=False, persist=False, gate=gate.of_snapshot(made))
    assert events == ["charge", "hash", "digest pairs"]  # the entropy key's: nothing


def test_a_strict_read_counts_and_keeps_the_files_digest(spark, tmp_path):
    path = _parquet(spark, ROWS, tmp_path / "pairs")
    lazy = _load(spark, path, recording_gate([]))[1]
    strict = _load(spark, path, recording_gate([]), strict=True)[1]
    assert strict.rows_read == len(ROWS) and strict.digest == lazy.digest


def test_only_local_files_get_a_snapshot():
    assert _local("file:/tmp/a%20b/part-0.parquet") == "/tmp/a b/part-0.parquet"
    assert _local("file:///tmp/x") == "/tmp/x" and _local("file://localhost/tmp/x") == "/tmp/x"
    for uri in ("hdfs://nn:8020/t/part-0", "s3a://bucket/t/part-0", "file://other/tmp/x"):
        assert _local(uri) is None
    assert file_hashes([]) == []
