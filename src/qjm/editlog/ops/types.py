"""Value types that op bodies are made of, with their HDFS binary forms."""

from __future__ import annotations

from dataclasses import dataclass

from qjm.editlog.ops.codec import BadValueError, Reader, Writer

# FsAction symbols in ordinal order (NONE .. ALL).
FS_ACTIONS = ("---", "--x", "-w-", "-wx", "r--", "r-x", "rw-", "rwx")
ACL_SCOPES = ("ACCESS", "DEFAULT")
ACL_TYPES = ("USER", "GROUP", "MASK", "OTHER")
XATTR_NAMESPACES = ("USER", "TRUSTED", "SECURITY", "SYSTEM", "RAW")
RENAME_OPTIONS = ("NONE", "OVERWRITE", "TO_TRASH")
# StorageType ordinals as of layout -64 (Hadoop 3.1).
STORAGE_TYPES = ("RAM_DISK", "SSD", "DISK", "ARCHIVE", "PROVIDED")
INVALID_CALL_ID = -2  # RpcConstants.INVALID_CALL_ID
HDFS_DELEGATION_KIND = "HDFS_DELEGATION_TOKEN"


@dataclass(frozen=True, slots=True)
class Block:
    """A block: id, length in bytes and generation stamp."""

    block_id: int
    num_bytes: int
    genstamp: int


@dataclass(frozen=True, slots=True)
class PermissionStatus:
    """Owner, group and mode (the 16-bit FsPermission short)."""

    username: str
    groupname: str
    mode: int


@dataclass(frozen=True, slots=True)
class AclEntry:
    """One ACL entry: scope, type, optional name and permission symbol like 'rw-'."""

    scope: str
    type: str
    name: str | None
    perm: str


@dataclass(frozen=True, slots=True)
class XAttr:
    """An extended attribute: namespace, name and optional value."""

    namespace: str
    name: str
    value: bytes | None = None


@dataclass(frozen=True, slots=True)
class DelegationKey:
    """A delegation-token master key."""

    key_id: int
    expiry_date: int
    key: bytes | None


@dataclass(frozen=True, slots=True)
class DelegationTokenIdentifier:
    """An HDFS delegation token identifier."""

    owner: str
    renewer: str
    realuser: str
    issue_date: int
    max_date: int
    sequence_number: int
    master_key_id: int


# --- blocks -------------------------------------------------------------------------------


def read_block(r: Reader) -> Block:
    """Block.readFields: three longs; a negative size is refused as HDFS does."""
    start = r.pos
    b = Block(r.long(), r.long(), r.long())
    if b.num_bytes < 0:
        raise r.bad(f"block {b.block_id} has negative size {b.num_bytes}", start)
    return b


def write_block(w: Writer, b: Block) -> None:
    """Block.write."""
    w.long(b.block_id)
    w.long(b.num_bytes)
    w.long(b.genstamp)


MAX_BLOCKS = 64 * 1024 * 1024


def read_block_array(r: Reader) -> tuple[Block, ...]:
    """An int count then full blocks (ArrayWritable of Block)."""
    start = r.pos
    n = r.int32()
    if n < 0 or n > MAX_BLOCKS:
        raise r.bad(f"invalid number of blocks {n}", start)
    return tuple(read_block(r) for _ in range(n))


def write_block_array(w: Writer, blocks: tuple[Block, ...]) -> None:
    """ArrayWritable of Block."""
    w.int32(len(blocks))
    for b in blocks:
        write_block(w, b)


def read_compact_blocks(r: Reader) -> tuple[Block, ...]:
    """FSImageSerialization's compact block array: vint count, id + delta-coded vlongs."""
    start = r.pos
    n = r.vint()
    if n < 0 or n > MAX_BLOCKS:
        raise r.bad(f"invalid block array length {n}", start)
    out: list[Block] = []
    size = gs = 0
    for _ in range(n):
        bid = r.long()
        size += r.vlong()
        gs += r.vlong()
        out.append(Block(bid, size, gs))
    return tuple(out)


def write_compact_blocks(w: Writer, blocks: tuple[Block, ...]) -> None:
    """Write blocks in the compact delta form."""
    w.vint(len(blocks))
    size = gs = 0
    for b in blocks:
        w.long(b.block_id)
        w.vlong(b.num_bytes - size)
        w.vlong(b.genstamp - gs)
        size, gs = b.num_bytes, b.genstamp


# --- permissions --------------------------------------------------------------------------


def read_permission_status(r: Reader) -> PermissionStatus:
    """PermissionStatus.read: Text user, Text group, short mode."""
    return PermissionStatus(r.text(), r.text(), r.short())


def write_permission_status(w: Writer, p: PermissionStatus) -> None:
    """PermissionStatus.write."""
    w.text(p.username)
    w.text(p.groupname)
    w.short(p.mode)


