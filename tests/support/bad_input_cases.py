"""The bad-input cases of :mod:`tests.jobs.test_bad_inputs`: command lines, the changes made to
their workspace, and the words each one-line message must contain."""

from __future__ import annotations

import os

RO = "/proc/spark_dp" if os.geteuid() == 0 else "ro/sub"  # root writes anywhere but /proc


def ps(*extra: str, inp: str = "words", out: str = "o", eps: str | None = "1") -> list[str]:
    """A partition-selection command line."""
    base = ["partition-selection", "--input", inp, "--output", out]
    return [*base, *(["--epsilon", eps] if eps else []), *extra]


def dc(*extra: str, inp: str = "words", eps: str | None = "1") -> list[str]:
    """A distinct-count command line."""
    return ["distinct-count", "--input", inp, *(["--epsilon", eps] if eps else []), *extra]


def cb(*extra: str, inp: str = "graph", out: str = "o") -> list[str]:
    """A contribution-bounding command line."""
    return ["contribution-bounding", "--input", inp, "--output", out, *extra]


def gen(*extra: str, out: str = "g") -> list[str]:
    """A generate command line."""
    return ["generate", "--output", out, *extra]


# (id, argv, words the message must contain)
CASES: list[tuple[str, list[str], list[str]]] = [
    # --- partition selection: paths (issue 17: the input destroyed with exit 0, and worse)
    ("ps-report-is-input", ps("--report", "data.parquet", inp="data.parquet"),
     ["--report data.parquet", "same path as --input data.parquet"]),
    ("ps-output-is-input-overwrite", ps("--overwrite", out="words"),
     ["--output words", "same path as --input words"]),
    ("ps-output-is-input", ps(out="words"), ["--output words", "--input words"]),
    ("ps-output-contains-input", ps("--overwrite", out="."), ["--output .", "contains --input"]),
    ("ps-report-inside-input", ps("--report", "words/r.json"), ["--report", "lies inside"]),
    ("ps-report-is-output", ps("--report", "o"), ["--report o", "--output o"]),
    ("ps-report-inside-output", ps("--report", "o/r.json"), ["--report o/r.json", "--output"]),
    ("ps-output-empty", ps(out=""), ["--output", "empty"]),
    ("ps-report-empty", ps("--report", ""), ["--report", "empty"]),
    ("ps-output-under-file", ps(out="afile/o"), ["--output afile/o", "not a directory"]),
    ("ps-report-under-file", ps("--report", "afile/r.json"), ["--report afile/r.json"]),
    ("ps-output-unwritable", ps(out=f"{RO}/o"), ["--output", "not writable"]),
    ("ps-output-exists", ps(out="out_exists"), ["--output out_exists", "--overwrite"]),
    ("ps-default-report-exists", ps(out="stale"), ["stale.report.json", "already exists"]),
    ("ps-report-is-dir", ps("--report", "report_dir", "--overwrite"), ["--report", "directory"]),
    ("ps-store-is-input", ps("--budget-store", "sqlite:///words"),
     ["--budget-store words", "--input"]),
    ("ps-store-is-dir", ps("--budget-store", "sqlite:///report_dir"),
     ["--budget-store", "directory"]),
    ("ps-store-empty", ps("--budget-store", ""), ["--budget-store", "empty"]),
    ("ps-store-uri", ps("--budget-store", "s3a://bucket/budget.db"), ["--budget-store"]),
    ("ps-store-bare-path", ps("--budget-store", "budget.db"), ["--budget-store"]),
    ("ps-ledger-replaced", ps("--ledger", "l.jsonl"), ["--ledger", "--budget-store"]),
    ("ps-key-is-output", ps("--noise-key-file", "key32", "--overwrite", out="key32"),
     ["--output key32", "--noise-key-file key32"]),
    ("ps-config-is-report", ps("--config", "good.yaml", "--report", "good.yaml", "--overwrite"),
     ["--report good.yaml", "--config"]),
    # --- partition selection: the input itself
    ("ps-input-missing", ps(inp="nope"), ["--input nope", "does not exist"]),
    ("ps-input-json", ps(inp="bad.json"), ["--input bad.json", "JSON"]),
    ("ps-input-csv-named-parquet", ps(inp="fake.parquet"),
     ["--input fake.parquet", "--input-format csv"]),
    ("ps-input-truncated", ps(inp="trunc.parquet"), ["--input trunc.parquet", "complete"]),
    ("ps-input-empty-dir", ps(inp="empty_dir"), ["--input empty_dir", "without data files"]),
    ("ps-input-text", ps(inp="notes.txt"), ["--input notes.txt", "not a Parquet file"]),
    ("ps-input-dir-with-junk", ps(inp="junk_dir"), ["junk_dir", "not a Parquet file"]),
    ("ps-input-format-bad", ps("--input-format", "xml"), ["--input-format"]),
    # --- partition selection: values
    ("ps-epsilon-missing", ps(eps=None), ["--epsilon is required"]),
    ("ps-epsilon-zero", ps(eps="0"), ["epsilon"]),
    ("ps-epsilon-nan", ps(eps="nan"), ["epsilon"]),
    ("ps-epsilon-1e9", ps(eps="1e9"), ["epsilon", "at most 100"]),
    ("ps-epsilon-1e5-geometric", ps("--algorithm", "truncated-geometric", eps="1e5"),
     ["epsilon", "at most 100"]),
    ("ps-epsilon-50-sampler", ps(eps="50"), ["delta", "sampler"]),
    ("ps-epsilon-text", ps(eps="one"), ["--epsilon"]),
    ("ps-delta-huge", ps("--delta", "0.999999"), ["delta", "at most 0.5"]),
    ("ps-delta-zero", ps("--delta", "0"), ["delta"]),
    ("ps-delta-large", ps("--delta", "0.01"), ["--delta 0.01", "fails outright",
                                               "--allow-large-delta"]),
    ("ps-delta-large-config", ps("--config", "large_delta.yaml"),
     ["delta 0.002 (config)", "allow_large_delta: true"]),
    ("ps-allow-large-delta-not-bool", ps("--config", "allow_maybe.yaml"),
     ["allow_large_delta", "true or false"]),
    ("dc-allow-large-delta", dc("--allow-large-delta"), ["--allow-large-delta"]),
    ("ps-bound-1e12", ps("--max-contributions", "1000000000000"), ["max_contributions"]),
    ("ps-bound-zero", ps("--max-contributions", "0"), ["max_contributions"]),
    ("ps-bound-old-name", ps("--max-items-per-user", "0"), ["max_contributions"]),
    ("ps-bound-float", ps("--max-contributions", "1e3"), ["--max-contributions"]),
    ("ps-algorithm-bad", ps("--algorithm", "nope"), ["--algorithm"]),
    ("ps-split-over-1", ps("--split", "0.5,0.6"), ["split"]),
    ("ps-split-three-mad2r", ps("--split", "0.1,0.2,0.7"), ["mad2r"]),
    ("ps-truncation-beta", ps("--truncation-beta", "-1"), ["beta"]),
    ("ps-b-min", ps("--b-min", "0.2"), ["b_min"]),
    ("ps-record-col", ps("--record-col", "r"), ["--record-col"]),
    ("ps-unknown-flag", ps("--frobnicate"), ["--frobnicate"]),
    ("ps-log-level", ps("--log-level", "LOUD"), ["--log-level"]),
    ("ps-unsafe-logs", ps("--unsafe-debug-logs"), ["--unsafe-debug-logs", "--allow-unsafe"]),
    ("ps-key-not-a-key-file", ps("--noise-key-file", "short.key"),
     ["--noise-key-file", "not a spark-dp key file", "spark-dp keygen --out key"]),
    ("ps-key-missing", ps("--noise-key-file", "nokey"), ["--noise-key-file nokey"]),
    ("ps-key-and-seed", ps("--noise-key-file", "key32", "--seed", "1"), ["--seed"]),
    ("ps-config-unparsable", ps("--config", "bad.yaml"), ["bad.yaml", "parsed"]),
    ("ps-config-missing", ps("--config", "nope.yaml"), ["nope.yaml"]),
    ("ps-config-unknown-key", ps("--config", "unknown.yaml"), ["epsilom", "'epsilon'"]),
    ("ps-config-list", ps("--config", "list.yaml"), ["list.yaml", "mapping"]),
    ("ps-config-spark-list", ps("--config", "spark_list.yaml"), ["spark"]),
    ("ps-spark-conf", ps("--spark-conf", "novalue"), ["--spark-conf"]),
    ("ps-dry-run-still-checks", ps("--report", "data.parquet", "--dry-run", inp="data.parquet"),
     ["--report data.parquet"]),
    # --- distinct count
    ("dc-epsilon-missing", dc(eps=None), ["--epsilon is required"]),
    ("dc-epsilon-1e9", dc(eps="1e9"), ["epsilon", "at most 100"]),
    ("dc-bound-1e12", dc("--max-contributions", "1000000000000"), ["max_contributions"]),
    ("dc-bound-old-name", dc("--max-contribution", "0"), ["max_contributions"]),
    ("dc-failure-probability", dc("--failure-probability", "0.7"), ["beta"]),
    ("dc-method", dc("--method", "nope"), ["--method"]),
    ("dc-output-flag", dc("--output", "o"), ["--output"]),
    ("dc-delta-flag", dc("--delta", "1e-5"), ["--delta"]),
    ("dc-debug-unconfirmed", dc("--debug-report", "d.json"), ["--debug-report", "--allow"]),
    ("dc-debug-with-store", dc("--debug-report", "d.json", "--allow-unsafe-debug",
                               "--budget-store", "sqlite:///b.db"),
     ["--debug-report", "--budget-store"]),
    ("dc-debug-inside-input", dc("--debug-report", "words/d.json", "--allow-unsafe-debug"),
     ["--debug-report", "--input"]),
    ("dc-debug-from-config", dc("--config", "debug.yaml", "--allow-unsafe-debug"),
     ["debug_report"]),
    ("dc-report-is-input", dc("--report", "data.parquet", inp="data.parquet"),
     ["--report data.parquet"]),
    ("dc-report-exists", dc("--report", "afile"), ["--report afile", "--overwrite"]),
    # --- contribution bounding
    ("cb-no-bound", cb(), ["--max-contributions"]),
    ("cb-bound-negative", cb("--max-contributions", "-1"), ["max_contributions"]),
    ("cb-bound-huge", cb("--max-contributions", "10000000000"), ["max_contributions", "at most"]),
    ("cb-bound-old-name", cb("--capacity", "-1"), ["max_contributions"]),
    ("cb-output-is-input", cb("--max-contributions", "2", "--overwrite", out="graph"),
     ["--output graph", "--input graph"]),
    ("cb-capacities-missing", cb("--capacities", "nocaps"), ["--capacities nocaps"]),
    ("cb-capacities-is-output", cb("--capacities", "caps", "--overwrite", out="caps"),
     ["--output caps", "--capacities caps"]),
    ("cb-work-dir-is-input", cb("--max-contributions", "2", "--work-dir", "graph"),
     ["--work-dir graph", "--input graph"]),
    ("cb-work-dir-is-file", cb("--max-contributions", "2", "--work-dir", "afile"),
     ["--work-dir afile", "file"]),
    ("cb-user-state-is-output", cb("--max-contributions", "2", "--user-state", "o"),
     ["--user-state o", "--output o"]),
    ("cb-weights-json", cb("--max-contributions", "2", "--order", "weighted-global",
                           "--record-weights", "bad.json"), ["--record-weights bad.json"]),
    ("cb-item-col", cb("--max-contributions", "2", "--item-col", "x"), ["--item-col"]),
    ("cb-budget-store", cb("--max-contributions", "2", "--budget-store", "sqlite:///b.db"),
     ["--budget-store"]),
    ("cb-order", cb("--max-contributions", "2", "--order", "nope"), ["--order"]),
    # --- generate
    ("gen-output-empty", gen(out=""), ["--output", "empty"]),
    ("gen-output-under-file", gen(out="afile/g"), ["--output afile/g"]),
    ("gen-output-exists", gen(out="out_exists"), ["--output out_exists", "--overwrite"]),
    ("gen-users-zero", gen("--users", "0"), ["users"]),
    ("gen-kind", gen("--kind", "nope"), ["--kind"]),
    ("gen-input-flag", gen("--input", "words"), ["--input"]),
    ("gen-key-flag", gen("--noise-key-file", "key32"), ["--noise-key-file"]),
    ("gen-unsafe-flag", gen("--unsafe-debug-logs"), ["--unsafe-debug-logs"]),
    # --- the spark-dp command and its tools
    ("cli-no-command", [], ["command"]),
    ("cli-unknown-command", ["frobnicate"], ["frobnicate"]),
    ("calibrate-epsilon-missing", ["calibrate"], ["--epsilon"]),
    ("calibrate-epsilon-1e9", ["calibrate", "--epsilon", "1e9"], ["epsilon", "at most 100"]),
    ("calibrate-geometric-1e5",
     ["calibrate", "--epsilon", "1e5", "--algorithm", "truncated-geometric"], ["epsilon"]),
    ("calibrate-bound-1e12",
     ["calibrate", "--epsilon", "1", "--max-contributions", "1000000000000"],
     ["max_contributions"]),
    ("calibrate-delta", ["calibrate", "--epsilon", "1", "--delta", "0.999999"], ["delta"]),
    ("calibrate-unknown-flag", ["calibrate", "--epsilon", "1", "--record-col", "x"],
     ["--record-col"]),
    # --- issue 39: special files, layouts, work directories, names given twice, settings
    ("ps-input-fifo", ps(inp="pipe"), ["--input pipe", "a named pipe"]),
    ("ps-input-part-fifo", ps(inp="pipedir"), ["pipedir/part-1.parquet", "a named pipe"]),
    ("ps-report-device-overwrite", ps("--report", "dev", "--overwrite"),
     ["--report dev", "a character device"]),
    ("cb-output-socket-overwrite", cb("--max-contributions", "2", "--overwrite", out="sock"),
     ["--output sock", "a socket"]),
    ("dc-config-fifo", dc("--config", "pipe"), ["--config pipe", "a named pipe"]),
    ("dc-key-fifo", dc("--noise-key-file", "pipe"), ["--noise-key-file pipe", "a named pipe"]),
    ("ps-store-fifo", ps("--budget-store", "sqlite:///pipe"), ["--budget-store pipe"]),
    ("ps-layout-part-files-beside-k", ps(inp="layout_k"), ["--input layout_k", "k=1/"]),
    ("dc-layout-nested", dc(inp="layout_nested"), ["--input layout_nested", "a/"]),
    ("cb-capacities-layout", cb("--max-contributions", "2", "--capacities", "layout_k"),
     ["--capacities layout_k", "k=1/"]),
    ("ps-columns-case", ps(inp="cols_case"), ["'user_id' and 'USER_ID'", "differ only in case"]),
    ("cb-work-dir-user-folder", cb("--max-contributions", "2", "--work-dir", "userdir"),
     ["--work-dir userdir", "not a spark_dp work directory"]),
    ("cb-work-dir-user-folder-overwrite",
     cb("--max-contributions", "2", "--work-dir", "userdir", "--overwrite"),
     ["--work-dir userdir", "never adopts or deletes"]),
    ("cb-default-work-dir-user-folder", cb("--max-contributions", "2", out="mine"),
     ["mine_work", "not a spark_dp work directory"]),
    ("ps-bound-alias-and-name", ps("--max-contributions", "5", "--max-items-per-user", "6"),
     ["--max-contributions 5", "--max-items-per-user 6", "different values"]),
    ("dc-bound-alias-and-name-config", dc("--config", "twice.yaml"),
     ["sets max_contributions twice", "'max_contribution': 5", "'max_contributions': 6"]),
    ("ps-delta-subnormal", ps("--delta", "5e-324"), ["delta", "got 5e-324"]),
    ("ps-epsilon-subnormal", ps(eps="5e-324"), ["epsilon", "got 5e-324"]),
    ("dc-epsilon-overflow", dc(eps="1e-300"), ["epsilon 1e-300 is too small"]),
    ("ps-epsilon-overflow", ps("--algorithm", "laplace-thresholding", eps="3e-308"),
     ["--epsilon 3e-308", "too small", "overflows"]),
    ("dc-missing-column", dc("--user-col", "uid"),  # the schema, read before Spark
     ["--input words has no column 'uid' (columns: user_id, item)", "pass --user-col user_id"]),
    ("ps-master-unknown", ps("--master", "foo"), ["--master foo", "not a Spark master URL"]),
    ("ps-driver-memory-small", ps("--spark-conf", "spark.driver.memory=100m"),
     ["--spark-conf spark.driver.memory=100m", "too small"]),
    ("audit-runs-zero", ["audit", "--mechanism", "basic", "--runs", "0"], ["--runs", "got 0"]),
    ("audit-alpha-above-one", ["audit", "--mechanism", "basic", "--alpha", "1.5"], ["--alpha"]),
    ("audit-output-under-file", ["audit", "--mechanism", "basic", "--json", "afile/a.json"],
     ["--json afile/a.json", "not a directory"]),
]  # fmt: skip

