"""The budget store on SQLite: caps, the run lifecycle (reserve, charge, bind, commit, abandon),
requests committed before, adoption (only of a run that recorded no release id), one run of a
request at a time, the attempt that holds a run, stale runs (provably gone: pid and start time,
or an expired lease) and settling, the default ledger's uncapped datasets, windows, URLs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import replace

import pytest
import sqlalchemy as sa

from spark_dp.budget import BudgetRefused, BudgetStore
from spark_dp.budget.leases import Heartbeat
from spark_dp.budget.schema import LEASES, RUNS, writing
from spark_dp.errors import BudgetError, BudgetStoreUnavailable, ConfigError


@pytest.fixture
def url(tmp_path):
    return f"sqlite:///{tmp_path / 'budget.db'}"


@pytest.fixture
def store(url):
    with BudgetStore.open(url) as s:
        yield s


def _reserve(store, identity="i1", eps=0.6, delta=0.0, dataset="words", **kw):
    return store.reserve(
        dataset=dataset, identity=identity, job="distinct_count", epsilon=eps, delta=delta, **kw
    )


def _release(store, release, identity="i1", eps=0.6, delta=0.0, dataset="words"):
    """A whole run: reserve, charge, bind, commit; the final reservation."""
    r = store.bind(store.charge(_reserve(store, identity, eps, delta, dataset)), release)
    store.commit(r)
    return r


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return int(done.stdout)


def _set(url, run, **values):
    """Change a run's row as another process would have left it (its lease follows its
    host, pid and start time, as the attempt holding it)."""
    engine = sa.create_engine(url)
    owner = {k: v for k, v in values.items() if k in ("host", "pid", "started_at")}
    with engine.begin() as conn:
        conn.execute(RUNS.update().where(RUNS.c.run == run).values(**values))
        if owner:
            conn.execute(LEASES.update().where(LEASES.c.run == run).values(**owner))
    engine.dispose()


def _expire(url, run, seconds_ago=3600.0):
    """The run's lease was last renewed ``seconds_ago`` (its process stopped beating)."""
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(
            LEASES.update()
            .where(LEASES.c.run == run)
            .values(renewed_at=time.time() - seconds_ago, lease_seconds=600.0)
        )
    engine.dispose()


def _kill(url, run):
    """The run's process is gone (a pid that no longer exists)."""
    _set(url, run, pid=_dead_pid())


def test_second_release_over_the_cap_is_refused_with_one_line(store):
    store.set_cap("words", 1.0)
    _release(store, "r1")
    with pytest.raises(BudgetRefused) as info:
        _reserve(store, identity="i2")
    msg = str(info.value)
    assert info.value.exit_code == 3 and "\n" not in msg
    for part in ("'words'", "spent ε=0.6", "requests ε=0.6", "cap ε=1"):
        assert part in msg
    (row,) = store.summary()
    assert (row.spent_epsilon, row.releases, row.reserved_releases) == (0.6, 1, 0)


def test_a_dataset_without_a_cap_is_refused(store):
    with pytest.raises(BudgetRefused, match=r"dataset 'other' has no cap set.*set-cap") as info:
        _reserve(store, dataset="other")
    assert info.value.exit_code == 3 and "\n" not in str(info.value)


def test_a_request_committed_before_is_done_without_a_charge_even_at_the_cap(store):
    store.set_cap("words", 1.0)
    first = _release(store, "r1")
    again = _reserve(store, outputs={"report": "/out/r.json"})  # 0.6 + 0.6 > 1: not refused
    assert again.done is not None and again.done.run == first.run and not again.charged
    assert again.state == "committed" and again.release == "r1"
    (row,) = store.summary()
    assert (row.releases, row.spent_epsilon, row.reserved_epsilon) == (1, 0.6, 0.0)
    assert len(store.runs()) == 1  # nothing was added: the run never starts
    _release(store, "r2", identity="i2", eps=0.4)  # the rest of the cap is still there
    with pytest.raises(BudgetRefused):  # and then it is gone, whatever the request
        _reserve(store, identity="i3", eps=0.1)


def test_the_same_rows_under_another_request_are_a_new_charge(store):
    """The store decides from the request only: the release id (which covers the rows) never
    makes a run free, so no charge can tell whether two inputs hold the same rows."""
    store.set_cap("words", 2.0)
    _release(store, "same-rows", identity="i1")
    other = _release(store, "same-rows", identity="i2")  # e.g. the same rows at another path
    assert other.charged and other.done is None
    (row,) = store.summary()
    assert (row.releases, row.spent_epsilon) == (2, 1.2)


