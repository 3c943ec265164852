"""Release keys end to end (issue 13): a key file makes every job's release repeatable, the noise
depends on the key alone, and the key never shows.

* Each job (partition selection with MAD2R, the distinct count, contribution bounding with its
  hash order) runs twice with ``--noise-key-file`` and the same arguments: the Parquet rows and
  the report are identical, timings aside. The data and parameters leave the outcome to the
  noise: many items sit at MAD2R's round-2 threshold, the distinct count's noise has a scale of
  hundreds, many records compete for the users' capacity (another key orders them otherwise).
* The same key gives the same items when the input is reordered into another number of files
  and Spark shuffles into another number of partitions; two fresh entropy keys give other items,
  and differ from each other. ``local[1]`` under spark-submit gives what this session's
  ``local[2]`` gives.
* No key material: the report, the spark_dp log records, the budget store and every output
  file of each run are scanned for the key file's bytes and the derived key, raw, hex or base64
  (:mod:`tests.support.key_material`).
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from spark_dp.randomness.key_file import write_key_file
from tests.support.cluster_helpers import ROOT, SUBMIT_CONF
from tests.support.key_material import find_key_material
from tests.support.standalone_cluster import spark_submit

MAD2R = "--algorithm mad2r --epsilon 1 --delta 1e-5 --max-contributions 2"
BORDERLINE = 150  # items held by 21 users each: MAD2R's round-2 threshold is ρ2 ≈ 21.1
JOBS: dict[str, str] = {
    "partition_selection": f"--input {{data}}/pairs --output {{out}}/items {MAD2R}",
    # a small ε: the discrete Laplace noise (scale 2ℓ/ε ≥ 200) repeats by chance < 0.3% of runs
    "distinct_count": "--input {data}/pairs --epsilon 0.01 --max-contributions 10 "
    "--report {out}/count.json",
    "contribution_bounding": "--input {data}/graph --output {out}/records --max-contributions 2 "
    "--order hash",
}
# facts of a run, not of its release: when it ran, whether the budget store charged it
RUN_KEYS = ("created_utc", "timings_seconds", "budget")
pytestmark = pytest.mark.slow  # about 12 small job runs in this session


class _Records(logging.Handler):
    """Every spark_dp log record of a run, formatted with its traceback."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


def run(job: str, argv: list[str]) -> str:
    """Run ``job`` in this session at log level DEBUG; assert exit 0; return its log."""
    records = _Records()
    logger = logging.getLogger("spark_dp")
    logger.addHandler(records)
    try:
        main = importlib.import_module(f"spark_dp.jobs.{job}").main
        code = main([*argv, "--log-level", "DEBUG"])
    finally:
        logger.removeHandler(records)
    assert code == 0, "\n".join(records.lines[-20:])
    return "\n".join(records.lines)


def argv(job: str, data: Path, out: Path, *extra: str) -> list[str]:
    return [t.format(data=data, out=out) for t in JOBS[job].split()] + list(extra)


OUTPUT = {"partition_selection": "items", "contribution_bounding": "records"}


REPORT = {"partition_selection": "report.json", "contribution_bounding": "report.confidential.json"}


def report_path(job: str, out: Path) -> Path:
    return out / (f"{OUTPUT[job]}.{REPORT[job]}" if job in OUTPUT else "count.json")


def outputs(spark, job: str, out: Path) -> dict[str, Any]:
    """The job's Parquet outputs (sorted rows) and its report without timings."""
    report = json.loads(report_path(job, out).read_text())
    found: dict[str, Any] = {"report": {k: v for k, v in report.items() if k not in RUN_KEYS}}
    found["budget"] = report.get("budget")
    if job != "distinct_count":
        for path in sorted(out.iterdir()):
            if path.is_dir() and path.name.startswith(OUTPUT[job]):
                found[path.name] = sorted(map(tuple, spark.read.parquet(str(path)).collect()))
    return found


def items(spark, out: Path) -> list[str]:
    return sorted(r["item"] for r in spark.read.parquet(str(out / "items")).collect())


