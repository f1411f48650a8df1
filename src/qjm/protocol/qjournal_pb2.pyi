from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class NamespaceInfo(_message.Message):
    __slots__ = ("namespace_id", "cluster_id", "block_pool_id", "ctime", "layout_version")
    NAMESPACE_ID_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    BLOCK_POOL_ID_FIELD_NUMBER: _ClassVar[int]
    CTIME_FIELD_NUMBER: _ClassVar[int]
    LAYOUT_VERSION_FIELD_NUMBER: _ClassVar[int]
    namespace_id: int
    cluster_id: str
    block_pool_id: str
    ctime: int
    layout_version: int
    def __init__(self, namespace_id: _Optional[int] = ..., cluster_id: _Optional[str] = ..., block_pool_id: _Optional[str] = ..., ctime: _Optional[int] = ..., layout_version: _Optional[int] = ...) -> None: ...

class RequestInfo(_message.Message):
    __slots__ = ("jid", "epoch", "ipc_serial", "committed_txid")
    JID_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    IPC_SERIAL_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_TXID_FIELD_NUMBER: _ClassVar[int]
    jid: str
    epoch: int
    ipc_serial: int
    committed_txid: int
    def __init__(self, jid: _Optional[str] = ..., epoch: _Optional[int] = ..., ipc_serial: _Optional[int] = ..., committed_txid: _Optional[int] = ...) -> None: ...

class SegmentState(_message.Message):
    __slots__ = ("start_txid", "end_txid", "is_in_progress", "byte_length")
    START_TXID_FIELD_NUMBER: _ClassVar[int]
    END_TXID_FIELD_NUMBER: _ClassVar[int]
    IS_IN_PROGRESS_FIELD_NUMBER: _ClassVar[int]
    BYTE_LENGTH_FIELD_NUMBER: _ClassVar[int]
    start_txid: int
    end_txid: int
    is_in_progress: bool
    byte_length: int
    def __init__(self, start_txid: _Optional[int] = ..., end_txid: _Optional[int] = ..., is_in_progress: _Optional[bool] = ..., byte_length: _Optional[int] = ...) -> None: ...

class PersistedRecoveryPaxosData(_message.Message):
    __slots__ = ("segment_state", "accepted_in_epoch")
    SEGMENT_STATE_FIELD_NUMBER: _ClassVar[int]
    ACCEPTED_IN_EPOCH_FIELD_NUMBER: _ClassVar[int]
    segment_state: SegmentState
    accepted_in_epoch: int
    def __init__(self, segment_state: _Optional[_Union[SegmentState, _Mapping]] = ..., accepted_in_epoch: _Optional[int] = ...) -> None: ...

class JournalIdRequest(_message.Message):
    __slots__ = ("jid",)
    JID_FIELD_NUMBER: _ClassVar[int]
    jid: str
    def __init__(self, jid: _Optional[str] = ...) -> None: ...

class IsFormattedResponse(_message.Message):
    __slots__ = ("is_formatted",)
    IS_FORMATTED_FIELD_NUMBER: _ClassVar[int]
    is_formatted: bool
    def __init__(self, is_formatted: _Optional[bool] = ...) -> None: ...

class FormatRequest(_message.Message):
    __slots__ = ("jid", "ns_info", "force", "members")
    JID_FIELD_NUMBER: _ClassVar[int]
    NS_INFO_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    jid: str
    ns_info: NamespaceInfo
    force: bool
    members: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, jid: _Optional[str] = ..., ns_info: _Optional[_Union[NamespaceInfo, _Mapping]] = ..., force: _Optional[bool] = ..., members: _Optional[_Iterable[str]] = ...) -> None: ...