def test_a_run_records_where_it_writes(store):
    store.set_cap("words", 1.0)
    r = _reserve(store, outputs={"output": "/out/items", "report": "/out/items.report.json"})
    (record,) = store.runs()
    assert record.run == r.run
    assert record.written == {"output": "/out/items", "report": "/out/items.report.json"}


def test_a_failure_before_the_read_frees_the_reservation(store):
    store.set_cap("words", 1.0)
    assert store.abandon(_reserve(store)) == "released"
    (row,) = store.summary()
    assert (row.spent_epsilon, row.reserved_epsilon, row.remaining_epsilon) == (0, 0, 1.0)


def test_a_failure_before_its_release_id_stays_charged_and_its_retry_adopts_it(store):
    store.set_cap("words", 1.0)
    failed = store.charge(_reserve(store))  # e.g. null ids found while reading: no release id
    assert store.abandon(failed) == "failed"  # data was read: never refunded
    (row,) = store.summary()
    assert (row.spent_epsilon, row.failed_releases, row.releases) == (0.6, 1, 0)
    with pytest.raises(BudgetRefused, match=r"spent ε=0\.6"):
        _reserve(store, identity="i2")  # another request: the cap is spent
    retry = _reserve(store)  # the same request: it drew nothing, its charge is taken over
    assert retry.adopted and retry.run == failed.run and retry.state == "charged"
    store.commit(store.bind(retry, "r1"))
    (row,) = store.summary()
    assert (row.spent_epsilon, row.failed_releases, row.releases) == (0.6, 0, 1)
    assert [(r.shown_state, r.release) for r in store.runs()] == [("committed", "r1")]


def test_a_run_that_recorded_a_release_id_is_never_adopted(store, url):
    """Issue 44: a run that recorded its release id may have staged (or shown) a release: its
    retry, whatever rows it then reads, is a new charge, refused once the cap is reached; the
    first run's release id stays in the store."""
    store.set_cap("words", 1.5)
    first = store.bind(store.charge(_reserve(store, eps=1.0)), "r-of-D")
    _kill(url, first.run)  # killed after staging its release, before its commit
    with pytest.raises(BudgetRefused, match=r"spent ε=1.*requests ε=1.*cap ε=1\.5"):
        _reserve(store, eps=1.0)  # the retry (e.g. on a rewritten input D'): a second charge
    assert store.settle(first.run) == "failed"
    with pytest.raises(BudgetRefused):
        _reserve(store, eps=1.0)  # failed with a release id: not adoptable either
    (record,) = store.runs()
    assert (record.release, record.state) == ("r-of-D", "failed")  # never erased
    store.set_cap("words", 2.0)
    retry = _reserve(store, eps=1.0)
    assert not retry.adopted and retry.run != first.run  # a charge of its own
    store.commit(store.bind(store.charge(retry), "r-of-D'"))
    (row,) = store.summary()
    assert (row.spent_epsilon, row.releases, row.failed_releases) == (2.0, 1, 1)
    assert sorted(r.release for r in store.runs()) == ["r-of-D", "r-of-D'"]


def test_a_run_that_died_after_its_charge_is_adopted_not_charged_twice(store, url):
    store.set_cap("words", 1.0)
    killed = store.charge(_reserve(store))  # killed while validating: no release id yet
    _kill(url, killed.run)
    retry = _reserve(store)
    assert retry.adopted and retry.run == killed.run and retry.state == "charged"
    store.commit(store.bind(store.charge(retry), "r1"))
    (row,) = store.summary()
    assert (row.spent_epsilon, row.releases) == (0.6, 1)


def test_a_release_id_is_recorded_once_and_never_replaced(store):
    store.set_cap("words", 1.0)
    r = store.bind(store.charge(_reserve(store)), "r1")
    assert store.bind(r, "r1").release == "r1"  # the same id again: nothing changes
    with pytest.raises(BudgetError, match="cannot record its release id"):
        store.bind(r, "r2")
    with pytest.raises(BudgetError, match="cannot commit"):
        store.commit(replace(r, release="r2"))
    store.commit(r)
    assert [x.release for x in store.runs()] == ["r1"]


