"""The commit protocol: a run killed at any filesystem operation leaves, once the next run has
recovered, either the earlier release or the complete new one; never a mix, never debris."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from spark_dp.io.fs import LocalFS, parent_and_name
from spark_dp.io.staging import Staging, clean_stale, journal_path, recover, staged_path


class Killed(BaseException):
    """The process died here (nothing after this operation ran, no clean-up either)."""


class DyingFS(LocalFS):
    """The real local filesystem, killed before its ``kill_at``-th mutating operation."""

    def __init__(self, kill_at: int | None = None) -> None:
        self.kill_at = kill_at
        self.ops = 0

    def _tick(self) -> None:
        if self.kill_at is not None and self.ops == self.kill_at:
            raise Killed
        self.ops += 1

    def mkdirs(self, path: str) -> None:
        self._tick()
        super().mkdirs(path)

    def rename(self, src: str, dst: str) -> None:
        self._tick()
        super().rename(src, dst)

    def delete(self, path: str) -> None:
        self._tick()
        super().delete(path)

    def write_text(self, path: str, text: str) -> None:
        self._tick()
        super().write_text(path, text)


def _release(root: Path, fs: LocalFS, generation: str, overwrite: bool) -> None:
    """One job's writes: two staged output directories, a debug file and the report."""
    staging = Staging(lambda _p: fs, overwrite=overwrite)
    for name in ("out", "out_user_state"):
        staged = staging.stage(name, str(root / name))
        fs.mkdirs(staged)
        fs.write_text(f"{staged}/part-0", generation)  # what Spark's writer would do
    staging.stage_text("debug", str(root / "dbg.json"), generation)
    staging.commit(str(root / "out.report.json"), json.dumps({"generation": generation}))


def _state(root: Path) -> dict[str, str | None]:
    def read(p: Path) -> str | None:
        return p.read_text() if p.exists() else None

    report = read(root / "out.report.json")
    return {
        "out": read(root / "out" / "part-0"),
        "user_state": read(root / "out_user_state" / "part-0"),
        "debug": read(root / "dbg.json"),
        "report": json.loads(report)["generation"] if report else None,
    }


def _recover(root: Path) -> None:
    """What the next run does first (the path plan's recovery)."""
    fs = LocalFS()
    for name in ("out", "out_user_state", "dbg.json", "out.report.json"):
        recover(journal_path(str(root / name)), lambda _p: fs)
    for name in ("out", "out_user_state", "dbg.json", "out.report.json"):
        clean_stale(str(root / name), fs)


def _count_ops(tmp: Path, with_old: bool) -> int:
    root = tmp / "count"
    root.mkdir()
    if with_old:
        _release(root, LocalFS(), "old", overwrite=False)
    fs = DyingFS()
    _release(root, fs, "new", overwrite=True)
    return fs.ops


@pytest.mark.parametrize("with_old", [False, True], ids=["fresh", "overwrite"])
def test_a_kill_at_any_operation_leaves_old_or_new(tmp_path: Path, with_old: bool) -> None:
    total = _count_ops(tmp_path, with_old)
    assert total >= 12
    old = {"out": "old", "user_state": "old", "debug": "old", "report": "old"}
    new = {"out": "new", "user_state": "new", "debug": "new", "report": "new"}
    empty = dict.fromkeys(new)
    seen = set()
    for k in range(total):
        root = tmp_path / f"k{k}"
        root.mkdir()
        if with_old:
            _release(root, LocalFS(), "old", overwrite=False)
        with pytest.raises(Killed):
            _release(root, DyingFS(kill_at=k), "new", overwrite=True)
        _recover(root)
        state = _state(root)
        assert state in ((old if with_old else empty), new), (k, state)
        seen.add(state["report"])
        hidden = [p for p in os.listdir(root) if p.startswith(".")]
        assert hidden == [], (k, hidden)
        _release(root, LocalFS(), "next", overwrite=True)  # the next run succeeds
        assert set(_state(root).values()) == {"next"}
    assert seen == {("old" if with_old else None), "new"}  # both outcomes occur


