"""What a release of partition selection reads: with an entropy key (the default) its input once,
by the algorithm's first pass; with a key that can come back (a key file, a test seed) once
too when the input is a plain read of files (the digest binds the release to their bytes,
hashed without Spark), and once more for the content digest of any other DataFrame (its rows)
(docs/privacy/keys.md#digest)."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from spark_dp.io import ITEM, USER_ID
from spark_dp.partition_selection import (
    PartitionSelectionParams,
    PreviewParams,
    preview_partitions,
    select_partitions,
)
from spark_dp.partition_selection import select as module
from spark_dp.randomness import Randomness

ROWS = [(f"u{u}", f"w{(u * 7 + k) % 90}") for u in range(400) for k in range(u % 23 + 1)]
ROWS += [ROWS[0], (None, "w1"), ("u3", None)]  # a repeat and two null ids


def _bytes_read(spark) -> int:
    """Bytes Spark has read through Hadoop's local file system (Parquet files; not shuffle
    files or cached blocks, which Spark reads itself)."""
    stats = spark.sparkContext._jvm.org.apache.hadoop.fs.FileSystem.getAllStatistics()
    return sum(s.getBytesRead() for s in stats if s.getScheme() == "file")


def _measured(spark, action) -> int:
    before = _bytes_read(spark)
    action()
    return _bytes_read(spark) - before


@pytest.fixture(scope="module")
def parquet(spark, tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("one_pass") / "pairs")
    spark.createDataFrame(ROWS, "user_id string, item string").coalesce(1).write.parquet(path)
    return path


@pytest.fixture(scope="module")
def passes(spark, parquet) -> tuple[int, int]:
    """Bytes one pass and two passes over the Parquet pairs read (footers included)."""

    def one():  # both columns, as a release reads them
        spark.read.parquet(parquet).groupBy(ITEM).agg(F.count(USER_ID)).collect()

    def two():
        df = spark.read.parquet(parquet)
        df.groupBy(ITEM).agg(F.count(USER_ID)).collect()
        df.groupBy(USER_ID).agg(F.count(ITEM)).collect()

    once, twice = _measured(spark, one), _measured(spark, two)
    assert twice > once > 0
    return once, twice


def _release(spark, parquet: str, run: str, key: Randomness, *, filtered: bool = False) -> None:
    """A selection (``algorithm``, or ``algorithm:auto``: a private choice of Δ0) or the
    ``preview``; ``filtered``: of the pairs under a filter (a DataFrame not traced to its
    files)."""
    pairs = spark.read.parquet(parquet)
    pairs = pairs.where(F.lit(True)) if filtered else pairs
    if run == "preview":
        preview_partitions(pairs, PreviewParams(tuning_candidates=(4, 8)), key).to_dict()
        return
    algorithm, _, auto = run.partition(":")
    params = PartitionSelectionParams(
        algorithm=algorithm, epsilon=1.0, delta=1e-5, max_contributions="auto" if auto else 8
    )
    with select_partitions(pairs, params, key) as selection:
        selection.items.count()


@pytest.mark.parametrize("run", ["basic", "mad2r", "dp-sips", "basic:auto", "preview"])
def test_an_entropy_key_release_reads_its_input_once(spark, parquet, passes, monkeypatch, run):
    bound, original = [], module.bind_release

    def spy(randomness, **kw):
        bound.append(kw["digests"])
        return original(randomness, **kw)

    monkeypatch.setattr(module, "bind_release", spy)
    once, twice = passes
    ours = _measured(spark, lambda: _release(spark, parquet, run, Randomness.create()))
    assert ours < twice  # fewer bytes than two passes over the rows
    assert bound == [[]]  # bound without a digest: the key exists for this release only
    seeded = _measured(spark, lambda: _release(spark, parquet, run, Randomness.create(5)))
    assert seeded - ours < (twice - once) // 4  # a seeded key on files: their digest, no pass
    key = Randomness.create(5)
    filtered = _measured(spark, lambda: _release(spark, parquet, run, key, filtered=True))
    assert filtered - ours >= (twice - once) * 3 // 4  # of its rows: one more pass, the digest
