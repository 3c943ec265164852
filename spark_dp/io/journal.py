"""The commit journal of :mod:`spark_dp.io.staging`: names of the hidden siblings, the journal
and its pointers, and the recovery of a commit a killed run left half done.

Beside a target ``<name>`` live its staged copy ``.<name>.tmp-<token>``, its backup
``.<name>.old-<token>`` and ``.<name>.journal``: the journal of a commit beside its last target
(the report), a *pointer* to that journal beside each other target. :func:`recover`, called on
any of them, finishes a commit whose last rename (the commit point) happened, or rolls it back:
it touches a target only while it is still the copy that commit moved there (same
:meth:`~spark_dp.io.fs.FileSystem.identity`), so it never removes a path a later release
committed, and it logs each action (WARNING, paths only) as it happens.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from spark_dp.io.fs import FileSystem, parent_and_name, read_json

__all__ = [
    "JOURNAL_SUFFIX",
    "Entry",
    "backup_path",
    "clean_stale",
    "delete_quietly",
    "journal_path",
    "new_token",
    "own_pointer",
    "recover",
    "sibling",
    "sibling_of",
    "staged_path",
]

log = logging.getLogger("spark_dp.io.staging")

JOURNAL_SUFFIX = ".journal"


def new_token() -> str:
    """A fresh token naming one run's staged files."""
    return uuid.uuid4().hex[:12]


def sibling(path: str, tag: str) -> str:
    """The hidden sibling ``.<name>.<tag>`` of ``path``."""
    parent, name = parent_and_name(path)
    return f"{parent.rstrip('/')}/.{name}.{tag}" if parent != "." else f".{name}.{tag}"


def staged_path(path: str, token: str) -> str:
    """The hidden staged sibling ``.<name>.tmp-<token>`` of ``path``."""
    return sibling(path, f"tmp-{token}")


def backup_path(path: str, token: str) -> str:
    """Where a commit moves the existing ``path`` aside: ``.<name>.old-<token>``."""
    return sibling(path, f"old-{token}")


def journal_path(path: str) -> str:
    """The commit journal (or the pointer to it) ``.<name>.journal`` beside ``path``."""
    return sibling(path, JOURNAL_SUFFIX.lstrip("."))


@dataclass
class Entry:
    """One (staged, target) pair of a commit, as its journal records it (``staged`` empty: a
    retired target, moved aside and never replaced: :meth:`spark_dp.io.staging.Staging.retire`)."""

    name: str
    target: str
    staged: str
    backup: str
    identity: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "target": self.target,
            "staged": self.staged,
            "identity": self.identity,
        }


def sibling_of(path: str, name: str) -> str:
    """The path of ``name`` in the directory of ``path``."""
    parent, _ = parent_and_name(path)
    return f"{parent.rstrip('/')}/{name}" if parent != "." else name


def delete_quietly(fs: FileSystem, path: str, what: str) -> None:
    """Delete ``path`` if present; cleaning up after a failure must not mask it."""
    try:
        if fs.exists(path):
            fs.delete(path)
    except Exception as exc:
        log.warning("could not remove %s %s: %s", what, path, type(exc).__name__)


def own_pointer(fs: FileSystem, path: str, token: str) -> bool:
    """True when ``path`` is a journal or pointer of the commit named ``token``."""
    doc = read_json(fs, path)
    return doc is not None and doc.get("token") == token


def recover(journal: str, fs_for: Callable[[str], FileSystem]) -> str | None:
    """Finish or undo the commit a killed run left at ``journal`` (a journal, or a pointer
    beside one of its targets); return what was done.

    Returns:
        ``"rolled back"``, ``"completed"``, ``"removed"`` (a pointer whose journal is gone or
        belongs to another commit, or an unreadable journal: inert) or ``None`` (nothing there).
    """
    fs_j = fs_for(journal)
    if not fs_j.exists(journal):
        return None
    doc = read_json(fs_j, journal)
    if doc is not None and "journal" in doc:  # a pointer
        primary = str(doc["journal"])
        its_journal = read_json(fs_for(primary), primary)
        same = its_journal is not None and its_journal.get("token") == doc.get("token")
        if same and primary != journal:
            return recover(primary, fs_for)
        fs_j.delete(journal)
        log.warning("recovery: removed %s, a stale pointer to a finished commit", journal)
        return "removed"
    if doc is None or "entries" not in doc:
        fs_j.delete(journal)
        log.warning("recovery: removed %s, an unreadable commit journal (nothing moved)", journal)
        return "removed"
    token = str(doc["token"])
    entries = [
        Entry(
            d["name"], d["target"], d["staged"], backup_path(d["target"], token), d.get("identity")
        )
        for d in doc["entries"]
    ]
    final = entries[-1]
    if not fs_for(final.target).exists(final.staged):  # the commit point was passed
        for e in entries:
            if fs_for(e.target).exists(e.backup):
                fs_for(e.target).delete(e.backup)
                log.warning("recovery: removed %s, replaced by a committed release", e.backup)
        done = "completed"
    else:
        for e in [*reversed(entries[:-1]), final]:  # the report last: until then, rolling back
            _undo(e, fs_for(e.target))
        done = "rolled back"
    fs_j.delete(journal)
    for e in entries[:-1]:
        pointer = journal_path(e.target)
        if own_pointer(fs_for(e.target), pointer, token):
            fs_for(e.target).delete(pointer)
    log.warning("recovery: %s the commit of an interrupted run (journal %s)", done, journal)
    return done


def _undo(e: Entry, fs: FileSystem) -> None:
    """Roll back one entry of an interrupted commit, touching its target only while it is the
    copy that commit moved there (a retired target was never replaced: only put back)."""
    staged = bool(e.staged) and fs.exists(e.staged)
    target, backup = fs.exists(e.target), fs.exists(e.backup)
    moved_in = (
        bool(e.staged)
        and target
        and not staged
        and (e.identity is None or fs.identity(e.target) == e.identity)
    )
    if moved_in:
        fs.delete(e.target)
        log.warning("recovery: removed %s, moved there by an interrupted commit", e.target)
        target = False
    if backup and not target:
        fs.rename(e.backup, e.target)
        log.warning("recovery: restored %s from its backup", e.target)
    elif backup:
        fs.delete(e.backup)
        log.warning(
            "recovery: kept %s (a later release wrote it); removed the old copy %s",
            e.target,
            e.backup,
        )
    if staged:
        fs.delete(e.staged)
        log.warning("recovery: removed %s, staged by an interrupted run", e.staged)


def clean_stale(target: str, fs: FileSystem) -> list[str]:
    """Delete hidden ``.<name>.tmp-*`` and ``.<name>.old-*`` siblings of ``target`` left by a
    killed run (call :func:`recover` first: a journal may still need the backups)."""
    parent, name = parent_and_name(target)
    removed = []
    for other in fs.list_names(parent):
        if other.startswith((f".{name}.tmp-", f".{name}.old-")):
            path = sibling_of(target, other)
            fs.delete(path)
            log.warning("recovery: removed %s, left by an interrupted run", path)
            removed.append(path)
    return removed
