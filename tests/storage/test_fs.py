"""The three filesystem backends behave alike, and the commit protocol runs on each of them:
the local disk through ``os``, Hadoop through the session's JVM, pyarrow (Spark Connect)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spark_dp.io.arrow_fs import ArrowFS
from spark_dp.io.fs import HadoopFS, LocalFS, filesystem, local_path, parent_and_name
from spark_dp.io.staging import Staging


@pytest.fixture(params=["local", "hadoop", "arrow"])
def backend(request, tmp_path):
    """(filesystem, path prefix): plain paths for os, file: URIs for Hadoop and pyarrow."""
    if request.param == "local":
        return LocalFS(), str(tmp_path)
    if request.param == "hadoop":
        return HadoopFS(request.getfixturevalue("spark")), f"file://{tmp_path}"
    return ArrowFS(f"file://{tmp_path}"), f"file://{tmp_path}"


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


@pytest.mark.parametrize("kind", ["local", "hadoop"])
def test_confidential_files_are_created_0600_and_outputs_made_private(
    kind, spark, tmp_path: Path
) -> None:
    """A confidential text file is created 0600 (never readable by others, not even while it
    is written; an existing file is narrowed too), through os and through Hadoop's
    FsPermission; make_private narrows a written table to 0600 files in 0700 directories."""
    fs, root = (
        (LocalFS(), str(tmp_path)) if kind == "local" else (HadoopFS(spark), f"file://{tmp_path}")
    )
    fs.write_text(f"{root}/secret.json", "{}", private=True)
    fs.write_text(f"{root}/public.json", "{}")
    assert _mode(tmp_path / "secret.json") == 0o600
    assert _mode(tmp_path / "public.json") & 0o600 == 0o600
    (tmp_path / "was_public.json").write_text("x")
    (tmp_path / "was_public.json").chmod(0o644)
    fs.write_text(f"{root}/was_public.json", "{}", private=True)
    assert _mode(tmp_path / "was_public.json") == 0o600
    table = tmp_path / "table"
    spark.range(3).write.parquet(str(table))
    fs.make_private(f"{root}/table")
    found = [table, *table.rglob("*")]
    assert len(found) > 2  # the table, its part files, checksums, _SUCCESS
    for path in found:
        assert _mode(path) == (0o700 if path.is_dir() else 0o600), path


def test_the_operations_agree(backend, tmp_path: Path) -> None:
    fs, root = backend
    fs.mkdirs(f"{root}/a/b")
    assert fs.is_dir(f"{root}/a/b") and fs.exists(f"{root}/a")
    fs.write_text(f"{root}/a/b/f.json", '{"x": "é"}')
    assert json.loads(fs.read_text(f"{root}/a/b/f.json")) == {"x": "é"}
    assert not fs.is_dir(f"{root}/a/b/f.json")
    fs.rename(f"{root}/a/b", f"{root}/a/c")
    assert sorted(fs.list_names(f"{root}/a")) == ["c"]
    assert fs.list_names(f"{root}/nothing") == []
    fs.delete(f"{root}/a")
    fs.delete(f"{root}/a")  # absent: no error
    assert not fs.exists(f"{root}/a")
    assert [p for p in tmp_path.iterdir() if not p.name.endswith(".crc")] == []


def test_a_commit_on_each_backend(backend, tmp_path: Path) -> None:
    fs, root = backend
    for generation in ("old", "new"):
        staging = Staging(lambda _p: fs, overwrite=True)
        staged = staging.stage("out", f"{root}/out")
        fs.mkdirs(staged)
        fs.write_text(f"{staged}/part-0", generation)
        staging.commit(f"{root}/out.report.json", generation)
    assert (tmp_path / "out" / "part-0").read_text() == "new"
    assert (tmp_path / "out.report.json").read_text() == "new"
    left = sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".crc"))
    assert left == ["out", "out.report.json"]  # (Hadoop's local filesystem keeps .crc files)


def test_paths_and_the_choice_of_backend(spark) -> None:
    assert local_path("file:///tmp/x") == "/tmp/x" and local_path("file:/tmp/x") == "/tmp/x"
    assert parent_and_name("hdfs://nn:8020/a/b/") == ("hdfs://nn:8020/a", "b")
    assert parent_and_name("s3a://bucket/key") == ("s3a://bucket/", "key")
    assert parent_and_name("rel") == (".", "rel")
    assert isinstance(filesystem("/x"), LocalFS) and isinstance(filesystem("file:/x"), LocalFS)
    assert isinstance(filesystem("hdfs://nn/x", spark), HadoopFS)
    assert isinstance(filesystem("/x", spark, plain_is_local=False), HadoopFS)


def test_hadoop_lists_every_file_of_a_table(spark, tmp_path: Path) -> None:
    """The listing the path plan checks a Hadoop input's layout against (issue 39)."""
    for rel in ("part-0.parquet", "k=1/part-1.parquet", "_temporary/0/x", "a/b/c.parquet"):
        (tmp_path / "t" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "t" / rel).write_text("x")
    listed = HadoopFS(spark).list_files(f"file://{tmp_path}/t")
    names = sorted(n for n in listed if not n.endswith(".crc"))
    assert names == ["_temporary/0/x", "a/b/c.parquet", "k=1/part-1.parquet", "part-0.parquet"]
