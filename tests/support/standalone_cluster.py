"""A Spark standalone cluster on loopback, started from the pip pyspark install (for tests).

    with StandaloneCluster(workers=2) as cluster:
        subprocess.run([spark_submit(), "--master", cluster.master_url, ...])

Processes are started with ``spark-class`` (Master, Worker) and stopped by the pids this
object started, never by name. The executors of an application are JVMs that the workers fork
(``CoarseGrainedExecutorBackend``); :meth:`StandaloneCluster.executor_pids` finds them through
``/proc`` among the descendants of the worker pids this object started, so a fault-injection
test can kill one by pid.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path


def spark_home() -> Path:
    """The Spark distribution inside the installed pyspark package."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def spark_submit() -> str:
    """Path of the ``spark-submit`` script of that distribution."""
    return str(spark_home() / "bin" / "spark-submit")


def _parent_pids() -> dict[int, int]:
    """pid -> parent pid of every process visible in /proc."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # the process ended meanwhile
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        parents[int(entry.name)] = int(stat[stat.rindex(")") + 2 :].split()[1])
    return parents


def descendants(pid: int) -> list[int]:
    """The live descendants of ``pid`` (children, grandchildren, ...), from /proc."""
    parents = _parent_pids()
    found, frontier = [], [pid]
    while frontier:
        current = frontier.pop()
        children = [p for p, parent in parents.items() if parent == current]
        found += children
        frontier += children
    return found


def cmdline(pid: int) -> str:
    """The command line of ``pid`` ('' once it has ended)."""
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        stat = (Path("/proc") / str(pid) / "stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StandaloneCluster:
    """One master and ``workers`` workers (``cores`` cores and ``memory`` each) on 127.0.0.1.

    With ``distinct_hosts``, worker i binds 127.0.0.(i + 1) instead (every 127/8 address is
    loopback on Linux): Spark then sees one host per worker, which speculative execution needs
    (it never runs a task's copy on a host where an attempt already runs).
    """

    def __init__(
        self, workers: int = 2, cores: int = 1, memory: str = "1g", distinct_hosts: bool = False
    ) -> None:
        self.workers, self.cores, self.memory = workers, cores, memory
        self.hosts = [f"127.0.0.{i + 1}" if distinct_hosts else "127.0.0.1" for i in range(workers)]
        self.port, self.ui_port = _free_port(), _free_port()
        self.master_url = f"spark://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen] = []
        self.dir = Path(tempfile.mkdtemp(prefix="spark_dp_cluster_"))
        self.env = dict(
            os.environ,
            SPARK_LOCAL_IP="127.0.0.1",
            SPARK_HOME=str(spark_home()),
            PYSPARK_PYTHON=os.environ.get("PYSPARK_PYTHON", sys.executable),
        )

    def _start(self, args: list[str], name: str, host: str = "127.0.0.1") -> None:
        log = open(self.dir / f"{name}.log", "w")
        cmd = [str(spark_home() / "bin" / "spark-class"), *args]
        env = dict(self.env, SPARK_LOCAL_IP=host)
        self.procs.append(subprocess.Popen(cmd, env=env, stdout=log, stderr=log))

    def status(self) -> dict:
        """The master's JSON status page."""
        url = f"http://127.0.0.1:{self.ui_port}/json/"
        with urllib.request.urlopen(url, timeout=5) as resp:
            return json.loads(resp.read().decode())

    @property
    def worker_pids(self) -> list[int]:
        """Pids of the worker processes this object started (the master is ``procs[0]``)."""
        return [p.pid for p in self.procs[1:]]

    def executor_pids(self, app_id: str | None = None) -> list[int]:
        """Pids of the live executor JVMs (of application ``app_id`` only, when given):
        descendants of this cluster's workers only."""
        wanted = f"--app-id {app_id} " if app_id else ""
        return sorted(
            pid
            for worker in self.worker_pids
            for pid in descendants(worker)
            if "CoarseGrainedExecutorBackend" in (line := cmdline(pid))
            and wanted in line
            and running(pid)
        )

    def _wait(self, predicate, what: str, timeout: float = 120.0) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            for p in self.procs:
                if p.poll() is not None:
                    raise RuntimeError(
                        f"a cluster process exited while waiting for {what}: see logs in {self.dir}"
                    )
            try:
                if predicate(self.status()):
                    return
            except OSError:
                pass
            time.sleep(1.0)
        raise TimeoutError(f"cluster: timed out waiting for {what} (logs in {self.dir})")

    def start(self) -> StandaloneCluster:
        self._start(
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--webui-port",
                str(self.ui_port),
            ],
            "master",
        )
        self._wait(lambda s: s.get("status") == "ALIVE", "the master")
        for i in range(self.workers):
            wdir = self.dir / f"worker{i}"
            wdir.mkdir()
            self._start(
                [
                    "org.apache.spark.deploy.worker.Worker",
                    "--host",
                    self.hosts[i],
                    "--cores",
                    str(self.cores),
                    "--memory",
                    self.memory,
                    "--webui-port",
                    str(_free_port()),
                    "--work-dir",
                    str(wdir),
                    self.master_url,
                ],
                f"worker{i}",
                self.hosts[i],
            )
        self._wait(
            lambda s: sum(w.get("state") == "ALIVE" for w in s.get("workers", [])) == self.workers,
            f"{self.workers} workers",
        )
        return self

    def stop(self) -> None:
        """Stop the processes this object started (by pid), workers first."""
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(self.procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
        self.procs.clear()

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
