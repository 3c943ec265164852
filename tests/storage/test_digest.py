"""The keyed content digest a release id covers (spark_dp/io/digest.py): exactly the rows read,
in any order, keyed, computed in validation's own aggregation (no extra Spark job), exact
under ANSI mode, never shown."""

from __future__ import annotations

import re

import pytest

from spark_dp.io import ITEM, USER_ID, ReadGate, load_capacities, validate_edges
from spark_dp.io.digest import ContentDigest
from spark_dp.randomness import Randomness
from tests.support.gates import recording_gate
from tests.support.query_plans import plans_of

SCHEMA = "user_id string, item string"
ROWS = [(f"u{u}", f"w{(u * 7 + k) % 40}") for u in range(60) for k in range(3)]
COLUMNS = {USER_ID: USER_ID, ITEM: ITEM}


def _digest(spark, rows, key=None, schema=SCHEMA, **options):
    gate = ReadGate.keyed_by(key or Randomness.create(1))
    df = spark.createDataFrame(rows, schema)
    _, summary = validate_edges(df, COLUMNS, dedupe=False, persist=False, gate=gate, **options)
    return summary.digest


def test_the_digest_follows_the_rows_not_their_order(spark):
    base = _digest(spark, ROWS)
    assert isinstance(base, ContentDigest) and len(base.value) == 32
    assert _digest(spark, list(reversed(ROWS))) == base
    df = spark.createDataFrame(ROWS, SCHEMA).repartition(7)
    gate = ReadGate.keyed_by(Randomness.create(1))
    assert validate_edges(df, COLUMNS, dedupe=False, persist=False, gate=gate)[1].digest == base
    edited = [("u0", "w99"), *ROWS[1:]]  # one user's row edited
    removed = ROWS[3:]  # one user removed
    repeated = [*ROWS, ROWS[0]]  # a repeated row is a row read
    swapped = [(i, u) for u, i in ROWS]  # the columns' roles swapped
    others = {_digest(spark, r).value for r in (edited, removed, repeated, swapped)}
    assert len(others | {base.value}) == 5


def test_nulls_are_digested_where_they_are(spark):
    a = _digest(spark, [*ROWS, (None, "w1")])
    b = _digest(spark, [*ROWS, ("w1", None)])
    c = _digest(spark, ROWS)
    assert len({a.value, b.value, c.value}) == 3  # the dropped row still counts


def test_the_digest_is_keyed(spark):
    one, two = Randomness.create(1), Randomness.create(2)
    assert _digest(spark, ROWS, one) == _digest(spark, ROWS, Randomness.create(1))
    assert _digest(spark, ROWS, one).value != _digest(spark, ROWS, two).value
    assert _digest(spark, ROWS, one).key_fingerprint == one.fingerprint
    # a bound key digests as its unbound key: the salts come before the release id exists
    assert _digest(spark, ROWS, one.bind("r")) == _digest(spark, ROWS, one)


def test_the_sums_are_exact_under_ansi_mode(spark):
    """Thousands of 64-bit hashes overflow a long sum (an error under ANSI mode); the limb sums
    put back together equal the sum of the per-row hashes taken on the driver, mod 2^64."""
    previous = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "true")  # Spark 4's default; 3.5's is false
    try:
        _check_sums(spark)
    finally:
        spark.conf.set("spark.sql.ansi.enabled", previous)


def _check_sums(spark) -> None:
    from pyspark.sql import functions as F

    from spark_dp.io.digest import _sum, digested

    rows = [(f"u{i}", f"i{i % 97}") for i in range(3000)]
    df = spark.createDataFrame(rows, SCHEMA)
    gate = ReadGate.keyed_by(Randomness.create(3))
    flagged = [x for c in (USER_ID, ITEM) for x in (F.col(c), F.col(c).isNull())]
    hashes = df.select(
        *[F.xxhash64(F.lit(s), *flagged).alias(f"h{j}") for j, s in enumerate(gate.salts)]
    ).collect()
    salted, aggregates = digested(df, [F.col(USER_ID), F.col(ITEM)], gate)
    sums = salted.agg(*aggregates).collect()[0]
    for j in range(2):
        exact = sum(r[f"h{j}"] for r in hashes)
        assert abs(exact) > 2**63  # a long sum would have overflowed
        assert _sum(sums, j) == exact % 2**64
    assert _digest(spark, rows, Randomness.create(3)) is not None


