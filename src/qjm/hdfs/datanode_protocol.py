"""DatanodeProtocol and ClientDatanodeProtocol: names, methods, plain values (design §B.11).

Both sides speak in the plain values defined here (frozen dataclasses, no wire messages);
the to_proto/from_proto functions are the one place a message becomes a value and back.
A message a peer sent that breaks the contract (a command without its body, a report in
both encodings) raises DatanodeProtocolError naming what is wrong.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum, IntEnum
from typing import cast

from qjm.errors import QjmError
from qjm.hdfs.block_report import (
    DEFAULT_MAX_BLOCKS,
    BlockReportError,
    ReportedReplica,
    decode_buffers_columns,
    decode_longs_columns,
    encode_buffers,
    encode_longs,
)
from qjm.hdfs.proto import ClientDatanodeProtocol_pb2 as cdp
from qjm.hdfs.proto import DatanodeProtocol_pb2 as dnp
from qjm.hdfs.proto import HdfsServer_pb2 as srv
from qjm.hdfs.proto import Security_pb2 as sec
from qjm.hdfs.proto import hdfs_pb2 as hdfs
from qjm.ipc.methods import MethodSpec, method_table
from qjm.security.block_token import BlockKey, ExportedKeys, Token

DATANODE_PROTOCOL = "org.apache.hadoop.hdfs.server.protocol.DatanodeProtocol"
CLIENT_DATANODE_PROTOCOL = "org.apache.hadoop.hdfs.protocol.ClientDatanodeProtocol"
# NamespaceInfo.Capability.STORAGE_BLOCK_REPORT_BUFFERS: the NameNode reads buffers reports
CAPABILITY_BLOCK_REPORT_BUFFERS = 1
CAPABILITIES_SUPPORTED = CAPABILITY_BLOCK_REPORT_BUFFERS
SOFTWARE_VERSION = "3.3.6"  # the Hadoop release whose wire qjm follows (design §A.4)

UNREGISTERED_NODE = "org.apache.hadoop.hdfs.protocol.UnregisteredNodeException"
DISALLOWED_DATANODE = "org.apache.hadoop.hdfs.server.protocol.DisallowedDatanodeException"
INCORRECT_VERSION = "org.apache.hadoop.hdfs.server.common.IncorrectVersionException"
_UINT32 = (1 << 32) - 1
_UINT64 = (1 << 64) - 1

DATANODE_METHODS: dict[str, MethodSpec] = method_table(
    MethodSpec("versionRequest", srv.VersionRequestProto, srv.VersionResponseProto),
    MethodSpec(
        "registerDatanode", dnp.RegisterDatanodeRequestProto, dnp.RegisterDatanodeResponseProto
    ),
    MethodSpec("sendHeartbeat", dnp.HeartbeatRequestProto, dnp.HeartbeatResponseProto),
    MethodSpec("blockReport", dnp.BlockReportRequestProto, dnp.BlockReportResponseProto),
    MethodSpec(
        "blockReceivedAndDeleted",
        dnp.BlockReceivedAndDeletedRequestProto,
        dnp.BlockReceivedAndDeletedResponseProto,
    ),
    MethodSpec("errorReport", dnp.ErrorReportRequestProto, dnp.ErrorReportResponseProto),
    MethodSpec(
        "reportBadBlocks", dnp.ReportBadBlocksRequestProto, dnp.ReportBadBlocksResponseProto
    ),
    MethodSpec(
        "commitBlockSynchronization",
        dnp.CommitBlockSynchronizationRequestProto,
        dnp.CommitBlockSynchronizationResponseProto,
    ),
)

CLIENT_DATANODE_METHODS: dict[str, MethodSpec] = method_table(
    MethodSpec(
        "getReplicaVisibleLength",
        cdp.GetReplicaVisibleLengthRequestProto,
        cdp.GetReplicaVisibleLengthResponseProto,
    ),
)


class DatanodeProtocolError(QjmError):
    """A DatanodeProtocol message that breaks the contract; the message says how."""

    java_class = "java.io.IOException"


class UnregisteredNodeError(QjmError):
    """A call from a DataNode this NameNode does not know (it must register again)."""

    java_class = UNREGISTERED_NODE


class DisallowedDatanodeError(QjmError):
    """A DataNode this NameNode does not let in."""

    java_class = DISALLOWED_DATANODE


class IncorrectVersionError(QjmError):
    """A peer of another cluster, namespace or block pool, or an unsupported version."""

    java_class = INCORRECT_VERSION


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


# ---- identities ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DatanodeId:
    """Who a DataNode is: its address, lasting uuid and ports (DatanodeIDProto)."""

    ip_addr: str
    host_name: str
    datanode_uuid: str
    xfer_port: int
    info_port: int
    ipc_port: int
    info_secure_port: int = 0

    @property
    def xfer_address(self) -> str:
        """host:port of its DataTransferProtocol server."""
        return f"{self.ip_addr}:{self.xfer_port}"


@dataclass(frozen=True)
class StorageInfo:
    """What every node of one file system shares (StorageInfoProto)."""

    layout_version: int  # negative, as HDFS counts them
    namespace_id: int
    cluster_id: str
    ctime: int = 0


@dataclass(frozen=True)
class NamespaceInfo:
    """A NameNode's namespace as versionRequest answers it."""

    block_pool_id: str
    storage: StorageInfo
    software_version: str = SOFTWARE_VERSION
    build_version: str = ""
    capabilities: int = CAPABILITIES_SUPPORTED

    @property
    def reads_buffers(self) -> bool:
        """Whether this NameNode reads block reports in the buffers encoding."""
        return bool(self.capabilities & CAPABILITY_BLOCK_REPORT_BUFFERS)


