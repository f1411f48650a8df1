"""Pure planning and reading for the Spark sources (no Spark): what each partition reads.

Everything a task needs travels in its partition (a picklable dataclass): pyspark pickles
the reader before it plans the partitions, so state kept on the reader would not reach it.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import hashlib
import itertools
import json
import os
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import pyarrow as pa
from google.protobuf.message import DecodeError

from qjm.editlog.file_names import image_file_name, parse_image_name
from qjm.editlog.framing import HEADER_LEN, RawOp, iter_ops, read_header
from qjm.editlog.ops import decode_op
from qjm.editlog.segments import list_segments, parse_segment_name, txid_run
from qjm.errors import CorruptOpError, EditLogError, QjmError
from qjm.namenode.image import fsimage_pb2 as pb
from qjm.namenode.image.format import (
    INODE,
    INODE_DIR,
    INODE_REFERENCE,
    STRING_TABLE,
    ImageError,
    SectionInfo,
    iter_delimited,
    parse,
    read_varint,
    signed64,
)
from qjm.namenode.image.md5 import verify_md5, write_md5_file
from qjm.namenode.image.model import ROOT_INODE_ID
from qjm.namenode.image.sections import (
    decode_string_table,
    inode_from_proto,
    iter_dir_entries,
    iter_references,
    parents_of,
    read_section,
    read_summary_from_file,
)
from qjm.namenode.image.views import permission_string
from qjm.security import tls
from qjm.spark import rows as R
from qjm.spark.schemas import IMAGE

if TYPE_CHECKING:  # the journal client (aiohttp and all) is imported only to read a journal
    from qjm.client.edit_streams import SegmentSource
    from qjm.config import QJournalSettings

SCHEME = "qjournal://"  # qjm.client.uri.SCHEME, without importing the journal client
_DIRECTORY_TYPE = 2  # INodeSection.INode.Type.DIRECTORY


class SourceError(QjmError):
    """A Spark source was given something it cannot read; the message says what."""


# --- edits --------------------------------------------------------------------------------


@dataclass(frozen=True)
class EditsPart:
    """One segment to read: a local file or a journal segment on JournalNodes."""

    start: int | None  # first txid, when the name or the manifest says
    end: int | None  # last txid (None: in progress or unknown)
    path: str | None = None  # a local file
    remote: SegmentSource | None = None  # a journal segment
    from_txid: int = 1
    to_txid: int | None = None
    strict: bool = True
    http_timeout_s: float = 60.0


def is_qjournal(location: str) -> bool:
    """True when a location is a qjournal:// URI."""
    return location.startswith(SCHEME)


def plan_local_edits(
    location: str,
    *,
    in_progress: bool = True,
    from_txid: int = 1,
    to_txid: int | None = None,
    strict: bool = True,
) -> list[EditsPart]:
    """One part per segment file of a directory, or one for a single edits file; the open
    segment of a JournalNode's current/ is read up to its committed-txid."""
    p = Path(location)
    if p.is_file():
        seg = parse_segment_name(p)
        start, end = (seg.start, seg.end) if seg else (None, None)
        return [EditsPart(start, end, str(p), None, from_txid, to_txid, strict)]
    if not p.is_dir():
        raise SourceError(f"{location}: no such edits file or directory")
    found = [s for s in list_segments(p) if in_progress or not s.in_progress]
    committed = _committed_txid(p)
    parts = []
    for seg in txid_run(found, from_txid, to_txid).segments:
        last = to_txid
        if seg.end is None and committed is not None:
            # A JournalNode's open segment: only what it knows to be committed.
            if committed < max(seg.start, from_txid):
                continue
            last = committed if last is None else min(last, committed)
        parts.append(EditsPart(seg.start, seg.end, str(seg.path), None, from_txid, last, strict))
    return parts


def _committed_txid(directory: Path) -> int | None:
    """A JournalNode's committed-txid file (8 bytes, big-endian), when the dir has one."""
    try:
        data = (directory / "committed-txid").read_bytes()
    except OSError:
        return None
    return int.from_bytes(data, "big", signed=True) if len(data) == 8 else None


