"""A read gate that records what it is asked to do, for tests of the read's order of events."""

from __future__ import annotations

from spark_dp.io import ReadGate
from spark_dp.randomness import Randomness


def recording_gate(events: list[str]) -> ReadGate:
    """A seeded key's gate that records its charge and the table it digests in ``events``."""
    key = Randomness.create(1)
    return ReadGate(
        key.digest_salts(),
        key.fingerprint,
        before_read=lambda: events.append("charge"),
        on_digest=lambda d: events.append(f"digest {d.table}"),
    )