# --- ACLs in the compact edit-log form (OP_ADD, OP_MKDIR) --------------------------------


def read_acl_compact(r: Reader) -> tuple[AclEntry, ...]:
    """An int count then one packed byte (+ optional name) per entry."""
    start = r.pos
    n = r.int32()
    if n < 0:
        raise r.bad(f"negative ACL entry count {n}", start)
    out: list[AclEntry] = []
    for _ in range(n):
        at = r.pos
        v = r.ubyte()
        if v & 0x80:
            raise r.bad(f"ACL entry byte {v:#04x} has an unknown bit set", at)
        name = r.string() if v & 0x40 else None
        out.append(
            AclEntry(ACL_SCOPES[(v >> 5) & 1], ACL_TYPES[(v >> 3) & 3], name, FS_ACTIONS[v & 7])
        )
    return tuple(out)


def write_acl_compact(w: Writer, entries: tuple[AclEntry, ...]) -> None:
    """Write ACL entries in the compact form."""
    w.int32(len(entries))
    for e in entries:
        v = (
            (ACL_SCOPES.index(e.scope) << 5)
            | (ACL_TYPES.index(e.type) << 3)
            | FS_ACTIONS.index(e.perm)
        )
        if e.name is not None:
            v |= 0x40
        w.byte(v)
        if e.name is not None:
            w.string(e.name)


# --- protobuf messages embedded in bodies -------------------------------------------------


def _pb_skip(r: Reader, wire: int, at: int) -> None:
    if wire == 0:
        r.pb_varint()
    elif wire == 1:
        r.raw(8)
    elif wire == 2:
        r.raw(r.pb_varint())
    elif wire == 5:
        r.raw(4)
    else:
        raise r.bad(f"protobuf field with unsupported wire type {wire}", at)


def _pb_str(r: Reader, what: str) -> str:
    at = r.pos
    raw = r.raw(r.pb_varint(), what)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise r.bad(f"{what} is not valid UTF-8", at) from None


def _pb_enum(r: Reader, names: tuple[str, ...], what: str) -> str:
    at = r.pos
    v = r.pb_varint()
    if v >= len(names):
        raise r.bad(f"{what} has unknown value {v}", at)
    return names[v]


def _pb_key(w: Writer, field: int, wire: int) -> None:
    w.pb_varint((field << 3) | wire)


def _pb_write_str(w: Writer, field: int, s: str) -> None:
    b = s.encode("utf-8")
    _pb_key(w, field, 2)
    w.pb_varint(len(b))
    w.raw(b)


def _read_xattr_proto(r: Reader) -> XAttr:
    ns: str | None = None
    name: str | None = None
    value: bytes | None = None
    while r.remaining():
        at = r.pos
        key = r.pb_varint()
        field, wire = key >> 3, key & 7
        if field == 1 and wire == 0:
            ns = _pb_enum(r, XATTR_NAMESPACES, "xattr namespace")
        elif field == 2 and wire == 2:
            name = _pb_str(r, "xattr name")
        elif field == 3 and wire == 2:
            value = r.raw(r.pb_varint(), "xattr value")
        else:
            _pb_skip(r, wire, at)
    if ns is None or name is None:
        raise r.bad("xattr lacks its required namespace or name")
    return XAttr(ns, name, value)


def _write_xattr_proto(w: Writer, x: XAttr) -> bytes:
    sub = Writer()
    _pb_key(sub, 1, 0)
    sub.pb_varint(XATTR_NAMESPACES.index(x.namespace))
    _pb_write_str(sub, 2, x.name)
    if x.value is not None:
        _pb_key(sub, 3, 2)
        sub.pb_varint(len(x.value))
        sub.raw(x.value)
    return sub.getvalue()


def read_xattr_edit_log(r: Reader) -> tuple[str | None, tuple[XAttr, ...]]:
    """A delimited XAttrEditLogProto: optional src and repeated XAttrProto."""
    m = r.pb_delimited("xattr message")
    src: str | None = None
    xattrs: list[XAttr] = []
    while m.remaining():
        at = m.pos
        key = m.pb_varint()
        field, wire = key >> 3, key & 7
        if field == 1 and wire == 2:
            src = _pb_str(m, "xattr src")
        elif field == 2 and wire == 2:
            xattrs.append(_read_xattr_proto(m.pb_delimited("xattr")))
        else:
            _pb_skip(m, wire, at)
    return src, tuple(xattrs)


def write_xattr_edit_log(w: Writer, src: str | None, xattrs: tuple[XAttr, ...]) -> None:
    """Write a delimited XAttrEditLogProto."""
    m = Writer()
    if src is not None:
        _pb_write_str(m, 1, src)
    for x in xattrs:
        body = _write_xattr_proto(m, x)
        _pb_key(m, 2, 2)
        m.pb_varint(len(body))
        m.raw(body)
    data = m.getvalue()
    w.pb_varint(len(data))
    w.raw(data)


