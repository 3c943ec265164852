"""The spark-dp command: dispatch, help, exit codes."""

from __future__ import annotations

import subprocess
import sys

from spark_dp import cli


def test_dispatch_help_and_unknown(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in (
        "generate",
        "partition-selection",
        "contribution-bounding",
        "distinct-count",
        "calibrate",
        "budget",
    ):
        assert name in out
    assert cli.main([]) == 2
    assert cli.main(["frobnicate"]) == 2
    assert "unknown command 'frobnicate'" in capsys.readouterr().err
    assert cli.main(["generate", "--help"]) == 0  # the job's own help
    assert "--kind" in capsys.readouterr().out
    assert cli.main(["--version"]) == 0


def test_python_dash_m_entry_point():
    done = subprocess.run(
        [sys.executable, "-m", "spark_dp", "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and "spark-dp" in done.stdout