def plan_qjournal_edits(
    location: str,
    *,
    in_progress: bool = True,
    from_txid: int = 1,
    to_txid: int | None = None,
    strict: bool = True,
    settings: QJournalSettings | None = None,
) -> list[EditsPart]:
    """One part per segment of the journal's manifest (durable edits only)."""
    from qjm.client.reader import QuorumJournalReader
    from qjm.client.uri import parse_qjournal_uri
    from qjm.config import QJournalSettings

    uri = parse_qjournal_uri(location)
    cfg = settings or QJournalSettings()

    async def manifest() -> list[SegmentSource]:
        async with QuorumJournalReader(uri, cfg) as reader:
            # Asked again until the deadline while committed txids are missing (a writer
            # racing the answers), as QuorumJournalReader.read does.
            return (await reader._complete_manifest(from_txid, in_progress, to_txid)).segments

    segs = asyncio.run(manifest())
    return [
        EditsPart(s.start, s.end, None, s, from_txid, to_txid, strict, cfg.http_timeout_ms / 1000)
        for s in segs
        if to_txid is None or s.start <= to_txid
    ]


def plan_edits(location: str, **kw: Any) -> list[EditsPart]:
    """Parts of a directory, an edits file or a qjournal:// URI."""
    if is_qjournal(location):
        return plan_qjournal_edits(location, **kw)
    return plan_local_edits(location, **kw)


def rolled_segment(path: Path, start: int) -> Path | None:
    """The finalized segment an in-progress one starting at start became (edits_<start>-<end>
    beside it), None when there is none (not rolled yet, or purged)."""
    try:
        segments = list_segments(path.parent)
    except OSError:
        return None
    found = [s.path for s in segments if s.start == start and not s.in_progress]
    return Path(found[0]) if found else None


