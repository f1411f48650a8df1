"""Pure row functions (no Spark): edit ops, image inodes and oiv Delimited lines as rows.

Each row is a dict keyed by the column names of a schema in qjm.spark.schemas; to_batches
turns rows into Arrow record batches of that schema, which is what the sources yield.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pyarrow as pa

from qjm.editlog.framing import RawOp
from qjm.editlog.ops import Op, decode_op
from qjm.editlog.ops.jsonl import _plain, op_to_dict
from qjm.editlog.ops.opcodes import opcode_name
from qjm.editlog.ops.xml import client_id_text
from qjm.errors import EditLogError
from qjm.namenode.image.model import DIRECTORY, FILE, SYMLINK, Inode
from qjm.namenode.image.views import DELIMITED_COLUMNS, permission_string
from qjm.spark.schemas import EDITS, IMAGE, Schema

BATCH_ROWS = 8192

# Op fields that fill a column, in order of preference; every other field goes to `extra`.
_PATH_FIELDS = ("path", "src", "trg", "snapshot_root")
_DEST_FIELDS = ("dst",)
_TIME_FIELDS = ("timestamp", "mtime", "time")
# Ops whose times are what a caller set (setTimes: `-put -p`, distcp -pt), not when the op
# was logged: their `timestamp` is empty and the times go to `extra`, so a report over
# time places no op at a chosen date.
_CALLER_TIMES = frozenset({"OP_TIMES"})
_OWNER_FIELDS = ("username", "owner_name")
_GROUP_FIELDS = ("groupname", "group_name")
_MODE_FIELDS = ("mode",)
# The legacy record-length field of some ops (always 0 at layout -64) and fields shown
# in columns are left out of `extra`.
_COLUMN_FIELDS = frozenset(
    (
        *_PATH_FIELDS,
        *_DEST_FIELDS,
        *_TIME_FIELDS,
        *_OWNER_FIELDS,
        *_GROUP_FIELDS,
        *_MODE_FIELDS,
        "permission_status",
        "replication",
        "blocks",
        "length",
    )
)


def _first(d: dict[str, Any], names: Sequence[str]) -> Any:
    for n in names:
        v = d.get(n)
        if v is not None:
            return v
    return None


def _text(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def _empty_edit_row(txid: int, opcode: str, segment_start: int | None) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(EDITS.names)
    row.update(txid=txid, opcode=opcode, extra={}, segment_start=segment_start)
    return row


def edit_row(txid: int, op: Op, segment_start: int | None = None) -> dict[str, Any]:
    """One EDITS row for a decoded op: the common columns, every other field in `extra`."""
    d = op_to_dict(txid, op)
    row = _empty_edit_row(txid, op.opcode_name, segment_start)
    row["path"] = _first(d, _PATH_FIELDS)
    row["destination"] = _first(d, _DEST_FIELDS)
    caller_times = op.opcode_name in _CALLER_TIMES
    row["timestamp"] = None if caller_times else _first(d, _TIME_FIELDS)
    perm = d.get("permission_status")
    if perm is not None:
        row["owner"], row["group"] = perm["username"], perm["groupname"]
        mode = perm["mode"]
    else:
        row["owner"], row["group"] = _first(d, _OWNER_FIELDS), _first(d, _GROUP_FIELDS)
        mode = _first(d, _MODE_FIELDS)
    row["permission"] = None if mode is None else permission_string(mode)
    row["replication"] = d.get("replication")
    blocks = d.get("blocks")
    if blocks is None:  # OP_ADD_BLOCK names its last one or two blocks
        blocks = [b for b in (d.get("penultimate_block"), d.get("last_block")) if b is not None]
        if not blocks and "last_block" not in d:
            blocks = None
    if blocks is not None:
        row["block_count"] = len(blocks)
        row["length"] = sum(b["num_bytes"] for b in blocks)
    if "new_length" in d:  # OP_TRUNCATE
        row["length"] = d["new_length"]
    row["extra"] = {
        k: _text(v)
        for k, v in d.items()
        if (k not in _COLUMN_FIELDS or (caller_times and k in _TIME_FIELDS))
        and k not in ("txid", "opcode")
        and v not in (None, [], "")
    }
    return row


def raw_edit_row(
    raw: RawOp, segment_start: int | None = None, strict: bool = True
) -> dict[str, Any]:
    """The EDITS row of a framed op; with strict=False an op that does not decode is kept
    as its opcode with `body_hex` and `decode_error` in `extra` instead of raising."""
    try:
        return edit_row(raw.txid, decode_op(raw), segment_start)
    except EditLogError as e:
        if strict:
            raise
        row = _empty_edit_row(raw.txid, opcode_name(raw.opcode), segment_start)
        row["extra"] = {"body_hex": raw.body.hex(), "decode_error": str(e)}
        return row


def inode_row(node: Inode, path: str | None, parent_id: int | None) -> dict[str, Any]:
    """One IMAGE row for an inode, its full path (None outside the tree) and its parent."""
    is_file = node.type == FILE
    is_dir = node.type == DIRECTORY
    return {
        "id": node.id,
        "parent_id": parent_id,
        "path": path,
        "name": node.name,
        "type": node.type,
        "size": node.size if is_file else 0,
        "replication": node.replication if is_file else 0,
        "mtime": node.mtime,
        "atime": 0 if is_dir else node.atime,
        "preferred_block_size": node.preferred_block_size if is_file else 0,
        "block_count": len(node.blocks) if is_file else 0,
        "owner": node.user,
        "group": node.group,
        "permission": permission_string(node.mode),
        "ns_quota": node.ns_quota if is_dir else None,
        "ds_quota": node.ds_quota if is_dir else None,
        "target": node.target if node.type == SYMLINK else None,
        "under_construction": node.client_name is not None,
        "storage_policy_id": node.storage_policy_id if is_file else None,
    }


# --- edits, columnar ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _OpShape:
    """Where an op class keeps each EDITS column (field names), and its other fields."""

    path: str | None
    dest: str | None
    time: str | None
    owner: str | None
    group: str | None
    mode: str | None
    perm_status: bool
    replication: bool
    blocks: bool
    add_block: bool
    new_length: bool
    extra: tuple[str, ...]


_SHAPES: dict[type, _OpShape] = {}


def _op_shape(cls: type) -> _OpShape:
    shape = _SHAPES.get(cls)
    if shape is not None:
        return shape
    names = [f.name for f in dataclasses.fields(cls)]
    caller_times = opcode_name(getattr(cls, "OPCODE", -1)) in _CALLER_TIMES

    def one(cands: Sequence[str]) -> str | None:
        return next((c for c in cands if c in names), None)

    shape = _OpShape(
        path=one(_PATH_FIELDS),
        dest=one(_DEST_FIELDS),
        time=None if caller_times else one(_TIME_FIELDS),
        owner=one(_OWNER_FIELDS),
        group=one(_GROUP_FIELDS),
        mode=one(_MODE_FIELDS),
        perm_status="permission_status" in names,
        replication="replication" in names,
        blocks="blocks" in names,
        add_block="last_block" in names,
        new_length="new_length" in names,
        extra=tuple(
            n for n in names if n not in _COLUMN_FIELDS or (caller_times and n in _TIME_FIELDS)
        ),
    )
    _SHAPES[cls] = shape
    return shape


def _extra_text(name: str, v: Any) -> str | None:
    """A field's `extra` text as edit_row gives it (None: left out)."""
    if v is None:
        return None
    if isinstance(v, str):
        return v or None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, bytes):
        text = client_id_text(v) if name == "rpc_client_id" else v.hex()
        return text or None
    if isinstance(v, tuple) and not v:
        return None
    return _text(_plain(v))


