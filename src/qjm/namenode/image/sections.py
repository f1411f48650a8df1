"""Section-level reading: find a section by the FileSummary and decode it on its own.

Each decoder takes one section's bytes, so a reader (e.g. a Spark task) can fetch just that
section from an image file with read_section and decode it without the rest of the image;
only INODE needs the string table to name owners and groups.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from qjm.editlog.ops.types import (
    ACL_SCOPES,
    ACL_TYPES,
    FS_ACTIONS,
    XATTR_NAMESPACES,
    AclEntry,
    Block,
    DelegationKey,
    DelegationTokenIdentifier,
    XAttr,
)
from qjm.namenode.image import fsimage_pb2 as pb
from qjm.namenode.image.format import (
    CACHE_MANAGER,
    ERASURE_CODING,
    FILES_UNDERCONSTRUCTION,
    INODE,
    INODE_DIR,
    INODE_REFERENCE,
    MAGIC,
    NS_INFO,
    SECRET_MANAGER,
    SNAPSHOT,
    SNAPSHOT_DIFF,
    STRING_TABLE,
    ImageError,
    SectionInfo,
    Summary,
    decompress,
    iter_delimited,
    parse,
    signed64,
    summary_from_parts,
    unpack_permission,
)
from qjm.namenode.image.model import (
    DIRECTORY,
    FILE,
    SYMLINK,
    EcPolicy,
    Inode,
    NameSystemInfo,
    SecretManagerImage,
)

INODE_TYPES = {1: FILE, 2: DIRECTORY, 3: SYMLINK}
STORAGE_TYPE_NAMES = {1: "DISK", 2: "SSD", 3: "ARCHIVE", 4: "RAM_DISK", 5: "PROVIDED"}
EC_STATES = {1: "DISABLED", 2: "ENABLED", 3: "REMOVED"}


def read_summary_from_file(path: str | os.PathLike[str]) -> Summary:
    """The FileSummary of an image file, reading only its head and its footer."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(MAGIC))
            size = f.seek(0, os.SEEK_END)
            if size < len(MAGIC) + 4:
                return summary_from_parts(head, b"\0\0\0\0", size - 4, size)
            f.seek(size - 4)
            last = f.read(4)
            (n,) = struct.unpack(">i", last)
            if n <= 0 or n > size - len(MAGIC) - 4:
                return summary_from_parts(head, last, size - 4, size)
            f.seek(size - 4 - n)
            tail = f.read(n + 4)
    except OSError as e:
        raise ImageError(f"cannot read image {path}: {e.strerror or e}") from None
    return summary_from_parts(head, tail, size - 4 - n, size)


def read_section(
    path: str | os.PathLike[str], info: SectionInfo, codec: str | None = None
) -> bytes:
    """One section's bytes, read from its offset in the image file (and decompressed)."""
    try:
        with open(path, "rb") as f:
            f.seek(info.offset)
            raw = f.read(info.length)
    except OSError as e:
        raise ImageError(f"cannot read image {path}: {e.strerror or e}", info.name) from None
    if len(raw) != info.length:
        raise ImageError(
            f"section {info.name} is truncated: {len(raw)} of {info.length} bytes", info.name
        )
    return decompress(raw, info.name, codec)


# --- per-section decoders ------------------------------------------------------------------


def _first(buf: bytes, section: str) -> tuple[bytes, Iterator[bytes]]:
    it = iter_delimited(buf, section)
    head = next(it, None)
    if head is None:
        raise ImageError(f"section {section} is empty: its header message is missing", section)
    return head, it


def decode_ns_info(buf: bytes) -> NameSystemInfo:
    """The NS_INFO section."""
    head, _ = _first(buf, NS_INFO)
    m: Any = parse(pb.NameSystemSection, head, NS_INFO, "NameSystemSection")
    return NameSystemInfo(
        namespace_id=m.namespaceId,
        txid=m.transactionId,
        genstamp_v1=m.genstampV1,
        genstamp_v2=m.genstampV2,
        genstamp_v1_limit=m.genstampV1Limit,
        last_allocated_block_id=m.lastAllocatedBlockId,
        rolling_upgrade_start_time=(
            m.rollingUpgradeStartTime if m.HasField("rollingUpgradeStartTime") else None
        ),
        last_allocated_striped_block_id=(
            signed64(m.lastAllocatedStripedBlockId)
            if m.HasField("lastAllocatedStripedBlockId")
            else None
        ),
    )


