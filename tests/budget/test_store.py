"""The budget store on SQLite: caps, check-and-reserve, idempotent releases, windows, URLs."""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa

from spark_dp.budget import BudgetRefused, BudgetStore
from spark_dp.budget.schema import RELEASES
from spark_dp.errors import BudgetError, ConfigError


@pytest.fixture
def url(tmp_path):
    return f"sqlite:///{tmp_path / 'budget.db'}"


@pytest.fixture
def store(url):
    with BudgetStore.open(url) as s:
        yield s


def _reserve(store, release, eps=0.6, delta=0.0, dataset="words"):
    return store.reserve(
        dataset=dataset, release=release, job="distinct_count", epsilon=eps, delta=delta
    )


def test_second_release_over_the_cap_is_refused_with_one_line(store):
    store.set_cap("words", 1.0)
    store.commit(_reserve(store, "r1"))
    with pytest.raises(BudgetRefused) as info:
        _reserve(store, "r2")
    msg = str(info.value)
    assert info.value.exit_code == 3 and "\n" not in msg
    for part in ("'words'", "spent ε=0.6", "requests ε=0.6", "cap ε=1"):
        assert part in msg
    (row,) = store.summary()
    assert (row.spent_epsilon, row.releases, row.reserved_releases) == (0.6, 1, 0)


def test_a_dataset_without_a_cap_is_refused(store):
    with pytest.raises(BudgetRefused, match=r"dataset 'other' has no cap set.*set-cap") as info:
        _reserve(store, "r1", dataset="other")
    assert info.value.exit_code == 3 and "\n" not in str(info.value)


def test_retry_of_a_committed_release_is_charged_once(store):
    store.set_cap("words", 1.0)
    first = _reserve(store, "r1")
    store.commit(first)
    again = _reserve(store, "r1")
    assert again.already_committed and not first.already_committed
    store.commit(again)  # a no-op
    store.release(again)  # never un-charges a committed release
    (row,) = store.summary()
    assert (row.releases, row.spent_epsilon, row.reserved_epsilon) == (1, 0.6, 0.0)
    store.commit(_reserve(store, "r2", eps=0.4))  # the rest of the cap is still there


def test_retry_of_a_crashed_attempt_takes_its_reservation_over(store):
    store.set_cap("words", 1.0)
    crashed = _reserve(store, "r1")  # the process died after writing: never committed
    retry = _reserve(store, "r1")
    assert retry.reused and retry.attempt == crashed.attempt + 1
    store.release(crashed)  # the old attempt's cleanup must not free the retry's budget
    (row,) = store.summary()
    assert (row.reserved_releases, row.reserved_epsilon) == (1, 0.6)
    store.commit(retry)
    (row,) = store.summary()
    assert (row.releases, row.spent_epsilon, row.reserved_releases) == (1, 0.6, 0)


def test_failure_before_writing_releases_the_reservation(store):
    store.set_cap("words", 1.0)
    failed = _reserve(store, "r1")
    store.release(failed)
    (row,) = store.summary()
    assert (row.spent_epsilon, row.reserved_epsilon, row.remaining_epsilon) == (0, 0, 1.0)
    store.commit(_reserve(store, "r2", eps=0.4))
    again = _reserve(store, "r1")  # a released id may be reserved anew: charged again
    assert not again.reused and not again.already_committed


def test_failure_after_writing_keeps_the_reservation(store):
    store.set_cap("words", 1.0)
    _reserve(store, "r1")  # output written, then the job failed: no commit, no release
    with pytest.raises(BudgetRefused, match=r"spent ε=0\.6"):
        _reserve(store, "r2")


def test_a_release_id_always_spends_the_same_budget(store):
    store.set_cap("words", 1.0)
    _reserve(store, "r1")
    with pytest.raises(BudgetError, match="must always spend the same budget"):
        _reserve(store, "r1", eps=0.5)


def test_delta_is_capped_too(store):
    store.set_cap("words", 10.0, 1e-6)
    store.commit(_reserve(store, "r1", eps=1.0, delta=6e-7))
    with pytest.raises(BudgetRefused, match=r"δ=6e-07.*cap ε=10, δ=1e-06"):
        _reserve(store, "r2", eps=1.0, delta=6e-7)
    store.commit(_reserve(store, "r3", eps=1.0, delta=4e-7))


def test_a_window_cap_frees_budget_once_releases_age_out(store, url):
    store.set_cap("words", 1.0, window_days=30)
    store.commit(_reserve(store, "old"))
    with pytest.raises(BudgetRefused, match="per 30 days"):
        _reserve(store, "new")
    engine = sa.create_engine(url)
    with engine.begin() as conn:  # the release was committed 31 days ago
        conn.execute(RELEASES.update().values(committed_at=time.time() - 31 * 86400))
    engine.dispose()
    store.commit(_reserve(store, "new"))
    (row,) = store.summary()
    assert (row.releases, row.spent_epsilon, row.window_days) == (1, 0.6, 30)


def test_caps_and_releases_persist_and_caps_can_be_replaced(store, url):
    store.set_cap("words", 1.0)
    store.commit(_reserve(store, "r1"))
    store.set_cap("words", 2.0, 1e-6)
    with BudgetStore.open(url) as other:
        (row,) = other.summary()
        assert (row.cap_epsilon, row.cap_delta, row.spent_epsilon) == (2.0, 1e-6, 0.6)
        other.commit(_reserve(other, "r2", eps=1.4))


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
    store.set_accountant("pld")
    with BudgetStore.open(url) as other:
        assert other.accountant == "pld"
    with pytest.raises(ConfigError, match="accountant must be one of"):
        store.set_accountant("moments")
