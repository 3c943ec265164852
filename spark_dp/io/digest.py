"""The keyed content digest of a table, computed inside the validation pass that reads it.

A release id covers *exactly the rows the job reads* (see ``docs/privacy/keys.md``): editing one
user's rows, even keeping the file sizes and modification times, gives another release id and
therefore independent noise. The digest of a table of n rows r_1..r_n is

    D = SHA-256("spark_dp/v2/content-digest" ‖ table ‖ n ‖ S_0 ‖ S_1)[:16],
    S_j = (Σ_i xxhash64(salt_j; r_i)) mod 2⁶⁴,

where r_i is the row's id columns as the job reads them (cast to strings, each followed by its
null flag, so ``(null, "a")`` and ``("a", null)`` differ) and the two salts are secrets of the
*unbound* release key (:meth:`spark_dp.randomness.ReleaseKey.digest_salts`). A sum does not
depend on the row order or the partitioning. Spark sums each hash as four 16-bit limbs in
``long`` columns, which cannot overflow below 2⁴⁷ rows (Spark 4's ANSI mode fails a ``long`` sum
that overflows, as a plain sum of 64-bit hashes would after a few rows), and the driver puts
S_j = Σ_k limb_sum_k · 2¹⁶ᵏ mod 2⁶⁴ back together; ``long`` sums cost about half of what two
``decimal(38,0)`` sums do (``bench/digest_cost.py``). The sums are more columns of the
aggregation validation runs anyway: no extra pass. The salts reach that aggregation as two
columns of a broadcast one-row table (:func:`spark_dp.randomness.with_secrets`), never as
literals of its plan, which Spark's UI and event log show (docs/privacy/boundary.md#plans).

A **Delta table read at a pinned version** needs no pass over its rows: a version is immutable
(each commit adds files under fresh names and never rewrites one, docs/operations/tables.md),
so the version, its commit file, the files it is made of and the columns read fix the rows read
exactly. Its digest is HMAC-SHA-256 under the salts of that description
(:func:`snapshot_digest`), made on the driver from the table's log
(:func:`spark_dp.io.delta.snapshot`) without reading a row (docs/privacy/keys.md#snapshot).
A **Parquet or CSV input read by path from local files** needs none either: the files' bytes fix
its rows, and the digest is the same HMAC of the format, the columns and each file's name, size
and SHA-256 (:func:`spark_dp.io.file_snapshot.snapshot`), a stream of bytes on the driver after
the charge, with no decoding and no Spark job (docs/privacy/keys.md#files). On **HDFS** a
file's line holds its length, modification time, inode id and HDFS file checksum instead, read
from the namenode and the datanodes' stored block checksums (docs/privacy/keys.md#hdfs).

What it protects against: someone who cannot read the key cannot compute the digest of a
candidate table (the release id, which is public, reveals nothing about the rows), nor aim for a
collision. xxhash64 is not a cryptographic PRF, so the digest is a guard against accidental and
casual reuse of a key on other data, keyed so that the public id carries nothing, not a proof
against an adversary who can choose the rows after seeing digests. The digest is never logged
nor reported; ``repr`` hides it.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from spark_dp.randomness import Randomness

__all__ = [
    "ContentDigest",
    "ReadGate",
    "ReleaseBinding",
    "columns_line",
    "digested",
    "finish_digest",
    "needs_digest",
    "snapshot_digest",
    "values_digest",
]

_DOMAIN = b"spark_dp/v2/content-digest\x00"
_SNAPSHOT_DOMAIN = b"spark_dp/v2/snapshot-digest\x00"
_SUMS = ("_digest_0", "_digest_1")
_SALTS = ("_digest_salt_0", "_digest_salt_1")
_MOD = 1 << 64
_LIMBS, _LIMB_BITS, _LIMB_MASK = 4, 16, 0xFFFF


@dataclass(frozen=True)
class ContentDigest:
    """The keyed digest of one table (secret-keyed, order-independent; never logged).

    Attributes:
        table: what was digested (``pairs``, ``incidences``, ``capacities``, ``record weights``).
        key_fingerprint: the fingerprint of the key whose salts keyed it (public).
        value: 32 hex characters (hidden from ``repr``).
    """

    table: str
    key_fingerprint: str
    value: str = field(repr=False)

    def __repr__(self) -> str:
        return f"ContentDigest(table={self.table!r}, value=<hidden>)"


@dataclass(frozen=True)
class ReadGate:
    """What a validation pass does around its first read of rows.

    Attributes:
        salts: the digest's two secret salts.
        key_fingerprint: the fingerprint of the key the salts come from.
        before_read: called right before the aggregation that reads the rows (the job runner
            makes its budget charge durable here: a failure after it stays charged).
        on_digest: called with the digest as soon as the aggregation returns, before its
            results are checked (so the runner can bind the release before any data-dependent
            error); with None when the table is read without a digest (``digest`` False).
        digest: whether the rows must be digested. False for an entropy key: it exists in one
            object, which binds once, so no other release can ever share its noise and its
            release needs no digest of the rows (:func:`needs_digest`); a validation with
            nothing else to check then runs no pass of its own.
        snapshot: with ``digest``, the description of what fixes the rows read, or a
            function that makes it (called after the charge, as it may read the input's
            bytes): a Delta version (:func:`spark_dp.io.delta.snapshot`) or a Parquet or CSV
            input's files (:func:`spark_dp.io.file_snapshot.snapshot`). The digest is then
            :func:`snapshot_digest` of it, and the rows are read without a pass of their own.
    """

    salts: tuple[int, int] = field(repr=False)
    key_fingerprint: str
    before_read: Callable[[], None] = lambda: None
    on_digest: Callable[[ContentDigest | None], None] = lambda digest: None
    digest: bool = True
    snapshot: str | Callable[[], str] | None = field(default=None, repr=False)

    @classmethod
    def keyed_by(cls, randomness: Randomness) -> ReadGate:
        """A gate that only digests, keyed by ``randomness``'s key (the library's use); for an
        entropy key, one that asks for no digest (:func:`needs_digest`)."""
        return cls(
            randomness.digest_salts(), randomness.fingerprint, digest=needs_digest(randomness)
        )

    def of_snapshot(self, snapshot: str | Callable[[], str]) -> ReadGate:
        """This gate for rows of the immutable snapshot ``snapshot`` (see ``snapshot``)."""
        return replace(self, snapshot=snapshot)

    @property
    def digests_rows(self) -> bool:
        """Whether the digest is made from the rows (a pass over them), not from a snapshot."""
        return self.digest and self.snapshot is None

    def read_without_pass(self, table: str) -> ContentDigest | None:
        """The rows are read by the algorithm alone: the charge, then ``on_digest`` with the
        snapshot's digest (None without a snapshot or when no digest is wanted)."""
        self.before_read()
        return self.snapshot_read(table)

    def snapshot_read(self, table: str) -> ContentDigest | None:
        """``on_digest`` with the snapshot's digest of ``table`` (None without a snapshot or
        when no digest is wanted), after the charge; returns it."""
        if not self.digest or self.snapshot is None:
            self.on_digest(None)
            return None
        text = self.snapshot() if callable(self.snapshot) else self.snapshot
        return snapshot_digest(table, text, self)


