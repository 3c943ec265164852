"""The budget store's tables and database connection (SQLAlchemy Core).

Tables carry their schema version in their names (``spark_dp_budget_v2_*``): they are created
when missing and never altered, so no migration tool is needed; a new layout gets new table
names beside the old ones, and the first open imports what the old ones hold
(:mod:`.migrate`: the v1 caps, settings and every charged release, once, in one transaction).

* ``caps``: one row per dataset: (ε, δ) cap, optional window in days.
* ``runs``: one row per run of a job: its dataset, request (pre-read identity), release id
  (once the data's digest is known), (ε, δ), noise steps (JSON, composed by
  :mod:`spark_dp.dp.accounting`), state, whether its key came from a test seed, the paths it
  writes, and the host, pid and start time of its process. States (:mod:`.store`): ``reserved`` →
  ``charged`` → ``committed`` or ``failed``; ``released`` (freed before any read) costs
  nothing.
* ``leases``: one row per run in flight: the process that holds it (host, pid, the process's
  start time, so a reused pid is told apart) and its heartbeat (renewed by the run every
  :data:`~spark_dp.budget.records.RENEW_SECONDS`, expired :data:`~spark_dp.budget.records.
  LEASE_SECONDS` after the last renewal): what lets ``settle`` tell a run whose process is
  provably gone from one that still runs (a table of its own beside ``runs``, whose layout is
  never altered).
* ``settings``: store-wide settings (the accountant, the v1 import marker).

URLs: ``sqlite:///path/budget.db`` (a local file; SQLite's locking is not reliable on network
file systems) or a server database such as ``postgresql://user@host/db`` (``pip install
spark_dp[postgres]`` for the psycopg driver).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy import event, exc
from sqlalchemy.engine import URL, make_url

from spark_dp.errors import BudgetStoreUnavailable, ConfigError

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

__all__ = [
    "CAPS",
    "LEASES",
    "METADATA",
    "RUNS",
    "SETTINGS",
    "V1_CAPS",
    "V1_RELEASES",
    "V1_SETTINGS",
    "connect",
    "display_url",
    "writing",
]

PREFIX = "spark_dp_budget_v2_"
METADATA = sa.MetaData()

CAPS = sa.Table(
    f"{PREFIX}caps",
    METADATA,
    sa.Column("dataset", sa.String(1024), primary_key=True),
    sa.Column("epsilon", sa.Double, nullable=False),
    sa.Column("delta", sa.Double, nullable=False),
    sa.Column("window_days", sa.Double, nullable=True),
    sa.Column("updated_at", sa.Double, nullable=False),
)

RUNS = sa.Table(
    f"{PREFIX}runs",
    METADATA,
    sa.Column("run", sa.String(64), primary_key=True),
    sa.Column("dataset", sa.String(1024), nullable=False, index=True),
    sa.Column("identity", sa.String(64), nullable=True),  # pre-read identity (ids.run_identity)
    sa.Column("release", sa.String(64), nullable=True),  # known once the data is digested
    sa.Column("job", sa.String(200), nullable=False),
    sa.Column("algorithm", sa.String(200), nullable=True),
    sa.Column("epsilon", sa.Double, nullable=False),
    sa.Column("delta", sa.Double, nullable=False),
    # JSON list of NoiseStep dicts (named before Laplace steps were recorded: a dict without
    # "event" is a Gaussian step)
    sa.Column("noise", sa.Text, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("test_seed", sa.Boolean, nullable=False),
    sa.Column("outputs", sa.Text, nullable=True),  # JSON {role: path} the run writes
    sa.Column("host", sa.String(255), nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("started_at", sa.Double, nullable=False),
    sa.Column("charged_at", sa.Double, nullable=True),
    sa.Column("ended_at", sa.Double, nullable=True),
    sa.Index(f"{PREFIX}runs_release", "dataset", "release"),
)

LEASES = sa.Table(
    f"{PREFIX}leases",
    METADATA,
    sa.Column("run", sa.String(64), primary_key=True),
    # the attempt holding the run: RUNS.host, pid and started_at of that attempt
    sa.Column("host", sa.String(255), nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("started_at", sa.Double, nullable=False),
    sa.Column("process_started", sa.Double, nullable=True),  # the pid's start time (Linux)
    sa.Column("renewed_at", sa.Double, nullable=False),
    sa.Column("lease_seconds", sa.Double, nullable=False),
)

SETTINGS = sa.Table(
    f"{PREFIX}settings",
    METADATA,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.String(1024), nullable=False),
)

# The v1 layout, read once by migrate.import_v1 (never created by this version).
_V1 = sa.MetaData()
V1_CAPS = sa.Table(
    "spark_dp_budget_v1_caps",
    _V1,
    sa.Column("dataset", sa.String(1024), primary_key=True),
    sa.Column("epsilon", sa.Double),
    sa.Column("delta", sa.Double),
    sa.Column("window_days", sa.Double),
    sa.Column("updated_at", sa.Double),
)
V1_RELEASES = sa.Table(
    "spark_dp_budget_v1_releases",
    _V1,
    sa.Column("dataset", sa.String(1024), primary_key=True),
    sa.Column("release", sa.String(64), primary_key=True),
    sa.Column("job", sa.String(200)),
    sa.Column("algorithm", sa.String(200)),
    sa.Column("epsilon", sa.Double),
    sa.Column("delta", sa.Double),
    sa.Column("gaussian", sa.Text),
    sa.Column("state", sa.String(16)),
    sa.Column("attempt", sa.Integer),
    sa.Column("reserved_at", sa.Double),
    sa.Column("committed_at", sa.Double),
    sa.Column("released_at", sa.Double),
)
V1_SETTINGS = sa.Table(
    "spark_dp_budget_v1_settings",
    _V1,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.String(1024)),
)

# Hadoop and object-store schemes: a budget store needs transactions, which they do not give.
_FILE_SYSTEMS = {
    "s3",
    "s3a",
    "s3n",
    "hdfs",
    "viewfs",
    "gs",
    "abfs",
    "abfss",
    "wasb",
    "wasbs",
    "adl",
    "oss",
    "file",
    "http",
    "https",
}
_HINT = "use sqlite:///path/budget.db (a local file) or postgresql://user@host/dbname"


def display_url(url: URL | str) -> str:
    """The URL with its password hidden (for messages and logs)."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except exc.ArgumentError:
        return "<unparseable URL>"