def test_two_runs_of_one_request_never_run_at_once(store):
    """The second is refused with one line (exit 3) while the first is in flight, whatever its
    state; once the first has ended the request runs again by the usual rules."""
    store.set_cap("words", 2.0)
    running = _reserve(store)
    for state in ("reserved", "charged"):
        if state == "charged":
            running = store.charge(running)
        with pytest.raises(BudgetRefused, match=r"run \w+ of this request .* is in flight") as info:
            _reserve(store)
        assert info.value.exit_code == 3 and "\n" not in str(info.value)
    store.abandon(running)  # failed before its release id
    assert _reserve(store).adopted


def test_a_gone_reservation_of_the_same_request_is_freed_by_its_retry(store, url):
    store.set_cap("words", 1.0)
    killed = _reserve(store)  # killed before it read anything
    _kill(url, killed.run)
    retry = _reserve(store)
    assert not retry.adopted and retry.run != killed.run
    states = {r.run: r.state for r in store.runs()}
    assert states == {killed.run: "released", retry.run: "reserved"}


def test_only_the_attempt_holding_a_run_moves_it_on(store, url):
    """A run settled (or taken over) while its first process still ran: that process can no
    longer bind, commit or end it."""
    store.set_cap("words", 1.0)
    first = store.charge(_reserve(store))
    assert store.settle(first.run, force=True) == "failed"  # an operator, wrongly
    retry = _reserve(store)  # takes the charge over (no release id yet)
    assert retry.adopted and retry.run == first.run
    with pytest.raises(BudgetError, match="held by another process"):
        store.bind(first, "r-first")
    with pytest.raises(BudgetError, match="cannot commit"):
        store.commit(first)
    assert store.abandon(first) == "charged"  # left as the retry holds it
    store.commit(store.bind(retry, "r-retry"))
    assert [(r.state, r.release) for r in store.runs()] == [("committed", "r-retry")]


def test_commit_refuses_a_run_that_is_not_charged(store):
    store.set_cap("words", 1.0)
    reserved = _reserve(store)
    with pytest.raises(BudgetError, match=r"cannot commit .* reserved"):
        store.commit(reserved)  # it never read data: nothing to commit
    charged = store.bind(store.charge(reserved), "r1")
    store.settle(charged.run, force=True)
    with pytest.raises(BudgetError, match=r"cannot commit .* failed \(charged\)"):
        store.commit(charged)  # settled while it ran: its outputs must not go into place
    assert [r.state for r in store.runs()] == ["failed"]


def test_a_reservation_of_a_live_process_is_not_adopted(store):
    store.set_cap("words", 2.0)
    running = store.charge(_reserve(store))  # this process is alive
    with pytest.raises(BudgetRefused, match="in flight"):
        _reserve(store)
    other = _reserve(store, identity="i2")  # another request runs beside it
    assert not other.adopted and other.run != running.run


def test_stale_runs_are_provably_gone_and_settled_by_the_budget_rules(store, url):
    store.set_cap("words", 4.0)
    reserved = _reserve(store, identity="a")
    charged = store.charge(_reserve(store, identity="b"))
    alive = store.charge(_reserve(store, identity="c"))
    old = store.charge(_reserve(store, identity="d"))
    expired = store.charge(_reserve(store, identity="e"))
    for run in (reserved, charged):
        _kill(url, run.run)
    # a day old on another host, its lease still renewed: it runs, it is not stale
    _set(url, old.run, host="another-host", started_at=time.time() - 25 * 3600)
    _set(url, expired.run, host="another-host")
    _expire(url, expired.run)  # its process stopped renewing its lease an hour ago
    runs = {r.run: r for r in store.runs()}
    stale = [runs[r.run].stale for r in (reserved, charged, alive, old, expired)]
    assert stale == [True, True, False, False, True]
    assert runs[charged.run].shown_state == "charged (stale)"
    (row,) = store.summary()
    assert row.stale_runs == 3
    assert store.settle(reserved.run) == "released"  # never read data: freed
    assert store.settle(charged.run) == "failed"  # read data: stays charged
    assert store.settle(expired.run) == "failed"
    for running in (alive, old):
        with pytest.raises(BudgetError, match=r"may still be running.*--force"):
            store.settle(running.run)
    with pytest.raises(BudgetError, match="nothing to settle"):
        store.settle(reserved.run)
    with pytest.raises(BudgetError, match="no such run"):
        store.settle("nope")
    assert store.settle(alive.run, force=True) == "failed"
    (row,) = store.summary()
    assert (row.failed_releases, row.stale_runs) == (3, 0)
    assert row.spent_epsilon == pytest.approx(1.8) and row.reserved_epsilon == pytest.approx(0.6)


