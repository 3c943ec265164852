"""How a failed job run ends: one line on stderr and an exit code, the trace in the log at DEBUG.

Exit codes (the whole list: :mod:`spark_dp.jobs.runner`): 2 for a parameter, setting, path or
input the user can fix; 1 for a failure of the environment (a full disk, an unreachable host or
Spark master, memory), with one line naming the cause and the path or setting (signals:
:mod:`spark_dp.jobs.signals`).

* :func:`known_failure` recognises the failures of Spark and of the environment that a user can
  act on, from the exception's text (Java's included): ``None`` means a bug or something new,
  whose trace the runner logs; :func:`session_failure` those of a session that did not start.
* :func:`say` writes the one line where the user sees errors: stderr, or under
  ``spark-submit`` (whose Python runner merges the Python process's stderr into its stdout) the
  driver JVM's stderr.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from spark_dp.driver_jvm import DriverStartError
from spark_dp.errors import ConfigError, EnvironmentFailure, InputContractError, SparkDPUserError
from spark_dp.io.fs import is_local, local_path, scheme
from spark_dp.session import launched_by_spark_submit

if TYPE_CHECKING:
    from spark_dp.io.paths import PathPlan, PathSpec

__all__ = [
    "exception_text",
    "existing_ancestor",
    "fullest",
    "known_failure",
    "no_space",
    "say",
    "session_failure",
]


def say(line: str) -> None:
    """Write one line for the user: to stderr, or to the JVM's stderr under ``spark-submit``,
    where the Python process's stderr would reach spark-submit's stdout."""
    if _stderr_merged_into_stdout():
        try:
            from pyspark import SparkContext

            SparkContext._ensure_initialized()
            err: Any = SparkContext._jvm.java.lang.System.err  # type: ignore[union-attr]
            err.println(line)
            err.flush()
            return
        except Exception:  # no gateway after all: the Python stream is all there is
            pass
    print(line, file=sys.stderr, flush=True)


def _stderr_merged_into_stdout() -> bool:
    if not launched_by_spark_submit():
        return False
    try:
        out, err = os.fstat(1), os.fstat(2)
    except OSError:
        return False
    return stat.S_ISFIFO(err.st_mode) and (out.st_dev, out.st_ino) == (err.st_dev, err.st_ino)


# --------------------------------------------------------------------------- recognising


def exception_text(exc: BaseException) -> str:
    """The messages of ``exc`` and of its causes (a py4j error's include the Java trace)."""
    parts, seen = [], set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts.append(f"{type(current).__name__}: {current}")
        current = current.__cause__ or current.__context__
    return "\n".join(parts)


def no_space(exc: BaseException) -> bool:
    """True when ``exc`` (or a cause) is a full disk."""
    current: BaseException | None = exc
    while current is not None:
        if isinstance(current, OSError) and current.errno == errno.ENOSPC:
            return True
        current = current.__cause__ or current.__context__
    return "No space left on device" in exception_text(exc)


_NO_FS = re.compile(
    r'No FileSystem for scheme "?([\w+.-]+)|Class (org\.apache\.hadoop\.fs\.[\w.$]+|'
    r"[\w.$]+FileSystem) not found"
)
_NO_HOST = re.compile(r"Incomplete HDFS URI, no host: (\S+)")
_UNKNOWN_HOST = re.compile(r"UnknownHostException: ([^\s;:]+)")
_UNREACHABLE = re.compile(
    r"ConnectException|Connection refused|NoRouteToHostException|SocketTimeoutException|"
    r"connect timed out|Failed to get home directory"
)
_READ_FILE = re.compile(r"(?:Encountered error while reading file|Error while reading file) (\S+)")
_CORRUPT = re.compile(
    r"parquet|thrift|[Dd]ecod|[Dd]ecompress|Snappy|Zstd|CRC|checksum|EOFException|corrupt"
)
_CONF_VALUE = re.compile(
    r"The value '(.*?)' in the config \"(.*?)\" is invalid\.\s*(.*?)\s*(?:SQLSTATE|$)", re.M
)
_MASTER_URL = re.compile(r"Could not parse Master URL: '(.*?)'")
_STOPPED = re.compile(
    r"stopped SparkContext|SparkContext was shut down|Answer from Java side is empty|"
    r"Error while receiving|Error while sending|Connection reset by peer"
)


def known_failure(
    exc: BaseException,
    plan: PathPlan | None,
    spark_conf: Mapping[str, str],
    given: set[str] | frozenset[str] = frozenset(),
) -> SparkDPUserError | None:
    """The one-line error for a failure a user can act on, or ``None`` (a bug, or new).

    Recognised: a full disk (:func:`no_space`), a Spark setting Spark refuses (``given``: the
    keys set with ``--spark-conf``, the others came from the config file), a URI whose file
    system is not installed, ``hdfs:///path`` without a namenode (neither in the URI nor in
    ``fs.defaultFS``: exit 2), a URI whose host cannot be reached, a table file Spark cannot read
    (corrupt behind an intact footer: exit 2), memory exhausted, and a Spark application that
    stopped under the run.
    """
    text = exception_text(exc)
    m = _CONF_VALUE.search(text)
    if m:
        value, key, why = m.group(1), m.group(2), m.group(3).strip()
        return ConfigError(f"{_setting(key, value, given)}: Spark refuses it: {why}")
    if no_space(exc):
        where, _ = fullest(plan, spark_conf)
        return EnvironmentFailure(
            f"no space left on {where}: the staged files were removed; free some space or "
            "choose another path"
        )
    m = _NO_FS.search(text)
    if m:
        wanted = m.group(1)
        shown = _remote_shown(plan, wanted)
        return ConfigError(
            f"{shown}: no file system for this URI is installed in Spark ({m.group(0)}): add its "
            "Hadoop connector (e.g. --packages org.apache.hadoop:hadoop-aws:<version> for "
            "s3a://) or pass another path"
        )
    m = _NO_HOST.search(text)
    if m:  # hdfs:///path while fs.defaultFS names no namenode: the URI, not the network
        return ConfigError(
            f"{_remote_shown(plan, m.group(1))}: hdfs:/// names no namenode host and "
            "fs.defaultFS names none: write hdfs://HOST:PORT/path, or set fs.defaultFS "
            "(--spark-conf spark.hadoop.fs.defaultFS=hdfs://HOST:PORT)"
        )
    host = _UNKNOWN_HOST.search(text)
    remote = plan is not None and any(not plan.is_local(s) for s in plan.specs)
    if remote and (host or _UNREACHABLE.search(text)):
        why = f"unknown host {host.group(1)}" if host else "the connection failed"
        shown = _remote_shown(plan, host.group(1) if host else None)
        return EnvironmentFailure(
            f"{shown}: cannot reach its host ({why}); check the URI and the network"
        )
    m = _READ_FILE.search(text)
    if m:
        return _unreadable_file(m.group(1).rstrip("."), text, plan)
    if "java.lang.OutOfMemoryError" in text:
        return EnvironmentFailure(
            "Spark ran out of memory (java.lang.OutOfMemoryError): give the driver or the "
            "executors more (spark.driver.memory, spark.executor.memory)"
        )
    if _STOPPED.search(text):
        return EnvironmentFailure(
            "the Spark application stopped while the job ran (its driver JVM, master or "
            "cluster went away); run the job again"
        )
    return None


def _remote_shown(plan: PathPlan | None, hint: str | None) -> str:
    """The flag and path of the remote path a message is about (by its URI, scheme or host)."""
    remote = [s for s in plan.specs if not plan.is_local(s)] if plan is not None else []
    for s in remote:
        if hint and hint.startswith(s.path.rstrip("/")):
            return s.shown()
    for s in remote:
        if hint and (scheme(s.path) == hint.lower() or f"//{hint}" in s.path):
            return s.shown()
    return remote[0].shown() if remote else "a path of this run"


def _unreadable_file(uri: str, text: str, plan: PathPlan | None) -> SparkDPUserError:
    owner = _owning_table(uri, plan)
    where = f"{owner.shown()}: {uri}" if owner else uri
    if _CORRUPT.search(text.split(uri, 1)[-1]):
        return InputContractError(
            f"{where} cannot be read: it is corrupt (its data cannot be decoded although its "
            "footer is intact); replace it with a good copy"
        )
    return EnvironmentFailure(f"{where} cannot be read (an I/O error while reading it); run again")


def _owning_table(uri: str, plan: PathPlan | None) -> PathSpec | None:
    if plan is None:
        return None
    path = local_path(uri) if scheme(uri) in (None, "file") else uri
    for s in plan.specs:
        if s.table and not s.writes:
            root = plan.resolved[s].rstrip("/")
            if path == root or path.startswith(root + "/"):
                return s
    return None


def fullest(plan: PathPlan | None, spark_conf: Mapping[str, str]) -> tuple[str, str]:
    """(what to show, path) of the fullest of the run's local filesystems, among the paths it
    writes and Spark's local directory (shuffle and spill files)."""
    candidates: list[tuple[str, str]] = []
    for s in plan.specs if plan else []:
        if s.writes and plan is not None and is_local(s.path, plain_is_local=plan.plain_is_local):
            candidates.append((f"{plan.resolved[s]} ({s.flag})", plan.resolved[s]))
    local_dir = (spark_conf.get("spark.local.dir") or tempfile.gettempdir()).split(",")[0]
    candidates.append((f"{local_dir} (spark.local.dir: Spark's shuffle and spills)", local_dir))
    return min(candidates, key=lambda c: _free_bytes(c[1]))


def existing_ancestor(path: str) -> str:
    """``path`` or its nearest ancestor that exists."""
    while path and not os.path.exists(path):
        path = os.path.dirname(path.rstrip("/")) or "/"
    return path or "/"


def _free_bytes(path: str) -> int:
    try:
        return shutil.disk_usage(existing_ancestor(path)).free
    except OSError:
        return 1 << 62


def session_failure(
    exc: BaseException, master: str | None, settings: Mapping[str, str], given: set[str]
) -> SparkDPUserError:
    """The one-line error for a Spark session that did not start.

    Args:
        exc: what starting it raised.
        master: ``--master``, if given.
        settings: the Spark settings of the run (config file and ``--spark-conf``).
        given: the keys given with ``--spark-conf`` (the others came from the config file).
    """
    text = exception_text(exc)
    m = _MASTER_URL.search(text)
    if m:
        return ConfigError(
            f"--master {m.group(1)}: Spark cannot parse this master URL; use local[N], "
            "spark://host:port, yarn or k8s://..."
        )
    if master and ("All masters are unresponsive" in text or _STOPPED.search(text)):
        return EnvironmentFailure(
            f"--master {master}: cannot reach the Spark master (all masters are unresponsive); "
            "check the URL and that the master is running"
        )
    if isinstance(exc, DriverStartError):
        line = _launcher_line(exc.output)
        if master or settings:
            return ConfigError(
                f"Spark did not start: {line}; check --master and the Spark settings "
                "(--spark-conf, the config file's spark: section)"
            )
        return EnvironmentFailure(f"Spark did not start: {line}; check the Java installation")
    known = known_failure(exc, None, settings, given)
    return known or EnvironmentFailure(
        f"Spark did not start ({type(exc).__name__}); rerun with --log-level DEBUG for the trace"
    )


def _setting(key: str, value: str, given: set[str] | frozenset[str]) -> str:
    if key in given:
        return f"--spark-conf {key}={value}"
    return f"{key}: {value} (the config file's spark: section)"


_LAUNCHER_NOISE = (
    "Error: Could not create the Java Virtual Machine.",
    "Error: A fatal exception has occurred. Program will exit.",
    "Error occurred during initialization of VM",
)


def _launcher_line(output: list[str]) -> str:
    """The launcher's own reason, without Java frames and generic JVM lines."""
    for line in output:
        text = line.strip()
        if not text or text.startswith(("at ", "...", "Caused by")) or text in _LAUNCHER_NOISE:
            continue
        text = re.sub(r'^(Exception in thread "[^"]*" [\w.$]+: |Error: )', "", text)
        return text[:300]
    return "the driver JVM exited before it started"
