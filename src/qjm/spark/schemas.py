"""The fixed schemas of the qjm Spark sources, each column declared once for Arrow and Spark."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa


@dataclass(frozen=True, slots=True)
class Column:
    """One column: its name, Arrow type and Spark DDL type."""

    name: str
    arrow: pa.DataType
    ddl: str


@dataclass(frozen=True, slots=True)
class Schema:
    """An ordered list of columns, as a Spark DDL string and as an Arrow schema."""

    columns: tuple[Column, ...]

    @property
    def names(self) -> list[str]:
        """Column names in order."""
        return [c.name for c in self.columns]

    def ddl(self) -> str:
        """The schema as a Spark DDL string."""
        return ", ".join(f"`{c.name}` {c.ddl}" for c in self.columns)

    def arrow(self) -> pa.Schema:
        """The schema as an Arrow schema."""
        return pa.schema([pa.field(c.name, c.arrow) for c in self.columns])


def _long(name: str) -> Column:
    return Column(name, pa.int64(), "BIGINT")


def _int(name: str) -> Column:
    return Column(name, pa.int32(), "INT")


def _str(name: str) -> Column:
    return Column(name, pa.string(), "STRING")


# A row per edit-log op.
EDITS = Schema(
    (
        _long("txid"),
        _str("opcode"),
        _str("path"),
        _str("destination"),
        _long("timestamp"),
        _str("owner"),
        _str("group"),
        _str("permission"),
        _int("replication"),
        _long("length"),
        _int("block_count"),
        Column("extra", pa.map_(pa.string(), pa.string()), "MAP<STRING, STRING>"),
        _long("segment_start"),
    )
)

# A row per inode of an fsimage; the oiv Delimited reader gives the same columns.
IMAGE = Schema(
    (
        _long("id"),
        _long("parent_id"),
        _str("path"),
        _str("name"),
        _str("type"),
        _long("size"),
        _int("replication"),
        _long("mtime"),
        _long("atime"),
        _long("preferred_block_size"),
        _int("block_count"),
        _str("owner"),
        _str("group"),
        _str("permission"),
        _long("ns_quota"),
        _long("ds_quota"),
        _str("target"),
        Column("under_construction", pa.bool_(), "BOOLEAN"),
        _int("storage_policy_id"),
    )
)

# A row per JournalNode copy of a finalized segment (the journal audit).
AUDIT = Schema(
    (
        _long("segment_start"),
        _long("segment_end"),
        _str("node"),
        _str("status"),
        _long("ops"),
        _str("digest"),
        _long("first_difference_txid"),
        _str("detail"),
    )
)
