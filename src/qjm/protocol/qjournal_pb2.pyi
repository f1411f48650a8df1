from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class StorageInfoProto(_message.Message):
    __slots__ = ("layout_version", "namespace_id", "cluster_id", "ctime")
    LAYOUT_VERSION_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_ID_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    CTIME_FIELD_NUMBER: _ClassVar[int]
    layout_version: int
    namespace_id: int
    cluster_id: str
    ctime: int
    def __init__(self, layout_version: _Optional[int] = ..., namespace_id: _Optional[int] = ..., cluster_id: _Optional[str] = ..., ctime: _Optional[int] = ...) -> None: ...

class NamespaceInfoProto(_message.Message):
    __slots__ = ("build_version", "unused", "block_pool_id", "storage_info", "software_version", "capabilities")
    BUILD_VERSION_FIELD_NUMBER: _ClassVar[int]
    UNUSED_FIELD_NUMBER: _ClassVar[int]
    BLOCK_POOL_ID_FIELD_NUMBER: _ClassVar[int]
    STORAGE_INFO_FIELD_NUMBER: _ClassVar[int]
    SOFTWARE_VERSION_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    build_version: str
    unused: int
    block_pool_id: str
    storage_info: StorageInfoProto
    software_version: str
    capabilities: int
    def __init__(self, build_version: _Optional[str] = ..., unused: _Optional[int] = ..., block_pool_id: _Optional[str] = ..., storage_info: _Optional[_Union[StorageInfoProto, _Mapping]] = ..., software_version: _Optional[str] = ..., capabilities: _Optional[int] = ...) -> None: ...

class RemoteEditLogProto(_message.Message):
    __slots__ = ("start_txid", "end_txid", "is_in_progress", "decided_epoch")
    START_TXID_FIELD_NUMBER: _ClassVar[int]
    END_TXID_FIELD_NUMBER: _ClassVar[int]
    IS_IN_PROGRESS_FIELD_NUMBER: _ClassVar[int]
    DECIDED_EPOCH_FIELD_NUMBER: _ClassVar[int]
    start_txid: int
    end_txid: int
    is_in_progress: bool
    decided_epoch: int
    def __init__(self, start_txid: _Optional[int] = ..., end_txid: _Optional[int] = ..., is_in_progress: _Optional[bool] = ..., decided_epoch: _Optional[int] = ...) -> None: ...

class RemoteEditLogManifestProto(_message.Message):
    __slots__ = ("logs", "committed_txid")
    LOGS_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_TXID_FIELD_NUMBER: _ClassVar[int]
    logs: _containers.RepeatedCompositeFieldContainer[RemoteEditLogProto]
    committed_txid: int
    def __init__(self, logs: _Optional[_Iterable[_Union[RemoteEditLogProto, _Mapping]]] = ..., committed_txid: _Optional[int] = ...) -> None: ...

class JournalIdProto(_message.Message):
    __slots__ = ("identifier",)
    IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    identifier: str
    def __init__(self, identifier: _Optional[str] = ...) -> None: ...

class RequestInfoProto(_message.Message):
    __slots__ = ("journal_id", "epoch", "ipc_serial", "committed_txid", "name_service_id")
    JOURNAL_ID_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    IPC_SERIAL_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_TXID_FIELD_NUMBER: _ClassVar[int]
    NAME_SERVICE_ID_FIELD_NUMBER: _ClassVar[int]
    journal_id: JournalIdProto
    epoch: int
    ipc_serial: int
    committed_txid: int
    name_service_id: str
    def __init__(self, journal_id: _Optional[_Union[JournalIdProto, _Mapping]] = ..., epoch: _Optional[int] = ..., ipc_serial: _Optional[int] = ..., committed_txid: _Optional[int] = ..., name_service_id: _Optional[str] = ...) -> None: ...

class SegmentStateProto(_message.Message):
    __slots__ = ("start_txid", "end_txid", "is_in_progress", "byte_length", "decided_epoch")
    START_TXID_FIELD_NUMBER: _ClassVar[int]
    END_TXID_FIELD_NUMBER: _ClassVar[int]
    IS_IN_PROGRESS_FIELD_NUMBER: _ClassVar[int]
    BYTE_LENGTH_FIELD_NUMBER: _ClassVar[int]
    DECIDED_EPOCH_FIELD_NUMBER: _ClassVar[int]
    start_txid: int
    end_txid: int
    is_in_progress: bool
    byte_length: int
    decided_epoch: int
    def __init__(self, start_txid: _Optional[int] = ..., end_txid: _Optional[int] = ..., is_in_progress: _Optional[bool] = ..., byte_length: _Optional[int] = ..., decided_epoch: _Optional[int] = ...) -> None: ...

