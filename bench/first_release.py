"""A new user's first release, timed: install, a wrong first try, the fix; and ``--help``.

``python -m bench.first_release`` measures, each command a fresh process:

1. ``spark-dp <job> --help`` of every job and a ``--dry-run`` (median of 5 each; the goal:
   under a second);
2. ``pip install .`` of this checkout into a fresh venv (pip's cache warm: the wheels of the
   dependencies are not downloaded again, but pip resolves and installs them as a user's would);
3. with that venv's ``spark-dp``, a first release on the user's own Parquet file with custom
   column names (``customer_id``, ``product``): the first try without column flags, which must
   fail in one line in under 5 s (the schema is read before Spark starts), then the fix
   (``--user-col customer_id --item-col product``), a full run.

The results, with the machine's load (``uptime``) before and after, go to
``bench/results/first_release/results.md``. Not a test: timings depend on the machine.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results" / "first_release" / "results.md"
REPEATS = 5
WRONG_FLAGS_LIMIT = 5.0
"""Seconds within which the first try with the wrong column flags must fail."""
ANSWER_LIMIT = 1.0
"""Seconds within which ``--help`` and ``--dry-run`` must answer."""


def _timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, int, str, str]:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    return time.perf_counter() - t0, done.returncode, done.stdout, done.stderr


def _median(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    """The median of REPEATS fresh processes' seconds (each must exit 0)."""
    seconds = []
    for _ in range(REPEATS):
        s, code, _, err = _timed(cmd, cwd, env)
        if code != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {err}")
        seconds.append(s)
    return statistics.median(seconds)


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def _help_latency(python: str, cwd: Path, env: dict[str, str]) -> list[tuple[str, float]]:
    sys.path.insert(0, str(REPO))
    from spark_dp.cli import JOBS

    return [(job, _median([python, "-m", "spark_dp", job, "--help"], cwd, env)) for job in JOBS]


def _user_data(root: Path, python: str, env: dict[str, str]) -> None:
    code = (
        "import pyarrow as pa, pyarrow.parquet as pq\n"
        "n = 20000\n"
        "pq.write_table(pa.table({'customer_id': [f'c{i % 4000}' for i in range(n)],"
        " 'product': [f'p{(i * 7919) % 300}' for i in range(n)]}), 'shop.parquet')\n"
    )
    subprocess.run([python, "-c", code], cwd=root, env=env, check=True)


def main() -> int:
    lines = ["# A first release: install, a wrong first try, the fix; `--help`", ""]
    load_before = _uptime()
    with tempfile.TemporaryDirectory(prefix="spark_dp-first-release-") as tmp:
        root = Path(tmp)
        env = {**os.environ, "XDG_STATE_HOME": str(root / "state"), "PYTHONPATH": ""}
        env.pop("SPARK_DP_LEDGER", None)
        venv = root / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        python = str(venv / "bin" / "python")
        spark_dp = str(venv / "bin" / "spark-dp")
        build = root / "src"  # a copy without .venv and build leftovers, as a clone is
        shutil.copytree(
            REPO,
            build,
            ignore=shutil.ignore_patterns(
                ".venv*", ".git", "build", "dist", "*.egg-info", ".cache", "__pycache__"
            ),
        )
        t_install, code, _, err = _timed(
            [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "."],
            build,
            env,
        )
        if code != 0:
            raise SystemExit(f"pip install . failed: {err}")
        user = root / "work"
        user.mkdir()
        _user_data(user, python, env)
        help_rows = _help_latency(python, user, env)
        base = [spark_dp, "partition-selection", "--input", "shop.parquet", "--epsilon", "1"]
        t_dry = _median(
            [*base, "--output", "out/items", "--dry-run", "--user-col", "customer_id",
             "--item-col", "product"],
            user,
            env,
        )  # fmt: skip
        t_wrong, wrong_code, _, wrong_err = _timed([*base, "--output", "out/items"], user, env)
        fix = [*base, "--output", "out/items", "--user-col", "customer_id", "--item-col", "product"]
        t_fix, fix_code, fix_out, fix_err = _timed(fix, user, env)
    load_after = _uptime()
    wrong_line = wrong_err.strip().splitlines()[-1] if wrong_err.strip() else ""
    answer = fix_out.strip().splitlines()[0] if fix_out.strip() else fix_err[-400:]
    lines += [
        f"Machine load before: `{load_before}`; after: `{load_after}`.",
        f"Python {sys.version.split()[0]}, {os.cpu_count()} cores; pip's cache warm.",
        "",
        "| step | seconds | exit code |",
        "|---|---|---|",
        f"| `pip install .` into a fresh venv | {t_install:.1f} | 0 |",
        f"| `--dry-run` with the right flags (median of {REPEATS}; goal < {ANSWER_LIMIT:g} s) "
        f"| {t_dry:.2f} | 0 |",
        f"| first try, no column flags (must fail < {WRONG_FLAGS_LIMIT:g} s) | {t_wrong:.2f} | "
        f"{wrong_code} |",
        f"| the fix: `--user-col customer_id --item-col product` | {t_fix:.1f} | {fix_code} |",
        "",
        f"First try's message: `{wrong_line}`",
        "",
        f"The fix's answer: `{answer}`",
        "",
        f"`--help` of each job, fresh process, median of {REPEATS} (the installed venv; goal "
        f"< {ANSWER_LIMIT:g} s):",
        "",
        "| job | seconds |",
        "|---|---|",
        *[f"| {job} | {s:.2f} |" for job, s in help_rows],
        "",
    ]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines))
    print("\n".join(lines))
    quick = max(t_dry, *(s for _, s in help_rows)) < ANSWER_LIMIT
    ok = wrong_code == 2 and t_wrong < WRONG_FLAGS_LIMIT and fix_code == 0 and quick
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
