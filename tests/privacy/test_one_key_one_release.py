"""One key, one release in real jobs with a real budget store (issue 34; ``slow``): the same key
on D and on D minus one user gives independent releases (stated power in each test) and two
charges, in every family; one argument changed is a new release and a new charge; the same
request again is charged once and never recomputed (exit 0 for the same report, 2 elsewhere);
data edited with its size and modification time kept is never released under the old charge,
and without a store it is a new release; the flags the release id leaves out leave the
release unchanged."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from spark_dp.budget import BudgetStore
from spark_dp.jobs import contribution_bounding, distinct_count, partition_selection
from spark_dp.randomness import Randomness
from spark_dp.randomness.key_file import write_key_file

pytestmark = pytest.mark.slow  # about 20 small job runs in this session

BORDERLINE = 150  # items held by 18 users each: Basic's ρ ≈ 18.16 with σ ≈ 3.88 (ε=1, Δ0=1)
BASIC = ["--algorithm", "basic", "--epsilon", "1", "--delta", "1e-5", "--max-contributions", "1"]


def _key(path: Path, content: bytes | None = None) -> str:
    """A new key file at ``path``, or a copy of a key file's ``content``."""
    if content is None:
        write_key_file(path)
    else:
        path.write_bytes(content)
        path.chmod(0o600)
    return str(path)


def _store(tmp_path: Path, dataset: str, epsilon: float = 10.0) -> str:
    url = f"sqlite:///{tmp_path / 'budget.db'}"
    with BudgetStore.open(url) as s:
        s.set_cap(dataset, epsilon, 1e-3)
    return url


def _summary(url: str, dataset: str):
    with BudgetStore.open(url) as s:
        return next(b for b in s.summary() if b.dataset == dataset)


def _run(module, argv: list[str], code: int = 0) -> None:
    assert module.main([*argv, "--log-level", "WARNING"]) == code


def _items(spark, path: Path) -> set[str]:
    return {r["item"] for r in spark.read.parquet(str(path)).collect()}


