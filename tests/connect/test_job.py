"""A spark_dp job over Spark Connect (issue 16.4): ``partition_selection`` run in-process while
the Connect session is active (what a notebook or an orchestrator on a Connect client does).

It reads Parquet, selects with MAD2R, writes the items atomically and writes its report naming
the Connect application: the job runner and spark_dp.io use no JVM on a Connect session.
"""

from __future__ import annotations

import json

import pytest

from spark_dp.jobs.partition_selection import main
from spark_dp.randomness.key_file import write_key_file


def _store_and_key(tmp_path, cap: float):
    """A budget store with a cap on ``words``, and a release key file."""

    from spark_dp.budget import BudgetStore

    store = f"sqlite:///{tmp_path / 'budget.db'}"
    with BudgetStore.open(store) as s:
        s.set_cap("words", cap, 1e-3)
    key = tmp_path / "key"
    write_key_file(key)
    return store, key


def test_partition_selection_job_over_connect(spark, server, tmp_path):
    rows = [(f"u{u}", "common") for u in range(300)] + [(f"u{u}", f"solo{u}") for u in range(300)]
    spark.createDataFrame(rows, "user_id string, item string").write.parquet(
        str(tmp_path / "pairs")
    )
    out = tmp_path / "items"
    code = main(
        [
            "--input", str(tmp_path / "pairs"),
            "--output", str(out),
            "--algorithm", "mad2r",
            "--epsilon", "1",
            "--delta", "1e-5",
            "--seed", "3",
        ]
    )  # fmt: skip
    assert code == 0
    assert [r["item"] for r in spark.read.parquet(str(out)).collect()] == ["common"]
    report = json.loads((tmp_path / "items.report.json").read_text())
    assert report["spark"]["application_id"] == server.applicationId


def test_the_budget_rules_hold_over_connect(spark, tmp_path):
    """Over Spark Connect (the runner's path for a Connect session, as in its direct mode): the
    charge becomes durable before the read, a data-dependent error afterwards stays charged, a
    retry of a committed request costs nothing more, and the same request to another output is
    refused without reading or charging (docs/privacy/budget.md)."""
    from spark_dp.budget import BudgetStore

    store, key = _store_and_key(tmp_path, 1.0)
    rows = [(f"u{u}", f"w{u % 7}") for u in range(200)]
    spark.createDataFrame(rows, "user_id string, item string").write.parquet(str(tmp_path / "ok"))
    spark.createDataFrame([*rows, (None, "w1")], "user_id string, item string").write.parquet(
        str(tmp_path / "nulls")
    )
    common = ["--epsilon", "0.4", "--noise-key-file", str(key), "--budget-store", store]
    common += ["--dataset-id", "words", "--log-level", "WARNING"]
    nulls = ["--input", str(tmp_path / "nulls"), "--strict-input"]
    assert main([*nulls, "--output", str(tmp_path / "n"), *common]) == 2  # found in the rows
    ok = ["--input", str(tmp_path / "ok"), *common]
    assert main([*ok, "--output", str(tmp_path / "a")]) == 0
    assert main([*ok, "--output", str(tmp_path / "a"), "--overwrite"]) == 0  # a retry: left as is
    assert main([*ok, "--output", str(tmp_path / "b")]) == 2  # the same request elsewhere
    assert not (tmp_path / "b").exists()
    with BudgetStore.open(store) as s:
        (row,) = s.summary()
        states = [r.shown_state for r in s.runs()]
    assert states == ["failed (charged)", "committed"]
    assert row.spent_epsilon == pytest.approx(0.8) and row.reserved_epsilon == 0


@pytest.mark.parametrize(("moment", "retry"), [("charged", 0), ("staged", 3)])
def test_no_second_release_for_one_charge_over_connect(spark, tmp_path, moment, retry):
    """Over Spark Connect: a run interrupted at ``moment`` (the runner's moment
    callback), its CSV input rewritten with the same name, size and modification time, and
    retried: before its release id the retry takes the charge over; after it (a complete
    release staged) the retry is a second charge, refused over the cap. Every release id
    computed is on the books under a charge of its own."""
    import os

    import spark_dp.release_ids
    from spark_dp.budget import BudgetStore
    from spark_dp.jobs.partition_selection import SPEC
    from spark_dp.jobs.runner import RunHooks, run_job

    csv = tmp_path / "words.csv"

    def write(shift: int) -> None:
        rows = [f"u{u:03d},w{(u * shift + k) % 20:02d}" for u in range(600) for k in range(3)]
        csv.write_text("user_id,item\n" + "\n".join(rows) + "\n", encoding="utf-8")

    write(7)
    store, key = _store_and_key(tmp_path, 1.5)
    argv = ["--input", str(csv), "--output", str(tmp_path / "out"), "--epsilon", "1"]
    argv += ["--noise-key-file", str(key), "--budget-store", store, "--dataset-id", "words"]
    bound: list[str] = []
    real = spark_dp.release_ids.release_id

    def recorded(**kw):
        bound.append(real(**kw))
        return bound[-1]

    def interrupt(name: str) -> None:
        if name == moment:
            raise KeyboardInterrupt

    spark_dp.release_ids.release_id = recorded
    try:
        assert run_job(SPEC, argv, hooks=RunHooks(moments=interrupt)) == 130
        st = csv.stat()
        write(11)
        os.utime(csv, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert run_job(SPEC, argv) == retry
    finally:
        spark_dp.release_ids.release_id = real
    with BudgetStore.open(store) as s:
        (row,) = s.summary()
        runs = s.runs()
    assert len(runs) == 1 and len(set(bound)) == 1 and runs[0].release == bound[0]
    assert row.spent_epsilon + row.reserved_epsilon == pytest.approx(1.0)
    assert (tmp_path / "out").exists() == (retry == 0)
