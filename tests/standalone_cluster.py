"""A Spark standalone cluster on loopback, started from the pip pyspark install (for tests).

    with StandaloneCluster(workers=2) as cluster:
        subprocess.run([spark_submit(), "--master", cluster.master_url, ...])

Processes are started with ``spark-class`` (Master, Worker) and stopped by the pids this
object started, never by name.
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StandaloneCluster:
    """One master and ``workers`` workers (``cores`` cores and ``memory`` each) on 127.0.0.1."""

    def __init__(self, workers: int = 2, cores: int = 1, memory: str = "1g") -> None:
        self.workers, self.cores, self.memory = workers, cores, memory
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

    def _start(self, args: list[str], name: str) -> None:
        log = open(self.dir / f"{name}.log", "w")
        cmd = [str(spark_home() / "bin" / "spark-class"), *args]
        self.procs.append(subprocess.Popen(cmd, env=self.env, stdout=log, stderr=log))

    def status(self) -> dict:
        """The master's JSON status page."""
        url = f"http://127.0.0.1:{self.ui_port}/json/"
        with urllib.request.urlopen(url, timeout=5) as resp:
            return json.loads(resp.read().decode())

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
                    "127.0.0.1",
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
