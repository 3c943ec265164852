"""Release key files: one format of spark_dp's own, written by ``spark-dp keygen``.

A key file is a secret equivalent to the noise of every release made with it
(``docs/privacy/keys.md``). Its text, four ASCII lines::

    spark-dp release key v1
    id <32 hex digits: 16 random bytes, the salt of the key's fingerprint>
    secret <64 hex digits: the 32-byte key, from the operating system's CSPRNG>
    check <16 hex digits: SHA-256("spark_dp/v1/key-file-check" ‖ 0x00 ‖ id ‖ secret)[:8]>

:func:`write_key_file` creates it with mode 0600, atomically (a complete file or none), and
never over an existing path. :func:`read_key_file` refuses, with one line saying how to make a
key (``spark-dp keygen --out key``), anything else:

* a path that is not a regular file (a directory, a FIFO, a device: reading a FIFO blocks);
* a file with any group or other permission bit (``chmod 600``, as ssh refuses a private key
  that others can read or replace: a world-writable key can be swapped for a known one);
* raw bytes, a passphrase, another version, a damaged file (the checksum), or a secret that is
  not random bytes: fewer than :data:`MIN_DISTINCT_BYTES` distinct byte values, or printable
  ASCII only. 32 uniform bytes have fewer than 16 distinct values with probability 3·10⁻¹⁷
  and are all printable with probability 2·10⁻¹⁴: these refuse hand-made secrets (31 zero
  bytes then 0x01, a passphrase written in hex), never in practice a key keygen wrote.

No check can tell random bytes from a guessable secret of the right shape; the format makes a
key from the OS the only easy way, and the fingerprint (:mod:`.keys`) is a salted scrypt, so
testing a guess costs a slow KDF per key file.
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import stat
from dataclasses import dataclass, field
from pathlib import Path

from spark_dp.errors import ParameterError

__all__ = [
    "KEY_FILE_HEADER",
    "KEY_ID_BYTES",
    "MIN_DISTINCT_BYTES",
    "KeyFileContent",
    "encode_key_file",
    "parse_key_file",
    "read_key_file",
    "write_key_file",
]

KEY_FILE_HEADER = "spark-dp release key v1"
"""The first line of a key file: the format's name and version."""

KEY_ID_BYTES = 16
"""Length of a key file's random id (the salt of its fingerprint)."""

SECRET_BYTES = 32
"""Length of the key a key file holds (256 bits; :data:`spark_dp.randomness.keys.KEY_BYTES`)."""

MIN_DISTINCT_BYTES = 16
"""A secret with fewer distinct byte values is refused (not random bytes; module docstring)."""

MAX_KEY_FILE_BYTES = 1024
"""A larger file is not a key file (and is not read whole)."""

_FORMAT = "spark-dp release key v"
_CHECK_DOMAIN = b"spark_dp/v1/key-file-check\x00"
_MAKE = "make one with `spark-dp keygen --out key`"


@dataclass(frozen=True)
class KeyFileContent:
    """What a key file holds: its random id and the 32-byte key (secret; never printed)."""

    key_id: bytes = field(repr=False)
    secret: bytes = field(repr=False)


def _checksum(key_id: bytes, secret: bytes) -> str:
    return hashlib.sha256(_CHECK_DOMAIN + key_id + secret).digest()[:8].hex()


def encode_key_file(content: KeyFileContent) -> bytes:
    """The text of a key file holding ``content`` (module docstring)."""
    lines = [
        KEY_FILE_HEADER,
        f"id {content.key_id.hex()}",
        f"secret {content.secret.hex()}",
        f"check {_checksum(content.key_id, content.secret)}",
    ]
    return ("\n".join(lines) + "\n").encode("ascii")


def _not_random(secret: bytes) -> str | None:
    """Why ``secret`` is not random bytes, or None."""
    distinct = len(set(secret))
    if distinct < MIN_DISTINCT_BYTES:
        return f"{distinct} distinct byte values"
    if all(0x20 <= b < 0x7F for b in secret):
        return "printable text"
    return None


def _field(line: str, name: str, size: int) -> bytes | None:
    """The bytes of a ``<name> <hex>`` line of ``size`` bytes, or None."""
    head, _, value = line.partition(" ")
    if head != name or len(value) != 2 * size:
        return None
    try:
        return bytes.fromhex(value)
    except ValueError:
        return None