def _parse(url: str) -> URL:
    if not isinstance(url, str) or "://" not in url:
        raise ConfigError(
            f"--budget-store {url!r} is not a database URL; {_HINT}. A bare path is refused "
            "so that a typo never silently creates a new, empty budget"
        )
    scheme = url.split("://", 1)[0].lower()
    if scheme in _FILE_SYSTEMS:
        raise ConfigError(
            f"--budget-store {url!r} is a file-system URI, not a database: the budget store "
            f"needs transactions, which {scheme}:// does not give; {_HINT}"
        )
    try:
        u = make_url(url)
    except exc.ArgumentError as e:
        raise ConfigError(f"--budget-store {url!r} is not a database URL ({e}); {_HINT}") from e
    if u.get_backend_name() == "sqlite":
        db = u.database
        if not db or db == ":memory:" or u.query.get("mode") == "memory":
            raise ConfigError(
                f"--budget-store {url!r} has no database file: a budget must outlive the job; "
                "use sqlite:///path/budget.db"
            )
        parent = Path(db).expanduser().resolve().parent
        if not parent.is_dir():
            raise ConfigError(
                f"--budget-store {url!r}: directory {str(parent)!r} does not exist; create it "
                "first (the store never creates directories, so a typo cannot start a new budget)"
            )
        u = u.set(database=str(Path(db).expanduser()))
    elif u.drivername == "postgresql":
        u = u.set(drivername=f"postgresql+{_postgres_driver()}")
    return u


def _postgres_driver() -> str:
    """``psycopg`` (v3, the ``[postgres]`` extra) when installed, else SQLAlchemy's default."""
    try:
        import psycopg  # noqa: F401

        return "psycopg"
    except ImportError:
        return "psycopg2"


