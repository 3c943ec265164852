"""Key files, confidential files and what Spark shows (issue 34, and the key-file item of 39).

* Key files refused before Spark starts (exit 2, one line, no JVM: ``JAVA_HOME`` points
  nowhere, so a started Spark would fail with exit 1; nothing new on disk): mode 0644 or 0666,
  32 raw random bytes, a passphrase, the format around 31 zero bytes then 0x01, a damaged file
  (each saying how to make a key: ``spark-dp keygen``), a key that is or lies inside an input;
  ``--seed`` with a budget store (no store file is created).
* The mode of every file each job writes: public outputs and reports as the umask gives them,
  confidential ones (contribution bounding's outputs, user state, report and kept work
  directory; the distinct count's debug report) 0600 files in 0700 directories.
* A release's part-file count does not follow the input's size.
* ``--private-spark-ui`` and ``conf/private-spark.conf``.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_dp.errors import ConfigError
from spark_dp.jobs import contribution_bounding, distinct_count, partition_selection
from spark_dp.randomness.key_file import KeyFileContent, encode_key_file, write_key_file
from tests.support.cli_forkserver import run_in_server

ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- key files


def _workspace(root: Path) -> Path:
    root.mkdir(parents=True)
    table = pa.table({"user_id": [f"u{i}" for i in range(20)], "item": ["a", "b"] * 10})
    (root / "words").mkdir()
    pq.write_table(table, root / "words" / "part-00000.parquet")
    pq.write_table(table, root / "data.parquet")
    for name in ("k644", "k666", "good", "words/.release.key"):
        write_key_file(root / name)
    (root / "k644").chmod(0o644)
    (root / "k666").chmod(0o666)
    good = (root / "good").read_bytes()
    forged = encode_key_file(KeyFileContent(os.urandom(16), bytes(31) + b"\x01"))
    keys = {
        "raw32": os.urandom(32),
        "passphrase": b"correct horse battery staple\n",
        "zeros-one": forged,
        "damaged": good[:-3] + (b"0" if good[-3:-2] != b"0" else b"1") + good[-2:],
    }
    for name, content in keys.items():
        (root / name).write_bytes(content)
        (root / name).chmod(0o600)
    (root / "data.parquet").chmod(0o600)  # a key-shaped file mode: refused as an input anyway
    return root


KEYGEN = "spark-dp keygen --out key"
KEY_CASES = [
    ("mode-0644", ["--noise-key-file", "k644"], ["--noise-key-file 'k644'", "0644", "chmod 600"]),
    ("mode-0666", ["--noise-key-file", "k666"], ["0666", "chmod 600 k666"]),
    ("raw-bytes", ["--noise-key-file", "raw32"], ["not a spark-dp key file", KEYGEN]),
    ("passphrase", ["--noise-key-file", "passphrase"], ["not a spark-dp key file", KEYGEN]),
    ("zeros-then-one", ["--noise-key-file", "zeros-one"], ["not random bytes", KEYGEN]),
    ("damaged", ["--noise-key-file", "damaged"], ["is damaged", KEYGEN]),
    (
        "inside-input",
        ["--noise-key-file", "words/.release.key"],
        ["lies inside --input words"],
    ),
    (
        "is-input",
        ["--noise-key-file", "data.parquet", "--input", "data.parquet"],
        ["--noise-key-file data.parquet is --input data.parquet"],
    ),
    (
        "seed-with-store",
        ["--seed", "1", "--budget-store", "sqlite:///b.db"],
        ["--seed", "--allow-test-seed-with-budget-store"],
    ),
]


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else ""
        for p in sorted(root.rglob("*"))
    }


def test_bad_key_files_and_a_seed_with_a_store_are_refused_before_spark(tmp_path):
    cases, before = [], {}
    for job in ("partition-selection", "distinct-count"):
        for case_id, extra, _ in KEY_CASES:
            root = _workspace(tmp_path / f"{job}-{case_id}")
            argv = [job, "--input", "words", "--epsilon", "1"]
            argv += ["--output", "o"] if job == "partition-selection" else []
            cases.append(
                {
                    "id": f"{job}-{case_id}",
                    "argv": [*argv, *extra],
                    "cwd": str(root),
                    "env": {"JAVA_HOME": str(tmp_path / "no-java")},  # a JVM would fail: exit 1
                }
            )
            before[f"{job}-{case_id}"] = (_snapshot(root), root)
    results = run_in_server(cases)
    for job in ("partition-selection", "distinct-count"):
        for case_id, _, words in KEY_CASES:
            result = results[f"{job}-{case_id}"]
            lines = [ln for ln in result["stderr"].splitlines() if ln.strip()]
            assert result["code"] == 2, (case_id, result["stderr"])
            assert len(lines) == 1 and "Traceback" not in result["stderr"], result["stderr"]
            for word in words:
                assert word in lines[0], (case_id, word, lines[0])
            snapshot, root = before[f"{job}-{case_id}"]
            assert _snapshot(root) == snapshot  # no store file, no output, the inputs intact


# --------------------------------------------------------------------------- file modes


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _modes(*roots: Path) -> dict[Path, int]:
    found = {}
    for root in roots:
        for p in [root, *(root.rglob("*") if root.is_dir() else [])]:
            found[p] = p.stat().st_mode & 0o777
    return found


def _assert_private(*roots: Path) -> None:
    for path, mode in _modes(*roots).items():
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))


def _assert_public(*roots: Path) -> None:
    """As the umask gives them (022 here: readable by others), never narrowed by the job."""
    if _umask() & 0o044:
        pytest.skip(f"the umask {_umask():03o} makes every file private already")
    for path, mode in _modes(*roots).items():
        assert mode & 0o044 == 0o044, (path, oct(mode))


def test_the_mode_of_every_file_each_job_writes(spark, tmp_path):
    rows = [(f"u{u}", f"w{(u * 7 + k) % 40}") for u in range(300) for k in range(3)]
    spark.createDataFrame(rows, "user_id string, item string").write.parquet(str(tmp_path / "in"))
    graph = [(f"r{i}", f"u{(i * 3 + k) % 70}") for i in range(300) for k in range(2)]
    spark.createDataFrame(graph, "record_id string, user_id string").write.parquet(
        str(tmp_path / "graph")
    )
    out = tmp_path / "out"
    inp = ["--input", str(tmp_path / "in"), "--seed", "1", "--log-level", "WARNING"]
    assert partition_selection.main([*inp, "--output", str(out / "items"), "--epsilon", "1"]) == 0
    _assert_public(out / "items", out / "items.report.json")
    assert (
        distinct_count.main(
            [
                *inp,
                "--epsilon",
                "1",
                "--report",
                str(out / "count.json"),
                "--debug-report",
                str(out / "count-debug.json"),
                "--allow-unsafe-debug",
            ]
        )
        == 0
    )
    _assert_public(out / "count.json")
    _assert_private(out / "count-debug.NONPRIVATE.json")
    cb = ["--input", str(tmp_path / "graph"), "--max-contributions", "2", "--seed", "1"]
    assert (
        contribution_bounding.main(
            [*cb, "--output", str(out / "records"), "--keep-work-dir", "--log-level", "WARNING"]
        )
        == 0
    )
    _assert_private(
        out / "records",
        out / "records_user_state",
        out / "records.report.confidential.json",
        out / "records_work",
    )
    assert not (out / "records.report.json").exists()
    left = sorted(p.name for p in out.iterdir())
    assert left == sorted(
        ["items", "items.report.json", "count.json", "count-debug.NONPRIVATE.json", "records",
         "records_user_state", "records.report.confidential.json", "records_work"]
    )  # fmt: skip


# --------------------------------------------------------------------------- what readers see


def _part_files(path: Path) -> int:
    return sum(1 for p in path.iterdir() if p.name.startswith("part-"))


def test_the_part_file_count_does_not_follow_the_input_size(spark, tmp_path):
    """Two inputs, the second with 30 times the rows (many items of one user, each released
    with probability below δ), the same heavy items released. Spark's partitions follow the
    data's size (here: adaptive execution coalescing to 1 KB shuffle partitions out of 64), the
    released files do not."""
    heavy = [(f"h{u}", f"heavy{k}") for u in range(400) for k in range(12)]
    light = [(f"l{u}", f"light{u}") for u in range(30_000)]  # one user each: never released
    spark.createDataFrame(heavy, "user_id string, item string").write.parquet(
        str(tmp_path / "small")
    )
    spark.createDataFrame(heavy + light, "user_id string, item string").write.parquet(
        str(tmp_path / "large")
    )
    settings = {
        "spark.sql.shuffle.partitions": "64",
        "spark.sql.adaptive.advisoryPartitionSizeInBytes": "1k",
        "spark.sql.adaptive.coalescePartitions.minPartitionSize": "1",
    }
    previous = {k: spark.conf.get(k, None) for k in settings}
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        released = {}
        for name in ("small", "large"):
            argv = ["--input", str(tmp_path / name), "--output", str(tmp_path / f"o-{name}")]
            argv += ["--algorithm", "basic", "--epsilon", "1", "--seed", "3"]
            assert partition_selection.main([*argv, "--log-level", "WARNING"]) == 0
            items = spark.read.parquet(str(tmp_path / f"o-{name}")).collect()
            released[name] = {r["item"] for r in items}
    finally:
        for k, v in previous.items():
            spark.conf.unset(k) if v is None else spark.conf.set(k, v)
    assert released["small"] == released["large"] == {f"heavy{k}" for k in range(12)}
    assert _part_files(tmp_path / "o-small") == _part_files(tmp_path / "o-large") == 1


JOB_RUNS = {
    "partition_selection": (partition_selection, ["--algorithm", "basic", "--epsilon", "1"]),
    "contribution_bounding": (contribution_bounding, ["--record-col", "item"]),
}


def _files(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


@pytest.mark.parametrize("job", ["partition_selection", "contribution_bounding"])
def test_the_same_rows_are_written_as_the_same_bytes_whatever_spark_splits(spark, tmp_path, job):
    """One key, one input, run with 2 and with 13 shuffle partitions (a setting the release id
    leaves out): the released rows leave Spark in another order, but the files are the same
    bytes, names included: sorted rows, canonical part files (docs/privacy/boundary.md#rows)."""
    rows = [(f"u{u}", f"w{k}") for u in range(300) for k in range(12)]
    rows += [(f"u{u}", f"own{u % 40}") for u in range(300)]
    spark.createDataFrame(rows, "user_id string, item string").write.parquet(str(tmp_path / "in"))
    module, argv = JOB_RUNS[job]
    argv = [*argv, "--max-contributions", "3", "--seed", "3", "--log-level", "WARNING"]
    previous = spark.conf.get("spark.sql.shuffle.partitions")
    try:
        for n in ("2", "13"):
            spark.conf.set("spark.sql.shuffle.partitions", n)
            out = ["--input", str(tmp_path / "in"), "--output", str(tmp_path / f"out{n}")]
            assert module.main([*out, *argv]) == 0
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", previous)
    two, thirteen = _files(tmp_path / "out2"), _files(tmp_path / "out13")
    assert two == thirteen and any(name.startswith("part-00") for name in two)
    canonical = re.compile(r"\.?(part-\d{5}\.snappy\.parquet|_SUCCESS)(\.crc)?")
    assert all(canonical.fullmatch(name) for name in two), sorted(two)
    parts = sorted(tmp_path.glob("out2/part-*"))
    first = pq.read_table(parts[0]).column(0).to_pylist()
    assert first == sorted(first)


def test_canonical_part_names_drop_the_write_id_and_keep_checksums(tmp_path):
    from spark_dp.io.fs import LocalFS
    from spark_dp.jobs.publish import canonical_part_names

    job = "5f4815be-bb88-4019-886c-b18a105cba1b"
    names = [f"part-00003-{job}-c000.snappy.parquet", f"part-00003-{job}-c001.snappy.parquet"]
    names += [f".{names[0]}.crc", "_SUCCESS", "._SUCCESS.crc"]
    for name in names:
        (tmp_path / name).write_text(name)
    canonical_part_names(LocalFS(), str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [
            "part-00003.snappy.parquet",
            "part-00003-c001.snappy.parquet",
            ".part-00003.snappy.parquet.crc",
            "_SUCCESS",
            "._SUCCESS.crc",
        ]
    )
    assert (tmp_path / ".part-00003.snappy.parquet.crc").read_text() == f".{names[0]}.crc"


def test_private_spark_ui_turns_the_ui_and_event_log_off(tmp_path):
    import argparse
    import logging

    from spark_dp.jobs.monitoring import PRIVATE_SPARK_CONF, check_monitoring, private_spark_conf

    log = logging.getLogger("t")
    on, off = argparse.Namespace(private_spark_ui=True), argparse.Namespace(private_spark_ui=False)

    conf: dict[str, str] = {}
    private_spark_conf(on, conf, log)
    assert conf == PRIVATE_SPARK_CONF
    untouched = {"spark.ui.enabled": "true"}
    private_spark_conf(off, untouched, log)
    assert untouched == {"spark.ui.enabled": "true"}
    with pytest.raises(ConfigError, match=r"spark\.ui\.enabled=true"):
        private_spark_conf(on, {"spark.ui.enabled": "true"}, log)
    events = tmp_path / "events"
    events.mkdir(mode=0o755)
    logged = {"spark.eventLog.enabled": "true", "spark.eventLog.dir": str(events)}
    with pytest.raises(ConfigError, match="chmod 700"):
        private_spark_conf(on, dict(logged), log)
    events.chmod(0o700)
    kept = dict(logged)
    private_spark_conf(on, kept, log)
    assert kept["spark.eventLog.enabled"] == "true"
    assert kept["spark.ui.enabled"] == "false"

    class Conf:
        def __init__(self, values: dict[str, str]) -> None:
            self.values = values

        def get(self, key: str, default: str | None = None) -> str | None:
            return self.values.get(key, default)

    class Spark:
        conf = Conf({})  # Spark's default: the UI is on

    with pytest.raises(ConfigError, match="started with its UI on"):
        check_monitoring(on, Spark())
    check_monitoring(off, Spark())  # without the flag: not checked
    Spark.conf = Conf({"spark.ui.enabled": "false"})
    check_monitoring(on, Spark())


def test_the_shipped_private_config_is_the_switch(tmp_path):
    from spark_dp.jobs.monitoring import PRIVATE_SPARK_CONF

    shipped = {}
    for line in (ROOT / "conf" / "private-spark.conf").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, value = line.split(None, 1)
            shipped[key] = value.strip()
    assert shipped == PRIVATE_SPARK_CONF