@dataclass(frozen=True)
class DatanodeRegistration:
    """A DataNode as it registers and names itself in every later call."""

    datanode: DatanodeId
    storage: StorageInfo
    software_version: str = SOFTWARE_VERSION
    # the NameNode's block keys, in the registration it returns (design §S.9)
    keys: ExportedKeys | None = None


class HAState(Enum):
    """What a NameNode tells DataNodes of its HA state (NNHAStatusHeartbeatProto.State)."""

    ACTIVE = 0
    STANDBY = 1


@dataclass(frozen=True)
class HAStatus:
    """A NameNode's HA state and the newest txid it applied or wrote."""

    state: HAState
    txid: int


# ---- storages and replicas ------------------------------------------------------------


@dataclass(frozen=True)
class DatanodeStorage:
    """One storage (data directory) of a DataNode."""

    storage_uuid: str
    state: str = "NORMAL"  # DatanodeStorageProto.StorageState name
    storage_type: str = "DISK"  # StorageTypeProto name


@dataclass(frozen=True)
class StorageReport:
    """A storage's space as a heartbeat reports it."""

    storage: DatanodeStorage
    capacity: int = 0
    dfs_used: int = 0
    remaining: int = 0
    block_pool_used: int = 0
    non_dfs_used: int = 0
    failed: bool = False


@dataclass(frozen=True)
class StorageBlockReport:
    """Every replica of one storage, as a full block report lists them."""

    storage: DatanodeStorage
    replicas: Sequence[ReportedReplica]  # a tuple, or BlockColumns as decoded


@dataclass(frozen=True)
class BlockReportContext:
    """Which RPC of a (possibly split) full block report this is."""

    total_rpcs: int
    cur_rpc: int
    report_id: int
    lease_id: int = 0
    sorted: bool = False


@dataclass(frozen=True)
class Block:
    """A block within its pool: id, generation stamp, length."""

    block_id: int
    gen_stamp: int
    num_bytes: int = 0


@dataclass(frozen=True)
class ExtendedBlock:
    """A block with its pool."""

    pool_id: str
    block_id: int
    gen_stamp: int
    num_bytes: int = 0


class BlockStatus(IntEnum):
    """What happened to a replica, in an incremental report."""

    RECEIVING = 1
    RECEIVED = 2
    DELETED = 3


@dataclass(frozen=True)
class ReceivedDeletedBlock:
    """One replica received, being received, or deleted."""

    block: Block
    status: BlockStatus
    delete_hint: str = ""


@dataclass(frozen=True)
class StorageReceivedDeleted:
    """An incremental report's changes on one storage."""

    storage: DatanodeStorage
    blocks: tuple[ReceivedDeletedBlock, ...]


@dataclass(frozen=True)
class BadBlock:
    """A replica found corrupt, and where (reportBadBlocks)."""

    block: ExtendedBlock
    datanodes: tuple[DatanodeId, ...]
    storage_uuids: tuple[str, ...] = ()


class ErrorCode(IntEnum):
    """errorReport's codes."""

    NOTIFY = 0
    DISK_ERROR = 1
    INVALID_BLOCK = 2
    FATAL_DISK_ERROR = 3


# ---- commands -------------------------------------------------------------------------


