"""Release keys and the streams derived from them.

Every release has one 256-bit secret key (:class:`ReleaseKey`): from the operating system's CSPRNG
by default, from a key file (a secret store mounted as a file), or derived from a seed in test
mode. Every random value of the release is a pseudorandom function of that key, a stream label
and a counter or row key (:mod:`.prf`), so recomputing any part of the release gives the same
values, and the same key on the same input and parameters gives the same release.

Derivations (HMAC-SHA-256, each with its own domain label, so no two uses share bits):

* stream key of a label path L:       K_L = HMAC(K, "spark_dp/v1/stream" ‖ enc(L))
* key of counter c of a stream:       K_{L,c} = HMAC(K_L, "spark_dp/v1/counter" ‖ c)
* a named secret integer of a stream: HMAC(K_L, "spark_dp/v1/secret" ‖ name)
* the key fingerprint:                HMAC(K, "spark_dp/v1/key-fingerprint")[:16], in hex

enc(L) length-prefixes every label, so two different paths never encode alike. The key itself
never leaves this module's objects: reports, logs and ledgers carry the fingerprint only, and the
``repr`` of a key or a stream shows the fingerprint.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import dataclass, field
from pathlib import Path

from spark_dp.errors import ParameterError

__all__ = [
    "KEY_BYTES",
    "MODES",
    "ReleaseKey",
    "counter_key",
    "derive",
    "encode_labels",
    "secret_int",
]

KEY_BYTES = 32
"""Length of a release key (256 bits)."""

MODES = ("entropy", "key-file", "test-seed")
"""Where a key came from: OS entropy, a key file, or a seed (tests only)."""


def encode_labels(labels: tuple[str, ...]) -> bytes:
    """Injective encoding of a label path: each label as 4-byte length + UTF-8 bytes."""
    out = bytearray()
    for label in labels:
        raw = label.encode("utf-8")
        out += len(raw).to_bytes(4, "big") + raw
    return bytes(out)


def derive(key: bytes, domain: str, data: bytes = b"") -> bytes:
    """HMAC-SHA-256 of ``domain`` ‖ 0x00 ‖ ``data`` under ``key`` (32 bytes)."""
    return hmac.new(key, domain.encode("ascii") + b"\x00" + data, hashlib.sha256).digest()


@dataclass(frozen=True)
class ReleaseKey:
    """The secret key of one release.

    Build it with :meth:`from_entropy` (production default), :meth:`from_file` (a key kept in a
    secret store) or :meth:`from_seed` (tests and reproducible experiments; NOT for production:
    anyone who knows the seed can recompute the noise).
    """

    secret: bytes = field(repr=False)
    mode: str

    def __post_init__(self) -> None:
        if len(self.secret) != KEY_BYTES:
            raise ValueError(f"a release key has {KEY_BYTES} bytes")
        if self.mode not in MODES:
            raise ValueError(f"key mode must be one of {MODES}")

    @classmethod
    def from_entropy(cls) -> ReleaseKey:
        """A fresh key from the operating system's CSPRNG (``os.urandom``)."""
        return cls(os.urandom(KEY_BYTES), "entropy")

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> ReleaseKey:
        """The key held in a file of at least 32 random bytes (condensed by HMAC-SHA-256).

        Raises:
            ParameterError: the file is missing, unreadable or shorter than 32 bytes.
        """
        p = Path(path)
        try:
            content = p.read_bytes()
        except OSError as exc:
            raise ParameterError(
                f"--noise-key-file {str(p)!r} cannot be read ({exc.strerror}); pass a file "
                "holding at least 32 random bytes, e.g. `head -c 32 /dev/urandom > key`"
            ) from None
        if len(content) < KEY_BYTES:
            raise ParameterError(
                f"--noise-key-file {str(p)!r} holds {len(content)} bytes; a key needs at least "
                f"{KEY_BYTES} random bytes, e.g. `head -c 32 /dev/urandom > key`"
            )
        return cls(derive(b"spark_dp/v1/key-file", "condense", content), "key-file")

    @classmethod
    def from_seed(cls, seed: int) -> ReleaseKey:
        """A key derived from an integer seed: reproducible, NOT for production."""
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ParameterError(f"seed must be an integer or omitted, got {seed!r}")
        material = str(seed).encode("ascii")
        return cls(hashlib.sha256(b"spark_dp/v1/test-seed\x00" + material).digest(), "test-seed")

    @property
    def fingerprint(self) -> str:
        """A public 128-bit keyed hash of the key: equal fingerprints mean equal keys."""
        return derive(self.secret, "spark_dp/v1/key-fingerprint")[:16].hex()

    def stream_key(self, labels: tuple[str, ...]) -> bytes:
        """K_L, the key of the stream with label path ``labels``."""
        return derive(self.secret, "spark_dp/v1/stream", encode_labels(labels))

    def __repr__(self) -> str:
        return f"ReleaseKey(mode={self.mode!r}, fingerprint={self.fingerprint!r})"


def counter_key(stream_key: bytes, counter: int) -> bytes:
    """K_{L,c}: the AES-256 key of counter ``c`` of a stream."""
    return derive(stream_key, "spark_dp/v1/counter", counter.to_bytes(8, "big"))


def secret_int(stream_key: bytes, name: str, bits: int = 63) -> int:
    """A secret non-negative integer of ``bits`` bits derived from a stream (salts, seeds)."""
    raw = derive(stream_key, "spark_dp/v1/secret", name.encode("utf-8"))
    return int.from_bytes(raw[:8], "big") >> (64 - bits)
