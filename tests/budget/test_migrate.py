"""A v1 store is imported into the v2 tables once, so that no spend is lost (SQLite and
PostgreSQL)."""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa

from spark_dp.budget import BudgetRefused, BudgetStore
from spark_dp.budget.schema import _V1, V1_CAPS, V1_RELEASES, V1_SETTINGS
from tests.budget.postgres import postgres_server


def _v1_store(url: str) -> None:
    """What spark_dp 0.x left: two caps, the pld accountant, a committed, a reserved (in
    flight or failed after writing) and a released release."""
    engine = sa.create_engine(url)
    _V1.create_all(engine)
    now = time.time()
    common = dict(job="partition_selection", algorithm="basic", gaussian="[]", attempt=1)
    with engine.begin() as conn:
        conn.execute(V1_CAPS.insert(), [
            dict(dataset="words", epsilon=1.0, delta=1e-5, window_days=None, updated_at=now),
            dict(dataset="clicks", epsilon=2.0, delta=0.0, window_days=30.0, updated_at=now),
        ])  # fmt: skip
        conn.execute(V1_SETTINGS.insert().values(key="accountant", value="pld"))
        conn.execute(V1_RELEASES.insert(), [
            dict(dataset="words", release="a" * 64, epsilon=0.5, delta=1e-6, state="committed",
                 reserved_at=now - 60, committed_at=now - 50, released_at=None, **common),
            dict(dataset="words", release="b" * 64, epsilon=0.25, delta=0.0, state="reserved",
                 reserved_at=now - 40, committed_at=None, released_at=None, **common),
            dict(dataset="words", release="c" * 64, epsilon=0.2, delta=0.0, state="released",
                 reserved_at=now - 30, committed_at=None, released_at=now - 20, **common),
        ])  # fmt: skip
    engine.dispose()


def _check_import(url: str) -> None:
    _v1_store(url)
    with BudgetStore.open(url) as store:
        rows = {b.dataset: b for b in store.summary()}
        assert set(rows) == {"words", "clicks"} and store.accountant == "zcdp"  # was pld
        words = rows["words"]
        # the committed and the reserved release count; the released one does not
        assert words.spent_epsilon == pytest.approx(0.75) and words.spent_delta == 1e-6
        assert (words.releases, words.failed_releases, words.reserved_releases) == (1, 1, 0)
        assert rows["clicks"].window_days == 30.0 and rows["clicks"].cap_epsilon == 2.0
        with pytest.raises(BudgetRefused, match=r"spent ε=0\.75"):
            store.reserve(dataset="words", identity="i", job="j", epsilon=0.3, delta=0.0)
        store.set_cap("words", 5.0)  # a later change is kept: the import happens once
    with BudgetStore.open(url) as store:
        (words,) = [b for b in store.summary() if b.dataset == "words"]
        assert words.cap_epsilon == 5.0 and len(store.runs("words")) == 2


def test_a_v1_sqlite_store_is_imported_once(tmp_path):
    _check_import(f"sqlite:///{tmp_path / 'budget.db'}")


@pytest.mark.slow
def test_a_v1_postgresql_store_is_imported_once():
    with postgres_server() as url:
        _check_import(url)
