"""DatanodeProtocol's handlers on the NameNode: requests as plain values to block management.

Each handler checks the caller (design §B.11), decodes the request into the plain values of
qjm.hdfs.datanode_protocol, and calls a BlockManagement; a heartbeat's answer carries this
NameNode's HA status (state and newest applied or written txid) so each DataNode can tell
which NameNode to obey (design §B.12). The server registers these under DATANODE_PROTOCOL.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any, Protocol

from google.protobuf.message import Message

from qjm.hdfs import datanode_protocol as wire
from qjm.hdfs.block_report import DEFAULT_MAX_BLOCKS
from qjm.hdfs.datanode_protocol import (
    DATANODE_METHODS,
    BadBlock,
    BlockReportContext,
    BlockSynchronization,
    DatanodeCommand,
    DatanodeProtocolError,
    DatanodeRegistration,
    ErrorCode,
    HAState,
    HAStatus,
    HeartbeatAnswer,
    HeartbeatFacts,
    IncorrectVersionError,
    NamespaceInfo,
    StorageBlockReport,
    StorageReceivedDeleted,
    UnregisteredNodeError,
)
from qjm.hdfs.proto import DatanodeProtocol_pb2 as dnp
from qjm.hdfs.proto import HdfsServer_pb2 as srv
from qjm.ipc.server import CallContext, Method
from qjm.namenode.errors import AccessControlError
from qjm.namenode.types import HAState as NameNodeHAState

log = logging.getLogger(__name__)

Handler = Callable[[Any, CallContext], Awaitable[Message]]


class BlockManagement(Protocol):
    """What DatanodeProtocol needs of the NameNode's block and DataNode management."""

    def namespace_info(self) -> NamespaceInfo:
        """This NameNode's namespace and block pool (versionRequest's answer)."""
        ...

    async def register_datanode(self, registration: DatanodeRegistration) -> DatanodeRegistration:
        """Register (or re-register) a DataNode; the registration as taken."""
        ...

    async def handle_heartbeat(
        self, registration: DatanodeRegistration, facts: HeartbeatFacts
    ) -> Sequence[DatanodeCommand]:
        """Record a heartbeat; the commands for the DataNode ([RegisterCommand] if unknown).

        A standby returns no block commands (design §B.12).
        """
        ...

    async def process_report(
        self,
        registration: DatanodeRegistration,
        pool_id: str,
        reports: Sequence[StorageBlockReport],
        context: BlockReportContext | None,
    ) -> DatanodeCommand | None:
        """Take a full block report (or one RPC of a split one); a command, if any.

        Raises UnregisteredNodeError for a DataNode it does not know.
        """
        ...

    async def process_incremental(
        self,
        registration: DatanodeRegistration,
        pool_id: str,
        changes: Sequence[StorageReceivedDeleted],
    ) -> None:
        """Take an incremental report (replicas received, being received, deleted)."""
        ...

    async def error_report(
        self, registration: DatanodeRegistration, code: int, message: str
    ) -> None:
        """Take a DataNode's error report (a failed disk: its replicas may be gone)."""
        ...

    async def report_bad_blocks(self, bad: Sequence[BadBlock]) -> None:
        """Mark replicas corrupt."""
        ...

    async def commit_block_synchronization(self, sync: BlockSynchronization) -> None:
        """Commit a block recovery (logged as the namespace's ops)."""
        ...


class HAStatusSource(Protocol):
    """This NameNode's HA state and txid as DataNodes are told it (design §B.12)."""

    def ha_status(self, ctx: CallContext) -> HAStatus:
        """ACTIVE only while this NameNode is active, with a txid a majority of JournalNodes
        holds; an implementation that answers ACTIVE sets ctx.answer_check to its lease
        check (design §N.1), so a lapsed active never sends the claim."""
        ...


class NameNodeHAView(Protocol):
    """What ServiceHAStatus reads of a NameNode."""

    @property
    def ha_state(self) -> NameNodeHAState:
        """The current HA state."""
        ...

    def last_txid(self) -> int:
        """The newest txid applied here."""
        ...

    def synced_txid(self) -> int | None:
        """The newest txid a majority of JournalNodes holds (None unless writing)."""
        ...


