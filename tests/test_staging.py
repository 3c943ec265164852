"""The commit protocol: a run killed at any filesystem operation leaves, once the next run has
recovered, either the earlier release or the complete new one; never a mix, never debris."""

from __future__ import annotations

import json
import os
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