def _scans(spark, action) -> int:
    """How many times the queries ``action()`` runs scan a Parquet input (every scan node of
    their plans: a query that reads its input twice counts twice)."""
    plans = plans_of(spark, action, {"spark.sql.adaptive.enabled": "false"})
    return sum(len(re.findall(r"^\(\d+\) Scan parquet", p, re.M)) for p in plans)


def test_no_extra_pass_over_the_data(spark, tmp_path):
    """The digest is more columns of validation's one aggregation: its input is read as many
    times with and without it (the salts join from a one-row table, a broadcast job of its own
    that reads no data). With nothing to count it reads nothing (the entropy-key test below).
    The table is filtered, so it is digested from its rows (a plain read of files is digested
    from the files: tests/storage/test_file_snapshot.py)."""
    from pyspark.sql import functions as F

    path = str(tmp_path / "pairs")
    spark.createDataFrame(ROWS, SCHEMA).write.parquet(path)
    gate = ReadGate.keyed_by(Randomness.create(1))

    def run(g, strict=True):
        df = spark.read.parquet(path).where(F.lit(True))
        return lambda: validate_edges(
            df, COLUMNS, dedupe=False, persist=False, gate=g, strict=strict
        )

    plain, digested = _scans(spark, run(None)), _scans(spark, run(gate))
    assert plain == digested >= 1
    assert _scans(spark, run(gate, strict=False)) == digested
    caps = str(tmp_path / "caps")
    spark.createDataFrame([("u1", 2), ("u2", 0)], "user_id string, cap int").write.parquet(caps)
    plain = _scans(spark, lambda: load_capacities(spark, caps))
    digested = _scans(spark, lambda: load_capacities(spark, caps, gate=gate))
    assert plain == digested >= 1


def test_the_gate_charges_before_the_read_and_hands_the_digest_over_before_the_checks(spark):
    events: list[str] = []
    gate = recording_gate(events)
    df = spark.createDataFrame([*ROWS, (None, "w1")], SCHEMA)
    from spark_dp.errors import InputContractError

    with pytest.raises(InputContractError, match="null ids"):
        validate_edges(df, COLUMNS, dedupe=False, persist=False, gate=gate, strict=True)
    assert events == ["charge", "digest pairs"]  # the null check came after both


def test_the_digest_is_never_shown(spark):
    gate = ReadGate.keyed_by(Randomness.create(1))
    df = spark.createDataFrame(ROWS, SCHEMA)
    _, summary = validate_edges(df, COLUMNS, dedupe=True, persist=False, gate=gate)
    assert summary.digest is not None
    shown = repr(summary) + repr(summary.digest) + repr(gate)
    assert summary.digest.value not in shown and str(len(ROWS)) not in shown
    assert str(gate.salts[0]) not in shown


def test_only_a_key_that_can_come_back_needs_a_digest(tmp_path):
    from spark_dp.io.digest import needs_digest
    from spark_dp.randomness.key_file import write_key_file

    path = tmp_path / "k.key"
    write_key_file(path)
    assert not needs_digest(Randomness.create())  # one object, bound once: never reused
    assert needs_digest(Randomness.create(1))  # a seed derives it again
    assert needs_digest(Randomness.from_key_file(str(path)))  # a file reads it again
    assert not ReadGate.keyed_by(Randomness.create()).digest
    assert ReadGate.keyed_by(Randomness.create(1)).digest


def test_an_entropy_key_reads_the_rows_without_a_pass_of_its_own(spark):
    """No digest wanted, nothing strict, no unsafe-debug counts: validation runs no Spark job;
    the gate is charged (before anything is read) and told the table is read undigested; null
    rows are still dropped, by a filter in the plan."""
    events: list[str] = []
    key = Randomness.create()
    gate = ReadGate(
        key.digest_salts(),
        key.fingerprint,
        before_read=lambda: events.append("charge"),
        on_digest=lambda d: events.append(f"digest {d}"),
        digest=False,
    )
    df = spark.createDataFrame([*ROWS, (None, "w1"), ("u1", None)], SCHEMA)
    tracker = spark.sparkContext.statusTracker()
    before = tracker.getJobIdsForGroup()
    checked, summary = validate_edges(df, COLUMNS, dedupe=False, persist=False, gate=gate)
    assert tracker.getJobIdsForGroup() == before  # no pass over the rows
    assert events == ["charge", "digest None"]
    assert summary.digest is None and summary.rows_read is None
    assert sorted(map(tuple, checked.collect())) == sorted(ROWS)
    deduped, _ = validate_edges(
        spark.createDataFrame([*ROWS, ROWS[0]], SCHEMA), COLUMNS, gate=gate, persist=True
    )
    assert deduped.is_cached and deduped.count() == len(set(ROWS))
    deduped.unpersist()


