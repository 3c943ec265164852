"""A bench worker that times out is stopped with everything it started (a PySpark driver's JVM
is its child and outlives a killed driver)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from bench.harness import run_worker

# The worker starts a grandchild that would outlive it, prints its pid, then hangs.
_SPAWNER = (
    "import subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
    "print(child.pid, flush=True)\n"
    "time.sleep(120)\n"
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as fh:  # a zombie has exited: it only awaits its parent
            return fh.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:  # it went between the two looks
        return False


def test_a_timed_out_worker_is_killed_with_its_children(tmp_path):
    out = tmp_path / "out"
    with out.open("w") as fh:
        done = run_worker([sys.executable, "-c", _SPAWNER], 8, stdout=fh)  # time to start both
    assert done is None
    grandchild = int(out.read_text().split()[0])
    deadline = time.monotonic() + 10
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(grandchild)


def test_a_finished_worker_gives_its_output_and_exit_code():
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    code = "import sys; print('RESULT {}'); sys.exit(3)"
    done = run_worker([sys.executable, "-c", code], 30, **pipes)
    assert done is not None
    assert (done.returncode, done.stdout.strip()) == (3, "RESULT {}")
