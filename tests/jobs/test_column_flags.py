"""Column flags are checked against the input's schema before Spark starts (driver only).

The schema comes from metadata (a Parquet footer, a CSV header, a Delta log), never from a row
(:mod:`spark_dp.io.schema_peek`): a wrong ``--user-col`` is one line naming the columns present
and the flag to pass, exit 2, with ``--dry-run`` too. The messages start with the flag and path
(``--input shop.parquet``), which only the check before Spark writes (Spark's own check names
``input '<absolute path>'``), so these tests also show that no JVM was needed.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_dp.io.read import id_type_problem, missing_column
from spark_dp.io.schema_peek import MAX_FOOTERS, peek_schema
from spark_dp.jobs import contribution_bounding, distinct_count, partition_selection

SHOP = {"customer_id": ["c1", "c2"], "product": ["p1", "p2"]}


@pytest.fixture
def here(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _select(argv: list[str], capsys, *, dry_run: bool = True) -> tuple[int, str, str]:
    base = ["--output", "out", "--epsilon", "1", "--no-ledger"]
    code = partition_selection.main([*argv, *base, *(["--dry-run"] if dry_run else [])])
    out, err = capsys.readouterr()
    return code, out, err.strip()


def _parquet(path: Path, columns: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_wrong_column_flag_is_one_line_with_the_name_to_pass(here, capsys, dry_run):
    _parquet(here / "shop.parquet", SHOP)
    code, out, err = _select(["--input", "shop.parquet"], capsys, dry_run=dry_run)
    assert code == 2 and out == ""
    assert err == (
        "spark-dp partition-selection: error: --input shop.parquet has no column 'user_id' "
        "(columns: customer_id, product); did you mean `customer_id`? pass --user-col customer_id"
    )


def test_without_a_close_name_the_flag_is_named(here, capsys):
    _parquet(here / "shop.parquet", SHOP)
    code, _, err = _select(["--input", "shop.parquet", "--user-col", "customer_id"], capsys)
    assert code == 2
    assert err.endswith(
        "--input shop.parquet has no column 'item' (columns: customer_id, product); pass the "
        "right column name with --item-col NAME"
    )


def test_the_same_name_in_another_case_is_suggested(here, capsys):
    _parquet(here / "t.parquet", {"USER_ID": ["u"], "item": ["a"]})
    code, _, err = _select(["--input", "t.parquet"], capsys)
    assert code == 2 and err.endswith("did you mean `USER_ID`? pass --user-col USER_ID")


def test_a_correct_parquet_input_passes_the_dry_run(here, capsys):
    _parquet(here / "shop.parquet", SHOP)
    argv = ["--input", "shop.parquet", "--user-col", "customer_id", "--item-col", "product"]
    code, out, err = _select(argv, capsys)
    assert code == 0, err
    assert json.loads(out)["job"] == "partition_selection"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            pa.array([1.0, 2.0]),
            "column 'uid' (user_id) has floating-point type double; ids must be strings or "
            "integers (cast them upstream, e.g. to bigint or string)",
        ),
        (
            pa.array([True, False]),
            "column 'uid' (user_id) has unsupported type boolean; ids must be strings or "
            "integers (cast them upstream)",
        ),
    ],
)
def test_an_id_column_of_the_wrong_type_is_one_line(here, capsys, values, message):
    _parquet(here / "t.parquet", {"uid": values, "item": ["a", "b"]})
    code, _, err = _select(["--input", "t.parquet", "--user-col", "uid"], capsys)
    assert code == 2
    assert err == f"spark-dp partition-selection: error: --input t.parquet: {message}"


@pytest.mark.parametrize(
    ("arrow", "ok"),
    [
        (pa.int8(), True),
        (pa.int64(), True),
        (pa.uint64(), True),  # Spark reads it as decimal(20,0): integers
        (pa.decimal128(12, 0), True),
        (pa.decimal128(12, 2), False),
        (pa.float32(), False),
        (pa.date32(), False),
        (pa.binary(), False),
        (pa.list_(pa.string()), False),
    ],
)
def test_parquet_types_follow_the_id_rule_spark_applies(tmp_path, arrow, ok):
    pq.write_table(pa.table({"uid": pa.array([], type=arrow)}), tmp_path / "t.parquet")
    schema = peek_schema(str(tmp_path / "t.parquet"), None)
    assert schema is not None
    assert (id_type_problem("uid", "user_id", str(schema.types["uid"])) is None) is ok


def test_the_id_rule_in_spark_s_words():
    assert id_type_problem("u", "user_id", "decimal(10,0)") is None
    assert id_type_problem("u", "user_id", "string") is None
    assert "floating-point type decimal(10,2)" in str(
        id_type_problem("u", "user_id", "decimal(10,2)")
    )
    assert "unsupported type timestamp" in str(id_type_problem("u", "user_id", "timestamp"))
    line = missing_column("input 'x'", "weight", ["record_id", "weights"], None)
    assert line.endswith("did you mean `weights`? rename it to 'weight' upstream")


def test_a_directory_s_schema_is_merged_over_its_part_files(here, capsys):
    _parquet(here / "d" / "part-0.parquet", {"user_id": ["u"]})
    _parquet(here / "d" / "part-1.parquet", {"user_id": ["v"], "item": ["a"]})
    (here / "d" / "_SUCCESS").write_text("")
    (here / "d" / ".part-0.parquet.crc").write_text("not parquet")
    code, _, err = _select(["--input", "d"], capsys)
    assert code == 0, err
    schema = peek_schema(str(here / "d"), None)
    assert schema is not None and schema.complete and list(schema.types) == ["user_id", "item"]


def test_beyond_the_footers_read_a_name_not_found_is_left_to_spark(tmp_path):
    for i in range(MAX_FOOTERS + 1):
        pq.write_table(pa.table({"user_id": ["u"]}), tmp_path / f"part-{i:05d}.parquet")
    schema = peek_schema(str(tmp_path), None)
    assert schema is not None and not schema.complete


def test_partition_directories_are_columns(here, capsys):
    _parquet(here / "d" / "item=a" / "part-0.parquet", {"user_id": ["u"]})
    code, _, err = _select(["--input", "d"], capsys)
    assert code == 0, err
    code, _, err = _select(["--input", "d", "--item-col", "product"], capsys)
    assert code == 2 and "(columns: user_id, item); pass the right column" in err


def test_csv_columns_come_from_the_header_line(here, capsys):
    (here / "shop.csv").write_text("customer_id,product\nc1,p1\n")
    code, _, err = _select(["--input", "shop.csv", "--item-col", "product"], capsys)
    assert code == 2 and err.endswith("did you mean `customer_id`? pass --user-col customer_id")
    argv = ["--input", "shop.csv", "--item-col", "product", "--user-col", "customer_id"]
    assert _select(argv, capsys)[0] == 0  # every CSV column is a string: an id


def test_a_csv_directory_is_read_from_its_first_file(here, capsys):
    (here / "d").mkdir()
    with gzip.open(here / "d" / "part-0.csv.gz", "wt") as fh:
        fh.write("\ufeffperson,word\nu,a\n")  # a byte-order mark is not part of the name
    argv = ["--input", "d", "--input-format", "csv", "--user-col", "person"]
    code, _, err = _select(argv, capsys)
    assert code == 2 and err.endswith(
        "--input d has no column 'item' (columns: person, word); pass the right column name "
        "with --item-col NAME"
    )
    assert _select([*argv, "--item-col", "word"], capsys)[0] == 0


def _delta_commit(root: Path, version: int, fields: list[tuple[str, str]] | None) -> None:
    log = root / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    actions: list[dict] = [{"commitInfo": {"operation": "WRITE"}}]
    if fields is not None:
        schema = {
            "type": "struct",
            "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in fields],
        }
        actions.append({"metaData": {"id": "x", "schemaString": json.dumps(schema)}})
    lines = "\n".join(json.dumps(a) for a in actions)
    (log / f"{version:020d}.json").write_text(lines + "\n")


def test_a_delta_table_s_schema_is_the_version_read(here, capsys):
    _delta_commit(here / "t", 0, [("user_id", "long"), ("item", "string")])
    _delta_commit(here / "t", 1, None)
    _delta_commit(here / "t", 2, [("person", "long"), ("item", "string")])
    argv = ["--input", "t", "--input-format", "delta"]
    code, _, err = _select(argv, capsys)
    assert code == 2 and "has no column 'user_id' (columns: person, item)" in err
    assert _select([*argv, "--input-version", "1"], capsys)[0] == 0
    _delta_commit(here / "t", 3, [("person", "double"), ("item", "string")])
    code, _, err = _select([*argv, "--user-col", "person"], capsys)
    assert code == 2 and err.endswith(
        "column 'person' (user_id) has floating-point type double; "
        "ids must be strings or integers (cast them upstream, e.g. "
        "to bigint or string)"
    )


def test_a_delta_checkpoint_gives_the_schema_of_a_cleaned_up_log(here):
    root = here / "t"
    _delta_commit(root, 5, None)
    schema = {"type": "struct", "fields": [{"name": "uid", "type": "integer"}]}
    checkpoint = pa.table(
        {"metaData": [None, {"schemaString": json.dumps(schema)}], "add": [{"path": "p"}, None]}
    )
    pq.write_table(checkpoint, root / "_delta_log" / f"{4:020d}.checkpoint.parquet")
    peeked = peek_schema(str(root), "delta")
    assert peeked is not None and peeked.types == {"uid": "int"}
    (root / "_delta_log" / f"{4:020d}.checkpoint.parquet").unlink()
    assert peek_schema(str(root), "delta") is None  # commits 0-4 are gone: left to Spark


def test_a_remote_input_is_left_to_spark(here, capsys):
    code, out, err = _select(["--input", "hdfs://namenode:8020/data/shop"], capsys)
    assert code == 0, err
    assert json.loads(out)["paths"][0]["path"] == "hdfs://namenode:8020/data/shop"


def test_distinct_count_checks_its_columns_too(here, capsys):
    _parquet(here / "shop.parquet", SHOP)
    argv = ["--input", "shop.parquet", "--epsilon", "1", "--no-ledger", "--dry-run"]
    code = distinct_count.main([*argv, "--user-col", "customer_id", "--item-col", "products"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.endswith("did you mean `product`? pass --item-col product")


def _bound(argv: list[str], capsys) -> tuple[int, str]:
    base = ["--output", "out", "--max-contributions", "2", "--dry-run"]
    code = contribution_bounding.main([*argv, *base])
    return code, capsys.readouterr().err.strip()


def test_a_column_another_flag_names_is_not_suggested(here, capsys):
    _parquet(here / "pairs.parquet", {"user_id": ["u"], "item": ["a"]})
    code, err = _bound(["--input", "pairs.parquet"], capsys)
    assert code == 2 and err.endswith(
        "--input pairs.parquet has no column 'record_id' (columns: user_id, item); pass the "
        "right column name with --record-col NAME"
    )


def test_the_capacities_table_s_columns_and_type(here, capsys):
    _parquet(here / "g.parquet", {"record_id": ["r"], "user_id": ["u"]})
    _parquet(here / "caps.parquet", {"user_id": ["u"], "capacity": [1.5]})
    argv = ["--input", "g.parquet", "--capacities", "caps.parquet"]
    code, err = _bound(argv, capsys)
    assert code == 2 and err.endswith(
        "--capacities caps.parquet has no column 'cap' (columns: user_id, capacity); did you "
        "mean `capacity`? pass --capacity-col capacity"
    )
    code, err = _bound([*argv, "--capacity-col", "capacity"], capsys)
    assert code == 2 and err.endswith(
        "--capacities caps.parquet: capacities column 'capacity' has type double; capacities "
        "must be integers >= 0"
    )
    _parquet(here / "caps.parquet", {"user_id": ["u"], "capacity": [1]})
    assert _bound([*argv, "--capacity-col", "capacity"], capsys)[0] == 0


def test_the_record_weights_need_a_numeric_weight(here, capsys):
    _parquet(here / "g.parquet", {"record_id": ["r"], "user_id": ["u"]})
    _parquet(here / "w.parquet", {"record_id": ["r"], "weight": ["heavy"]})
    argv = ["--input", "g.parquet", "--record-weights", "w.parquet", "--order", "weighted-global"]
    code, err = _bound(argv, capsys)
    assert code == 2 and err.endswith(
        "--record-weights w.parquet: record weights column 'weight' must be numeric, got string"
    )
    _parquet(here / "w.parquet", {"record_id": ["r"], "weight": [0.5]})
    code, err = _bound(argv, capsys)
    assert code == 0, err
