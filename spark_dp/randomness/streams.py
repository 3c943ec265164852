"""A release's randomness as named streams: :class:`Randomness` and the driver's draws.

``Randomness`` holds the release key (:class:`~.keys.ReleaseKey`), the release id it is bound
to and a stream label path. A key must never give two different releases correlated noise, so
nothing can be drawn from an **unbound** Randomness: :meth:`Randomness.bind` derives the root of
one release's streams from (key, release id) first (the job runner binds with the release id of
its arguments and the content digest of the rows it read; the library entry points bind the
same way, :func:`spark_dp.release_ids.bind_release`), and a key object binds once: a second
bind raises, so one key never serves two releases. Then :meth:`Randomness.child` names a
sub-stream for one purpose ("capping", ("noise", 2), ...), so two purposes never share bits.
Everything random is drawn through a bound Randomness:

* on the driver, :meth:`Randomness.driver` gives a :class:`DriverNoise`: draw i of a stream is
  the PRF at index i, so a stream's draws do not depend on any other stream;
* in DataFrames, :func:`spark_dp.randomness.add_noise_column` (noise keyed by each row's key)
  and :func:`spark_dp.randomness.with_hash_column` (a keyed salt for random ranking);
* :meth:`Randomness.secret` for named secret integers (salts, the order seed of contribution
  bounding) and :meth:`Randomness.numpy_generator` for randomness that is not privacy noise.

The one secret an unbound Randomness gives is :meth:`Randomness.digest_salts`, the salts of the
content digest that enters the release id.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any

import numpy as np

from spark_dp.errors import ParameterError
from spark_dp.randomness import continuous, exact
from spark_dp.randomness.keys import Label, ReleaseKey, encode_labels, secret_int, stream_key
from spark_dp.randomness.prf import index_blocks, prf_words

__all__ = ["DriverNoise", "Randomness", "UnboundRandomnessError"]

_PRF = (
    "AES-256 keyed per stream and counter by HMAC-SHA-256 of the release key bound to the "
    "release id"
)


class UnboundRandomnessError(ParameterError):
    """A draw from a Randomness that is not bound to a release id."""


@dataclass(frozen=True)
class Randomness:
    """The release key, the release it is bound to and the stream label path drawn on.

    Build it with :meth:`create` (entropy or a test seed) or :meth:`from_key_file`, then
    :meth:`bind` it to one release id before drawing; a key binds once, so make one per
    release.

    Attributes:
        key: the release key (secret; its ``repr`` shows only the fingerprint).
        release: the release id the streams are bound to (``None``: unbound, nothing can be
            drawn).
        path: labels of the current stream (empty for the root).
    """

    key: ReleaseKey
    release: str | None = None
    path: tuple[Label, ...] = field(default_factory=tuple)

    @classmethod
    def create(cls, seed: int | None = None) -> Randomness:
        """A fresh key from OS entropy when ``seed`` is None, else a test key from the seed
        (unbound: :meth:`bind` it)."""
        if seed is None:
            return cls(ReleaseKey.from_entropy())
        return cls(ReleaseKey.from_seed(seed))

    @classmethod
    def from_key_file(cls, path: str) -> Randomness:
        """The key held in ``path``, a key file ``spark-dp keygen`` wrote (mode 0600; unbound)."""
        return cls(ReleaseKey.from_file(path))

    @property
    def mode(self) -> str:
        """``entropy``, ``key-file`` or ``test-seed``."""
        return self.key.mode

    @property
    def seeded(self) -> bool:
        """True in test-seed mode (reproducible by anyone who knows the seed)."""
        return self.key.mode == "test-seed"

    @property
    def fingerprint(self) -> str:
        """The key fingerprint (public; equal for two releases with the same key)."""
        return self.key.fingerprint

    @property
    def bound(self) -> bool:
        """Whether this Randomness is bound to a release id (and may be drawn from)."""
        return self.release is not None

    def bind(self, release_id: str) -> Randomness:
        """The root stream of release ``release_id``: K_R = HMAC(K, "spark_dp/v2/release" ‖ R).

        A key binds once: this object (and every copy sharing its key) cannot be bound again,
        whatever the release id (:meth:`~.keys.ReleaseKey.claim`; ``docs/privacy/keys.md``).

        Raises:
            ParameterError: already bound, or an empty release id.
            KeyReusedError: the key was bound before (a :class:`ParameterError`).
        """
        if self.release is not None:
            raise ParameterError(
                f"this Randomness is already bound to release {self.release}; bind the unbound "
                "key (Randomness.create / from_key_file) once per release"
            )
        if not isinstance(release_id, str) or not release_id:
            raise ParameterError("bind(release_id) needs a non-empty release id string")
        self.key.claim(release_id)
        return Randomness(self.key, release_id)

    def digest_salts(self) -> tuple[int, int]:
        """The secret salts of the content digest (from the key, bound or not)."""
        return self.key.digest_salts()

    @cached_property
    def _root(self) -> bytes:
        if self.release is None:
            raise UnboundRandomnessError(
                "this Randomness is not bound to a release: call bind(release_id) first, or pass "
                "it to select_partitions / bound_contributions / distinct_count, which bind it "
                "(a key must never give two different releases correlated noise)"
            )
        return self.key.bound_secret(self.release)

    def child(self, *labels: Label) -> Randomness:
        """The independent stream for a named purpose (e.g. ``child("noise", 2)``); labels are
        strings or integers, typed (``child("noise", 1)`` is not ``child("noise", "1")``)."""
        encode_labels(labels)  # a label of another type is refused here, not at the first draw
        self._root  # noqa: B018 - refuses an unbound Randomness
        return Randomness(self.key, self.release, self.path + tuple(labels))

    @property
    def stream_key(self) -> bytes:
        """K_L of this stream (secret: never log it)."""
        return stream_key(self._root, self.path)

    def secret(self, name: str, bits: int = 63) -> int:
        """A secret non-negative integer named ``name`` of this stream (salts, seeds)."""
        return secret_int(self.stream_key, name, bits)

    def salt(self, name: str = "salt") -> int:
        """A signed 64-bit secret for Spark hash expressions (:func:`with_hash_column`)."""
        x = self.secret(name, 64)
        return x - (1 << 64) if x >= (1 << 63) else x

    def driver(self) -> DriverNoise:
        """Draws on the driver (GEM, the final release, the in-memory oracles)."""
        return DriverNoise(self.stream_key)

    def numpy_generator(self) -> np.random.Generator:
        """A numpy Generator (Philox keyed from this stream) for randomness that is not privacy
        noise: user orders and subsamples of the in-memory oracles, data generators."""
        key = [self.secret("numpy-0", 64), self.secret("numpy-1", 64)]
        return np.random.Generator(np.random.Philox(key=np.array(key, dtype=np.uint64)))

    def to_report(self) -> dict[str, Any]:
        """Report entry: key mode, fingerprint and samplers; never the key or a seed.

        A test seed's fingerprint is withheld: a seed has few bits, so anyone could find it (and
        with it the key and every noise value) by hashing candidate seeds until the fingerprint
        matches.
        """
        out: dict[str, Any] = {
            "mode": self.mode,
            "key_fingerprint": self.fingerprint,
            "production_safe": not self.seeded,
            "prf": _PRF,
            "samplers": {
                "thresholding noise": "floating-point Gaussian (Box-Muller) and Laplace from "
                f"128-bit uniforms; tails reach {continuous.GAUSSIAN_REACH:.2f} sigma and "
                f"{continuous.EXPONENTIAL_REACH:.1f} scale units",
                "released numbers": "exact discrete Laplace and exact exponential mechanism "
                "(Canonne-Kamath-Steinke 2020) on PRF bits",
            },
        }
        if self.seeded:
            out["key_fingerprint"] = None
            out["key_fingerprint_withheld"] = (
                "a test seed has few bits: its fingerprint would give the seed, the key and the "
                "noise away to anyone who hashes candidate seeds"
            )
            out["warning"] = (
                "key derived from a test seed: anyone who knows the seed can recompute the "
                "noise; NOT FOR PRODUCTION releases"
            )
        return out

    def __repr__(self) -> str:
        shown = "withheld (test seed)" if self.seeded else self.fingerprint
        return (
            f"Randomness(mode={self.mode!r}, fingerprint={shown!r}, release={self.release!r}, "
            f"path={self.path})"
        )


class DriverNoise:
    """Draws on the driver from one stream: draw i is the PRF at index i.

    Continuous draws (uniform, Gaussian, Laplace) for thresholding decisions on the driver, and
    exact draws (:meth:`discrete_laplace`, :meth:`exponential_mechanism`) for numbers that are
    released.
    """

    def __init__(self, stream_key: bytes) -> None:
        self._key = stream_key
        self._index = 0
        self._buffer = 0
        self._buffered = 0

    def __repr__(self) -> str:
        return f"DriverNoise(index={self._index})"

    def _words(self, n: int, counters: int) -> np.ndarray:
        """(n, 2·counters) uint64 words of the next n draws."""
        blocks = index_blocks(self._index, n)
        self._index += n
        return prf_words(self._key, range(counters), blocks)

    def uniform(self, size: int) -> np.ndarray:
        """Uniform draws in [0, 1) (53-bit grid)."""
        return continuous.uniform(self._words(size, 1)[:, 0])

    def gaussian(self, scale: float, size: int) -> np.ndarray:
        """N(0, scale²) draws."""
        return scale * continuous.gaussian(self._words(size, 2)[:, :3])

    def laplace(self, scale: float, size: int) -> np.ndarray:
        """Laplace(0, scale) draws (continuous)."""
        return scale * continuous.laplace(self._words(size, 2))

    def bits(self, k: int) -> int:
        """k uniform random bits as a non-negative integer (exact samplers' source)."""
        while self._buffered < k:
            w = self._words(1, 1)[0]
            self._buffer = (self._buffer << 128) | (int(w[0]) << 64) | int(w[1])
            self._buffered += 128
        self._buffered -= k
        out = self._buffer >> self._buffered
        self._buffer &= (1 << self._buffered) - 1
        return out

    def discrete_laplace(self, scale: Fraction) -> int:
        """Exact discrete Laplace: P[X = x] ∝ exp(−|x|/scale)."""
        return exact.discrete_laplace(self.bits, scale)

    def exponential_mechanism(self, gammas: list[Fraction]) -> int:
        """Exact exponential mechanism: index i with probability ∝ exp(−γ_i)."""
        return exact.exponential_mechanism(self.bits, gammas)