def _report(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def borderline(spark, tmp_path_factory) -> Path:
    """One item per user; 150 items held by 18 users each, at Basic's threshold: each is
    released with probability ≈ 0.48, so the release depends on the noise."""
    base = tmp_path_factory.mktemp("borderline")
    rows = [(f"b{k}-{u}", f"b{k}") for k in range(BORDERLINE) for u in range(18)]
    spark.createDataFrame(rows, "user_id string, item string").write.parquet(str(base / "d"))
    minus = [r for r in rows if r[0] != "b0-0"]  # D minus one user (of item b0)
    spark.createDataFrame(minus, "user_id string, item string").write.parquet(str(base / "d1"))
    return base


def test_same_key_on_neighbouring_data_gives_independent_selections(spark, borderline, tmp_path):
    """Same key on D and on D minus one user (who holds one item). Were the noise the same,
    the two releases could differ only on that item. Independent noise flips each of the 149
    other borderline items with probability 2p(1-p) ≈ 0.5: a symmetric difference below 25
    has probability < 1e-15 then, and certainty under a shared noise."""
    key = _key(tmp_path / "key")
    store = _store(tmp_path, "users")
    out = {}
    for name in ("d", "d1"):
        argv = ["--input", str(borderline / name), "--output", str(tmp_path / name), *BASIC]
        _run(partition_selection, [*argv, "--noise-key-file", key, "--budget-store", store,
                                   "--dataset-id", "users"])  # fmt: skip
        out[name] = _items(spark, tmp_path / name)
    assert 0.1 * BORDERLINE < len(out["d"]) < 0.9 * BORDERLINE  # the noise decides
    assert len((out["d"] ^ out["d1"]) - {"b0"}) >= 25
    ids = {_report(tmp_path / f"{n}.report.json")["release"]["id"] for n in out}
    budget = _summary(store, "users")
    assert len(ids) == 2 and budget.releases == 2 and budget.spent_epsilon == pytest.approx(2.0)


def test_same_key_on_neighbouring_data_gives_independent_counts(spark, tmp_path):
    """Three keys, each used on D and on D minus one person (ε = 0.001, ℓ_max = 10). Were the
    noise shared, the estimates would differ by c(D; ℓ̂) - c(D'; ℓ̂) ≤ ℓ̂ ≤ 10 in every trial
    (the issue's attack). With independent discrete Laplace noise of scale 2ℓ̂/ε ≥ 2000 their
    difference lies within 20 with probability about 41/(4·2000) ≈ 0.5 %: two trials of three
    within it have probability < 1e-4."""
    rows = [(f"p{p}", f"i{(p * 5 + k) % 300}") for p in range(400) for k in range(4)]
    d = spark.createDataFrame(rows, "user_id string, item string")
    d.write.parquet(str(tmp_path / "d"))
    d.where("user_id != 'p0'").write.parquet(str(tmp_path / "d1"))
    store = _store(tmp_path, "persons", epsilon=1.0)
    close = 0
    for trial in range(3):
        key = _key(tmp_path / f"key{trial}")
        est = []
        for name in ("d", "d1"):
            report = tmp_path / f"{name}-{trial}.json"
            argv = ["--input", str(tmp_path / name), "--epsilon", "0.001", "--method", "greedy",
                    "--max-contributions", "10", "--report", str(report), "--noise-key-file", key,
                    "--budget-store", store, "--dataset-id", "persons"]  # fmt: skip
            _run(distinct_count, argv)
            est.append(_report(report)["estimate"])
        close += abs(est[0] - est[1]) <= 20
    assert close <= 1
    budget = _summary(store, "persons")
    assert budget.releases == 6 and budget.spent_epsilon == pytest.approx(0.006)


def test_same_key_on_neighbouring_graphs_gives_another_order(spark, tmp_path):
    """Contribution bounding spends no budget, but its order comes from the key all the same:
    on D minus one user the key is bound to another release, so the order's seed differs."""
    from spark_dp.contribution_bounding.state_store import order_seed

    rows = [(f"r{i}", f"u{(i * 3 + k) % 70}") for i in range(300) for k in range(2)]
    d = spark.createDataFrame(rows, "record_id string, user_id string")
    d.write.parquet(str(tmp_path / "d"))
    d.where("user_id != 'u0'").write.parquet(str(tmp_path / "d1"))
    key = _key(tmp_path / "key")
    seeds = []
    for name in ("d", "d1"):
        argv = ["--input", str(tmp_path / name), "--output", str(tmp_path / f"o{name}"),
                "--max-contributions", "2", "--order", "hash", "--noise-key-file", key]  # fmt: skip
        _run(contribution_bounding, argv)
        rid = _report(tmp_path / f"o{name}.report.confidential.json")["release"]["id"]
        seeds.append(order_seed(Randomness.from_key_file(key).bind(rid), None))
    assert seeds[0] != seeds[1]


def test_one_argument_changed_is_a_new_release_and_a_new_charge(spark, tmp_path):
    """The issue's case: the same key with --item-col item2 (here a copy of item: the same
    values) was "committed before; charged nothing now" and wrote another release. Now the
    argument is in the id: a new release, charged. The same request again is not run: exit 0
    when it asks for the same report (nothing is touched), exit 2 elsewhere (nothing written);
    charged once either way."""
    rows = [(f"u{u}", f"w{(u * 7 + k) % 40}", f"w{(u * 7 + k) % 40}") for u in range(300)
            for k in range(3)]  # fmt: skip
    spark.createDataFrame(rows, "user_id string, item string, item2 string").write.parquet(
        str(tmp_path / "in")
    )
    key = _key(tmp_path / "key")
    store = _store(tmp_path, "words", epsilon=2.0)
    base = ["--input", str(tmp_path / "in"), "--algorithm", "basic", "--epsilon", "0.5",
            "--noise-key-file", key, "--budget-store", store, "--dataset-id", "words"]  # fmt: skip
    runs = [("a", []), ("b", ["--item-col", "item2"]), ("c", ["--strict-input"])]
    for name, extra in runs:
        _run(partition_selection, [*base, *extra, "--output", str(tmp_path / name)])
    reports = {n: _report(tmp_path / f"{n}.report.json") for n, _ in runs}
    assert len({r["release"]["id"] for r in reports.values()}) == 3
    assert all(r["budget"]["charged"] for r in reports.values())
    report_a = tmp_path / "a.report.json"
    before = (report_a.read_bytes(), report_a.stat().st_mtime_ns)
    _run(partition_selection, [*base, "--output", str(tmp_path / "a"), "--overwrite"])  # retry
    assert (report_a.read_bytes(), report_a.stat().st_mtime_ns) == before
    _run(partition_selection, [*base, "--output", str(tmp_path / "d")], code=2)
    assert not (tmp_path / "d").exists() and not (tmp_path / "d.report.json").exists()
    budget = _summary(store, "words")
    assert budget.releases == 3 and budget.spent_epsilon == pytest.approx(1.5)


def _edit_keeping_size_and_mtime(csv: Path) -> None:
    stat = csv.stat()
    text = csv.read_text().replace("u007,w09", "u007,w10")
    assert len(text) == stat.st_size
    csv.write_text(text)
    os.utime(csv, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert (csv.stat().st_size, csv.stat().st_mtime_ns) == (stat.st_size, stat.st_mtime_ns)


def test_data_edited_with_size_and_mtime_kept_is_never_released_under_the_old_charge(tmp_path):
    """One user's row edited in place, the file's size and modification time restored: the
    listing (metadata) is unchanged, so it is the same request. With a store, a committed
    request is not run again: the edited rows are never read, nothing is released or charged
    (before, the edit was released for free with the old noise); the default ledger applies the
    same rule. Without any books (``--no-ledger``) the run reads the rows: the content digest
    sees the edit, a new release id, independent noise."""
    csv = tmp_path / "pairs.csv"
    lines = ["user_id,item", *[f"u{u:03d},w{(u * 7) % 40:02d}" for u in range(400)]]
    csv.write_text("\n".join(lines) + "\n")
    key = _key(tmp_path / "key")
    store = _store(tmp_path, "csv")
    argv = ["--input", str(csv), "--epsilon", "1", "--noise-key-file", key,
            "--max-contributions", "5"]  # fmt: skip
    charged = [*argv, "--budget-store", store, "--dataset-id", "csv"]
    ledger = [*argv, "--ledger-file", str(tmp_path / "ledger.db")]
    _run(distinct_count, [*charged, "--report", str(tmp_path / "a.json")])
    _run(distinct_count, [*ledger, "--report", str(tmp_path / "l-a.json")])
    _run(distinct_count, [*argv, "--no-ledger", "--report", str(tmp_path / "plain-a.json")])
    _edit_keeping_size_and_mtime(csv)
    _run(distinct_count, [*charged, "--report", str(tmp_path / "b.json")], code=2)
    assert not (tmp_path / "b.json").exists() and _summary(store, "csv").releases == 1
    _run(distinct_count, [*ledger, "--report", str(tmp_path / "l-b.json")], code=2)
    assert not (tmp_path / "l-b.json").exists()
    _run(distinct_count, [*argv, "--no-ledger", "--report", str(tmp_path / "plain-b.json")])
    a, b = _report(tmp_path / "plain-a.json"), _report(tmp_path / "plain-b.json")
    assert a["release"]["id"] != b["release"]["id"]
    # the store is not part of a release: the charged run and the plain one are the same
    assert _report(tmp_path / "a.json")["release"]["id"] == a["release"]["id"]


def test_allow_listed_flags_do_not_change_the_release(spark, borderline, tmp_path):
    """The release depends on the noise (borderline items); the second run changes every
    operational flag at once: another key file path (same key), output and report paths, log
    level, the private UI switch, Spark settings (shuffle partitions),
    another store and dataset id, ε moved into a config file. Same key, input and arguments:
    the identical items and release id."""
    key = _key(tmp_path / "key")
    copy_key = tmp_path / "elsewhere" / "key"
    copy_key.parent.mkdir()
    _key(copy_key, Path(key).read_bytes())
    first_store, second_store = _store(tmp_path, "users"), None
    _run(partition_selection, ["--input", str(borderline / "d"), "--output", str(tmp_path / "a"),
                               *BASIC, "--noise-key-file", key, "--budget-store", first_store,
                               "--dataset-id", "users"])  # fmt: skip
    other = tmp_path / "other"
    other.mkdir()
    second_store = _store(other, "others")
    config = tmp_path / "c.yaml"
    config.write_text("epsilon: 1\n")
    basic = ["--algorithm", "basic", "--delta", "1e-5", "--max-contributions", "1"]  # ε: config
    previous = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "5")
    try:
        code = partition_selection.main([
            "--input", str(borderline / "d"), "--output", str(tmp_path / "b" / "items"),
            "--report", str(tmp_path / "b.json"), *basic, "--config", str(config),
            "--noise-key-file", str(copy_key), "--budget-store", second_store,
            "--dataset-id", "others", "--log-level", "DEBUG", "--private-spark-ui",
            "--spark-conf", "spark.sql.shuffle.partitions=5",
        ])  # fmt: skip
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", previous)
    assert code == 0
    a, b = _items(spark, tmp_path / "a"), _items(spark, tmp_path / "b" / "items")
    assert 0.1 * BORDERLINE < len(a) < 0.9 * BORDERLINE and a == b
    ra, rb = _report(tmp_path / "a.report.json"), _report(tmp_path / "b.json")
    assert ra["release"]["id"] == rb["release"]["id"]
    assert rb["spark"]["ui_enabled"] is False and rb["spark"]["event_log_enabled"] is False
