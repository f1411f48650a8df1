from qjm.hdfs.proto import hdfs_pb2 as _hdfs_pb2
from qjm.hdfs.proto import HdfsServer_pb2 as _HdfsServer_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DatanodeRegistrationProto(_message.Message):
    __slots__ = ("datanodeID", "storageInfo", "keys", "softwareVersion")
    DATANODEID_FIELD_NUMBER: _ClassVar[int]
    STORAGEINFO_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    SOFTWAREVERSION_FIELD_NUMBER: _ClassVar[int]
    datanodeID: _hdfs_pb2.DatanodeIDProto
    storageInfo: _HdfsServer_pb2.StorageInfoProto
    keys: _HdfsServer_pb2.ExportedBlockKeysProto
    softwareVersion: str
    def __init__(self, datanodeID: _Optional[_Union[_hdfs_pb2.DatanodeIDProto, _Mapping]] = ..., storageInfo: _Optional[_Union[_HdfsServer_pb2.StorageInfoProto, _Mapping]] = ..., keys: _Optional[_Union[_HdfsServer_pb2.ExportedBlockKeysProto, _Mapping]] = ..., softwareVersion: _Optional[str] = ...) -> None: ...

class DatanodeCommandProto(_message.Message):
    __slots__ = ("cmdType", "balancerCmd", "blkCmd", "recoveryCmd", "finalizeCmd", "keyUpdateCmd", "registerCmd", "blkIdCmd")
    class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        BalancerBandwidthCommand: _ClassVar[DatanodeCommandProto.Type]
        BlockCommand: _ClassVar[DatanodeCommandProto.Type]
        BlockRecoveryCommand: _ClassVar[DatanodeCommandProto.Type]
        FinalizeCommand: _ClassVar[DatanodeCommandProto.Type]
        KeyUpdateCommand: _ClassVar[DatanodeCommandProto.Type]
        RegisterCommand: _ClassVar[DatanodeCommandProto.Type]
        UnusedUpgradeCommand: _ClassVar[DatanodeCommandProto.Type]
        NullDatanodeCommand: _ClassVar[DatanodeCommandProto.Type]
        BlockIdCommand: _ClassVar[DatanodeCommandProto.Type]
        BlockECReconstructionCommand: _ClassVar[DatanodeCommandProto.Type]
        BlockStorageMovementCommand: _ClassVar[DatanodeCommandProto.Type]
        DropSPSWorkCommand: _ClassVar[DatanodeCommandProto.Type]
    BalancerBandwidthCommand: DatanodeCommandProto.Type
    BlockCommand: DatanodeCommandProto.Type
    BlockRecoveryCommand: DatanodeCommandProto.Type
    FinalizeCommand: DatanodeCommandProto.Type
    KeyUpdateCommand: DatanodeCommandProto.Type
    RegisterCommand: DatanodeCommandProto.Type
    UnusedUpgradeCommand: DatanodeCommandProto.Type
    NullDatanodeCommand: DatanodeCommandProto.Type
    BlockIdCommand: DatanodeCommandProto.Type
    BlockECReconstructionCommand: DatanodeCommandProto.Type
    BlockStorageMovementCommand: DatanodeCommandProto.Type
    DropSPSWorkCommand: DatanodeCommandProto.Type
    CMDTYPE_FIELD_NUMBER: _ClassVar[int]
    BALANCERCMD_FIELD_NUMBER: _ClassVar[int]
    BLKCMD_FIELD_NUMBER: _ClassVar[int]
    RECOVERYCMD_FIELD_NUMBER: _ClassVar[int]
    FINALIZECMD_FIELD_NUMBER: _ClassVar[int]
    KEYUPDATECMD_FIELD_NUMBER: _ClassVar[int]
    REGISTERCMD_FIELD_NUMBER: _ClassVar[int]
    BLKIDCMD_FIELD_NUMBER: _ClassVar[int]
    cmdType: DatanodeCommandProto.Type
    balancerCmd: BalancerBandwidthCommandProto
    blkCmd: BlockCommandProto
    recoveryCmd: BlockRecoveryCommandProto
    finalizeCmd: FinalizeCommandProto
    keyUpdateCmd: KeyUpdateCommandProto
    registerCmd: RegisterCommandProto
    blkIdCmd: BlockIdCommandProto
    def __init__(self, cmdType: _Optional[_Union[DatanodeCommandProto.Type, str]] = ..., balancerCmd: _Optional[_Union[BalancerBandwidthCommandProto, _Mapping]] = ..., blkCmd: _Optional[_Union[BlockCommandProto, _Mapping]] = ..., recoveryCmd: _Optional[_Union[BlockRecoveryCommandProto, _Mapping]] = ..., finalizeCmd: _Optional[_Union[FinalizeCommandProto, _Mapping]] = ..., keyUpdateCmd: _Optional[_Union[KeyUpdateCommandProto, _Mapping]] = ..., registerCmd: _Optional[_Union[RegisterCommandProto, _Mapping]] = ..., blkIdCmd: _Optional[_Union[BlockIdCommandProto, _Mapping]] = ...) -> None: ...

