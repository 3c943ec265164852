"""One commit point for a job's outputs and its report.

A job writes every output (Parquet directories, debug files) and finally its report to hidden
*staged* siblings of their targets, ``.<name>.tmp-<token>``; nothing is visible at a target
until :meth:`Staging.commit` moves them into place together, **the report last**:

1. the commit journal ``.<report name>.journal`` is written beside the report (atomically),
   listing every (staged, target, backup) triple;
2. an existing report is moved aside to its backup ``.<name>.old-<token>``;
3. each output in turn: an existing target is moved aside to its backup, the staged copy is
   renamed to the target;
4. the staged report is renamed to the report: **this is the commit point**;
5. the backups and the journal are deleted.

So a reader may assume: **a report's presence marks a complete release**; the outputs it lists
are complete and belong to it. A driver killed at any moment leaves either the earlier state or
the complete new release, once the next run on the same target has called :func:`recover`:

* killed while staging (no journal): only hidden ``.tmp-`` siblings exist; they are deleted;
* killed during steps 1–3 (journal present, staged report present): rolled back, the targets
  and report are restored from their backups (or removed when there were none);
* killed during step 5 (journal present, staged report gone): rolled forward (backups deleted).

Without a report file (a report printed to stdout) the journal sits beside the last output.

Under Spark Connect with a non-local URI no rename is available on the client: the staging is
*direct* (``direct=True``): Spark writes each output straight to its target (its own commit
protocol writes ``_SUCCESS`` last), and the report is written after every output finished, so
its presence still marks a complete release; a killed run may leave an output without a report,
which a reader must ignore and the next run replaces only with ``--overwrite``.
"""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from spark_dp.errors import OutputExistsError
from spark_dp.io.fs import FileSystem, parent_and_name

__all__ = [
    "JOURNAL_SUFFIX",
    "Staging",
    "clean_stale",
    "journal_path",
    "new_token",
    "recover",
    "staged_path",
]

log = logging.getLogger(__name__)

JOURNAL_SUFFIX = ".journal"
_TEST_DELAY_ENV = "SPARK_DP_TEST_COMMIT_DELAY"  # seconds between commit steps (kill tests only)


def new_token() -> str:
    """A fresh token naming one run's staged files."""
    return uuid.uuid4().hex[:12]


def _sibling(path: str, tag: str) -> str:
    parent, name = parent_and_name(path)
    return f"{parent.rstrip('/')}/.{name}.{tag}" if parent != "." else f".{name}.{tag}"


def staged_path(path: str, token: str) -> str:
    """The hidden staged sibling ``.<name>.tmp-<token>`` of ``path``."""
    return _sibling(path, f"tmp-{token}")


def _backup_path(path: str, token: str) -> str:
    return _sibling(path, f"old-{token}")


def journal_path(path: str) -> str:
    """The commit journal ``.<name>.journal`` of the report (or last output) ``path``."""
    return _sibling(path, JOURNAL_SUFFIX.lstrip("."))


def _pause() -> None:
    delay = os.environ.get(_TEST_DELAY_ENV)
    if delay:
        time.sleep(float(delay))


@dataclass
class _Entry:
    name: str
    target: str
    staged: str
    backup: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "target": self.target, "staged": self.staged}


