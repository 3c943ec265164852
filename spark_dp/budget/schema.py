"""The budget store's tables and database connection (SQLAlchemy Core).

Tables carry their schema version in their names (``spark_dp_budget_v1_*``): they are created
when missing and never altered, so no migration tool is needed; a future layout gets new table
names beside these.

* ``caps``: one row per dataset: (ε, δ) cap, optional window in days.
* ``releases``: one row per (dataset, release id): its (ε, δ), noise steps, state
  (``reserved`` → ``committed``, or ``released`` when cancelled), attempt number and times.
* ``settings``: store-wide settings (the accountant).

URLs: ``sqlite:///path/budget.db`` (a local file; SQLite's locking is not reliable on network
file systems) or a server database such as ``postgresql://user@host/db`` (``pip install
spark_dp[postgres]`` for the psycopg driver).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy import event, exc
from sqlalchemy.engine import URL, make_url

from spark_dp.errors import ConfigError

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

__all__ = ["CAPS", "METADATA", "RELEASES", "SETTINGS", "connect", "display_url"]

PREFIX = "spark_dp_budget_v1_"
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

RELEASES = sa.Table(
    f"{PREFIX}releases",
    METADATA,
    sa.Column("dataset", sa.String(1024), primary_key=True),
    sa.Column("release", sa.String(64), primary_key=True),
    sa.Column("job", sa.String(200), nullable=False),
    sa.Column("algorithm", sa.String(200), nullable=True),
    sa.Column("epsilon", sa.Double, nullable=False),
    sa.Column("delta", sa.Double, nullable=False),
    # JSON list of NoiseStep dicts (named before Laplace steps were recorded: a dict without
    # "event" is a Gaussian step)
    sa.Column("gaussian", sa.Text, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("attempt", sa.Integer, nullable=False),
    sa.Column("reserved_at", sa.Double, nullable=False),
    sa.Column("committed_at", sa.Double, nullable=True),
    sa.Column("released_at", sa.Double, nullable=True),
)

SETTINGS = sa.Table(
    f"{PREFIX}settings",
    METADATA,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.String(1024), nullable=False),
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
            that is not installed, or a database that cannot be reached.
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
    _create_tables(engine, shown)
    return engine


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
            if attempt == 4 or "already exists" not in str(e):
                first = str(e.orig if e.orig is not None else e).strip().splitlines()
                raise ConfigError(
                    f"--budget-store {shown}: cannot open the database: {first[0] if first else e}"
                ) from e
            time.sleep(0.1 * (attempt + 1))
