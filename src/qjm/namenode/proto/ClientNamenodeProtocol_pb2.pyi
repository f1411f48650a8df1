from qjm.hdfs.proto import hdfs_pb2 as _hdfs_pb2
from qjm.namenode.proto import HAServiceProtocol_pb2 as _HAServiceProtocol_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CreateFlagProto(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CREATE: _ClassVar[CreateFlagProto]
    OVERWRITE: _ClassVar[CreateFlagProto]
    APPEND: _ClassVar[CreateFlagProto]
    LAZY_PERSIST: _ClassVar[CreateFlagProto]
    NEW_BLOCK: _ClassVar[CreateFlagProto]
    SHOULD_REPLICATE: _ClassVar[CreateFlagProto]

class SafeModeActionProto(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SAFEMODE_LEAVE: _ClassVar[SafeModeActionProto]
    SAFEMODE_ENTER: _ClassVar[SafeModeActionProto]
    SAFEMODE_GET: _ClassVar[SafeModeActionProto]
    SAFEMODE_FORCE_EXIT: _ClassVar[SafeModeActionProto]

class AddBlockFlagProto(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NO_LOCAL_WRITE: _ClassVar[AddBlockFlagProto]
    IGNORE_CLIENT_LOCALITY: _ClassVar[AddBlockFlagProto]

class DatanodeReportTypeProto(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ALL: _ClassVar[DatanodeReportTypeProto]
    LIVE: _ClassVar[DatanodeReportTypeProto]
    DEAD: _ClassVar[DatanodeReportTypeProto]
    DECOMMISSIONING: _ClassVar[DatanodeReportTypeProto]
    ENTERING_MAINTENANCE: _ClassVar[DatanodeReportTypeProto]
    IN_MAINTENANCE: _ClassVar[DatanodeReportTypeProto]
CREATE: CreateFlagProto
OVERWRITE: CreateFlagProto
APPEND: CreateFlagProto
LAZY_PERSIST: CreateFlagProto
NEW_BLOCK: CreateFlagProto
SHOULD_REPLICATE: CreateFlagProto
SAFEMODE_LEAVE: SafeModeActionProto
SAFEMODE_ENTER: SafeModeActionProto
SAFEMODE_GET: SafeModeActionProto
SAFEMODE_FORCE_EXIT: SafeModeActionProto
NO_LOCAL_WRITE: AddBlockFlagProto
IGNORE_CLIENT_LOCALITY: AddBlockFlagProto
ALL: DatanodeReportTypeProto
LIVE: DatanodeReportTypeProto
DEAD: DatanodeReportTypeProto
DECOMMISSIONING: DatanodeReportTypeProto
ENTERING_MAINTENANCE: DatanodeReportTypeProto
IN_MAINTENANCE: DatanodeReportTypeProto

class GetServerDefaultsRequestProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetServerDefaultsResponseProto(_message.Message):
    __slots__ = ("serverDefaults",)
    SERVERDEFAULTS_FIELD_NUMBER: _ClassVar[int]
    serverDefaults: _hdfs_pb2.FsServerDefaultsProto
    def __init__(self, serverDefaults: _Optional[_Union[_hdfs_pb2.FsServerDefaultsProto, _Mapping]] = ...) -> None: ...

class CreateRequestProto(_message.Message):
    __slots__ = ("src", "masked", "clientName", "createFlag", "createParent", "replication", "blockSize", "cryptoProtocolVersion", "unmasked", "ecPolicyName")
    SRC_FIELD_NUMBER: _ClassVar[int]
    MASKED_FIELD_NUMBER: _ClassVar[int]
    CLIENTNAME_FIELD_NUMBER: _ClassVar[int]
    CREATEFLAG_FIELD_NUMBER: _ClassVar[int]
    CREATEPARENT_FIELD_NUMBER: _ClassVar[int]
    REPLICATION_FIELD_NUMBER: _ClassVar[int]
    BLOCKSIZE_FIELD_NUMBER: _ClassVar[int]
    CRYPTOPROTOCOLVERSION_FIELD_NUMBER: _ClassVar[int]
    UNMASKED_FIELD_NUMBER: _ClassVar[int]
    ECPOLICYNAME_FIELD_NUMBER: _ClassVar[int]
    src: str
    masked: _hdfs_pb2.FsPermissionProto
    clientName: str
    createFlag: int
    createParent: bool
    replication: int
    blockSize: int
    cryptoProtocolVersion: _containers.RepeatedScalarFieldContainer[_hdfs_pb2.CryptoProtocolVersionProto]
    unmasked: _hdfs_pb2.FsPermissionProto
    ecPolicyName: str
    def __init__(self, src: _Optional[str] = ..., masked: _Optional[_Union[_hdfs_pb2.FsPermissionProto, _Mapping]] = ..., clientName: _Optional[str] = ..., createFlag: _Optional[int] = ..., createParent: _Optional[bool] = ..., replication: _Optional[int] = ..., blockSize: _Optional[int] = ..., cryptoProtocolVersion: _Optional[_Iterable[_Union[_hdfs_pb2.CryptoProtocolVersionProto, str]]] = ..., unmasked: _Optional[_Union[_hdfs_pb2.FsPermissionProto, _Mapping]] = ..., ecPolicyName: _Optional[str] = ...) -> None: ...

class CreateResponseProto(_message.Message):
    __slots__ = ("fs",)
    FS_FIELD_NUMBER: _ClassVar[int]
    fs: _hdfs_pb2.HdfsFileStatusProto
    def __init__(self, fs: _Optional[_Union[_hdfs_pb2.HdfsFileStatusProto, _Mapping]] = ...) -> None: ...

class SetReplicationRequestProto(_message.Message):
    __slots__ = ("src", "replication")
    SRC_FIELD_NUMBER: _ClassVar[int]
    REPLICATION_FIELD_NUMBER: _ClassVar[int]
    src: str
    replication: int
    def __init__(self, src: _Optional[str] = ..., replication: _Optional[int] = ...) -> None: ...

class SetReplicationResponseProto(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: bool
    def __init__(self, result: _Optional[bool] = ...) -> None: ...

class SetPermissionRequestProto(_message.Message):
    __slots__ = ("src", "permission")
    SRC_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_FIELD_NUMBER: _ClassVar[int]
    src: str
    permission: _hdfs_pb2.FsPermissionProto
    def __init__(self, src: _Optional[str] = ..., permission: _Optional[_Union[_hdfs_pb2.FsPermissionProto, _Mapping]] = ...) -> None: ...

class SetPermissionResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SetOwnerRequestProto(_message.Message):
    __slots__ = ("src", "username", "groupname")
    SRC_FIELD_NUMBER: _ClassVar[int]
    USERNAME_FIELD_NUMBER: _ClassVar[int]
    GROUPNAME_FIELD_NUMBER: _ClassVar[int]
    src: str
    username: str
    groupname: str
    def __init__(self, src: _Optional[str] = ..., username: _Optional[str] = ..., groupname: _Optional[str] = ...) -> None: ...

class SetOwnerResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CompleteRequestProto(_message.Message):
    __slots__ = ("src", "clientName", "last", "fileId")
    SRC_FIELD_NUMBER: _ClassVar[int]
    CLIENTNAME_FIELD_NUMBER: _ClassVar[int]
    LAST_FIELD_NUMBER: _ClassVar[int]
    FILEID_FIELD_NUMBER: _ClassVar[int]
    src: str
    clientName: str
    last: _hdfs_pb2.ExtendedBlockProto
    fileId: int
    def __init__(self, src: _Optional[str] = ..., clientName: _Optional[str] = ..., last: _Optional[_Union[_hdfs_pb2.ExtendedBlockProto, _Mapping]] = ..., fileId: _Optional[int] = ...) -> None: ...

class CompleteResponseProto(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: bool
    def __init__(self, result: _Optional[bool] = ...) -> None: ...

class RenameRequestProto(_message.Message):
    __slots__ = ("src", "dst")
    SRC_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    src: str
    dst: str
    def __init__(self, src: _Optional[str] = ..., dst: _Optional[str] = ...) -> None: ...

class RenameResponseProto(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: bool
    def __init__(self, result: _Optional[bool] = ...) -> None: ...

class Rename2RequestProto(_message.Message):
    __slots__ = ("src", "dst", "overwriteDest", "moveToTrash")
    SRC_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    OVERWRITEDEST_FIELD_NUMBER: _ClassVar[int]
    MOVETOTRASH_FIELD_NUMBER: _ClassVar[int]
    src: str
    dst: str
    overwriteDest: bool
    moveToTrash: bool
    def __init__(self, src: _Optional[str] = ..., dst: _Optional[str] = ..., overwriteDest: _Optional[bool] = ..., moveToTrash: _Optional[bool] = ...) -> None: ...

class Rename2ResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DeleteRequestProto(_message.Message):
    __slots__ = ("src", "recursive")
    SRC_FIELD_NUMBER: _ClassVar[int]
    RECURSIVE_FIELD_NUMBER: _ClassVar[int]
    src: str
    recursive: bool
    def __init__(self, src: _Optional[str] = ..., recursive: _Optional[bool] = ...) -> None: ...

class DeleteResponseProto(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: bool
    def __init__(self, result: _Optional[bool] = ...) -> None: ...

class MkdirsRequestProto(_message.Message):
    __slots__ = ("src", "masked", "createParent", "unmasked")
    SRC_FIELD_NUMBER: _ClassVar[int]
    MASKED_FIELD_NUMBER: _ClassVar[int]
    CREATEPARENT_FIELD_NUMBER: _ClassVar[int]
    UNMASKED_FIELD_NUMBER: _ClassVar[int]
    src: str
    masked: _hdfs_pb2.FsPermissionProto
    createParent: bool
    unmasked: _hdfs_pb2.FsPermissionProto
    def __init__(self, src: _Optional[str] = ..., masked: _Optional[_Union[_hdfs_pb2.FsPermissionProto, _Mapping]] = ..., createParent: _Optional[bool] = ..., unmasked: _Optional[_Union[_hdfs_pb2.FsPermissionProto, _Mapping]] = ...) -> None: ...

class MkdirsResponseProto(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: bool
    def __init__(self, result: _Optional[bool] = ...) -> None: ...

class GetListingRequestProto(_message.Message):
    __slots__ = ("src", "startAfter", "needLocation")
    SRC_FIELD_NUMBER: _ClassVar[int]
    STARTAFTER_FIELD_NUMBER: _ClassVar[int]
    NEEDLOCATION_FIELD_NUMBER: _ClassVar[int]
    src: str
    startAfter: bytes
    needLocation: bool
    def __init__(self, src: _Optional[str] = ..., startAfter: _Optional[bytes] = ..., needLocation: _Optional[bool] = ...) -> None: ...

class GetListingResponseProto(_message.Message):
    __slots__ = ("dirList",)
    DIRLIST_FIELD_NUMBER: _ClassVar[int]
    dirList: _hdfs_pb2.DirectoryListingProto
    def __init__(self, dirList: _Optional[_Union[_hdfs_pb2.DirectoryListingProto, _Mapping]] = ...) -> None: ...

class RenewLeaseRequestProto(_message.Message):
    __slots__ = ("clientName",)
    CLIENTNAME_FIELD_NUMBER: _ClassVar[int]
    clientName: str
    def __init__(self, clientName: _Optional[str] = ...) -> None: ...

class RenewLeaseResponseProto(_message.Message):
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

class RefreshNodesRequestProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RefreshNodesResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SaveNamespaceRequestProto(_message.Message):
    __slots__ = ("timeWindow", "txGap")
    TIMEWINDOW_FIELD_NUMBER: _ClassVar[int]
    TXGAP_FIELD_NUMBER: _ClassVar[int]
    timeWindow: int
    txGap: int
    def __init__(self, timeWindow: _Optional[int] = ..., txGap: _Optional[int] = ...) -> None: ...

class SaveNamespaceResponseProto(_message.Message):
    __slots__ = ("saved",)
    SAVED_FIELD_NUMBER: _ClassVar[int]
    saved: bool
    def __init__(self, saved: _Optional[bool] = ...) -> None: ...

class RollEditsRequestProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RollEditsResponseProto(_message.Message):
    __slots__ = ("newSegmentTxId",)
    NEWSEGMENTTXID_FIELD_NUMBER: _ClassVar[int]
    newSegmentTxId: int
    def __init__(self, newSegmentTxId: _Optional[int] = ...) -> None: ...

class MetaSaveRequestProto(_message.Message):
    __slots__ = ("filename",)
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    filename: str
    def __init__(self, filename: _Optional[str] = ...) -> None: ...

class MetaSaveResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListCorruptFileBlocksRequestProto(_message.Message):
    __slots__ = ("path", "cookie")
    PATH_FIELD_NUMBER: _ClassVar[int]
    COOKIE_FIELD_NUMBER: _ClassVar[int]
    path: str
    cookie: str
    def __init__(self, path: _Optional[str] = ..., cookie: _Optional[str] = ...) -> None: ...

class ListCorruptFileBlocksResponseProto(_message.Message):
    __slots__ = ("corrupt",)
    CORRUPT_FIELD_NUMBER: _ClassVar[int]
    corrupt: _hdfs_pb2.CorruptFileBlocksProto
    def __init__(self, corrupt: _Optional[_Union[_hdfs_pb2.CorruptFileBlocksProto, _Mapping]] = ...) -> None: ...

class GetFsStatusRequestProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetFsStatsResponseProto(_message.Message):
    __slots__ = ("capacity", "used", "remaining", "under_replicated", "corrupt_blocks", "missing_blocks", "missing_repl_one_blocks", "blocks_in_future", "pending_deletion_blocks")
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    USED_FIELD_NUMBER: _ClassVar[int]
    REMAINING_FIELD_NUMBER: _ClassVar[int]
    UNDER_REPLICATED_FIELD_NUMBER: _ClassVar[int]
    CORRUPT_BLOCKS_FIELD_NUMBER: _ClassVar[int]
    MISSING_BLOCKS_FIELD_NUMBER: _ClassVar[int]
    MISSING_REPL_ONE_BLOCKS_FIELD_NUMBER: _ClassVar[int]
    BLOCKS_IN_FUTURE_FIELD_NUMBER: _ClassVar[int]
    PENDING_DELETION_BLOCKS_FIELD_NUMBER: _ClassVar[int]
    capacity: int
    used: int
    remaining: int
    under_replicated: int
    corrupt_blocks: int
    missing_blocks: int
    missing_repl_one_blocks: int
    blocks_in_future: int
    pending_deletion_blocks: int
    def __init__(self, capacity: _Optional[int] = ..., used: _Optional[int] = ..., remaining: _Optional[int] = ..., under_replicated: _Optional[int] = ..., corrupt_blocks: _Optional[int] = ..., missing_blocks: _Optional[int] = ..., missing_repl_one_blocks: _Optional[int] = ..., blocks_in_future: _Optional[int] = ..., pending_deletion_blocks: _Optional[int] = ...) -> None: ...

class GetFileInfoRequestProto(_message.Message):
    __slots__ = ("src",)
    SRC_FIELD_NUMBER: _ClassVar[int]
    src: str
    def __init__(self, src: _Optional[str] = ...) -> None: ...

class GetFileInfoResponseProto(_message.Message):
    __slots__ = ("fs",)
    FS_FIELD_NUMBER: _ClassVar[int]
    fs: _hdfs_pb2.HdfsFileStatusProto
    def __init__(self, fs: _Optional[_Union[_hdfs_pb2.HdfsFileStatusProto, _Mapping]] = ...) -> None: ...

class GetContentSummaryRequestProto(_message.Message):
    __slots__ = ("path",)
    PATH_FIELD_NUMBER: _ClassVar[int]
    path: str
    def __init__(self, path: _Optional[str] = ...) -> None: ...

class GetContentSummaryResponseProto(_message.Message):
    __slots__ = ("summary",)
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    summary: _hdfs_pb2.ContentSummaryProto
    def __init__(self, summary: _Optional[_Union[_hdfs_pb2.ContentSummaryProto, _Mapping]] = ...) -> None: ...

class SetTimesRequestProto(_message.Message):
    __slots__ = ("src", "mtime", "atime")
    SRC_FIELD_NUMBER: _ClassVar[int]
    MTIME_FIELD_NUMBER: _ClassVar[int]
    ATIME_FIELD_NUMBER: _ClassVar[int]
    src: str
    mtime: int
    atime: int
    def __init__(self, src: _Optional[str] = ..., mtime: _Optional[int] = ..., atime: _Optional[int] = ...) -> None: ...

class SetTimesResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class MsyncRequestProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class MsyncResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class HAServiceStateRequestProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class HAServiceStateResponseProto(_message.Message):
    __slots__ = ("state",)
    STATE_FIELD_NUMBER: _ClassVar[int]
    state: _HAServiceProtocol_pb2.HAServiceStateProto
    def __init__(self, state: _Optional[_Union[_HAServiceProtocol_pb2.HAServiceStateProto, str]] = ...) -> None: ...

class GetBlockLocationsRequestProto(_message.Message):
    __slots__ = ("src", "offset", "length")
    SRC_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    LENGTH_FIELD_NUMBER: _ClassVar[int]
    src: str
    offset: int
    length: int
    def __init__(self, src: _Optional[str] = ..., offset: _Optional[int] = ..., length: _Optional[int] = ...) -> None: ...

class GetBlockLocationsResponseProto(_message.Message):
    __slots__ = ("locations",)
    LOCATIONS_FIELD_NUMBER: _ClassVar[int]
    locations: _hdfs_pb2.LocatedBlocksProto
    def __init__(self, locations: _Optional[_Union[_hdfs_pb2.LocatedBlocksProto, _Mapping]] = ...) -> None: ...

class GetLocatedFileInfoRequestProto(_message.Message):
    __slots__ = ("src", "needBlockToken")
    SRC_FIELD_NUMBER: _ClassVar[int]
    NEEDBLOCKTOKEN_FIELD_NUMBER: _ClassVar[int]
    src: str
    needBlockToken: bool
    def __init__(self, src: _Optional[str] = ..., needBlockToken: _Optional[bool] = ...) -> None: ...

class GetLocatedFileInfoResponseProto(_message.Message):
    __slots__ = ("fs",)
    FS_FIELD_NUMBER: _ClassVar[int]
    fs: _hdfs_pb2.HdfsFileStatusProto
    def __init__(self, fs: _Optional[_Union[_hdfs_pb2.HdfsFileStatusProto, _Mapping]] = ...) -> None: ...

class GetFileLinkInfoRequestProto(_message.Message):
    __slots__ = ("src",)
    SRC_FIELD_NUMBER: _ClassVar[int]
    src: str
    def __init__(self, src: _Optional[str] = ...) -> None: ...

class GetFileLinkInfoResponseProto(_message.Message):
    __slots__ = ("fs",)
    FS_FIELD_NUMBER: _ClassVar[int]
    fs: _hdfs_pb2.HdfsFileStatusProto
    def __init__(self, fs: _Optional[_Union[_hdfs_pb2.HdfsFileStatusProto, _Mapping]] = ...) -> None: ...

class GetQuotaUsageRequestProto(_message.Message):
    __slots__ = ("path",)
    PATH_FIELD_NUMBER: _ClassVar[int]
    path: str
    def __init__(self, path: _Optional[str] = ...) -> None: ...

class GetQuotaUsageResponseProto(_message.Message):
    __slots__ = ("usage",)
    USAGE_FIELD_NUMBER: _ClassVar[int]
    usage: _hdfs_pb2.QuotaUsageProto
    def __init__(self, usage: _Optional[_Union[_hdfs_pb2.QuotaUsageProto, _Mapping]] = ...) -> None: ...

class SetQuotaRequestProto(_message.Message):
    __slots__ = ("path", "namespaceQuota", "storagespaceQuota", "storageType")
    PATH_FIELD_NUMBER: _ClassVar[int]
    NAMESPACEQUOTA_FIELD_NUMBER: _ClassVar[int]
    STORAGESPACEQUOTA_FIELD_NUMBER: _ClassVar[int]
    STORAGETYPE_FIELD_NUMBER: _ClassVar[int]
    path: str
    namespaceQuota: int
    storagespaceQuota: int
    storageType: _hdfs_pb2.StorageTypeProto
    def __init__(self, path: _Optional[str] = ..., namespaceQuota: _Optional[int] = ..., storagespaceQuota: _Optional[int] = ..., storageType: _Optional[_Union[_hdfs_pb2.StorageTypeProto, str]] = ...) -> None: ...

class SetQuotaResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetPreferredBlockSizeRequestProto(_message.Message):
    __slots__ = ("filename",)
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    filename: str
    def __init__(self, filename: _Optional[str] = ...) -> None: ...

class GetPreferredBlockSizeResponseProto(_message.Message):
    __slots__ = ("bsize",)
    BSIZE_FIELD_NUMBER: _ClassVar[int]
    bsize: int
    def __init__(self, bsize: _Optional[int] = ...) -> None: ...

class IsFileClosedRequestProto(_message.Message):
    __slots__ = ("src",)
    SRC_FIELD_NUMBER: _ClassVar[int]
    src: str
    def __init__(self, src: _Optional[str] = ...) -> None: ...

class IsFileClosedResponseProto(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: bool
    def __init__(self, result: _Optional[bool] = ...) -> None: ...

class FsyncRequestProto(_message.Message):
    __slots__ = ("src", "client", "lastBlockLength", "fileId")
    SRC_FIELD_NUMBER: _ClassVar[int]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    LASTBLOCKLENGTH_FIELD_NUMBER: _ClassVar[int]
    FILEID_FIELD_NUMBER: _ClassVar[int]
    src: str
    client: str
    lastBlockLength: int
    fileId: int
    def __init__(self, src: _Optional[str] = ..., client: _Optional[str] = ..., lastBlockLength: _Optional[int] = ..., fileId: _Optional[int] = ...) -> None: ...

class FsyncResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SetSafeModeRequestProto(_message.Message):
    __slots__ = ("action", "checked")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    CHECKED_FIELD_NUMBER: _ClassVar[int]
    action: SafeModeActionProto
    checked: bool
    def __init__(self, action: _Optional[_Union[SafeModeActionProto, str]] = ..., checked: _Optional[bool] = ...) -> None: ...

class SetSafeModeResponseProto(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: bool
    def __init__(self, result: _Optional[bool] = ...) -> None: ...

class AddBlockRequestProto(_message.Message):
    __slots__ = ("src", "clientName", "previous", "excludeNodes", "fileId", "favoredNodes", "flags")
    SRC_FIELD_NUMBER: _ClassVar[int]
    CLIENTNAME_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_FIELD_NUMBER: _ClassVar[int]
    EXCLUDENODES_FIELD_NUMBER: _ClassVar[int]
    FILEID_FIELD_NUMBER: _ClassVar[int]
    FAVOREDNODES_FIELD_NUMBER: _ClassVar[int]
    FLAGS_FIELD_NUMBER: _ClassVar[int]
    src: str
    clientName: str
    previous: _hdfs_pb2.ExtendedBlockProto
    excludeNodes: _containers.RepeatedCompositeFieldContainer[_hdfs_pb2.DatanodeInfoProto]
    fileId: int
    favoredNodes: _containers.RepeatedScalarFieldContainer[str]
    flags: _containers.RepeatedScalarFieldContainer[AddBlockFlagProto]
    def __init__(self, src: _Optional[str] = ..., clientName: _Optional[str] = ..., previous: _Optional[_Union[_hdfs_pb2.ExtendedBlockProto, _Mapping]] = ..., excludeNodes: _Optional[_Iterable[_Union[_hdfs_pb2.DatanodeInfoProto, _Mapping]]] = ..., fileId: _Optional[int] = ..., favoredNodes: _Optional[_Iterable[str]] = ..., flags: _Optional[_Iterable[_Union[AddBlockFlagProto, str]]] = ...) -> None: ...

class AddBlockResponseProto(_message.Message):
    __slots__ = ("block",)
    BLOCK_FIELD_NUMBER: _ClassVar[int]
    block: _hdfs_pb2.LocatedBlockProto
    def __init__(self, block: _Optional[_Union[_hdfs_pb2.LocatedBlockProto, _Mapping]] = ...) -> None: ...

class GetAdditionalDatanodeRequestProto(_message.Message):
    __slots__ = ("src", "blk", "existings", "excludes", "numAdditionalNodes", "clientName", "existingStorageUuids", "fileId")
    SRC_FIELD_NUMBER: _ClassVar[int]
    BLK_FIELD_NUMBER: _ClassVar[int]
    EXISTINGS_FIELD_NUMBER: _ClassVar[int]
    EXCLUDES_FIELD_NUMBER: _ClassVar[int]
    NUMADDITIONALNODES_FIELD_NUMBER: _ClassVar[int]
    CLIENTNAME_FIELD_NUMBER: _ClassVar[int]
    EXISTINGSTORAGEUUIDS_FIELD_NUMBER: _ClassVar[int]
    FILEID_FIELD_NUMBER: _ClassVar[int]
    src: str
    blk: _hdfs_pb2.ExtendedBlockProto
    existings: _containers.RepeatedCompositeFieldContainer[_hdfs_pb2.DatanodeInfoProto]
    excludes: _containers.RepeatedCompositeFieldContainer[_hdfs_pb2.DatanodeInfoProto]
    numAdditionalNodes: int
    clientName: str
    existingStorageUuids: _containers.RepeatedScalarFieldContainer[str]
    fileId: int
    def __init__(self, src: _Optional[str] = ..., blk: _Optional[_Union[_hdfs_pb2.ExtendedBlockProto, _Mapping]] = ..., existings: _Optional[_Iterable[_Union[_hdfs_pb2.DatanodeInfoProto, _Mapping]]] = ..., excludes: _Optional[_Iterable[_Union[_hdfs_pb2.DatanodeInfoProto, _Mapping]]] = ..., numAdditionalNodes: _Optional[int] = ..., clientName: _Optional[str] = ..., existingStorageUuids: _Optional[_Iterable[str]] = ..., fileId: _Optional[int] = ...) -> None: ...

class GetAdditionalDatanodeResponseProto(_message.Message):
    __slots__ = ("block",)
    BLOCK_FIELD_NUMBER: _ClassVar[int]
    block: _hdfs_pb2.LocatedBlockProto
    def __init__(self, block: _Optional[_Union[_hdfs_pb2.LocatedBlockProto, _Mapping]] = ...) -> None: ...

class UpdateBlockForPipelineRequestProto(_message.Message):
    __slots__ = ("block", "clientName")
    BLOCK_FIELD_NUMBER: _ClassVar[int]
    CLIENTNAME_FIELD_NUMBER: _ClassVar[int]
    block: _hdfs_pb2.ExtendedBlockProto
    clientName: str
    def __init__(self, block: _Optional[_Union[_hdfs_pb2.ExtendedBlockProto, _Mapping]] = ..., clientName: _Optional[str] = ...) -> None: ...

class UpdateBlockForPipelineResponseProto(_message.Message):
    __slots__ = ("block",)
    BLOCK_FIELD_NUMBER: _ClassVar[int]
    block: _hdfs_pb2.LocatedBlockProto
    def __init__(self, block: _Optional[_Union[_hdfs_pb2.LocatedBlockProto, _Mapping]] = ...) -> None: ...

class UpdatePipelineRequestProto(_message.Message):
    __slots__ = ("clientName", "oldBlock", "newBlock", "newNodes", "storageIDs")
    CLIENTNAME_FIELD_NUMBER: _ClassVar[int]
    OLDBLOCK_FIELD_NUMBER: _ClassVar[int]
    NEWBLOCK_FIELD_NUMBER: _ClassVar[int]
    NEWNODES_FIELD_NUMBER: _ClassVar[int]
    STORAGEIDS_FIELD_NUMBER: _ClassVar[int]
    clientName: str
    oldBlock: _hdfs_pb2.ExtendedBlockProto
    newBlock: _hdfs_pb2.ExtendedBlockProto
    newNodes: _containers.RepeatedCompositeFieldContainer[_hdfs_pb2.DatanodeIDProto]
    storageIDs: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, clientName: _Optional[str] = ..., oldBlock: _Optional[_Union[_hdfs_pb2.ExtendedBlockProto, _Mapping]] = ..., newBlock: _Optional[_Union[_hdfs_pb2.ExtendedBlockProto, _Mapping]] = ..., newNodes: _Optional[_Iterable[_Union[_hdfs_pb2.DatanodeIDProto, _Mapping]]] = ..., storageIDs: _Optional[_Iterable[str]] = ...) -> None: ...

class UpdatePipelineResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetDatanodeReportRequestProto(_message.Message):
    __slots__ = ("type",)
    TYPE_FIELD_NUMBER: _ClassVar[int]
    type: DatanodeReportTypeProto
    def __init__(self, type: _Optional[_Union[DatanodeReportTypeProto, str]] = ...) -> None: ...

class GetDatanodeReportResponseProto(_message.Message):
    __slots__ = ("di",)
    DI_FIELD_NUMBER: _ClassVar[int]
    di: _containers.RepeatedCompositeFieldContainer[_hdfs_pb2.DatanodeInfoProto]
    def __init__(self, di: _Optional[_Iterable[_Union[_hdfs_pb2.DatanodeInfoProto, _Mapping]]] = ...) -> None: ...

class AbandonBlockRequestProto(_message.Message):
    __slots__ = ("b", "src", "holder", "fileId")
    B_FIELD_NUMBER: _ClassVar[int]
    SRC_FIELD_NUMBER: _ClassVar[int]
    HOLDER_FIELD_NUMBER: _ClassVar[int]
    FILEID_FIELD_NUMBER: _ClassVar[int]
    b: _hdfs_pb2.ExtendedBlockProto
    src: str
    holder: str
    fileId: int
    def __init__(self, b: _Optional[_Union[_hdfs_pb2.ExtendedBlockProto, _Mapping]] = ..., src: _Optional[str] = ..., holder: _Optional[str] = ..., fileId: _Optional[int] = ...) -> None: ...

class AbandonBlockResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AppendRequestProto(_message.Message):
    __slots__ = ("src", "clientName", "flag")
    SRC_FIELD_NUMBER: _ClassVar[int]
    CLIENTNAME_FIELD_NUMBER: _ClassVar[int]
    FLAG_FIELD_NUMBER: _ClassVar[int]
    src: str
    clientName: str
    flag: int
    def __init__(self, src: _Optional[str] = ..., clientName: _Optional[str] = ..., flag: _Optional[int] = ...) -> None: ...

class AppendResponseProto(_message.Message):
    __slots__ = ("block", "stat")
    BLOCK_FIELD_NUMBER: _ClassVar[int]
    STAT_FIELD_NUMBER: _ClassVar[int]
    block: _hdfs_pb2.LocatedBlockProto
    stat: _hdfs_pb2.HdfsFileStatusProto
    def __init__(self, block: _Optional[_Union[_hdfs_pb2.LocatedBlockProto, _Mapping]] = ..., stat: _Optional[_Union[_hdfs_pb2.HdfsFileStatusProto, _Mapping]] = ...) -> None: ...

class TruncateRequestProto(_message.Message):
    __slots__ = ("src", "newLength", "clientName")
    SRC_FIELD_NUMBER: _ClassVar[int]
    NEWLENGTH_FIELD_NUMBER: _ClassVar[int]
    CLIENTNAME_FIELD_NUMBER: _ClassVar[int]
    src: str
    newLength: int
    clientName: str
    def __init__(self, src: _Optional[str] = ..., newLength: _Optional[int] = ..., clientName: _Optional[str] = ...) -> None: ...

class TruncateResponseProto(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: bool
    def __init__(self, result: _Optional[bool] = ...) -> None: ...

class ConcatRequestProto(_message.Message):
    __slots__ = ("trg", "srcs")
    TRG_FIELD_NUMBER: _ClassVar[int]
    SRCS_FIELD_NUMBER: _ClassVar[int]
    trg: str
    srcs: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, trg: _Optional[str] = ..., srcs: _Optional[_Iterable[str]] = ...) -> None: ...

class ConcatResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RecoverLeaseRequestProto(_message.Message):
    __slots__ = ("src", "clientName")
    SRC_FIELD_NUMBER: _ClassVar[int]
    CLIENTNAME_FIELD_NUMBER: _ClassVar[int]
    src: str
    clientName: str
    def __init__(self, src: _Optional[str] = ..., clientName: _Optional[str] = ...) -> None: ...

class RecoverLeaseResponseProto(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: bool
    def __init__(self, result: _Optional[bool] = ...) -> None: ...

class AclEntryProto(_message.Message):
    __slots__ = ("type", "scope", "permissions", "name")
    class AclEntryScopeProto(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        ACCESS: _ClassVar[AclEntryProto.AclEntryScopeProto]
        DEFAULT: _ClassVar[AclEntryProto.AclEntryScopeProto]
    ACCESS: AclEntryProto.AclEntryScopeProto
    DEFAULT: AclEntryProto.AclEntryScopeProto
    class AclEntryTypeProto(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        USER: _ClassVar[AclEntryProto.AclEntryTypeProto]
        GROUP: _ClassVar[AclEntryProto.AclEntryTypeProto]
        MASK: _ClassVar[AclEntryProto.AclEntryTypeProto]
        OTHER: _ClassVar[AclEntryProto.AclEntryTypeProto]
    USER: AclEntryProto.AclEntryTypeProto
    GROUP: AclEntryProto.AclEntryTypeProto
    MASK: AclEntryProto.AclEntryTypeProto
    OTHER: AclEntryProto.AclEntryTypeProto
    class FsActionProto(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        NONE: _ClassVar[AclEntryProto.FsActionProto]
        EXECUTE: _ClassVar[AclEntryProto.FsActionProto]
        WRITE: _ClassVar[AclEntryProto.FsActionProto]
        WRITE_EXECUTE: _ClassVar[AclEntryProto.FsActionProto]
        READ: _ClassVar[AclEntryProto.FsActionProto]
        READ_EXECUTE: _ClassVar[AclEntryProto.FsActionProto]
        READ_WRITE: _ClassVar[AclEntryProto.FsActionProto]
        PERM_ALL: _ClassVar[AclEntryProto.FsActionProto]
    NONE: AclEntryProto.FsActionProto
    EXECUTE: AclEntryProto.FsActionProto
    WRITE: AclEntryProto.FsActionProto
    WRITE_EXECUTE: AclEntryProto.FsActionProto
    READ: AclEntryProto.FsActionProto
    READ_EXECUTE: AclEntryProto.FsActionProto
    READ_WRITE: AclEntryProto.FsActionProto
    PERM_ALL: AclEntryProto.FsActionProto
    TYPE_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    PERMISSIONS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    type: AclEntryProto.AclEntryTypeProto
    scope: AclEntryProto.AclEntryScopeProto
    permissions: AclEntryProto.FsActionProto
    name: str
    def __init__(self, type: _Optional[_Union[AclEntryProto.AclEntryTypeProto, str]] = ..., scope: _Optional[_Union[AclEntryProto.AclEntryScopeProto, str]] = ..., permissions: _Optional[_Union[AclEntryProto.FsActionProto, str]] = ..., name: _Optional[str] = ...) -> None: ...

class AclStatusProto(_message.Message):
    __slots__ = ("owner", "group", "sticky", "entries", "permission")
    OWNER_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    STICKY_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_FIELD_NUMBER: _ClassVar[int]
    owner: str
    group: str
    sticky: bool
    entries: _containers.RepeatedCompositeFieldContainer[AclEntryProto]
    permission: _hdfs_pb2.FsPermissionProto
    def __init__(self, owner: _Optional[str] = ..., group: _Optional[str] = ..., sticky: _Optional[bool] = ..., entries: _Optional[_Iterable[_Union[AclEntryProto, _Mapping]]] = ..., permission: _Optional[_Union[_hdfs_pb2.FsPermissionProto, _Mapping]] = ...) -> None: ...

class GetAclStatusRequestProto(_message.Message):
    __slots__ = ("src",)
    SRC_FIELD_NUMBER: _ClassVar[int]
    src: str
    def __init__(self, src: _Optional[str] = ...) -> None: ...

class GetAclStatusResponseProto(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: AclStatusProto
    def __init__(self, result: _Optional[_Union[AclStatusProto, _Mapping]] = ...) -> None: ...

class ModifyAclEntriesRequestProto(_message.Message):
    __slots__ = ("src", "aclSpec")
    SRC_FIELD_NUMBER: _ClassVar[int]
    ACLSPEC_FIELD_NUMBER: _ClassVar[int]
    src: str
    aclSpec: _containers.RepeatedCompositeFieldContainer[AclEntryProto]
    def __init__(self, src: _Optional[str] = ..., aclSpec: _Optional[_Iterable[_Union[AclEntryProto, _Mapping]]] = ...) -> None: ...

class ModifyAclEntriesResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RemoveAclEntriesRequestProto(_message.Message):
    __slots__ = ("src", "aclSpec")
    SRC_FIELD_NUMBER: _ClassVar[int]
    ACLSPEC_FIELD_NUMBER: _ClassVar[int]
    src: str
    aclSpec: _containers.RepeatedCompositeFieldContainer[AclEntryProto]
    def __init__(self, src: _Optional[str] = ..., aclSpec: _Optional[_Iterable[_Union[AclEntryProto, _Mapping]]] = ...) -> None: ...

class RemoveAclEntriesResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RemoveDefaultAclRequestProto(_message.Message):
    __slots__ = ("src",)
    SRC_FIELD_NUMBER: _ClassVar[int]
    src: str
    def __init__(self, src: _Optional[str] = ...) -> None: ...

class RemoveDefaultAclResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RemoveAclRequestProto(_message.Message):
    __slots__ = ("src",)
    SRC_FIELD_NUMBER: _ClassVar[int]
    src: str
    def __init__(self, src: _Optional[str] = ...) -> None: ...

class RemoveAclResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SetAclRequestProto(_message.Message):
    __slots__ = ("src", "aclSpec")
    SRC_FIELD_NUMBER: _ClassVar[int]
    ACLSPEC_FIELD_NUMBER: _ClassVar[int]
    src: str
    aclSpec: _containers.RepeatedCompositeFieldContainer[AclEntryProto]
    def __init__(self, src: _Optional[str] = ..., aclSpec: _Optional[_Iterable[_Union[AclEntryProto, _Mapping]]] = ...) -> None: ...

class SetAclResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CheckAccessRequestProto(_message.Message):
    __slots__ = ("path", "mode")
    PATH_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    path: str
    mode: AclEntryProto.FsActionProto
    def __init__(self, path: _Optional[str] = ..., mode: _Optional[_Union[AclEntryProto.FsActionProto, str]] = ...) -> None: ...

class CheckAccessResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class XAttrProto(_message.Message):
    __slots__ = ("namespace", "name", "value")
    class XAttrNamespaceProto(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        USER: _ClassVar[XAttrProto.XAttrNamespaceProto]
        TRUSTED: _ClassVar[XAttrProto.XAttrNamespaceProto]
        SECURITY: _ClassVar[XAttrProto.XAttrNamespaceProto]
        SYSTEM: _ClassVar[XAttrProto.XAttrNamespaceProto]
        RAW: _ClassVar[XAttrProto.XAttrNamespaceProto]
    USER: XAttrProto.XAttrNamespaceProto
    TRUSTED: XAttrProto.XAttrNamespaceProto
    SECURITY: XAttrProto.XAttrNamespaceProto
    SYSTEM: XAttrProto.XAttrNamespaceProto
    RAW: XAttrProto.XAttrNamespaceProto
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    namespace: XAttrProto.XAttrNamespaceProto
    name: str
    value: bytes
    def __init__(self, namespace: _Optional[_Union[XAttrProto.XAttrNamespaceProto, str]] = ..., name: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...

class GetXAttrsRequestProto(_message.Message):
    __slots__ = ("src", "xAttrs")
    SRC_FIELD_NUMBER: _ClassVar[int]
    XATTRS_FIELD_NUMBER: _ClassVar[int]
    src: str
    xAttrs: _containers.RepeatedCompositeFieldContainer[XAttrProto]
    def __init__(self, src: _Optional[str] = ..., xAttrs: _Optional[_Iterable[_Union[XAttrProto, _Mapping]]] = ...) -> None: ...

class GetXAttrsResponseProto(_message.Message):
    __slots__ = ("xAttrs",)
    XATTRS_FIELD_NUMBER: _ClassVar[int]
    xAttrs: _containers.RepeatedCompositeFieldContainer[XAttrProto]
    def __init__(self, xAttrs: _Optional[_Iterable[_Union[XAttrProto, _Mapping]]] = ...) -> None: ...

class ListXAttrsRequestProto(_message.Message):
    __slots__ = ("src",)
    SRC_FIELD_NUMBER: _ClassVar[int]
    src: str
    def __init__(self, src: _Optional[str] = ...) -> None: ...

class ListXAttrsResponseProto(_message.Message):
    __slots__ = ("xAttrs",)
    XATTRS_FIELD_NUMBER: _ClassVar[int]
    xAttrs: _containers.RepeatedCompositeFieldContainer[XAttrProto]
    def __init__(self, xAttrs: _Optional[_Iterable[_Union[XAttrProto, _Mapping]]] = ...) -> None: ...

class SetXAttrRequestProto(_message.Message):
    __slots__ = ("src", "xAttr", "flag")
    SRC_FIELD_NUMBER: _ClassVar[int]
    XATTR_FIELD_NUMBER: _ClassVar[int]
    FLAG_FIELD_NUMBER: _ClassVar[int]
    src: str
    xAttr: XAttrProto
    flag: int
    def __init__(self, src: _Optional[str] = ..., xAttr: _Optional[_Union[XAttrProto, _Mapping]] = ..., flag: _Optional[int] = ...) -> None: ...

class SetXAttrResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RemoveXAttrRequestProto(_message.Message):
    __slots__ = ("src", "xAttr")
    SRC_FIELD_NUMBER: _ClassVar[int]
    XATTR_FIELD_NUMBER: _ClassVar[int]
    src: str
    xAttr: XAttrProto
    def __init__(self, src: _Optional[str] = ..., xAttr: _Optional[_Union[XAttrProto, _Mapping]] = ...) -> None: ...

class RemoveXAttrResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class EncryptionZoneProto(_message.Message):
    __slots__ = ("id", "path")
    ID_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    id: int
    path: str
    def __init__(self, id: _Optional[int] = ..., path: _Optional[str] = ...) -> None: ...

class ListEncryptionZonesRequestProto(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class ListEncryptionZonesResponseProto(_message.Message):
    __slots__ = ("zones", "hasMore")
    ZONES_FIELD_NUMBER: _ClassVar[int]
    HASMORE_FIELD_NUMBER: _ClassVar[int]
    zones: _containers.RepeatedCompositeFieldContainer[EncryptionZoneProto]
    hasMore: bool
    def __init__(self, zones: _Optional[_Iterable[_Union[EncryptionZoneProto, _Mapping]]] = ..., hasMore: _Optional[bool] = ...) -> None: ...

class GetEZForPathRequestProto(_message.Message):
    __slots__ = ("src",)
    SRC_FIELD_NUMBER: _ClassVar[int]
    src: str
    def __init__(self, src: _Optional[str] = ...) -> None: ...

class GetEZForPathResponseProto(_message.Message):
    __slots__ = ("zone",)
    ZONE_FIELD_NUMBER: _ClassVar[int]
    zone: EncryptionZoneProto
    def __init__(self, zone: _Optional[_Union[EncryptionZoneProto, _Mapping]] = ...) -> None: ...