def decode_string_table(buf: bytes) -> dict[int, str]:
    """The STRING_TABLE section: id -> string."""
    head, rest = _first(buf, STRING_TABLE)
    h: Any = parse(pb.StringTableSection, head, STRING_TABLE, "StringTableSection")
    table: dict[int, str] = {}
    for raw in rest:
        e: Any = parse(pb.StringTableSection.Entry, raw, STRING_TABLE, "string entry")
        table[e.id] = e.str
    if len(table) != h.numEntry:
        raise ImageError(
            f"section {STRING_TABLE} lists {len(table)} strings but its header says {h.numEntry}",
            STRING_TABLE,
        )
    return table


def inode_header(buf: bytes) -> tuple[int, int]:
    """(lastInodeId, numInodes) of an INODE section."""
    head, _ = _first(buf, INODE)
    h: Any = parse(pb.INodeSection, head, INODE, "INodeSection header")
    return h.lastInodeId, h.numInodes


def _string(strings: dict[int, str], sid: int, what: str) -> str:
    s = strings.get(sid)
    if s is None:
        raise ImageError(
            f"section {INODE} refers to string id {sid} ({what}) missing from {STRING_TABLE}",
            INODE,
        )
    return s


def _acls(entries: Any, strings: dict[int, str]) -> tuple[AclEntry, ...]:
    out = []
    for v in entries:
        nid = (v >> 6) & 0xFFFFFF
        out.append(
            AclEntry(
                ACL_SCOPES[(v >> 5) & 1],
                ACL_TYPES[(v >> 3) & 3],
                _string(strings, nid, "ACL name") if nid else None,
                FS_ACTIONS[v & 7],
            )
        )
    return tuple(out)


def _xattrs(feature: Any, strings: dict[int, str]) -> tuple[XAttr, ...]:
    out = []
    for x in feature.xAttrs:
        v = x.name
        ns = ((v >> 30) & 3) | (((v >> 5) & 1) << 2)
        if ns >= len(XATTR_NAMESPACES):
            raise ImageError(f"section {INODE} has an xattr with namespace {ns}", INODE)
        name = _string(strings, (v >> 6) & 0xFFFFFF, "xattr name")
        out.append(XAttr(XATTR_NAMESPACES[ns], name, x.value if x.HasField("value") else None))
    return tuple(out)


def inode_from_proto(m: Any, strings: dict[int, str]) -> Inode:
    """An Inode from an INodeSection.INode message."""
    kind = INODE_TYPES.get(m.type)
    name = bytes(m.name).decode("utf-8", "surrogateescape")
    if kind == FILE:
        f = m.file
        uid, gid, mode = unpack_permission(f.permission)
        striped = f.HasField("blockType") and f.blockType == pb.STRIPED
        return Inode(
            id=m.id,
            type=FILE,
            name=name,
            user=_string(strings, uid, "user"),
            group=_string(strings, gid, "group"),
            mode=mode,
            mtime=f.modificationTime,
            atime=f.accessTime,
            replication=f.replication,
            preferred_block_size=f.preferredBlockSize,
            blocks=tuple(
                Block(signed64(b.blockId), signed64(b.numBytes), signed64(b.genStamp))
                for b in f.blocks
            ),
            client_name=f.fileUC.clientName if f.HasField("fileUC") else None,
            client_machine=f.fileUC.clientMachine if f.HasField("fileUC") else None,
            storage_policy_id=f.storagePolicyID,
            erasure_coding_policy_id=f.erasureCodingPolicyID if striped else None,
            acls=_acls(f.acl.entries, strings) if f.HasField("acl") else (),
            xattrs=_xattrs(f.xAttrs, strings) if f.HasField("xAttrs") else (),
        )
    if kind == DIRECTORY:
        d = m.directory
        uid, gid, mode = unpack_permission(d.permission)
        return Inode(
            id=m.id,
            type=DIRECTORY,
            name=name,
            user=_string(strings, uid, "user"),
            group=_string(strings, gid, "group"),
            mode=mode,
            mtime=d.modificationTime,
            ns_quota=signed64(d.nsQuota),
            ds_quota=signed64(d.dsQuota),
            acls=_acls(d.acl.entries, strings) if d.HasField("acl") else (),
            xattrs=_xattrs(d.xAttrs, strings) if d.HasField("xAttrs") else (),
            type_quotas=tuple(
                (STORAGE_TYPE_NAMES.get(q.storageType, str(q.storageType)), signed64(q.quota))
                for q in d.typeQuotas.quotas
            ),
        )
    if kind == SYMLINK:
        s = m.symlink
        uid, gid, mode = unpack_permission(s.permission)
        return Inode(
            id=m.id,
            type=SYMLINK,
            name=name,
            user=_string(strings, uid, "user"),
            group=_string(strings, gid, "group"),
            mode=mode,
            mtime=s.modificationTime,
            atime=s.accessTime,
            target=bytes(s.target).decode("utf-8", "surrogateescape"),
        )
    raise ImageError(f"section {INODE} has inode {m.id} of unknown type {m.type}", INODE)