class Empty(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetJournalStateResponse(_message.Message):
    __slots__ = ("last_promised_epoch", "http_port", "from_url", "node_id", "last_writer_epoch")
    LAST_PROMISED_EPOCH_FIELD_NUMBER: _ClassVar[int]
    HTTP_PORT_FIELD_NUMBER: _ClassVar[int]
    FROM_URL_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_WRITER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    last_promised_epoch: int
    http_port: int
    from_url: str
    node_id: str
    last_writer_epoch: int
    def __init__(self, last_promised_epoch: _Optional[int] = ..., http_port: _Optional[int] = ..., from_url: _Optional[str] = ..., node_id: _Optional[str] = ..., last_writer_epoch: _Optional[int] = ...) -> None: ...

class NewEpochRequest(_message.Message):
    __slots__ = ("jid", "ns_info", "epoch", "members")
    JID_FIELD_NUMBER: _ClassVar[int]
    NS_INFO_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    jid: str
    ns_info: NamespaceInfo
    epoch: int
    members: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, jid: _Optional[str] = ..., ns_info: _Optional[_Union[NamespaceInfo, _Mapping]] = ..., epoch: _Optional[int] = ..., members: _Optional[_Iterable[str]] = ...) -> None: ...

class NewEpochResponse(_message.Message):
    __slots__ = ("last_segment_txid",)
    LAST_SEGMENT_TXID_FIELD_NUMBER: _ClassVar[int]
    last_segment_txid: int
    def __init__(self, last_segment_txid: _Optional[int] = ...) -> None: ...

class StartLogSegmentRequest(_message.Message):
    __slots__ = ("req", "txid", "layout_version")
    REQ_FIELD_NUMBER: _ClassVar[int]
    TXID_FIELD_NUMBER: _ClassVar[int]
    LAYOUT_VERSION_FIELD_NUMBER: _ClassVar[int]
    req: RequestInfo
    txid: int
    layout_version: int
    def __init__(self, req: _Optional[_Union[RequestInfo, _Mapping]] = ..., txid: _Optional[int] = ..., layout_version: _Optional[int] = ...) -> None: ...

class JournalRequest(_message.Message):
    __slots__ = ("req", "first_txid", "num_txns", "records", "segment_txid")
    REQ_FIELD_NUMBER: _ClassVar[int]
    FIRST_TXID_FIELD_NUMBER: _ClassVar[int]
    NUM_TXNS_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_TXID_FIELD_NUMBER: _ClassVar[int]
    req: RequestInfo
    first_txid: int
    num_txns: int
    records: bytes
    segment_txid: int
    def __init__(self, req: _Optional[_Union[RequestInfo, _Mapping]] = ..., first_txid: _Optional[int] = ..., num_txns: _Optional[int] = ..., records: _Optional[bytes] = ..., segment_txid: _Optional[int] = ...) -> None: ...

class HeartbeatRequest(_message.Message):
    __slots__ = ("req",)
    REQ_FIELD_NUMBER: _ClassVar[int]
    req: RequestInfo
    def __init__(self, req: _Optional[_Union[RequestInfo, _Mapping]] = ...) -> None: ...

class FinalizeLogSegmentRequest(_message.Message):
    __slots__ = ("req", "start_txid", "end_txid")
    REQ_FIELD_NUMBER: _ClassVar[int]
    START_TXID_FIELD_NUMBER: _ClassVar[int]
    END_TXID_FIELD_NUMBER: _ClassVar[int]
    req: RequestInfo
    start_txid: int
    end_txid: int
    def __init__(self, req: _Optional[_Union[RequestInfo, _Mapping]] = ..., start_txid: _Optional[int] = ..., end_txid: _Optional[int] = ...) -> None: ...

class PurgeLogsRequest(_message.Message):
    __slots__ = ("req", "min_txid_to_keep")
    REQ_FIELD_NUMBER: _ClassVar[int]
    MIN_TXID_TO_KEEP_FIELD_NUMBER: _ClassVar[int]
    req: RequestInfo
    min_txid_to_keep: int
    def __init__(self, req: _Optional[_Union[RequestInfo, _Mapping]] = ..., min_txid_to_keep: _Optional[int] = ...) -> None: ...

