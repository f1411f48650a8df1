"""Ops outside the file tree: segments, security, snapshots, caching, EC, upgrades."""

from __future__ import annotations

from dataclasses import dataclass

from qjm.editlog.ops import opcodes as oc
from qjm.editlog.ops.base import Op, register
from qjm.editlog.ops.codec import Reader, Writer
from qjm.editlog.ops.inode_ops import read_rpc_ids, write_rpc_ids
from qjm.editlog.ops.types import (
    INVALID_CALL_ID,
    DelegationKey,
    DelegationTokenIdentifier,
    read_delegation_key,
    read_token_identifier,
    write_delegation_key,
    write_token_identifier,
)


@register
@dataclass(frozen=True, slots=True)
class StartLogSegmentOp(Op):
    """OP_START_LOG_SEGMENT: the first op of every segment (empty body)."""

    OPCODE = oc.OP_START_LOG_SEGMENT

    def encode_body(self, w: Writer) -> None:
        """Nothing: the body is empty."""

    @classmethod
    def decode_body(cls, r: Reader) -> StartLogSegmentOp:
        """Read the (empty) body."""
        return cls()


@register
@dataclass(frozen=True, slots=True)
class EndLogSegmentOp(Op):
    """OP_END_LOG_SEGMENT: the last op of a finalized segment (empty body)."""

    OPCODE = oc.OP_END_LOG_SEGMENT

    def encode_body(self, w: Writer) -> None:
        """Nothing: the body is empty."""

    @classmethod
    def decode_body(cls, r: Reader) -> EndLogSegmentOp:
        """Read the (empty) body."""
        return cls()


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class GetDelegationTokenOp(Op):
    """OP_GET_DELEGATION_TOKEN."""

    OPCODE = oc.OP_GET_DELEGATION_TOKEN
    token: DelegationTokenIdentifier
    expiry_time: int

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        write_token_identifier(w, self.token)
        w.long(self.expiry_time)

    @classmethod
    def decode_body(cls, r: Reader) -> GetDelegationTokenOp:
        """Read the body."""
        return cls(token=read_token_identifier(r), expiry_time=r.long())


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class RenewDelegationTokenOp(Op):
    """OP_RENEW_DELEGATION_TOKEN."""

    OPCODE = oc.OP_RENEW_DELEGATION_TOKEN
    token: DelegationTokenIdentifier
    expiry_time: int

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        write_token_identifier(w, self.token)
        w.long(self.expiry_time)

    @classmethod
    def decode_body(cls, r: Reader) -> RenewDelegationTokenOp:
        """Read the body."""
        return cls(token=read_token_identifier(r), expiry_time=r.long())


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class CancelDelegationTokenOp(Op):
    """OP_CANCEL_DELEGATION_TOKEN."""

    OPCODE = oc.OP_CANCEL_DELEGATION_TOKEN
    token: DelegationTokenIdentifier

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        write_token_identifier(w, self.token)

    @classmethod
    def decode_body(cls, r: Reader) -> CancelDelegationTokenOp:
        """Read the body."""
        return cls(token=read_token_identifier(r))


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMasterKeyOp(Op):
    """OP_UPDATE_MASTER_KEY: a new delegation-token master key."""

    OPCODE = oc.OP_UPDATE_MASTER_KEY
    delegation_key: DelegationKey

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        write_delegation_key(w, self.delegation_key)

    @classmethod
    def decode_body(cls, r: Reader) -> UpdateMasterKeyOp:
        """Read the body."""
        return cls(delegation_key=read_delegation_key(r))


