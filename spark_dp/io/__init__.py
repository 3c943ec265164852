"""Input and output contracts: column names, readers, validation, atomic writers.

One vocabulary for all three families. Canonical column names (after renaming from the
user's column names), in :mod:`.columns`:

======================  =======================================================
``USER_ID``             the privacy unit (user / person), string
``ITEM``                an item / partition key, string
``RECORD_ID``           a multi-owner record (hyperedge), string
``CAPACITY``            a per-user contribution capacity b(u), long ≥ 0
======================  =======================================================

Ids are strings or integers, canonicalized to strings (integers in plain base 10), so joins
between tables never compare a string with a number. Any other type is rejected: floating-point
ids (equality on doubles is not an identity), booleans (two values), dates and timestamps (not
ids: cast them upstream if they really are).

* :mod:`.read`: readers and validation. They return ``(DataFrame, InputSummary)``; the summary
  holds *confidential* diagnostics (row counts, duplicates dropped) and, given a
  :class:`~.digest.ReadGate`, the keyed content digest of the rows read, never written to a
  privacy report.
* :mod:`.digest`: the keyed, order-independent content digest that enters a release id,
  computed inside the validation pass.
* :mod:`.probe`: checks of a local input before Spark starts (exists, readable, Parquet magic).
* :mod:`.fs`: filesystem operations (local disk through ``os``; Hadoop through a classic
  session's JVM; ``pyarrow.fs`` under Spark Connect).
* :mod:`.staging`: the commit protocol of a job's outputs and report (report last: its presence
  marks a complete release; a killed run is rolled back or completed by the next one).
* :mod:`.write`: writers of single tables and files that never leave half-written output: they
  write to a hidden temporary sibling and move it into place; an existing output is replaced
  only when ``overwrite=True``.
"""

from spark_dp.io.capacities import load_capacities
from spark_dp.io.columns import CAPACITY, ITEM, RECORD_ID, USER_ID
from spark_dp.io.digest import ContentDigest, ReadGate
from spark_dp.io.read import (
    InputSummary,
    load_incidences,
    load_pairs,
    read_table,
    validate_edges,
)
from spark_dp.io.write import (
    check_output_path,
    json_text,
    output_exists,
    write_json_atomic,
    write_parquet_atomic,
)

__all__ = [
    "CAPACITY",
    "ITEM",
    "RECORD_ID",
    "USER_ID",
    "ContentDigest",
    "InputSummary",
    "ReadGate",
    "check_output_path",
    "json_text",
    "load_capacities",
    "load_incidences",
    "load_pairs",
    "output_exists",
    "read_table",
    "validate_edges",
    "write_json_atomic",
    "write_parquet_atomic",
]