@dataclass(frozen=True)
class TransferTarget:
    """Where to copy a replica to."""

    datanode: DatanodeId
    storage_uuid: str = ""
    storage_type: str = "DISK"


@dataclass(frozen=True)
class TransferCommand:
    """Copy each block to its targets (BlockCommand TRANSFER)."""

    pool_id: str
    blocks: tuple[Block, ...]
    targets: tuple[tuple[TransferTarget, ...], ...]  # one tuple per block


@dataclass(frozen=True)
class InvalidateCommand:
    """Delete these replicas (BlockCommand INVALIDATE)."""

    pool_id: str
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class RecoveringBlock:
    """A block to recover under a new generation stamp, with its replicas' holders."""

    block: ExtendedBlock
    new_gen_stamp: int
    locations: tuple[DatanodeId, ...]
    storage_uuids: tuple[str, ...] = ()
    truncate_block: Block | None = None


@dataclass(frozen=True)
class RecoveryCommand:
    """Recover these blocks (BlockRecoveryCommand)."""

    blocks: tuple[RecoveringBlock, ...]


@dataclass(frozen=True)
class FinalizeCommand:
    """Finalize the block pool's upgrade (FinalizeCommand)."""

    pool_id: str


@dataclass(frozen=True)
class RegisterCommand:
    """Register again with the NameNode that sent this."""


@dataclass(frozen=True)
class KeyUpdateCommand:
    """A NameNode's block keys after it rolled them (design §S.9); None: tokens are off."""

    keys: ExportedKeys | None = None


@dataclass(frozen=True)
class OtherCommand:
    """A command qjm's DataNode does not carry out (named for the log)."""

    kind: str
    detail: str = ""


DatanodeCommand = (
    TransferCommand
    | InvalidateCommand
    | RecoveryCommand
    | FinalizeCommand
    | RegisterCommand
    | KeyUpdateCommand
    | OtherCommand
)


@dataclass(frozen=True)
class HeartbeatFacts:
    """What a heartbeat carries besides the registration."""

    reports: tuple[StorageReport, ...]
    xceiver_count: int = 0
    xmits_in_progress: int = 0
    failed_volumes: int = 0
    cache_capacity: int = 0
    cache_used: int = 0


@dataclass(frozen=True)
class HeartbeatAnswer:
    """A NameNode's answer to a heartbeat: commands and its HA status."""

    commands: tuple[DatanodeCommand, ...]
    ha_status: HAStatus
    full_block_report_lease_id: int = 0


# ---- conversions ----------------------------------------------------------------------


def _need(message: object, name: str, what: str) -> None:
    has = getattr(message, "HasField")  # noqa: B009
    if not has(name):
        raise DatanodeProtocolError(f"{what} lacks its {name}")


def datanode_id_to_proto(d: DatanodeId) -> hdfs.DatanodeIDProto:
    """DatanodeIDProto of d."""
    return hdfs.DatanodeIDProto(
        ipAddr=d.ip_addr,
        hostName=d.host_name,
        datanodeUuid=d.datanode_uuid,
        xferPort=d.xfer_port,
        infoPort=d.info_port,
        ipcPort=d.ipc_port,
        infoSecurePort=d.info_secure_port,
    )


def datanode_id_from_proto(p: hdfs.DatanodeIDProto) -> DatanodeId:
    """The DatanodeId a DatanodeIDProto names."""
    return DatanodeId(
        p.ipAddr, p.hostName, p.datanodeUuid, p.xferPort, p.infoPort, p.ipcPort, p.infoSecurePort
    )


def datanode_info_to_proto(d: DatanodeId) -> hdfs.DatanodeInfoProto:
    """A DatanodeInfoProto naming d (no usage figures)."""
    return hdfs.DatanodeInfoProto(id=datanode_id_to_proto(d))


def storage_info_to_proto(s: StorageInfo) -> srv.StorageInfoProto:
    """StorageInfoProto of s (the layout version as its uint32)."""
    return srv.StorageInfoProto(
        layoutVersion=s.layout_version & _UINT32,
        namespceID=s.namespace_id & _UINT32,
        clusterID=s.cluster_id,
        cTime=s.ctime & _UINT64,
    )


def storage_info_from_proto(p: srv.StorageInfoProto) -> StorageInfo:
    """The StorageInfo of a StorageInfoProto."""
    return StorageInfo(_signed(p.layoutVersion, 32), p.namespceID, p.clusterID, p.cTime)