SETUP = {  # changes made to a case's workspace before it runs: special files are not copied
    "ps-input-fifo": [("fifo", "pipe")],
    "ps-input-part-fifo": [("fifo", "pipedir/part-1.parquet")],
    "ps-report-device-overwrite": [("chardev", "dev")],
    "cb-output-socket-overwrite": [("socket", "sock")],
    "dc-config-fifo": [("fifo", "pipe")],
    "dc-key-fifo": [("fifo", "pipe")],
    "ps-store-fifo": [("fifo", "pipe")],
}

# Cases run through the real console script or a jobs/*.py file (not the fork server).
SCRIPT_CASES: list[tuple[str, list[str], str | None, list[str]]] = [
    ("console-report-is-input", ps("--report", "data.parquet", inp="data.parquet"), None,
     ["--report data.parquet"]),
    ("console-calibrate-1e9", ["calibrate", "--epsilon", "1e9"], None, ["epsilon"]),
    ("script-ps-output-is-input", ps("--overwrite", out="words")[1:],
     "jobs/partition_selection.py", ["--output words"]),
    ("script-cb-missing-input", cb("--max-contributions", "2", inp="nope")[1:],
     "jobs/contribution_bounding.py", ["--input nope"]),
    ("script-dc-truncated", dc(inp="trunc.parquet")[1:], "jobs/distinct_count.py",
     ["--input trunc.parquet"]),
]  # fmt: skip