class BalancerBandwidthCommandProto(_message.Message):
    __slots__ = ("bandwidth",)
    BANDWIDTH_FIELD_NUMBER: _ClassVar[int]
    bandwidth: int
    def __init__(self, bandwidth: _Optional[int] = ...) -> None: ...

class BlockCommandProto(_message.Message):
    __slots__ = ("action", "blockPoolId", "blocks", "targets", "targetStorageUuids", "targetStorageTypes")
    class Action(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        TRANSFER: _ClassVar[BlockCommandProto.Action]
        INVALIDATE: _ClassVar[BlockCommandProto.Action]
        SHUTDOWN: _ClassVar[BlockCommandProto.Action]
    TRANSFER: BlockCommandProto.Action
    INVALIDATE: BlockCommandProto.Action
    SHUTDOWN: BlockCommandProto.Action
    ACTION_FIELD_NUMBER: _ClassVar[int]
    BLOCKPOOLID_FIELD_NUMBER: _ClassVar[int]
    BLOCKS_FIELD_NUMBER: _ClassVar[int]
    TARGETS_FIELD_NUMBER: _ClassVar[int]
    TARGETSTORAGEUUIDS_FIELD_NUMBER: _ClassVar[int]
    TARGETSTORAGETYPES_FIELD_NUMBER: _ClassVar[int]
    action: BlockCommandProto.Action
    blockPoolId: str
    blocks: _containers.RepeatedCompositeFieldContainer[_hdfs_pb2.BlockProto]
    targets: _containers.RepeatedCompositeFieldContainer[_hdfs_pb2.DatanodeInfosProto]
    targetStorageUuids: _containers.RepeatedCompositeFieldContainer[_hdfs_pb2.StorageUuidsProto]
    targetStorageTypes: _containers.RepeatedCompositeFieldContainer[_hdfs_pb2.StorageTypesProto]
    def __init__(self, action: _Optional[_Union[BlockCommandProto.Action, str]] = ..., blockPoolId: _Optional[str] = ..., blocks: _Optional[_Iterable[_Union[_hdfs_pb2.BlockProto, _Mapping]]] = ..., targets: _Optional[_Iterable[_Union[_hdfs_pb2.DatanodeInfosProto, _Mapping]]] = ..., targetStorageUuids: _Optional[_Iterable[_Union[_hdfs_pb2.StorageUuidsProto, _Mapping]]] = ..., targetStorageTypes: _Optional[_Iterable[_Union[_hdfs_pb2.StorageTypesProto, _Mapping]]] = ...) -> None: ...

class BlockIdCommandProto(_message.Message):
    __slots__ = ("action", "blockPoolId", "blockIds")
    class Action(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        CACHE: _ClassVar[BlockIdCommandProto.Action]
        UNCACHE: _ClassVar[BlockIdCommandProto.Action]
    CACHE: BlockIdCommandProto.Action
    UNCACHE: BlockIdCommandProto.Action
    ACTION_FIELD_NUMBER: _ClassVar[int]
    BLOCKPOOLID_FIELD_NUMBER: _ClassVar[int]
    BLOCKIDS_FIELD_NUMBER: _ClassVar[int]
    action: BlockIdCommandProto.Action
    blockPoolId: str
    blockIds: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, action: _Optional[_Union[BlockIdCommandProto.Action, str]] = ..., blockPoolId: _Optional[str] = ..., blockIds: _Optional[_Iterable[int]] = ...) -> None: ...

class BlockRecoveryCommandProto(_message.Message):
    __slots__ = ("blocks",)
    BLOCKS_FIELD_NUMBER: _ClassVar[int]
    blocks: _containers.RepeatedCompositeFieldContainer[_HdfsServer_pb2.RecoveringBlockProto]
    def __init__(self, blocks: _Optional[_Iterable[_Union[_HdfsServer_pb2.RecoveringBlockProto, _Mapping]]] = ...) -> None: ...

class FinalizeCommandProto(_message.Message):
    __slots__ = ("blockPoolId",)
    BLOCKPOOLID_FIELD_NUMBER: _ClassVar[int]
    blockPoolId: str
    def __init__(self, blockPoolId: _Optional[str] = ...) -> None: ...

class KeyUpdateCommandProto(_message.Message):
    __slots__ = ("keys",)
    KEYS_FIELD_NUMBER: _ClassVar[int]
    keys: _HdfsServer_pb2.ExportedBlockKeysProto
    def __init__(self, keys: _Optional[_Union[_HdfsServer_pb2.ExportedBlockKeysProto, _Mapping]] = ...) -> None: ...

class RegisterCommandProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class BlocksStorageMoveAttemptFinishedProto(_message.Message):
    __slots__ = ("blocks",)
    BLOCKS_FIELD_NUMBER: _ClassVar[int]
    blocks: _containers.RepeatedCompositeFieldContainer[_hdfs_pb2.BlockProto]
    def __init__(self, blocks: _Optional[_Iterable[_Union[_hdfs_pb2.BlockProto, _Mapping]]] = ...) -> None: ...

class RegisterDatanodeRequestProto(_message.Message):
    __slots__ = ("registration",)
    REGISTRATION_FIELD_NUMBER: _ClassVar[int]
    registration: DatanodeRegistrationProto
    def __init__(self, registration: _Optional[_Union[DatanodeRegistrationProto, _Mapping]] = ...) -> None: ...

class RegisterDatanodeResponseProto(_message.Message):
    __slots__ = ("registration",)
    REGISTRATION_FIELD_NUMBER: _ClassVar[int]
    registration: DatanodeRegistrationProto
    def __init__(self, registration: _Optional[_Union[DatanodeRegistrationProto, _Mapping]] = ...) -> None: ...

class VolumeFailureSummaryProto(_message.Message):
    __slots__ = ("failedStorageLocations", "lastVolumeFailureDate", "estimatedCapacityLostTotal")
    FAILEDSTORAGELOCATIONS_FIELD_NUMBER: _ClassVar[int]
    LASTVOLUMEFAILUREDATE_FIELD_NUMBER: _ClassVar[int]
    ESTIMATEDCAPACITYLOSTTOTAL_FIELD_NUMBER: _ClassVar[int]
    failedStorageLocations: _containers.RepeatedScalarFieldContainer[str]
    lastVolumeFailureDate: int
    estimatedCapacityLostTotal: int
    def __init__(self, failedStorageLocations: _Optional[_Iterable[str]] = ..., lastVolumeFailureDate: _Optional[int] = ..., estimatedCapacityLostTotal: _Optional[int] = ...) -> None: ...

class HeartbeatRequestProto(_message.Message):
    __slots__ = ("registration", "reports", "xmitsInProgress", "xceiverCount", "failedVolumes", "cacheCapacity", "cacheUsed", "volumeFailureSummary", "requestFullBlockReportLease", "slowPeers", "slowDisks", "storageMoveAttemptFinishedBlks")
    REGISTRATION_FIELD_NUMBER: _ClassVar[int]
    REPORTS_FIELD_NUMBER: _ClassVar[int]
    XMITSINPROGRESS_FIELD_NUMBER: _ClassVar[int]
    XCEIVERCOUNT_FIELD_NUMBER: _ClassVar[int]
    FAILEDVOLUMES_FIELD_NUMBER: _ClassVar[int]
    CACHECAPACITY_FIELD_NUMBER: _ClassVar[int]
    CACHEUSED_FIELD_NUMBER: _ClassVar[int]
    VOLUMEFAILURESUMMARY_FIELD_NUMBER: _ClassVar[int]
    REQUESTFULLBLOCKREPORTLEASE_FIELD_NUMBER: _ClassVar[int]
    SLOWPEERS_FIELD_NUMBER: _ClassVar[int]
    SLOWDISKS_FIELD_NUMBER: _ClassVar[int]
    STORAGEMOVEATTEMPTFINISHEDBLKS_FIELD_NUMBER: _ClassVar[int]
    registration: DatanodeRegistrationProto
    reports: _containers.RepeatedCompositeFieldContainer[_hdfs_pb2.StorageReportProto]
    xmitsInProgress: int
    xceiverCount: int
    failedVolumes: int
    cacheCapacity: int
    cacheUsed: int
    volumeFailureSummary: VolumeFailureSummaryProto
    requestFullBlockReportLease: bool
    slowPeers: _containers.RepeatedCompositeFieldContainer[SlowPeerReportProto]
    slowDisks: _containers.RepeatedCompositeFieldContainer[SlowDiskReportProto]
    storageMoveAttemptFinishedBlks: BlocksStorageMoveAttemptFinishedProto
    def __init__(self, registration: _Optional[_Union[DatanodeRegistrationProto, _Mapping]] = ..., reports: _Optional[_Iterable[_Union[_hdfs_pb2.StorageReportProto, _Mapping]]] = ..., xmitsInProgress: _Optional[int] = ..., xceiverCount: _Optional[int] = ..., failedVolumes: _Optional[int] = ..., cacheCapacity: _Optional[int] = ..., cacheUsed: _Optional[int] = ..., volumeFailureSummary: _Optional[_Union[VolumeFailureSummaryProto, _Mapping]] = ..., requestFullBlockReportLease: _Optional[bool] = ..., slowPeers: _Optional[_Iterable[_Union[SlowPeerReportProto, _Mapping]]] = ..., slowDisks: _Optional[_Iterable[_Union[SlowDiskReportProto, _Mapping]]] = ..., storageMoveAttemptFinishedBlks: _Optional[_Union[BlocksStorageMoveAttemptFinishedProto, _Mapping]] = ...) -> None: ...

class HeartbeatResponseProto(_message.Message):
    __slots__ = ("cmds", "haStatus", "fullBlockReportLeaseId")
    CMDS_FIELD_NUMBER: _ClassVar[int]
    HASTATUS_FIELD_NUMBER: _ClassVar[int]
    FULLBLOCKREPORTLEASEID_FIELD_NUMBER: _ClassVar[int]
    cmds: _containers.RepeatedCompositeFieldContainer[DatanodeCommandProto]
    haStatus: _HdfsServer_pb2.NNHAStatusHeartbeatProto
    fullBlockReportLeaseId: int
    def __init__(self, cmds: _Optional[_Iterable[_Union[DatanodeCommandProto, _Mapping]]] = ..., haStatus: _Optional[_Union[_HdfsServer_pb2.NNHAStatusHeartbeatProto, _Mapping]] = ..., fullBlockReportLeaseId: _Optional[int] = ...) -> None: ...

class BlockReportRequestProto(_message.Message):
    __slots__ = ("registration", "blockPoolId", "reports", "context")
    REGISTRATION_FIELD_NUMBER: _ClassVar[int]
    BLOCKPOOLID_FIELD_NUMBER: _ClassVar[int]
    REPORTS_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    registration: DatanodeRegistrationProto
    blockPoolId: str
    reports: _containers.RepeatedCompositeFieldContainer[StorageBlockReportProto]
    context: BlockReportContextProto
    def __init__(self, registration: _Optional[_Union[DatanodeRegistrationProto, _Mapping]] = ..., blockPoolId: _Optional[str] = ..., reports: _Optional[_Iterable[_Union[StorageBlockReportProto, _Mapping]]] = ..., context: _Optional[_Union[BlockReportContextProto, _Mapping]] = ...) -> None: ...

class BlockReportContextProto(_message.Message):
    __slots__ = ("totalRpcs", "curRpc", "id", "leaseId", "sorted")
    TOTALRPCS_FIELD_NUMBER: _ClassVar[int]
    CURRPC_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LEASEID_FIELD_NUMBER: _ClassVar[int]
    SORTED_FIELD_NUMBER: _ClassVar[int]
    totalRpcs: int
    curRpc: int
    id: int
    leaseId: int
    sorted: bool
    def __init__(self, totalRpcs: _Optional[int] = ..., curRpc: _Optional[int] = ..., id: _Optional[int] = ..., leaseId: _Optional[int] = ..., sorted: _Optional[bool] = ...) -> None: ...

class StorageBlockReportProto(_message.Message):
    __slots__ = ("storage", "blocks", "numberOfBlocks", "blocksBuffers")
    STORAGE_FIELD_NUMBER: _ClassVar[int]
    BLOCKS_FIELD_NUMBER: _ClassVar[int]
    NUMBEROFBLOCKS_FIELD_NUMBER: _ClassVar[int]
    BLOCKSBUFFERS_FIELD_NUMBER: _ClassVar[int]
    storage: _hdfs_pb2.DatanodeStorageProto
    blocks: _containers.RepeatedScalarFieldContainer[int]
    numberOfBlocks: int
    blocksBuffers: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, storage: _Optional[_Union[_hdfs_pb2.DatanodeStorageProto, _Mapping]] = ..., blocks: _Optional[_Iterable[int]] = ..., numberOfBlocks: _Optional[int] = ..., blocksBuffers: _Optional[_Iterable[bytes]] = ...) -> None: ...