@dataclass(frozen=True, slots=True, kw_only=True)
class _SnapshotOp(Op):
    snapshot_root: str
    snapshot_name: str
    mtime: int
    rpc_client_id: bytes = b""
    rpc_call_id: int = INVALID_CALL_ID

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.string(self.snapshot_root)
        w.string(self.snapshot_name)
        w.long(self.mtime)
        write_rpc_ids(w, self.rpc_client_id, self.rpc_call_id)

    @classmethod
    def decode_body(cls, r: Reader) -> _SnapshotOp:
        """Read the body."""
        root, name, mtime = r.string(), r.string(), r.long()
        cid, call = read_rpc_ids(r)
        return cls(
            snapshot_root=root,
            snapshot_name=name,
            mtime=mtime,
            rpc_client_id=cid,
            rpc_call_id=call,
        )


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class CreateSnapshotOp(_SnapshotOp):
    """OP_CREATE_SNAPSHOT."""

    OPCODE = oc.OP_CREATE_SNAPSHOT


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteSnapshotOp(_SnapshotOp):
    """OP_DELETE_SNAPSHOT."""

    OPCODE = oc.OP_DELETE_SNAPSHOT


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class RenameSnapshotOp(Op):
    """OP_RENAME_SNAPSHOT."""

    OPCODE = oc.OP_RENAME_SNAPSHOT
    snapshot_root: str
    snapshot_old_name: str
    snapshot_new_name: str
    mtime: int
    rpc_client_id: bytes = b""
    rpc_call_id: int = INVALID_CALL_ID

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.string(self.snapshot_root)
        w.string(self.snapshot_old_name)
        w.string(self.snapshot_new_name)
        w.long(self.mtime)
        write_rpc_ids(w, self.rpc_client_id, self.rpc_call_id)

    @classmethod
    def decode_body(cls, r: Reader) -> RenameSnapshotOp:
        """Read the body."""
        root, old, new, mtime = r.string(), r.string(), r.string(), r.long()
        cid, call = read_rpc_ids(r)
        return cls(
            snapshot_root=root,
            snapshot_old_name=old,
            snapshot_new_name=new,
            mtime=mtime,
            rpc_client_id=cid,
            rpc_call_id=call,
        )


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class AllowSnapshotOp(Op):
    """OP_ALLOW_SNAPSHOT."""

    OPCODE = oc.OP_ALLOW_SNAPSHOT
    snapshot_root: str

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.string(self.snapshot_root)

    @classmethod
    def decode_body(cls, r: Reader) -> AllowSnapshotOp:
        """Read the body."""
        return cls(snapshot_root=r.string())


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class DisallowSnapshotOp(Op):
    """OP_DISALLOW_SNAPSHOT."""

    OPCODE = oc.OP_DISALLOW_SNAPSHOT
    snapshot_root: str

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.string(self.snapshot_root)

    @classmethod
    def decode_body(cls, r: Reader) -> DisallowSnapshotOp:
        """Read the body."""
        return cls(snapshot_root=r.string())


@dataclass(frozen=True, slots=True, kw_only=True)
class _CacheDirectiveOp(Op):
    id: int
    path: str | None = None
    replication: int | None = None
    pool: str | None = None
    expiration: int | None = None
    rpc_client_id: bytes = b""
    rpc_call_id: int = INVALID_CALL_ID

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.long(self.id)
        flags = (
            (1 if self.path is not None else 0)
            | (2 if self.replication is not None else 0)
            | (4 if self.pool is not None else 0)
            | (8 if self.expiration is not None else 0)
        )
        w.int32(flags)
        if self.path is not None:
            w.string(self.path)
        if self.replication is not None:
            w.short(self.replication)
        if self.pool is not None:
            w.string(self.pool)
        if self.expiration is not None:
            w.long(self.expiration)
        write_rpc_ids(w, self.rpc_client_id, self.rpc_call_id)

    @classmethod
    def decode_body(cls, r: Reader) -> _CacheDirectiveOp:
        """Read the body."""
        ident = r.long()
        at = r.pos
        flags = r.int32()
        if flags & ~0xF:
            raise r.bad(f"unknown cache directive flags {flags:#x}", at)
        path = r.string() if flags & 1 else None
        replication = r.short() if flags & 2 else None
        pool = r.string() if flags & 4 else None
        expiration = r.long() if flags & 8 else None
        cid, call = read_rpc_ids(r)
        return cls(
            id=ident,
            path=path,
            replication=replication,
            pool=pool,
            expiration=expiration,
            rpc_client_id=cid,
            rpc_call_id=call,
        )


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class AddCacheDirectiveOp(_CacheDirectiveOp):
    """OP_ADD_CACHE_DIRECTIVE."""

    OPCODE = oc.OP_ADD_CACHE_DIRECTIVE


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class ModifyCacheDirectiveOp(_CacheDirectiveOp):
    """OP_MODIFY_CACHE_DIRECTIVE."""

    OPCODE = oc.OP_MODIFY_CACHE_DIRECTIVE


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveCacheDirectiveOp(Op):
    """OP_REMOVE_CACHE_DIRECTIVE."""

    OPCODE = oc.OP_REMOVE_CACHE_DIRECTIVE
    id: int
    rpc_client_id: bytes = b""
    rpc_call_id: int = INVALID_CALL_ID

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.long(self.id)
        write_rpc_ids(w, self.rpc_client_id, self.rpc_call_id)

    @classmethod
    def decode_body(cls, r: Reader) -> RemoveCacheDirectiveOp:
        """Read the body."""
        ident = r.long()
        cid, call = read_rpc_ids(r)
        return cls(id=ident, rpc_client_id=cid, rpc_call_id=call)