def namespace_info_to_proto(n: NamespaceInfo, ha: HAState | None = None) -> srv.NamespaceInfoProto:
    """NamespaceInfoProto of n, with the sender's HA state when given."""
    p = srv.NamespaceInfoProto(
        buildVersion=n.build_version,
        unused=0,
        blockPoolID=n.block_pool_id,
        storageInfo=storage_info_to_proto(n.storage),
        softwareVersion=n.software_version,
        capabilities=n.capabilities,
    )
    if ha is not None:
        p.state = ha.value  # type: ignore[assignment]
    return p


def namespace_info_from_proto(p: srv.NamespaceInfoProto) -> NamespaceInfo:
    """The NamespaceInfo of a NamespaceInfoProto."""
    return NamespaceInfo(
        p.blockPoolID,
        storage_info_from_proto(p.storageInfo),
        p.softwareVersion,
        p.buildVersion,
        p.capabilities,
    )


def _key_to_proto(k: BlockKey) -> srv.BlockKeyProto:
    key_id = k.key_id & 0xFFFFFFFF  # a Java int as uint32
    return srv.BlockKeyProto(keyId=key_id, expiryDate=k.expiry_ms, keyBytes=k.secret)


def _key_from_proto(p: srv.BlockKeyProto) -> BlockKey:
    key_id = p.keyId - (1 << 32) if p.keyId >= 1 << 31 else p.keyId  # a Java int
    return BlockKey(key_id, p.expiryDate, p.keyBytes)


def keys_to_proto(k: ExportedKeys | None) -> srv.ExportedBlockKeysProto:
    """ExportedBlockKeysProto of k; None is HDFS's "tokens off" (no keys)."""
    if k is None:
        return srv.ExportedBlockKeysProto(
            isBlockTokenEnabled=False,
            keyUpdateInterval=0,
            tokenLifeTime=0,
            currentKey=srv.BlockKeyProto(keyId=0, expiryDate=0),
        )
    p = srv.ExportedBlockKeysProto(
        isBlockTokenEnabled=k.enabled,
        keyUpdateInterval=k.key_update_interval_ms,
        tokenLifeTime=k.token_lifetime_ms,
        currentKey=_key_to_proto(k.current),
    )
    p.allKeys.extend(_key_to_proto(x) for x in k.all_keys)
    return p


def keys_from_proto(p: srv.ExportedBlockKeysProto) -> ExportedKeys | None:
    """The ExportedKeys of a proto; None when its NameNode has block tokens off."""
    if not p.isBlockTokenEnabled:
        return None
    return ExportedKeys(
        enabled=True,
        key_update_interval_ms=p.keyUpdateInterval,
        token_lifetime_ms=p.tokenLifeTime,
        current=_key_from_proto(p.currentKey),
        all_keys=tuple(_key_from_proto(x) for x in p.allKeys),
    )


def registration_to_proto(r: DatanodeRegistration) -> dnp.DatanodeRegistrationProto:
    """DatanodeRegistrationProto of r (with the NameNode's block keys, when it has any)."""
    return dnp.DatanodeRegistrationProto(
        datanodeID=datanode_id_to_proto(r.datanode),
        storageInfo=storage_info_to_proto(r.storage),
        keys=keys_to_proto(r.keys),
        softwareVersion=r.software_version,
    )


def registration_from_proto(p: dnp.DatanodeRegistrationProto) -> DatanodeRegistration:
    """The DatanodeRegistration of a DatanodeRegistrationProto."""
    return DatanodeRegistration(
        datanode_id_from_proto(p.datanodeID),
        storage_info_from_proto(p.storageInfo),
        p.softwareVersion,
        keys_from_proto(p.keys),
    )


def token_to_proto(t: Token | None) -> sec.TokenProto:
    """The TokenProto of a block token; None is the empty token (tokens off)."""
    if t is None:
        return sec.TokenProto(identifier=b"", password=b"", kind="", service="")
    return sec.TokenProto(
        identifier=t.identifier, password=t.password, kind=t.kind, service=t.service
    )


def token_from_proto(p: sec.TokenProto) -> Token:
    """The Token a TokenProto carries."""
    return Token(p.identifier, p.password, p.kind, p.service)


def storage_to_proto(s: DatanodeStorage) -> hdfs.DatanodeStorageProto:
    """DatanodeStorageProto of s."""
    try:
        return hdfs.DatanodeStorageProto(
            storageUuid=s.storage_uuid,
            state=s.state,
            storageType=s.storage_type,
        )
    except ValueError as e:
        raise DatanodeProtocolError(f"storage {s.storage_uuid}: {e}") from None