@pytest.fixture(scope="module")
def data(spark, tmp_path_factory) -> Path:
    """Pairs with many items at MAD2R's round-2 threshold, and a hypergraph with conflicts."""
    from spark_dp.generators.spark_frames import hypergraph_frame

    base = tmp_path_factory.mktemp("keyed")
    rows = [(f"b{k}-{u}", f"b{k}") for k in range(BORDERLINE) for u in range(21)]
    # users with three of five popular items: the cap of 2 keeps a keyed random pair
    rows += [(f"p{u}", f"pop{(u + j) % 5}") for u in range(60) for j in range(3)]
    spark.createDataFrame(rows, "user_id string, item string").write.parquet(str(base / "pairs"))
    graph, _ = hypergraph_frame(spark, "skewed", n_records=1500, seed=3)
    graph.write.parquet(str(base / "graph"))
    return base


@pytest.fixture(scope="module")
def key_files(tmp_path_factory) -> list[Path]:
    """Two key files (``spark-dp keygen``'s)."""
    base = tmp_path_factory.mktemp("keys")
    paths = [base / "a.key", base / "b.key"]
    for path in paths:
        write_key_file(path)
    return paths


@pytest.fixture(scope="module")
def twice(spark, data, key_files, tmp_path_factory) -> dict[str, dict[str, Any]]:
    """Each job run twice with the first key, into the same paths (``--overwrite``): the first
    with a budget store (the jobs that spend budget), the second without one, so that it
    computes the release again (with the store, the same request would not be run again: see
    tests/budget/test_jobs_against_a_store.py); both runs' outputs and logs, and the files of
    the second run."""
    from spark_dp.budget import BudgetStore

    found: dict[str, dict[str, Any]] = {}
    for job in JOBS:
        out = tmp_path_factory.mktemp(job)
        store = f"sqlite:///{out / 'budget.db'}"
        flags = ["--noise-key-file", str(key_files[0]), "--overwrite"]
        charged = list(flags)
        if job != "contribution_bounding":  # it spends no budget: no store
            with BudgetStore.open(store) as s:
                s.set_cap("keyed", 10.0, 1e-3)
            charged += ["--budget-store", store, "--dataset-id", "keyed"]
        runs = []
        for run_flags in (charged, flags):
            log = run(job, argv(job, data, out, *run_flags))
            runs.append({"log": log, **outputs(spark, job, out)})
        found[job] = {"out": out, "store": store, "runs": runs}
    return found


@pytest.mark.parametrize("job", list(JOBS))
def test_a_key_file_makes_the_release_repeat(twice, job):
    first, second = twice[job]["runs"]
    assert first.keys() == second.keys()
    for name in first.keys() - {"log", "budget"}:
        assert first[name] == second[name], f"{job}: {name} differs between the two runs"
    randomness = first["report"]["randomness"]
    assert randomness["mode"] == "key-file" and randomness["production_safe"] is True
    assert randomness["key_fingerprint"] in first["log"]


def test_the_data_leaves_the_release_to_the_noise(twice):
    # Otherwise the repeat above would hold for any noise: many items are near the threshold
    # (some released, some not) and the order decides which records fill the capacities.
    released = twice["partition_selection"]["runs"][0]["items"]
    borderline = [i for (i,) in released if i.startswith("b")]
    assert 0.1 * BORDERLINE < len(borderline) < 0.9 * BORDERLINE
    cb = twice["contribution_bounding"]["runs"][0]["report"]
    assert 0 < cb["selected"] < cb["contribution_bounding"]["input"]["n_records"]


def test_the_order_of_contribution_bounding_depends_on_the_key(spark, data, key_files, twice,
                                                               tmp_path):  # fmt: skip
    flags = ["--noise-key-file", str(key_files[1])]
    run("contribution_bounding", argv("contribution_bounding", data, tmp_path, *flags))
    other = outputs(spark, "contribution_bounding", tmp_path)
    assert other["records"] != twice["contribution_bounding"]["runs"][0]["records"]


