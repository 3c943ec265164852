"""The sweep's cases that run a job up to its commit (kills, signals, a full disk) and under
``spark-submit``; :data:`ALL` is the whole table, with :data:`tests.sweep.cases.CASES`."""

from __future__ import annotations

from tests.sweep import cases
from tests.sweep.cases import KILL, Case, Step, cb, dc, ps

__all__ = ["ALL", "CASES"]

CASES: list[Case] = []


def add(case_id: str, family: str, argv: tuple[str, ...], code: int, *words: str,
        **kw: object) -> None:  # fmt: skip
    """Append a case."""
    CASES.append(Case(case_id, family, argv, code, tuple(words), **kw))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- kills
def _kill(job: str, moment: int, variant: str, killed: tuple[str, ...],
          later: tuple[str, ...], plain: tuple[str, ...],
          refused: tuple[str, ...] = ()) -> None:  # fmt: skip
    """Killed at ``moment`` of its commit; a release to some of the same paths (``refused``:
    exit 2 with these words instead); a re-run."""
    CASES.append(Case(f"kill-{job}-{variant}-at-{moment}", "kills", kind="warm", job=job,
                      copy_from=f"tpl-{job}", steps=(
        Step(killed, -9, ((KILL, f"KILL@{moment}"),)),
        Step(later, 2 if refused else 0, words=refused),
        Step(plain, 2, words=("already exists",)),
    )))  # fmt: skip


# A --report named as the report of another existing output (out.report.json while
# out exists) is refused, nothing read or charged (no report beside an output it does not
# describe); the killed commit is recovered first all the same.
BESIDE = ("is the report of out",)


# The moments (changes on disk before the kill): ps 13 (pointer, journal, report aside, output
# aside, output in, report in = the commit point at 8, clean-up), cb 19 (commit point 12), dc
# with a debug file 13 (commit point 8).
for k in (0, 2, 4, 5, 6, 7, 8, 10):
    killed = ps("--epsilon", "1.5", "--seed", "2", "--overwrite", out="out")
    plain = ps("--seed", "1", out="out")
    _kill("ps", k, "report", killed,
          ps("--epsilon", "2", "--seed", "3", "--report", "other.json", "--overwrite",
             out="out"), plain)  # fmt: skip
    _kill("ps", k, "output", killed,
          ps("--epsilon", "2", "--seed", "3", "--report", "out.report.json", "--overwrite",
             out="out2"), plain, BESIDE)  # fmt: skip
for k in (0, 4, 6, 8, 9, 11, 12, 16):
    _kill("cb", k, "output", cb("--seed", "2", "--overwrite", out="out"),
          cb("--seed", "3", "--report", "out.report.confidential.json", "--overwrite",
             out="out2"),
          cb("--seed", "1", out="out"), BESIDE)  # fmt: skip
DEBUG = ("--debug-report", "d.json", "--allow-unsafe-debug")
for k in (0, 2, 4, 5, 6, 7, 8, 10):  # the debug file's path is shared by the later release
    _kill("dc", k, "report", dc("--seed", "2", "--report", "count.json", "--overwrite", *DEBUG),
          dc("--seed", "3", "--report", "count2.json", "--overwrite", *DEBUG),
          dc("--seed", "1", "--report", "count.json"))  # fmt: skip

# --------------------------------------------------------------------------- signals
for job, argv, moments in (
    ("ps", ps("--seed", "2", "--overwrite", out="out"), (0, 5, 8, 11)),
    ("cb", cb("--seed", "2", "--overwrite", out="out"), (3, 12)),
    ("dc", dc("--seed", "2", "--report", "count.json", "--overwrite"), (0, 4)),
):
    for k in moments:
        for sig, code in (("TERM", 143), ("INT", 130)):
            add(f"signal-{job}-{sig.lower()}-at-{k}", "signals", argv, code,
                f"interrupted by SIG{sig}", kind="warm", env=((KILL, f"{sig}@{k}"),),
                copy_from=f"tpl-{job}", job=job)  # fmt: skip
add("signal-ps-term-from-outside", "signals", ps("--seed", "2", out="out")[:-2], 143,
    "interrupted by SIGTERM", kind="cold", signal_at="TERM@stage read: started")  # fmt: skip
add("signal-cb-int-from-outside", "signals", cb("--seed", "2", out="out")[:-2], 130,
    "interrupted by SIGINT", kind="cold", signal_at="INT@stage read: started")  # fmt: skip

# --------------------------------------------------------------------------- full disk
FULL = "no space left on"
for case_id, argv, named, leave in [
    ("ps-output", ps(out="small/o"), "small", "0"),
    ("ps-output-part-way", ps(out="small/o"), "small", "12000"),
    ("ps-report", ps("--report", "small/r.json"), "small/r.json", "0"),
    ("dc-report", dc("--report", "small/c.json"), "small/c.json", "0"),
    ("cb-output-and-work-dir", cb(out="small/o"), "small", "0"),
    ("cb-work-dir-part-way", cb("--work-dir", "small/w", "--driver-threshold-rows", "0"),
     "small/w", "20000"),
]:  # fmt: skip
    add(f"disk-{case_id}", "full-disk", argv, 1, FULL, named, kind="warm",
        setup=(("tmpfs", "small", leave),))  # fmt: skip

add("disk-ps-budget-store", "full-disk", ps("--budget-store", "sqlite:///small/b.db"), 1, FULL,
    "--budget-store sqlite:///small/b.db", setup=(("tmpfs", "small", "0"),))  # fmt: skip

# --------------------------------------------------------------------------- spark-submit
add("submit-ps-missing-input", "spark-submit", ps(inp="nope"), 2, "--input nope",
    "does not exist", kind="cold", submit=True)  # fmt: skip
add("submit-cb-bad-flag", "spark-submit", cb("--frobnicate"), 2, "--frobnicate",
    kind="cold", submit=True)  # fmt: skip

ALL: list[Case] = [*cases.CASES, *CASES]
"""Every case of the sweep."""