def storage_from_proto(p: hdfs.DatanodeStorageProto) -> DatanodeStorage:
    """The DatanodeStorage of a DatanodeStorageProto."""
    return DatanodeStorage(
        p.storageUuid,
        hdfs.DatanodeStorageProto.StorageState.Name(p.state),
        hdfs.StorageTypeProto.Name(p.storageType),
    )


def storage_report_to_proto(r: StorageReport) -> hdfs.StorageReportProto:
    """StorageReportProto of r (storageUuid and storage both set, as HDFS sends)."""
    return hdfs.StorageReportProto(
        storageUuid=r.storage.storage_uuid,
        failed=r.failed,
        capacity=r.capacity,
        dfsUsed=r.dfs_used,
        remaining=r.remaining,
        blockPoolUsed=r.block_pool_used,
        storage=storage_to_proto(r.storage),
        nonDfsUsed=r.non_dfs_used,
    )


def storage_report_from_proto(p: hdfs.StorageReportProto) -> StorageReport:
    """The StorageReport of a StorageReportProto (the old storageUuid when storage is absent)."""
    storage = (
        storage_from_proto(p.storage) if p.HasField("storage") else DatanodeStorage(p.storageUuid)
    )
    return StorageReport(
        storage,
        p.capacity,
        p.dfsUsed,
        p.remaining,
        p.blockPoolUsed,
        p.nonDfsUsed,
        p.failed,
    )


def block_to_proto(b: Block) -> hdfs.BlockProto:
    """BlockProto of b."""
    return hdfs.BlockProto(blockId=b.block_id & _UINT64, genStamp=b.gen_stamp, numBytes=b.num_bytes)


def block_from_proto(p: hdfs.BlockProto) -> Block:
    """The Block of a BlockProto (the id as HDFS's signed long)."""
    return Block(_signed(p.blockId, 64), p.genStamp, p.numBytes)


def extended_block_to_proto(b: ExtendedBlock) -> hdfs.ExtendedBlockProto:
    """ExtendedBlockProto of b."""
    return hdfs.ExtendedBlockProto(
        poolId=b.pool_id,
        blockId=b.block_id & _UINT64,
        generationStamp=b.gen_stamp,
        numBytes=b.num_bytes,
    )


def extended_block_from_proto(p: hdfs.ExtendedBlockProto) -> ExtendedBlock:
    """The ExtendedBlock of an ExtendedBlockProto."""
    return ExtendedBlock(p.poolId, _signed(p.blockId, 64), p.generationStamp, p.numBytes)


def storage_block_report_to_proto(
    r: StorageBlockReport, buffers: bool
) -> dnp.StorageBlockReportProto:
    """StorageBlockReportProto of r, in the buffers encoding or the legacy longs."""
    p = dnp.StorageBlockReportProto(storage=storage_to_proto(r.storage))
    if buffers:
        count, pieces = encode_buffers(r.replicas)
        p.numberOfBlocks = count
        p.blocksBuffers.extend(pieces)
    else:
        p.blocks.extend(encode_longs(r.replicas))
    return p


def storage_block_report_from_proto(
    p: dnp.StorageBlockReportProto, max_blocks: int = DEFAULT_MAX_BLOCKS
) -> StorageBlockReport:
    """The StorageBlockReport of a StorageBlockReportProto, whichever encoding it uses."""
    storage = storage_from_proto(p.storage)
    try:
        if p.HasField("numberOfBlocks"):
            if len(p.blocks):
                raise DatanodeProtocolError(
                    f"block report of storage {storage.storage_uuid} has both the legacy "
                    "blocks list and numberOfBlocks with blocksBuffers: send one"
                )
            replicas = decode_buffers_columns(p.numberOfBlocks, list(p.blocksBuffers), max_blocks)
        else:
            replicas = decode_longs_columns(list(p.blocks), max_blocks)
    except BlockReportError as e:
        raise DatanodeProtocolError(
            f"block report of storage {storage.storage_uuid}: {e}"
        ) from None
    return StorageBlockReport(storage, replicas)


def context_from_proto(p: dnp.BlockReportContextProto) -> BlockReportContext:
    """The BlockReportContext of a BlockReportContextProto."""
    return BlockReportContext(p.totalRpcs, p.curRpc, p.id, p.leaseId, p.sorted)


