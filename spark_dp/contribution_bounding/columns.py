"""Column names used inside the contribution-bounding pipelines.

The input and output id columns come from :mod:`spark_dp.io` (``record_id``, ``user_id``,
``cap``). Everything else here names a column of a working table
(docs/design/bounding.md#round-plan). All of them are confidential
(docs/design/bounding.md#confidential): with the hypergraph they reveal who shares records with
whom. Only :data:`RECORD_ID`, :data:`MULTIPLICITY`, the dp-mf batch columns and the user-state
columns (:data:`USER_ID`, :data:`CAPACITY`, :data:`DEGREE`, :data:`STATUS`) leave a job, into its
confidential outputs.
"""

from __future__ import annotations

from spark_dp.io import CAPACITY, RECORD_ID, USER_ID

__all__ = [
    "ACCEPTED",
    "BATCH_INDEX",
    "CAPACITY",
    "COPIES",
    "DEAD",
    "DEGREE",
    "FIRST",
    "HEAVY",
    "INCIDENCE_COUNT",
    "LARGE",
    "LEAD",
    "LIST_POSITION",
    "MULTIPLICITY",
    "NEGATED_WEIGHT",
    "NEWLY_SATURATED",
    "POSITION",
    "PRIO",
    "PROPOSED",
    "REC",
    "RECORD_ID",
    "ROUND",
    "SIZE",
    "STATUS",
    "URANK",
    "USER_ID",
    "WEIGHT",
]

# --------------------------------------------------------------------------- records

REC = "rec"
"""A record's 0-based position in the shared order (docs/design/bounding.md#orders); its compact id
afterwards."""

SIZE = "size"
"""|h|, the number of distinct users of the record."""

LEAD = "lead"
"""True on exactly one incidence per record (its smallest user id): Σ lead counts records."""

URANK = "urank"
"""The record's rank in its user's own order (``per-user`` orders only)."""

WEIGHT = "weight"
"""A content-free record weight w(h) or w(u, h) (``weighted-global`` / ``per-user``)."""

PRIO = "prio"
"""prio(h), the 32-byte SHA-256 tie-breaker of the shared orders."""

NEGATED_WEIGHT = "negw"
"""−w(h) with −0.0 folded into +0.0 (the ``weighted-global`` sort key)."""

LARGE = "large"
"""Bias-mitigating: |h| > u_thr (the record is in the large list)."""

LIST_POSITION = "q"
"""Bias-mitigating: the record's 0-based position within its (small or large) list."""

# --------------------------------------------------------------------------- users

DEGREE = "d"
"""d(u), records of u selected so far (with multiplicity); an output column of user_state."""

INCIDENCE_COUNT = "deg"
"""The number of incidences of a user in the input (marks heavy users)."""

HEAVY = "heavy"
"""The user has more records than the skew threshold: ranked in salted buckets
(docs/design/bounding.md#skew)."""

STATUS = "status"
"""SATURATED / EXHAUSTED / OPEN (docs/design/bounding.md#outputs); an output column of
user_state."""

COPIES = "count"
"""Alg. 3 passes: copies of records selected so far per user."""

# --------------------------------------------------------------------------- round flags

PROPOSED = "proposed"
"""The user proposes the record in this round (it is among its best cap − d)."""

FIRST = "first"
"""The record is the user's best eligible one (one row per proposing user)."""

ACCEPTED = "acc"
"""Every user of the record proposed it: the round accepts it."""

NEWLY_SATURATED = "newly"
"""The user reached its capacity in this round."""

DEAD = "dead"
"""Some user of the record saturated in this round (the record leaves unless accepted)."""

ROUND = "round"
"""The round that accepted a record (0 = the driver finish)."""

# --------------------------------------------------------------------------- outputs

MULTIPLICITY = "multiplicity"
"""Copies of a selected record (1 without duplicates)."""

BATCH_INDEX = "batch_index"
"""dp-mf: the batch t of an entry (batches are consumed in this order,
docs/design/bounding.md#min-sep)."""

POSITION = "position"
"""dp-mf: the entry's position inside its batch."""