class PersistedRecoveryPaxosData(_message.Message):
    __slots__ = ("segment_state", "accepted_in_epoch")
    SEGMENT_STATE_FIELD_NUMBER: _ClassVar[int]
    ACCEPTED_IN_EPOCH_FIELD_NUMBER: _ClassVar[int]
    segment_state: SegmentStateProto
    accepted_in_epoch: int
    def __init__(self, segment_state: _Optional[_Union[SegmentStateProto, _Mapping]] = ..., accepted_in_epoch: _Optional[int] = ...) -> None: ...

class JournalRequestProto(_message.Message):
    __slots__ = ("req", "first_txid", "num_txns", "records", "segment_txid", "name_service_id")
    REQ_FIELD_NUMBER: _ClassVar[int]
    FIRST_TXID_FIELD_NUMBER: _ClassVar[int]
    NUM_TXNS_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_TXID_FIELD_NUMBER: _ClassVar[int]
    NAME_SERVICE_ID_FIELD_NUMBER: _ClassVar[int]
    req: RequestInfoProto
    first_txid: int
    num_txns: int
    records: bytes
    segment_txid: int
    name_service_id: str
    def __init__(self, req: _Optional[_Union[RequestInfoProto, _Mapping]] = ..., first_txid: _Optional[int] = ..., num_txns: _Optional[int] = ..., records: _Optional[bytes] = ..., segment_txid: _Optional[int] = ..., name_service_id: _Optional[str] = ...) -> None: ...

class JournalResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class HeartbeatRequestProto(_message.Message):
    __slots__ = ("req", "release_lease")
    REQ_FIELD_NUMBER: _ClassVar[int]
    RELEASE_LEASE_FIELD_NUMBER: _ClassVar[int]
    req: RequestInfoProto
    release_lease: bool
    def __init__(self, req: _Optional[_Union[RequestInfoProto, _Mapping]] = ..., release_lease: _Optional[bool] = ...) -> None: ...

class HeartbeatResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StartLogSegmentRequestProto(_message.Message):
    __slots__ = ("req", "txid", "layout_version")
    REQ_FIELD_NUMBER: _ClassVar[int]
    TXID_FIELD_NUMBER: _ClassVar[int]
    LAYOUT_VERSION_FIELD_NUMBER: _ClassVar[int]
    req: RequestInfoProto
    txid: int
    layout_version: int
    def __init__(self, req: _Optional[_Union[RequestInfoProto, _Mapping]] = ..., txid: _Optional[int] = ..., layout_version: _Optional[int] = ...) -> None: ...

class StartLogSegmentResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class FinalizeLogSegmentRequestProto(_message.Message):
    __slots__ = ("req", "start_txid", "end_txid")
    REQ_FIELD_NUMBER: _ClassVar[int]
    START_TXID_FIELD_NUMBER: _ClassVar[int]
    END_TXID_FIELD_NUMBER: _ClassVar[int]
    req: RequestInfoProto
    start_txid: int
    end_txid: int
    def __init__(self, req: _Optional[_Union[RequestInfoProto, _Mapping]] = ..., start_txid: _Optional[int] = ..., end_txid: _Optional[int] = ...) -> None: ...

class FinalizeLogSegmentResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PurgeLogsRequestProto(_message.Message):
    __slots__ = ("req", "min_txid_to_keep")
    REQ_FIELD_NUMBER: _ClassVar[int]
    MIN_TXID_TO_KEEP_FIELD_NUMBER: _ClassVar[int]
    req: RequestInfoProto
    min_txid_to_keep: int
    def __init__(self, req: _Optional[_Union[RequestInfoProto, _Mapping]] = ..., min_txid_to_keep: _Optional[int] = ...) -> None: ...

class PurgeLogsResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class IsFormattedRequestProto(_message.Message):
    __slots__ = ("jid", "name_service_id")
    JID_FIELD_NUMBER: _ClassVar[int]
    NAME_SERVICE_ID_FIELD_NUMBER: _ClassVar[int]
    jid: JournalIdProto
    name_service_id: str
    def __init__(self, jid: _Optional[_Union[JournalIdProto, _Mapping]] = ..., name_service_id: _Optional[str] = ...) -> None: ...

class IsFormattedResponseProto(_message.Message):
    __slots__ = ("is_formatted",)
    IS_FORMATTED_FIELD_NUMBER: _ClassVar[int]
    is_formatted: bool
    def __init__(self, is_formatted: _Optional[bool] = ...) -> None: ...

