"""Ops that create files and change their blocks: add, close, append, blocks, truncate."""

from __future__ import annotations

from dataclasses import dataclass

from qjm.editlog.ops import opcodes as oc
from qjm.editlog.ops.base import Op, register
from qjm.editlog.ops.codec import Reader, Writer
from qjm.editlog.ops.types import (
    INVALID_CALL_ID,
    AclEntry,
    Block,
    PermissionStatus,
    XAttr,
    read_acl_compact,
    read_block_array,
    read_compact_blocks,
    read_permission_status,
    read_xattr_edit_log,
    write_acl_compact,
    write_block_array,
    write_compact_blocks,
    write_permission_status,
    write_xattr_edit_log,
)


def read_rpc_ids(r: Reader) -> tuple[bytes, int]:
    """The retry-cache ids: client id (16-bit length + bytes) and call id (int)."""
    return r.short_bytes(), r.int32()


def write_rpc_ids(w: Writer, client_id: bytes, call_id: int) -> None:
    """Write the retry-cache ids."""
    w.short_bytes(client_id)
    w.int32(call_id)


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class AddOp(Op):
    """OP_ADD: create (or reopen) a file."""

    OPCODE = oc.OP_ADD
    length: int = 0
    inode_id: int
    path: str
    replication: int
    mtime: int
    atime: int
    block_size: int
    blocks: tuple[Block, ...] = ()
    permission_status: PermissionStatus
    acls: tuple[AclEntry, ...] = ()
    xattrs: tuple[XAttr, ...] = ()
    client_name: str
    client_machine: str
    overwrite: bool = False
    storage_policy_id: int = 0
    erasure_coding_policy_id: int = 0
    rpc_client_id: bytes = b""
    rpc_call_id: int = INVALID_CALL_ID

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.long(self.inode_id)
        w.string(self.path)
        w.short(self.replication)
        w.long(self.mtime)
        w.long(self.atime)
        w.long(self.block_size)
        write_block_array(w, self.blocks)
        write_permission_status(w, self.permission_status)
        write_acl_compact(w, self.acls)
        write_xattr_edit_log(w, None, self.xattrs)
        w.string(self.client_name)
        w.string(self.client_machine)
        w.boolean(self.overwrite)
        w.byte(self.storage_policy_id)
        w.byte(self.erasure_coding_policy_id)
        write_rpc_ids(w, self.rpc_client_id, self.rpc_call_id)

    @classmethod
    def decode_body(cls, r: Reader) -> AddOp:
        """Read the body."""
        inode_id = r.long()
        path = r.string()
        replication = r.short()
        mtime = r.long()
        atime = r.long()
        block_size = r.long()
        blocks = read_block_array(r)
        perm = read_permission_status(r)
        acls = read_acl_compact(r)
        _, xattrs = read_xattr_edit_log(r)
        client_name = r.string()
        client_machine = r.string()
        overwrite = r.boolean()
        storage_policy_id = r.byte()
        ec_policy_id = r.byte()
        cid, call = read_rpc_ids(r)
        return cls(
            inode_id=inode_id,
            path=path,
            replication=replication,
            mtime=mtime,
            atime=atime,
            block_size=block_size,
            blocks=blocks,
            permission_status=perm,
            acls=acls,
            xattrs=xattrs,
            client_name=client_name,
            client_machine=client_machine,
            overwrite=overwrite,
            storage_policy_id=storage_policy_id,
            erasure_coding_policy_id=ec_policy_id,
            rpc_client_id=cid,
            rpc_call_id=call,
        )


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class CloseOp(Op):
    """OP_CLOSE: complete a file (its final block list, times and owner)."""

    OPCODE = oc.OP_CLOSE
    length: int = 0
    inode_id: int = 0
    path: str
    replication: int
    mtime: int
    atime: int
    block_size: int
    blocks: tuple[Block, ...] = ()
    permission_status: PermissionStatus

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.long(self.inode_id)
        w.string(self.path)
        w.short(self.replication)
        w.long(self.mtime)
        w.long(self.atime)
        w.long(self.block_size)
        write_block_array(w, self.blocks)
        write_permission_status(w, self.permission_status)

    @classmethod
    def decode_body(cls, r: Reader) -> CloseOp:
        """Read the body."""
        return cls(
            inode_id=r.long(),
            path=r.string(),
            replication=r.short(),
            mtime=r.long(),
            atime=r.long(),
            block_size=r.long(),
            blocks=read_block_array(r),
            permission_status=read_permission_status(r),
        )


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class AppendOp(Op):
    """OP_APPEND: reopen a file for append."""

    OPCODE = oc.OP_APPEND
    path: str
    client_name: str
    client_machine: str
    new_block: bool = False
    rpc_client_id: bytes = b""
    rpc_call_id: int = INVALID_CALL_ID

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.string(self.path)
        w.string(self.client_name)
        w.string(self.client_machine)
        w.boolean(self.new_block)
        write_rpc_ids(w, self.rpc_client_id, self.rpc_call_id)

    @classmethod
    def decode_body(cls, r: Reader) -> AppendOp:
        """Read the body."""
        path, name, machine, new_block = r.string(), r.string(), r.string(), r.boolean()
        cid, call = read_rpc_ids(r)
        return cls(
            path=path,
            client_name=name,
            client_machine=machine,
            new_block=new_block,
            rpc_client_id=cid,
            rpc_call_id=call,
        )


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class AddBlockOp(Op):
    """OP_ADD_BLOCK: a new last block (and the penultimate one's final state)."""

    OPCODE = oc.OP_ADD_BLOCK
    path: str
    penultimate_block: Block | None = None
    last_block: Block
    rpc_client_id: bytes = b""
    rpc_call_id: int = INVALID_CALL_ID

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.string(self.path)
        blocks = (
            (self.last_block,)
            if self.penultimate_block is None
            else (self.penultimate_block, self.last_block)
        )
        write_compact_blocks(w, blocks)
        write_rpc_ids(w, self.rpc_client_id, self.rpc_call_id)

    @classmethod
    def decode_body(cls, r: Reader) -> AddBlockOp:
        """Read the body."""
        path = r.string()
        at = r.pos
        blocks = read_compact_blocks(r)
        if len(blocks) not in (1, 2):
            raise r.bad(f"OP_ADD_BLOCK carries {len(blocks)} blocks, not 1 or 2", at)
        cid, call = read_rpc_ids(r)
        return cls(
            path=path,
            penultimate_block=blocks[0] if len(blocks) == 2 else None,
            last_block=blocks[-1],
            rpc_client_id=cid,
            rpc_call_id=call,
        )


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateBlocksOp(Op):
    """OP_UPDATE_BLOCKS: replace a file's block list."""

    OPCODE = oc.OP_UPDATE_BLOCKS
    path: str
    blocks: tuple[Block, ...] = ()
    rpc_client_id: bytes = b""
    rpc_call_id: int = INVALID_CALL_ID

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.string(self.path)
        write_compact_blocks(w, self.blocks)
        write_rpc_ids(w, self.rpc_client_id, self.rpc_call_id)

    @classmethod
    def decode_body(cls, r: Reader) -> UpdateBlocksOp:
        """Read the body."""
        path = r.string()
        blocks = read_compact_blocks(r)
        cid, call = read_rpc_ids(r)
        return cls(path=path, blocks=blocks, rpc_client_id=cid, rpc_call_id=call)


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class TruncateOp(Op):
    """OP_TRUNCATE: cut a file to a new length."""

    OPCODE = oc.OP_TRUNCATE
    src: str
    client_name: str
    client_machine: str
    new_length: int
    timestamp: int
    truncate_block: Block | None = None

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.string(self.src)
        w.string(self.client_name)
        w.string(self.client_machine)
        w.long(self.new_length)
        w.long(self.timestamp)
        write_compact_blocks(w, () if self.truncate_block is None else (self.truncate_block,))

    @classmethod
    def decode_body(cls, r: Reader) -> TruncateOp:
        """Read the body."""
        src, name, machine = r.string(), r.string(), r.string()
        new_length, timestamp = r.long(), r.long()
        at = r.pos
        blocks = read_compact_blocks(r)
        if len(blocks) > 1:
            raise r.bad(f"OP_TRUNCATE carries {len(blocks)} blocks, at most 1", at)
        return cls(
            src=src,
            client_name=name,
            client_machine=machine,
            new_length=new_length,
            timestamp=timestamp,
            truncate_block=blocks[0] if blocks else None,
        )


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class ReassignLeaseOp(Op):
    """OP_REASSIGN_LEASE: move a file's lease to a new holder."""

    OPCODE = oc.OP_REASSIGN_LEASE
    lease_holder: str
    path: str
    new_holder: str

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.string(self.lease_holder)
        w.string(self.path)
        w.string(self.new_holder)

    @classmethod
    def decode_body(cls, r: Reader) -> ReassignLeaseOp:
        """Read the body."""
        return cls(lease_holder=r.string(), path=r.string(), new_holder=r.string())


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class SetGenstampV1Op(Op):
    """OP_SET_GENSTAMP_V1: the legacy generation stamp."""

    OPCODE = oc.OP_SET_GENSTAMP_V1
    genstamp: int

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.long(self.genstamp)

    @classmethod
    def decode_body(cls, r: Reader) -> SetGenstampV1Op:
        """Read the body."""
        return cls(genstamp=r.long())


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class SetGenstampV2Op(Op):
    """OP_SET_GENSTAMP_V2: the generation stamp of sequential block ids."""

    OPCODE = oc.OP_SET_GENSTAMP_V2
    genstamp_v2: int

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.long(self.genstamp_v2)

    @classmethod
    def decode_body(cls, r: Reader) -> SetGenstampV2Op:
        """Read the body."""
        return cls(genstamp_v2=r.long())


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class AllocateBlockIdOp(Op):
    """OP_ALLOCATE_BLOCK_ID: the last allocated block id."""

    OPCODE = oc.OP_ALLOCATE_BLOCK_ID
    block_id: int

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        w.long(self.block_id)

    @classmethod
    def decode_body(cls, r: Reader) -> AllocateBlockIdOp:
        """Read the body."""
        return cls(block_id=r.long())
