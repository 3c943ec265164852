"""A key that can come back (a key file, a seed) on a Parquet or CSV input of local files binds to
the keyed digest of its files' bytes, and on HDFS (a real MiniDFSCluster) to the namenode's
record of its files and their HDFS checksums (spark_dp/io/file_snapshot.py), read after the
charge, with no Spark pass over the rows; other inputs keep the rows' digest."""

from __future__ import annotations

import hashlib
import os
import re

import pyarrow.parquet as pq
import pytest
from chispa import assert_df_equality

import spark_dp.io.read
import spark_dp.release_ids
from spark_dp.budget import BudgetStore
from spark_dp.errors import InputContractError
from spark_dp.io import ITEM, USER_ID, ReadGate, load_pairs, validate_edges
from spark_dp.io.file_snapshot import _local, file_hashes, snapshot
from spark_dp.io.fs import HadoopFS
from spark_dp.jobs import partition_selection
from spark_dp.jobs.runner import run_job
from spark_dp.randomness import Randomness
from spark_dp.randomness.key_file import write_key_file
from tests.support.gates import recording_gate
from tests.support.mini_dfs import MiniDFS, jars_dir

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


def _read_once(spark, path, load=None):
    """A seeded key's read of ``ROWS`` (and a null row) at ``path`` (by ``load(gate)``, else
    ``load_pairs``): no Spark job beyond an entropy key's read, the charge before the digest,
    nothing counted, the rows returned the input's, the same digest on a retry; (its summary,
    another key's digest)."""
    load = load or (lambda gate: _load(spark, path, gate))
    events: list[str] = []
    before = _jobs(spark)
    load(ReadGate.keyed_by(Randomness.create()))  # no digest: the floor
    floor = _jobs(spark) - before
    before = _jobs(spark)
    pairs, summary = load(recording_gate(events))
    assert _jobs(spark) - before == floor  # the digest ran no Spark job of its own
    assert events == ["charge", "digest pairs"]
    assert summary.rows_read is None and summary.digest is not None  # nothing counted
    expected = spark.createDataFrame(ROWS, SCHEMA)
    assert_df_equality(pairs, expected, ignore_row_order=True, ignore_nullable=True)
    assert load(recording_gate([]))[1].digest == summary.digest  # a retry
    return summary, load(ReadGate.keyed_by(Randomness.create(2)))[1].digest


def _validated(df, gate=None):
    """The library's validation of a DataFrame ``df`` of (user_id, item) under ``gate`` (a
    seeded key's by default)."""
    gate = gate or recording_gate([])
    return validate_edges(df, COLUMNS, dedupe=False, persist=False, gate=gate)


def test_a_key_file_read_of_local_parquet_digests_its_files_not_its_rows(spark, tmp_path):
    """The same files give the same digest, read with no Spark job beyond an entropy key's read;
    other rows, other columns, another scan setting or another key give another; the rows
    returned are the input's."""
    path = _parquet(spark, [*ROWS, (None, "w1")], tmp_path / "a b%c")  # a URI-escaped name
    summary, other = _read_once(spark, path)
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


def test_a_dataframe_read_from_files_binds_to_them(spark, tmp_path):
    """A DataFrame handed to the library that only reads Parquet or CSV files (columns chosen,
    at most) is digested from its files and its reader, with no pass: the same files give the
    same digest; a reader option that reads other rows gives another. A filtered, cached or
    Python-made DataFrame is digested from its rows (counted)."""
    path = _parquet(spark, [*ROWS, (None, "w1")], tmp_path / "pairs")
    read = lambda gate: _validated(spark.read.parquet(path), gate)
    summary, other = _read_once(spark, path, read)
    chosen = spark.read.parquet(path).select(ITEM, USER_ID)
    assert _validated(chosen)[1].digest == summary.digest
    assert other != summary.digest
    filtered = spark.read.parquet(path).where("item != 'w1'")
    cached = spark.read.parquet(path).cache()
    try:
        for df in (filtered, cached, spark.createDataFrame(ROWS, SCHEMA)):
            counted = _validated(df)[1]
            assert counted.rows_read is not None and counted.digest != summary.digest
    finally:
        cached.unpersist()

    csv = tmp_path / "pairs.csv"
    csv.write_text("user_id,item\n" + "".join(f"{u}, {i}\n" for u, i in ROWS))
    reader = spark.read.option("header", True)
    plain = _validated(reader.csv(str(csv)))
    trimmed = _validated(reader.option("ignoreLeadingWhiteSpace", True).csv(str(csv)))
    assert plain[1].rows_read is None and trimmed[1].rows_read is None
    assert plain[1].digest != trimmed[1].digest
    assert plain[0].where("item = 'w1'").count() == 0  # " w1": other rows
    assert trimmed[0].where("item = 'w1'").count() > 0


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


@pytest.fixture(scope="module")
def hdfs(tmp_path_factory):
    """A real HDFS (tests/support/mini_dfs.py): its ``hdfs://127.0.0.1:<port>`` URL."""
    jars = jars_dir()
    if jars is None:
        pytest.skip("no HDFS minicluster jars: run `make hdfs-jars` (make test fetches them)")
    with MiniDFS(tmp_path_factory.mktemp("dfs"), jars) as dfs:
        yield dfs.url


def _hadoop(spark, uri: str):
    """(Hadoop FileSystem, Path) of ``uri`` through the session's JVM."""
    path = spark._jvm.org.apache.hadoop.fs.Path(uri)
    return path.getFileSystem(spark._jsc.hadoopConfiguration()), path