@pytest.mark.parametrize("job", list(JOBS))
def test_no_key_material_in_reports_logs_store_or_outputs(twice, key_files, job):
    runs = twice[job]
    from spark_dp.budget.ledger import default_ledger_path

    ledger = [default_ledger_path()] if default_ledger_path().exists() else []
    leaks = find_key_material(
        [key_files[0].read_bytes()],
        runs["out"],  # Parquet outputs, reports, the budget store's SQLite file
        *ledger,  # the default ledger, where the second (store-less) run is recorded
        *(r["log"] for r in runs["runs"]),
        json.dumps(runs["runs"][0]["report"]),
    )
    assert not leaks, f"key material found in {leaks}"
    if job == "contribution_bounding":  # not a DP release: it spends no budget, books nothing
        assert not (runs["out"] / "budget.db").exists()
    else:  # the first run is charged, the second (no store) is the same release computed again
        from spark_dp.budget import BudgetStore

        with BudgetStore.open(runs["store"]) as store:
            (budget,) = store.summary()
        assert budget.releases == 1
        first, second = (r["budget"] for r in runs["runs"])
        assert first["charged"] is True and second["enforced"] is False


def test_the_key_scan_finds_a_leaked_key(tmp_path, key_files):
    # The scan above can fail: each form of the key, dropped into a file, is found.
    from spark_dp.randomness import ReleaseKey

    raw = key_files[0].read_bytes()
    secret = ReleaseKey.from_file(key_files[0]).secret
    for k, form in enumerate([raw, secret.hex(), raw.hex().upper(), secret]):
        leak = tmp_path / f"leak{k}" / "part-0.txt"
        leak.parent.mkdir()
        leak.write_bytes(b"noise: " + (form.encode() if isinstance(form, str) else form))
        assert find_key_material([raw], leak.parent), form
    import base64

    assert find_key_material([raw], "x" + base64.b64encode(secret).decode().rstrip("="))
    assert not find_key_material(
        [raw], "fingerprint " + ReleaseKey.from_file(key_files[0]).fingerprint
    )


def test_the_noise_depends_on_the_request_not_the_layout(spark, data, key_files, twice,
                                                         tmp_path):  # fmt: skip
    """Same request (key, input, arguments): the same items when Spark splits the input into
    many read partitions and shuffles into 5 (a layout is not part of the release). Other keys
    (two fresh entropy keys) give other items, and differ from each other. (The request was
    committed in the default ledger: computed again here without one, ``--no-ledger``.)"""
    reference = [i for (i,) in twice["partition_selection"]["runs"][0]["items"]]
    layout = {"spark.sql.shuffle.partitions": "5", "spark.sql.files.maxPartitionBytes": "4096"}
    previous = {k: spark.conf.get(k) for k in layout}
    for k, v in layout.items():
        spark.conf.set(k, v)
    try:
        assert spark.read.parquet(str(data / "pairs")).rdd.getNumPartitions() > 1
        run("partition_selection", argv("partition_selection", data, tmp_path / "same",
                                        "--noise-key-file", str(key_files[0]),
                                        "--no-ledger"))  # fmt: skip
    finally:
        for k, v in previous.items():
            spark.conf.set(k, v)
    assert items(spark, tmp_path / "same") == reference
    fresh = []
    for name in ("e1", "e2"):  # two runs without a key file: two fresh keys from OS entropy
        run("partition_selection", argv("partition_selection", data, tmp_path / name))
        fresh.append(items(spark, tmp_path / name))
    assert reference not in fresh, "another key gave the key file's release"
    assert fresh[0] != fresh[1], "two entropy keys gave the same release"


def test_local_1_under_spark_submit_equals_this_sessions_local_2(spark, data, key_files, twice,
                                                                 tmp_path):  # fmt: skip
    out = tmp_path / "local1"
    cmd = [spark_submit(), "--master", "local[1]", *SUBMIT_CONF]
    cmd += [str(ROOT / "jobs" / "partition_selection.py")]
    cmd += argv("partition_selection", data, out, "--noise-key-file", str(key_files[0]))
    cmd += ["--no-ledger"]  # computed again: the ledger has the request committed
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-4000:]
    reference = [i for (i,) in twice["partition_selection"]["runs"][0]["items"]]
    assert items(spark, out) == reference
    assert not find_key_material([key_files[0].read_bytes()], log, out)
