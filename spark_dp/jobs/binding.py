"""A job's key, bound once every table it reads has been digested (see :mod:`.runner`).

The runner hands the job a :class:`ReleaseBinding` holding the *unbound* key. Each table the
job reads goes through a validation pass with :meth:`ReleaseBinding.gate` (``ctx.load_pairs``,
``ctx.load_incidences``, ``ctx.gate("capacities")``): right before the first such pass reads
rows, the binding calls the runner's charge hook (the budget charge becomes durable); when the
last table's digest arrives, it calls the runner's bind hook, which computes the release id
(:func:`spark_dp.budget.release_id`, recorded in the store) and binds the key to it. Only
then can the job draw: :attr:`ReleaseBinding.randomness` refuses before, so no noise can be
drawn from a key that is not bound to exactly the rows read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from spark_dp.io.digest import ContentDigest, ReadGate
from spark_dp.randomness import Randomness

__all__ = ["ReleaseBinding"]


class ReleaseBinding:
    """The unbound key of a run, the tables it must digest, and the runner's two hooks.

    Args:
        key: the unbound key.
        tables: the roles of the tables the job reads (``input``, ``capacities``, ...).
        charge: called once, right before the first read of rows.
        bind: ``bind(digests) -> release id``, called once every table is digested.
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
        self._digests: dict[str, ContentDigest] = {}
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
        )

    def _before_read(self) -> None:
        if not self._charged:
            self._charge()
            self._charged = True

    def _digested(self, role: str, digest: ContentDigest) -> None:
        if self._bound is not None:
            raise RuntimeError(f"table {role!r} was read after the release was bound")
        self._digests[role] = replace(digest, table=role)
        if set(self._digests) == set(self._tables):
            self._bound = self._key.bind(self._bind(list(self._digests.values())))

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