class ServiceHAStatus:
    """HAStatusSource of a NameNode: ACTIVE at its synced txid, else STANDBY at its applied one.

    HDFS sends the newest txid written, which may hold edits no majority took; the synced
    txid is what makes a deposed active's claim lower than its successor's (design §B.12).
    A standby applies committed edits only, so its applied txid is committed too.
    """

    def __init__(self, nn: NameNodeHAView) -> None:
        self.nn = nn

    def ha_status(self, ctx: CallContext) -> HAStatus:
        """ACTIVE (with the synced txid) or STANDBY (with the applied txid)."""
        synced = self.nn.synced_txid()
        if self.nn.ha_state == NameNodeHAState.ACTIVE and synced is not None:
            return HAStatus(HAState.ACTIVE, synced)
        return HAStatus(HAState.STANDBY, self.nn.last_txid())


def peer_host(ctx: CallContext) -> str:
    """The caller's address without the port."""
    host, sep, _ = ctx.peer.rpartition(":")
    return host.strip("[]") if sep else ctx.peer


def datanode_methods(
    blocks: BlockManagement,
    ha: HAStatusSource,
    *,
    allowed_users: frozenset[str] | None = None,
    max_blocks: int = DEFAULT_MAX_BLOCKS,
) -> dict[str, Method]:
    """Every DatanodeProtocol method, for IpcServer.register(DATANODE_PROTOCOL, ...).

    allowed_users: the only IPC users that may call (HDFS's security.datanode.protocol.acl;
    None lets any user in). Without Kerberos the user is what the caller claims, so the
    registration's address is checked against the connection too (design §B.11).
    """

    def check_caller(ctx: CallContext) -> None:
        if allowed_users is not None and ctx.user not in allowed_users:
            raise AccessControlError(
                f"User {ctx.user} (at {peer_host(ctx)}) is not authorized for protocol "
                f"DatanodeProtocol: only DataNodes ({', '.join(sorted(allowed_users))}) may call it"
            )

    def check_namespace(reg: DatanodeRegistration, what: str) -> None:
        ns = blocks.namespace_info()
        ours = (ns.storage.namespace_id, ns.storage.cluster_id)
        theirs = (reg.storage.namespace_id, reg.storage.cluster_id)
        if theirs != ours:
            raise IncorrectVersionError(
                f"{what} from DataNode {reg.datanode.datanode_uuid} at {reg.datanode.ip_addr}: "
                f"it belongs to namespace {theirs[0]} of cluster {theirs[1]}, this NameNode "
                f"serves namespace {ours[0]} of cluster {ours[1]}"
            )

    def registered(p: dnp.DatanodeRegistrationProto, ctx: CallContext) -> DatanodeRegistration:
        """The caller's registration, checked: its namespace, and that it comes from its address."""
        check_caller(ctx)
        reg = wire.registration_from_proto(p)
        check_namespace(reg, ctx.method)
        host = peer_host(ctx)
        if reg.datanode.ip_addr != host:
            raise UnregisteredNodeError(
                f"{ctx.method} names DataNode {reg.datanode.datanode_uuid} at "
                f"{reg.datanode.ip_addr}, but the call comes from {host}: register first"
            )
        return reg

    def check_pool(pool_id: str, reg: DatanodeRegistration, what: str) -> None:
        ours = blocks.namespace_info().block_pool_id
        if pool_id != ours:
            raise DatanodeProtocolError(
                f"{what} from DataNode {reg.datanode.datanode_uuid} names block pool "
                f"{pool_id}; this NameNode serves {ours}"
            )

    async def version_request(
        req: srv.VersionRequestProto, ctx: CallContext
    ) -> srv.VersionResponseProto:
        check_caller(ctx)
        ns = blocks.namespace_info()
        return srv.VersionResponseProto(
            info=wire.namespace_info_to_proto(ns, ha.ha_status(ctx).state)
        )

    async def register_datanode(
        req: dnp.RegisterDatanodeRequestProto, ctx: CallContext
    ) -> dnp.RegisterDatanodeResponseProto:
        check_caller(ctx)
        reg = wire.registration_from_proto(req.registration)
        check_namespace(reg, "registerDatanode")
        if not reg.datanode.datanode_uuid:
            raise DatanodeProtocolError(
                f"registerDatanode from {peer_host(ctx)}: the DataNode has no uuid"
            )
        # HDFS's DatanodeManager.registerDatanode: the address is the one the call came from
        reg = replace(reg, datanode=replace(reg.datanode, ip_addr=peer_host(ctx)))
        taken = await blocks.register_datanode(reg)
        log.info(
            "registered DataNode %s at %s (xfer port %d)",
            taken.datanode.datanode_uuid,
            taken.datanode.ip_addr,
            taken.datanode.xfer_port,
        )
        return dnp.RegisterDatanodeResponseProto(registration=wire.registration_to_proto(taken))

    async def send_heartbeat(
        req: dnp.HeartbeatRequestProto, ctx: CallContext
    ) -> dnp.HeartbeatResponseProto:
        reg = registered(req.registration, ctx)
        commands = await blocks.handle_heartbeat(reg, wire.heartbeat_from_proto(req))
        # the HA status after the commands, as HDFS's FSNamesystem.handleHeartbeat
        answer = HeartbeatAnswer(tuple(commands), ha.ha_status(ctx))
        return wire.heartbeat_answer_to_proto(answer)

    async def block_report(
        req: dnp.BlockReportRequestProto, ctx: CallContext
    ) -> dnp.BlockReportResponseProto:
        reg = registered(req.registration, ctx)
        check_pool(req.blockPoolId, reg, "blockReport")
        reports = [wire.storage_block_report_from_proto(r, max_blocks) for r in req.reports]
        context = wire.context_from_proto(req.context) if req.HasField("context") else None
        command = await blocks.process_report(reg, req.blockPoolId, reports, context)
        response = dnp.BlockReportResponseProto()
        if command is not None:
            response.cmd.CopyFrom(wire.command_to_proto(command))
        return response

    async def received_and_deleted(
        req: dnp.BlockReceivedAndDeletedRequestProto, ctx: CallContext
    ) -> dnp.BlockReceivedAndDeletedResponseProto:
        reg = registered(req.registration, ctx)
        check_pool(req.blockPoolId, reg, "blockReceivedAndDeleted")
        changes = [wire.received_deleted_from_proto(s) for s in req.blocks]
        await blocks.process_incremental(reg, req.blockPoolId, changes)
        return dnp.BlockReceivedAndDeletedResponseProto()

    async def error_report(
        req: dnp.ErrorReportRequestProto, ctx: CallContext
    ) -> dnp.ErrorReportResponseProto:
        reg = registered(req.registartion, ctx)
        try:
            name = ErrorCode(req.errorCode).name
        except ValueError:
            name = f"code {req.errorCode}"
        log.warning(
            "error report from DataNode %s at %s: %s: %s",
            reg.datanode.datanode_uuid,
            reg.datanode.ip_addr,
            name,
            req.msg,
        )
        await blocks.error_report(reg, req.errorCode, req.msg)
        return dnp.ErrorReportResponseProto()

    async def report_bad_blocks(
        req: dnp.ReportBadBlocksRequestProto, ctx: CallContext
    ) -> dnp.ReportBadBlocksResponseProto:
        check_caller(ctx)
        await blocks.report_bad_blocks([wire.bad_block_from_proto(b) for b in req.blocks])
        return dnp.ReportBadBlocksResponseProto()

    async def commit_block_synchronization(
        req: dnp.CommitBlockSynchronizationRequestProto, ctx: CallContext
    ) -> dnp.CommitBlockSynchronizationResponseProto:
        check_caller(ctx)
        await blocks.commit_block_synchronization(wire.block_sync_from_proto(req))
        return dnp.CommitBlockSynchronizationResponseProto()

    handlers: dict[str, Handler] = {
        "versionRequest": version_request,
        "registerDatanode": register_datanode,
        "sendHeartbeat": send_heartbeat,
        "blockReport": block_report,
        "blockReceivedAndDeleted": received_and_deleted,
        "errorReport": error_report,
        "reportBadBlocks": report_bad_blocks,
        "commitBlockSynchronization": commit_block_synchronization,
    }
    return {name: Method(spec.request, handlers[name]) for name, spec in DATANODE_METHODS.items()}
