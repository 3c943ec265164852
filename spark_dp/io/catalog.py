"""Tables of the session's catalog as a job's input (``--input-table``) and output
(``--output-table``), resolved to their location and format (docs/operations/tables.md).

A catalog table is read and written through its location, so everything a path gets applies
to it: the probes and bad-input rules, the input identity of the request (a Delta table's
version, else the listing of its files), the staged write and the one commit point of
:mod:`spark_dp.io.staging`. Only the catalog's metadata is read here (``DESCRIBE TABLE
EXTENDED``), never a row.

* **Input.** A table with a location, stored as Parquet or Delta (Delta with
  ``--input-format delta``, which starts the session with Delta's settings). A view (no
  location) or another format is refused in one line.
* **Output.** A table that does not exist yet is written at its database's location
  ``<database location>/<name>`` and registered after the commit with one catalog operation
  (``CREATE TABLE ... USING <format> LOCATION ...``); an existing table (``--overwrite``) is
  replaced at its own location by the commit and refreshed (``REFRESH TABLE``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from spark_dp.errors import InputContractError, OutputExistsError, PathConflictError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["CatalogTable", "describe_table", "register_output", "resolve_input", "resolve_output"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")
READABLE = ("parquet", "delta")


@dataclass(frozen=True)
class CatalogTable:
    """A table as the session's catalog describes it (metadata only)."""

    name: str
    location: str | None
    provider: str | None
    kind: str | None  # MANAGED, EXTERNAL, VIEW

    def quoted(self) -> str:
        return _quoted(self.name)


def _quoted(name: str) -> str:
    return ".".join(f"`{part}`" for part in name.split("."))


def _check_name(name: str, flag: str) -> None:
    if not _NAME.match(name):
        raise InputContractError(
            f"{flag} {name!r} is not a table name; pass TABLE or DATABASE.TABLE (letters, "
            "digits and _)"
        )


def describe_table(spark: SparkSession, name: str, flag: str) -> CatalogTable | None:
    """The catalog's description of table ``name``, or ``None`` if it does not exist."""
    _check_name(name, flag)
    if not spark.catalog.tableExists(name):
        return None
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {_quoted(name)}").collect()  # metadata
    info = {str(r[0]).strip(): str(r[1] or "").strip() for r in rows}
    provider = info.get("Provider", "").lower() or None
    return CatalogTable(name, info.get("Location") or None, provider, info.get("Type") or None)


def resolve_input(spark: SparkSession, name: str, fmt: str | None) -> tuple[str, str]:
    """(location, format) of input table ``name``.

    Raises:
        InputContractError: no such table, a view, a format that is not read, or a Delta
            table without ``--input-format delta``.
    """
    flag = "--input-table"
    table = describe_table(spark, name, flag)
    if table is None:
        raise InputContractError(
            f"{flag} {name} does not exist in the session's catalog; create it, or pass --input "
            "PATH"
        )
    if table.location is None:
        raise InputContractError(
            f"{flag} {name} is a {(table.kind or 'view').lower()} without a location; write it "
            "to a table first"
        )
    if table.provider not in READABLE:
        raise InputContractError(
            f"{flag} {name} is stored as {table.provider}; spark_dp reads Parquet and Delta tables"
        )
    if table.provider == "delta" and fmt != "delta":
        raise InputContractError(
            f"{flag} {name} is a Delta table: add --input-format delta (and Delta's jars)"
        )
    if fmt is not None and fmt != table.provider:
        raise InputContractError(
            f"{flag} {name} is stored as {table.provider}, not {fmt}: drop --input-format"
        )
    return table.location, table.provider


def resolve_output(
    spark: SparkSession, name: str, fmt: str, *, overwrite: bool, input_table: str | None
) -> tuple[str, bool]:
    """(location, exists) of output table ``name``: its own location if it exists (and
    ``overwrite``), else ``<its database's location>/<name>``.

    Raises:
        PathConflictError: the output table is the input table.
        OutputExistsError: it exists and ``overwrite`` is not set.
        InputContractError: it exists as a view, or stored in another format than ``fmt``.
    """
    flag = "--output-table"
    _check_name(name, flag)
    if input_table is not None and _qualified(spark, input_table) == _qualified(spark, name):
        raise PathConflictError(
            f"{flag} {name} is the input table; write the release to another table"
        )
    table = describe_table(spark, name, flag)
    if table is not None:
        if not overwrite:
            raise OutputExistsError(
                f"{flag} {name} already exists; pass --overwrite to replace it, or choose "
                "another table"
            )
        if table.location is None or table.provider != fmt:
            raise InputContractError(
                f"{flag} {name} is stored as {table.provider or table.kind}, not as {fmt}; "
                "drop it first or choose another table"
            )
        return table.location, True
    database, _, short = _qualified(spark, name).rpartition(".")
    try:
        root = str(spark.catalog.getDatabase(database).locationUri).rstrip("/")
    except Exception:
        raise InputContractError(
            f"{flag} {name}: database {database} does not exist; create it first"
        ) from None
    return f"{root}/{short}", False


def _qualified(spark: SparkSession, name: str) -> str:
    if "." in name:
        return name.lower()
    return f"{spark.catalog.currentDatabase()}.{name}".lower()


def register_output(spark: SparkSession, name: str, fmt: str, location: str, exists: bool) -> None:
    """After the commit: one catalog operation makes the written location the table ``name``
    (created, or refreshed when it existed)."""
    if exists:
        spark.sql(f"REFRESH TABLE {_quoted(name)}")
        return
    escaped = location.replace("\\", "\\\\").replace("'", "\\'")
    spark.sql(f"CREATE TABLE {_quoted(name)} USING {fmt} LOCATION '{escaped}'")
