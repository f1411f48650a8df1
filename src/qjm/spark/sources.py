"""The PySpark Python data sources: qjm-edits (batch and streaming), qjm-image and
qjm-oiv-delimited. Thin wrappers: options are checked here, the work is in qjm.spark.plan.

spark.read.format("qjm-edits").load("qjournal://h1:8485;h2:8485;h3:8485/jid")
spark.read.format("qjm-image").option("numPartitions", 8).load("fsimage_0000000000000061740")
spark.read.format("qjm-oiv-delimited").load("fsimage.tsv")
spark.readStream.format("qjm-edits").option("startingTxid", "latest").load(DIR_OR_URI)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from qjm.config import SecuritySettings
from qjm.security import tls
from qjm.spark import plan as P
from qjm.spark.rows import to_batches
from qjm.spark.schemas import AUDIT, EDITS, IMAGE, Schema


class Part(InputPartition):
    """An input partition carrying one plan part (a segment, an inode range, a text range)."""

    def __init__(self, value: Any) -> None:
        super().__init__(value)


def _location(options: Mapping[str, str], source: str) -> str:
    loc = options.get("path")
    if not loc:
        raise P.SourceError(
            f"{source}: give a location, e.g. spark.read.format({source!r}).load(PATH)"
        )
    return loc


def _int_option(options: Mapping[str, str], key: str, default: int | None) -> int | None:
    for k, v in options.items():  # Spark passes option keys case-insensitively
        if k.lower() == key.lower():
            try:
                return int(v)
            except ValueError:
                raise P.SourceError(f"option {key} must be a whole number, got {v!r}") from None
    return default


def _option(options: Mapping[str, str], key: str, default: str | None = None) -> str | None:
    for k, v in options.items():
        if k.lower() == key.lower():
            return v
    return default


def _bool_option(options: Mapping[str, str], key: str, default: bool) -> bool:
    v = _option(options, key)
    if v is None:
        return default
    if v.lower() in ("true", "1", "yes"):
        return True
    if v.lower() in ("false", "0", "no"):
        return False
    raise P.SourceError(f"option {key} must be true or false, got {v!r}")


def _trust(ca: str | None) -> None:
    """Make this process's HTTPS clients trust the sslCa option's PEM CA (design §S.13): the
    driver plans and each executor reads, so both call it."""
    if ca:
        tls.configure(SecuritySettings(ssl_ca=ca))


def _fixed(schema: StructType, ours: Schema, source: str) -> None:
    """Refuse a user-given schema that is not the source's own (its columns are fixed)."""
    if schema is not None and [f.name for f in schema.fields] != ours.names:
        raise P.SourceError(
            f"{source} has a fixed schema ({', '.join(ours.names)}); "
            f"got columns {', '.join(f.name for f in schema.fields)}"
        )


# --- qjm-edits ----------------------------------------------------------------------------


