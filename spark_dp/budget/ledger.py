"""The default ledger: where a run is recorded when it names no budget store.

Every job run that spends ε and is given no ``--budget-store`` records its run, as a store
would, in an SQLite file of the user's state directory (docs/privacy/budget.md#the-default-ledger):

* ``--ledger-file PATH``, else ``$SPARK_DP_LEDGER``, else
  ``$XDG_STATE_HOME/spark-dp/ledger.db`` (``~/.local/state/spark-dp/ledger.db`` when
  ``XDG_STATE_HOME`` is not set: the XDG base directory specification's state directory);
* the default's directory is created (mode 0700) when first needed; a file named explicitly
  must be in a directory that exists (a typo never starts a new ledger elsewhere);
* ``--no-ledger`` runs without a record; a driver that cannot write its ledger (a read-only
  home, a cluster node) says so in one line (exit 1) and runs only with ``--no-ledger`` or a
  shared store (``--budget-store postgresql://...``, docs/operations/cluster.md).

The ledger is a budget store opened with ``ledger=True`` (:meth:`BudgetStore.open
<spark_dp.budget.store.BudgetStore.open>`): a dataset without a cap is recorded, never refused,
and a cap set on it (``spark-dp budget set-cap`` without ``--store``) is enforced as a store's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from spark_dp.errors import BudgetStoreUnavailable, ConfigError
from spark_dp.io.fs import can_create_in

__all__ = ["LEDGER_ENV", "Ledger", "default_ledger_path"]

LEDGER_ENV = "SPARK_DP_LEDGER"
"""The environment variable naming the ledger file (instead of the default)."""

_HINT = (
    "on a cluster give every run a shared store (--budget-store postgresql://...), or point "
    f"--ledger-file or ${LEDGER_ENV} at a writable file, or pass --no-ledger to run without "
    "a record"
)


def default_ledger_path() -> Path:
    """``$XDG_STATE_HOME/spark-dp/ledger.db``, ``~/.local/state/spark-dp/ledger.db`` without
    it (a relative ``XDG_STATE_HOME`` is ignored, as the XDG base directories require)."""
    state = os.environ.get("XDG_STATE_HOME", "")
    base = Path(state) if os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / "spark-dp" / "ledger.db"


@dataclass(frozen=True)
class Ledger:
    """Where this run's ledger is, and whether it is the default (whose directory is made)."""

    path: Path
    default: bool

    @classmethod
    def resolve(cls, flag: str | None = None) -> Ledger:
        """``flag`` (``--ledger-file``), else ``$SPARK_DP_LEDGER``, else the default."""
        given = flag if flag is not None else os.environ.get(LEDGER_ENV) or None
        if given is not None:
            if not given.strip():
                raise ConfigError("--ledger-file is an empty string; pass a file path")
            return cls(Path(os.path.abspath(os.path.expanduser(given))), default=False)
        try:
            return cls(default_ledger_path(), default=True)
        except (RuntimeError, KeyError):  # no home directory (a bare cluster container)
            raise BudgetStoreUnavailable(
                f"cannot find the default ledger (no home directory, no XDG_STATE_HOME): {_HINT}"
            ) from None

    @property
    def url(self) -> str:
        """The SQLite URL of the ledger file."""
        return f"sqlite:///{self.path}"

    @property
    def shown(self) -> str:
        """How messages name it."""
        return f"the default ledger {self.path}" if self.default else f"the ledger {self.path}"

    def check(self) -> None:
        """Refuse, before anything is read or made, a ledger this process cannot write.

        Raises:
            ConfigError: a file named explicitly whose directory does not exist, or a directory.
            BudgetStoreUnavailable: a file, directory or ancestor this user cannot write (exit 1,
                one line saying what to do instead).
        """
        if self.path.is_dir():
            raise ConfigError(f"{self.shown} is a directory; pass a file path (--ledger-file)")
        if self.path.exists():
            if not os.access(self.path, os.R_OK | os.W_OK):
                raise self._unwritable("the file is not writable by this user")
            directory = self.path.parent
        elif not self.default:
            if not self.path.parent.is_dir():
                raise ConfigError(
                    f"--ledger-file {self.path}: directory {self.path.parent} does not exist; "
                    "create it first (a ledger is never started in a directory made by a typo)"
                )
            directory = self.path.parent
        else:
            directory = self.path.parent
            while not directory.exists():
                directory = directory.parent
            if not directory.is_dir():
                raise self._unwritable(f"{directory} is not a directory")
        if not can_create_in(str(directory)):
            raise self._unwritable(f"directory {directory} is not writable")

    def prepare(self) -> str:
        """Check it, make the default's directory (mode 0700), and return its URL."""
        self.check()
        if self.default:
            try:
                self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            except OSError as exc:
                raise self._unwritable(exc.strerror or type(exc).__name__) from None
        return self.url

    def _unwritable(self, why: str) -> BudgetStoreUnavailable:
        return BudgetStoreUnavailable(f"cannot write {self.shown} ({why}): {_HINT}")
