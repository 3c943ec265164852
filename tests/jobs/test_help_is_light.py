"""``--help`` and ``--dry-run`` never import pyspark, so they answer in under a second; ``--help``
loads neither pandas nor scipy's compiled parts either (they load on first use), and a dry run
loads no scipy at all (the calibration's numerics are :mod:`spark_dp.dp.numerics`).

Each job runs in a fresh interpreter (a module imported by an earlier test would hide an
import): ``spark-dp <job> --help``, then a ``--dry-run`` on a local Parquet file with custom
column names (its schema read without Spark: :mod:`spark_dp.io.schema_peek`), and after each
no ``pyspark`` module is loaded (after the dry run, no ``scipy`` module either). Their latency
is measured in ``bench/first_release.py``, not here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_dp.cli import JOBS

CHILD = """
import contextlib, io, json, sys
from spark_dp.cli import main

def loaded(names=("pyspark",)):
    return sorted(m for m in sys.modules if any(m == n or m.startswith(n + ".") for n in names))

job, dry_run = sys.argv[1], json.loads(sys.argv[2])
with contextlib.redirect_stdout(io.StringIO()) as help_text:
    try:
        main([job, "--help"])
    except SystemExit as exc:
        assert not exc.code, exc.code
after_help = loaded(("pyspark", "pandas", "scipy.special", "scipy.optimize", "scipy.sparse"))
with contextlib.redirect_stdout(io.StringIO()) as plan:
    code = main([job, *dry_run, "--dry-run"])
print(json.dumps({"help": help_text.getvalue()[:40], "after_help": after_help, "code": code,
                  "plan": plan.getvalue(), "after_dry_run": loaded(("pyspark", "scipy"))}))
"""

COLUMNS = ["--user-col", "person"]
DRY_RUNS = {
    "generate": ["--output", "g", "--kind", "zipf"],
    "partition-selection": ["--input", "t.parquet", "--output", "o", "--epsilon", "1",
                            "--item-col", "word", *COLUMNS, "--no-ledger"],
    "contribution-bounding": ["--input", "t.parquet", "--output", "o", "--max-contributions", "2",
                              "--record-col", "doc", *COLUMNS],
    "distinct-count": ["--input", "t.parquet", "--epsilon", "1", "--item-col", "word", *COLUMNS,
                       "--no-ledger"],
    "preview": ["--input", "t.parquet", "--epsilon", "0.2", "--item-col", "word", *COLUMNS,
                "--no-ledger"],
}  # fmt: skip


def test_every_job_is_covered():
    assert set(DRY_RUNS) == set(JOBS)


@pytest.mark.parametrize("job", sorted(DRY_RUNS))
def test_help_and_dry_run_import_no_pyspark_and_a_dry_run_no_scipy(tmp_path: Path, job: str):
    table = pa.table({"person": ["p1"], "word": ["w"], "doc": ["d1"]})
    pq.write_table(table, tmp_path / "t.parquet")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, job, json.dumps(DRY_RUNS[job])],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["help"].startswith("usage: spark-dp")
    assert result["code"] == 0, done.stderr
    assert json.loads(result["plan"])["job"] == job.replace("-", "_")
    assert result["after_help"] == [] and result["after_dry_run"] == []
