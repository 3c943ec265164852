"""A throw-away PostgreSQL server for the budget-store tests, started and stopped by pid.

The server binaries come from the ``pgserver`` wheel (in ``spark_dp[test]``: PostgreSQL 16
built into a PyPI package, so a fresh machine with Python and pip has them), or else from a
Debian ``postgresql`` package (``/usr/lib/postgresql/*/bin``). ``initdb`` and ``postgres`` run
directly (no pg_ctl), so the test holds the server's own pid and stops it with SIGINT (fast
shutdown). PostgreSQL refuses to run as root: as root the server runs as ``nobody`` in a
temporary directory it owns (the binaries are copied there when ``nobody`` cannot reach them).
"""

from __future__ import annotations

import glob
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["postgres_bin", "postgres_server"]


def postgres_bin() -> Path:
    """The directory holding ``initdb`` and ``postgres``.

    Raises:
        RuntimeError: no server binaries on this machine (pip install pgserver, or apt-get
            install postgresql).
    """
    spec = importlib.util.find_spec("pgserver")  # located, not imported
    if spec is not None and spec.submodule_search_locations:
        d = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
        if (d / "postgres").exists():
            return d
    for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if Path(d, "postgres").exists() and Path(d, "initdb").exists():
            return Path(d)
    raise RuntimeError(
        "no PostgreSQL server binaries: pip install pgserver (part of spark_dp[test]) or "
        "apt-get install postgresql"
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_nobody() -> dict[str, Any]:
    if os.geteuid() != 0:
        return {}
    return {"user": "nobody", "group": "nogroup", "extra_groups": []}


def _reachable(bindir: Path, run_as: dict[str, Any]) -> bool:
    try:
        done = subprocess.run(
            [str(bindir / "postgres"), "--version"], capture_output=True, timeout=30, **run_as
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _copy_binaries(bindir: Path, base: Path) -> Path:
    """Copy the install (and the wheel's bundled libraries) where ``nobody`` can run it."""
    install = bindir.parent
    target = base / "pg" / install.parent.name / install.name
    shutil.copytree(install, target, symlinks=True)
    libs = install.parent.parent / f"{install.parent.name}.libs"  # pgserver.libs of the wheel
    if libs.is_dir():
        shutil.copytree(libs, base / "pg" / libs.name, symlinks=True)
    return target / "bin"


@contextmanager
def postgres_server(timeout: float = 60.0) -> Iterator[str]:
    """Start a PostgreSQL server on 127.0.0.1 and yield its SQLAlchemy URL; stop it by pid."""
    bindir = postgres_bin()
    run_as = _as_nobody()
    base = Path(tempfile.mkdtemp(prefix="spark_dp-pg-", dir="/tmp"))
    proc = None
    try:
        if run_as:
            shutil.chown(base, "nobody", "nogroup")
            if not _reachable(bindir, run_as):
                bindir = _copy_binaries(bindir, base)
        data = base / "data"
        initdb = [str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust"]
        subprocess.run(
            [*initdb, "-E", "UTF8", "--no-locale", "--no-sync"],
            check=True,
            capture_output=True,
            timeout=120,
            **run_as,
        )
        port = _free_port()
        log = open(base / "server.log", "wb")  # closed below, once the server holds it
        server = [str(bindir / "postgres"), "-D", str(data), "-p", str(port), "-k", str(base)]
        proc = subprocess.Popen(
            [*server, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"],
            stdout=log,
            stderr=subprocess.STDOUT,
            **run_as,
        )
        log.close()
        url = f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
        _wait_ready(proc, port, timeout, base / "server.log")
        yield url
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # fast shutdown of this server only
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
        shutil.rmtree(base, ignore_errors=True)


def _wait_ready(proc: subprocess.Popen[bytes], port: int, timeout: float, log: Path) -> None:
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"postgres exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            psycopg.connect(f"host=127.0.0.1 port={port} user=postgres dbname=postgres").close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