def context_to_proto(c: BlockReportContext) -> dnp.BlockReportContextProto:
    """BlockReportContextProto of c."""
    return dnp.BlockReportContextProto(
        totalRpcs=c.total_rpcs,
        curRpc=c.cur_rpc,
        id=c.report_id,
        leaseId=c.lease_id,
        sorted=c.sorted,
    )


def received_deleted_to_proto(s: StorageReceivedDeleted) -> dnp.StorageReceivedDeletedBlocksProto:
    """StorageReceivedDeletedBlocksProto of s."""
    p = dnp.StorageReceivedDeletedBlocksProto(
        storageUuid=s.storage.storage_uuid, storage=storage_to_proto(s.storage)
    )
    for b in s.blocks:
        entry = p.blocks.add(block=block_to_proto(b.block), status=int(b.status))
        if b.delete_hint:
            entry.deleteHint = b.delete_hint
    return p


def received_deleted_from_proto(
    p: dnp.StorageReceivedDeletedBlocksProto,
) -> StorageReceivedDeleted:
    """The StorageReceivedDeleted of a StorageReceivedDeletedBlocksProto."""
    storage = (
        storage_from_proto(p.storage) if p.HasField("storage") else DatanodeStorage(p.storageUuid)
    )
    return StorageReceivedDeleted(
        storage,
        tuple(
            ReceivedDeletedBlock(block_from_proto(b.block), BlockStatus(b.status), b.deleteHint)
            for b in p.blocks
        ),
    )


def _empty_token() -> sec.TokenProto:
    return sec.TokenProto(identifier=b"", password=b"", kind="", service="")


def bad_block_to_proto(b: BadBlock) -> hdfs.LocatedBlockProto:
    """The LocatedBlockProto reportBadBlocks carries for b."""
    p = hdfs.LocatedBlockProto(
        b=extended_block_to_proto(b.block),
        offset=0,
        corrupt=False,
        blockToken=_empty_token(),
    )
    p.locs.extend(datanode_info_to_proto(d) for d in b.datanodes)
    p.storageIDs.extend(b.storage_uuids)
    return p


def bad_block_from_proto(p: hdfs.LocatedBlockProto) -> BadBlock:
    """The BadBlock a LocatedBlockProto of reportBadBlocks names."""
    return BadBlock(
        extended_block_from_proto(p.b),
        tuple(datanode_id_from_proto(d.id) for d in p.locs),
        tuple(p.storageIDs),
    )


def _recovering_to_proto(r: RecoveringBlock) -> srv.RecoveringBlockProto:
    located = BadBlock(r.block, r.locations, r.storage_uuids)
    p = srv.RecoveringBlockProto(newGenStamp=r.new_gen_stamp, block=bad_block_to_proto(located))
    if r.truncate_block is not None:
        p.truncateBlock.CopyFrom(block_to_proto(r.truncate_block))
    return p


def _recovering_from_proto(p: srv.RecoveringBlockProto) -> RecoveringBlock:
    located = bad_block_from_proto(p.block)
    return RecoveringBlock(
        located.block,
        p.newGenStamp,
        located.datanodes,
        located.storage_uuids,
        block_from_proto(p.truncateBlock) if p.HasField("truncateBlock") else None,
    )


_CMD = dnp.DatanodeCommandProto
_BLK = dnp.BlockCommandProto


def command_to_proto(c: DatanodeCommand) -> dnp.DatanodeCommandProto:
    """DatanodeCommandProto of c."""
    if isinstance(c, TransferCommand):
        if len(c.targets) != len(c.blocks):
            raise DatanodeProtocolError(
                f"transfer command: {len(c.blocks)} blocks but {len(c.targets)} target lists"
            )
        blk = _BLK(action=_BLK.TRANSFER, blockPoolId=c.pool_id)
        blk.blocks.extend(block_to_proto(b) for b in c.blocks)
        for targets in c.targets:
            blk.targets.add().datanodes.extend(datanode_info_to_proto(t.datanode) for t in targets)
            blk.targetStorageUuids.add().storageUuids.extend(t.storage_uuid for t in targets)
            kinds = [hdfs.StorageTypeProto.Value(t.storage_type) for t in targets]
            blk.targetStorageTypes.add().storageTypes.extend(
                cast("list[hdfs.StorageTypeProto]", kinds)
            )
        return _CMD(cmdType=_CMD.BlockCommand, blkCmd=blk)
    if isinstance(c, InvalidateCommand):
        blk = _BLK(action=_BLK.INVALIDATE, blockPoolId=c.pool_id)
        blk.blocks.extend(block_to_proto(b) for b in c.blocks)
        return _CMD(cmdType=_CMD.BlockCommand, blkCmd=blk)
    if isinstance(c, RecoveryCommand):
        rec = dnp.BlockRecoveryCommandProto()
        rec.blocks.extend(_recovering_to_proto(r) for r in c.blocks)
        return _CMD(cmdType=_CMD.BlockRecoveryCommand, recoveryCmd=rec)
    if isinstance(c, FinalizeCommand):
        fin = dnp.FinalizeCommandProto(blockPoolId=c.pool_id)
        return _CMD(cmdType=_CMD.FinalizeCommand, finalizeCmd=fin)
    if isinstance(c, RegisterCommand):
        return _CMD(cmdType=_CMD.RegisterCommand, registerCmd=dnp.RegisterCommandProto())
    if isinstance(c, KeyUpdateCommand):
        keys = dnp.KeyUpdateCommandProto(keys=keys_to_proto(c.keys))
        return _CMD(cmdType=_CMD.KeyUpdateCommand, keyUpdateCmd=keys)
    raise DatanodeProtocolError(f"qjm does not send {c.kind} commands")


