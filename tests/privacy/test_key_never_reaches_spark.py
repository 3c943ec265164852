"""No value derived from the release key reaches Spark: not in a query plan, not in its event log.

Spark's event log records every query's plans, job descriptions and settings, and whoever reads
it (an operator, a history server) must not find a secret of the key there: with the content
digest's salts and the public release id, anyone could test whether a release was computed on a
guessed input; with a stream key, recompute the noise (docs/privacy/boundary.md#plans). Each job
runs as its own process with the event log on, uncompressed; the log, stdout, stderr and the
report are then scanned for every secret the test derives from the job's key (a test seed, so
the test can derive them too): the key, the digest salts, the bound key of the release, the
stream keys and the named secrets of the streams the job draws from, each as decimal (signed
and unsigned), hexadecimal and base64. The key material of the key file itself is checked by
tests/privacy/test_release_keys.py.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

from spark_dp.randomness import Randomness
from tests.support.job_processes import FAST, job_env

pytestmark = pytest.mark.slow  # two jobs, each a process of its own

ROOT = Path(__file__).resolve().parents[2]
SEED = 7


def _int_forms(value: int) -> list[str]:
    """A 64-bit integer as Spark or Python might print it: signed and unsigned decimal, hex."""
    unsigned = value % (1 << 64)
    signed = unsigned - (1 << 64) if unsigned >= 1 << 63 else unsigned
    hexes = [f"{unsigned:x}", f"{unsigned:X}", f"{unsigned:016x}"]
    return [str(signed), str(unsigned), *hexes]


def _bytes_forms(value: bytes) -> list[str]:
    return [value.hex(), value.hex().upper(), base64.b64encode(value).decode().rstrip("=")]


def key_secrets(seed: int, release_id: str) -> dict[str, list[str]]:
    """Every secret of the key a job derives from ``seed`` for ``release_id``, in its printed
    forms (name -> forms): what no artefact of the run may hold."""
    key = Randomness.create(seed)
    bound = key.bind(release_id)
    secrets: dict[str, list[str]] = {"key": _bytes_forms(key.key.secret)}
    for j, salt in enumerate(key.digest_salts()):
        secrets[f"digest salt {j}"] = _int_forms(salt)
    secrets["bound key"] = _bytes_forms(bound.key.bound_secret(release_id))
    streams = [("capping", r) for r in (1, 2)] + [("noise", r) for r in (1, 2)]
    streams += [("contribution_bounding",), ("tuning",), ("preview",)]
    for labels in streams:
        stream = bound.child(*labels)
        name = "/".join(map(str, labels))
        secrets[f"stream key {name}"] = _bytes_forms(stream.stream_key)
        for purpose in ("capping", "hash", "sampling-baseline"):
            secrets[f"salt {name} {purpose}"] = _int_forms(stream.salt(purpose))
        secrets[f"order seed {name}"] = _int_forms(stream.secret("order-seed"))
    return secrets


def _found(secrets: dict[str, list[str]], text: str) -> list[str]:
    return sorted(name for name, forms in secrets.items() if any(f in text for f in forms))


def _pairs(path: Path) -> None:
    import pandas as pd

    rows = [(f"u{u}", f"w{k}") for u in range(200) for k in range(20)]
    rows += [(f"u{u}", f"own{u}") for u in range(200)]
    pd.DataFrame(rows, columns=["user_id", "item"]).to_parquet(path)


OUT = ["--output", "{tmp}/out"]
JOBS = {
    "partition_selection": [
        *OUT,
        "--algorithm",
        "mad2r",
        "--epsilon",
        "1",
        "--max-contributions",
        "4",
    ],
    "contribution_bounding": [*OUT, "--record-col", "item", "--max-contributions", "3"],
}


@pytest.mark.parametrize("job", sorted(JOBS))
def test_no_secret_of_the_key_in_the_event_log(tmp_path: Path, job: str) -> None:
    events = tmp_path / "events"
    events.mkdir()
    _pairs(tmp_path / "pairs.parquet")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in JOBS[job]]
    argv += ["--input", str(tmp_path / "pairs.parquet"), "--seed", str(SEED)]
    argv += ["--report", str(tmp_path / "report.json"), "--log-level", "INFO", *FAST]
    argv += ["--spark-conf", "spark.eventLog.enabled=true"]
    argv += ["--spark-conf", f"spark.eventLog.dir={events.as_uri()}"]
    argv += ["--spark-conf", "spark.eventLog.compress=false"]
    done = subprocess.run(
        [sys.executable, str(ROOT / "jobs" / f"{job}.py"), *argv],
        capture_output=True,
        text=True,
        env=job_env(),
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = next(tmp_path.glob("report*.json"))
    release_id = json.loads(report.read_text())["release"]["id"]
    logs = [p for p in events.rglob("*") if p.is_file()]
    assert logs, "Spark wrote no event log"
    text = "\n".join(p.read_text(errors="replace") for p in logs)
    assert "SparkListenerSQLExecutionStart" in text and "xxhash64" in text  # plans are there
    secrets = key_secrets(SEED, release_id)
    leaked = {
        "event log": _found(secrets, text),
        "stdout and stderr": _found(secrets, done.stdout + done.stderr),
        "report": _found(secrets, report.read_text()),
    }
    assert leaked == {"event log": [], "stdout and stderr": [], "report": []}


def test_the_scan_finds_a_secret_where_it_is() -> None:
    """The scan has power: the forms it looks for are the ones Spark prints (a signed long)."""
    secrets = key_secrets(SEED, "some-release")
    salt = Randomness.create(SEED).digest_salts()[0]
    plan = f"HashAggregate(keys=[], functions=[sum(xxhash64({salt}L, user_id#12))])"
    assert _found(secrets, plan) == ["digest salt 0"]
    assert _found(secrets, plan.replace(str(salt), "42")) == []