def _read_acl_proto(r: Reader) -> AclEntry:
    scope = typ = perm = None
    name: str | None = None
    while r.remaining():
        at = r.pos
        key = r.pb_varint()
        field, wire = key >> 3, key & 7
        if field == 1 and wire == 0:
            typ = _pb_enum(r, ACL_TYPES, "ACL type")
        elif field == 2 and wire == 0:
            scope = _pb_enum(r, ACL_SCOPES, "ACL scope")
        elif field == 3 and wire == 0:
            perm = _pb_enum(r, FS_ACTIONS, "ACL permission")
        elif field == 4 and wire == 2:
            name = _pb_str(r, "ACL name")
        else:
            _pb_skip(r, wire, at)
    if scope is None or typ is None or perm is None:
        raise r.bad("ACL entry lacks its required scope, type or permission")
    return AclEntry(scope, typ, name, perm)


def read_acl_edit_log(r: Reader) -> tuple[str, tuple[AclEntry, ...]]:
    """A delimited AclEditLogProto: src, then entries of (type=1, scope=2, perm=3, name=4)."""
    m = r.pb_delimited("ACL message")
    src: str | None = None
    entries: list[AclEntry] = []
    while m.remaining():
        at = m.pos
        key = m.pb_varint()
        field, wire = key >> 3, key & 7
        if field == 1 and wire == 2:
            src = _pb_str(m, "ACL src")
        elif field == 2 and wire == 2:
            entries.append(_read_acl_proto(m.pb_delimited("ACL entry")))
        else:
            _pb_skip(m, wire, at)
    if src is None:
        raise m.bad("ACL message lacks its required src")
    return src, tuple(entries)


def write_acl_edit_log(w: Writer, src: str, entries: tuple[AclEntry, ...]) -> None:
    """Write a delimited AclEditLogProto."""
    m = Writer()
    _pb_write_str(m, 1, src)
    for e in entries:
        sub = Writer()
        _pb_key(sub, 1, 0)
        sub.pb_varint(ACL_TYPES.index(e.type))
        _pb_key(sub, 2, 0)
        sub.pb_varint(ACL_SCOPES.index(e.scope))
        _pb_key(sub, 3, 0)
        sub.pb_varint(FS_ACTIONS.index(e.perm))
        if e.name is not None:
            _pb_write_str(sub, 4, e.name)
        body = sub.getvalue()
        _pb_key(m, 2, 2)
        m.pb_varint(len(body))
        m.raw(body)
    data = m.getvalue()
    w.pb_varint(len(data))
    w.raw(data)


# --- RPC ids and security ----------------------------------------------------------------


def read_delegation_key(r: Reader) -> DelegationKey:
    """DelegationKey.readFields: vint id, vlong expiry, vint length (-1: none) + bytes."""
    key_id = r.vint()
    expiry = r.vlong()
    at = r.pos
    n = r.vint()
    if n < -1:
        raise r.bad(f"delegation key length {n}", at)
    return DelegationKey(key_id, expiry, None if n == -1 else r.raw(n, "a delegation key"))


def write_delegation_key(w: Writer, k: DelegationKey) -> None:
    """DelegationKey.write."""
    w.vint(k.key_id)
    w.vlong(k.expiry_date)
    if k.key is None:
        w.vint(-1)
    else:
        w.vint(len(k.key))
        w.raw(k.key)


def read_token_identifier(r: Reader) -> DelegationTokenIdentifier:
    """AbstractDelegationTokenIdentifier.readFields (version byte 0)."""
    at = r.pos
    version = r.byte()
    if version != 0:
        raise r.bad(f"unknown delegation token identifier version {version}", at)
    return DelegationTokenIdentifier(
        owner=r.text(),
        renewer=r.text(),
        realuser=r.text(),
        issue_date=r.vlong(),
        max_date=r.vlong(),
        sequence_number=r.vint(),
        master_key_id=r.vint(),
    )


def write_token_identifier(w: Writer, t: DelegationTokenIdentifier) -> None:
    """AbstractDelegationTokenIdentifier.write."""
    w.byte(0)
    w.text(t.owner)
    w.text(t.renewer)
    w.text(t.realuser)
    w.vlong(t.issue_date)
    w.vlong(t.max_date)
    w.vint(t.sequence_number)
    w.vint(t.master_key_id)


__all__ = [
    "ACL_SCOPES",
    "ACL_TYPES",
    "FS_ACTIONS",
    "HDFS_DELEGATION_KIND",
    "INVALID_CALL_ID",
    "RENAME_OPTIONS",
    "STORAGE_TYPES",
    "XATTR_NAMESPACES",
    "AclEntry",
    "BadValueError",
    "Block",
    "DelegationKey",
    "DelegationTokenIdentifier",
    "PermissionStatus",
    "XAttr",
]
