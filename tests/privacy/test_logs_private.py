"""Nothing private in the logs (issue 14, item 6): library calls and whole jobs.

Every family's library call runs at INFO on a dataset whose private counts are distinctive
numbers (7,919 rows, 1,009 users, 3,517 items = the union, 5,651 distinct pairs, 2,268
duplicate rows, and the pairs kept after the per-user cap); none of them may appear in what the
run writes to stdout, stderr or the spark_dp loggers. The same run with unsafe debug logging on
shows them, so the check has the power to fail.
"""

from __future__ import annotations

import io
import logging
import random
import re
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from spark_dp.logs import configure_logging, unsafe_debug, unsafe_debug_enabled
from spark_dp.randomness import Randomness

ROWS, USERS, ITEMS, PAIRS = 7919, 1009, 3517, 5651
MAX_ITEMS = 37  # Δ0 / capacity: cuts the heavy users below


def _pairs() -> list[tuple[str, str]]:
    """ROWS rows: PAIRS distinct (user, item) pairs over USERS users and ITEMS items."""
    rng = random.Random(14)
    distinct = {(f"u{i % USERS}", f"i{i}") for i in range(ITEMS)}  # every user and item
    while len(distinct) < PAIRS:  # the rest on 12 heavy users, most above the cap
        distinct.add((f"u{rng.randrange(12)}", f"i{rng.randrange(ITEMS)}"))
    ordered = sorted(distinct)
    rows = ordered + [rng.choice(ordered) for _ in range(ROWS - PAIRS)]
    rng.shuffle(rows)
    return rows


ROWS_DATA = _pairs()
DEGREES = Counter(u for u, _ in set(ROWS_DATA))
CAPPED = sum(min(d, MAX_ITEMS) for d in DEGREES.values())  # pairs kept after the cap
PRIVATE = {
    "rows": ROWS,
    "users": USERS,
    "items (union)": ITEMS,
    "distinct pairs": PAIRS,
    "duplicate rows": ROWS - PAIRS,
    "pairs kept after the cap": CAPPED,
}


def test_the_dataset_has_the_distinctive_counts():
    assert len(ROWS_DATA) == ROWS and len(set(ROWS_DATA)) == PAIRS
    assert len(DEGREES) == USERS and len({i for _, i in ROWS_DATA}) == ITEMS
    assert len(set(PRIVATE.values())) == len(PRIVATE) and 3000 < CAPPED < PAIRS  # the cap bites


def _mentions(text: str, n: int) -> bool:
    """``n`` as a whole number in ``text`` (plain or with thousands separators)."""
    return any(re.search(rf"(?<![\d.]){re.escape(s)}(?![\d])", text) for s in (str(n), f"{n:,}"))


def _leaked(text: str, public: set[int] = frozenset()) -> dict[str, int]:  # type: ignore[assignment]
    return {k: v for k, v in PRIVATE.items() if v not in public and _mentions(text, v)}


@contextmanager
def _captured(capfd: pytest.CaptureFixture[str]) -> Iterator[list[str]]:
    """Everything written to fds 1 and 2 (Python and the JVM) and to the spark_dp loggers."""
    configure_logging("INFO")
    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("spark_dp")
    root.addHandler(handler)
    out: list[str] = []
    capfd.readouterr()
    try:
        yield out
    finally:
        root.removeHandler(handler)
        captured = capfd.readouterr()
        out.append(buf.getvalue() + captured.out + captured.err)


@pytest.fixture(scope="module")
def pairs(spark):
    return spark.createDataFrame(ROWS_DATA, "user_id string, item string").cache()


GRID = (1, 10, MAX_ITEMS)  # the candidates of --max-contributions auto (public constants)


def _partition_selection(algorithm: str, auto: bool = False) -> Callable[..., set[int]]:
    def run(pairs) -> set[int]:
        from spark_dp.partition_selection import PartitionSelectionParams, select_partitions

        bound = "auto" if auto else MAX_ITEMS
        params = PartitionSelectionParams(
            algorithm=algorithm, max_contributions=bound, tuning_candidates=GRID
        )
        with select_partitions(pairs, params, Randomness.create(3)) as selection:
            released = {r.output_items for r in selection.rounds} | {selection.max_contributions}
            return released | {selection.items.count()}  # released sizes are public

    return run


def _preview(pairs) -> set[int]:
    from spark_dp.partition_selection import PreviewParams, preview_partitions

    params = PreviewParams(epsilon=0.5, tuning_candidates=GRID)
    preview_partitions(pairs, params, Randomness.create(3))
    return set()  # the estimates are released as numbers with a fraction, never as counts


def _distinct_count(method: str) -> Callable[..., set[int]]:
    def run(pairs) -> set[int]:
        from spark_dp.distinct_count import DistinctCountParams
        from spark_dp.distinct_count.registry import REGISTRY

        algorithm = REGISTRY[method]
        plan = algorithm.plan(DistinctCountParams(epsilon=1.0, max_contributions=MAX_ITEMS))
        result = algorithm.run(pairs.distinct(), plan, Randomness.create(3))
        return {int(result.release.lower_bound)}

    return run


def _contribution_bounding(algorithm: str, **extra: object) -> Callable[..., set[int]]:
    def run(pairs) -> set[int]:
        from spark_dp.contribution_bounding import bound_contributions
        from spark_dp.contribution_bounding.params import BoundingParams

        incidences = pairs.selectExpr("item AS record_id", "user_id")
        params = BoundingParams(algorithm=algorithm, max_contributions=MAX_ITEMS, **extra)  # type: ignore[arg-type]
        result = bound_contributions(incidences, params, randomness=Randomness.create(3))
        logging.getLogger("spark_dp.jobs").info(result.headline())  # as the job runner does
        return set()  # bounding releases nothing: every count of it is private

    return run