def test_a_failed_commit_rolls_back_at_once(tmp_path: Path) -> None:
    _release(tmp_path, LocalFS(), "old", overwrite=False)

    class BrokenRename(LocalFS):
        failed = False

        def rename(self, src: str, dst: str) -> None:
            if parent_and_name(dst)[1] == "out_user_state" and not self.failed:
                self.failed = True  # once: the roll-back's renames work
                raise OSError("disk full")
            super().rename(src, dst)

    fs = BrokenRename()
    staging = Staging(lambda _p: fs, overwrite=True)
    for name in ("out", "out_user_state"):
        staged = staging.stage(name, str(tmp_path / name))
        fs.mkdirs(staged)
        fs.write_text(f"{staged}/part-0", "new")
    with pytest.raises(OSError, match="disk full"):
        try:
            staging.commit(str(tmp_path / "out.report.json"), json.dumps({"generation": "new"}))
        finally:
            staging.abort()
    assert _state(tmp_path) == {"out": "old", "user_state": "old", "debug": "old", "report": "old"}
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")]


def test_stale_staging_without_a_journal_is_removed(tmp_path: Path) -> None:
    target = str(tmp_path / "out")
    os.makedirs(staged_path(target, "abc"))
    (tmp_path / ".out.old-abc").write_text("x")
    (tmp_path / ".other.tmp-abc").write_text("not ours")
    assert recover(journal_path(target), lambda _p: LocalFS()) is None
    removed = clean_stale(target, LocalFS())
    assert sorted(Path(p).name for p in removed) == [".out.old-abc", ".out.tmp-abc"]
    assert os.listdir(tmp_path) == [".other.tmp-abc"]


def test_abort_removes_the_directories_it_made(tmp_path: Path) -> None:
    fs = LocalFS()
    staging = Staging(lambda _p: fs)
    staged = staging.stage("out", str(tmp_path / "new" / "deep" / "out"))
    fs.mkdirs(staged)
    (tmp_path / "kept").mkdir()
    staging.stage("other", str(tmp_path / "kept" / "x"))
    staging.abort()
    assert sorted(os.listdir(tmp_path)) == ["kept"]


def test_a_target_that_appeared_meanwhile_is_not_replaced(tmp_path: Path) -> None:
    from spark_dp.errors import OutputExistsError

    fs = LocalFS()
    staging = Staging(lambda _p: fs, overwrite=False)
    fs.mkdirs(staging.stage("out", str(tmp_path / "out")))
    (tmp_path / "out").mkdir()  # another writer was faster
    with pytest.raises(OutputExistsError, match="appeared while the job ran"):
        staging.commit(str(tmp_path / "out.report.json"), "{}")
    staging.abort()
    assert sorted(os.listdir(tmp_path)) == ["out"]


def _commit_to(root: Path, fs: LocalFS, generation: str, output: str, report: str) -> None:
    """A release of ``generation``: one output directory and its report (naming the output)."""
    staging = Staging(lambda _p: fs, overwrite=True)
    staged = staging.stage("out", str(root / output))
    fs.mkdirs(staged)
    fs.write_text(f"{staged}/part-0", generation)
    doc = {"generation": generation, "output": output}
    staging.commit(str(root / report), json.dumps(doc))


def _recover_targets(root: Path, *names: str) -> None:
    """What a run writing ``names`` does first (the path plan's recovery)."""
    fs = LocalFS()
    for name in names:
        recover(journal_path(str(root / name)), lambda _p: fs)
    for name in names:
        clean_stale(str(root / name), fs)


