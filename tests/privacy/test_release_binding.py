"""One key, one release (issue 34): a release id covers every argument that can change the
output and the rows read, and the key is bound to it, in every job and every library entry point.

* The parser, enumerated: every flag of every job that is not on the allow-list
  (``NOT_IN_RELEASE`` in ``spark_dp/jobs/request.py``) changes the release id; every
  allow-listed flag exists and says why it may be left out; and, run for real, the
  allow-listed flags leave the release unchanged (same key: identical items, identical id).
* The library entry points bind an unbound key to the digest of what they read, and refuse a
  key-file or seeded key without one; a key object binds once, so one key cannot serve two
  library releases (issue 43: an entropy key, bound without a digest, gave D and D minus one
  user the same noise), and one key file read for two neighbours draws independent noise.

The jobs with a real store are in tests/privacy/test_one_key_one_release.py; key files, file
modes and what Spark shows in tests/privacy/test_key_and_confidential_files.py.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from spark_dp.io import ContentDigest
from spark_dp.jobs import (
    contribution_bounding,
    distinct_count,
    generate,
    partition_selection,
    preview,
)
from spark_dp.jobs.cli_args import build_parser
from spark_dp.jobs.request import NOT_IN_RELEASE, release_arguments
from spark_dp.randomness import KeyReusedError, Randomness
from spark_dp.release_ids import release_id
from tests.support.job_settings import request_of

ROOT = Path(__file__).resolve().parents[2]
JOBS = {
    "partition_selection": (
        partition_selection,
        ["--input", "in", "--output", "o", "--epsilon", "1"],
    ),
    "distinct_count": (distinct_count, ["--input", "in", "--epsilon", "1"]),
    "contribution_bounding": (
        contribution_bounding,
        ["--input", "in", "--output", "o", "--max-contributions", "2"],
    ),
    "generate": (generate, ["--output", "o"]),
    "preview": (preview, ["--input", "in", "--epsilon", "0.2"]),
}
KEY = "0" * 32
DIGEST = ContentDigest("input", KEY, "d" * 32)


# --------------------------------------------------------------------------- the parser


def _release(job: str, argv: list[str]) -> str | None:
    """The release id of ``argv`` on fixed data and key, None if the arguments are invalid."""
    module, _ = JOBS[job]
    parser = build_parser(module.SPEC)
    try:
        args = parser.parse_args(argv)
    except SystemExit:
        return None
    try:
        request = request_of(module.SPEC, parser, args)
    except ValueError:  # a value outside its domain (SparkDPUserError)
        return None
    return release_id(
        job=job, algorithm=None, arguments=release_arguments(request), digests=[DIGEST],
        key_fingerprint=KEY,
    )  # fmt: skip


def _flags(job: str) -> list[argparse.Action]:

    parser = build_parser(JOBS[job][0].SPEC)
    return [
        a
        for a in parser._actions
        if a.option_strings and a.help != argparse.SUPPRESS and not getattr(a, "new_flag", None)
    ]


def _effective(job: str, dest: str) -> Any:
    module, base = JOBS[job]
    parser = build_parser(module.SPEC)
    request = request_of(module.SPEC, parser, parser.parse_args(base))
    return release_arguments(request).get(dest, getattr(request.params, dest, None))


def _candidates(action: argparse.Action, value: Any) -> list[list[str]]:
    """Command-line fragments that give ``action`` another value than ``value``."""
    flag = action.option_strings[0]
    if isinstance(action, argparse.BooleanOptionalAction):
        return [[f"--no-{flag[2:]}" if value else flag]]
    if action.nargs == 0:  # store_true
        return [[flag]]
    if action.choices:
        return [[flag, str(c)] for c in action.choices if c != value]
    if action.type in (int, float):
        base = value if isinstance(value, (int, float)) else 1
        options = [base * 2, base + 1, base / 2, base - 1, 1, 2, 0.5, 3]
        cast = action.type
        return [[flag, str(cast(v))] for v in options if cast(v) != value and cast(v) == v]
    if isinstance(value, (tuple, list)) and value and isinstance(value[0], str):
        return [[flag, value[0]]]  # a list of names (the preview's --algorithms): one of them
    text = "" if value is None else str(value)
    if "," in text or flag == "--split":
        return [[flag, s] for s in ("0.2,0.8", "0.5,0.5", "1") if s != text]
    return [[flag, s] for s in (f"{text}2" if text else "x", "other") if s != text]


@pytest.mark.parametrize("job", list(JOBS))
def test_every_flag_off_the_allow_list_changes_the_release_id(job):
    _, base = JOBS[job]
    reference = _release(job, base)
    assert reference is not None
    checked = []
    for action in _flags(job):
        if action.dest in NOT_IN_RELEASE and not (action.dest == "seed" and job == "generate"):
            continue
        value = _effective(job, action.dest)
        ids = [_release(job, [*base, *extra]) for extra in _candidates(action, value)]
        valid = [i for i in ids if i is not None]
        assert valid, f"{job} {action.option_strings[0]}: no valid other value to try"
        assert reference not in valid, f"{job} {action.option_strings[0]} is not in the id"
        checked.append(action.dest)
    assert len(checked) >= 4


def test_the_allow_list_names_real_flags_and_says_why():
    dests = {a.dest for job in JOBS for a in build_parser(JOBS[job][0].SPEC)._actions}
    assert set(NOT_IN_RELEASE) <= dests, set(NOT_IN_RELEASE) - dests
    assert all(len(reason) > 10 for reason in NOT_IN_RELEASE.values())
    for dest in ("input_format", "user_col", "item_col", "record_col", "strict_input",
                 "capacity_col", "components", "epsilon"):  # fmt: skip
        assert dest not in NOT_IN_RELEASE


def test_allow_listed_flags_leave_the_arguments_alone():
    _, base = JOBS["partition_selection"]
    extra = [
        "--log-level", "DEBUG", "--spark-conf", "spark.sql.shuffle.partitions=5",
        "--master", "local[1]", "--overwrite", "--report", "r.json", "--dataset-id", "d",
        "--budget-store", "sqlite:///b.db", "--private-spark-ui", "--noise-key-file", "k",
        "--allow-large-delta",
    ]  # fmt: skip
    assert _release("partition_selection", [*base, *extra]) == _release("partition_selection", base)


def test_unsafe_debug_logs_enter_the_release_id_and_are_refused_with_a_store(tmp_path, capsys):
    """``--unsafe-debug-logs`` is in the release id (its confirmation alone changes nothing),
    and refused with a budget store, given as a flag or by the config file: exit 2, one line,
    before anything is read or created."""
    _, base = JOBS["partition_selection"]
    unsafe = ["--unsafe-debug-logs", "--allow-unsafe-debug"]
    plain = _release("partition_selection", base)
    assert _release("partition_selection", [*base, *unsafe]) not in (None, plain)
    assert _release("partition_selection", [*base, "--allow-unsafe-debug"]) == plain
    store = tmp_path / "b.db"
    config = tmp_path / "c.yaml"
    config.write_text(f"budget_store: sqlite:///{store}\n")
    for job in ("partition_selection", "distinct_count", "preview"):
        module, argv = JOBS[job]
        argv = [a if a != "in" else str(tmp_path / "absent") for a in argv]
        for where in (["--budget-store", f"sqlite:///{store}"], ["--config", str(config)]):
            assert module.main([*argv, *unsafe, *where]) == 2
            errors = [ln for ln in capsys.readouterr().err.splitlines() if "error:" in ln]
            assert len(errors) == 1 and "--unsafe-debug-logs" in errors[0], errors
            assert "refused with a budget store" in errors[0] and not store.exists()


# --------------------------------------------------------------------------- the library


@pytest.fixture(scope="module")
def neighbours(spark):
    """Pairs D and D minus one user (as DataFrames)."""
    rows = [(f"u{u}", f"w{(u * 7 + k) % 40}") for u in range(200) for k in range(3)]
    d = spark.createDataFrame(rows, "user_id string, item string")
    return d, d.where("user_id != 'u0'")


def _spy(monkeypatch, module) -> list[Randomness]:
    from spark_dp import release_ids as ids

    bound: list[Randomness] = []

    def spy(*args: Any, **kwargs: Any) -> Randomness:
        out = ids.bind_release(*args, **kwargs)
        bound.append(out)
        return out

    monkeypatch.setattr(module, "bind_release", spy)
    return bound


def test_select_partitions_binds_to_the_rows(spark, neighbours, monkeypatch):
    from spark_dp.partition_selection import PartitionSelectionParams, select_partitions
    from spark_dp.partition_selection import select as module

    bound = _spy(monkeypatch, module)
    params = PartitionSelectionParams(algorithm="basic", epsilon=1.0, delta=1e-5)
    for pairs in (*neighbours, neighbours[0]):
        with select_partitions(pairs, params, Randomness.create(7)):
            pass
    a, b, again = (r.release for r in bound)
    assert a != b and a == again and all(r.bound for r in bound)
    with pytest.raises(ValueError, match="test-seed key must be bound"):
        select_partitions(neighbours[0], params, Randomness.create(7), validate=False)


def test_distinct_count_binds_to_the_rows(spark, neighbours, monkeypatch):
    from spark_dp.distinct_count import DistinctCountParams
    from spark_dp.distinct_count import api as module

    bound = _spy(monkeypatch, module)
    params = DistinctCountParams(epsilon=1.0, max_contributions=4, method="greedy")
    for pairs in (*neighbours, neighbours[0]):
        module.distinct_count(pairs, params, Randomness.create(7))
    a, b, again = (r.release for r in bound)
    assert a != b and a == again
    with pytest.raises(ValueError, match="test-seed key must be bound"):
        module.distinct_count(neighbours[0], params, Randomness.create(7), validate=False)


def test_bound_contributions_binds_to_every_table(spark, monkeypatch, tmp_path):
    from spark_dp.contribution_bounding import api as module
    from spark_dp.contribution_bounding.params import BoundingParams

    bound = _spy(monkeypatch, module)
    rows = [(f"r{i}", f"u{(i * 3 + k) % 17}") for i in range(60) for k in range(2)]
    inc = spark.createDataFrame(rows, "record_id string, user_id string")
    caps = spark.createDataFrame([("u1", 1)], "user_id string, cap long")
    params = BoundingParams(max_contributions=2)
    for graph in (inc, inc.where("user_id != 'u0'"), inc):
        with module.bound_contributions(graph, params, randomness=Randomness.create(7)):
            pass
    a, b, again = (r.release for r in bound)
    assert a != b and a == again
    with pytest.raises(ValueError, match="capacities has no digest"):
        module.bound_contributions(inc, params, capacities=caps, randomness=Randomness.create(7))
    # the capacities as the library reads them, digested with the same key: bound to them too
    from spark_dp.io import ReadGate, load_capacities

    path = str(tmp_path / "caps")
    caps.write.parquet(path)
    key = Randomness.create(7)
    table, digest = load_capacities(spark, path, gate=ReadGate.keyed_by(key))
    with module.bound_contributions(inc, params, capacities=table, randomness=key, digest=[digest]):
        pass
    assert bound[-1].release not in (a, b)


def test_a_released_curve_binds_to_the_curve():
    from spark_dp.distinct_count import dp_distinct_count

    same = [dp_distinct_count([10, 20, 30], epsilon=0.01, randomness=Randomness.create(5))
            for _ in range(2)]  # fmt: skip
    other = dp_distinct_count([10, 20, 31], epsilon=0.01, randomness=Randomness.create(5))
    assert same[0] == same[1]
    assert other.lower_bound - same[0].lower_bound not in (0, 1) or other.ell != same[0].ell


# --------------------------------------------------------------------------- a key binds once


def test_a_job_binds_its_key_exactly_once(spark, neighbours, tmp_path, monkeypatch):
    """The job runner binds once per run, when its last table is digested: one claim of the
    key for a job reading one table, and one for contribution bounding reading two."""
    from spark_dp.randomness.keys import ReleaseKey

    claims: list[str] = []
    claim = ReleaseKey.claim

    def spy(key: ReleaseKey, release_id: str) -> None:
        claims.append(release_id)
        claim(key, release_id)

    monkeypatch.setattr(ReleaseKey, "claim", spy)
    pairs, graph = str(tmp_path / "pairs"), str(tmp_path / "graph")
    neighbours[0].write.parquet(pairs)
    neighbours[0].selectExpr("item AS record_id", "user_id").write.parquet(graph)
    caps = str(tmp_path / "caps")
    spark.createDataFrame([("u1", 1)], "user_id string, cap int").write.parquet(caps)
    quiet = ["--log-level", "ERROR"]
    assert partition_selection.main(["--input", pairs, "--output", str(tmp_path / "o"),
                                     "--epsilon", "1", *quiet]) == 0  # fmt: skip
    assert len(claims) == 1
    assert contribution_bounding.main(["--input", graph, "--output", str(tmp_path / "b"),
                                       "--max-contributions", "2", "--capacities", caps,
                                       *quiet]) == 0  # fmt: skip
    assert len(claims) == 2 and claims[0] != claims[1]


def _library_call(entry: str, frame, key: Randomness, validate: bool) -> None:
    """One release of library entry point ``entry`` on ``frame`` (user_id, item) with ``key``."""
    from spark_dp.contribution_bounding import BoundingParams, bound_contributions
    from spark_dp.distinct_count import DistinctCountParams, distinct_count
    from spark_dp.partition_selection import (
        PartitionSelectionParams,
        PreviewParams,
        preview_partitions,
        select_partitions,
    )

    if entry == "select_partitions":
        params = PartitionSelectionParams(algorithm="basic", epsilon=1.0, delta=1e-5)
        select_partitions(frame, params, key, validate=validate).release()
    elif entry == "preview_partitions":
        preview_partitions(frame, PreviewParams(epsilon=0.3), key, validate=validate)
    elif entry == "distinct_count":
        params = DistinctCountParams(epsilon=1.0, max_contributions=4, method="greedy")
        distinct_count(frame, params, key, validate=validate)
    else:  # the items as records: (record_id, user_id)
        graph = frame.selectExpr("item AS record_id", "user_id")
        params = BoundingParams(max_contributions=2)
        bound_contributions(graph, params, randomness=key, validate=validate).release()


LIBRARY = ["select_partitions", "preview_partitions", "distinct_count", "bound_contributions"]


@pytest.mark.parametrize("entry", LIBRARY)
def test_one_key_cannot_serve_two_library_releases(spark, neighbours, entry):
    """The attack of issue 43: one ``Randomness.create()`` for D and for D minus one user, with
    ``validate=False`` (an entropy key binds without a digest, so both releases had one id and
    the same noise). The second call is refused; so is a seeded key's, validated."""
    d, d_minus_u = neighbours
    key = Randomness.create()
    _library_call(entry, d, key, validate=False)
    with pytest.raises(KeyReusedError, match="create a fresh key per release"):
        _library_call(entry, d_minus_u, key, validate=False)
    seeded = Randomness.create(7)
    _library_call(entry, d, seeded, validate=True)
    with pytest.raises(KeyReusedError):
        _library_call(entry, d_minus_u, seeded, validate=True)


