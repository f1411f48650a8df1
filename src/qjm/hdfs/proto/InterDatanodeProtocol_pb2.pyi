from qjm.hdfs.proto import hdfs_pb2 as _hdfs_pb2
from qjm.hdfs.proto import HdfsServer_pb2 as _HdfsServer_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class InitReplicaRecoveryRequestProto(_message.Message):
    __slots__ = ("block",)
    BLOCK_FIELD_NUMBER: _ClassVar[int]
    block: _HdfsServer_pb2.RecoveringBlockProto
    def __init__(self, block: _Optional[_Union[_HdfsServer_pb2.RecoveringBlockProto, _Mapping]] = ...) -> None: ...

class InitReplicaRecoveryResponseProto(_message.Message):
    __slots__ = ("replicaFound", "state", "block")
    REPLICAFOUND_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    BLOCK_FIELD_NUMBER: _ClassVar[int]
    replicaFound: bool
    state: _HdfsServer_pb2.ReplicaStateProto
    block: _hdfs_pb2.BlockProto
    def __init__(self, replicaFound: _Optional[bool] = ..., state: _Optional[_Union[_HdfsServer_pb2.ReplicaStateProto, str]] = ..., block: _Optional[_Union[_hdfs_pb2.BlockProto, _Mapping]] = ...) -> None: ...

class UpdateReplicaUnderRecoveryRequestProto(_message.Message):
    __slots__ = ("block", "recoveryId", "newLength", "newBlockId")
    BLOCK_FIELD_NUMBER: _ClassVar[int]
    RECOVERYID_FIELD_NUMBER: _ClassVar[int]
    NEWLENGTH_FIELD_NUMBER: _ClassVar[int]
    NEWBLOCKID_FIELD_NUMBER: _ClassVar[int]
    block: _hdfs_pb2.ExtendedBlockProto
    recoveryId: int
    newLength: int
    newBlockId: int
    def __init__(self, block: _Optional[_Union[_hdfs_pb2.ExtendedBlockProto, _Mapping]] = ..., recoveryId: _Optional[int] = ..., newLength: _Optional[int] = ..., newBlockId: _Optional[int] = ...) -> None: ...

class UpdateReplicaUnderRecoveryResponseProto(_message.Message):
    __slots__ = ("storageUuid",)
    STORAGEUUID_FIELD_NUMBER: _ClassVar[int]
    storageUuid: str
    def __init__(self, storageUuid: _Optional[str] = ...) -> None: ...