def command_from_proto(p: dnp.DatanodeCommandProto) -> DatanodeCommand:
    """The DatanodeCommand of a DatanodeCommandProto; OtherCommand for kinds qjm does not do."""
    kind = _CMD.Type.Name(p.cmdType)
    if p.cmdType == _CMD.BlockCommand:
        _need(p, "blkCmd", "BlockCommand")
        blk = p.blkCmd
        blocks = tuple(block_from_proto(b) for b in blk.blocks)
        if blk.action == _BLK.INVALIDATE:
            return InvalidateCommand(blk.blockPoolId, blocks)
        if blk.action == _BLK.TRANSFER:
            if len(blk.targets) != len(blocks):
                raise DatanodeProtocolError(
                    f"BlockCommand TRANSFER: {len(blocks)} blocks but {len(blk.targets)} "
                    "target lists"
                )
            targets = []
            for i, infos in enumerate(blk.targets):
                uuids = (
                    list(blk.targetStorageUuids[i].storageUuids)
                    if i < len(blk.targetStorageUuids)
                    else []
                )
                types = (
                    list(blk.targetStorageTypes[i].storageTypes)
                    if i < len(blk.targetStorageTypes)
                    else []
                )
                targets.append(
                    tuple(
                        TransferTarget(
                            datanode_id_from_proto(info.id),
                            uuids[j] if j < len(uuids) else "",
                            hdfs.StorageTypeProto.Name(types[j]) if j < len(types) else "DISK",
                        )
                        for j, info in enumerate(infos.datanodes)
                    )
                )
            return TransferCommand(blk.blockPoolId, blocks, tuple(targets))
        return OtherCommand(kind, _BLK.Action.Name(blk.action))
    if p.cmdType == _CMD.BlockRecoveryCommand:
        _need(p, "recoveryCmd", "BlockRecoveryCommand")
        return RecoveryCommand(tuple(_recovering_from_proto(r) for r in p.recoveryCmd.blocks))
    if p.cmdType == _CMD.FinalizeCommand:
        _need(p, "finalizeCmd", "FinalizeCommand")
        return FinalizeCommand(p.finalizeCmd.blockPoolId)
    if p.cmdType == _CMD.RegisterCommand:
        return RegisterCommand()
    if p.cmdType == _CMD.KeyUpdateCommand:
        _need(p, "keyUpdateCmd", "KeyUpdateCommand")
        return KeyUpdateCommand(keys_from_proto(p.keyUpdateCmd.keys))
    return OtherCommand(kind)


def ha_status_to_proto(s: HAStatus) -> srv.NNHAStatusHeartbeatProto:
    """NNHAStatusHeartbeatProto of s."""
    return srv.NNHAStatusHeartbeatProto(state=s.state.value, txid=max(0, s.txid))  # type: ignore[arg-type]


def ha_status_from_proto(p: srv.NNHAStatusHeartbeatProto) -> HAStatus:
    """The HAStatus of an NNHAStatusHeartbeatProto."""
    return HAStatus(HAState(p.state), p.txid)


