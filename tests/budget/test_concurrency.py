"""Concurrent check-and-reserve: 4 processes against one store never exceed its cap.

Each process reserves ε = 0.011 at a time (of every three, one is committed, one charged and
left failed, one left reserved: all count) until refused; with a cap of 1 exactly 90 runs fit.
Run against a SQLite file and against a real PostgreSQL server (tests/budget/postgres.py).
"""

from __future__ import annotations

import multiprocessing as mp

import pytest

from spark_dp.budget import BudgetRefused, BudgetStore
from tests.budget.postgres import postgres_server

WORKERS, STEP, CAP = 4, 0.011, 1.0
FIT = 90  # 90 · 0.011 = 0.99 ≤ 1 < 91 · 0.011


def _worker(url: str, worker: int, barrier, results) -> None:
    store = BudgetStore.open(url)
    granted = 0
    barrier.wait()
    for i in range(200):
        try:
            r = store.reserve(
                dataset="users", identity=f"w{worker}-{i}", job="t", epsilon=STEP, delta=1e-7
            )
        except BudgetRefused:
            break
        granted += 1
        if i % 3 < 2:
            r = store.bind(store.charge(r), f"w{worker}-{i}")
        if i % 3 == 0:
            store.commit(r)
        elif i % 3 == 1:
            store.abandon(r)  # failed after its read: stays charged
    store.close()
    results.put(granted)


def _race(url: str) -> list[int]:
    with BudgetStore.open(url) as store:
        store.set_cap("users", CAP, 1e-5)
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(WORKERS), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(url, w, barrier, results)) for w in range(WORKERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
    granted = [results.get(timeout=10) for _ in procs]
    with BudgetStore.open(url) as store:
        (row,) = store.summary()
    assert sum(granted) == FIT
    assert row.releases + row.failed_releases + row.reserved_releases == FIT
    assert row.spent_epsilon + row.reserved_epsilon == pytest.approx(FIT * STEP)
    assert row.spent_epsilon + row.reserved_epsilon <= CAP
    return granted


def test_four_processes_never_exceed_the_cap_sqlite(tmp_path):
    _race(f"sqlite:///{tmp_path / 'budget.db'}")


@pytest.mark.slow
def test_four_processes_never_exceed_the_cap_postgresql():
    with postgres_server() as url:
        _race(url)
