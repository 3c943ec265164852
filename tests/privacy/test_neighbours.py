"""Nothing leaves a release but the release: every job on neighbouring inputs, one key.

Each case runs a job on D and on D + u, where u is one more user whose items are never
released, with the key bound by hand to one release id (:class:`spark_dp.jobs.runner.RunHooks`), so
both runs draw the same noise and release the same rows. Every other artefact must then be
identical (docs/privacy/boundary.md#neighbour-test): the exit code, stdout, the log above DEBUG
with its timings stripped, every file written byte for byte (names, order, part files), the
report but its documented public fields, the budget store's rows but run ids, hosts and times,
and the executed query plans with their Spark job descriptions (expression ids and the run's
own paths normalised; a plan that runs several times, an iteration, counts once). A second
comparison adds a user whose items *are* released: only those rows (and the released sizes)
may differ (GraphFrames' components: tests/graphframes/test_graphframes_neighbours.py). The
secrets in plans are checked on Spark's event log by
tests/privacy/test_key_never_reaches_spark.py; Delta outputs by tests/delta/test_delta.py.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from pyspark.sql import SparkSession

from spark_dp.budget import BudgetStore
from spark_dp.jobs import contribution_bounding, distinct_count, partition_selection, preview
from spark_dp.partition_selection.registry import ALGORITHMS
from tests.support.neighbours import Artefacts, differences, run_job_in_process

SEED = ["--seed", "5"]
ROOTS = {"D": "D", "Du": "U"}
"""Each run's directory: names of one length (Spark 3.5 cuts a plan's file paths at a length)."""
COMMON = 12  # words every user holds: released by every algorithm
USERS = 120


def _pairs() -> list[tuple[str, str]]:
    """USERS users with the COMMON words and a word of their own (never released), a few
    users with more of their own (the per-user cap bites), and items of a few holders."""
    rows = [(f"u{u}", f"w{k}") for u in range(USERS) for k in range(COMMON)]
    rows += [(f"u{u}", f"own{u}") for u in range(USERS)]
    rows += [(f"u{u}", f"extra{u}-{j}") for u in range(8) for j in range(6)]
    rows += [(f"u{u}", f"rare{u % 4}") for u in range(12)]
    return rows


NEVER = [("unew", "own-new")]
"""u: one more user whose one item is never released (one holder)."""

JOINS = [("unew", "w0")]
"""Contribution bounding's u: one more owner of a record that is not selected (every owner of
``w0`` holds other records first), so the same records are selected; only u's own row of the
user state is new."""

RELEASED_D = [(f"c{u}", f"common{u % 10}") for u in range(400)]
RELEASED_D += [(f"b{u}", "border") for u in range(12)]
"""The second comparison's D (Basic, Δ0 = 1, ε = 1): ten items of 40 holders each, released,
and the item ``border`` of 12 holders, just below the threshold under the test's noise."""

RELEASED = [("unew", "border")]
"""u of the second comparison: one more holder of ``border`` makes it released."""


def _write(spark: SparkSession, rows: list[tuple[str, str]], path: Path) -> None:
    spark.createDataFrame(rows, "user_id string, item string").coalesce(1).write.parquet(str(path))