def _rewrite_in_place(spark, uri: str, data: bytes) -> None:
    """Other bytes of the same length into the same HDFS file (the same inode, truncated and
    appended to), its modification time set back: only the checksum can tell."""
    fs, path = _hadoop(spark, uri)
    st = fs.getFileStatus(path)
    assert st.getLen() == len(data) and fs.truncate(path, 0)
    out = fs.append(path)
    out.write(bytearray(data))
    out.close()
    fs.setTimes(path, st.getModificationTime(), -1)


def test_a_key_file_read_on_hdfs_digests_its_files_checksums_not_its_rows(spark, hdfs):
    """The same files give the same digest, with no Spark job beyond an entropy key's read;
    another key, other rows, or one file's bytes changed in place (same inode, length and
    modification time) give another; the rows returned are the input's."""
    path = _parquet(spark, [*ROWS, (None, "w1")], f"{hdfs}/pairs")
    summary, other = _read_once(spark, path)

    csv = f"{hdfs}/pairs.csv"
    rows = "user_id,item\n" + "".join(f"{u},{i}\n" for u, i in ROWS)
    HadoopFS(spark).write_text(csv, rows)
    first = _load(spark, csv, recording_gate([]))[1]
    _rewrite_in_place(spark, csv, rows.replace("u10,", "u99,", 1).encode())
    second = _load(spark, csv, recording_gate([]))[1]
    assert first.rows_read is None and second.rows_read is None
    digests = {summary.digest.value, other.value, first.digest.value, second.digest.value}
    assert len(digests) == 4


def test_the_hdfs_description_holds_each_files_record_and_checksum(spark, hdfs, tmp_path):
    """One line per file: its URI, length, modification time, inode id and HDFS checksum, read
    when the description is made; a file gone after the listing is a clear error."""
    path = _parquet(spark, ROWS, f"{hdfs}/described")
    df = spark.read.parquet(path)
    describe = snapshot(df, "parquet", COLUMNS)
    assert describe is not None
    text = describe()
    lines = text.splitlines()
    assert lines[:2] == ["parquet files hdfs checksum", "columns user_id=user_id,item=item"]
    files = sorted(df.inputFiles())
    assert [line.split()[0] for line in lines[3:]] == files and len(files) == 2
    fs, first = _hadoop(spark, files[0])
    st, checksum = fs.getFileStatus(first), fs.getFileChecksum(first)
    assert lines[3].split()[1:] == [
        str(st.getLen()),
        str(st.getModificationTime()),
        str(st.getFileId()),
        str(checksum.getAlgorithmName()),
        bytes(checksum.getBytes()).hex(),
    ]
    assert re.fullmatch(r"MD5-of-\d+MD5-of-512CRC32C", str(checksum.getAlgorithmName()))
    assert describe() == text
    fs.delete(first, False)
    with pytest.raises(InputContractError, match=re.escape(files[0]) + ".*while the job runs"):
        describe()
    local = _parquet(spark, ROWS, f"file:{tmp_path / 'local'}")
    mixed = spark.read.parquet(_parquet(spark, ROWS, f"{hdfs}/mixed"), local)
    assert snapshot(mixed, "parquet", COLUMNS) is None  # HDFS and local: the rows' digest


def test_a_job_on_hdfs_with_a_key_file_binds_to_its_files(spark, hdfs, tmp_path, monkeypatch):
    """spark-submit's code path in this process: a Parquet input on HDFS and a key file; the
    rows are never digested; a retry is the same release (the same rows, one charge); one file
    of the input replaced is another release, charged again."""

    def no_rows_digest(*args, **kwargs):
        raise AssertionError("the rows were digested")

    monkeypatch.setattr(spark_dp.io.read, "digested", no_rows_digest)
    seen: list[str] = []
    real = spark_dp.release_ids.release_id
    monkeypatch.setattr(
        spark_dp.release_ids, "release_id", lambda **kw: seen.append(real(**kw)) or seen[-1]
    )
    monkeypatch.chdir(tmp_path)
    write_key_file(tmp_path / "key")
    with BudgetStore.open(f"sqlite:///{tmp_path / 'budget.db'}") as store:
        store.set_cap("words", 10.0, 1e-3)
    many = [(f"u{u}", f"w{k}") for u in range(400) for k in range(3)]
    source = _parquet(spark, many, f"{hdfs}/words")

    def run(out: str, *extra: str) -> list:
        argv = [
            *("--input", source, "--output", out, "--epsilon", "1"),
            *("--algorithm", "basic", "--noise-key-file", "key", "--dataset-id", "words"),
            *("--budget-store", "sqlite:///budget.db", "--log-level", "WARNING", *extra),
        ]
        assert run_job(partition_selection.SPEC, argv) == 0
        return sorted(pq.read_table(tmp_path / out).to_pylist(), key=str)

    released = run("a")
    assert released  # 400 users on each of 3 items: released at ε = 1
    assert run("a", "--overwrite") == released and len(set(seen)) == 1  # a retry
    _parquet(spark, [*many, ("u400", "w0")], source)  # the input rewritten: other files
    run("b")
    with BudgetStore.open(f"sqlite:///{tmp_path / 'budget.db'}") as store:
        (row,) = store.summary()
    assert len(set(seen)) == 2 and row.releases == 2