class EditColumns:
    """EDITS columns filled op by op, emptied into Arrow batches."""

    def __init__(self) -> None:
        self.arrow = EDITS.arrow()
        self.cols: list[list[Any]] = [[] for _ in EDITS.names]
        self.perms: dict[int, str] = {}

    def __len__(self) -> int:
        return len(self.cols[0])

    def add(self, txid: int, op: Op, segment_start: int | None) -> None:
        """Append the row of a decoded op."""
        shape = _op_shape(type(op))
        get = op.__getattribute__
        (c_txid, c_op, c_path, c_dest, c_time, c_owner, c_group, c_perm, c_repl, c_len,
         c_blocks, c_extra, c_seg) = self.cols  # fmt: skip
        c_txid.append(txid)
        c_op.append(op.opcode_name)
        c_path.append(get(shape.path) if shape.path else None)
        c_dest.append(get(shape.dest) if shape.dest else None)
        c_time.append(get(shape.time) if shape.time else None)
        mode: int | None
        if shape.perm_status:
            ps = get("permission_status")
            c_owner.append(ps.username)
            c_group.append(ps.groupname)
            mode = ps.mode
        else:
            c_owner.append(get(shape.owner) if shape.owner else None)
            c_group.append(get(shape.group) if shape.group else None)
            mode = get(shape.mode) if shape.mode else None
        if mode is None:
            c_perm.append(None)
        else:
            perm = self.perms.get(mode)
            if perm is None:
                perm = self.perms[mode] = permission_string(mode)
            c_perm.append(perm)
        c_repl.append(get("replication") if shape.replication else None)
        length: int | None = None
        count: int | None = None
        if shape.blocks:
            blocks = get("blocks")
            count = len(blocks)
            length = sum(b.num_bytes for b in blocks)
        elif shape.add_block:
            bs = [b for b in (get("penultimate_block"), get("last_block")) if b is not None]
            count = len(bs)
            length = sum(b.num_bytes for b in bs)
        if shape.new_length:
            length = get("new_length")
        c_len.append(length)
        c_blocks.append(count)
        extra = {}
        for name in shape.extra:
            text = _extra_text(name, get(name))
            if text is not None:
                extra[name] = text
        c_extra.append(extra)
        c_seg.append(segment_start)

    def add_row(self, row: dict[str, Any]) -> None:
        """Append a row built by raw_edit_row (an op that did not decode)."""
        for col, name in zip(self.cols, EDITS.names, strict=True):
            col.append(row.get(name))

    def batch(self) -> pa.RecordBatch:
        """The rows so far as a batch; the columns start empty again."""
        out = pa.RecordBatch.from_arrays(
            [pa.array(c, type=f.type) for c, f in zip(self.cols, self.arrow, strict=True)],
            schema=self.arrow,
        )
        for c in self.cols:
            c.clear()
        return out