# (id, job module, argv, HADOOP_CONF_DIR set, words): failures found while reading the data.
SPARK_CASES: list[tuple[str, str, list[str], bool, list[str]]] = [
    ("spark-ps-nulls", "partition_selection", ps("--strict-input", inp="nulls")[1:], False,
     ["null ids", "--strict-input"]),
    ("spark-ps-empty", "partition_selection", ps("--strict-input", inp="empty")[1:], False,
     ["is empty", "--strict-input"]),
    ("spark-dc-float-ids", "distinct_count", dc(inp="floats")[1:], False, ["floating-point"]),
    ("spark-cb-mixed-types", "contribution_bounding",
     cb("--max-contributions", "1", inp="mixed")[1:], False, ["mixed types"]),
    ("spark-cb-negative-caps", "contribution_bounding",
     cb("--capacities", "negcaps", "--strict-input")[1:], False, ["negcaps", "negative"]),
    ("spark-uri-not-parquet", "partition_selection", ps(inp="{ws}/fake.parquet")[1:], True,
     ["--input", "fake.parquet", "--input-format csv"]),
    ("spark-uri-missing", "distinct_count", dc(inp="{ws}/nope")[1:], True,
     ["--input", "/nope does not exist"]),
    ("spark-uri-layout", "partition_selection", ps(inp="{ws}/layout_k")[1:], True,
     ["--input", "/layout_k", "k=1/"]),
    # --- issue 39
    ("spark-ps-boolean-ids", "partition_selection", ps(inp="bools")[1:], False,
     ["'user_id'", "unsupported type boolean"]),
    ("spark-dc-corrupt-page", "distinct_count", dc(inp="corrupt")[1:], False,
     ["--input corrupt", "part-0.parquet", "corrupt"]),
    ("spark-cb-null-weights", "contribution_bounding",
     cb("--max-contributions", "2", "--order", "weighted-global", "--record-weights",
        "nullweights", "--strict-input")[1:], False, ["<private> weights are null"]),
    ("spark-ps-s3a-without-jars", "partition_selection", ps(inp="s3a://bucket/words")[1:], False,
     ["--input s3a://bucket/words", "no file system for this URI"]),
    # --- issue 38: the suite's session has no GraphFrames jar
    ("spark-dc-graphframes-without-jar", "distinct_count", dc("--components", "graphframes")[1:],
     False, ["components='graphframes' cannot run", "--packages io.graphframes"]),
    # --- issue 38: tables of the session's catalog
    ("spark-ps-input-table-missing", "partition_selection",
     ["--input-table", "nope_38", "--output", "o", "--epsilon", "1"], False,
     ["--input-table nope_38 does not exist", "--input PATH"]),
    ("spark-ps-output-table-no-database", "partition_selection",
     ["--input", "words", "--output-table", "nodb_38.o", "--epsilon", "1"], False,
     ["--output-table nodb_38.o", "database nodb_38 does not exist"]),
    ("spark-dc-input-table-bad-name", "distinct_count",
     ["--input-table", "a-b", "--epsilon", "1"], False, ["'a-b' is not a table name"]),
]  # fmt: skip

# (id, job module, argv, words): failures of the environment, exit code 1 and one line.
ENVIRONMENT_CASES: list[tuple[str, str, list[str], list[str]]] = [
    ("env-dc-namenode-refused", "distinct_count", dc(inp="hdfs://127.0.0.1:1/words")[1:],
     ["--input hdfs://127.0.0.1:1/words", "cannot reach its host"]),
    ("env-ps-unknown-host", "partition_selection",
     ps(out="hdfs://nosuchhost.invalid/o")[1:], ["unknown host nosuchhost.invalid"]),
]  # fmt: skip
