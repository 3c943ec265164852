"""The sweep's case table: command lines a careless or hostile user would type, and what each
must end with (issue 39's families).

Each :class:`Case` runs in its own copy of the workspace (:mod:`tests.sweep.workspace`) and must
hold all of: the exit code stated; on failure exactly one line on stderr that is not a log
record, starting ``spark-dp`` and containing the words stated (on success none); no Python or
Java trace; the inputs unchanged; no stray files (a failure leaves the workspace exactly as it
found it). How a case runs (``kind``):

* ``fork``: fails before Spark starts; a child of the fork server
  (:mod:`tests.support.cli_forkserver`);
* ``warm``: needs Spark; a child of the ``--spark`` fork server, which reuses one JVM;
* ``cold``: starts (or fails to start) its own JVM, or runs under ``spark-submit``, or receives
  a real signal from outside: its own process.

A case with ``steps`` is a sequence in one workspace (a kill during the commit, then another
release to some of the same paths, then a plain re-run); its checks are in
:mod:`tests.sweep.test_sweep`. The kills, signals, full disks and ``spark-submit`` runs are in
:mod:`tests.sweep.spark_cases`, whose :data:`~tests.sweep.spark_cases.ALL` is the whole table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["CASES", "FAMILIES", "Case", "Step"]


@dataclass(frozen=True)
class Step:
    """One command of a case with several: its arguments, environment and exit code."""

    argv: tuple[str, ...]
    code: int
    env: tuple[tuple[str, str], ...] = ()
    words: tuple[str, ...] = ()


@dataclass(frozen=True)
class Case:
    """One sweep case (see the module docstring)."""

    id: str
    family: str
    argv: tuple[str, ...] = ()
    code: int = 2
    words: tuple[str, ...] = ()
    kind: str = "fork"
    setup: tuple[tuple[str, ...], ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    steps: tuple[Step, ...] = ()
    copy_from: str | None = None  # a release template the case starts from (kills, signals)
    job: str | None = None  # kills and signals: the job whose release is checked
    submit: bool = False  # cold: run under spark-submit
    signal_at: str | None = None  # cold: "TERM@<log text>": the signal sent when it is logged
    outputs: tuple[str, ...] = ()  # a success: the report(s) it must leave


FAMILIES = (
    "special-files", "layouts", "work-dirs", "remote-uris", "spark-settings", "store-files",
    "audit", "columns-and-types", "parameters", "kills", "signals", "full-disk", "spark-submit",
)  # fmt: skip

WARN = ("--log-level", "WARNING")
KILL = "moment"  # not a variable: the fork server runs the job with that moment callback


def ps(*extra: str, inp: str = "words", out: str = "o") -> tuple[str, ...]:
    """A partition-selection command line (Basic: the fewest Spark stages)."""
    base = ("partition-selection", "--input", inp, "--output", out, "--epsilon", "1")
    return (*base, "--algorithm", "basic", "--max-contributions", "3", *extra, *WARN)


def dc(*extra: str, inp: str = "words") -> tuple[str, ...]:
    """A distinct-count command line (the greedy curve)."""
    base = ("distinct-count", "--input", inp, "--epsilon", "1", "--method", "greedy")
    return (*base, "--max-contributions", "5", *extra, *WARN)


def cb(*extra: str, inp: str = "graph", out: str = "o") -> tuple[str, ...]:
    """A contribution-bounding command line."""
    base = ("contribution-bounding", "--input", inp, "--output", out, "--max-contributions", "2")
    return (*base, *extra, *WARN)


def audit(*extra: str) -> tuple[str, ...]:
    """A ``spark-dp audit`` command line."""
    return ("audit", "--mechanism", "basic", "--fast", *extra)


CASES: list[Case] = []


def add(case_id: str, family: str, argv: tuple[str, ...], code: int, *words: str,
        **kw: object) -> None:  # fmt: skip
    """Append a case."""
    CASES.append(Case(case_id, family, argv, code, tuple(words), **kw))  # type: ignore[arg-type]


def table(family: str, prefix: str, rows: list[tuple], **kw: object) -> None:  # type: ignore[type-arg]
    """Append one case of ``family`` per row ``(id, argv, code, words)``, its id prefixed."""
    for case_id, argv, code, words in rows:
        add(f"{prefix}-{case_id}", family, argv, code, *words, **kw)


# --------------------------------------------------------------------------- special files
KINDS = {"fifo": "a named pipe", "chardev": "a character device", "socket": "a socket"}
SLOTS: list[tuple[str, Callable[[str], tuple[str, ...]], str, str]] = [
    # (slot, argv for the special path, where it is made, the flag and path named)
    ("ps-input", lambda p: ps(inp=p), "sp", "--input sp"),
    ("dc-input", lambda p: dc(inp=p), "sp", "--input sp"),
    ("cb-input", lambda p: cb(inp=p), "sp", "--input sp"),
    ("ps-input-part", lambda p: ps(inp="dir"), "dir/part-1.parquet", "dir/part-1.parquet"),
    ("dc-input-part", lambda p: dc(inp="dir"), "dir/part-1.parquet", "dir/part-1.parquet"),
    ("cb-input-part", lambda p: cb(inp="dir"), "dir/part-1.parquet", "dir/part-1.parquet"),
    ("cb-capacities", lambda p: cb("--capacities", p), "sp", "--capacities sp"),
    ("cb-weights", lambda p: cb("--order", "weighted-global", "--record-weights", p), "sp",
     "--record-weights sp"),
    ("ps-output", lambda p: ps(out=p), "sp", "--output sp"),
    ("ps-output-overwrite", lambda p: ps("--overwrite", out=p), "sp", "--output sp"),
    ("ps-report", lambda p: ps("--report", p), "sp", "--report sp"),
    ("ps-report-overwrite", lambda p: ps("--report", p, "--overwrite"), "sp", "--report sp"),
    ("dc-report-overwrite", lambda p: dc("--report", p, "--overwrite"), "sp", "--report sp"),
    # a confidential report is named *.confidential.json (a plain --report sp is written beside sp)
    ("cb-report-overwrite", lambda p: cb("--report", f"{p}.confidential.json", "--overwrite"),
     "sp.confidential.json", "--report sp.confidential.json"),
    ("cb-user-state", lambda p: cb("--user-state", p, "--overwrite"), "sp", "--user-state sp"),
    ("cb-work-dir", lambda p: cb("--work-dir", p), "sp", "--work-dir sp"),
    ("ps-config", lambda p: ps("--config", p), "sp", "--config sp"),
    ("dc-config", lambda p: dc("--config", p), "sp", "--config sp"),
    ("ps-key", lambda p: ps("--noise-key-file", p), "sp", "--noise-key-file sp"),
    ("dc-key", lambda p: dc("--noise-key-file", p), "sp", "--noise-key-file sp"),
    ("cb-key", lambda p: cb("--noise-key-file", p), "sp", "--noise-key-file sp"),
    ("ps-store", lambda p: ps("--budget-store", f"sqlite:///{p}"), "sp", "--budget-store sp"),
    ("dc-store", lambda p: dc("--budget-store", f"sqlite:///{p}"), "sp", "--budget-store sp"),
    ("dc-debug-report", lambda p: dc("--debug-report", p, "--allow-unsafe-debug", "--overwrite"),
     "sp.NONPRIVATE.json", "--debug-report sp.NONPRIVATE.json"),
    ("ps-output-parent", lambda p: ps(out=f"{p}/o"), "sp", "--output sp/o"),
]  # fmt: skip
for kind, what in KINDS.items():
    for slot, line, where, named in SLOTS:
        add(f"special-{kind}-{slot}", "special-files", line("sp"), 2, named, what,
            setup=((kind, where),))  # fmt: skip
for slot in ("ps-input", "dc-input", "cb-input", "ps-report-overwrite", "ps-output-overwrite",
             "ps-config", "dc-key"):  # fmt: skip
    _, line, _, named = next(s for s in SLOTS if s[0] == slot)
    add(f"special-link-to-fifo-{slot}", "special-files", line("link"), 2,
        named.replace("sp", "link"), "a named pipe",
        setup=(("fifo", "pipe"), ("link", "link", "pipe")))  # fmt: skip

# --------------------------------------------------------------------------- layouts
REFUSED_LAYOUTS = {
    "mixk": "k=1/", "mixsub": "sub/", "nested": "different depths", "deep": "a/",
    "mixdepth": "different depths", "mixkeys": "mixes partition keys", "plainkey": "notkv/",
}  # fmt: skip
for layout, word in REFUSED_LAYOUTS.items():
    add(f"layout-ps-{layout}", "layouts", ps(inp=f"wl_{layout}"), 2, f"--input wl_{layout}", word)
    add(f"layout-dc-{layout}", "layouts", dc(inp=f"wl_{layout}"), 2, f"--input wl_{layout}", word)
    add(f"layout-cb-{layout}", "layouts", cb(inp=f"gl_{layout}"), 2, f"--input gl_{layout}", word)
table("layouts", "layout", [
    ("cb-capacities", cb("--capacities", "wl_mixk"), 2, ("--capacities", "k=1/")),
    ("cb-weights", cb("--order", "weighted-global", "--record-weights", "gl_mixsub"), 2,
     ("--record-weights", "sub/")),
])  # fmt: skip
for layout in ("hive", "hive2", "hidden_ok"):
    add(f"layout-ps-{layout}-read", "layouts", ps("--seed", "1", inp=f"wl_{layout}"), 0,
        kind="warm", outputs=("o.report.json",))  # fmt: skip
add("layout-dc-hive2-read", "layouts", dc("--seed", "1", "--report", "c.json", inp="wl_hive2"), 0,
    kind="warm", outputs=("c.json",))  # fmt: skip
add("layout-cb-hive-read", "layouts", cb("--seed", "1", inp="gl_hive"), 0, kind="warm",
    outputs=("o.report.confidential.json",))  # fmt: skip

# --------------------------------------------------------------------------- work directories
NOT_OURS, OTHER = "not a spark_dp work directory", "another run"
table("work-dirs", "workdir", [
    ("userdir", cb("--work-dir", "userdir"), 2, ("--work-dir userdir", NOT_OURS)),
    ("userdir-overwrite", cb("--work-dir", "userdir", "--overwrite"), 2, ("userdir", NOT_OURS)),
    ("emptydir", cb("--work-dir", "emptydir"), 2, ("--work-dir emptydir", NOT_OURS)),
    ("emptydir-overwrite", cb("--work-dir", "emptydir", "--overwrite"), 2, (NOT_OURS,)),
    ("badmeta", cb("--work-dir", "badmeta"), 2, ("--work-dir badmeta", NOT_OURS)),
    ("badmeta-overwrite", cb("--work-dir", "badmeta", "--overwrite"), 2, (NOT_OURS,)),
    ("othermeta", cb("--work-dir", "othermeta"), 2, ("--work-dir othermeta", OTHER)),
    ("othermeta-overwrite", cb("--work-dir", "othermeta", "--overwrite"), 2, (OTHER,)),
    ("inside-user-folder", cb("--work-dir", "userdir/data"), 2, ("userdir/data", NOT_OURS)),
    ("a-file", cb("--work-dir", "afile"), 2, ("--work-dir afile", "file")),
    ("under-a-file", cb("--work-dir", "afile/w"), 2, ("--work-dir afile/w",)),
])  # fmt: skip
table("work-dirs", "workdir", [
    ("default-user-folder", cb(out="mine"), 2, ("--work-dir", "mine_work", NOT_OURS)),
    ("default-user-folder-overwrite", cb("--overwrite", out="mine"), 2, ("mine_work", NOT_OURS)),
], setup=(("mkdir", "mine_work/keep"),))  # fmt: skip
CASES.append(Case("workdir-own-state-resumes", "work-dirs", kind="warm", job="cb", steps=(
    Step(cb("--seed", "4"), -9, ((KILL, "KILL@0"),)),
    Step(cb("--seed", "4"), 0),
), outputs=("o.report.confidential.json",)))  # fmt: skip

# --------------------------------------------------------------------------- remote URIs
NO_FS, FAR = "no file system for this URI", "cannot reach its host"
HDFS = "hdfs://127.0.0.1:1"
table("remote-uris", "remote", [
    ("ps-hdfs-refused", ps(inp=f"{HDFS}/data"), 1, (f"--input {HDFS}/data", FAR)),
    ("dc-hdfs-refused", dc(inp=f"{HDFS}/data"), 1, (f"--input {HDFS}/data", FAR)),
    ("cb-hdfs-refused", cb(inp=f"{HDFS}/data"), 1, (f"--input {HDFS}/data", FAR)),
    ("ps-hdfs-no-namenode", ps(inp="hdfs:///data/words"), 2,
     ("--input hdfs:///data/words", "no namenode host", "fs.defaultFS")),
    ("ps-hdfs-unknown-host", ps(inp="hdfs://nosuchhost.invalid/d"), 1, ("nosuchhost.invalid", FAR)),
    ("dc-ftp-refused", dc(inp="ftp://127.0.0.1:1/d"), 1, ("--input ftp://127.0.0.1:1/d", FAR)),
    ("ps-s3a-no-jars", ps(inp="s3a://bucket/data"), 2, ("--input s3a://bucket/data", NO_FS)),
    ("dc-s3a-no-jars", dc(inp="s3a://bucket/data"), 2, ("--input s3a://bucket/data", NO_FS)),
    ("cb-s3a-no-jars", cb(inp="s3a://bucket/data"), 2, ("--input s3a://bucket/data", NO_FS)),
    ("ps-gs-no-jars", ps(inp="gs://bucket/data"), 2, ("--input gs://bucket/data", NO_FS)),
    ("ps-unknown-scheme", ps(inp="foo://x/data"), 2, ("--input foo://x/data", NO_FS)),
    ("ps-output-s3a", ps(out="s3a://bucket/o"), 2, ("--output s3a://bucket/o", NO_FS)),
    ("cb-output-s3a", cb(out="s3a://bucket/o"), 2, ("s3a://bucket/o", NO_FS)),
    ("ps-output-hdfs", ps(out=f"{HDFS}/o"), 1, (f"{HDFS}/o", FAR)),
    ("dc-report-hdfs", dc("--report", f"{HDFS}/c.json"), 1, (f"--report {HDFS}/c.json", FAR)),
    ("cb-work-dir-s3a", cb("--work-dir", "s3a://b/w"), 2, ("--work-dir s3a://b/w", NO_FS)),
    ("cb-capacities-s3a", cb("--capacities", "s3a://b/c"), 2, ("--capacities s3a://b/c", NO_FS)),
    ("ps-config-hdfs", ps("--config", f"{HDFS}/c.yaml"), 2, (f"{HDFS}/c.yaml",)),
], kind="warm")  # fmt: skip

# --------------------------------------------------------------------------- Spark settings
for job, line in (("ps", ps), ("dc", dc), ("cb", cb)):
    table("spark-settings", f"settings-{job}", [
        ("master-foo", line("--master", "foo"), 2, ("--master foo", "not a Spark master URL")),
        ("master-local-x", line("--master", "local[x]"), 2, ("--master local[x]",)),
        ("master-empty", line("--master", ""), 2, ("--master ''",)),
        ("driver-memory-100m", line("--spark-conf", "spark.driver.memory=100m"), 2,
         ("spark.driver.memory=100m", "too small")),
        ("driver-memory-lots", line("--spark-conf", "spark.driver.memory=lots"), 2,
         ("spark.driver.memory=lots", "not a size")),
        ("executor-memory-fraction", line("--spark-conf", "spark.executor.memory=1.5g"), 2,
         ("spark.executor.memory=1.5g", "not a size")),
        ("config-driver-memory", line("--config", "spark_mem.yaml"), 2,
         ("spark.driver.memory", "config file", "too small")),
        ("config-master", line("--config", "spark_master.yaml"), 2, ("spark.master", "nowhere")),
    ])  # fmt: skip
table("spark-settings", "settings", [
    ("ps-sql-conf-type", ps("--spark-conf", "spark.sql.shuffle.partitions=abc"), 2,
     ("--spark-conf spark.sql.shuffle.partitions=abc", "Spark refuses it")),
    ("dc-config-sql-conf-type", dc("--config", "spark_bad.yaml"), 2,
     ("spark.sql.shuffle.partitions", "config file", "Spark refuses it")),
    ("cb-yarn-without-conf", cb("--master", "yarn"), 2, ("Spark did not start", "yarn")),
    ("ps-heap-in-java-options", ps("--spark-conf", "spark.driver.extraJavaOptions=-Xmx4g"), 2,
     ("Spark did not start", "-Xmx")),
    ("dc-master-unreachable", dc("--master", "spark://127.0.0.1:1"), 1,
     ("--master spark://127.0.0.1:1", "cannot reach the Spark master")),
], kind="cold")  # fmt: skip

# --------------------------------------------------------------------------- store files
for job, line in (("ps", ps), ("dc", dc)):
    table("store-files", f"store-{job}", [
        ("dir", line("--budget-store", "sqlite:///emptydir"), 2,
         ("--budget-store emptydir", "directory")),
        ("under-file", line("--budget-store", "sqlite:///afile/b.db"), 2,
         ("--budget-store afile/b.db",)),
        ("inside-input", line("--budget-store", "sqlite:///words/b.db"), 2,
         ("--budget-store words/b.db", "--input")),
        ("empty", line("--budget-store", ""), 2, ("--budget-store", "empty")),
        ("not-a-database", line("--budget-store", "sqlite:///notadb.db"), 2,
         ("--budget-store", "not a")),
    ])  # fmt: skip
    table("store-files", f"key-{job}", [
        ("is-input", line("--noise-key-file", "words/part-00000.parquet"), 2,
         ("--noise-key-file",)),
    ])  # fmt: skip
    add(f"key-{job}-inside-input", "store-files",
        line("--noise-key-file", "words/.key"), 2, "--noise-key-file", "words/.key",
        setup=(("keyfile", "words/.key"),))  # fmt: skip

# --------------------------------------------------------------------------- audit
table("audit", "audit", [
    ("runs-zero", audit("--runs", "0"), 2, ("--runs", ">= 1", "got 0")),
    ("runs-negative", audit("--runs", "-5"), 2, ("--runs", "got -5")),
    ("runs-text", audit("--runs", "many"), 2, ("--runs",)),
    ("alpha-zero", audit("--alpha", "0"), 2, ("--alpha",)),
    ("alpha-one", audit("--alpha", "1"), 2, ("--alpha",)),
    ("alpha-above", audit("--alpha", "1.5"), 2, ("--alpha", "1.5")),
    ("alpha-negative", audit("--alpha", "-0.1"), 2, ("--alpha",)),
    ("alpha-nan", audit("--alpha", "nan"), 2, ("--alpha",)),
    ("json-under-file", audit("--json", "afile/a.json"), 2, ("afile/a.json", "not a directory")),
    ("plot-under-file", audit("--plot", "afile/a.png"), 2, ("afile/a.png", "not a directory")),
    ("markdown-under-file", audit("--markdown", "afile/a.md"), 2, ("--markdown afile/a.md",)),
    ("json-is-dir", audit("--json", "emptydir"), 2, ("--json emptydir", "directory")),
    ("markdown-is-dir", audit("--markdown", "emptydir"), 2, ("--markdown emptydir", "directory")),
    ("json-twice", audit("--json", "a.json", "--markdown", "a.json"), 2, ("--json a.json",)),
    ("plot-and-json-same", audit("--json", "a.out", "--plot", "a.out"), 2, ("--plot a.out",)),
    ("json-unwritable", audit("--json", "/proc/a.json"), 2, ("/proc/a.json", "not writable")),
    ("bound-aliases", audit("--max-contributions", "2", "--max-items-per-user", "3"), 2,
     ("--max-contributions 2", "--max-items-per-user 3")),
    ("beta-aliases", audit("--truncation-beta", "1", "--beta", "2"), 2, ("--truncation-beta 1",)),
    ("mechanism-unknown", ("audit", "--mechanism", "nope"), 2, ("--mechanism",)),
    ("only-unknown", ("audit", "--self-test", "--only", "nope"), 2, ("--only", "nope")),
    ("nothing-chosen", ("audit",), 2, ("--mechanism",)),
])  # fmt: skip
add("audit-json-fifo", "audit", audit("--json", "sp"), 2, "--json sp", "a named pipe",
    setup=(("fifo", "sp"),))  # fmt: skip

# --------------------------------------------------------------------------- columns and types
CASE_WORDS = "differ only in case"
table("columns-and-types", "columns", [
    ("ps-case", ps(inp="cols_case"), 2, ("'user_id'", "'USER_ID'", CASE_WORDS)),
    ("dc-case", dc(inp="cols_case"), 2, ("'USER_ID'", CASE_WORDS)),
    ("cb-case", cb(inp="gcols_case"), 2, ("'Record_ID'", CASE_WORDS)),
    ("ps-case-csv", ps(inp="cols_case.csv"), 2, ("cols_case.csv", CASE_WORDS)),
])  # fmt: skip
WARM_ROWS = [
    *[(f"types-ps-{t}", ps(inp=f"type_{t}"), 2, ("'user_id'", "type"))
      for t in ("bool", "date", "timestamp", "double", "binary", "list")],
    *[(f"types-dc-{t}", dc(inp=f"type_{t}"), 2, ("'user_id'", "type")) for t in ("bool", "date")],
    *[(f"types-cb-{t}", cb(inp=f"gtype_{t}"), 2, ("'user_id'", "type"))
      for t in ("bool", "date", "double")],
    ("corrupt-ps", ps(inp="corrupt"), 2, ("--input corrupt", "corrupt")),
    ("corrupt-dc", dc(inp="corrupt"), 2, ("--input corrupt", "corrupt")),
    ("corrupt-cb", cb(inp="gcorrupt"), 2, ("--input gcorrupt", "corrupt")),
    ("null-weights", cb("--order", "weighted-global", "--record-weights", "nullweights",
                        "--strict-input"), 2,
     ("<private> weights are null",)),
]  # fmt: skip
for case_id, argv, code, words in WARM_ROWS:
    add(case_id, "columns-and-types", argv, code, *words, kind="warm")
for case_id, argv, report in [
    ("ps", ps("--user-col", "user.id", "--item-col", "it`em", inp="cols_odd"), "o.report.json"),
    ("dc", dc("--user-col", "user.id", "--item-col", "note s", "--report", "c.json",
              inp="cols_odd"), "c.json"),
    ("cb", cb("--record-col", "record id", "--user-col", "user`s.id", inp="gcols_odd"),
     "o.report.confidential.json"),
]:  # fmt: skip
    add(f"columns-{case_id}-odd-names", "columns-and-types", argv, 0, kind="warm",
        outputs=(report,))  # fmt: skip

# --------------------------------------------------------------------------- parameters
TOO_SMALL = "too small"
table("parameters", "parameters", [
    ("ps-bound-aliases", ps("--max-items-per-user", "6"), 2,
     ("--max-contributions 3", "--max-items-per-user 6")),
    ("ps-beta-aliases", ps("--truncation-beta", "1", "--beta", "2"), 2,
     ("--truncation-beta 1", "--beta 2")),
    ("dc-bound-aliases", dc("--max-contribution", "6"), 2,
     ("--max-contributions 5", "--max-contribution 6")),
    ("dc-beta-aliases", dc("--failure-probability", "0.1", "--beta", "0.2"), 2,
     ("--failure-probability 0.1",)),
    ("cb-bound-aliases", cb("--capacity", "3"), 2, ("--max-contributions 2", "--capacity 3")),
    ("cb-weighted-global-without-weights", cb("--order", "weighted-global"), 2,
     ("--order weighted-global", "--record-weights")),
    ("ps-config-twice", ps("--config", "twice.yaml"), 2, ("max_items_per_user", "twice")),
    ("cb-config-twice", cb("--config", "twice_cb.yaml"), 2, ("capacity", "twice")),
    ("dc-config-twice", dc("--config", "twice_dc.yaml"), 2, ("beta", "twice")),
    ("ps-epsilon-subnormal", ps("--epsilon", "5e-324"), 2, ("epsilon", "5e-324")),
    ("ps-delta-subnormal", ps("--delta", "5e-324"), 2, ("delta", "5e-324")),
    ("ps-delta-tiny", ps("--delta", "1e-320"), 2, ("delta", "1e-320")),
    ("ps-epsilon-below-normal", ps("--epsilon", "1e-308"), 2, ("epsilon", "1e-308")),
    ("ps-delta-below-normal", ps("--delta", "1e-310"), 2, ("delta", "1e-310")),
    ("dc-epsilon-subnormal", dc("--epsilon", "5e-324"), 2, ("epsilon", "5e-324")),
    ("dc-epsilon-below-normal", dc("--epsilon", "2e-308"), 2, ("epsilon", "2e-308")),
    ("dc-epsilon-overflow", dc("--epsilon", "1e-300"), 2, ("epsilon 1e-300", TOO_SMALL)),
    ("dc-epsilon-shift-overflow", dc("--epsilon", "3e-308"), 2, ("epsilon 3e-308", TOO_SMALL)),
    ("ps-epsilon-overflow-laplace",
     ps("--epsilon", "3e-308", "--algorithm", "laplace-thresholding"), 2,
     ("--epsilon 3e-308", TOO_SMALL)),
    ("ps-epsilon-overflow-basic-laplace",
     ps("--epsilon", "3e-308", "--algorithm", "basic-laplace"), 2,
     ("--epsilon 3e-308", TOO_SMALL)),
    ("calibrate-epsilon-subnormal", ("calibrate", "--epsilon", "5e-324"), 2, ("5e-324",)),
    ("calibrate-delta-subnormal", ("calibrate", "--epsilon", "1", "--delta", "4e-320"), 2,
     ("delta", "4e-320")),
    ("calibrate-bound-aliases",
     ("calibrate", "--epsilon", "1", "--max-contributions", "3", "--max-items-per-user", "4"),
     2, ("--max-items-per-user 4",)),
])  # fmt: skip
