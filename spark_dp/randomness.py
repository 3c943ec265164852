"""The only place where spark_dp draws randomness.

Two modes, chosen once per job by :meth:`Randomness.create`:

* **entropy** (default, production): every uniform bit comes from the operating system's
  CSPRNG (``os.urandom``), on the driver and inside executors. Nothing can replay it.
* **fixed seed** (tests, reproducible experiments): every draw is a deterministic function of
  ``(seed, stream label, row key)``. Runs repeat exactly, independently of Spark partitioning,
  executor count or input row order. The report flags this mode as *not for production*: anyone
  who learns the seed can subtract the noise.

Streams are named: :meth:`Randomness.child` derives an independent stream for a purpose
("capping", ("noise", 1), ...), so two uses never share noise.

Noise for DataFrames (:func:`add_noise_column`) is a vectorized pandas UDF. In seeded mode the
per-row uniforms are SplitMix64 mixes of a 128-bit row-key hash computed by Spark SQL and the
stream's key, so a row's noise depends only on its key. In entropy mode the UDF is marked
non-deterministic; call :func:`materialize` on its result before using it twice, or Spark may
recompute the lineage and draw different noise for the same item.

Samplers: uniforms carry 52 random bits in the open interval (0, 1); Gaussians by Box-Muller;
Laplace as the difference of two Exp(1) draws; categorical draws by inverse CDF. These are
floating-point samplers (research grade): they are not hardened against the floating-point
attacks of Mironov (2012); see the README's privacy caveats.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = [
    "DriverNoise",
    "Randomness",
    "add_noise_column",
    "hash_column",
    "materialize",
]

_MASK64 = (1 << 64) - 1
_TWO_PI = 2.0 * np.pi


# --------------------------------------------------------------------------- bit sources


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finalizer on uint64 arrays (a bijective 64-bit mixer)."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _uniform_from_bits(bits: np.ndarray) -> np.ndarray:
    """Map uint64 words to doubles in the open interval (0, 1) using their top 52 bits.

    u = (2k + 1)·2^-53 for k < 2^52: every value is exactly representable, the smallest is
    2^-53 and the largest 1 − 2^-53, so ln(u) and ln(1 − u) are always finite.
    """
    k = (bits >> np.uint64(12)).astype(np.float64)
    return (2.0 * k + 1.0) * (1.0 / 9007199254740992.0)


def _entropy_bits(n: int, words: int) -> np.ndarray:
    """``n × words`` uint64 words from the OS CSPRNG."""
    return np.frombuffer(os.urandom(8 * n * words), dtype=np.uint64).reshape(n, words)


def gaussian_from_uniforms(u1: np.ndarray, u2: np.ndarray) -> np.ndarray:
    """Standard normal draws from two independent uniforms on (0, 1) (Box-Muller)."""
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(_TWO_PI * u2)


def laplace_from_uniforms(u1: np.ndarray, u2: np.ndarray) -> np.ndarray:
    """Standard Laplace (scale 1) draws: E1 − E2 with E = −ln U ~ Exp(1)."""
    return np.log(u2) - np.log(u1)


# --------------------------------------------------------------------------- Randomness


def _derive64(seed: int, path: tuple[str, ...], purpose: str) -> int:
    """A 64-bit key derived from (seed, stream path, purpose) by SHA-256."""
    text = "\x1f".join([str(seed), *path, purpose])
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")


def _signed64(x: int) -> int:
    return x - (1 << 64) if x >= (1 << 63) else x


@dataclass(frozen=True)
class Randomness:
    """Where a job's randomness comes from, and the stream it is drawing on.

    Attributes:
        seed: ``None`` in entropy mode; the fixed seed otherwise.
        path: labels of the current stream (empty for the root).
    """

    seed: int | None = None
    path: tuple[str, ...] = field(default_factory=tuple)

    @classmethod
    def create(cls, seed: int | None = None) -> Randomness:
        """Entropy mode when ``seed`` is None, fixed-seed mode otherwise."""
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            from spark_dp.errors import ParameterError

            raise ParameterError(f"seed must be an integer or omitted, got {seed!r}")
        return cls(seed=seed)

    @property
    def seeded(self) -> bool:
        """True in fixed-seed (test) mode."""
        return self.seed is not None

    def child(self, *labels: object) -> Randomness:
        """An independent stream for a named purpose (e.g. ``child("noise", 2)``)."""
        return Randomness(self.seed, self.path + tuple(str(x) for x in labels))

    def key64(self, purpose: str) -> int:
        """A 64-bit secret: OS entropy, or derived from (seed, stream, purpose) when seeded."""
        if self.seed is None:
            return secrets.randbits(64)
        return _derive64(self.seed, self.path, purpose)

    def salt(self, purpose: str = "salt") -> int:
        """A signed 64-bit salt for Spark hash expressions (see :func:`hash_column`)."""
        return _signed64(self.key64(purpose))

    def driver(self) -> DriverNoise:
        """Noise for driver-side mechanisms (GEM, a final Laplace release, oracles)."""
        return DriverNoise(self)

    def numpy_generator(self) -> np.random.Generator:
        """A numpy Generator for non-privacy randomness (data generators, sampling baselines).

        Seeded mode: Philox keyed from the stream. Entropy mode: seeded from OS entropy.
        Do not use it for privacy noise; use :meth:`driver` or :func:`add_noise_column`.
        """
        if self.seed is None:
            return np.random.Generator(np.random.Philox(secrets.randbits(128)))
        key = [self.key64("numpy-0"), self.key64("numpy-1")]
        return np.random.Generator(np.random.Philox(key=np.array(key, dtype=np.uint64)))

    def to_report(self) -> dict:
        """Report entry: the mode and, when seeded, the seed with a warning."""
        if self.seed is None:
            return {"mode": "entropy", "source": "os.urandom", "production_safe": True}
        return {
            "mode": "fixed-seed",
            "seed": self.seed,
            "production_safe": False,
            "warning": "fixed seed: the noise is reproducible by anyone who knows the seed; "
            "NOT FOR PRODUCTION releases",
        }


class DriverNoise:
    """Uniform, Gaussian, Laplace and categorical draws on the driver.

    Entropy mode reads ``os.urandom``; seeded mode is a counter-based stream: the i-th draw of
    the stream is a SplitMix64 mix of (stream key, i), so results do not depend on how many
    draws other streams made.
    """

    def __init__(self, randomness: Randomness) -> None:
        self._r = randomness
        self._counter = 0
        self._key = np.uint64(randomness.key64("driver")) if randomness.seeded else None

    def _bits(self, n: int, words: int) -> np.ndarray:
        if self._key is None:
            return _entropy_bits(n, words)
        idx = np.arange(self._counter, self._counter + n * words, dtype=np.uint64)
        self._counter += n * words
        return _splitmix64(_splitmix64(idx ^ self._key) ^ self._key).reshape(n, words)

    def uniform(self, size: int) -> np.ndarray:
        """Uniform draws on the open interval (0, 1)."""
        return _uniform_from_bits(self._bits(size, 1)[:, 0])

    def gaussian(self, scale: float, size: int) -> np.ndarray:
        """N(0, scale²) draws."""
        b = _uniform_from_bits(self._bits(size, 2))
        return scale * gaussian_from_uniforms(b[:, 0], b[:, 1])

    def laplace(self, scale: float, size: int) -> np.ndarray:
        """Laplace(0, scale) draws."""
        b = _uniform_from_bits(self._bits(size, 2))
        return scale * laplace_from_uniforms(b[:, 0], b[:, 1])

    def categorical(self, log_weights: Sequence[float] | np.ndarray) -> int:
        """Index i with probability ∝ exp(log_weights[i]) (exponential-mechanism sampling).

        Normalizes by the maximum first (log-sum-exp), so no weight overflows.
        """
        lw = np.asarray(log_weights, dtype=float)
        p = np.exp(lw - np.max(lw))
        cdf = np.cumsum(p)
        u = self.uniform(1)[0] * cdf[-1]
        return int(min(np.searchsorted(cdf, u, side="right"), len(lw) - 1))


# --------------------------------------------------------------------------- DataFrames


def hash_column(randomness: Randomness, *cols, purpose: str = "hash"):
    """A salted 64-bit hash column of ``cols`` (Spark ``xxhash64``), for random ranking.

    Used where randomness must be a function of a row's own key, e.g. the uniform subsample
    of a user's items (spec partition_selection.md A9). The salt is secret in entropy mode.
    This is a sampling device, not privacy noise.
    """
    from pyspark.sql import functions as F

    return F.xxhash64(F.lit(randomness.salt(purpose)), *cols)


def add_noise_column(
    df,
    key_cols: Sequence[str],
    out_col: str,
    *,
    distribution: str,
    scale: float,
    randomness: Randomness,
):
    """Append ``out_col`` = independent noise per row (Gaussian σ = scale, or Laplace b = scale).

    Args:
        df: a DataFrame with one row per noised key.
        key_cols: columns that identify the row (e.g. ``["item"]``); in seeded mode the noise of
            a row is a function of (seed, stream, key) only, never of its partition.
        out_col: name of the noise column (name it ``*_private`` if it must not leave the job).
        distribution: ``"gaussian"`` or ``"laplace"``.
        scale: σ or the Laplace scale b.
        randomness: the stream (use a fresh :meth:`Randomness.child` per round).

    Returns:
        ``df`` with the float64 column ``out_col``. In entropy mode, :func:`materialize` the
        result before reading it twice.
    """
    from pyspark.sql import functions as F

    if distribution not in ("gaussian", "laplace"):
        raise ValueError(f"distribution must be 'gaussian' or 'laplace', got {distribution!r}")
    transform = gaussian_from_uniforms if distribution == "gaussian" else laplace_from_uniforms
    scale = float(scale)

    if randomness.seeded:
        k1 = np.uint64(randomness.key64("noise-k1"))
        k2 = np.uint64(randomness.key64("noise-k2"))
        cols = [F.col(c) for c in key_cols]
        h1 = F.xxhash64(F.lit(randomness.salt("noise-h1")), *cols)
        h2 = F.xxhash64(F.lit(randomness.salt("noise-h2")), *cols)

        @F.pandas_udf("double")
        def _seeded_noise(a: pd.Series, b: pd.Series) -> pd.Series:
            x = a.to_numpy(dtype=np.int64).view(np.uint64)
            y = b.to_numpy(dtype=np.int64).view(np.uint64)
            # 128-bit row key (x, y); two words per row, each mixing both halves and a key.
            w1 = _splitmix64(_splitmix64(x ^ k1) ^ y)
            w2 = _splitmix64(_splitmix64(y ^ k2) ^ x)
            return pd.Series(scale * transform(_uniform_from_bits(w1), _uniform_from_bits(w2)))

        return df.withColumn(out_col, _seeded_noise(h1, h2))

    @F.pandas_udf("double")
    def _entropy_noise(a: pd.Series) -> pd.Series:
        bits = _uniform_from_bits(_entropy_bits(len(a), 2))
        return pd.Series(scale * transform(bits[:, 0], bits[:, 1]))

    return df.withColumn(out_col, _entropy_noise.asNondeterministic()(F.lit(0)))


def materialize(df):
    """Compute ``df`` once and cut its lineage (``localCheckpoint(eager=True)``).

    Noise drawn in entropy mode must be drawn exactly once per row: a recomputation would draw
    different noise and break the privacy analysis. After this call, a lost executor makes the
    job fail instead of silently redrawing.
    """
    return df.localCheckpoint(eager=True)
