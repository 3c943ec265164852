"""The pseudorandom function behind every random value: AES-256 on 128-bit inputs.

For a stream key K_L (:mod:`.keys`), word block c of input x is AES-256_{K_{L,c}}(x), two 64-bit
words. AES is a pseudorandom permutation, hence a PRF on distinct inputs, and the
``cryptography`` package runs it with AES-NI on a whole batch at once (ECB mode on the
concatenated inputs: each 16-byte block is enciphered independently), so it costs nanoseconds per
row. Inputs are

* for DataFrame rows: the first 16 bytes of SHA-256 of the row key (computed by Spark SQL,
  :func:`row_digest_column`): distinct keys give distinct inputs unless SHA-256 collides;
* for driver-side draws: the draw's index in its stream, as a 16-byte integer.

So a value depends on (key, stream label, row key or index, counter) only: never on partitioning,
row order, executor, retries or how many draws other streams made.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from spark_dp.randomness.keys import counter_key

__all__ = [
    "BLOCK_BYTES",
    "aes_ecb",
    "encode_row_key",
    "index_blocks",
    "prf_words",
    "row_digest",
]

BLOCK_BYTES = 16


def aes_ecb(key: bytes, blocks: bytes) -> bytes:
    """AES-256 of every 16-byte block of ``blocks`` under ``key`` (the PRF's primitive)."""
    encryptor = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    return encryptor.update(blocks) + encryptor.finalize()


def prf_words(stream_key: bytes, counters: Sequence[int], blocks: bytes) -> np.ndarray:
    """PRF output for every 16-byte input block and every counter.

    Args:
        stream_key: K_L of the stream.
        counters: the counters c to evaluate (each gives two 64-bit words per input).
        blocks: n concatenated 16-byte inputs.

    Returns:
        uint64 array of shape (n, 2·len(counters)): words 2c and 2c+1 come from counter c.
    """
    if len(blocks) % BLOCK_BYTES:
        raise ValueError("PRF inputs must be 16-byte blocks")
    n = len(blocks) // BLOCK_BYTES
    out = np.empty((n, 2 * len(counters)), dtype=np.uint64)
    for j, c in enumerate(counters):
        raw = aes_ecb(counter_key(stream_key, c), blocks)
        out[:, 2 * j : 2 * j + 2] = np.frombuffer(raw, dtype="<u8").reshape(n, 2)
    return out


def index_blocks(start: int, n: int) -> bytes:
    """The 16-byte big-endian encodings of the indices start..start+n−1."""
    idx = np.arange(start, start + n, dtype=np.uint64)
    out = np.zeros((n, 2), dtype=">u8")
    out[:, 1] = idx
    return out.tobytes()


def encode_row_key(values: Sequence[str]) -> str:
    """The string whose SHA-256 identifies a row: its key columns, each length-prefixed
    (``<length>:<value>``), so two different keys never encode alike. Same as the Spark
    expression of :func:`spark_dp.randomness.frames.row_digest_column`."""
    return "".join(f"{len(v)}:{v}" for v in values)


def row_digest(values: Sequence[str]) -> bytes:
    """The PRF input of a row key (first 16 bytes of SHA-256 of its encoding); the driver-side
    twin of the Spark column, used by tests to recompute a row's noise."""
    return hashlib.sha256(encode_row_key(values).encode("utf-8")).digest()[:BLOCK_BYTES]
