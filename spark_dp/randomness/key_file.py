"""Reading a release key from a file, with the checks ssh applies to a private key.

A key file is a secret equivalent to the noise of every release made with it (see
``docs/privacy/keys.md``), so it is refused, with one line saying how to fix it, when:

* it is not a regular file (a directory, a FIFO, a device): reading a FIFO would block;
* any group or other permission bit is set (``chmod 600 <path>``, as ssh refuses a private key
  that others can read or replace: a world-writable key can be swapped for a known one);
* it holds fewer than :data:`~spark_dp.randomness.keys.KEY_BYTES` bytes;
* it is constant or a short repeated pattern (period ≤ :data:`MAX_PATTERN_PERIOD` bytes): such a
  file is a placeholder, not random bytes.

None of these checks can tell random bytes from a guessable file of the right shape; they catch
the common mistakes (an empty placeholder, ``/dev/zero``, a file created with the default umask).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from spark_dp.errors import ParameterError

__all__ = ["MAX_PATTERN_PERIOD", "read_key_file"]

MAX_PATTERN_PERIOD = 16
"""A key file that repeats a pattern of at most this many bytes is refused."""

_HINT = "e.g. `head -c 32 /dev/urandom > key && chmod 600 key`"


def _period(content: bytes) -> int | None:
    """The smallest period p ≤ :data:`MAX_PATTERN_PERIOD` of ``content``, if it has one."""
    for p in range(1, min(MAX_PATTERN_PERIOD, len(content) - 1) + 1):
        if content[p:] == content[:-p]:
            return p
    return None


def read_key_file(path: str | os.PathLike[str], min_bytes: int) -> bytes:
    """The content of the key file ``path`` after the checks of the module docstring.

    Raises:
        ParameterError: missing or unreadable, not a regular file, readable or writable by
            group or others, too short, constant or a short repeated pattern.
    """
    p = Path(path)
    shown = f"--noise-key-file {str(p)!r}"
    try:
        st = os.stat(p)
    except OSError as exc:
        raise ParameterError(
            f"{shown} cannot be read ({exc.strerror}); pass a file holding at least "
            f"{min_bytes} random bytes, {_HINT}"
        ) from None
    if not stat.S_ISREG(st.st_mode):
        raise ParameterError(f"{shown} is not a regular file; pass a file of random bytes, {_HINT}")
    if st.st_mode & 0o077:
        raise ParameterError(
            f"{shown} has mode {stat.S_IMODE(st.st_mode):04o}: a release key must be readable "
            f"by its owner only; run `chmod 600 {p}` (and keep it in a secret store)"
        )
    try:
        content = p.read_bytes()
    except OSError as exc:
        raise ParameterError(f"{shown} cannot be read ({exc.strerror}); {_HINT}") from None
    if len(content) < min_bytes:
        raise ParameterError(
            f"{shown} holds {len(content)} bytes; a key needs at least {min_bytes} random "
            f"bytes, {_HINT}"
        )
    period = _period(content)
    if period is not None:
        what = "one repeated byte" if period == 1 else f"a pattern of {period} bytes repeated"
        raise ParameterError(f"{shown} holds {what}, not random bytes; make a key {_HINT}")
    return content
