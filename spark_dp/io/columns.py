"""The canonical column names shared by the three families (see :mod:`spark_dp.io`)."""

from __future__ import annotations

__all__ = ["CAPACITY", "ITEM", "RECORD_ID", "USER_ID", "quoted"]

USER_ID = "user_id"
"""The privacy unit (user / person)."""

ITEM = "item"
"""An item / partition key."""

RECORD_ID = "record_id"
"""A multi-owner record (hyperedge)."""

CAPACITY = "cap"
"""A per-user contribution capacity b(u)."""


def quoted(name: str) -> str:
    """``name`` as a Spark SQL identifier: back-quoted, a back-quote in it doubled, so that a
    legal but unusual column name (``user.id``, ``a`b``, spaces) means that one column."""
    return "`" + str(name).replace("`", "``") + "`"
