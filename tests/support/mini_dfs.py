"""A real HDFS on loopback for tests: Hadoop's MiniDFSCluster (one namenode, one datanode) in a
JVM of its own, started by Hadoop's command-line manager from the jars ``make hdfs-jars``
fetches (hadoop-client-minicluster and the few jars its manager loads).

    with MiniDFS(tmp_dir, jars_dir()) as dfs:
        spark.range(3).write.parquet(f"{dfs.url}/t")

The folder of jars is ``$SPARK_DP_HDFS_JARS`` (the Makefile sets it), else the one under
``.cache/jars``; without it the tests that need HDFS skip, saying how to fetch it.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MANAGER = "org.apache.hadoop.test.MiniDFSClusterManager"


def jars_dir() -> Path | None:
    """The folder of the minicluster's jars, or None when it was not fetched."""
    named = os.environ.get("SPARK_DP_HDFS_JARS")
    found = [Path(named)] if named else sorted((ROOT / ".cache" / "jars").glob("hadoop-mini*"))
    return next((d for d in found if (d / ".fetched").exists()), None)


class MiniDFS:
    """A MiniDFSCluster process: :attr:`url` is ``hdfs://127.0.0.1:<port>`` once started;
    stopped (and its data removed with ``work``, the caller's folder) by the pid it started."""

    def __init__(self, work: Path, jars: Path, *, timeout: float = 180.0) -> None:
        self.work, self.jars, self.timeout = work, jars, timeout
        self.url = ""
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> MiniDFS:
        self.work.mkdir(parents=True, exist_ok=True)
        details, log = self.work / "details.json", self.work / "namenode.log"
        java = Path(os.environ["JAVA_HOME"], "bin", "java") if "JAVA_HOME" in os.environ else "java"
        argv = [
            str(java),
            "-Xmx512m",
            "-cp",
            f"{self.jars}/*",
            f"-Dtest.build.data={self.work / 'data'}",
            MANAGER,
            *("-format", "-datanodes", "1", "-writeDetails", str(details)),
        ]
        with open(log, "wb") as out:
            self._proc = subprocess.Popen(argv, cwd=self.work, stdout=out, stderr=out)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                break
            try:
                port = json.loads(details.read_text())["namenode_port"]
            except (OSError, ValueError, KeyError):
                time.sleep(0.5)
                continue
            self.url = f"hdfs://127.0.0.1:{port}"
            return self
        self.__exit__(None, None, None)
        tail = log.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"MiniDFSCluster did not start in {self.timeout:.0f} s:\n{tail}")

    def __exit__(self, *exc: object) -> None:
        if self._proc is None:
            return
        self._proc.terminate()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._proc = None