@dataclass
class Staging:
    """The staged outputs of one run and their commit.

    Args:
        fs_for: the filesystem of a path (:func:`spark_dp.io.fs.filesystem` bound to the
            session).
        overwrite: existing targets may be replaced (the path plan has already refused an
            existing target without it, and any target that is also read).
        direct: write straight to the targets (Spark Connect with a non-local URI).
        token: names this run's staged files.
    """

    fs_for: Callable[[str], FileSystem]
    overwrite: bool = False
    direct: bool = False
    token: str = field(default_factory=new_token)
    entries: list[_Entry] = field(default_factory=list)
    committed: bool = False
    journal: str | None = None
    created: list[str] = field(default_factory=list)  # parent directories this run made

    def stage(self, name: str, target: str) -> str:
        """Register ``target`` and return where to write it now (its staged sibling)."""
        if self.direct:
            entry = _Entry(name, target, target, target)
        else:
            entry = _Entry(name, target, staged_path(target, self.token), "")
            entry.backup = _backup_path(target, self.token)
            self._make_parents(target)
        self.entries.append(entry)
        return entry.staged

    def _make_parents(self, target: str) -> None:
        fs = self.fs_for(target)
        missing: list[str] = []
        parent, _ = parent_and_name(target)
        while parent not in ("", ".", "/") and not fs.exists(parent):
            missing.append(parent)
            parent, _ = parent_and_name(parent)
        if missing:
            fs.mkdirs(missing[0])
            self.created += [p for p in missing if p not in self.created]

    def stage_text(self, name: str, target: str, text: str, *, private: bool = False) -> None:
        """Stage a small text file (a JSON debug file, the report); ``private``: created with
        mode 0600 (a confidential file: its staged copy, and the target it is renamed to)."""
        path = self.stage(name, target)
        if private:
            self.fs_for(target).write_text(path, text, private=True)
        else:
            self.fs_for(target).write_text(path, text)

    def commit(
        self,
        report: str | None = None,
        report_text: str | None = None,
        *,
        private_report: bool = False,
    ) -> None:
        """Stage the report (when it goes to a file) and move everything into place.

        The last staged entry (the report, or the last output when the report is not a file)
        is moved last: its rename is the commit point. ``private_report``: the report is
        confidential (mode 0600).
        """
        if report is not None and report_text is not None:
            self.stage_text("report", report, report_text, private=private_report)
        if self.direct or not self.entries:
            self.committed = True
            return
        if not self.overwrite:  # a target that appeared since the path plan looked
            for e in self.entries:
                if self.fs_for(e.target).exists(e.target):
                    raise OutputExistsError(f"{e.target} appeared while the job ran; not replaced")
        final = self.entries[-1]
        journal = journal_path(final.target)
        fs_j = self.fs_for(final.target)
        doc = {"token": self.token, "entries": [e.to_dict() for e in self.entries]}
        tmp = _sibling(final.target, f"tmp-{self.token}-journal")  # stale: see clean_stale
        fs_j.write_text(tmp, json.dumps(doc, indent=1))
        fs_j.rename(tmp, journal)  # 1. the journal
        self.journal = journal
        _pause()
        for e in [final, *self.entries[:-1]]:
            fs = self.fs_for(e.target)
            if fs.exists(e.target):  # 2. the old report, 3. each old output: aside
                fs.rename(e.target, e.backup)
                _pause()
            if e is not final:  # 3. each new output into place
                fs.rename(e.staged, e.target)
                _pause()
        fs_j.rename(final.staged, final.target)  # 4. the commit point
        self.committed = True
        _pause()
        for e in self.entries:  # 5. clean up
            self.fs_for(e.target).delete(e.backup)
        fs_j.delete(journal)

    def abort(self) -> None:
        """Undo an uncommitted run: roll back a commit that stopped half-way (from its
        journal), else remove the staged files."""
        if self.committed or self.direct:
            return
        if self.journal is not None:
            recover(self.journal, self.fs_for)
            return
        for e in self.entries:
            try:
                self.fs_for(e.target).delete(e.staged)
            except Exception as exc:  # cleaning up after a failure must not mask it
                log.warning("could not remove the staged %s %s: %s", e.name, e.staged, exc)
        for directory in self.created:  # deepest first; only if nothing else went there
            fs = self.fs_for(directory)
            if fs.exists(directory) and not fs.list_names(directory):
                fs.delete(directory)


def recover(journal: str, fs_for: Callable[[str], FileSystem]) -> str | None:
    """Finish or undo the commit a killed run left at ``journal``; return what was done.

    Returns:
        ``"rolled back"``, ``"completed"`` or ``None`` (no journal).
    """
    fs_j = fs_for(journal)
    if not fs_j.exists(journal):
        return None
    doc = json.loads(fs_j.read_text(journal))
    token = doc["token"]
    entries = [
        _Entry(d["name"], d["target"], d["staged"], _backup_path(d["target"], token))
        for d in doc["entries"]
    ]
    last = entries[-1]
    if not fs_for(last.target).exists(last.staged):  # the commit point was passed
        for e in entries:
            fs_for(e.target).delete(e.backup)
        fs_j.delete(journal)
        return "completed"
    for e in reversed(entries):
        fs = fs_for(e.target)
        moved_in = not fs.exists(e.staged) and fs.exists(e.target)
        if fs.exists(e.backup):
            if fs.exists(e.target):
                fs.delete(e.target)
            fs.rename(e.backup, e.target)
        elif moved_in:
            fs.delete(e.target)
        fs.delete(e.staged)
    fs_j.delete(journal)
    return "rolled back"


def clean_stale(target: str, fs: FileSystem) -> list[str]:
    """Delete hidden ``.<name>.tmp-*`` and ``.<name>.old-*`` siblings of ``target`` left by a
    killed run (call :func:`recover` first: a journal may still need the backups)."""
    parent, name = parent_and_name(target)
    removed = []
    for sibling in fs.list_names(parent):
        if sibling.startswith((f".{name}.tmp-", f".{name}.old-")):
            path = f"{parent.rstrip('/')}/{sibling}" if parent != "." else sibling
            fs.delete(path)
            removed.append(path)
    return removed