def test_a_reused_pid_is_told_apart_by_its_start_time(store, url):
    from spark_dp.budget.records import process_started

    started = process_started(os.getpid())
    if started is None:
        pytest.skip("no /proc here: process start times are Linux's")
    store.set_cap("words", 1.0)
    run = store.charge(_reserve(store))
    assert not store.runs()[0].gone
    engine = sa.create_engine(url)  # the lease names this pid with another start time
    with engine.begin() as conn:
        conn.execute(LEASES.update().values(process_started=started - 3600.0))
    engine.dispose()
    (record,) = store.runs()
    assert record.gone and record.stale
    assert store.settle(run.run) == "failed"


def test_the_heartbeat_renews_the_lease_until_stopped(store, url):
    store.set_cap("words", 1.0)
    run = store.charge(_reserve(store))
    _expire(url, run.run, seconds_ago=599.0)
    beat = Heartbeat(store, run, every=0.05)
    deadline = time.monotonic() + 30
    while store.runs()[0].lease.renewed_at < time.time() - 60:
        assert time.monotonic() < deadline, "the lease was never renewed"
        time.sleep(0.05)
    beat.stop()
    assert not beat._thread.is_alive()
    store.commit(store.bind(run, "r1"))
    assert store.runs()[0].lease is None  # the run ended: no lease left
    assert not store.renew(run)


def test_the_ledger_records_a_dataset_without_a_cap_and_enforces_one_set(url):
    with BudgetStore.open(url, ledger=True) as ledger:
        first = _release(ledger, "r1", identity="a")
        assert first.charged
        (row,) = ledger.summary()
        assert (row.cap_epsilon, row.remaining_epsilon, row.spent_epsilon) == (None, None, 0.6)
        assert row.to_dict()["cap_epsilon"] is None
        ledger.set_cap("words", 1.0)
        with pytest.raises(BudgetRefused, match="cap ε=1"):
            _reserve(ledger, identity="b")
    with BudgetStore.open(url) as store:  # the same file as a store: a cap is needed
        with pytest.raises(BudgetRefused, match="has no cap set"):
            _reserve(store, dataset="other")


def test_the_ledger_runs_a_test_seeded_request_again_and_marks_it(url):
    with BudgetStore.open(url, ledger=True) as ledger:
        _release(ledger, "r1")  # a key from a test seed, or a key file: the same request
        again = _reserve(ledger, test_seed=True)
        assert again.done is None and again.charged  # run again, a new charge (marked)
        store_rule = _reserve(ledger, identity="k")  # a key file's request, committed ...
        ledger.commit(ledger.bind(ledger.charge(store_rule), "rk"))
        assert _reserve(ledger, identity="k").done is not None  # ... is not run again
        assert [r.test_seed for r in ledger.runs()] == [False, True, False]


def test_test_seed_releases_are_marked(store):
    store.set_cap("words", 1.0)
    _reserve(store, test_seed=True)
    _reserve(store, identity="i2", eps=0.1)
    assert [r.test_seed for r in store.runs()] == [True, False]


def test_delta_is_capped_too(store):
    store.set_cap("words", 10.0, 1e-6)
    _release(store, "r1", identity="a", eps=1.0, delta=6e-7)
    with pytest.raises(BudgetRefused, match=r"δ=6e-07.*cap ε=10, δ=1e-06"):
        _reserve(store, identity="b", eps=1.0, delta=6e-7)
    _release(store, "r3", identity="c", eps=1.0, delta=4e-7)


def test_a_window_cap_frees_budget_once_releases_age_out(store, url):
    store.set_cap("words", 1.0, window_days=30)
    old = _release(store, "old", identity="a")
    failed = store.charge(_reserve(store, identity="f", eps=0.3))
    store.abandon(failed)
    with pytest.raises(BudgetRefused, match="per 30 days"):
        _reserve(store, identity="b")
    for run in (old, failed):  # they ended 31 days ago
        _set(url, run.run, ended_at=time.time() - 31 * 86400)
    _release(store, "new", identity="b")
    (row,) = store.summary()
    assert (row.releases, row.spent_epsilon, row.window_days) == (1, 0.6, 30)