def needs_digest(key: Randomness) -> bool:
    """Whether a release with ``key`` must be bound to a digest of the rows it reads: a key
    that can come back for other rows does (a key file, read again; a test seed, derived
    again); an entropy key does not, as it exists in one object that binds once
    (docs/privacy/keys.md#digest)."""
    return key.mode != "entropy"


def digested(
    df: DataFrame, columns: Sequence[Column], gate: ReadGate
) -> tuple[DataFrame, list[Column]]:
    """``df`` with the digest's salts joined as data (:func:`~spark_dp.randomness.with_secrets`),
    and the aggregate columns of the digest's sums over rows of ``columns`` (strings): per
    salt, the sums of the hash's four 16-bit limbs (module docstring). Aggregate the returned
    frame."""
    from pyspark.sql import functions as F

    from spark_dp.randomness import with_secrets

    flagged = [x for c in columns for x in (c, c.isNull())]
    out = []
    for j, salt in enumerate(_SALTS):
        h = F.xxhash64(F.col(salt), *flagged)
        for k in range(_LIMBS):
            limb = F.shiftrightunsigned(h, _LIMB_BITS * k).bitwiseAND(_LIMB_MASK)
            out.append(F.sum(limb).alias(f"{_SUMS[j]}_{k}"))
    return with_secrets(df, dict(zip(_SALTS, gate.salts, strict=True))), out


def _sum(stats: Any, j: int) -> int:
    """S_j mod 2⁶⁴ from its limb sums."""
    total = sum(int(stats[f"{_SUMS[j]}_{k}"] or 0) << (_LIMB_BITS * k) for k in range(_LIMBS))
    return total % _MOD