RUNS = {
    "partition_selection/mad2r": _partition_selection("mad2r"),
    "partition_selection/basic-auto": _partition_selection("basic", auto=True),
    "partition_selection/dp-sips": _partition_selection("dp-sips"),
    "distinct_count/exact": _distinct_count("exact"),
    "contribution_bounding/proposal": _contribution_bounding(
        "proposal", driver_threshold_rows=1500
    ),
}
SLOW_RUNS = {
    **{
        f"partition_selection/{a}": _partition_selection(a)
        for a in (
            "basic",
            "basic-laplace",
            "mad",
            "truncated-geometric",
            "laplace-thresholding",
            "gaussian-thresholding",
        )
    },
    "partition_selection/mad2r-auto": _partition_selection("mad2r", auto=True),
    "partition_selection/preview": _preview,
    "distinct_count/greedy": _distinct_count("greedy"),
    "contribution_bounding/greedy": _contribution_bounding("greedy"),
    "contribution_bounding/ilp": _contribution_bounding("ilp"),
    "contribution_bounding/bias-sweep": _contribution_bounding("bias-sweep"),
}


def _check_no_leak(name: str, run: Callable[..., set[int]], pairs, capfd) -> None:
    with _captured(capfd) as out:
        public = run(pairs)
    text = out[0]
    assert "stage " in text  # the run did log at INFO
    assert _leaked(text, public) == {}, f"{name} logged private counts:\n{text[-3000:]}"


@pytest.mark.parametrize("name", sorted(RUNS))
def test_library_logs_carry_no_private_counts(name, pairs, capfd):
    _check_no_leak(name, RUNS[name], pairs, capfd)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SLOW_RUNS))
def test_every_algorithm_logs_no_private_counts(name, pairs, capfd):
    _check_no_leak(name, SLOW_RUNS[name], pairs, capfd)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("partition_selection/mad2r", {"rows", "pairs kept after the cap"}),
        ("contribution_bounding/proposal", {"rows", "distinct pairs", "items (union)", "users"}),
        ("distinct_count/exact", {"distinct pairs"}),
    ],
)
def test_unsafe_debug_logs_show_the_counts(name, expected, pairs, capfd):
    """The same runs with unsafe debug logging: the counts appear (the test above has power),
    on lines marked [UNSAFE-DEBUG]."""
    with _captured(capfd) as out, unsafe_debug():
        public = RUNS[name](pairs)
    text = out[0]
    assert expected <= set(_leaked(text, public)), text[-3000:]
    marked = "\n".join(line for line in text.splitlines() if "[UNSAFE-DEBUG]" in line)
    assert expected <= set(_leaked(marked, public))


# --------------------------------------------------------------------------- whole jobs

JOB_ARGS = {
    "partition_selection": ["--output", "{out}/items", "--epsilon", "1", "--algorithm", "mad2r"],
    "distinct_count": ["--report", "{out}/count.json", "--epsilon", "1"],
    "contribution_bounding": ["--output", "{out}/records", "--record-col", "item"],
}


@pytest.fixture(scope="module")
def pairs_path(pairs, tmp_path_factory):
    path = tmp_path_factory.mktemp("log_privacy") / "pairs"
    pairs.write.parquet(str(path))
    return path


def _report_numbers(node: object) -> set[int]:
    """Every whole number in a report (parameters and released sizes: a report holds nothing
    else, tests/runtime/test_session_report.py)."""
    if isinstance(node, dict):
        return set().union(*map(_report_numbers, node.values())) if node else set()
    if isinstance(node, list):
        return set().union(*map(_report_numbers, node)) if node else set()
    if isinstance(node, bool):
        return set()
    if isinstance(node, (int, float)) and float(node).is_integer():
        return {int(node)}
    return set()


def _run_job(job: str, pairs_path, out, *extra: str) -> set[int]:
    """A whole job at INFO, in this session; returns the numbers it released (its report's,
    for the families whose output is a DP release)."""
    import importlib
    import json

    argv = [a.format(out=out) for a in JOB_ARGS[job]]
    argv += ["--input", str(pairs_path), "--max-contributions", str(MAX_ITEMS), "--seed", "3"]
    main = importlib.import_module(f"spark_dp.jobs.{job}").main
    assert main([*argv, "--log-level", "INFO", *extra]) == 0
    if job == "contribution_bounding":  # a confidential output, not a release: nothing public
        return set()
    reports = list(out.rglob("*.json"))
    assert reports, f"{job} wrote no report under {out}"
    return set().union(*(_report_numbers(json.loads(r.read_text())) for r in reports))


@pytest.mark.parametrize("job", sorted(JOB_ARGS))
def test_jobs_log_no_private_counts_and_unsafe_debug_shows_them(job, pairs_path, tmp_path, capfd):
    with _captured(capfd) as out:
        public = _run_job(job, pairs_path, tmp_path / "safe")
    text = out[0]
    assert "stage " in text and f"{job} done" in text  # the job logged at INFO
    assert _leaked(text, public) == {}, f"{job} logged private counts:\n{text[-3000:]}"
    with _captured(capfd) as out:  # the same job with the unsafe flag: the check has power
        public = _run_job(
            job, pairs_path, tmp_path / "unsafe", "--unsafe-debug-logs", "--allow-unsafe-debug"
        )
    assert "rows" in _leaked(out[0], public), out[0][-3000:]
    assert not unsafe_debug_enabled(), "the job's unsafe switch outlived the job"