def iter_inodes(buf: bytes, strings: dict[int, str]) -> Iterator[Inode]:
    """Every inode of an INODE section, in file order; checks the header's count."""
    head, rest = _first(buf, INODE)
    h: Any = parse(pb.INodeSection, head, INODE, "INodeSection header")
    count = 0
    for raw in rest:
        m = parse(pb.INodeSection.INode, raw, INODE, f"inode #{count + 1}")
        yield inode_from_proto(m, strings)
        count += 1
    if count != h.numInodes:
        raise ImageError(
            f"section {INODE} holds {count} inodes but its header says {h.numInodes}", INODE
        )


@dataclass(frozen=True, slots=True)
class DirEntry:
    """One INODE_DIR entry: a directory and its children (plain and by reference)."""

    parent: int
    children: tuple[int, ...]
    ref_children: tuple[int, ...] = ()


def iter_dir_entries(buf: bytes) -> Iterator[DirEntry]:
    """Every entry of an INODE_DIR section."""
    for raw in iter_delimited(buf, INODE_DIR):
        m: Any = parse(pb.INodeDirectorySection.DirEntry, raw, INODE_DIR, "directory entry")
        yield DirEntry(m.parent, tuple(m.children), tuple(m.refChildren))


def iter_references(buf: bytes) -> Iterator[Any]:
    """Every INodeReference message of an INODE_REFERENCE section."""
    for raw in iter_delimited(buf, INODE_REFERENCE):
        yield parse(pb.INodeReferenceSection.INodeReference, raw, INODE_REFERENCE, "reference")


def parents_of(entries: Iterable[DirEntry], references: Sequence[Any]) -> dict[int, int]:
    """Child inode id -> parent directory id, from INODE_DIR entries (children named by
    reference resolved through the INODE_REFERENCE messages)."""
    parents: dict[int, int] = {}
    for e in entries:
        for c in e.children:
            parents[c] = e.parent
        for r in e.ref_children:
            if r >= len(references):
                raise ImageError(
                    f"section {INODE_DIR} refers to reference #{r}, {INODE_REFERENCE} has "
                    f"{len(references)}",
                    INODE_DIR,
                )
            parents.setdefault(references[r].referredId, e.parent)
    return parents


def iter_files_under_construction(buf: bytes) -> Iterator[tuple[int, str]]:
    """(inode id, full path) of each FILES_UNDERCONSTRUCTION entry."""
    for raw in iter_delimited(buf, FILES_UNDERCONSTRUCTION):
        m: Any = parse(
            pb.FilesUnderConstructionSection.FileUnderConstructionEntry,
            raw,
            FILES_UNDERCONSTRUCTION,
            "entry",
        )
        yield m.inodeId, m.fullPath


