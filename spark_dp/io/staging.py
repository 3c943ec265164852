"""One commit point for a job's outputs and its report.

A job writes every output (Parquet directories, debug files) and finally its report to hidden
*staged* siblings of their targets, ``.<name>.tmp-<token>``; nothing is visible at a target
until :meth:`Staging.commit` moves them into place together, **the report last**:

1. a *pointer* ``.<name>.journal`` is written beside every target but the last, then the commit
   journal beside the last target (the report), listing every (staged, target) pair with the
   identity of each staged copy (each file written atomically: a temporary sibling renamed);
2. an existing report is moved aside to its backup ``.<name>.old-<token>``;
3. each output in turn: an existing target is moved aside to its backup, the staged copy is
   renamed to the target; a *retired* target (:meth:`Staging.retire`: the report of an output
   this commit replaces, when the new report goes elsewhere) is only moved aside;
4. the staged report is renamed to the report: **this is the commit point**;
5. the backups, then the journal, then the pointers are deleted.

So a reader may assume: **a report's presence marks a complete release**; the outputs it lists
are complete and belong to it. A driver killed at any moment leaves either the earlier state or
the complete new release, once the next run that writes *any* of the same targets has called
:func:`recover` on that target (a pointer leads it to the journal):

* killed while staging (no journal): only hidden ``.tmp-`` siblings exist; they are deleted;
* killed during steps 1–3 (journal present, staged report present): rolled back, the targets
  and report restored from their backups (or removed when there were none), the report last;
* killed during step 5 (journal present, staged report gone): rolled forward (backups deleted).

A journal protects exactly its targets and its own release: a commit retires any journal left at
its targets before it writes its own, a pointer whose journal is gone or belongs to another
commit is inert, and a roll-back removes or replaces a target only when it is still the copy
this run moved there (same identity: :meth:`~spark_dp.io.fs.FileSystem.identity`),
never a path a later release committed. Every action of a recovery is logged (WARNING, paths
only) as it happens.

Without a report file (a report printed to stdout) the journal sits beside the last output. The
journal, its pointers and the recovery live in :mod:`spark_dp.io.journal`.

So an output and the report that describes it are replaced together or not at all: no report
is left beside an output it does not describe.

Under Spark Connect with a non-local URI no rename is available on the client: the staging is
*direct* (``direct=True``): Spark writes each output straight to its target (its own commit
protocol writes ``_SUCCESS`` last), and the report is written after every output finished, so
its presence still marks a complete release; a killed run may leave an output without a report,
which a reader must ignore and the next run replaces only with ``--overwrite`` (a retired
report is deleted before any output is written there).

Tests hold a commit at each of its changes on disk with ``on_step`` (a callback the job runner
passes in from ``RunHooks.moments``; nothing in the environment changes a commit).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from spark_dp.errors import OutputExistsError
from spark_dp.io.fs import FileSystem, LocalFS, local_path, parent_and_name
from spark_dp.io.journal import (
    JOURNAL_SUFFIX,
    Entry,
    backup_path,
    clean_stale,
    delete_quietly,
    journal_path,
    new_token,
    own_pointer,
    recover,
    sibling,
    sibling_of,
    staged_path,
)

__all__ = [
    "JOURNAL_SUFFIX",
    "Staging",
    "clean_stale",
    "journal_path",
    "new_token",
    "recover",
    "staged_path",
]


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
        on_step: called with ``k`` at each step of the commit (0: everything staged, nothing
            moved; k: after the k-th change on disk), so a test can hold, signal or kill the
            process there (``RunHooks.moments``).
    """

    fs_for: Callable[[str], FileSystem]
    overwrite: bool = False
    direct: bool = False
    token: str = field(default_factory=new_token)
    entries: list[Entry] = field(default_factory=list)
    committed: bool = False
    journal: str | None = None
    created: list[str] = field(default_factory=list)  # parent directories this run made
    on_step: Callable[[int], None] | None = None
    _steps: int = 0

    def stage(self, name: str, target: str) -> str:
        """Register ``target`` and return where to write it now (its staged sibling)."""
        if isinstance(self.fs_for(target), LocalFS):  # the journal outlives this directory
            target = os.path.abspath(local_path(target))
        if self.direct:
            entry = Entry(name, target, target, target)
        else:
            entry = Entry(name, target, staged_path(target, self.token), "")
            entry.backup = backup_path(target, self.token)
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

    def retire(self, name: str, target: str) -> None:
        """Register an existing ``target`` that the commit moves aside with the outputs and
        never puts back (the report of an output this run replaces, when its new report goes
        elsewhere): restored by a roll-back, deleted with the backups once the commit point is
        passed. In direct mode it is deleted now, before any output is written."""
        fs = self.fs_for(target)
        if isinstance(fs, LocalFS):
            target = os.path.abspath(local_path(target))
        if self.direct:
            delete_quietly(fs, target, f"the {name}")
            return
        self.entries.append(Entry(name, target, "", backup_path(target, self.token)))

    def stage_text(self, name: str, target: str, text: str, *, private: bool = False) -> None:
        """Stage a small text file (a JSON debug file, the report); ``private``: created with
        mode 0600 (a confidential file: its staged copy, and the target it is renamed to)."""
        path = self.stage(name, target)
        if private:
            self.fs_for(target).write_text(path, text, private=True)
        else:
            self.fs_for(target).write_text(path, text)

    def _step(self) -> None:
        """One change on disk done: the test moment ``on_step(k)``."""
        if self.on_step is not None:
            self.on_step(self._steps)
        self._steps += 1

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
                if e.staged and self.fs_for(e.target).exists(e.target):
                    raise OutputExistsError(f"{e.target} appeared while the job ran; not replaced")
        for e in self.entries:  # a journal of a killed commit to these paths: retired first
            recover(journal_path(e.target), self.fs_for)
        self._step()  # moment 0: everything staged, nothing moved
        final = self.entries[-1]
        journal = journal_path(final.target)
        for e in self.entries:
            if e.staged:  # a retired target has no new copy
                e.identity = self.fs_for(e.target).identity(e.staged)
        pointer = json.dumps({"token": self.token, "journal": journal})
        for e in self.entries[:-1]:  # 1. the pointers, then the journal
            self._write_atomic(e.target, pointer)
        self.journal = journal
        doc = {"token": self.token, "entries": [e.to_dict() for e in self.entries]}
        self._write_atomic(final.target, json.dumps(doc, indent=1))
        fs_j = self.fs_for(final.target)
        for e in [final, *self.entries[:-1]]:
            fs = self.fs_for(e.target)
            if fs.exists(e.target):  # 2. the old report, 3. each old output: aside
                fs.rename(e.target, e.backup)
                self._step()
            if e is not final and e.staged:  # 3. each new output into place
                fs.rename(e.staged, e.target)
                self._step()
        fs_j.rename(final.staged, final.target)  # 4. the commit point
        self.committed = True
        self._step()
        for e in self.entries:  # 5. clean up: backups, the journal, the pointers
            if self.fs_for(e.target).exists(e.backup):
                self.fs_for(e.target).delete(e.backup)
                self._step()
        fs_j.delete(journal)
        self._step()
        for e in self.entries[:-1]:
            self.fs_for(e.target).delete(journal_path(e.target))
            self._step()
        self.journal = None

    def _write_atomic(self, target: str, text: str) -> None:
        """The journal (or a pointer) beside ``target``: a temporary sibling, then a rename."""
        fs = self.fs_for(target)
        tmp = sibling(target, f"tmp-{self.token}-journal")  # stale if killed: clean_stale
        fs.write_text(tmp, text)
        self._step()
        fs.rename(tmp, journal_path(target))
        self._step()

    def abort(self) -> None:
        """Undo an uncommitted run: roll back a commit that stopped half-way (or finish the
        clean-up of one that passed its commit point) from its journal, else remove the staged
        files, this run's pointers and half-written journals."""
        if self.direct:
            return
        if self.journal is not None and recover(self.journal, self.fs_for) is not None:
            return
        for e in self.entries:
            fs = self.fs_for(e.target)
            parent, name = parent_and_name(e.target)
            staged = e.staged and not self.committed
            for other in fs.list_names(parent) if staged else []:
                if other.startswith(f".{name}.tmp-{self.token}"):  # staged, half-written
                    delete_quietly(fs, sibling_of(e.target, other), f"the staged {e.name}")
            if own_pointer(fs, journal_path(e.target), self.token):  # its journal is gone
                delete_quietly(fs, journal_path(e.target), "a pointer of this run")
        for directory in [] if self.committed else self.created:  # deepest first, if empty
            fs = self.fs_for(directory)
            if fs.exists(directory) and not fs.list_names(directory):
                fs.delete(directory)
