"""The path plan and the input probe: every rule, without Spark."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_dp.contribution_bounding.state_store import WorkDirMismatchError, check_work_dir
from spark_dp.errors import InputContractError, OutputExistsError, PathConflictError
from spark_dp.io.paths import APPEND, READ, STATE, WRITE, PathPlan, PathSpec
from spark_dp.io.probe import layout_problem, probe_local_input
from spark_dp.io.staging import journal_path
from tests.support.log_capture import warnings_logged


def _parquet(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"user_id": ["u"], "item": ["a"]}), path)
    return path


def _plan(tmp: Path, **paths: str) -> PathPlan:
    access = {"input": READ, "capacities": READ, "ledger": APPEND, "work_dir": STATE}
    specs = [
        PathSpec(role, f"--{role.replace('_', '-')}", p, access.get(role, WRITE),
                 file=role in ("report", "ledger"), table=role in ("input", "capacities"))
        for role, p in paths.items()
    ]  # fmt: skip
    return PathPlan(specs)


@pytest.mark.parametrize(
    ("paths", "message"),
    [
        ({"output": "in"}, "--output {t}/in is the same path as --input {t}/in"),
        ({"output": "o", "report": "in"}, "--report {t}/in is the same path as --input"),
        ({"output": "."}, "--output {t} contains --input {t}/in"),
        ({"output": "in/sub"}, "--output {t}/in/sub lies inside --input {t}/in"),
        ({"output": "o", "report": "o"}, "--output {t}/o is the same path as --report {t}/o"),
        ({"output": "o", "report": "o/r.json"}, "--output {t}/o contains --report {t}/o/r.json"),
        ({"output": "o", "work_dir": "o/w"}, "--output {t}/o contains --work-dir {t}/o/w"),
        ({"output": "o", "ledger": "in/l.jsonl"}, "--ledger {t}/in/l.jsonl lies inside --input"),
        ({"output": "o", "capacities": "o"}, "is the same path as --capacities"),
        ({"output": ""}, "--output is an empty string"),
        ({"output": "o", "report": " "}, "--report is an empty string"),
    ],
)
def test_write_paths_never_touch_read_paths_or_each_other(tmp_path, paths, message):
    _parquet(tmp_path / "in")
    full = {"input": str(tmp_path / "in")}
    full.update({k: (str(tmp_path / v) if v.strip() else v) for k, v in paths.items()})
    with pytest.raises(PathConflictError) as err:
        _plan(tmp_path, **full).check_conflicts()
    assert message.format(t=tmp_path) in str(err.value)


def test_symlinks_and_relative_spellings_are_resolved(tmp_path, monkeypatch):
    _parquet(tmp_path / "data" / "in")
    os.symlink(tmp_path / "data", tmp_path / "alias")
    monkeypatch.chdir(tmp_path / "data")
    with pytest.raises(PathConflictError, match="is the same path as --input"):
        _plan(tmp_path, input="in", output=str(tmp_path / "alias" / "in")).check_conflicts()
    with pytest.raises(PathConflictError, match="is the same path as --input"):
        _plan(tmp_path, input="./in/", output=f"file://{tmp_path}/data/in").check_conflicts()


def test_targets_exist_only_with_overwrite_and_have_the_right_kind(tmp_path):
    _parquet(tmp_path / "in")
    (tmp_path / "o").mkdir()
    plan = _plan(tmp_path, input=str(tmp_path / "in"), output=str(tmp_path / "o"))
    with pytest.raises(OutputExistsError, match=r"--output .* already exists; pass --overwrite"):
        plan.prepare_local(overwrite=False)
    plan.prepare_local(overwrite=True)
    (tmp_path / "r.json").mkdir()
    with pytest.raises(PathConflictError, match=r"--report .*r.json is a directory"):
        _plan(tmp_path, report=str(tmp_path / "r.json")).prepare_local(overwrite=True)
    (tmp_path / "w").write_text("x")
    with pytest.raises(PathConflictError, match=r"--work-dir .* is a file"):
        _plan(tmp_path, work_dir=str(tmp_path / "w")).prepare_local(overwrite=True)
    _plan(tmp_path, ledger=str(tmp_path / "r.json.l")).prepare_local(overwrite=False)  # new


def test_parents_must_be_creatable_directories(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(PathConflictError, match=r"--output .*/f/a/b: .*/f is a file"):
        _plan(tmp_path, output=str(tmp_path / "f" / "a" / "b")).prepare_local(overwrite=False)
    with pytest.raises(PathConflictError, match="directory /proc is not writable"):
        _plan(tmp_path, output="/proc/spark_dp_out").prepare_local(overwrite=False)
    _plan(tmp_path, output=str(tmp_path / "new" / "deep" / "o")).prepare_local(overwrite=False)
    assert sorted(os.listdir(tmp_path)) == ["f"]  # checking created nothing


def test_uris_are_compared_as_strings_and_left_to_hadoop(tmp_path):
    plan = PathPlan(
        [
            PathSpec("input", "--input", "hdfs://nn:8020/data/words/", READ, table=True),
            PathSpec("output", "--output", "hdfs://nn:8020/data/words/../words", WRITE),
        ]
    )
    with pytest.raises(PathConflictError, match="is the same path as --input"):
        plan.check_conflicts()
    other = PathPlan(
        [
            PathSpec("input", "--input", "hdfs://nn:8020/data/words", READ, table=True),
            PathSpec("output", "--output", "s3a://bucket/data/words", WRITE),
        ]
    )
    other.check_conflicts()
    other.prepare_local(overwrite=False)  # nothing local to check
    cluster = PathPlan([PathSpec("input", "--input", "/no/such/dir", READ, table=True)],
                       plain_is_local=False)  # fmt: skip
    cluster.prepare_local(overwrite=False)  # a plain path on a cluster: Hadoop checks it


def test_an_interrupted_commit_is_recovered_before_the_checks(tmp_path):
    out = tmp_path / "o"
    (tmp_path / ".o.tmp-abc").mkdir()  # a staged output, never moved
    entries = [
        {"name": "output", "target": str(out), "staged": str(tmp_path / ".o.tmp-abc")},
        {
            "name": "report",
            "target": str(tmp_path / "o.report.json"),
            "staged": str(tmp_path / ".o.report.json.tmp-abc"),
        },
    ]
    journal = Path(journal_path(str(tmp_path / "o.report.json")))
    journal.write_text(json.dumps({"token": "abc", "entries": entries}))
    (tmp_path / ".o.report.json.tmp-abc").write_text("{}")
    plan = _plan(tmp_path, output=str(out), report=str(tmp_path / "o.report.json"))
    plan.prepare_local(overwrite=False, recover_commits=False)  # --dry-run
    assert len(os.listdir(tmp_path)) == 3
    with warnings_logged() as said:
        plan.prepare_local(overwrite=False)
    assert os.listdir(tmp_path) == []
    assert any("rolled back the commit of an interrupted run" in m for m in said), said
    assert any(f"removed {tmp_path}/.o.tmp-abc" in m for m in said), said


@pytest.mark.parametrize(
    ("make", "fmt", "message"),
    [
        (lambda p: None, None, "does not exist"),
        (lambda p: p.write_text('{"user_id": 1}'), None, "not a Parquet file: it looks like JSON"),
        (lambda p: p.write_text("user_id,item\nu,a\n"), None, "like text .* --input-format csv"),
        (lambda p: p.write_bytes(_parquet(p).read_bytes()[:-9]), None, "not a complete Parquet"),
        (lambda p: p.mkdir(), None, "directory without data files"),
        (lambda p: (p.mkdir(), (p / "_SUCCESS").write_text("")), None, "without data files"),
        (lambda p: os.symlink(p.parent / "gone", p), None, "broken symbolic link"),
        (lambda p: (p.mkdir(), (p / "a.txt").write_text("x,y")), None, r"in/a.txt \(in .*\) is"),
    ],
)  # fmt: skip
def test_the_probe_names_the_problem(tmp_path, make, fmt, message):
    path = tmp_path / "in"
    make(path)
    with pytest.raises(InputContractError, match=message):
        probe_local_input(str(path), fmt)


def test_the_probe_accepts_parquet_directories_and_csv(tmp_path):
    d = tmp_path / "d"
    _parquet(d / "part=1" / "part-0.parquet")
    (d / "_SUCCESS").write_text("")
    (d / ".part-0.parquet.crc").write_text("x")
    probe_local_input(str(d), None)
    csv = tmp_path / "x.data"
    csv.write_text("user_id,item\nu,a\n")
    probe_local_input(str(csv), "csv")
    probe_local_input(str(tmp_path / "x.data"), "csv")


@pytest.mark.parametrize(
    ("files", "problem"),
    [
        (["part-0.parquet", "part-1.parquet", "_SUCCESS"], None),
        (["k=1/part-0.parquet", "k=2/part-1.parquet", "_SUCCESS"], None),
        (["k=1/j=a/part-0.parquet", "k=2/j=b/part-1.parquet"], None),
        (["part-0.parquet", "_temporary/0/part-9.parquet", ".spark-staging/x.parquet"], None),
        (["part-0.parquet", "k=1/part-1.parquet"], "both directly and in the sub-directory k=1/"),
        (["part-0.parquet", "sub/part-1.parquet"], "sub-directory sub/"),
        (["a/b/part-0.parquet", "c/part-1.parquet"], "different depths (e.g. in a/b/)"),
        (["a/b/c/part-0.parquet"], "sub-directory a/, which is not a key=value"),
        (["k=1/part-0.parquet", "j=2/part-1.parquet"], "mixes partition keys at one level"),
        (["k=1/part-0.parquet", "notkv/part-1.parquet"], "sub-directory notkv/"),
        (["=1/part-0.parquet"], "sub-directory =1/"),
    ],
)
def test_the_layouts_spark_reads_whole_and_the_others(files, problem):
    found = layout_problem(files)
    assert (found is None) == (problem is None), found
    if problem:
        assert problem in found


def test_the_probe_refuses_a_layout_and_special_files_before_opening_them(tmp_path):
    d = tmp_path / "in"
    _parquet(d / "part-0.parquet")
    _parquet(d / "k=1" / "part-1.parquet")
    with pytest.raises(InputContractError, match=r"in holds data files both directly .* k=1/"):
        probe_local_input(str(d), None)
    e = tmp_path / "fifo_in"
    _parquet(e / "part-0.parquet")
    os.mkfifo(e / "part-1.parquet")  # opened, it would block the test forever
    with pytest.raises(InputContractError, match=r"part-1.parquet .* is a named pipe"):
        probe_local_input(str(e), None)
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(InputContractError, match=r"--input .*pipe is a named pipe"):
        _plan(tmp_path, input=str(tmp_path / "pipe")).prepare_local(overwrite=False)


def test_columns_that_differ_only_in_case_are_refused_before_spark(tmp_path):
    pq.write_table(pa.table({"user_id": ["u"], "USER_ID": ["v"], "item": ["a"]}), tmp_path / "c")
    with pytest.raises(InputContractError, match=r"'user_id' and 'USER_ID'.* differ only in case"):
        probe_local_input(str(tmp_path / "c"), None)
    (tmp_path / "c.csv").write_text("Item,user_id,item\n1,2,3\n")
    with pytest.raises(InputContractError, match="'Item' and 'item'"):
        probe_local_input(str(tmp_path / "c.csv"), None)


@pytest.mark.parametrize("role", ["output", "report", "ledger"])
def test_a_special_file_is_never_written(tmp_path, role):
    """As root a device node given as --report with --overwrite was replaced (issue 39): it is
    refused before anything moves, even with --overwrite."""
    target = tmp_path / "dev"
    os.mkfifo(target)
    plan = _plan(tmp_path, **{role: str(target)})
    with pytest.raises(PathConflictError, match=r"dev is a named pipe; pass a regular file"):
        plan.prepare_local(overwrite=True)
    assert stat.S_ISFIFO(os.lstat(target).st_mode)
    os.remove(target)
    os.mkfifo(tmp_path / "parent")
    with pytest.raises(PathConflictError, match="parent is a named pipe, not a directory"):
        _plan(tmp_path, **{role: str(tmp_path / "parent" / "x")}).prepare_local(overwrite=True)


def _claimed(fs, path, inputs):
    check_work_dir(fs, path, f"job {inputs}")


def test_a_work_directory_the_job_did_not_write_is_refused_and_kept(tmp_path):
    _parquet(tmp_path / "in")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")

    def plan(path: Path) -> PathPlan:
        return PathPlan(
            [
                PathSpec("input", "--input", str(tmp_path / "in"), READ, table=True),
                PathSpec("work_dir", "--work-dir", str(path), STATE, claim=_claimed),
            ]
        )

    for overwrite in (False, True):
        with pytest.raises(WorkDirMismatchError, match="is not a spark_dp work directory"):
            plan(mine).prepare_local(overwrite=overwrite)
    assert sorted(os.listdir(mine)) == ["notes.txt"]
    other = tmp_path / "other"
    other.mkdir()
    (other / "meta.json").write_text(json.dumps({"owner": "job input=/elsewhere"}))
    with pytest.raises(WorkDirMismatchError, match="holds the state of another run"):
        plan(other).prepare_local(overwrite=True)
    ours = tmp_path / "ours"
    ours.mkdir()
    inputs = plan(ours).inputs()
    assert inputs == f"input={tmp_path}/in"
    (ours / "meta.json").write_text(json.dumps({"owner": f"job {inputs}"}))
    plan(ours).prepare_local(overwrite=False)  # this job's own state: resumed
    plan(tmp_path / "new").prepare_local(overwrite=False)  # not there yet: created by the job


def test_a_full_disk_removes_the_work_directory_on_it_only(tmp_path):
    work = tmp_path / "w"
    (work / "round").mkdir(parents=True)
    plan = _plan(tmp_path, work_dir=str(work))
    plan.remove_state(os.stat(tmp_path).st_dev + 1)  # another disk: kept
    assert work.exists()
    with warnings_logged() as said:
        plan.remove_state(os.stat(tmp_path).st_dev)
    assert not work.exists()
    assert said == [f"--work-dir {work}: removed the work directory from the full disk"]
