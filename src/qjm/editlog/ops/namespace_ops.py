"""Ops that change the namespace tree and inode attributes."""

from __future__ import annotations

from dataclasses import dataclass

from qjm.editlog.ops import opcodes as oc
from qjm.editlog.ops.base import Op, register
from qjm.editlog.ops.codec import Reader, Writer
from qjm.editlog.ops.inode_ops import read_rpc_ids, write_rpc_ids
from qjm.editlog.ops.types import (
    INVALID_CALL_ID,
    RENAME_OPTIONS,
    STORAGE_TYPES,
    AclEntry,
    PermissionStatus,
    XAttr,
    read_acl_compact,
    read_acl_edit_log,
    read_permission_status,
    read_xattr_edit_log,
    write_acl_compact,
    write_acl_edit_log,
    write_permission_status,
    write_xattr_edit_log,
)


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class MkdirOp(Op):
    """OP_MKDIR: create a directory.

    HDFS writes the timestamp twice (mtime, then an unused atime); atime is None when
    the two are equal, which is what HDFS always writes.
    """

    OPCODE = oc.OP_MKDIR
    length: int = 0
    inode_id: int
    path: str
    timestamp: int
    permission_status: PermissionStatus
    acls: tuple[AclEntry, ...] = ()
    xattrs: tuple[XAttr, ...] = ()
    atime: int | None = None

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.long(self.inode_id)
        w.string(self.path)
        w.long(self.timestamp)
        w.long(self.timestamp if self.atime is None else self.atime)
        write_permission_status(w, self.permission_status)
        write_acl_compact(w, self.acls)
        write_xattr_edit_log(w, None, self.xattrs)

    @classmethod
    def decode_body(cls, r: Reader) -> MkdirOp:
        """Read the body."""
        inode_id, path, ts, atime = r.long(), r.string(), r.long(), r.long()
        perm = read_permission_status(r)
        acls = read_acl_compact(r)
        _, xattrs = read_xattr_edit_log(r)
        return cls(
            inode_id=inode_id,
            path=path,
            timestamp=ts,
            permission_status=perm,
            acls=acls,
            xattrs=xattrs,
            atime=None if atime == ts else atime,
        )


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteOp(Op):
    """OP_DELETE: remove a path (recursively)."""

    OPCODE = oc.OP_DELETE
    length: int = 0
    path: str
    timestamp: int
    rpc_client_id: bytes = b""
    rpc_call_id: int = INVALID_CALL_ID

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.string(self.path)
        w.long(self.timestamp)
        write_rpc_ids(w, self.rpc_client_id, self.rpc_call_id)

    @classmethod
    def decode_body(cls, r: Reader) -> DeleteOp:
        """Read the body."""
        path, ts = r.string(), r.long()
        cid, call = read_rpc_ids(r)
        return cls(path=path, timestamp=ts, rpc_client_id=cid, rpc_call_id=call)


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class RenameOldOp(Op):
    """OP_RENAME_OLD: the original rename (no options)."""

    OPCODE = oc.OP_RENAME_OLD
    length: int = 0
    src: str
    dst: str
    timestamp: int
    rpc_client_id: bytes = b""
    rpc_call_id: int = INVALID_CALL_ID

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.string(self.src)
        w.string(self.dst)
        w.long(self.timestamp)
        write_rpc_ids(w, self.rpc_client_id, self.rpc_call_id)

    @classmethod
    def decode_body(cls, r: Reader) -> RenameOldOp:
        """Read the body."""
        src, dst, ts = r.string(), r.string(), r.long()
        cid, call = read_rpc_ids(r)
        return cls(src=src, dst=dst, timestamp=ts, rpc_client_id=cid, rpc_call_id=call)


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class RenameOp(Op):
    """OP_RENAME: rename with options (NONE, OVERWRITE, TO_TRASH)."""

    OPCODE = oc.OP_RENAME
    length: int = 0
    src: str
    dst: str
    timestamp: int
    options: tuple[str, ...] = ()
    rpc_client_id: bytes = b""
    rpc_call_id: int = INVALID_CALL_ID

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.string(self.src)
        w.string(self.dst)
        w.long(self.timestamp)
        w.int32(len(self.options))
        for o in self.options:
            w.byte(RENAME_OPTIONS.index(o))
        write_rpc_ids(w, self.rpc_client_id, self.rpc_call_id)

    @classmethod
    def decode_body(cls, r: Reader) -> RenameOp:
        """Read the body."""
        src, dst, ts = r.string(), r.string(), r.long()
        at = r.pos
        n = r.int32()
        if n < 0:
            raise r.bad(f"negative rename option count {n}", at)
        opts: list[str] = []
        for _ in range(n):
            at = r.pos
            v = r.byte()
            if not 0 <= v < len(RENAME_OPTIONS):
                raise r.bad(f"unknown rename option {v}", at)
            opts.append(RENAME_OPTIONS[v])
        cid, call = read_rpc_ids(r)
        return cls(
            src=src,
            dst=dst,
            timestamp=ts,
            options=tuple(opts),
            rpc_client_id=cid,
            rpc_call_id=call,
        )


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class ConcatDeleteOp(Op):
    """OP_CONCAT_DELETE: append sources' blocks to a target and delete the sources."""

    OPCODE = oc.OP_CONCAT_DELETE
    length: int = 0
    trg: str
    srcs: tuple[str, ...]
    timestamp: int
    rpc_client_id: bytes = b""
    rpc_call_id: int = INVALID_CALL_ID

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.string(self.trg)
        w.int32(len(self.srcs))
        for s in self.srcs:
            w.string(s)
        w.long(self.timestamp)
        write_rpc_ids(w, self.rpc_client_id, self.rpc_call_id)

    @classmethod
    def decode_body(cls, r: Reader) -> ConcatDeleteOp:
        """Read the body."""
        trg = r.string()
        at = r.pos
        n = r.int32()
        if not 0 <= n <= 1024 * 1024:
            raise r.bad(f"invalid concat source count {n}", at)
        srcs = tuple(r.string() for _ in range(n))
        ts = r.long()
        cid, call = read_rpc_ids(r)
        return cls(trg=trg, srcs=srcs, timestamp=ts, rpc_client_id=cid, rpc_call_id=call)


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class SetReplicationOp(Op):
    """OP_SET_REPLICATION."""

    OPCODE = oc.OP_SET_REPLICATION
    path: str
    replication: int

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.string(self.path)
        w.short(self.replication)

    @classmethod
    def decode_body(cls, r: Reader) -> SetReplicationOp:
        """Read the body."""
        return cls(path=r.string(), replication=r.short())


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class SetPermissionsOp(Op):
    """OP_SET_PERMISSIONS: a new mode (FsPermission short)."""

    OPCODE = oc.OP_SET_PERMISSIONS
    src: str
    mode: int

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.string(self.src)
        w.short(self.mode)

    @classmethod
    def decode_body(cls, r: Reader) -> SetPermissionsOp:
        """Read the body."""
        return cls(src=r.string(), mode=r.short())


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class SetOwnerOp(Op):
    """OP_SET_OWNER: new owner and/or group (None: unchanged, written as "")."""

    OPCODE = oc.OP_SET_OWNER
    src: str
    username: str | None = None
    groupname: str | None = None

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.string(self.src)
        w.string(self.username or "")
        w.string(self.groupname or "")

    @classmethod
    def decode_body(cls, r: Reader) -> SetOwnerOp:
        """Read the body."""
        src, user, group = r.string(), r.string(), r.string()
        return cls(src=src, username=user or None, groupname=group or None)


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class SetNSQuotaOp(Op):
    """OP_SET_NS_QUOTA (obsolete: HDFS only reads it)."""

    OPCODE = oc.OP_SET_NS_QUOTA
    src: str
    ns_quota: int

    def encode_body(self, w: Writer) -> None:
        """Append the body in the layout HDFS reads."""
        w.string(self.src)
        w.long(self.ns_quota)

    @classmethod
    def decode_body(cls, r: Reader) -> SetNSQuotaOp:
        """Read the body."""
        return cls(src=r.string(), ns_quota=r.long())


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class ClearNSQuotaOp(Op):
    """OP_CLEAR_NS_QUOTA (obsolete: HDFS only reads it)."""

    OPCODE = oc.OP_CLEAR_NS_QUOTA
    src: str

    def encode_body(self, w: Writer) -> None:
        """Append the body in the layout HDFS reads."""
        w.string(self.src)

    @classmethod
    def decode_body(cls, r: Reader) -> ClearNSQuotaOp:
        """Read the body."""
        return cls(src=r.string())


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class SetQuotaOp(Op):
    """OP_SET_QUOTA: namespace and storage-space quotas of a directory."""

    OPCODE = oc.OP_SET_QUOTA
    src: str
    ns_quota: int
    ds_quota: int

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.string(self.src)
        w.long(self.ns_quota)
        w.long(self.ds_quota)

    @classmethod
    def decode_body(cls, r: Reader) -> SetQuotaOp:
        """Read the body."""
        return cls(src=r.string(), ns_quota=r.long(), ds_quota=r.long())


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class SetQuotaByStorageTypeOp(Op):
    """OP_SET_QUOTA_BY_STORAGETYPE: a quota for one storage type (its ordinal)."""

    OPCODE = oc.OP_SET_QUOTA_BY_STORAGETYPE
    src: str
    storage_type: int
    ds_quota: int

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.string(self.src)
        w.int32(self.storage_type)
        w.long(self.ds_quota)

    @classmethod
    def decode_body(cls, r: Reader) -> SetQuotaByStorageTypeOp:
        """Read the body."""
        src = r.string()
        at = r.pos
        st = r.int32()
        if not 0 <= st < len(STORAGE_TYPES):
            raise r.bad(f"unknown storage type ordinal {st}", at)
        return cls(src=src, storage_type=st, ds_quota=r.long())


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class TimesOp(Op):
    """OP_TIMES: set modification and access times."""

    OPCODE = oc.OP_TIMES
    length: int = 0
    path: str
    mtime: int
    atime: int

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.string(self.path)
        w.long(self.mtime)
        w.long(self.atime)

    @classmethod
    def decode_body(cls, r: Reader) -> TimesOp:
        """Read the body."""
        return cls(path=r.string(), mtime=r.long(), atime=r.long())


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class SymlinkOp(Op):
    """OP_SYMLINK: create a symbolic link."""

    OPCODE = oc.OP_SYMLINK
    length: int = 0
    inode_id: int
    path: str
    value: str
    mtime: int
    atime: int
    permission_status: PermissionStatus
    rpc_client_id: bytes = b""
    rpc_call_id: int = INVALID_CALL_ID

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.long(self.inode_id)
        w.string(self.path)
        w.string(self.value)
        w.long(self.mtime)
        w.long(self.atime)
        write_permission_status(w, self.permission_status)
        write_rpc_ids(w, self.rpc_client_id, self.rpc_call_id)

    @classmethod
    def decode_body(cls, r: Reader) -> SymlinkOp:
        """Read the body."""
        inode_id, path, value, mtime, atime = r.long(), r.string(), r.string(), r.long(), r.long()
        perm = read_permission_status(r)
        cid, call = read_rpc_ids(r)
        return cls(
            inode_id=inode_id,
            path=path,
            value=value,
            mtime=mtime,
            atime=atime,
            permission_status=perm,
            rpc_client_id=cid,
            rpc_call_id=call,
        )


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class SetStoragePolicyOp(Op):
    """OP_SET_STORAGE_POLICY."""

    OPCODE = oc.OP_SET_STORAGE_POLICY
    path: str
    policy_id: int

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.string(self.path)
        w.byte(self.policy_id)

    @classmethod
    def decode_body(cls, r: Reader) -> SetStoragePolicyOp:
        """Read the body."""
        return cls(path=r.string(), policy_id=r.byte())


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class SetAclOp(Op):
    """OP_SET_ACL: replace a path's ACL (a delimited AclEditLogProto)."""

    OPCODE = oc.OP_SET_ACL
    src: str
    acls: tuple[AclEntry, ...] = ()

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        write_acl_edit_log(w, self.src, self.acls)

    @classmethod
    def decode_body(cls, r: Reader) -> SetAclOp:
        """Read the body."""
        src, entries = read_acl_edit_log(r)
        return cls(src=src, acls=entries)


@dataclass(frozen=True, slots=True, kw_only=True)
class _XAttrOp(Op):
    src: str
    xattrs: tuple[XAttr, ...] = ()
    rpc_client_id: bytes = b""
    rpc_call_id: int = INVALID_CALL_ID

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        write_xattr_edit_log(w, self.src, self.xattrs)
        write_rpc_ids(w, self.rpc_client_id, self.rpc_call_id)

    @classmethod
    def decode_body(cls, r: Reader) -> _XAttrOp:
        """Read the body."""
        src, xattrs = read_xattr_edit_log(r)
        cid, call = read_rpc_ids(r)
        return cls(src=src or "", xattrs=xattrs, rpc_client_id=cid, rpc_call_id=call)


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class SetXAttrOp(_XAttrOp):
    """OP_SET_XATTR: set extended attributes on a path."""

    OPCODE = oc.OP_SET_XATTR


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveXAttrOp(_XAttrOp):
    """OP_REMOVE_XATTR: remove extended attributes from a path."""

    OPCODE = oc.OP_REMOVE_XATTR
