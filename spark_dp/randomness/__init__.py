"""The only place where spark_dp draws randomness: keyed, recomputable, hardened.

Every release has a 256-bit secret key (:class:`ReleaseKey`): from the OS CSPRNG by default,
from ``--noise-key-file`` (a file ``spark-dp keygen`` wrote, kept in a secret store), or derived
from ``--seed`` (test mode, flagged *not for production* in the report). Every random value of
the release is a cryptographic pseudorandom function of (key, stream label, row key or draw
index, counter): AES-256 under keys derived by HMAC-SHA-256 (:mod:`.keys`, :mod:`.prf`).
Consequences:

* any recomputation by Spark (task retry, lost executor, speculative task, a second action on a
  DataFrame) gives bit-identical noise, so nothing is checkpointed for privacy;
* nothing is drawn before the key is **bound** to a release id (:meth:`Randomness.bind`, once
  per key object): the hash of the job, its arguments and the content digest of the rows it
  read. The same key, rows and arguments give the identical release (a retry is the same
  release); anything else gives independent noise, so one key never gives two different
  releases correlated noise;
* reports, logs and ledgers carry only the key's fingerprint (withheld for a test seed), never
  the key or a seed.

Streams are named (:meth:`Randomness.child`): two purposes never share bits. Samplers:

* :mod:`.continuous`: Gaussian and Laplace from 128-bit uniforms, for threshold decisions
  (partition selection releases membership only); their tail reach sets the smallest δ a
  release may claim (:func:`spark_dp.dp.calibration.check_sampler_delta`);
* :mod:`.exact`: the discrete Laplace and the exponential mechanism on exact integer and
  rational arithmetic (Canonne, Kamath & Steinke 2020), for values released as numbers.

Modules: :mod:`.keys` (keys, derivations, fingerprint, bind once), :mod:`.key_file` (the key
file format: writing, reading and checking), :mod:`.prf` (the PRF),
:mod:`.continuous`, :mod:`.exact`, :mod:`.streams` (:class:`Randomness`, :class:`DriverNoise`),
:mod:`.frames` (:func:`add_noise_column`, :func:`with_hash_column`, :func:`with_secrets`).
"""

from spark_dp.randomness.frames import (
    add_noise_column,
    row_digest_column,
    with_hash_column,
    with_secrets,
)
from spark_dp.randomness.keys import KeyReusedError, ReleaseKey
from spark_dp.randomness.streams import DriverNoise, Randomness, UnboundRandomnessError

__all__ = [
    "DriverNoise",
    "KeyReusedError",
    "Randomness",
    "ReleaseKey",
    "UnboundRandomnessError",
    "add_noise_column",
    "row_digest_column",
    "with_hash_column",
    "with_secrets",
]