def finish_digest(table: str, rows: int, stats: Any, gate: ReadGate) -> ContentDigest:
    """The digest from the row count and the aggregated limb sums (a Row holding
    ``_digest_*``); hands it to ``gate.on_digest`` and returns it."""
    sums = [_sum(stats, j) for j in range(len(_SUMS))]
    h = hashlib.sha256(_DOMAIN + table.encode("utf-8") + b"\x00")
    h.update(rows.to_bytes(16, "big") + b"".join(s.to_bytes(8, "big") for s in sums))
    digest = ContentDigest(table, gate.key_fingerprint, h.hexdigest()[:32])
    gate.on_digest(digest)
    return digest


def values_digest(table: str, values: Sequence[int], gate: ReadGate) -> ContentDigest:
    """The keyed digest of a small in-memory sequence of integers (the distinct count's curve):
    HMAC-SHA-256 under the salts of the ordered values, first 16 bytes."""
    text = ",".join(str(int(v)) for v in values).encode("ascii")
    return _keyed(_DOMAIN, table, text, gate)


def columns_line(columns: dict[str, str]) -> str:
    """The line of a snapshot's description that names the columns read: ``columns`` followed
    by ``canonical=source`` pairs, in the reader's order."""
    return "columns " + ",".join(f"{canon}={src}" for canon, src in columns.items())


def snapshot_digest(table: str, snapshot: str, gate: ReadGate) -> ContentDigest:
    """The keyed digest of rows read from an immutable snapshot, from its description
    ``snapshot`` (the version, its files and the columns read; module docstring):
    HMAC-SHA-256 under the salts, first 16 bytes, in a domain of its own."""
    return _keyed(_SNAPSHOT_DOMAIN, table, snapshot.encode("utf-8"), gate)


def _keyed(domain: bytes, table: str, text: bytes, gate: ReadGate) -> ContentDigest:
    """HMAC-SHA-256 under ``gate``'s salts of (domain, table, text); handed to ``on_digest``."""
    key = b"".join(x.to_bytes(8, "big", signed=True) for x in gate.salts)
    value = hmac.new(key, domain + table.encode("utf-8") + b"\x00" + text, hashlib.sha256)
    digest = ContentDigest(table, gate.key_fingerprint, value.hexdigest()[:32])
    gate.on_digest(digest)
    return digest


class ReleaseBinding:
    """The unbound key of a run, the tables it must digest, and the runner's two hooks.

    Args:
        key: the unbound key.
        tables: the roles of the tables the job reads (``input``, ``capacities``, ...).
        charge: called once, right before the first read of rows.
        bind: ``bind(digests) -> release id``, called once every table is read, with the
            digests of those read with one (an entropy key's input has none: ReadGate.digest).
    """

    def __init__(
        self,
        key: Randomness,
        tables: Sequence[str],
        charge: Callable[[], None],
        bind: Callable[[list[ContentDigest]], str],
    ) -> None:
        if key.bound:
            raise ValueError("a ReleaseBinding starts from an unbound key")
        self._key = key
        self._tables = tuple(tables)
        self._charge = charge
        self._bind = bind
        self._charged = False
        self._digests: dict[str, ContentDigest | None] = {}
        self._bound: Randomness | None = None

    def gate(self, role: str) -> ReadGate:
        """The gate of the validation pass that reads table ``role``."""
        if role not in self._tables:
            raise KeyError(f"the job reads no table {role!r} (it reads {self._tables})")
        return ReadGate(
            self._key.digest_salts(),
            self._key.fingerprint,
            before_read=self._before_read,
            on_digest=lambda digest: self._digested(role, digest),
            digest=needs_digest(self._key),
        )

    def _before_read(self) -> None:
        if not self._charged:
            self._charge()
            self._charged = True

    def _digested(self, role: str, digest: ContentDigest | None) -> None:
        if self._bound is not None:
            raise RuntimeError(f"table {role!r} was read after the release was bound")
        self._digests[role] = None if digest is None else replace(digest, table=role)
        if set(self._digests) == set(self._tables):
            read = [d for d in self._digests.values() if d is not None]
            self._bound = self._key.bind(self._bind(read))

    @property
    def charged(self) -> bool:
        """Whether the charge hook ran (the job has started to read rows)."""
        return self._charged

    @property
    def randomness(self) -> Randomness:
        """The key bound to the release (a job without input tables binds on first use).

        Raises:
            RuntimeError: a table of the job has not been read yet.
        """
        if self._bound is None and not self._tables:
            self._bound = self._key.bind(self._bind([]))
        if self._bound is None:
            missing = sorted(set(self._tables) - set(self._digests))
            raise RuntimeError(
                f"the release key is bound once every table is read; not read yet: {missing}"
            )
        return self._bound
