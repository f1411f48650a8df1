from qjm.namenode.proto import hdfs_pb2 as _hdfs_pb2
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
CREATE: CreateFlagProto
OVERWRITE: CreateFlagProto
APPEND: CreateFlagProto
LAZY_PERSIST: CreateFlagProto
NEW_BLOCK: CreateFlagProto
SHOULD_REPLICATE: CreateFlagProto

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