class DiscardSegmentsRequestProto(_message.Message):
    __slots__ = ("jid", "start_txid", "name_service_id", "req")
    JID_FIELD_NUMBER: _ClassVar[int]
    START_TXID_FIELD_NUMBER: _ClassVar[int]
    NAME_SERVICE_ID_FIELD_NUMBER: _ClassVar[int]
    REQ_FIELD_NUMBER: _ClassVar[int]
    jid: JournalIdProto
    start_txid: int
    name_service_id: str
    req: RequestInfoProto
    def __init__(self, jid: _Optional[_Union[JournalIdProto, _Mapping]] = ..., start_txid: _Optional[int] = ..., name_service_id: _Optional[str] = ..., req: _Optional[_Union[RequestInfoProto, _Mapping]] = ...) -> None: ...

class DiscardSegmentsResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetJournalStateRequestProto(_message.Message):
    __slots__ = ("jid", "name_service_id")
    JID_FIELD_NUMBER: _ClassVar[int]
    NAME_SERVICE_ID_FIELD_NUMBER: _ClassVar[int]
    jid: JournalIdProto
    name_service_id: str
    def __init__(self, jid: _Optional[_Union[JournalIdProto, _Mapping]] = ..., name_service_id: _Optional[str] = ...) -> None: ...

class GetJournalStateResponseProto(_message.Message):
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

class FormatRequestProto(_message.Message):
    __slots__ = ("jid", "ns_info", "name_service_id", "force", "members")
    JID_FIELD_NUMBER: _ClassVar[int]
    NS_INFO_FIELD_NUMBER: _ClassVar[int]
    NAME_SERVICE_ID_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    jid: JournalIdProto
    ns_info: NamespaceInfoProto
    name_service_id: str
    force: bool
    members: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, jid: _Optional[_Union[JournalIdProto, _Mapping]] = ..., ns_info: _Optional[_Union[NamespaceInfoProto, _Mapping]] = ..., name_service_id: _Optional[str] = ..., force: _Optional[bool] = ..., members: _Optional[_Iterable[str]] = ...) -> None: ...

class FormatResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class NewEpochRequestProto(_message.Message):
    __slots__ = ("jid", "ns_info", "epoch", "name_service_id", "members")
    JID_FIELD_NUMBER: _ClassVar[int]
    NS_INFO_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    NAME_SERVICE_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    jid: JournalIdProto
    ns_info: NamespaceInfoProto
    epoch: int
    name_service_id: str
    members: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, jid: _Optional[_Union[JournalIdProto, _Mapping]] = ..., ns_info: _Optional[_Union[NamespaceInfoProto, _Mapping]] = ..., epoch: _Optional[int] = ..., name_service_id: _Optional[str] = ..., members: _Optional[_Iterable[str]] = ...) -> None: ...

class NewEpochResponseProto(_message.Message):
    __slots__ = ("last_segment_txid", "restored", "writer_idle_ms")
    LAST_SEGMENT_TXID_FIELD_NUMBER: _ClassVar[int]
    RESTORED_FIELD_NUMBER: _ClassVar[int]
    WRITER_IDLE_MS_FIELD_NUMBER: _ClassVar[int]
    last_segment_txid: int
    restored: bool
    writer_idle_ms: int
    def __init__(self, last_segment_txid: _Optional[int] = ..., restored: _Optional[bool] = ..., writer_idle_ms: _Optional[int] = ...) -> None: ...

class GetEditLogManifestRequestProto(_message.Message):
    __slots__ = ("jid", "since_txid", "in_progress_ok", "name_service_id")
    JID_FIELD_NUMBER: _ClassVar[int]
    SINCE_TXID_FIELD_NUMBER: _ClassVar[int]
    IN_PROGRESS_OK_FIELD_NUMBER: _ClassVar[int]
    NAME_SERVICE_ID_FIELD_NUMBER: _ClassVar[int]
    jid: JournalIdProto
    since_txid: int
    in_progress_ok: bool
    name_service_id: str
    def __init__(self, jid: _Optional[_Union[JournalIdProto, _Mapping]] = ..., since_txid: _Optional[int] = ..., in_progress_ok: _Optional[bool] = ..., name_service_id: _Optional[str] = ...) -> None: ...

