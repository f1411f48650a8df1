from qjm.hdfs.proto import hdfs_pb2 as _hdfs_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ReplicaStateProto(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FINALIZED: _ClassVar[ReplicaStateProto]
    RBW: _ClassVar[ReplicaStateProto]
    RWR: _ClassVar[ReplicaStateProto]
    RUR: _ClassVar[ReplicaStateProto]
    TEMPORARY: _ClassVar[ReplicaStateProto]
FINALIZED: ReplicaStateProto
RBW: ReplicaStateProto
RWR: ReplicaStateProto
RUR: ReplicaStateProto
TEMPORARY: ReplicaStateProto

class BlockKeyProto(_message.Message):
    __slots__ = ("keyId", "expiryDate", "keyBytes")
    KEYID_FIELD_NUMBER: _ClassVar[int]
    EXPIRYDATE_FIELD_NUMBER: _ClassVar[int]
    KEYBYTES_FIELD_NUMBER: _ClassVar[int]
    keyId: int
    expiryDate: int
    keyBytes: bytes
    def __init__(self, keyId: _Optional[int] = ..., expiryDate: _Optional[int] = ..., keyBytes: _Optional[bytes] = ...) -> None: ...

class ExportedBlockKeysProto(_message.Message):
    __slots__ = ("isBlockTokenEnabled", "keyUpdateInterval", "tokenLifeTime", "currentKey", "allKeys")
    ISBLOCKTOKENENABLED_FIELD_NUMBER: _ClassVar[int]
    KEYUPDATEINTERVAL_FIELD_NUMBER: _ClassVar[int]
    TOKENLIFETIME_FIELD_NUMBER: _ClassVar[int]
    CURRENTKEY_FIELD_NUMBER: _ClassVar[int]
    ALLKEYS_FIELD_NUMBER: _ClassVar[int]
    isBlockTokenEnabled: bool
    keyUpdateInterval: int
    tokenLifeTime: int
    currentKey: BlockKeyProto
    allKeys: _containers.RepeatedCompositeFieldContainer[BlockKeyProto]
    def __init__(self, isBlockTokenEnabled: _Optional[bool] = ..., keyUpdateInterval: _Optional[int] = ..., tokenLifeTime: _Optional[int] = ..., currentKey: _Optional[_Union[BlockKeyProto, _Mapping]] = ..., allKeys: _Optional[_Iterable[_Union[BlockKeyProto, _Mapping]]] = ...) -> None: ...

class NamespaceInfoProto(_message.Message):
    __slots__ = ("buildVersion", "unused", "blockPoolID", "storageInfo", "softwareVersion", "capabilities", "state")
    BUILDVERSION_FIELD_NUMBER: _ClassVar[int]
    UNUSED_FIELD_NUMBER: _ClassVar[int]
    BLOCKPOOLID_FIELD_NUMBER: _ClassVar[int]
    STORAGEINFO_FIELD_NUMBER: _ClassVar[int]
    SOFTWAREVERSION_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    buildVersion: str
    unused: int
    blockPoolID: str
    storageInfo: StorageInfoProto
    softwareVersion: str
    capabilities: int
    state: NNHAStatusHeartbeatProto.State
    def __init__(self, buildVersion: _Optional[str] = ..., unused: _Optional[int] = ..., blockPoolID: _Optional[str] = ..., storageInfo: _Optional[_Union[StorageInfoProto, _Mapping]] = ..., softwareVersion: _Optional[str] = ..., capabilities: _Optional[int] = ..., state: _Optional[_Union[NNHAStatusHeartbeatProto.State, str]] = ...) -> None: ...

class RecoveringBlockProto(_message.Message):
    __slots__ = ("newGenStamp", "block", "truncateBlock")
    NEWGENSTAMP_FIELD_NUMBER: _ClassVar[int]
    BLOCK_FIELD_NUMBER: _ClassVar[int]
    TRUNCATEBLOCK_FIELD_NUMBER: _ClassVar[int]
    newGenStamp: int
    block: _hdfs_pb2.LocatedBlockProto
    truncateBlock: _hdfs_pb2.BlockProto
    def __init__(self, newGenStamp: _Optional[int] = ..., block: _Optional[_Union[_hdfs_pb2.LocatedBlockProto, _Mapping]] = ..., truncateBlock: _Optional[_Union[_hdfs_pb2.BlockProto, _Mapping]] = ...) -> None: ...

class VersionRequestProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class VersionResponseProto(_message.Message):
    __slots__ = ("info",)
    INFO_FIELD_NUMBER: _ClassVar[int]
    info: NamespaceInfoProto
    def __init__(self, info: _Optional[_Union[NamespaceInfoProto, _Mapping]] = ...) -> None: ...

class StorageInfoProto(_message.Message):
    __slots__ = ("layoutVersion", "namespceID", "clusterID", "cTime")
    LAYOUTVERSION_FIELD_NUMBER: _ClassVar[int]
    NAMESPCEID_FIELD_NUMBER: _ClassVar[int]
    CLUSTERID_FIELD_NUMBER: _ClassVar[int]
    CTIME_FIELD_NUMBER: _ClassVar[int]
    layoutVersion: int
    namespceID: int
    clusterID: str
    cTime: int
    def __init__(self, layoutVersion: _Optional[int] = ..., namespceID: _Optional[int] = ..., clusterID: _Optional[str] = ..., cTime: _Optional[int] = ...) -> None: ...

class NNHAStatusHeartbeatProto(_message.Message):
    __slots__ = ("state", "txid")
    class State(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        ACTIVE: _ClassVar[NNHAStatusHeartbeatProto.State]
        STANDBY: _ClassVar[NNHAStatusHeartbeatProto.State]
    ACTIVE: NNHAStatusHeartbeatProto.State
    STANDBY: NNHAStatusHeartbeatProto.State
    STATE_FIELD_NUMBER: _ClassVar[int]
    TXID_FIELD_NUMBER: _ClassVar[int]
    state: NNHAStatusHeartbeatProto.State
    txid: int
    def __init__(self, state: _Optional[_Union[NNHAStatusHeartbeatProto.State, str]] = ..., txid: _Optional[int] = ...) -> None: ...
