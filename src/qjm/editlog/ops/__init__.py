"""Typed HDFS edit-log ops of layout -64: decode and encode each body exactly as HDFS does.

for txid, op in read_ops(data): ...           # a whole edits file
op = decode_op(raw)                           # raw from qjm.editlog.framing.iter_ops
frame = encode_op(op, txid)                   # opcode, length, txid, body, crc
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from qjm.editlog import framing
from qjm.editlog.ops import opcodes
from qjm.editlog.ops.admin_ops import (
    AddCacheDirectiveOp,
    AddCachePoolOp,
    AddErasureCodingPolicyOp,
    AllowSnapshotOp,
    CancelDelegationTokenOp,
    CreateSnapshotOp,
    DeleteSnapshotOp,
    DisableErasureCodingPolicyOp,
    DisallowSnapshotOp,
    EnableErasureCodingPolicyOp,
    EndLogSegmentOp,
    GetDelegationTokenOp,
    ModifyCacheDirectiveOp,
    ModifyCachePoolOp,
    OpaqueOp,
    RemoveCacheDirectiveOp,
    RemoveCachePoolOp,
    RemoveErasureCodingPolicyOp,
    RenameSnapshotOp,
    RenewDelegationTokenOp,
    RollingUpgradeFinalizeOp,
    RollingUpgradeStartOp,
    StartLogSegmentOp,
    UpdateMasterKeyOp,
)
from qjm.editlog.ops.base import OP_CLASSES, Op, OpDecodeError, OpEncodeError
from qjm.editlog.ops.codec import BodyError, Reader, Writer
from qjm.editlog.ops.inode_ops import (
    AddBlockOp,
    AddOp,
    AllocateBlockIdOp,
    AppendOp,
    CloseOp,
    ReassignLeaseOp,
    SetGenstampV1Op,
    SetGenstampV2Op,
    TruncateOp,
    UpdateBlocksOp,
)
from qjm.editlog.ops.namespace_ops import (
    ClearNSQuotaOp,
    ConcatDeleteOp,
    DeleteOp,
    MkdirOp,
    RemoveXAttrOp,
    RenameOldOp,
    RenameOp,
    SetAclOp,
    SetNSQuotaOp,
    SetOwnerOp,
    SetPermissionsOp,
    SetQuotaByStorageTypeOp,
    SetQuotaOp,
    SetReplicationOp,
    SetStoragePolicyOp,
    SetXAttrOp,
    SymlinkOp,
    TimesOp,
)
from qjm.editlog.ops.opcodes import opcode_name
from qjm.editlog.ops.types import (
    AclEntry,
    Block,
    DelegationKey,
    DelegationTokenIdentifier,
    PermissionStatus,
    XAttr,
)
from qjm.errors import EditLogError

SUPPORTED_LAYOUT = framing.LAYOUT_VERSION


def _check_layout(layout_version: int) -> None:
    if layout_version != SUPPORTED_LAYOUT:
        raise EditLogError(
            f"op bodies of layout {layout_version} are not understood: only layout "
            f"{SUPPORTED_LAYOUT} is (the framing of other layouts can still be scanned)"
        )


def decode_op(raw: framing.RawOp, layout_version: int = SUPPORTED_LAYOUT) -> Op:
    """Decode one framed op's body into its typed op; raise OpDecodeError if it is not one."""
    _check_layout(layout_version)
    cls = OP_CLASSES.get(raw.opcode)
    if cls is None:
        raise OpDecodeError(
            f"op txid {raw.txid} at offset {raw.offset} has unknown opcode {raw.opcode}",
            offset=raw.offset,
            txid=raw.txid,
            opcode=raw.opcode,
        )
    body = raw.body
    r = Reader(body)
    try:
        op = cls.decode_body(r)
    except BodyError as e:
        raise OpDecodeError(
            f"{opcode_name(raw.opcode)} txid {raw.txid} at offset {raw.offset} is corrupt: "
            f"{e} (file offset {raw.offset + 13 + e.pos})",
            offset=raw.offset,
            txid=raw.txid,
            opcode=raw.opcode,
        ) from None
    if r.pos != len(body):
        raise OpDecodeError(
            f"{opcode_name(raw.opcode)} txid {raw.txid} at offset {raw.offset} is corrupt: "
            f"{len(body) - r.pos} bytes left over after its last field",
            offset=raw.offset,
            txid=raw.txid,
            opcode=raw.opcode,
        )
    return op