def test_strict_input_still_counts_with_an_entropy_key(spark):
    from spark_dp.errors import InputContractError

    gate = ReadGate.keyed_by(Randomness.create())
    df = spark.createDataFrame([*ROWS, (None, "w1")], SCHEMA)
    with pytest.raises(InputContractError, match="null ids"):
        validate_edges(df, COLUMNS, dedupe=False, persist=False, gate=gate, strict=True)


def test_a_binding_with_an_entropy_key_binds_without_digests():
    from spark_dp.io.digest import ReleaseBinding

    seen: list = []
    binding = ReleaseBinding(
        Randomness.create(),
        ["input", "capacities"],
        charge=lambda: seen.append("charge"),
        bind=lambda digests: seen.append([d.table for d in digests]) or "release-x",
    )
    assert not binding.gate("input").digest
    binding.gate("input").read_without_pass("pairs")
    capacities = ContentDigest("capacities", "f", "0" * 32)
    binding.gate("capacities").on_digest(capacities)  # a small table digested anyway
    assert seen == ["charge", ["capacities"]] and binding.randomness.release == "release-x"


def test_a_snapshot_gate_digests_the_snapshot_not_the_rows(spark):
    """A gate of an immutable snapshot (a Delta version) hands over the keyed digest of its
    description with no Spark job over the rows, the same with other rows and another with
    another snapshot or key; a strict read still counts, and keeps the snapshot's digest."""
    from spark_dp.errors import InputContractError
    from spark_dp.io.digest import snapshot_digest

    events: list[str] = []
    key = Randomness.create(1)
    gate = recording_gate(events).of_snapshot("delta@v3\ncolumns user_id=user_id,item=item\nfile-a")
    assert gate.digest and not gate.digests_rows
    tracker = spark.sparkContext.statusTracker()
    before = tracker.getJobIdsForGroup()
    df = spark.createDataFrame([*ROWS, (None, "w1")], SCHEMA)
    checked, summary = validate_edges(df, COLUMNS, dedupe=False, persist=False, gate=gate)
    assert tracker.getJobIdsForGroup() == before  # no pass over the rows
    assert events == ["charge", "digest pairs"]
    assert summary.rows_read is None and summary.digest is not None
    assert sorted(map(tuple, checked.collect())) == sorted(ROWS)  # null rows dropped
    other_rows = spark.createDataFrame(ROWS[3:], SCHEMA)
    _, again = validate_edges(other_rows, COLUMNS, dedupe=False, persist=False, gate=gate)
    assert again.digest == summary.digest  # the snapshot, not the rows, decides
    assert summary.digest.value != _digest(spark, ROWS).value  # not the rows' digest
    quiet = ReadGate.keyed_by(key)
    others = {
        snapshot_digest("pairs", "delta@v4\ncolumns user_id=user_id,item=item\nfile-a", quiet),
        snapshot_digest("pairs", "delta@v3\ncolumns user_id=user_id,item=word\nfile-a", quiet),
        snapshot_digest("pairs", gate.snapshot or "", ReadGate.keyed_by(Randomness.create(2))),
    }
    assert len({d.value for d in others} | {summary.digest.value}) == 4
    assert gate.snapshot not in repr(gate)
    events.clear()
    with pytest.raises(InputContractError, match="null ids"):
        validate_edges(df, COLUMNS, dedupe=False, persist=False, gate=gate, strict=True)
    assert events == ["charge", "digest pairs"]


def test_an_entropy_gate_ignores_a_snapshot(spark):
    gate = ReadGate.keyed_by(Randomness.create()).of_snapshot("delta@v0\nfile-a")
    df = spark.createDataFrame(ROWS, SCHEMA)
    _, summary = validate_edges(df, COLUMNS, dedupe=False, persist=False, gate=gate)
    assert summary.digest is None and summary.rows_read is None
