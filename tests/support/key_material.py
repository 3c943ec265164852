"""Looking for a release key where it must never be: reports, logs, ledgers, outputs.

:func:`find_key_material` takes the key file's bytes and any mix of strings, bytes, files and
directories (walked), and returns where a form of the key shows up. The forms are those of the
file's content (``spark-dp keygen``'s text) and of the 32-byte key it holds
(:meth:`ReleaseKey.from_file`): the raw bytes, lower- and upper-case hex, standard and URL-safe
base64 (with and without padding), and Python's ``repr`` of the bytes. New places to scan (a
budget store, another log) are one more argument.
"""

from __future__ import annotations

import base64
import tempfile
from collections.abc import Iterable
from pathlib import Path

from spark_dp.randomness import ReleaseKey


def key_forms(key_file_contents: Iterable[bytes]) -> dict[str, bytes]:
    """Every encoding of every secret derived from the key files, by name."""
    forms: dict[str, bytes] = {}
    for k, content in enumerate(key_file_contents):
        derived = _release_key(content).secret
        for name, secret in ((f"key file {k}", content), (f"release key {k}", derived)):
            b64 = base64.b64encode(secret)
            url = base64.urlsafe_b64encode(secret)
            forms.update(
                {
                    f"{name} raw": secret,
                    f"{name} hex": secret.hex().encode(),
                    f"{name} HEX": secret.hex().upper().encode(),
                    f"{name} base64": b64,
                    f"{name} base64 unpadded": b64.rstrip(b"="),
                    f"{name} urlsafe base64": url.rstrip(b"="),
                    f"{name} repr": repr(secret).encode(),
                }
            )
    return forms


def _release_key(content: bytes) -> ReleaseKey:
    """The release key the jobs read from a key file with this content."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "key"
        path.write_bytes(content)
        path.chmod(0o600)
        return ReleaseKey.from_file(path)


def _blobs(source: str | bytes | Path) -> Iterable[tuple[str, bytes]]:
    """(where, bytes) of a string, bytes, a file or every file under a directory."""
    if isinstance(source, str):
        yield "text", source.encode("utf-8", "surrogateescape")
    elif isinstance(source, bytes):
        yield "bytes", source
    elif source.is_dir():
        for path in sorted(source.rglob("*")):
            if path.is_file():
                yield str(path), path.read_bytes()
    elif source.is_file():
        yield str(source), source.read_bytes()
    else:
        raise FileNotFoundError(f"nothing to scan at {source}")


def find_key_material(
    key_file_contents: Iterable[bytes], *sources: str | bytes | Path
) -> list[str]:
    """``"<where>: <form>"`` for every source holding a form of the key (empty: no leak)."""
    forms = key_forms(key_file_contents)
    found = []
    for source in sources:
        for where, blob in _blobs(source):
            found += [f"{where}: {name}" for name, form in forms.items() if form in blob]
    return found
