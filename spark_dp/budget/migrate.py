"""Importing a v1 budget store into the v2 tables, once, so that no spend is lost.

A store written by an earlier spark_dp holds ``spark_dp_budget_v1_*`` tables. On the first open
by this version, in one transaction: every v1 cap is copied (unless v2 already has a cap for that
dataset), the v1 settings (the accountant), and every release that counts: ``committed`` ones
as committed runs, ``reserved`` ones (in flight or failed after reading, v1 could not tell) as
``failed`` (charged) runs. ``released`` ones cost nothing and are left behind. A marker in the
v2 settings makes the import happen once; the v1 tables are left untouched (an older spark_dp
still reading them sees its own state, not the v2 runs).

A v1 release id can never equal a v2 one (the compat version and the digest are in the v2 id),
so a retry of a v1 release under v2 is a new release and is charged again.
"""

from __future__ import annotations

import hashlib
import time
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy import exc

from spark_dp.budget.schema import (
    CAPS,
    RUNS,
    SETTINGS,
    V1_CAPS,
    V1_RELEASES,
    V1_SETTINGS,
    writing,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

__all__ = ["IMPORT_MARKER", "import_v1"]

IMPORT_MARKER = "imported_v1_at"
"""The v2 setting that records when the v1 tables were imported."""


def _run_id(dataset: str, release: str) -> str:
    return "v1-" + hashlib.sha256(f"{dataset}\x00{release}".encode()).hexdigest()[:40]


def import_v1(engine: Engine, shown: str) -> bool:
    """Import the v1 tables of the store once; True if this call imported them."""
    inspector = sa.inspect(engine)
    if not inspector.has_table(V1_CAPS.name):
        return False
    has_releases = inspector.has_table(V1_RELEASES.name)
    has_settings = inspector.has_table(V1_SETTINGS.name)
    with engine.connect() as conn:
        done = conn.execute(sa.select(SETTINGS.c.key).where(SETTINGS.c.key == IMPORT_MARKER))
        if done.first() is not None:
            return False
    try:
        with writing(engine, shown) as conn:
            marker = sa.select(SETTINGS.c.key).where(SETTINGS.c.key == IMPORT_MARKER)
            if conn.execute(marker.with_for_update()).first() is not None:
                return False  # another process imported them meanwhile
            now = time.time()
            have = {r.dataset for r in conn.execute(sa.select(CAPS.c.dataset))}
            for cap in conn.execute(sa.select(V1_CAPS)):
                if cap.dataset not in have:
                    conn.execute(CAPS.insert().values(**cap._mapping))
            if has_settings:
                settings = {r.key for r in conn.execute(sa.select(SETTINGS.c.key))}
                for row in conn.execute(sa.select(V1_SETTINGS)):
                    if row.key not in settings:
                        conn.execute(SETTINGS.insert().values(key=row.key, value=row.value))
            if has_releases:
                _import_releases(conn)
            conn.execute(SETTINGS.insert().values(key=IMPORT_MARKER, value=f"{now:.3f}"))
    except exc.IntegrityError:  # a concurrent importer inserted the same rows first
        return False
    return True


def _import_releases(conn: sa.Connection) -> None:
    counted = V1_RELEASES.c.state.in_(("committed", "reserved"))
    for r in conn.execute(sa.select(V1_RELEASES).where(counted)):
        committed = r.state == "committed"
        conn.execute(
            RUNS.insert().values(
                run=_run_id(r.dataset, r.release),
                dataset=r.dataset,
                identity=None,
                release=r.release,
                job=r.job,
                algorithm=r.algorithm,
                epsilon=r.epsilon,
                delta=r.delta,
                noise=r.gaussian or "[]",
                state="committed" if committed else "failed",
                outputs=None,
                test_seed=False,
                host="",
                pid=0,
                started_at=r.reserved_at,
                charged_at=r.reserved_at,
                ended_at=(r.committed_at if committed else None) or r.reserved_at,
            )
        )