@pytest.fixture(scope="module")
def borderline(spark):
    """D: 150 items held by 18 users each (Basic at ε = 1, δ = 1e-5, Δ0 = 1 has ρ ≈ 18.16,
    σ ≈ 3.88: each released with probability ≈ 0.48), and D + u, u holding one item of its own
    that is never released (weight 1)."""
    rows = [(f"u{i}-{k}", f"w{i}") for i in range(150) for k in range(18)]
    d = spark.createDataFrame(rows, "user_id string, item string")
    return d, d.union(spark.createDataFrame([("u", "u's own")], "user_id string, item string"))


def _items(pairs, key: Randomness) -> set[str]:
    from spark_dp.partition_selection import PartitionSelectionParams, select_partitions

    params = PartitionSelectionParams(
        algorithm="basic", epsilon=1.0, delta=1e-5, max_contributions=1
    )
    with select_partitions(pairs, params, key) as selection:
        return {r["item"] for r in selection.items.collect()}


@pytest.mark.parametrize("form", ["rows", "files"])
def test_one_key_file_on_neighbours_draws_independent_noise(
    spark, borderline, tmp_path, monkeypatch, form
):
    """The same key, read twice (a key file given to two runs), on D and on D + u where u's item
    is never released: each read binds to the digest of its rows, so the two releases draw
    independent noise: each borderline item is in one release only with probability
    2p(1 − p) ≈ 0.5, so about 75 differ (at most 30 with probability 3·10⁻¹⁴). With the noise
    shared (both calls bound by hand to one id, what an entropy key without a digest did) the
    releases are identical: the only possible difference would be u's own item. ``files``: D
    and D + u written as Parquet and read back, bound to their files (never to their rows), and
    the same files read again are the same release."""
    import spark_dp.io.read
    from spark_dp.randomness.key_file import write_key_file

    d, d_plus_u = borderline
    path = str(tmp_path / "key")
    write_key_file(path)
    if form == "files":
        for name, df in (("d", d), ("d_plus_u", d_plus_u)):
            df.write.parquet(str(tmp_path / name))
        d, d_plus_u = (spark.read.parquet(str(tmp_path / n)) for n in ("d", "d_plus_u"))
        monkeypatch.setattr(spark_dp.io.read, "digested", None)  # the rows' digest: a TypeError
    a = _items(d, Randomness.from_key_file(path))
    b = _items(d_plus_u, Randomness.from_key_file(path))
    if form == "files":
        assert _items(d, Randomness.from_key_file(path)) == a  # the same files: a retry
    assert "u's own" not in a | b
    assert 20 < len(a) < 130 and 20 < len(b) < 130  # borderline: the noise decides
    assert len(a ^ b) > 30, len(a ^ b)
    shared = Randomness.from_key_file(path).bind("one id for both")  # the bug, on purpose
    assert _items(d, shared) == _items(d_plus_u, shared)