class GetEditLogManifestRequest(_message.Message):
    __slots__ = ("jid", "since_txid", "in_progress_ok")
    JID_FIELD_NUMBER: _ClassVar[int]
    SINCE_TXID_FIELD_NUMBER: _ClassVar[int]
    IN_PROGRESS_OK_FIELD_NUMBER: _ClassVar[int]
    jid: str
    since_txid: int
    in_progress_ok: bool
    def __init__(self, jid: _Optional[str] = ..., since_txid: _Optional[int] = ..., in_progress_ok: _Optional[bool] = ...) -> None: ...

class RemoteEditLog(_message.Message):
    __slots__ = ("start_txid", "end_txid", "is_in_progress")
    START_TXID_FIELD_NUMBER: _ClassVar[int]
    END_TXID_FIELD_NUMBER: _ClassVar[int]
    IS_IN_PROGRESS_FIELD_NUMBER: _ClassVar[int]
    start_txid: int
    end_txid: int
    is_in_progress: bool
    def __init__(self, start_txid: _Optional[int] = ..., end_txid: _Optional[int] = ..., is_in_progress: _Optional[bool] = ...) -> None: ...

class GetEditLogManifestResponse(_message.Message):
    __slots__ = ("logs", "committed_txid", "http_port", "from_url", "last_writer_epoch", "last_promised_epoch")
    LOGS_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_TXID_FIELD_NUMBER: _ClassVar[int]
    HTTP_PORT_FIELD_NUMBER: _ClassVar[int]
    FROM_URL_FIELD_NUMBER: _ClassVar[int]
    LAST_WRITER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LAST_PROMISED_EPOCH_FIELD_NUMBER: _ClassVar[int]
    logs: _containers.RepeatedCompositeFieldContainer[RemoteEditLog]
    committed_txid: int
    http_port: int
    from_url: str
    last_writer_epoch: int
    last_promised_epoch: int
    def __init__(self, logs: _Optional[_Iterable[_Union[RemoteEditLog, _Mapping]]] = ..., committed_txid: _Optional[int] = ..., http_port: _Optional[int] = ..., from_url: _Optional[str] = ..., last_writer_epoch: _Optional[int] = ..., last_promised_epoch: _Optional[int] = ...) -> None: ...

class PrepareRecoveryRequest(_message.Message):
    __slots__ = ("req", "segment_txid")
    REQ_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_TXID_FIELD_NUMBER: _ClassVar[int]
    req: RequestInfo
    segment_txid: int
    def __init__(self, req: _Optional[_Union[RequestInfo, _Mapping]] = ..., segment_txid: _Optional[int] = ...) -> None: ...

class PrepareRecoveryResponse(_message.Message):
    __slots__ = ("segment_state", "accepted_in_epoch", "last_writer_epoch", "last_committed_txid")
    SEGMENT_STATE_FIELD_NUMBER: _ClassVar[int]
    ACCEPTED_IN_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LAST_WRITER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LAST_COMMITTED_TXID_FIELD_NUMBER: _ClassVar[int]
    segment_state: SegmentState
    accepted_in_epoch: int
    last_writer_epoch: int
    last_committed_txid: int
    def __init__(self, segment_state: _Optional[_Union[SegmentState, _Mapping]] = ..., accepted_in_epoch: _Optional[int] = ..., last_writer_epoch: _Optional[int] = ..., last_committed_txid: _Optional[int] = ...) -> None: ...

class AcceptRecoveryRequest(_message.Message):
    __slots__ = ("req", "state_to_accept", "from_url")
    REQ_FIELD_NUMBER: _ClassVar[int]
    STATE_TO_ACCEPT_FIELD_NUMBER: _ClassVar[int]
    FROM_URL_FIELD_NUMBER: _ClassVar[int]
    req: RequestInfo
    state_to_accept: SegmentState
    from_url: str
    def __init__(self, req: _Optional[_Union[RequestInfo, _Mapping]] = ..., state_to_accept: _Optional[_Union[SegmentState, _Mapping]] = ..., from_url: _Optional[str] = ...) -> None: ...