def _local_raw_ops(part: EditsPart) -> Iterator[RawOp]:
    assert part.path is not None
    path = Path(part.path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        # an in-progress segment rolled between planning and reading: read it under its
        # finalized name (the part's to_txid still bounds what is read)
        rolled = rolled_segment(path, part.start) if part.end is None and part.start else None
        if rolled is None:
            raise SourceError(
                f"cannot read edits file {part.path}: it is gone (finalized and purged, or "
                "the directory changed); plan the read again"
            ) from None
        try:
            data = rolled.read_bytes()
        except OSError as e:
            raise SourceError(f"cannot read edits file {rolled}: {e.strerror or e}") from None
    except OSError as e:
        raise SourceError(f"cannot read edits file {part.path}: {e.strerror or e}") from None
    if part.end is None and len(data) < HEADER_LEN:
        return  # an in-progress segment created but not yet written
    read_header(data)
    try:
        yield from iter_ops(data, HEADER_LEN)
    except CorruptOpError as e:
        if part.end is not None or part.start is None:
            raise CorruptOpError(f"{part.path}: {e}", offset=e.offset, txid=e.txid) from None
        # An in-progress segment ends at its last whole op (a torn write).


async def _remote_ops(part: EditsPart) -> list[RawOp]:
    import aiohttp

    from qjm.client.edit_streams import read_segment

    assert part.remote is not None
    t = part.http_timeout_s
    timeout = aiohttp.ClientTimeout(total=None, connect=t, sock_read=t)
    async with aiohttp.ClientSession(timeout=timeout, connector=tls.connector()) as session:
        return [op async for op in read_segment(session, part.remote, part.from_txid, part.to_txid)]


def _part_raw_ops(part: EditsPart) -> Iterator[RawOp]:
    """The framed ops of a part within from_txid..to_txid."""
    raws: Iterator[RawOp] | list[RawOp]
    raws = asyncio.run(_remote_ops(part)) if part.remote is not None else _local_raw_ops(part)
    for raw in raws:
        if raw.txid < part.from_txid:
            continue
        if part.to_txid is not None and raw.txid > part.to_txid:
            break
        yield raw


def read_edits_part(part: EditsPart) -> Iterator[dict[str, Any]]:
    """The EDITS rows of one part, from_txid..to_txid (a dict per op)."""
    seg_start = part.start
    for raw in _part_raw_ops(part):
        if seg_start is None:
            seg_start = raw.txid  # a file not named as a segment: its first txid
        yield R.raw_edit_row(raw, seg_start, part.strict)


def read_edits_batches(part: EditsPart, batch_rows: int = R.BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """The EDITS rows of one part as Arrow batches (the values of read_edits_part)."""
    seg_start = part.start
    cols = R.EditColumns()
    for raw in _part_raw_ops(part):
        if seg_start is None:
            seg_start = raw.txid
        try:
            op = decode_op(raw)
        except EditLogError:
            cols.add_row(R.raw_edit_row(raw, seg_start, part.strict))  # raises when strict
        else:
            cols.add(raw.txid, op, seg_start)
        if len(cols) >= batch_rows:
            yield cols.batch()
    if len(cols):
        yield cols.batch()


def last_local_txid(location: str) -> int:
    """The last txid a directory (or edits file) holds, 0 when none."""
    last = 0
    for part in plan_local_edits(location):
        if part.end is not None:
            last = max(last, part.end)
            continue
        for raw in _part_raw_ops(part):
            last = max(last, raw.txid)
    return last


def last_qjournal_txid(location: str, settings: QJournalSettings | None = None) -> int:
    """The last committed txid a majority of the journal's JournalNodes holds."""
    from qjm.client.reader import IncompleteReadError, QuorumJournalReader
    from qjm.client.uri import parse_qjournal_uri
    from qjm.config import QJournalSettings

    uri = parse_qjournal_uri(location)

    async def go() -> int:
        async with QuorumJournalReader(uri, settings or QJournalSettings()) as reader:
            try:
                return (await reader.manifest(1, True)).last_txid()
            except IncompleteReadError:  # committed edits still on their way: finalized ones
                return (await reader.manifest(1, False)).last_txid()

    return asyncio.run(go())


# --- fsimage ------------------------------------------------------------------------------


def newest_image_in(directory: Path) -> Path:
    """The newest fsimage_<txid> of a name dir (or of its current/)."""
    d = directory / "current" if (directory / "current").is_dir() else directory
    found = sorted(
        (txid, c)
        for c in d.iterdir()
        if (txid := parse_image_name(c.name)) is not None and c.is_file()
    )
    if not found:
        raise SourceError(f"{directory}: no fsimage_<txid> file in it")
    return found[-1][1]


def fetch_image(url: str, download_dir: str | None = None, timeout_s: float = 600.0) -> Path:
    """Download an image from a NameNode's /imagetransfer (a bare http://host:port asks for
    the latest), check its MD5 and keep it as fsimage_<txid> (+ .md5) in download_dir."""
    parsed = urllib.parse.urlsplit(url)
    if parsed.path in ("", "/"):
        url = urllib.parse.urlunsplit(
            (parsed.scheme, parsed.netloc, "/imagetransfer", "getimage=1&txid=latest", "")
        )
    target_dir = Path(download_dir or tempfile.mkdtemp(prefix="qjm-image-"))
    target_dir.mkdir(parents=True, exist_ok=True)
    try:
        with tls.urlopen(url, timeout_s) as resp:
            txid = int(resp.headers.get("X-Image-Txid", "0"))
            md5 = resp.headers.get("X-MD5-Digest")
            name = resp.headers.get("X-Image-File") or image_file_name(txid)
            modified = resp.headers.get("Last-Modified")
            if parse_image_name(name) is None:
                raise SourceError(f"{url} sent an image named {name!r}")
            path = target_dir / name
            digest = hashlib.md5()
            with open(path, "wb") as f:
                while chunk := resp.read(1 << 20):
                    digest.update(chunk)
                    f.write(chunk)
    except urllib.error.HTTPError as e:
        body = e.read()[:300].decode("utf-8", "replace")
        raise SourceError(f"cannot fetch the image from {url}: HTTP {e.code}: {body}") from None
    except (OSError, ValueError) as e:
        raise SourceError(f"cannot fetch the image from {url}: {e}") from None
    if md5 is not None and digest.hexdigest() != md5.lower():
        raise SourceError(
            f"the image from {url} has MD5 {digest.hexdigest()}, the NameNode said {md5}"
        )
    write_md5_file(path, digest.hexdigest())
    if modified:  # the copy is as old as the checkpoint it copies (its age in the report)
        with contextlib.suppress(TypeError, ValueError, OSError):
            written = email.utils.parsedate_to_datetime(modified).timestamp()
            os.utime(path, (written, written))
    return path


def image_facts(image: str, now_s: float) -> dict[str, Any]:
    """What a namespace report says of its image: the txid it holds (from its file name)
    and how long before now_s it was written (the checkpoint's age)."""
    p = Path(image)
    facts: dict[str, Any] = {"image": p.name, "image_txid": parse_image_name(p.name)}
    with contextlib.suppress(OSError):
        facts["image_age_s"] = max(0, round(now_s - p.stat().st_mtime))
    return facts


def namenode_position(url: str, timeout_s: float = 30.0) -> dict[str, Any]:
    """Where the NameNode at url (http://host:port) is now: its last applied txid and its
    inode count, from its /status; empty when it does not answer (the report says so)."""
    parsed = urllib.parse.urlsplit(url)
    status = urllib.parse.urlunsplit((parsed.scheme, parsed.netloc, "/status", "", ""))
    try:
        with urllib.request.urlopen(status, timeout=timeout_s) as resp:
            body = json.loads(resp.read())
        return {
            "namenode_txid": int(body["last_applied_txid"]),
            "namenode_inodes": int(body["inodes"]),
        }
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def resolve_image(location: str, download_dir: str | None = None) -> str:
    """An image file from a file, a name dir (its newest image) or a NameNode's HTTP address."""
    if location.startswith(("http://", "https://")):
        return str(fetch_image(location, download_dir))
    p = Path(location)
    if p.is_dir():
        return str(newest_image_in(p))
    return location


@dataclass(frozen=True)
class InodeRange:
    """A byte range of the INODE section (whole messages) and what resolves their paths."""

    image: str
    section: SectionInfo
    strings: SectionInfo | None
    codec: str | None
    start: int  # offsets in the (decompressed) section
    end: int
    parents: dict[int, int] = field(default_factory=dict)  # inode id -> parent directory
    parent_paths: dict[int, str] = field(default_factory=dict)  # directory id -> full path


def _scan_inodes(raw: bytes, pos: int) -> tuple[list[int], list[int], list[int]]:
    """The offset and id of every INode message from pos on, and the offsets of the
    directories', reading only each message's length, type and id (one loop, no copies)."""
    offsets: list[int] = []
    ids: list[int] = []
    dirs: list[int] = []
    add_offset, add_id = offsets.append, ids.append
    end = len(raw)
    try:
        while pos < end:
            n = raw[pos]
            p = pos + 1
            if n >= 0x80:
                n, p = read_varint(raw, pos)
            if p + n > end:
                raise ImageError(f"section {INODE} is truncated at byte {pos}", INODE)
            # HDFS writes field 1 (type) then 2 (id) first; anything else is parsed.
            if n >= 3 and raw[p] == 0x08 and raw[p + 2] == 0x10:
                kind = raw[p + 1]
                node_id = raw[p + 3]
                if node_id >= 0x80:  # ids of 2 or 3 bytes inline (HDFS's start at 16385)
                    b = raw[p + 4]
                    if b < 0x80:
                        node_id = (node_id & 0x7F) | b << 7
                    elif raw[p + 5] < 0x80:
                        node_id = (node_id & 0x7F) | (b & 0x7F) << 7 | raw[p + 5] << 14
                    else:
                        node_id, _ = read_varint(raw, p + 3)
            else:
                m: Any = parse(pb.INodeSection.INode, raw[p : p + n], INODE, "inode")
                kind, node_id = m.type, m.id
            add_offset(pos)
            add_id(node_id)
            if kind == _DIRECTORY_TYPE:
                dirs.append(pos)
            pos = p + n
    except (IndexError, ValueError):
        raise ImageError(f"section {INODE} is corrupt: bad message at byte {pos}", INODE) from None
    return offsets, ids, dirs


def plan_image(
    image: str,
    num_partitions: int | None = None,
    bytes_per_partition: int = 32 << 20,
    check_md5: bool = True,
    *,
    min_partitions: int = 1,
) -> list[InodeRange]:
    """Split an image's INODE section at message boundaries into byte ranges, with the
    parent and parent path of each inode (directory names are the only inodes parsed)."""
    if not Path(image).is_file():
        raise SourceError(f"{image}: no such image file")
    if check_md5:
        verify_md5(image)
    summary = read_summary_from_file(image)
    info = summary.section(INODE)
    if info is None:
        raise ImageError("the image has no INODE section", INODE)
    codec = summary.codec
    raw = read_section(image, info, codec)
    head_len, pos = read_varint(raw, 0)
    header: Any = parse(pb.INodeSection, raw[pos : pos + head_len], INODE, "INodeSection header")
    pos += head_len
    offsets, ids, dir_offsets = _scan_inodes(raw, pos)
    dir_names: dict[int, str] = {}
    for off in dir_offsets:
        n, p = read_varint(raw, off)
        m: Any = parse(pb.INodeSection.INode, raw[p : p + n], INODE, "inode")
        dir_names[m.id] = bytes(m.name).decode("utf-8", "surrogateescape")
    end = len(raw)
    if len(ids) != header.numInodes:
        raise ImageError(
            f"section {INODE} holds {len(ids)} inodes but its header says {header.numInodes}",
            INODE,
        )
    parents = _image_parents(
        image, summary.section(INODE_DIR), summary.section(INODE_REFERENCE), codec
    )
    dir_paths = _directory_paths(dir_names, parents)
    if num_partitions is None:
        num_partitions = max(min_partitions, -(-end // bytes_per_partition))
    num_partitions = max(1, min(num_partitions, len(ids) or 1))
    cuts = [0]
    body = end - (offsets[0] if offsets else end)
    for k in range(1, num_partitions):
        target = (offsets[0] if offsets else 0) + body * k // num_partitions
        i = bisect_left(offsets, target)
        if cuts[-1] < i < len(offsets):
            cuts.append(i)
    cuts.append(len(offsets))
    strings = summary.section(STRING_TABLE)
    out = []
    for a, b in itertools.pairwise(cuts):
        if a == b:
            continue
        part_parents = {i: parents[i] for i in ids[a:b] if i in parents}
        part_paths = {d: dir_paths[d] for d in set(part_parents.values()) if d in dir_paths}
        stop = offsets[b] if b < len(offsets) else end
        out.append(
            InodeRange(image, info, strings, codec, offsets[a], stop, part_parents, part_paths)
        )
    if not out:  # an image without inodes: one empty range
        out.append(InodeRange(image, info, strings, codec, end, end))
    return out


def _image_parents(
    image: str, dirs: SectionInfo | None, refs: SectionInfo | None, codec: str | None
) -> dict[int, int]:
    if dirs is None:
        return {}
    references = list(iter_references(read_section(image, refs, codec))) if refs else []
    return parents_of(iter_dir_entries(read_section(image, dirs, codec)), references)


def _directory_paths(dir_names: dict[int, str], parents: dict[int, int]) -> dict[int, str]:
    """Full path of every directory reachable from the root."""
    paths = {ROOT_INODE_ID: "/"}
    for d in dir_names:
        chain: list[int] = []
        cur = d
        while cur not in paths:
            parent = parents.get(cur)
            if parent is None or cur not in dir_names or len(chain) > len(dir_names):
                chain = []
                break  # outside the tree (or a cycle in a damaged image)
            chain.append(cur)
            cur = parent
        else:
            base = paths[cur]
            for c in reversed(chain):
                base = f"{base.rstrip('/')}/{dir_names[c]}"
                paths[c] = base
    return paths


def _inode_messages(part: InodeRange) -> tuple[dict[int, str], Iterator[bytes]]:
    """The string table and the raw INode messages of a range."""
    strings = (
        decode_string_table(read_section(part.image, part.strings, part.codec))
        if part.strings
        else {}
    )
    if part.codec:
        buf = read_section(part.image, part.section, part.codec)[part.start : part.end]
    else:
        try:
            with open(part.image, "rb") as f:
                f.seek(part.section.offset + part.start)
                buf = f.read(part.end - part.start)
        except OSError as e:
            raise ImageError(f"cannot read image {part.image}: {e.strerror or e}") from None
        if len(buf) != part.end - part.start:
            raise ImageError(f"image {part.image} is truncated in section {INODE}", INODE)
    return strings, iter_delimited(buf, INODE)


def _path_of(part: InodeRange, node_id: int, name: str) -> tuple[str | None, int | None]:
    parent = part.parents.get(node_id)
    if node_id == ROOT_INODE_ID:
        return "/", parent
    base = part.parent_paths.get(parent) if parent is not None else None
    return (None if base is None else f"{base.rstrip('/')}/{name}"), parent


def read_inode_range(part: InodeRange) -> Iterator[dict[str, Any]]:
    """The IMAGE rows of one range of the INODE section (via the Inode model)."""
    strings, messages = _inode_messages(part)
    for msg in messages:
        node = inode_from_proto(parse(pb.INodeSection.INode, msg, INODE, "inode"), strings)
        path, parent = _path_of(part, node.id, node.name)
        yield R.inode_row(node, path, parent)


def _owner(strings: dict[int, str], sid: int, what: str, node_id: int) -> str:
    s = strings.get(sid)
    if s is None:
        raise ImageError(
            f"section {INODE} refers to string id {sid} ({what} of inode {node_id}) missing "
            f"from {STRING_TABLE}",
            INODE,
        )
    return s


def read_inode_batches(
    part: InodeRange, batch_rows: int = R.BATCH_ROWS
) -> Iterator[pa.RecordBatch]:
    """The IMAGE rows of one range as Arrow batches, straight from the protobuf messages
    (the same values as read_inode_range, without building a row per inode)."""
    strings, messages = _inode_messages(part)
    names = IMAGE.names
    arrow = IMAGE.arrow()
    cols: list[list[Any]] = [[] for _ in names]
    (
        c_id,
        c_parent,
        c_path,
        c_name,
        c_type,
        c_size,
        c_repl,
        c_mtime,
        c_atime,
        c_pbs,
        c_blocks,
        c_owner,
        c_group,
        c_perm,
        c_nsq,
        c_dsq,
        c_target,
        c_uc,
        c_sp,
    ) = cols
    inode_cls = pb.INodeSection.INode
    from_string = inode_cls.FromString
    # (owner, group, permission text) by the packed permission: few distinct values.
    owners: dict[int, tuple[str, str, str]] = {}
    parents, parent_paths = part.parents, part.parent_paths
    n = 0
    for msg in messages:
        try:
            m: Any = from_string(msg)
        except DecodeError:
            m = parse(inode_cls, msg, INODE, "inode")  # raises, naming the section
        kind = m.type
        node_id = m.id
        name = m.name.decode("utf-8", "surrogateescape")
        if kind == 1:
            f = m.file
            permission = f.permission
            blocks = f.blocks
            nblocks = len(blocks)
            size = blocks[0].numBytes if nblocks == 1 else sum(b.numBytes for b in blocks)
            if size >= 1 << 63:
                size = sum(signed64(b.numBytes) for b in blocks)
            c_type.append("FILE")
            c_size.append(size)
            c_repl.append(f.replication)
            c_mtime.append(f.modificationTime)
            c_atime.append(f.accessTime)
            c_pbs.append(f.preferredBlockSize)
            c_blocks.append(nblocks)
            c_nsq.append(None)
            c_dsq.append(None)
            c_target.append(None)
            c_uc.append(f.HasField("fileUC"))
            c_sp.append(f.storagePolicyID)
        elif kind == 2:
            d = m.directory
            permission = d.permission
            c_type.append("DIRECTORY")
            c_size.append(0)
            c_repl.append(0)
            c_mtime.append(d.modificationTime)
            c_atime.append(0)
            c_pbs.append(0)
            c_blocks.append(0)
            c_nsq.append(signed64(d.nsQuota))
            c_dsq.append(signed64(d.dsQuota))
            c_target.append(None)
            c_uc.append(False)
            c_sp.append(None)
        elif kind == 3:
            sl = m.symlink
            permission = sl.permission
            c_type.append("SYMLINK")
            c_size.append(0)
            c_repl.append(0)
            c_mtime.append(sl.modificationTime)
            c_atime.append(sl.accessTime)
            c_pbs.append(0)
            c_blocks.append(0)
            c_nsq.append(None)
            c_dsq.append(None)
            c_target.append(bytes(sl.target).decode("utf-8", "surrogateescape"))
            c_uc.append(False)
            c_sp.append(None)
        else:
            raise ImageError(f"section {INODE} has inode {node_id} of unknown type {kind}", INODE)
        who = owners.get(permission)
        if who is None:
            who = owners[permission] = (
                _owner(strings, (permission >> 40) & 0xFFFFFF, "user", node_id),
                _owner(strings, (permission >> 16) & 0xFFFFFF, "group", node_id),
                permission_string(permission & 0xFFFF),
            )
        parent = parents.get(node_id)
        if node_id == ROOT_INODE_ID:
            path: str | None = "/"
        else:
            base = parent_paths.get(parent) if parent is not None else None
            path = None if base is None else (f"/{name}" if base == "/" else f"{base}/{name}")
        c_id.append(node_id)
        c_parent.append(parent)
        c_path.append(path)
        c_name.append(name)
        c_owner.append(who[0])
        c_group.append(who[1])
        c_perm.append(who[2])
        n += 1
        if n >= batch_rows:
            yield pa.RecordBatch.from_arrays(
                [pa.array(c, type=t.type) for c, t in zip(cols, arrow, strict=True)], schema=arrow
            )
            for c in cols:
                c.clear()
            n = 0
    if n:
        yield pa.RecordBatch.from_arrays(
            [pa.array(c, type=t.type) for c, t in zip(cols, arrow, strict=True)], schema=arrow
        )


# --- oiv -p Delimited -----------------------------------------------------------------------


@dataclass(frozen=True)
class TextRange:
    """Lines of a Delimited file that start in [start, end)."""

    path: str
    start: int
    end: int
    columns: tuple[str | None, ...]
    delimiter: str = "\t"
    time_zone: str | None = None


def _text_files(location: str) -> list[Path]:
    p = Path(location)
    if p.is_file():
        return [p]
    if p.is_dir():
        files = sorted(c for c in p.iterdir() if c.is_file() and not c.name.startswith((".", "_")))
        if files:
            return files
        raise SourceError(f"{location}: the directory holds no Delimited files")
    raise SourceError(f"{location}: no such file or directory")


def plan_delimited(
    location: str,
    delimiter: str = "\t",
    bytes_per_partition: int = 64 << 20,
    time_zone: str | None = None,
) -> list[TextRange]:
    """Byte ranges of each Delimited file, with the column mapping its header gives."""
    if time_zone is not None:
        try:
            ZoneInfo(time_zone)
        except (ValueError, KeyError) as e:
            raise SourceError(f"unknown time zone {time_zone!r}: {e}") from None
    out = []
    for f in _text_files(location):
        size = f.stat().st_size
        with open(f, encoding="utf-8", errors="replace", newline="") as fh:
            first = fh.readline()
        header = first if R.is_delimited_header(first, delimiter) else None
        try:
            columns = tuple(R.delimited_columns(header, delimiter))
        except R.DelimitedError as e:
            raise SourceError(f"{f}: {e}") from None
        step = max(1, bytes_per_partition)
        for a in range(0, max(size, 1), step):
            out.append(TextRange(str(f), a, min(a + step, size), columns, delimiter, time_zone))
    return out


def read_text_range(part: TextRange) -> Iterator[dict[str, Any]]:
    """The IMAGE rows of the Delimited lines starting in a range (the header skipped)."""
    tz = ZoneInfo(part.time_zone) if part.time_zone else None
    with open(part.path, "rb") as f:
        if part.start > 0:
            f.seek(part.start - 1)
            f.readline()  # the line under way at start belongs to the range before
        pos = f.tell()
        while pos < part.end:
            raw = f.readline()
            if not raw:
                break
            line_start, pos = pos, pos + len(raw)
            line = raw.decode("utf-8", "replace")
            if not line.strip():
                continue
            if line_start == 0 and R.is_delimited_header(line, part.delimiter):
                continue
            try:
                yield R.delimited_row(line, part.columns, part.delimiter, tz)
            except R.DelimitedError as e:
                raise SourceError(f"{part.path} byte {line_start}: {e}") from None


__all__ = [
    "EditsPart",
    "InodeRange",
    "SourceError",
    "TextRange",
    "is_qjournal",
    "last_local_txid",
    "last_qjournal_txid",
    "plan_delimited",
    "plan_edits",
    "plan_image",
    "read_edits_part",
    "read_inode_range",
    "read_text_range",
]


def read_text_batches(part: TextRange) -> Iterator[pa.RecordBatch]:
    """The IMAGE rows of one range of Delimited text as Arrow batches."""
    return R.to_batches(read_text_range(part), IMAGE)
