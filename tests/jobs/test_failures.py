"""One line and an exit code for the failures of Spark and of the environment (issue 39): the
classification from exception texts (Java's included), the driver JVM's output, signals."""

from __future__ import annotations

import errno
import os
import signal
import time
from pathlib import Path

import pytest

from spark_dp import driver_jvm
from spark_dp.driver_jvm import DriverOutput, DriverStartError
from spark_dp.errors import ConfigError, EnvironmentFailure, InputContractError
from spark_dp.io.paths import READ, STATE, WRITE, PathPlan, PathSpec
from spark_dp.jobs import signals
from spark_dp.jobs.failures import known_failure, no_space, session_failure
from spark_dp.jobs.signals import Interrupted, own_sigint, raise_pending, signals_raise


class JavaError(Exception):
    """Stands for a py4j error: its text carries the Java exception and its causes."""


def _plan(tmp: Path) -> PathPlan:
    (tmp / "in").mkdir(exist_ok=True)
    return PathPlan(
        [
            PathSpec("input", "--input", str(tmp / "in"), READ, table=True),
            PathSpec("remote", "--capacities", "hdfs://nn:8020/caps", READ, table=True),
            PathSpec("output", "--output", str(tmp / "out"), WRITE),
            PathSpec("work_dir", "--work-dir", str(tmp / "work"), STATE),
        ]
    )


def test_a_full_disk_names_the_fullest_path(tmp_path):
    plan = _plan(tmp_path)
    disk = OSError(errno.ENOSPC, "No space left on device")
    assert no_space(disk) and no_space(JavaError("java.io.IOException: No space left on device"))
    assert not no_space(OSError(errno.EACCES, "Permission denied"))
    error = known_failure(disk, plan, {"spark.local.dir": "/proc"})  # /proc: 0 bytes free
    assert isinstance(error, EnvironmentFailure) and error.exit_code == 1
    assert str(error).startswith("no space left on /proc (spark.local.dir")
    error = known_failure(disk, plan, {"spark.local.dir": str(tmp_path)})
    assert "no space left on" in str(error) and "staged files were removed" in str(error)


@pytest.mark.parametrize(
    ("text", "kind", "words"),
    [
        ("java.lang.ClassNotFoundException: Class org.apache.hadoop.fs.s3a.S3AFileSystem not "
         "found", ConfigError, "no file system for this URI"),
        ('org.apache.hadoop.fs.UnsupportedFileSystemException: No FileSystem for scheme "foo"',
         ConfigError, "no file system"),
        ("java.net.ConnectException: Call From vm/127.0.0.1 to nn:8020 failed on connection "
         "exception: java.net.ConnectException: Connection refused", EnvironmentFailure,
         "--capacities hdfs://nn:8020/caps: cannot reach its host"),
        ("java.lang.IllegalArgumentException: java.net.UnknownHostException: nn",
         EnvironmentFailure, "unknown host nn"),
        ("java.lang.OutOfMemoryError: Java heap space", EnvironmentFailure, "ran out of memory"),
        ("Py4JError: Answer from Java side is empty", EnvironmentFailure, "application stopped"),
    ],
)  # fmt: skip
def test_spark_and_hadoop_failures_become_one_line(tmp_path, text, kind, words):
    error = known_failure(JavaError(text), _plan(tmp_path), {})
    assert isinstance(error, kind), error
    assert words in str(error)
    assert "\n" not in str(error)


def test_an_hdfs_uri_without_a_namenode_is_a_path_to_fix(tmp_path):
    """hdfs:///path resolves through fs.defaultFS; where that names no namenode Hadoop refuses
    the URI itself: exit 2, naming the flag and the path (not a trace, not the network)."""
    plan = PathPlan(
        [
            PathSpec("caps", "--capacities", "hdfs://nn:8020/caps", READ, table=True),
            PathSpec("input", "--input", "hdfs:///data/words", READ, table=True),
        ]
    )
    text = (
        "An error occurred while calling o46.getFileSystem.\n: java.io.IOException: Incomplete "
        "HDFS URI, no host: hdfs:///data/words\n\tat org.apache.hadoop.hdfs."
        "DistributedFileSystem.initialize(DistributedFileSystem.java:187)"
    )
    error = known_failure(JavaError(text), plan, {})
    assert isinstance(error, ConfigError) and error.exit_code == 2
    assert str(error).startswith("--input hdfs:///data/words: hdfs:/// names no namenode host")
    assert "hdfs://HOST:PORT/path" in str(error) and "fs.defaultFS" in str(error)
    assert "\n" not in str(error)


def test_an_unreadable_file_is_named_with_its_table(tmp_path):
    plan = _plan(tmp_path)
    text = (
        f"[FAILED_READ_FILE.NO_HINT] Encountered error while reading file "
        f"file://{tmp_path}/in/part-0.parquet.  SQLSTATE: KD001\nCaused by: java.io.IOException: "
        "can not read class org.apache.parquet.format.PageHeader: don't know what type: 15"
    )
    error = known_failure(JavaError(text), plan, {})
    assert isinstance(error, InputContractError)
    assert str(error).startswith(f"--input {tmp_path}/in: file://{tmp_path}/in/part-0.parquet")
    assert "corrupt" in str(error)
    lost = f"Encountered error while reading file file://{tmp_path}/in/p.parquet. \nFileGone"
    assert isinstance(known_failure(JavaError(lost), plan, {}), EnvironmentFailure)


def test_a_bug_is_not_recognised(tmp_path):
    assert known_failure(ValueError("a bug"), _plan(tmp_path), {}) is None