class EditsDataSource(DataSource):
    """A row per edit-log op, from a directory of segments, an edits file or a qjournal URI.

    Options: fromTxid, toTxid, inProgress (true), strict (true), sslCa (the PEM CA of
    JournalNodes serving HTTPS, design §S.13); streaming: startingTxid (a txid or
    `latest`, default 1), maxTxidsPerBatch.
    """

    @classmethod
    def name(cls) -> str:
        """The format name."""
        return "qjm-edits"

    def schema(self) -> str:
        """The EDITS schema."""
        return EDITS.ddl()

    def reader(self, schema: StructType) -> DataSourceReader:
        """The batch reader."""
        _fixed(schema, EDITS, "qjm-edits")
        return EditsReader(dict(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """The streaming reader of committed edits by txid."""
        _fixed(schema, EDITS, "qjm-edits")
        return EditsStreamReader(dict(self.options))


def _read_edits(part: P.EditsPart | None) -> Iterator[pa.RecordBatch]:
    return iter(()) if part is None else P.read_edits_batches(part)


def _value(partition: InputPartition | None) -> Any:
    """A partition's plan part; None for the one empty partition Spark reads when a plan has
    none (an empty journal or directory: no rows, not an error)."""
    return None if partition is None else getattr(partition, "value", None)


class EditsReader(DataSourceReader):
    """Plans one partition per segment; reads each into Arrow batches."""

    def __init__(self, options: dict[str, str]) -> None:
        self.location = _location(options, "qjm-edits")
        self.from_txid = _int_option(options, "fromTxid", 1) or 1
        self.to_txid = _int_option(options, "toTxid", None)
        self.in_progress = _bool_option(options, "inProgress", True)
        self.strict = _bool_option(options, "strict", True)
        self.ssl_ca = _option(options, "sslCa")

    def partitions(self) -> Sequence[InputPartition]:
        """One partition per segment."""
        _trust(self.ssl_ca)
        parts = P.plan_edits(
            self.location,
            in_progress=self.in_progress,
            from_txid=self.from_txid,
            to_txid=self.to_txid,
            strict=self.strict,
        )
        return [Part(p) for p in parts]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The rows of one segment."""
        _trust(self.ssl_ca)
        return _read_edits(_value(partition))


class EditsStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Committed edits as a stream; the offset is the next txid to read, {"txid": n}."""

    def __init__(self, options: dict[str, str]) -> None:
        self.location = _location(options, "qjm-edits")
        self.strict = _bool_option(options, "strict", True)
        self.ssl_ca = _option(options, "sslCa")
        self.max_txids = _int_option(options, "maxTxidsPerBatch", None)
        start = (_option(options, "startingTxid", "1") or "1").strip().lower()
        if start != "latest":
            try:
                if int(start) < 1:
                    raise ValueError
            except ValueError:
                raise P.SourceError(
                    f"option startingTxid must be a txid (>= 1) or 'latest', got {start!r}"
                ) from None
        self.starting = start
        self._target: int | None = None

    def _last_txid(self) -> int:
        if P.is_qjournal(self.location):
            return P.last_qjournal_txid(self.location)
        return P.last_local_txid(self.location)

    def initialOffset(self) -> dict[str, int]:
        """Where a new query starts (a restarted one resumes from its checkpoint)."""
        if self.starting == "latest":
            return {"txid": self._last_txid() + 1}
        return {"txid": int(self.starting)}

    def getDefaultReadLimit(self) -> ReadLimit:
        """maxTxidsPerBatch rows per micro-batch when given, else everything available."""
        if self.max_txids is not None:
            return ReadMaxRows(self.max_txids)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """Fix the end of an availableNow run at what is committed now."""
        self._target = self._last_txid() + 1

    def latestOffset(self, start: dict[str, int], limit: ReadLimit) -> dict[str, int]:
        """One past the last committed txid, within the read limit (never before start)."""
        first = int(start["txid"])
        end = self._target if self._target is not None else self._last_txid() + 1
        if isinstance(limit, ReadMaxRows):
            end = min(end, first + limit.max_rows)
        return {"txid": max(end, first)}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
        """One partition per segment holding txids in [start, end)."""
        first, stop = int(start["txid"]), int(end["txid"])
        if stop <= first:
            return []
        _trust(self.ssl_ca)
        parts = P.plan_edits(
            self.location,
            in_progress=True,
            from_txid=first,
            to_txid=stop - 1,
            strict=self.strict,
        )
        return [Part(p) for p in parts]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The rows of one segment within the batch's txids."""
        _trust(self.ssl_ca)
        return _read_edits(_value(partition))

    def commit(self, end: dict[str, int]) -> None:
        """Nothing to release: the journal keeps its segments."""


# --- qjm-image ----------------------------------------------------------------------------


class ImageDataSource(DataSource):
    """A row per inode of an fsimage, read in parallel by ranges of its INODE section.

    Load an image file, a name dir (its newest image) or a NameNode's HTTP address
    (http://host:9870: its latest checkpoint over /imagetransfer, saved in downloadDir,
    default a new temp dir; on a cluster, give a downloadDir every executor can read;
    https://host:9871 with sslCa, the PEM CA to trust, design §S.13).
    Options: numPartitions (default: one per bytesPerPartition, 32 MiB, of the section, and
    at least minPartitions, 1), bytesPerPartition, minPartitions, checkMd5 (true: the .md5
    file, when there is one, must match).
    """

    @classmethod
    def name(cls) -> str:
        """The format name."""
        return "qjm-image"

    def schema(self) -> str:
        """The IMAGE schema."""
        return IMAGE.ddl()

    def reader(self, schema: StructType) -> DataSourceReader:
        """The batch reader."""
        _fixed(schema, IMAGE, "qjm-image")
        return ImageReader(dict(self.options))


class ImageReader(DataSourceReader):
    """Plans byte ranges of the INODE section; reads each into Arrow batches."""

    def __init__(self, options: dict[str, str]) -> None:
        self.location = _location(options, "qjm-image")
        self.num_partitions = _int_option(options, "numPartitions", None)
        self.bytes_per_partition = _int_option(options, "bytesPerPartition", 32 << 20) or 1
        self.min_partitions = _int_option(options, "minPartitions", 1) or 1
        self.check_md5 = _bool_option(options, "checkMd5", True)
        self.download_dir = _option(options, "downloadDir")
        self.ssl_ca = _option(options, "sslCa")

    def partitions(self) -> Sequence[InputPartition]:
        """Ranges of whole inode messages."""
        _trust(self.ssl_ca)
        image = P.resolve_image(self.location, self.download_dir)
        parts = P.plan_image(
            image,
            self.num_partitions,
            self.bytes_per_partition,
            self.check_md5,
            min_partitions=self.min_partitions,
        )
        return [Part(p) for p in parts]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The rows of one range."""
        value = _value(partition)
        return iter(()) if value is None else P.read_inode_batches(value)


# --- qjm-oiv-delimited --------------------------------------------------------------------


class DelimitedDataSource(DataSource):
    """`hdfs oiv -p Delimited` text as IMAGE rows (id, parent_id null; see rows.delimited_row).

    Options: delimiter (tab), timeZone (of the times in the text; default local),
    bytesPerPartition (64 MiB).
    """

    @classmethod
    def name(cls) -> str:
        """The format name."""
        return "qjm-oiv-delimited"

    def schema(self) -> str:
        """The IMAGE schema."""
        return IMAGE.ddl()

    def reader(self, schema: StructType) -> DataSourceReader:
        """The batch reader."""
        _fixed(schema, IMAGE, "qjm-oiv-delimited")
        return DelimitedReader(dict(self.options))


class DelimitedReader(DataSourceReader):
    """Plans byte ranges of each file at line starts."""

    def __init__(self, options: dict[str, str]) -> None:
        self.location = _location(options, "qjm-oiv-delimited")
        self.delimiter = _option(options, "delimiter", "\t") or "\t"
        self.time_zone = _option(options, "timeZone")
        self.bytes_per_partition = _int_option(options, "bytesPerPartition", 64 << 20) or 1

    def partitions(self) -> Sequence[InputPartition]:
        """Byte ranges of the files."""
        parts = P.plan_delimited(
            self.location, self.delimiter, self.bytes_per_partition, self.time_zone
        )
        return [Part(p) for p in parts]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The rows of one range."""
        value = _value(partition)
        return iter(()) if value is None else P.read_text_batches(value)


# --- qjm-journal-audit ---------------------------------------------------------------------


class AuditDataSource(DataSource):
    """A row per JournalNode copy of each finalized segment of a journal, compared record by
    record (status ok, differs, corrupt, unreadable, missing; unreachable for a node that
    did not answer). Load a qjournal:// URI."""

    @classmethod
    def name(cls) -> str:
        """The format name."""
        return "qjm-journal-audit"

    def schema(self) -> str:
        """The AUDIT schema."""
        return AUDIT.ddl()

    def reader(self, schema: StructType) -> DataSourceReader:
        """The batch reader."""
        _fixed(schema, AUDIT, "qjm-journal-audit")
        return AuditReader(dict(self.options))


class AuditReader(DataSourceReader):
    """One partition per finalized segment, and one for the nodes that did not answer."""

    def __init__(self, options: dict[str, str]) -> None:
        self.location = _location(options, "qjm-journal-audit")
        if not P.is_qjournal(self.location):
            raise P.SourceError(f"qjm-journal-audit reads a qjournal:// URI, not {self.location!r}")
        self.ssl_ca = _option(options, "sslCa")

    def partitions(self) -> Sequence[InputPartition]:
        """A partition per segment."""
        from qjm.spark.audit import plan_audit

        _trust(self.ssl_ca)
        plans, down = plan_audit(self.location)
        parts = [Part(p) for p in plans]
        if down:
            parts.append(Part(down))
        return parts

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The rows of one segment's copies (or of the nodes that did not answer)."""
        _trust(self.ssl_ca)
        value = _value(partition)
        if value is None:
            return iter(())
        if isinstance(value, dict):
            rows: Iterator[dict[str, Any]] = iter(
                {"node": node, "status": "unreachable", "ops": 0, "detail": err}
                for node, err in value.items()
            )
        else:
            from qjm.spark.audit import audit_rows

            rows = audit_rows(value)
        return to_batches(rows, AUDIT)


SOURCES: tuple[type[DataSource], ...] = (
    EditsDataSource,
    ImageDataSource,
    DelimitedDataSource,
    AuditDataSource,
)