def encode_body(op: Op) -> bytes:
    """The body of an op as HDFS writes it; raise OpEncodeError on unrepresentable values."""
    w = Writer()
    try:
        op.encode_body(w)
    except (ValueError, struct.error, OverflowError, TypeError) as e:
        raise OpEncodeError(f"cannot encode {op.opcode_name}: {e}") from None
    return bytes(w.buf)


def encode_op(op: Op, txid: int) -> bytes:
    """One full frame for an op: opcode, length, txid, body and CRC32."""
    return framing.encode_op(op.OPCODE, txid, encode_body(op))


def encode_ops(ops: Iterator[tuple[int, Op]] | list[tuple[int, Op]]) -> bytes:
    """An edits file: the layout -64 header then one frame per (txid, op)."""
    parts = [framing.header(SUPPORTED_LAYOUT)]
    parts.extend(encode_op(op, txid) for txid, op in ops)
    return b"".join(parts)


def iter_decoded(data: bytes | memoryview, offset: int = 0) -> Iterator[tuple[int, Op]]:
    """(txid, op) for framed ops without a file header (e.g. a journal batch)."""
    for raw in framing.iter_ops(data, offset):
        yield raw.txid, decode_op(raw)


def read_ops(data: bytes | memoryview) -> Iterator[tuple[int, Op]]:
    """(txid, op) for every op of an edits file (header first, stops at 0xFF padding)."""
    _check_layout(framing.read_header(data))
    for raw in framing.iter_ops(data, framing.HEADER_LEN):
        yield raw.txid, decode_op(raw)


__all__ = [
    "OP_CLASSES",
    "AclEntry",
    "AddBlockOp",
    "AddCacheDirectiveOp",
    "AddCachePoolOp",
    "AddErasureCodingPolicyOp",
    "AddOp",
    "AllocateBlockIdOp",
    "AllowSnapshotOp",
    "AppendOp",
    "Block",
    "CancelDelegationTokenOp",
    "ClearNSQuotaOp",
    "CloseOp",
    "ConcatDeleteOp",
    "CreateSnapshotOp",
    "DelegationKey",
    "DelegationTokenIdentifier",
    "DeleteOp",
    "DeleteSnapshotOp",
    "DisableErasureCodingPolicyOp",
    "DisallowSnapshotOp",
    "EnableErasureCodingPolicyOp",
    "EndLogSegmentOp",
    "GetDelegationTokenOp",
    "MkdirOp",
    "ModifyCacheDirectiveOp",
    "ModifyCachePoolOp",
    "Op",
    "OpDecodeError",
    "OpEncodeError",
    "OpaqueOp",
    "PermissionStatus",
    "ReassignLeaseOp",
    "RemoveCacheDirectiveOp",
    "RemoveCachePoolOp",
    "RemoveErasureCodingPolicyOp",
    "RemoveXAttrOp",
    "RenameOldOp",
    "RenameOp",
    "RenameSnapshotOp",
    "RenewDelegationTokenOp",
    "RollingUpgradeFinalizeOp",
    "RollingUpgradeStartOp",
    "SetAclOp",
    "SetGenstampV1Op",
    "SetGenstampV2Op",
    "SetNSQuotaOp",
    "SetOwnerOp",
    "SetPermissionsOp",
    "SetQuotaByStorageTypeOp",
    "SetQuotaOp",
    "SetReplicationOp",
    "SetStoragePolicyOp",
    "SetXAttrOp",
    "StartLogSegmentOp",
    "SymlinkOp",
    "TimesOp",
    "TruncateOp",
    "UpdateBlocksOp",
    "UpdateMasterKeyOp",
    "XAttr",
    "decode_op",
    "encode_body",
    "encode_op",
    "encode_ops",
    "iter_decoded",
    "opcode_name",
    "opcodes",
    "read_ops",
]