def _tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` -> its content."""
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def _baseline(root: Path, generations: list[str], later: tuple[str, str]) -> dict[str, str]:
    """The files after the releases of ``generations`` to out/out.json, then ``later``, with
    no run killed."""
    root.mkdir()
    for generation in generations:
        _commit_to(root, LocalFS(), generation, "out", "out.json")
    _commit_to(root, LocalFS(), "later", *later)
    return _tree(root)


def _plain_files(root: Path, generation: str, output: str, report: str) -> None:
    """A release written by plain file operations (a user's ``rm -r`` and copy), no spark_dp
    commit (a freed inode number may come back for the new directory)."""
    shutil.rmtree(root / output, ignore_errors=True)
    (root / output).mkdir()
    (root / output / "part-0").write_text(generation)
    (root / report).write_text(json.dumps({"generation": generation, "output": output}))


@pytest.mark.parametrize("writer", ["job", "commit-only", "plain-files"])
@pytest.mark.parametrize("change", ["report", "output"])
def test_a_release_to_the_same_paths_makes_an_old_journal_inert(
    tmp_path: Path, change: str, writer: str
) -> None:
    """Issue 39: a run killed during its commit, then a complete release that shares some of its
    paths (another --report, or another --output), then a plain re-run: every file is as if the
    killed run had never started, or had finished; never a mix, never debris, and the later
    release keeps its output and report. A job recovers the paths it writes first (the pointer
    beside a shared path leads to the journal); a commit alone retires the journals at its
    targets; and after a release written by plain file operations the re-run's roll-back still
    keeps what was written (the identity of each path)."""
    later = ("out", "other.json") if change == "report" else ("out2", "out.json")
    without = _baseline(tmp_path / "without", ["old"], later)
    finished = _baseline(tmp_path / "finished", ["old", "killed"], later)
    seen, total, k = set(), None, 0
    while total is None or k < total:
        root = tmp_path / f"k{k}"
        root.mkdir()
        _commit_to(root, LocalFS(), "old", "out", "out.json")
        dying = DyingFS(kill_at=k)
        try:
            _commit_to(root, dying, "killed", "out", "out.json")
            total = dying.ops  # the commit finished: every moment was tried
            break
        except Killed:
            pass
        if writer == "job":
            _recover_targets(root, *later)
        if writer == "plain-files":
            _plain_files(root, "later", *later)
        else:
            _commit_to(root, LocalFS(), "later", *later)
        _recover_targets(root, "out", "out.json")  # the plain re-run
        state = _tree(root)
        assert state in (without, finished), (k, state)
        seen.add(state == finished)
        assert json.loads(state[later[1]])["generation"] == "later"
        assert not [p for p in os.listdir(root) if p.startswith(".")], (k, os.listdir(root))
        k += 1
    assert k >= 8 and seen == {False, True}  # killed before and after its commit point


def _retiring_release(root: Path, fs: LocalFS, generation: str) -> None:
    """A release to ``out`` whose report goes to ``other.json``: the report beside ``out``
    (which described the output it replaces) is retired in the same commit."""
    staging = Staging(lambda _p: fs, overwrite=True)
    staging.retire("report of the replaced output", str(root / "out.report.json"))
    staged = staging.stage("out", str(root / "out"))
    fs.mkdirs(staged)
    fs.write_text(f"{staged}/part-0", generation)
    staging.commit(str(root / "other.json"), json.dumps({"generation": generation}))


def test_a_retired_report_leaves_with_its_output_at_every_kill(tmp_path: Path) -> None:
    """Issue 44: an output and the report that describes it are replaced together or not at
    all, a kill at any operation included (the next run's recovery: its output's pointer)."""
    counting = DyingFS()
    root = tmp_path / "count"
    root.mkdir()
    _release(root, LocalFS(), "old", overwrite=False)
    _retiring_release(root, counting, "new")
    assert not (root / "out.report.json").exists() and (root / "out/part-0").read_text() == "new"
    seen = set()
    for k in range(counting.ops):
        root = tmp_path / f"k{k}"
        root.mkdir()
        _release(root, LocalFS(), "old", overwrite=False)
        with pytest.raises(Killed):
            _retiring_release(root, DyingFS(kill_at=k), "new")
        local = LocalFS()
        for name in ("out", "out.report.json", "other.json"):
            recover(journal_path(str(root / name)), lambda _p, fs=local: fs)
            clean_stale(str(root / name), local)
        out = (root / "out/part-0").read_text()
        beside = root / "out.report.json"
        if out == "old":  # rolled back: the old output with its own report, nothing new
            assert json.loads(beside.read_text())["generation"] == "old"
            assert not (root / "other.json").exists()
        else:  # committed: the new output, its report elsewhere, the old report gone
            assert out == "new" and not beside.exists()
            assert json.loads((root / "other.json").read_text())["generation"] == "new"
        seen.add(out)
        assert [p for p in os.listdir(root) if p.startswith(".")] == [], k
    assert seen == {"old", "new"}