def heartbeat_to_proto(
    registration: DatanodeRegistration, facts: HeartbeatFacts
) -> dnp.HeartbeatRequestProto:
    """The HeartbeatRequestProto a DataNode sends."""
    p = dnp.HeartbeatRequestProto(
        registration=registration_to_proto(registration),
        xmitsInProgress=facts.xmits_in_progress,
        xceiverCount=facts.xceiver_count,
        failedVolumes=facts.failed_volumes,
        cacheCapacity=facts.cache_capacity,
        cacheUsed=facts.cache_used,
    )
    p.reports.extend(storage_report_to_proto(r) for r in facts.reports)
    return p


def heartbeat_from_proto(p: dnp.HeartbeatRequestProto) -> HeartbeatFacts:
    """The HeartbeatFacts of a HeartbeatRequestProto."""
    return HeartbeatFacts(
        tuple(storage_report_from_proto(r) for r in p.reports),
        p.xceiverCount,
        p.xmitsInProgress,
        p.failedVolumes,
        p.cacheCapacity,
        p.cacheUsed,
    )


def heartbeat_answer_to_proto(a: HeartbeatAnswer) -> dnp.HeartbeatResponseProto:
    """The HeartbeatResponseProto of a."""
    p = dnp.HeartbeatResponseProto(
        haStatus=ha_status_to_proto(a.ha_status),
        fullBlockReportLeaseId=a.full_block_report_lease_id,
    )
    p.cmds.extend(command_to_proto(c) for c in a.commands)
    return p


def heartbeat_answer_from_proto(p: dnp.HeartbeatResponseProto) -> HeartbeatAnswer:
    """The HeartbeatAnswer of a HeartbeatResponseProto."""
    _need(p, "haStatus", "HeartbeatResponseProto")
    return HeartbeatAnswer(
        tuple(command_from_proto(c) for c in p.cmds),
        ha_status_from_proto(p.haStatus),
        p.fullBlockReportLeaseId,
    )


def replicas_of(reports: Iterable[StorageBlockReport]) -> int:
    """How many replicas the reports list together."""
    return sum(len(r.replicas) for r in reports)


@dataclass
class Counter:
    """Counts by name (a daemon exports them as metrics)."""

    counts: dict[str, int] = field(default_factory=dict)

    def add(self, name: str, n: int = 1) -> None:
        """Add n to name's count."""
        self.counts[name] = self.counts.get(name, 0) + n

    def __getitem__(self, name: str) -> int:
        return self.counts.get(name, 0)


def split_reports(
    reports: Sequence[StorageBlockReport], split_threshold: int
) -> list[list[StorageBlockReport]]:
    """The RPCs a full report goes in: one in all, or one per storage above split_threshold."""
    if split_threshold <= 0 or replicas_of(reports) <= split_threshold:
        return [list(reports)]
    return [[r] for r in reports]


@dataclass(frozen=True)
class BlockSynchronization:
    """The outcome of a block recovery a DataNode commits (commitBlockSynchronization)."""

    block: ExtendedBlock
    new_gen_stamp: int
    new_length: int
    close_file: bool
    delete_block: bool
    new_targets: tuple[DatanodeId, ...] = ()
    new_target_storages: tuple[str, ...] = ()


def block_sync_to_proto(s: BlockSynchronization) -> dnp.CommitBlockSynchronizationRequestProto:
    """CommitBlockSynchronizationRequestProto of s."""
    p = dnp.CommitBlockSynchronizationRequestProto(
        block=extended_block_to_proto(s.block),
        newGenStamp=s.new_gen_stamp,
        newLength=s.new_length,
        closeFile=s.close_file,
        deleteBlock=s.delete_block,
    )
    p.newTaragets.extend(datanode_id_to_proto(d) for d in s.new_targets)
    p.newTargetStorages.extend(s.new_target_storages)
    return p


def block_sync_from_proto(p: dnp.CommitBlockSynchronizationRequestProto) -> BlockSynchronization:
    """The BlockSynchronization of a CommitBlockSynchronizationRequestProto."""
    return BlockSynchronization(
        extended_block_from_proto(p.block),
        p.newGenStamp,
        p.newLength,
        p.closeFile,
        p.deleteBlock,
        tuple(datanode_id_from_proto(d) for d in p.newTaragets),
        tuple(p.newTargetStorages),
    )


def recovering_block_to_proto(r: RecoveringBlock) -> srv.RecoveringBlockProto:
    """RecoveringBlockProto of r (InterDatanodeProtocol's initReplicaRecovery, design §B.16)."""
    return _recovering_to_proto(r)


def recovering_block_from_proto(p: srv.RecoveringBlockProto) -> RecoveringBlock:
    """The RecoveringBlock of a RecoveringBlockProto."""
    return _recovering_from_proto(p)