def _sqlite_engine(u: URL) -> Engine:
    """SQLite with ``BEGIN IMMEDIATE`` transactions: a transaction takes the write lock when it
    starts, so check-and-reserve is serialized across processes (others wait, up to 60 s)."""
    engine = sa.create_engine(u, connect_args={"timeout": 60})

    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # let the begin event below control transactions
        dbapi_conn.execute("PRAGMA busy_timeout = 60000")

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def connect(url: str) -> Engine:
    """An engine for ``url`` with the tables created if missing.

    Raises:
        ConfigError: not a database URL (a bare path, ``s3a://``, ``hdfs://``, ...), a driver
            that is not installed, a file that is not an SQLite database, or a database that
            cannot be reached.
        BudgetStoreUnavailable: the tables are missing and the store cannot be written (read
            only, or its disk is full: an empty database file this call created is removed).
    """
    u = _parse(url)
    shown = display_url(u)
    try:
        if u.get_backend_name() == "sqlite":
            engine = _sqlite_engine(u)
        else:
            engine = sa.create_engine(u, pool_pre_ping=True)
    except exc.NoSuchModuleError as e:
        raise ConfigError(f"--budget-store {shown}: unsupported database ({e}); {_HINT}") from e
    except ImportError as e:
        raise ConfigError(
            f"--budget-store {shown}: the database driver is not installed ({e}); for "
            "PostgreSQL pip install 'spark_dp[postgres]'"
        ) from e
    files = _sqlite_files(u)
    new = [f for f in files if not f.exists()]
    try:
        _create_tables(engine, shown)
    except BaseException:
        engine.dispose()
        for f in new:  # what this run created and left empty (a full disk): nothing of a store
            if f.is_file() and f.stat().st_size == 0:
                f.unlink(missing_ok=True)
        raise
    return engine


def _sqlite_files(u: URL) -> list[Path]:
    """An SQLite store's database file and its journals (none for a server database)."""
    if u.get_backend_name() != "sqlite" or not u.database:
        return []
    db = Path(u.database)
    return [db, *(db.with_name(db.name + suffix) for suffix in ("-journal", "-wal", "-shm"))]


def _first_line(e: exc.DBAPIError) -> str:
    lines = str(e.orig if e.orig is not None else e).strip().splitlines()
    return lines[0] if lines else type(e).__name__


def _full(e: exc.DBAPIError) -> bool:
    """SQLite's SQLITE_FULL (or a server's full disk)."""
    text = _first_line(e).lower()
    return "database or disk is full" in text or "no space left on device" in text


def _read_only(e: exc.DBAPIError) -> bool:
    text = _first_line(e).lower()
    return any(s in text for s in ("readonly", "read-only", "unable to open database file"))


def _not_a_database(shown: str, e: exc.DBAPIError) -> ConfigError:
    return ConfigError(
        f"--budget-store {shown} is not a budget store ({_first_line(e)}): the file exists and "
        "is not an SQLite database; pass the path of a store, or of a file to create"
    )


def _unavailable(shown: str, e: exc.DBAPIError) -> BudgetStoreUnavailable:
    if _full(e):
        return BudgetStoreUnavailable(
            f"--budget-store {shown}: no space left on its disk ({_first_line(e)}): free some "
            "space or use another store"
        )
    return BudgetStoreUnavailable(
        f"--budget-store {shown} cannot be written ({_first_line(e)}): make the file and its "
        "directory writable by this user, or use another store"
    )


@contextmanager
def writing(engine: Engine, shown: str) -> Iterator[Connection]:
    """A write transaction whose database errors are one line: a read-only store or a full
    disk is :class:`BudgetStoreUnavailable` (exit 1), a file that is no database a
    ConfigError."""
    try:
        with engine.begin() as conn:
            yield conn
    except exc.OperationalError as e:
        if _read_only(e) or _full(e):
            raise _unavailable(shown, e) from None
        raise
    except exc.DatabaseError as e:
        if "not a database" in _first_line(e):
            raise _not_a_database(shown, e) from None
        raise


def _create_tables(engine: Engine, shown: str) -> None:
    """Create missing tables; a concurrent creator may win the race, so retry a few times."""
    for attempt in range(5):
        try:
            METADATA.create_all(engine, checkfirst=True)
            return
        except (exc.IntegrityError, exc.ProgrammingError) as e:  # created meanwhile
            if attempt == 4:
                raise ConfigError(f"--budget-store {shown}: cannot create the tables: {e}") from e
            time.sleep(0.1 * (attempt + 1))
        except exc.OperationalError as e:
            if _read_only(e) or _full(e):
                raise _unavailable(shown, e) from None
            if attempt == 4 or "already exists" not in str(e):
                raise ConfigError(
                    f"--budget-store {shown}: cannot open the database: {_first_line(e)}"
                ) from None
            time.sleep(0.1 * (attempt + 1))
        except exc.DatabaseError as e:  # a file that is not an SQLite database
            if "not a database" in _first_line(e):
                raise _not_a_database(shown, e) from None
            raise