class BlockReportResponseProto(_message.Message):
    __slots__ = ("cmd",)
    CMD_FIELD_NUMBER: _ClassVar[int]
    cmd: DatanodeCommandProto
    def __init__(self, cmd: _Optional[_Union[DatanodeCommandProto, _Mapping]] = ...) -> None: ...

class CacheReportRequestProto(_message.Message):
    __slots__ = ("registration", "blockPoolId", "blocks")
    REGISTRATION_FIELD_NUMBER: _ClassVar[int]
    BLOCKPOOLID_FIELD_NUMBER: _ClassVar[int]
    BLOCKS_FIELD_NUMBER: _ClassVar[int]
    registration: DatanodeRegistrationProto
    blockPoolId: str
    blocks: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, registration: _Optional[_Union[DatanodeRegistrationProto, _Mapping]] = ..., blockPoolId: _Optional[str] = ..., blocks: _Optional[_Iterable[int]] = ...) -> None: ...

class CacheReportResponseProto(_message.Message):
    __slots__ = ("cmd",)
    CMD_FIELD_NUMBER: _ClassVar[int]
    cmd: DatanodeCommandProto
    def __init__(self, cmd: _Optional[_Union[DatanodeCommandProto, _Mapping]] = ...) -> None: ...

class ReceivedDeletedBlockInfoProto(_message.Message):
    __slots__ = ("block", "status", "deleteHint")
    class BlockStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        RECEIVING: _ClassVar[ReceivedDeletedBlockInfoProto.BlockStatus]
        RECEIVED: _ClassVar[ReceivedDeletedBlockInfoProto.BlockStatus]
        DELETED: _ClassVar[ReceivedDeletedBlockInfoProto.BlockStatus]
    RECEIVING: ReceivedDeletedBlockInfoProto.BlockStatus
    RECEIVED: ReceivedDeletedBlockInfoProto.BlockStatus
    DELETED: ReceivedDeletedBlockInfoProto.BlockStatus
    BLOCK_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    DELETEHINT_FIELD_NUMBER: _ClassVar[int]
    block: _hdfs_pb2.BlockProto
    status: ReceivedDeletedBlockInfoProto.BlockStatus
    deleteHint: str
    def __init__(self, block: _Optional[_Union[_hdfs_pb2.BlockProto, _Mapping]] = ..., status: _Optional[_Union[ReceivedDeletedBlockInfoProto.BlockStatus, str]] = ..., deleteHint: _Optional[str] = ...) -> None: ...

