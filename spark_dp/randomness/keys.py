"""Release keys and the streams derived from them.

Every release has one 256-bit secret key (:class:`ReleaseKey`): from the operating system's CSPRNG
by default, from a key file ``spark-dp keygen`` wrote (a secret store mounted as a file,
:mod:`.key_file`), or derived from a seed in test mode. A key is never drawn from directly: it
is first **bound** to one release id (:meth:`ReleaseKey.bound_secret`), the hash of everything
that determines the release (job, algorithm, arguments, the content digest of every table read,
the key's fingerprint; see ``docs/privacy/keys.md``), and every random value of the release is
a pseudorandom function of that bound key, a stream label and a counter or row key (:mod:`.prf`).
So recomputing any part of a release gives the same values, the same key on the same rows and
arguments gives the same release, and anything else gives independent noise. A key object is
bound once (:meth:`ReleaseKey.claim`): a second release needs a fresh key object.

Derivations (HMAC-SHA-256, each with its own domain label, so no two uses share bits):

* the bound key of release id R:      K_R = HMAC(K, "spark_dp/v2/release" ‖ R)
* stream key of a label path L:       K_L = HMAC(K_R, "spark_dp/v2/stream" ‖ enc(L))
* key of counter c of a stream:       K_{L,c} = HMAC(K_L, "spark_dp/v2/counter" ‖ c)
* a named secret integer of a stream: HMAC(K_L, "spark_dp/v2/secret" ‖ name)
* the content-digest salts:           HMAC(K, "spark_dp/v2/content-digest") (unbound key)
* the fingerprint of a key file's key: scrypt(K, salt = "spark_dp/v3/key-fingerprint" ‖ id;
  N = 2^14, r = 8, p = 1)[:16], in hex, with the file's random id: slow and salted, so that
  testing a guessed key costs one scrypt per guess and key file
* the fingerprint of any other key:   HMAC(K, "spark_dp/v1/key-fingerprint")[:16], in hex (an
  entropy key has 256 random bits; a test seed's fingerprint is never shown)

enc(L) is typed and length-prefixed: each label is a type tag (``s`` string, ``i`` integer), a
4-byte length and its text, so two different paths never encode alike and ``("noise", 1)`` is
not ``("noise", "1")``. The key itself never leaves this module's objects: reports, logs and
ledgers carry the fingerprint only, and the ``repr`` of a key or a stream shows the fingerprint.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import threading
from dataclasses import dataclass, field
from functools import cached_property

from spark_dp.errors import ParameterError
from spark_dp.randomness.key_file import KEY_ID_BYTES, read_key_file

__all__ = [
    "FINGERPRINT_SCRYPT",
    "KEY_BYTES",
    "MODES",
    "KeyReusedError",
    "Label",
    "ReleaseKey",
    "counter_key",
    "derive",
    "encode_labels",
    "secret_int",
    "stream_key",
]

KEY_BYTES = 32
"""Length of a release key (256 bits)."""

MODES = ("entropy", "key-file", "test-seed")
"""Where a key came from: OS entropy, a key file, or a seed (tests only)."""

Label = str | int
"""A stream label: a string or an integer (``child("noise", 2)``), never both alike."""

FINGERPRINT_SCRYPT = {"n": 2**14, "r": 8, "p": 1}
"""scrypt's cost of a key file's fingerprint: the interactive-login parameters of Percival's
scrypt paper (16 MiB and tens of milliseconds per evaluation, by design)."""

_FINGERPRINT_SALT = b"spark_dp/v3/key-fingerprint\x00"
_BIND_LOCK = threading.Lock()


class KeyReusedError(ParameterError):
    """A second bind of a key object that is bound to a release already."""


class _BindOnce:
    """The release id a key object was bound to (None: not yet). Held by the key, so every
    :class:`~.streams.Randomness` made from that key object shares it."""

    __slots__ = ("release",)

    def __init__(self) -> None:
        self.release: str | None = None


def _encode_label(label: Label) -> bytes:
    if isinstance(label, bool) or not isinstance(label, (str, int)):
        raise TypeError(f"a stream label is a str or an int, got {type(label).__name__}")
    tag, raw = (b"s", label.encode("utf-8")) if isinstance(label, str) else (b"i", b"%d" % label)
    return tag + len(raw).to_bytes(4, "big") + raw


def encode_labels(labels: tuple[Label, ...]) -> bytes:
    """Injective, typed encoding of a label path: per label a type tag, a 4-byte length and
    its UTF-8 text (an integer as its decimal digits)."""
    return b"".join(_encode_label(label) for label in labels)


def derive(key: bytes, domain: str, data: bytes = b"") -> bytes:
    """HMAC-SHA-256 of ``domain`` ‖ 0x00 ‖ ``data`` under ``key`` (32 bytes)."""
    return hmac.new(key, domain.encode("ascii") + b"\x00" + data, hashlib.sha256).digest()


def _signed64(raw: bytes) -> int:
    x = int.from_bytes(raw[:8], "big")
    return x - (1 << 64) if x >= (1 << 63) else x


@dataclass(frozen=True)
class ReleaseKey:
    """The secret key of a release (before it is bound to one release id).

    Build it with :meth:`from_entropy` (production default), :meth:`from_file` (a key kept in a
    secret store) or :meth:`from_seed` (tests and reproducible experiments; NOT for production:
    anyone who knows the seed can recompute the noise).

    Attributes:
        secret: K, the 32-byte key (secret).
        mode: where it came from (:data:`MODES`).
        key_id: a key file's random id, the salt of its fingerprint (empty for other modes).
    """

    secret: bytes = field(repr=False)
    mode: str
    key_id: bytes = field(default=b"", repr=False)
    _binding: _BindOnce = field(default_factory=_BindOnce, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if len(self.secret) != KEY_BYTES:
            raise ValueError(f"a release key has {KEY_BYTES} bytes")
        if self.mode not in MODES:
            raise ValueError(f"key mode must be one of {MODES}")
        if len(self.key_id) != (KEY_ID_BYTES if self.mode == "key-file" else 0):
            raise ValueError(f"a key-file key has a {KEY_ID_BYTES}-byte id, other keys none")

    @classmethod
    def from_entropy(cls) -> ReleaseKey:
        """A fresh key from the operating system's CSPRNG (``os.urandom``)."""
        return cls(os.urandom(KEY_BYTES), "entropy")

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> ReleaseKey:
        """The key held in a key file ``spark-dp keygen`` wrote (:mod:`.key_file`).

        Raises:
            ParameterError: the file is missing, unreadable, not a regular file, readable or
                writable by group or others, not a key file of this format (raw bytes, a
                passphrase), damaged, or its secret is not random bytes.
        """
        content = read_key_file(path)
        return cls(content.secret, "key-file", content.key_id)

    @classmethod
    def from_seed(cls, seed: int) -> ReleaseKey:
        """A key derived from an integer seed: reproducible, NOT for production."""
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ParameterError(f"seed must be an integer or omitted, got {seed!r}")
        material = str(seed).encode("ascii")
        return cls(hashlib.sha256(b"spark_dp/v1/test-seed\x00" + material).digest(), "test-seed")

    @cached_property
    def fingerprint(self) -> str:
        """A public 128-bit hash of the key: equal fingerprints mean equal keys.

        A key file's is a salted scrypt (module docstring): whoever reads it can test a guessed
        key only at the cost of one slow KDF per guess, and only for that file (its id salts it).
        """
        if self.mode == "key-file":
            raw = hashlib.scrypt(
                self.secret,
                salt=_FINGERPRINT_SALT + self.key_id,
                **FINGERPRINT_SCRYPT,
                maxmem=64 * 1024 * 1024,
                dklen=16,
            )
            return raw.hex()
        return derive(self.secret, "spark_dp/v1/key-fingerprint")[:16].hex()

    def claim(self, release_id: str) -> None:
        """Record that this key object is bound to ``release_id``: a key binds once.

        Every :class:`~.streams.Randomness` made from this object shares the record, so a key
        bound by one library call (which binds to the release id of what it read) cannot be
        bound again by another; with an entropy key, bound without a content digest, that
        second release would otherwise draw the same noise on other rows.

        Raises:
            KeyReusedError: the object was bound already.
        """
        with _BIND_LOCK:
            if self._binding.release is not None:
                raise KeyReusedError(
                    "this key was bound to a release already, and a key binds to one release "
                    "once: create a fresh key per release (Randomness.create() again, or "
                    "Randomness.from_key_file(path) again: a key read anew is bound to the "
                    "digest of the rows it reads)"
                )
            self._binding.release = release_id

    def bound_secret(self, release_id: str) -> bytes:
        """K_R, the root of every stream of release ``release_id`` (secret)."""
        return derive(self.secret, "spark_dp/v2/release", release_id.encode("utf-8"))

    def digest_salts(self) -> tuple[int, int]:
        """Two secret signed 64-bit salts of the content digest (:mod:`spark_dp.io.digest`),
        from the unbound key, so that a digest is keyed but known before the release id."""
        raw = derive(self.secret, "spark_dp/v2/content-digest")
        return _signed64(raw[:8]), _signed64(raw[8:16])

    def __repr__(self) -> str:
        return f"ReleaseKey(mode={self.mode!r}, fingerprint={self.fingerprint!r})"


def stream_key(bound: bytes, labels: tuple[Label, ...]) -> bytes:
    """K_L, the key of the stream with label path ``labels`` under the bound key K_R."""
    return derive(bound, "spark_dp/v2/stream", encode_labels(labels))


def counter_key(stream_key: bytes, counter: int) -> bytes:
    """K_{L,c}: the AES-256 key of counter ``c`` of a stream."""
    return derive(stream_key, "spark_dp/v2/counter", counter.to_bytes(8, "big"))


def secret_int(stream_key: bytes, name: str, bits: int = 63) -> int:
    """A secret non-negative integer of ``bits`` bits derived from a stream (salts, seeds)."""
    raw = derive(stream_key, "spark_dp/v2/secret", name.encode("utf-8"))
    return int.from_bytes(raw[:8], "big") >> (64 - bits)