class GetJournaledEditsRequest(_message.Message):
    __slots__ = ("jid", "since_txid", "max_txns", "wait_ms")
    JID_FIELD_NUMBER: _ClassVar[int]
    SINCE_TXID_FIELD_NUMBER: _ClassVar[int]
    MAX_TXNS_FIELD_NUMBER: _ClassVar[int]
    WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    jid: str
    since_txid: int
    max_txns: int
    wait_ms: int
    def __init__(self, jid: _Optional[str] = ..., since_txid: _Optional[int] = ..., max_txns: _Optional[int] = ..., wait_ms: _Optional[int] = ...) -> None: ...

class GetJournaledEditsResponse(_message.Message):
    __slots__ = ("txn_count", "edit_log", "committed_txid", "highest_written_txid", "last_writer_epoch", "last_promised_epoch")
    TXN_COUNT_FIELD_NUMBER: _ClassVar[int]
    EDIT_LOG_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_TXID_FIELD_NUMBER: _ClassVar[int]
    HIGHEST_WRITTEN_TXID_FIELD_NUMBER: _ClassVar[int]
    LAST_WRITER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LAST_PROMISED_EPOCH_FIELD_NUMBER: _ClassVar[int]
    txn_count: int
    edit_log: bytes
    committed_txid: int
    highest_written_txid: int
    last_writer_epoch: int
    last_promised_epoch: int
    def __init__(self, txn_count: _Optional[int] = ..., edit_log: _Optional[bytes] = ..., committed_txid: _Optional[int] = ..., highest_written_txid: _Optional[int] = ..., last_writer_epoch: _Optional[int] = ..., last_promised_epoch: _Optional[int] = ...) -> None: ...

class JournalStatus(_message.Message):
    __slots__ = ("jid", "is_formatted", "ns_info", "last_promised_epoch", "last_writer_epoch", "committed_txid", "highest_written_txid", "current_segment_txid", "segments", "members", "problems")
    JID_FIELD_NUMBER: _ClassVar[int]
    IS_FORMATTED_FIELD_NUMBER: _ClassVar[int]
    NS_INFO_FIELD_NUMBER: _ClassVar[int]
    LAST_PROMISED_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LAST_WRITER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_TXID_FIELD_NUMBER: _ClassVar[int]
    HIGHEST_WRITTEN_TXID_FIELD_NUMBER: _ClassVar[int]
    CURRENT_SEGMENT_TXID_FIELD_NUMBER: _ClassVar[int]
    SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    PROBLEMS_FIELD_NUMBER: _ClassVar[int]
    jid: str
    is_formatted: bool
    ns_info: NamespaceInfo
    last_promised_epoch: int
    last_writer_epoch: int
    committed_txid: int
    highest_written_txid: int
    current_segment_txid: int
    segments: _containers.RepeatedCompositeFieldContainer[RemoteEditLog]
    members: _containers.RepeatedScalarFieldContainer[str]
    problems: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, jid: _Optional[str] = ..., is_formatted: _Optional[bool] = ..., ns_info: _Optional[_Union[NamespaceInfo, _Mapping]] = ..., last_promised_epoch: _Optional[int] = ..., last_writer_epoch: _Optional[int] = ..., committed_txid: _Optional[int] = ..., highest_written_txid: _Optional[int] = ..., current_segment_txid: _Optional[int] = ..., segments: _Optional[_Iterable[_Union[RemoteEditLog, _Mapping]]] = ..., members: _Optional[_Iterable[str]] = ..., problems: _Optional[_Iterable[str]] = ...) -> None: ...

class GetNodeStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class NodeStatus(_message.Message):
    __slots__ = ("rpc_address", "http_address", "journals", "version", "node_id", "problems")
    RPC_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    HTTP_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    JOURNALS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    PROBLEMS_FIELD_NUMBER: _ClassVar[int]
    rpc_address: str
    http_address: str
    journals: _containers.RepeatedCompositeFieldContainer[JournalStatus]
    version: str
    node_id: str
    problems: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, rpc_address: _Optional[str] = ..., http_address: _Optional[str] = ..., journals: _Optional[_Iterable[_Union[JournalStatus, _Mapping]]] = ..., version: _Optional[str] = ..., node_id: _Optional[str] = ..., problems: _Optional[_Iterable[str]] = ...) -> None: ...
