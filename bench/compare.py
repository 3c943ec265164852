"""``python -m bench.compare``: the same cases at an older revision and at this tree, one run.

Issue 13 asks for "before and after, in the same run": each repetition runs the harness of the
older revision (a detached ``git worktree`` of ``--before``, imported through ``PYTHONPATH``
with this interpreter and its installed dependencies), then the harness of this tree, on the
same generated datasets (one ``SPARK_DP_BENCH_DATA`` directory). Alternating the two inside one
invocation exposes both to the same machine load; the table reports every run's ratio to the
baseline (itself re-measured by each run) and the range per side.

    python -m bench.compare --before e9f5fc2 --repeat 3 \
        --only partition_selection/mad2r/zipf-5m --only distinct_count/exact-zipf-1m

The older revision's code is only checked out in a temporary worktree, never copied here.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.harness import DATA_DIR, RESULTS_DIR

ROOT = Path(__file__).resolve().parents[1]


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def run_harness(tree: Path, out: Path, scale: str, only: list[str]) -> dict[str, Any]:
    """Run ``python -m bench`` from ``tree`` (its own code first on the path); its results."""
    env = dict(os.environ, PYTHONPATH=str(tree), SPARK_DP_BENCH_DATA=str(DATA_DIR))
    cmd = [sys.executable, "-m", "bench", "--scale", scale, "--out", str(out)]
    for text in only:
        cmd += ["--only", text]
    subprocess.run(cmd, cwd=tree, env=env, check=True)
    (found,) = out.glob("results*.json")
    results: dict[str, Any] = json.loads(found.read_text())
    return results


def table(rev: str, head: str, runs: dict[str, list[dict[str, Any]]]) -> str:
    """Markdown: per case, each run's seconds and ratio to the baseline, before and after."""
    cases: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for side, payloads in runs.items():
        for payload in payloads:
            for r in payload["results"]:
                if r["family"] != "baseline":
                    cell = cases.setdefault(r["case"], {}).setdefault(side, [])
                    cell.append((r["seconds"], r["ratio_to_baseline"]))
    machine = runs["after"][0]["machine"]
    lines = [
        f"# Before ({rev}) and after ({head}), alternating in one invocation",
        "",
        f"Machine: {machine['cores']} cores, {machine['memory_gib']} GiB, {machine['cpu']}; "
        f"Spark {machine['spark']}; {machine['date_utc']}. Ratio = case seconds / baseline "
        "seconds of the same run.",
        "",
        "| case | side | ratios (each run) | ratio range | seconds (each run) |",
        "|---|---|---|---|---|",
    ]
    for case, sides in cases.items():
        for side in ("before", "after"):
            cells = sides.get(side, [])
            ratios = [r for _, r in cells]
            lines.append(
                f"| {case} | {side} | {', '.join(f'{r:.2f}' for r in ratios)} | "
                f"{min(ratios):.2f}-{max(ratios):.2f} | "
                f"{', '.join(f'{s:.1f}' for s, _ in cells)} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Parse the flags, alternate the two harnesses ``--repeat`` times, write the table."""
    ap = argparse.ArgumentParser(
        prog="python -m bench.compare", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--before", required=True, help="git revision to compare against")
    ap.add_argument("--only", action="append", required=True, help="cases (as for python -m bench)")
    ap.add_argument("--repeat", type=int, default=3, help="before/after pairs (default 3)")
    ap.add_argument("--scale", default="full", choices=["quick", "full"])
    ap.add_argument("--out", default=str(RESULTS_DIR / "compare"), help="results directory")
    args = ap.parse_args(argv)

    rev = _git("rev-parse", "--short", args.before)
    head = _git("rev-parse", "--short", "HEAD")
    out = Path(args.out)
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory(prefix="spark_dp_bench_") as tmp:
        old = Path(tmp) / "tree"
        _git("worktree", "add", "--detach", str(old), rev)
        try:
            for k in range(args.repeat):
                for side, tree in (("before", old), ("after", ROOT)):
                    print(f"[compare] run {k + 1}/{args.repeat}: {side}", flush=True)
                    runs[side].append(
                        run_harness(tree, Path(tmp) / f"{side}-{k}", args.scale, args.only)
                    )
        finally:
            _git("worktree", "remove", "--force", str(old))
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare.json").write_text(
        json.dumps({"before": rev, "after": head, **runs}, indent=2) + "\n"
    )
    text = table(rev, head, runs)
    (out / "compare.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