def parse_key_file(text: bytes, shown: str) -> KeyFileContent:
    """The content of a key file's text (``shown`` names it in messages).

    Raises:
        ParameterError: not this format, another version, damaged, or not a random secret.
    """
    try:
        lines = [line.rstrip() for line in text.decode("ascii").splitlines()]
    except UnicodeDecodeError:
        lines = []
    if not lines or not lines[0].startswith(_FORMAT):
        raise ParameterError(
            f"{shown} is not a spark-dp key file (raw bytes and passphrases are refused); {_MAKE}"
        )
    if lines[0] != KEY_FILE_HEADER:
        raise ParameterError(
            f"{shown} is a key file of format {lines[0][len(_FORMAT) - 1 :]!r}, this spark_dp "
            f"reads {KEY_FILE_HEADER[len(_FORMAT) - 1 :]!r}; {_MAKE}"
        )
    parts = lines[1:]
    key_id = _field(parts[0], "id", KEY_ID_BYTES) if len(parts) == 3 else None
    secret = _field(parts[1], "secret", SECRET_BYTES) if len(parts) == 3 else None
    if key_id is None or secret is None or parts[2] != f"check {_checksum(key_id, secret)}":
        raise ParameterError(
            f"{shown} is damaged (its lines or checksum do not match the format); {_MAKE}"
        )
    why = _not_random(secret)
    if why is not None:
        raise ParameterError(
            f"{shown} holds a secret that is not random bytes ({why}): a key must come from "
            f"the OS; {_MAKE}"
        )
    return KeyFileContent(key_id, secret)


def read_key_file(path: str | os.PathLike[str]) -> KeyFileContent:
    """The content of the key file ``path`` after the checks of the module docstring.

    Raises:
        ParameterError: missing or unreadable, not a regular file, readable or writable by
            group or others, or not a key file of this format with a random secret.
    """
    p = Path(path)
    shown = f"--noise-key-file {str(p)!r}"
    try:
        st = os.stat(p)
    except OSError as exc:
        raise ParameterError(f"{shown} cannot be read ({exc.strerror}); {_MAKE}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ParameterError(f"{shown} is not a regular file; {_MAKE}")
    if st.st_mode & 0o077:
        raise ParameterError(
            f"{shown} has mode {stat.S_IMODE(st.st_mode):04o}: a release key must be readable "
            f"by its owner only; run `chmod 600 {p}` (and keep it in a secret store)"
        )
    try:
        with open(p, "rb") as f:
            text = f.read(MAX_KEY_FILE_BYTES + 1)
    except OSError as exc:
        raise ParameterError(f"{shown} cannot be read ({exc.strerror}); {_MAKE}") from None
    if len(text) > MAX_KEY_FILE_BYTES:
        raise ParameterError(f"{shown} is not a spark-dp key file (too large); {_MAKE}")
    return parse_key_file(text, shown)


def _fsync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _create(path: Path, data: bytes) -> None:
    """Write ``data`` to a new file ``path``, mode 0600 (``FileExistsError`` if it exists)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)  # whatever the umask
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def write_key_file(path: str | os.PathLike[str]) -> KeyFileContent:
    """Create the key file ``path``: a fresh id and 32 bytes from ``os.urandom``, mode 0600.

    Atomic: the file is written under a hidden temporary name in the same folder and linked to
    ``path``, which fails if ``path`` exists (a file system without hard links gets an
    exclusive create of ``path`` instead: a reader of a half-written file fails its checksum).

    Raises:
        FileExistsError: ``path`` exists (a key file is never overwritten).
        OSError: the folder is missing or not writable.
    """
    p = Path(path)
    content = KeyFileContent(os.urandom(KEY_ID_BYTES), os.urandom(SECRET_BYTES))
    data = encode_key_file(content)
    if os.path.lexists(p):
        raise FileExistsError(errno.EEXIST, "exists", str(p))
    tmp = p.with_name(f".{p.name}.tmp-{secrets.token_hex(8)}")
    _create(tmp, data)
    try:
        os.link(tmp, p)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS):
            raise
        _create(p, data)  # no hard links here
    finally:
        tmp.unlink(missing_ok=True)
    _fsync_directory(p.parent)
    return content