def test_a_session_that_did_not_start(tmp_path):
    conf = JavaError(
        "Caused by: org.apache.spark.SparkIllegalArgumentException: [INVALID_CONF_VALUE."
        "TYPE_MISMATCH] The value 'abc' in the config \"spark.sql.shuffle.partitions\" is "
        "invalid. It should be a/an 'int' value. SQLSTATE: 22022"
    )
    settings = {"spark.sql.shuffle.partitions": "abc"}
    error = session_failure(conf, None, settings, {"spark.sql.shuffle.partitions"})
    assert str(error) == (
        "--spark-conf spark.sql.shuffle.partitions=abc: Spark refuses it: It should be a/an "
        "'int' value."
    )
    assert "the config file's spark: section" in str(session_failure(conf, None, settings, set()))
    launcher = DriverStartError(
        ["Invalid maximum heap size: -Xmxlots", "Error: Could not create the Java Virtual Machine."]
    )
    error = session_failure(launcher, None, {"spark.driver.memory": "lots"}, set())
    assert isinstance(error, ConfigError)
    assert str(error).startswith("Spark did not start: Invalid maximum heap size: -Xmxlots;")
    thread = DriverStartError(['Exception in thread "main" org.apache.spark.SparkException: '
                               "Master must start with yarn, spark, k8s, or local"])  # fmt: skip
    assert "Spark did not start: Master must start with" in str(
        session_failure(thread, "x", {}, set())
    )
    java = DriverStartError(["Error: JAVA_HOME is not set"])
    assert isinstance(session_failure(java, None, {}, set()), EnvironmentFailure)
    stopped = JavaError("All masters are unresponsive! Giving up.")
    error = session_failure(stopped, "spark://m:7077", {}, set())
    assert isinstance(error, EnvironmentFailure) and "--master spark://m:7077" in str(error)


def test_the_driver_output_holds_what_is_not_a_log_line(capfd):
    read, write = os.pipe()
    out = DriverOutput(read)
    os.write(write, b"WARNING: Using incubator modules: jdk.incubator.vector\n")
    os.write(write, b"07:05:54 WARN SparkContext: a warning\n")
    os.write(write, b"Invalid maximum heap size: -Xmxlots\n")
    os.close(write)
    assert out.finished() == ["Invalid maximum heap size: -Xmxlots"]
    err = capfd.readouterr().err
    assert err == "07:05:54 WARN SparkContext: a warning\n"  # passed on; the notice dropped


def test_after_an_interrupt_the_driver_output_says_nothing_until_unmuted(capfd, monkeypatch):
    """What the JVM prints about the tasks an interrupt cancelled (aborted writes, killed tasks)
    would follow the run's one line: the signal handler mutes the JVM's stderr."""
    read, write = os.pipe()
    out = DriverOutput(read)
    monkeypatch.setattr(driver_jvm, "_current", [out])
    monkeypatch.setattr(signals, "_session_alive", lambda: False)  # the run stopped its session
    os.write(write, b"07:05:54 WARN SparkContext: before\n")
    seen, deadline = "", time.monotonic() + 10
    while "before" not in seen and time.monotonic() < deadline:  # the reader passed it on
        seen += capfd.readouterr().err
        time.sleep(0.05)
    assert seen == "07:05:54 WARN SparkContext: before\n"
    with pytest.raises(Interrupted), signals_raise():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)  # the handler raises here
    assert out.muted  # the run's JVM is stopping: it stays muted
    os.write(write, b"07:05:55 ERROR FileFormatWriter: Aborting job 1.\n")
    os.write(write, b"07:05:55 WARN BlockManager: Putting block rdd_3_0 failed: TaskKilled\n")
    os.write(write, b"Exception in thread Executor task launch worker\n")
    os.close(write)
    assert out.finished() == [] and capfd.readouterr().err == ""
    driver_jvm.unmute()
    assert not out.muted


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signals_raise_in_the_block_only(spark, signum, code, monkeypatch):
    """With a session running: the interrupted thread gets a new py4j connection and the session
    stays its active one (the rest of the suite keeps using it)."""
    from pyspark.sql import SparkSession

    before = signal.getsignal(signum)
    output = DriverOutput(os.open(os.devnull, os.O_RDONLY))
    monkeypatch.setattr(driver_jvm, "_current", [output])
    with pytest.raises(Interrupted) as caught, signals_raise():
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as pyspark's would
        own_sigint()  # taken back
        try:
            os.kill(os.getpid(), signum)
            time.sleep(5)  # the handler raises here
        finally:
            assert output.muted  # the JVM is silent from the signal on
    assert caught.value.exit_code == code and str(caught.value) == signal.Signals(signum).name
    assert not output.muted  # the session outlives the run: its JVM is heard again
    assert signal.getsignal(signum) == before
    assert SparkSession.getActiveSession() is not None and spark.range(3).count() == 3


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the dropped one
def test_a_signal_whose_exception_python_swallowed_is_raised_at_the_next_checkpoint(spark):
    """A SIGINT that lands where Python cannot propagate an exception (measured: an at-fork hook
    while Spark launches its JVM, "Exception ignored in _releaseLock") still ends the run: the
    next checkpoint (own_sigint after the session started, the charge before the first read,
    the commit) raises it. Without the checkpoint the run went on, was charged and committed."""

    class Finalized:
        def __del__(self) -> None:  # an exception raised here is printed and dropped
            signal.raise_signal(signal.SIGINT)

    with signals_raise():
        Finalized()  # collected at once: the handler runs inside __del__
        with pytest.raises(Interrupted) as caught:
            own_sigint()
        assert caught.value.exit_code == 130
        with pytest.raises(Interrupted):
            raise_pending()  # every later checkpoint too, until the run ends
    with signals_raise():
        raise_pending()  # the next run starts with nothing pending