def _records(rows: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The same rows as (record_id, user_id) incidences: an item is a record its holders own."""
    return [(item, user) for user, item in rows]


COUNT_D = [(f"u{u}", f"own{u}") for u in range(USERS)] + [("a", "x"), ("a", "y"), ("b", "y")]
COUNT_D += [("b", "z")]
"""The distinct count's D: a path a-x-y-b-z that the first round of peeling removes whole."""

CLOSING = [("c", "z"), ("c", "x")]
"""The distinct count's u: closes the path into a cycle that the peeling keeps."""

CYCLE = [("d", "p"), ("d", "q"), ("e", "q"), ("e", "r"), ("f", "r"), ("f", "p")]
"""A cycle the peeling keeps: with it in D, the connected components run on a core in both
runs (how many rounds they run, which the data sets, is Spark's own monitoring: with an empty
core on D they would run one round fewer, and the plans of that round would be D + u's only)."""


@pytest.fixture(scope="module")
def inputs(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Pairs D, D + u (never released), the same as incidences, and the distinct count's D
    and D + u, each in its own root."""
    base = tmp_path_factory.mktemp("neighbours")
    made = {}
    for name, rows in {"D": _pairs(), "Du": _pairs() + NEVER}.items():
        root = base / ROOTS[name]
        _write(spark, rows, root / "input" / "pairs")
        graph = _pairs() + (JOINS if name == "Du" else [])
        incidences = spark.createDataFrame(_records(graph), "record_id string, user_id string")
        incidences.coalesce(1).write.parquet(str(root / "input" / "incidences"))
        u = CLOSING if name == "Du" else []
        _write(spark, COUNT_D + u, root / "input" / "count")
        _write(spark, COUNT_D + CYCLE + u, root / "input" / "count-core")
        made[name] = root
    return made


def _run(
    spark: SparkSession,
    job: ModuleType,
    argv: list[str],
    root: Path,
    case: str,
    store: bool = False,
) -> Artefacts:
    out = root / case
    out.mkdir()
    argv = [a.replace("{out}", str(out)) for a in argv]
    db = out / "budget.db" if store else None
    if db is not None:
        with BudgetStore.open(f"sqlite:///{db}") as s:
            s.set_cap("neighbours", 100.0, 1e-3)
        argv += ["--budget-store", f"sqlite:///{db}", "--dataset-id", "neighbours"]
        argv += ["--allow-test-seed-with-budget-store"]
    return run_job_in_process(spark, job.SPEC, argv, root, out=out, store=db)


def run_pair(spark, inputs, job, argv, case, store=False) -> tuple[Artefacts, Artefacts]:
    return tuple(  # type: ignore[return-value]
        _run(spark, job, argv, inputs[name], case, store) for name in ("D", "Du")
    )


def assert_same(d: Artefacts, du: Artefacts, files: bool = True) -> None:
    # the distinct count's released bound (public) is its stdout's answer: it may differ
    reports = [a.report or {} for a in (d, du)]
    bounds = {r["lower_bound_clamped"] for r in reports if "lower_bound_clamped" in r}
    for a in (d, du):
        _without_released_sizes(a, bounds)
    found = differences(d, du, files=files)
    assert not found, "\n\n".join(found)


def _user_state(root: Path, case: str) -> list[tuple]:
    import pyarrow.parquet as pq

    rows = pq.read_table(root / case / "records_user_state").to_pylist()
    return sorted(tuple(r.values()) for r in rows)


def _released_items(root: Path, case: str) -> set[str]:
    import pyarrow.parquet as pq

    return set(pq.read_table(root / case / "items").column("item").to_pylist())


PAIRS = ["--input", "{root}/input/pairs"]
INCIDENCES = ["--input", "{root}/input/incidences"]
ROUNDS = ["--finish", "continue"]  # bounding's rounds to exhaustion: as many as the graph needs
SELECTION = [*PAIRS, "--output", "{out}/items", *SEED]
SELECTION += ["--epsilon", "2", "--max-contributions", "4"]

COUNT = ["--input", "{root}/input/count", *SEED, "--epsilon", "1", "--max-contributions", "8"]
COUNT += ["--report", "{out}/count.report.json"]
CORE = [*COUNT, "--input", "{root}/input/count-core", "--method", "exact"]

CASES: dict[str, tuple[ModuleType, list[str]]] = {
    **{f"selection-{a}": (partition_selection, [*SELECTION, "--algorithm", a]) for a in ALGORITHMS},
    "selection-auto": (
        partition_selection,
        [*SELECTION[:-1], "auto", "--algorithm", "mad2r", "--tuning-candidates", "1,4,16"],
    ),
    "preview": (
        preview,
        [*PAIRS, *SEED, "--epsilon", "0.5", "--report", "{out}/preview.report.json"],
    ),
    "count-exact": (distinct_count, [*COUNT, "--method", "exact"]),
    "count-exact-components": (
        distinct_count,
        [*CORE, "--components", "dataframe", "--components-min-rows", "0"],
    ),
    "count-greedy": (distinct_count, [*COUNT, "--method", "greedy"]),
    "bounding": (
        contribution_bounding,
        [*INCIDENCES, "--output", "{out}/records", *SEED, "--max-contributions", "3", *ROUNDS],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_user_never_released_changes_no_artefact(spark, inputs, case) -> None:
    job, argv = CASES[case]
    store = case == "selection-basic"  # one case with a budget store
    d, du = run_pair(spark, inputs, job, argv, case, store)
    assert d.code == 0, (d.stderr, d.log[-5:])
    if job is partition_selection:  # the premise: the same rows are released
        released = _released_items(inputs["D"], case)
        assert released and released == _released_items(inputs["Du"], case)
        assert not any(i.startswith("own") for i in released)
    assert d.plans and d.log, "the comparison has nothing to compare"
    if job is contribution_bounding:  # u's own row of the user state is the one difference
        assert_same(d, du, files=False)
        users = "records_user_state/"
        assert {k: v for k, v in d.files.items() if not k.startswith(users)} == {
            k: v for k, v in du.files.items() if not k.startswith(users)
        }
        state_d, state_du = (_user_state(inputs[n], case) for n in ("D", "Du"))
        assert state_du == sorted([*state_d, ("unew", 3, 0, "EXHAUSTED")])
        return
    assert_same(d, du)


def test_a_table_output_changes_no_artefact(spark, inputs, tmp_path) -> None:
    """``--output-table``: the table's files (at its catalog location) are compared too."""
    import uuid

    made = []
    try:
        runs = []
        for name in ("D", "Du"):
            db = f"nb_{uuid.uuid4().hex[:8]}"
            made.append(db)
            spark.sql(f"CREATE DATABASE {db} LOCATION '{inputs[name] / 'db'}'")
            argv = ["--input", "{root}/input/pairs", "--output-table", f"{db}.items", *SEED]
            argv += ["--epsilon", "2", "--algorithm", "basic", "--max-contributions", "4"]
            runs.append(
                run_job_in_process(
                    spark, partition_selection.SPEC, argv, inputs[name], out=inputs[name] / "db"
                )
            )
        d, du = runs
        assert d.code == 0 and d.files, d.stderr
        # the database names differ by design (two catalogs entries): normalised away
        for a, db in zip(runs, made, strict=True):
            a.log = [line.replace(db, "<db>") for line in a.log]
            a.plans = [p.replace(db, "<db>") for p in a.plans]
            a.stdout = a.stdout.replace(db, "<db>")  # the answer names the table
        assert_same(d, du)
    finally:
        for db in made:
            spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")


@pytest.fixture(scope="module")
def released_inputs(spark, tmp_path_factory) -> dict[str, Path]:
    """D with an item ``border`` at the threshold, and D + u where u holds it."""
    base = tmp_path_factory.mktemp("released")
    made = {}
    for name, rows in {"D": RELEASED_D, "Du": RELEASED_D + RELEASED}.items():
        _write(spark, rows, base / ROOTS[name] / "input" / "pairs")
        made[name] = base / ROOTS[name]
    return made


def _without_released_sizes(a: Artefacts, sizes: set[int]) -> None:
    """The released sizes or values (public) in the log and stdout replaced by a placeholder."""
    import re

    def strip(text: str) -> str:
        for n in sizes:
            text = re.sub(rf"(?<![\d.]){n}(?![\d.])", "<released size>", text)
        return text

    a.log = [strip(line) for line in a.log]
    a.stdout = strip(a.stdout)


def test_a_user_whose_items_are_released_changes_only_those_rows(spark, released_inputs):
    argv = [*SELECTION, "--algorithm", "basic", "--max-contributions", "1", "--epsilon", "1"]
    d, du = run_pair(spark, released_inputs, partition_selection, argv, "basic")
    items_d = _released_items(released_inputs["D"], "basic")
    items_du = _released_items(released_inputs["Du"], "basic")
    assert items_du - items_d == {"border"}, "u changes nothing here: no power"
    assert items_d <= items_du
    sizes = {d.report["outputs"]["output_items"], du.report["outputs"]["output_items"]}
    for a in (d, du):
        _without_released_sizes(a, sizes)
    assert_same(d, du, files=False)
    # the files differ in their rows only: the same names, each sorted by item
    assert sorted(d.files) == sorted(du.files)
    assert sorted(items_du) == _file_order(released_inputs["Du"])


def _file_order(root: Path) -> list[str]:
    """The items in the order the released files hold them (part files by name)."""
    import pyarrow.parquet as pq

    parts = sorted((root / "basic" / "items").glob("part-*"))
    return [i for p in parts for i in pq.read_table(p).column("item").to_pylist()]