@dataclass(frozen=True, slots=True, kw_only=True)
class _CachePoolOp(Op):
    pool_name: str
    owner_name: str | None = None
    group_name: str | None = None
    mode: int | None = None
    limit: int | None = None
    max_relative_expiry: int | None = None
    default_replication: int | None = None
    rpc_client_id: bytes = b""
    rpc_call_id: int = INVALID_CALL_ID

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.string(self.pool_name)
        flags = (
            (0x1 if self.owner_name is not None else 0)
            | (0x2 if self.group_name is not None else 0)
            | (0x4 if self.mode is not None else 0)
            | (0x8 if self.limit is not None else 0)
            | (0x10 if self.max_relative_expiry is not None else 0)
            | (0x20 if self.default_replication is not None else 0)
        )
        w.int32(flags)
        if self.owner_name is not None:
            w.string(self.owner_name)
        if self.group_name is not None:
            w.string(self.group_name)
        if self.mode is not None:
            w.short(self.mode)
        if self.limit is not None:
            w.long(self.limit)
        if self.max_relative_expiry is not None:
            w.long(self.max_relative_expiry)
        if self.default_replication is not None:
            w.short(self.default_replication)
        write_rpc_ids(w, self.rpc_client_id, self.rpc_call_id)

    @classmethod
    def decode_body(cls, r: Reader) -> _CachePoolOp:
        """Read the body."""
        name = r.string()
        at = r.pos
        flags = r.int32()
        if flags & ~0x3F:
            raise r.bad(f"unknown cache pool flags {flags:#x}", at)
        owner = r.string() if flags & 0x1 else None
        group = r.string() if flags & 0x2 else None
        mode = r.short() if flags & 0x4 else None
        limit = r.long() if flags & 0x8 else None
        max_rel = r.long() if flags & 0x10 else None
        repl = r.short() if flags & 0x20 else None
        cid, call = read_rpc_ids(r)
        return cls(
            pool_name=name,
            owner_name=owner,
            group_name=group,
            mode=mode,
            limit=limit,
            max_relative_expiry=max_rel,
            default_replication=repl,
            rpc_client_id=cid,
            rpc_call_id=call,
        )


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class AddCachePoolOp(_CachePoolOp):
    """OP_ADD_CACHE_POOL."""

    OPCODE = oc.OP_ADD_CACHE_POOL


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class ModifyCachePoolOp(_CachePoolOp):
    """OP_MODIFY_CACHE_POOL."""

    OPCODE = oc.OP_MODIFY_CACHE_POOL


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveCachePoolOp(Op):
    """OP_REMOVE_CACHE_POOL."""

    OPCODE = oc.OP_REMOVE_CACHE_POOL
    pool_name: str
    rpc_client_id: bytes = b""
    rpc_call_id: int = INVALID_CALL_ID

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.string(self.pool_name)
        write_rpc_ids(w, self.rpc_client_id, self.rpc_call_id)

    @classmethod
    def decode_body(cls, r: Reader) -> RemoveCachePoolOp:
        """Read the body."""
        name = r.string()
        cid, call = read_rpc_ids(r)
        return cls(pool_name=name, rpc_client_id=cid, rpc_call_id=call)


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class AddErasureCodingPolicyOp(Op):
    """OP_ADD_ERASURE_CODING_POLICY: a user-defined EC policy (schema and cell size)."""

    OPCODE = oc.OP_ADD_ERASURE_CODING_POLICY
    codec: str
    data_units: int
    parity_units: int
    cell_size: int
    extra_options: tuple[tuple[str, str], ...] = ()
    rpc_client_id: bytes = b""
    rpc_call_id: int = INVALID_CALL_ID

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.string(self.codec)
        w.int32(self.data_units)
        w.int32(self.parity_units)
        w.int32(self.cell_size)
        w.int32(len(self.extra_options))
        for k, v in self.extra_options:
            w.string(k)
            w.string(v)
        write_rpc_ids(w, self.rpc_client_id, self.rpc_call_id)

    @classmethod
    def decode_body(cls, r: Reader) -> AddErasureCodingPolicyOp:
        """Read the body."""
        codec, data, parity, cell = r.string(), r.int32(), r.int32(), r.int32()
        at = r.pos
        n = r.int32()
        if n < 0:
            raise r.bad(f"negative EC extra option count {n}", at)
        opts = tuple((r.string(), r.string()) for _ in range(n))
        cid, call = read_rpc_ids(r)
        return cls(
            codec=codec,
            data_units=data,
            parity_units=parity,
            cell_size=cell,
            extra_options=opts,
            rpc_client_id=cid,
            rpc_call_id=call,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class _EcPolicyNameOp(Op):
    policy_name: str
    rpc_client_id: bytes = b""
    rpc_call_id: int = INVALID_CALL_ID

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.string(self.policy_name)
        write_rpc_ids(w, self.rpc_client_id, self.rpc_call_id)

    @classmethod
    def decode_body(cls, r: Reader) -> _EcPolicyNameOp:
        """Read the body."""
        name = r.string()
        cid, call = read_rpc_ids(r)
        return cls(policy_name=name, rpc_client_id=cid, rpc_call_id=call)


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class EnableErasureCodingPolicyOp(_EcPolicyNameOp):
    """OP_ENABLE_ERASURE_CODING_POLICY."""

    OPCODE = oc.OP_ENABLE_ERASURE_CODING_POLICY


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class DisableErasureCodingPolicyOp(_EcPolicyNameOp):
    """OP_DISABLE_ERASURE_CODING_POLICY."""

    OPCODE = oc.OP_DISABLE_ERASURE_CODING_POLICY


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveErasureCodingPolicyOp(_EcPolicyNameOp):
    """OP_REMOVE_ERASURE_CODING_POLICY."""

    OPCODE = oc.OP_REMOVE_ERASURE_CODING_POLICY


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class RollingUpgradeStartOp(Op):
    """OP_ROLLING_UPGRADE_START."""

    OPCODE = oc.OP_ROLLING_UPGRADE_START
    time: int

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.long(self.time)

    @classmethod
    def decode_body(cls, r: Reader) -> RollingUpgradeStartOp:
        """Read the body."""
        return cls(time=r.long())


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class RollingUpgradeFinalizeOp(Op):
    """OP_ROLLING_UPGRADE_FINALIZE."""

    OPCODE = oc.OP_ROLLING_UPGRADE_FINALIZE
    time: int

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.long(self.time)

    @classmethod
    def decode_body(cls, r: Reader) -> RollingUpgradeFinalizeOp:
        """Read the body."""
        return cls(time=r.long())


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class OpaqueOp(Op):
    """A generic journal payload (not HDFS): the body is the payload bytes."""

    OPCODE = oc.OP_OPAQUE
    payload: bytes

    def encode_body(self, w: Writer) -> None:
        """The payload as is."""
        w.raw(self.payload)

    @classmethod
    def decode_body(cls, r: Reader) -> OpaqueOp:
        """The rest of the body."""
        return cls(payload=r.raw(r.remaining()))
