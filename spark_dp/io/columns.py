"""The canonical column names shared by the three families (see :mod:`spark_dp.io`)."""

from __future__ import annotations

__all__ = ["CAPACITY", "ITEM", "RECORD_ID", "USER_ID"]

USER_ID = "user_id"
"""The privacy unit (user / person)."""

ITEM = "item"
"""An item / partition key."""

RECORD_ID = "record_id"
"""A multi-owner record (hyperedge)."""

CAPACITY = "cap"
"""A per-user contribution capacity b(u)."""
