"""The PRF: AES-256 (FIPS-197 vector), row digests in Spark equal to the driver's, determinism."""

from __future__ import annotations

import numpy as np
from pyspark.sql import functions as F

from spark_dp.randomness import Randomness, row_digest_column
from spark_dp.randomness.prf import aes_ecb, index_blocks, prf_words, row_digest


def test_aes_256_matches_fips_197_appendix_c3():
    key = bytes(range(32))
    plain = bytes.fromhex("00112233445566778899aabbccddeeff")
    assert aes_ecb(key, plain).hex() == "8ea2b7ca516745bfeafc49904b496089"
    assert aes_ecb(key, plain * 3) == aes_ecb(key, plain) * 3  # block by block (ECB)


def test_prf_words_depend_on_key_counter_and_input():
    k1, k2 = (
        Randomness.create(1).bind("test").stream_key,
        Randomness.create(2).bind("test").stream_key,
    )
    blocks = index_blocks(0, 4)
    a = prf_words(k1, [0, 1], blocks)
    assert a.shape == (4, 4) and a.dtype == np.uint64
    np.testing.assert_array_equal(a, prf_words(k1, [0, 1], blocks))
    assert not np.array_equal(a[:, :2], a[:, 2:])  # counters differ
    assert not np.array_equal(a, prf_words(k2, [0, 1], blocks))  # keys differ
    assert len({tuple(r) for r in a}) == 4  # inputs differ
    np.testing.assert_array_equal(prf_words(k1, [0], index_blocks(2, 2)), a[2:, :2])


def test_spark_row_digest_equals_the_driver_digest(spark):
    rows = [("a", "b"), ("日本語", "🙂"), ("a:1", ""), ("", "a:1"), ("3:abc", "x")]
    df = spark.createDataFrame(rows, "k1 string, k2 string")
    got = {
        (r["k1"], r["k2"]): bytes(r["d"])
        for r in df.select("k1", "k2", row_digest_column(["k1", "k2"]).alias("d")).collect()
    }
    assert got == {(a, b): row_digest([a, b]) for a, b in rows}
    assert len(set(got.values())) == len(rows)  # no two keys encode alike
    single = df.select("k1", row_digest_column(["k1"]).alias("d")).collect()
    assert {r["k1"]: bytes(r["d"]) for r in single} == {a: row_digest([a]) for a, _ in rows}


def test_integer_keys_hash_as_their_decimal_string(spark):
    df = spark.range(3).select(F.col("id"))
    got = [bytes(r["d"]) for r in df.select(row_digest_column(["id"]).alias("d")).collect()]
    assert got == [row_digest([str(i)]) for i in range(3)]