def test_caps_and_runs_persist_and_caps_can_be_replaced(store, url):
    store.set_cap("words", 1.0)
    _release(store, "r1")
    store.set_cap("words", 2.0, 1e-6)
    with BudgetStore.open(url) as other:
        (row,) = other.summary()
        assert (row.cap_epsilon, row.cap_delta, row.spent_epsilon) == (2.0, 1e-6, 0.6)
        _release(other, "r2", identity="i2", eps=1.4)


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        ("budget.db", "not a database URL.*A bare path is refused"),
        ("s3a://bucket/budget.db", "file-system URI.*s3a://"),
        ("hdfs:///data/budget.db", "file-system URI.*hdfs://"),
        ("file:///tmp/budget.db", "file-system URI"),
        ("sqlite://", "has no database file"),
        ("sqlite:///:memory:", "has no database file"),
        ("sqlite:////no/such/dir/budget.db", "directory '/no/such/dir' does not exist"),
        ("nosuchdb://host/x", "unsupported database"),
    ],
)
def test_unusable_store_urls_are_clear_errors(bad, match, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=f"--budget-store.*{match}"):
        BudgetStore.open(bad)
    assert list(tmp_path.iterdir()) == []  # no folder named s3a: or hdfs:, no stray file


def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path):
    path = tmp_path / "budget.db"
    path.write_text("caps: none\n" * 200)
    with pytest.raises(ConfigError, match=r"--budget-store .* is not a budget store") as info:
        BudgetStore.open(f"sqlite:///{path}")
    assert info.value.exit_code == 2 and "\n" not in str(info.value)
    assert path.read_text() == "caps: none\n" * 200


def test_a_read_only_store_is_an_environment_failure(tmp_path, url):
    with BudgetStore.open(url) as s:
        s.set_cap("words", 1.0)
    # SQLite opened read-only (as for a file this user may not write): every write is refused
    db = url.split(":///", 1)[1]
    engine = sa.create_engine(f"sqlite:///file:{db}?mode=ro&uri=true")
    try:
        with pytest.raises(BudgetStoreUnavailable, match="cannot be written") as info:
            with writing(engine, "sqlite:///" + db) as conn:
                conn.execute(RUNS.delete())
    finally:
        engine.dispose()
    assert info.value.exit_code == 1 and "\n" not in str(info.value)


def test_unreachable_server_is_a_clear_error():
    """Unreachable (psycopg installed) or no driver (the driver-only test venvs): either way a
    ConfigError naming the option, with the password masked."""
    with pytest.raises(
        ConfigError, match=r"--budget-store postgresql\+psycopg2?://u:\*\*\*@127\.0\.0\.1:1/db"
    ) as err:
        BudgetStore.open("postgresql://u:secret@127.0.0.1:1/db")
    assert "secret" not in str(err.value)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((0.0,), "epsilon"),
        ((float("inf"),), "epsilon"),
        ((1.0, 1.0), "delta"),
        ((1.0, -0.1), "delta"),
    ],
)
def test_bad_caps_are_refused(store, args, match):
    with pytest.raises(ConfigError, match=match):
        store.set_cap("words", *args)
    with pytest.raises(ConfigError, match="window"):
        store.set_cap("words", 1.0, window_days=0)


def test_the_accountant_is_a_store_setting(store, url):
    assert store.accountant == "basic"
    store.set_accountant("zcdp")
    with BudgetStore.open(url) as other:
        assert other.accountant == "zcdp"
    with pytest.raises(ConfigError, match="accountant must be one of"):
        store.set_accountant("moments")
    with pytest.raises(ConfigError, match=r"accountant pld composes .* use zcdp") as info:
        store.set_accountant("pld")  # no longer offered: one line saying why and what instead
    assert "\n" not in str(info.value)


def test_a_process_that_was_never_ours_is_not_judged_gone():
    from spark_dp.budget.records import host_name, process_gone, process_started

    assert not process_gone(host_name(), os.getpid(), time.time())
    assert process_gone(host_name(), _dead_pid(), time.time() - 10)
    assert not process_gone("another-host", _dead_pid(), time.time() - 10)
    started = process_started(os.getpid())
    if started is not None:  # Linux: a live pid whose process started after the run did
        assert process_gone(host_name(), os.getpid(), started - 3600)
        assert not process_gone(host_name(), os.getpid(), started - 3600, started)
        assert process_gone(host_name(), os.getpid(), time.time(), started - 3600)