def decode_ec_section(buf: bytes) -> list[EcPolicy]:
    """The ERASURE_CODING section's policies."""
    head, _ = _first(buf, ERASURE_CODING)
    m: Any = parse(pb.ErasureCodingSection, head, ERASURE_CODING, "ErasureCodingSection")
    out = []
    for p in m.policies:
        has_schema = p.HasField("schema")
        out.append(
            EcPolicy(
                id=p.id,
                state=EC_STATES.get(p.state, str(p.state)),
                name=p.name if p.HasField("name") else None,
                codec=p.schema.codecName if has_schema else None,
                data_units=p.schema.dataUnits if has_schema else None,
                parity_units=p.schema.parityUnits if has_schema else None,
                cell_size=p.cellSize if p.HasField("cellSize") else None,
                options=tuple((o.key, o.value) for o in p.schema.options),
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class SnapshotInfo:
    """The SNAPSHOT section: counter, snapshottable dirs and (snapshot id, root inode id)."""

    counter: int
    snapshottable_dirs: tuple[int, ...]
    snapshots: tuple[tuple[int, int], ...]


def decode_snapshot_section(buf: bytes) -> SnapshotInfo:
    """The SNAPSHOT section."""
    head, rest = _first(buf, SNAPSHOT)
    h: Any = parse(pb.SnapshotSection, head, SNAPSHOT, "SnapshotSection header")
    snaps = []
    for raw in rest:
        s: Any = parse(pb.SnapshotSection.Snapshot, raw, SNAPSHOT, "snapshot")
        snaps.append((s.snapshotId, s.root.id))
    return SnapshotInfo(h.snapshotCounter, tuple(h.snapshottableDir), tuple(snaps))


@dataclass(frozen=True, slots=True)
class DiffEntry:
    """One SNAPSHOT_DIFF entry: an inode and the snapshot ids of its diffs."""

    inode_id: int
    type: str
    snapshot_ids: tuple[int, ...]


def iter_snapshot_diffs(buf: bytes) -> Iterator[DiffEntry]:
    """The SNAPSHOT_DIFF section's entries (diff bodies are walked, not kept)."""
    it = iter_delimited(buf, SNAPSHOT_DIFF)
    for raw in it:
        e: Any = parse(pb.SnapshotDiffSection.DiffEntry, raw, SNAPSHOT_DIFF, "diff entry")
        ids = []
        for _ in range(e.numOfDiff):
            body = next(it, None)
            if body is None:
                raise ImageError(f"section {SNAPSHOT_DIFF} ends inside a diff", SNAPSHOT_DIFF)
            if e.type == pb.SnapshotDiffSection.DiffEntry.FILEDIFF:
                fd: Any = parse(pb.SnapshotDiffSection.FileDiff, body, SNAPSHOT_DIFF, "diff")
                ids.append(fd.snapshotId)
            else:
                dd: Any = parse(pb.SnapshotDiffSection.DirectoryDiff, body, SNAPSHOT_DIFF, "diff")
                ids.append(dd.snapshotId)
                for _ in range(dd.createdListSize):
                    if next(it, None) is None:
                        raise ImageError(
                            f"section {SNAPSHOT_DIFF} ends inside a created list",
                            SNAPSHOT_DIFF,
                        )
        kind = "FILEDIFF" if e.type == pb.SnapshotDiffSection.DiffEntry.FILEDIFF else "DIRDIFF"
        yield DiffEntry(e.inodeId, kind, tuple(ids))


def decode_secret_manager(buf: bytes) -> SecretManagerImage:
    """SECRET_MANAGER: its counters, then numKeys DelegationKeys and numTokens PersistTokens."""
    head, rest = _first(buf, SECRET_MANAGER)
    h: Any = parse(pb.SecretManagerSection, head, SECRET_MANAGER, "SecretManagerSection")
    bodies = list(rest)
    if len(bodies) != h.numKeys + h.numTokens:
        raise ImageError(
            f"section {SECRET_MANAGER} holds {len(bodies)} keys and tokens, its header says "
            f"{h.numKeys + h.numTokens}",
            SECRET_MANAGER,
        )
    keys = []
    for body in bodies[: h.numKeys]:
        k: Any = parse(pb.SecretManagerSection.DelegationKey, body, SECRET_MANAGER, "key")
        keys.append(DelegationKey(k.id, k.expiryDate, k.key if k.HasField("key") else None))
    tokens = []
    for body in bodies[h.numKeys :]:
        t: Any = parse(pb.SecretManagerSection.PersistToken, body, SECRET_MANAGER, "token")
        ident = DelegationTokenIdentifier(
            t.owner, t.renewer, t.realUser, t.issueDate, t.maxDate, t.sequenceNumber,
            t.masterKeyId,
        )  # fmt: skip
        tokens.append((ident, t.expiryDate))
    return SecretManagerImage(h.currentId, h.tokenSequenceNumber, tuple(keys), tuple(tokens))


def decode_cache_manager(buf: bytes) -> tuple[int, int, int]:
    """(nextDirectiveId, numPools, numDirectives) of CACHE_MANAGER."""
    head, rest = _first(buf, CACHE_MANAGER)
    h: Any = parse(pb.CacheManagerSection, head, CACHE_MANAGER, "CacheManagerSection")
    n = sum(1 for _ in rest)
    if n != h.numPools + h.numDirectives:
        raise ImageError(
            f"section {CACHE_MANAGER} holds {n} pools and directives, its header says "
            f"{h.numPools + h.numDirectives}",
            CACHE_MANAGER,
        )
    return h.nextDirectiveId, h.numPools, h.numDirectives