class GetEditLogManifestResponseProto(_message.Message):
    __slots__ = ("manifest", "http_port", "from_url", "last_writer_epoch", "last_promised_epoch", "restored")
    MANIFEST_FIELD_NUMBER: _ClassVar[int]
    HTTP_PORT_FIELD_NUMBER: _ClassVar[int]
    FROM_URL_FIELD_NUMBER: _ClassVar[int]
    LAST_WRITER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LAST_PROMISED_EPOCH_FIELD_NUMBER: _ClassVar[int]
    RESTORED_FIELD_NUMBER: _ClassVar[int]
    manifest: RemoteEditLogManifestProto
    http_port: int
    from_url: str
    last_writer_epoch: int
    last_promised_epoch: int
    restored: bool
    def __init__(self, manifest: _Optional[_Union[RemoteEditLogManifestProto, _Mapping]] = ..., http_port: _Optional[int] = ..., from_url: _Optional[str] = ..., last_writer_epoch: _Optional[int] = ..., last_promised_epoch: _Optional[int] = ..., restored: _Optional[bool] = ...) -> None: ...

class GetJournaledEditsRequestProto(_message.Message):
    __slots__ = ("jid", "since_txid", "max_txns", "name_service_id", "wait_ms")
    JID_FIELD_NUMBER: _ClassVar[int]
    SINCE_TXID_FIELD_NUMBER: _ClassVar[int]
    MAX_TXNS_FIELD_NUMBER: _ClassVar[int]
    NAME_SERVICE_ID_FIELD_NUMBER: _ClassVar[int]
    WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    jid: JournalIdProto
    since_txid: int
    max_txns: int
    name_service_id: str
    wait_ms: int
    def __init__(self, jid: _Optional[_Union[JournalIdProto, _Mapping]] = ..., since_txid: _Optional[int] = ..., max_txns: _Optional[int] = ..., name_service_id: _Optional[str] = ..., wait_ms: _Optional[int] = ...) -> None: ...

class GetJournaledEditsResponseProto(_message.Message):
    __slots__ = ("txn_count", "edit_log", "committed_txid", "highest_written_txid", "last_writer_epoch", "last_promised_epoch", "restored")
    TXN_COUNT_FIELD_NUMBER: _ClassVar[int]
    EDIT_LOG_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_TXID_FIELD_NUMBER: _ClassVar[int]
    HIGHEST_WRITTEN_TXID_FIELD_NUMBER: _ClassVar[int]
    LAST_WRITER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LAST_PROMISED_EPOCH_FIELD_NUMBER: _ClassVar[int]
    RESTORED_FIELD_NUMBER: _ClassVar[int]
    txn_count: int
    edit_log: bytes
    committed_txid: int
    highest_written_txid: int
    last_writer_epoch: int
    last_promised_epoch: int
    restored: bool
    def __init__(self, txn_count: _Optional[int] = ..., edit_log: _Optional[bytes] = ..., committed_txid: _Optional[int] = ..., highest_written_txid: _Optional[int] = ..., last_writer_epoch: _Optional[int] = ..., last_promised_epoch: _Optional[int] = ..., restored: _Optional[bool] = ...) -> None: ...

class PrepareRecoveryRequestProto(_message.Message):
    __slots__ = ("req", "segment_txid")
    REQ_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_TXID_FIELD_NUMBER: _ClassVar[int]
    req: RequestInfoProto
    segment_txid: int
    def __init__(self, req: _Optional[_Union[RequestInfoProto, _Mapping]] = ..., segment_txid: _Optional[int] = ...) -> None: ...

class PrepareRecoveryResponseProto(_message.Message):
    __slots__ = ("segment_state", "accepted_in_epoch", "last_writer_epoch", "last_committed_txid")
    SEGMENT_STATE_FIELD_NUMBER: _ClassVar[int]
    ACCEPTED_IN_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LAST_WRITER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LAST_COMMITTED_TXID_FIELD_NUMBER: _ClassVar[int]
    segment_state: SegmentStateProto
    accepted_in_epoch: int
    last_writer_epoch: int
    last_committed_txid: int
    def __init__(self, segment_state: _Optional[_Union[SegmentStateProto, _Mapping]] = ..., accepted_in_epoch: _Optional[int] = ..., last_writer_epoch: _Optional[int] = ..., last_committed_txid: _Optional[int] = ...) -> None: ...

class AcceptRecoveryRequestProto(_message.Message):
    __slots__ = ("req", "state_to_accept", "from_url")
    REQ_FIELD_NUMBER: _ClassVar[int]
    STATE_TO_ACCEPT_FIELD_NUMBER: _ClassVar[int]
    FROM_URL_FIELD_NUMBER: _ClassVar[int]
    req: RequestInfoProto
    state_to_accept: SegmentStateProto
    from_url: str
    def __init__(self, req: _Optional[_Union[RequestInfoProto, _Mapping]] = ..., state_to_accept: _Optional[_Union[SegmentStateProto, _Mapping]] = ..., from_url: _Optional[str] = ...) -> None: ...

class AcceptRecoveryResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ChangeMembersRequestProto(_message.Message):
    __slots__ = ("jid", "ns_info", "old_members", "new_members", "joining", "promised_epoch")
    JID_FIELD_NUMBER: _ClassVar[int]
    NS_INFO_FIELD_NUMBER: _ClassVar[int]
    OLD_MEMBERS_FIELD_NUMBER: _ClassVar[int]
    NEW_MEMBERS_FIELD_NUMBER: _ClassVar[int]
    JOINING_FIELD_NUMBER: _ClassVar[int]
    PROMISED_EPOCH_FIELD_NUMBER: _ClassVar[int]
    jid: JournalIdProto
    ns_info: NamespaceInfoProto
    old_members: _containers.RepeatedScalarFieldContainer[str]
    new_members: _containers.RepeatedScalarFieldContainer[str]
    joining: bool
    promised_epoch: int
    def __init__(self, jid: _Optional[_Union[JournalIdProto, _Mapping]] = ..., ns_info: _Optional[_Union[NamespaceInfoProto, _Mapping]] = ..., old_members: _Optional[_Iterable[str]] = ..., new_members: _Optional[_Iterable[str]] = ..., joining: _Optional[bool] = ..., promised_epoch: _Optional[int] = ...) -> None: ...

class ChangeMembersResponseProto(_message.Message):
    __slots__ = ("change_epoch", "already_changed")
    CHANGE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    ALREADY_CHANGED_FIELD_NUMBER: _ClassVar[int]
    change_epoch: int
    already_changed: bool
    def __init__(self, change_epoch: _Optional[int] = ..., already_changed: _Optional[bool] = ...) -> None: ...

class GetJournalStatusRequestProto(_message.Message):
    __slots__ = ("jid",)
    JID_FIELD_NUMBER: _ClassVar[int]
    jid: JournalIdProto
    def __init__(self, jid: _Optional[_Union[JournalIdProto, _Mapping]] = ...) -> None: ...

class JournalStatusProto(_message.Message):
    __slots__ = ("jid", "is_formatted", "ns_info", "last_promised_epoch", "last_writer_epoch", "committed_txid", "highest_written_txid", "current_segment_txid", "segments", "members", "problems", "restored", "member_change_epoch", "members_before_change")
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
    RESTORED_FIELD_NUMBER: _ClassVar[int]
    MEMBER_CHANGE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_BEFORE_CHANGE_FIELD_NUMBER: _ClassVar[int]
    jid: str
    is_formatted: bool
    ns_info: NamespaceInfoProto
    last_promised_epoch: int
    last_writer_epoch: int
    committed_txid: int
    highest_written_txid: int
    current_segment_txid: int
    segments: _containers.RepeatedCompositeFieldContainer[RemoteEditLogProto]
    members: _containers.RepeatedScalarFieldContainer[str]
    problems: _containers.RepeatedScalarFieldContainer[str]
    restored: bool
    member_change_epoch: int
    members_before_change: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, jid: _Optional[str] = ..., is_formatted: _Optional[bool] = ..., ns_info: _Optional[_Union[NamespaceInfoProto, _Mapping]] = ..., last_promised_epoch: _Optional[int] = ..., last_writer_epoch: _Optional[int] = ..., committed_txid: _Optional[int] = ..., highest_written_txid: _Optional[int] = ..., current_segment_txid: _Optional[int] = ..., segments: _Optional[_Iterable[_Union[RemoteEditLogProto, _Mapping]]] = ..., members: _Optional[_Iterable[str]] = ..., problems: _Optional[_Iterable[str]] = ..., restored: _Optional[bool] = ..., member_change_epoch: _Optional[int] = ..., members_before_change: _Optional[_Iterable[str]] = ...) -> None: ...

class GetNodeStatusRequestProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class NodeStatusProto(_message.Message):
    __slots__ = ("rpc_address", "http_address", "journals", "version", "node_id", "problems")
    RPC_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    HTTP_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    JOURNALS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    PROBLEMS_FIELD_NUMBER: _ClassVar[int]
    rpc_address: str
    http_address: str
    journals: _containers.RepeatedCompositeFieldContainer[JournalStatusProto]
    version: str
    node_id: str
    problems: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, rpc_address: _Optional[str] = ..., http_address: _Optional[str] = ..., journals: _Optional[_Iterable[_Union[JournalStatusProto, _Mapping]]] = ..., version: _Optional[str] = ..., node_id: _Optional[str] = ..., problems: _Optional[_Iterable[str]] = ...) -> None: ...