class StorageReceivedDeletedBlocksProto(_message.Message):
    __slots__ = ("storageUuid", "blocks", "storage")
    STORAGEUUID_FIELD_NUMBER: _ClassVar[int]
    BLOCKS_FIELD_NUMBER: _ClassVar[int]
    STORAGE_FIELD_NUMBER: _ClassVar[int]
    storageUuid: str
    blocks: _containers.RepeatedCompositeFieldContainer[ReceivedDeletedBlockInfoProto]
    storage: _hdfs_pb2.DatanodeStorageProto
    def __init__(self, storageUuid: _Optional[str] = ..., blocks: _Optional[_Iterable[_Union[ReceivedDeletedBlockInfoProto, _Mapping]]] = ..., storage: _Optional[_Union[_hdfs_pb2.DatanodeStorageProto, _Mapping]] = ...) -> None: ...

class BlockReceivedAndDeletedRequestProto(_message.Message):
    __slots__ = ("registration", "blockPoolId", "blocks")
    REGISTRATION_FIELD_NUMBER: _ClassVar[int]
    BLOCKPOOLID_FIELD_NUMBER: _ClassVar[int]
    BLOCKS_FIELD_NUMBER: _ClassVar[int]
    registration: DatanodeRegistrationProto
    blockPoolId: str
    blocks: _containers.RepeatedCompositeFieldContainer[StorageReceivedDeletedBlocksProto]
    def __init__(self, registration: _Optional[_Union[DatanodeRegistrationProto, _Mapping]] = ..., blockPoolId: _Optional[str] = ..., blocks: _Optional[_Iterable[_Union[StorageReceivedDeletedBlocksProto, _Mapping]]] = ...) -> None: ...

class BlockReceivedAndDeletedResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ErrorReportRequestProto(_message.Message):
    __slots__ = ("registartion", "errorCode", "msg")
    class ErrorCode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        NOTIFY: _ClassVar[ErrorReportRequestProto.ErrorCode]
        DISK_ERROR: _ClassVar[ErrorReportRequestProto.ErrorCode]
        INVALID_BLOCK: _ClassVar[ErrorReportRequestProto.ErrorCode]
        FATAL_DISK_ERROR: _ClassVar[ErrorReportRequestProto.ErrorCode]
    NOTIFY: ErrorReportRequestProto.ErrorCode
    DISK_ERROR: ErrorReportRequestProto.ErrorCode
    INVALID_BLOCK: ErrorReportRequestProto.ErrorCode
    FATAL_DISK_ERROR: ErrorReportRequestProto.ErrorCode
    REGISTARTION_FIELD_NUMBER: _ClassVar[int]
    ERRORCODE_FIELD_NUMBER: _ClassVar[int]
    MSG_FIELD_NUMBER: _ClassVar[int]
    registartion: DatanodeRegistrationProto
    errorCode: int
    msg: str
    def __init__(self, registartion: _Optional[_Union[DatanodeRegistrationProto, _Mapping]] = ..., errorCode: _Optional[int] = ..., msg: _Optional[str] = ...) -> None: ...

class ErrorReportResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ReportBadBlocksRequestProto(_message.Message):
    __slots__ = ("blocks",)
    BLOCKS_FIELD_NUMBER: _ClassVar[int]
    blocks: _containers.RepeatedCompositeFieldContainer[_hdfs_pb2.LocatedBlockProto]
    def __init__(self, blocks: _Optional[_Iterable[_Union[_hdfs_pb2.LocatedBlockProto, _Mapping]]] = ...) -> None: ...

class ReportBadBlocksResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CommitBlockSynchronizationRequestProto(_message.Message):
    __slots__ = ("block", "newGenStamp", "newLength", "closeFile", "deleteBlock", "newTaragets", "newTargetStorages")
    BLOCK_FIELD_NUMBER: _ClassVar[int]
    NEWGENSTAMP_FIELD_NUMBER: _ClassVar[int]
    NEWLENGTH_FIELD_NUMBER: _ClassVar[int]
    CLOSEFILE_FIELD_NUMBER: _ClassVar[int]
    DELETEBLOCK_FIELD_NUMBER: _ClassVar[int]
    NEWTARAGETS_FIELD_NUMBER: _ClassVar[int]
    NEWTARGETSTORAGES_FIELD_NUMBER: _ClassVar[int]
    block: _hdfs_pb2.ExtendedBlockProto
    newGenStamp: int
    newLength: int
    closeFile: bool
    deleteBlock: bool
    newTaragets: _containers.RepeatedCompositeFieldContainer[_hdfs_pb2.DatanodeIDProto]
    newTargetStorages: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, block: _Optional[_Union[_hdfs_pb2.ExtendedBlockProto, _Mapping]] = ..., newGenStamp: _Optional[int] = ..., newLength: _Optional[int] = ..., closeFile: _Optional[bool] = ..., deleteBlock: _Optional[bool] = ..., newTaragets: _Optional[_Iterable[_Union[_hdfs_pb2.DatanodeIDProto, _Mapping]]] = ..., newTargetStorages: _Optional[_Iterable[str]] = ...) -> None: ...

class CommitBlockSynchronizationResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SlowPeerReportProto(_message.Message):
    __slots__ = ("dataNodeId", "aggregateLatency")
    DATANODEID_FIELD_NUMBER: _ClassVar[int]
    AGGREGATELATENCY_FIELD_NUMBER: _ClassVar[int]
    dataNodeId: str
    aggregateLatency: float
    def __init__(self, dataNodeId: _Optional[str] = ..., aggregateLatency: _Optional[float] = ...) -> None: ...

class SlowDiskReportProto(_message.Message):
    __slots__ = ("basePath", "meanMetadataOpLatency", "meanReadIoLatency", "meanWriteIoLatency")
    BASEPATH_FIELD_NUMBER: _ClassVar[int]
    MEANMETADATAOPLATENCY_FIELD_NUMBER: _ClassVar[int]
    MEANREADIOLATENCY_FIELD_NUMBER: _ClassVar[int]
    MEANWRITEIOLATENCY_FIELD_NUMBER: _ClassVar[int]
    basePath: str
    meanMetadataOpLatency: float
    meanReadIoLatency: float
    meanWriteIoLatency: float
    def __init__(self, basePath: _Optional[str] = ..., meanMetadataOpLatency: _Optional[float] = ..., meanReadIoLatency: _Optional[float] = ..., meanWriteIoLatency: _Optional[float] = ...) -> None: ...