# --- oiv -p Delimited -------------------------------------------------------------------

# Delimited header name -> IMAGE column.
DELIMITED_TO_IMAGE = {
    "Path": "path",
    "Replication": "replication",
    "ModificationTime": "mtime",
    "AccessTime": "atime",
    "PreferredBlockSize": "preferred_block_size",
    "BlocksCount": "block_count",
    "FileSize": "size",
    "NSQUOTA": "ns_quota",
    "DSQUOTA": "ds_quota",
    "Permission": "permission",
    "UserName": "owner",
    "GroupName": "group",
}
_TIME_COLUMNS = frozenset(("mtime", "atime"))
_STRING_COLUMNS = frozenset(("path", "permission", "owner", "group"))


class DelimitedError(ValueError):
    """A line that is not a row of `oiv -p Delimited` output."""


def is_delimited_header(line: str, delimiter: str = "\t") -> bool:
    """True for the header line `hdfs oiv -p Delimited` writes first."""
    return line.split(delimiter, 1)[0] == DELIMITED_COLUMNS[0]


def delimited_columns(header: str | None, delimiter: str = "\t") -> list[str | None]:
    """IMAGE column of each field, from a header line (None: HDFS's default columns);
    fields the IMAGE schema has no column for map to None."""
    names = list(DELIMITED_COLUMNS) if header is None else header.rstrip("\r\n").split(delimiter)
    cols = [DELIMITED_TO_IMAGE.get(n) for n in names]
    if "path" not in cols:
        raise DelimitedError(f"the header has no {DELIMITED_COLUMNS[0]} column: {header!r}")
    return cols


def parse_delimited_time(text: str, tz: ZoneInfo | None = None) -> int:
    """A Delimited `yyyy-MM-dd HH:mm` time (in tz, default local time) as epoch ms."""
    if tz is None:
        return int(time.mktime(time.strptime(text, "%Y-%m-%d %H:%M"))) * 1000
    dt = datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=tz)
    return int(dt.timestamp()) * 1000


def delimited_row(
    line: str, columns: Sequence[str | None], delimiter: str = "\t", tz: ZoneInfo | None = None
) -> dict[str, Any]:
    """One IMAGE row from a Delimited line; columns Delimited lacks are null, the type
    comes from the permission's `d` prefix (symlinks read as FILE: Delimited cannot tell)."""
    fields = line.rstrip("\r\n").split(delimiter)
    if len(fields) != len(columns):
        # A path holding the delimiter: the extra fields belong to the path.
        extra = len(fields) - len(columns)
        p = columns.index("path")
        if extra < 0 or p != 0:
            raise DelimitedError(f"expected {len(columns)} fields, got {len(fields)}: {line!r}")
        fields = [delimiter.join(fields[: extra + 1]), *fields[extra + 1 :]]
    row: dict[str, Any] = dict.fromkeys(IMAGE.names)
    try:
        for col, text in zip(columns, fields, strict=True):
            if col is None:
                continue
            if col in _STRING_COLUMNS:
                row[col] = text
            elif col in _TIME_COLUMNS:
                row[col] = parse_delimited_time(text, tz)
            else:
                row[col] = int(text)
    except ValueError as e:
        raise DelimitedError(f"bad field ({e}) in line {line!r}") from None
    perm = row["permission"]
    if perm is not None:
        row["type"] = DIRECTORY if perm.startswith("d") else FILE
        row["permission"] = perm[1:] if len(perm) == 10 else perm
    path = row["path"]
    if path is not None:
        row["name"] = "" if path == "/" else path.rsplit("/", 1)[-1]
    if row["type"] == FILE:
        row["ns_quota"] = row["ds_quota"] = None
    return row


# --- Arrow ------------------------------------------------------------------------------


def to_batches(
    rows: Iterable[dict[str, Any]], schema: Schema, batch_rows: int = BATCH_ROWS
) -> Iterator[pa.RecordBatch]:
    """Arrow record batches of at most batch_rows rows (none for no rows)."""
    arrow = schema.arrow()
    names = schema.names
    cols: dict[str, list[Any]] = {n: [] for n in names}
    n = 0
    for row in rows:
        for name in names:
            cols[name].append(row.get(name))
        n += 1
        if n >= batch_rows:
            yield pa.RecordBatch.from_pydict(cols, schema=arrow)
            cols = {name: [] for name in names}
            n = 0
    if n:
        yield pa.RecordBatch.from_pydict(cols, schema=arrow)
