"""The QJournal gRPC service: decodes requests, runs them on the journal, maps errors."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import grpc

from qjm.errors import QjmError
from qjm.journalnode.journal import Journal
from qjm.journalnode.storage import NsInfo
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol import qjournal_pb2_grpc as pb_grpc
from qjm.protocol.errors import (
    ERROR_METADATA_KEY,
    InvalidRequestError,
    JournalError,
    JournalNotFormattedError,
    StorageError,
)

if TYPE_CHECKING:
    from qjm.journalnode.node import InflightBytes, JournalNode

log = logging.getLogger("qjm.journalnode.rpc")
MAX_LONG_POLL_MS = 30_000
T = TypeVar("T")

_STATUS = {
    InvalidRequestError: grpc.StatusCode.INVALID_ARGUMENT,
    JournalNotFormattedError: grpc.StatusCode.FAILED_PRECONDITION,
    StorageError: grpc.StatusCode.INTERNAL,
}


async def _guard(context: grpc.aio.ServicerContext, call: Awaitable[T]) -> T:
    """Await a journal call; turn our errors into a gRPC status naming the rule."""
    try:
        return await call
    except JournalError as e:
        code = _STATUS.get(type(e), grpc.StatusCode.FAILED_PRECONDITION)
        await context.abort(code, str(e), trailing_metadata=((ERROR_METADATA_KEY, e.code),))
    except QjmError as e:
        await context.abort(
            grpc.StatusCode.FAILED_PRECONDITION,
            str(e),
            trailing_metadata=((ERROR_METADATA_KEY, JournalError.code),),
        )
    except Exception as e:
        log.exception("internal error serving a request")
        await context.abort(
            grpc.StatusCode.INTERNAL,
            f"internal error in JournalNode: {type(e).__name__}: {e}",
            trailing_metadata=((ERROR_METADATA_KEY, StorageError.code),),
        )
    raise AssertionError("unreachable")  # context.abort always raises


class JournalNodeService(pb_grpc.QJournalServiceServicer):
    """Serves every QJournal RPC of one JournalNode."""

    def __init__(self, node: JournalNode) -> None:
        self.node = node

    async def _on(
        self,
        context: grpc.aio.ServicerContext,
        jid: str,
        fn: Callable[[Journal], T],
        create: bool = False,
    ) -> T:
        return await _guard(context, self.node.run(jid, fn, create=create))

    async def IsFormatted(self, request: pb.JournalIdRequest, context: Any) -> Any:
        """Whether the journal has formatted storage here."""

        async def call() -> pb.IsFormattedResponse:
            return pb.IsFormattedResponse(is_formatted=await self.node.is_formatted(request.jid))

        return await _guard(context, call())

    async def Format(self, request: pb.FormatRequest, context: Any) -> Any:
        """Format the journal's storage for a namespace."""

        async def call() -> pb.Empty:
            ns = NsInfo.from_proto(request.ns_info)
            members = list(request.members)
            await self.node.run(
                request.jid, lambda j: j.format(ns, request.force, members), create=True
            )
            return pb.Empty()

        return await _guard(context, call())

    async def GetJournalState(self, request: pb.JournalIdRequest, context: Any) -> Any:
        """The last promised and writer epochs, this node's id and where to fetch segments."""
        epoch, writer = await self._on(
            context, request.jid, lambda j: (j.get_journal_state(), j.last_writer_epoch)
        )
        return pb.GetJournalStateResponse(
            last_promised_epoch=epoch,
            http_port=self.node.http_port,
            from_url=self.node.http_url(),
            node_id=self.node.node_id,
            last_writer_epoch=writer,
        )

    async def NewEpoch(self, request: pb.NewEpochRequest, context: Any) -> Any:
        """Promise an epoch."""

        async def call() -> pb.NewEpochResponse:
            ns = NsInfo.from_proto(request.ns_info)
            members = list(request.members)
            last = await self.node.run(
                request.jid, lambda j: j.new_epoch(ns, request.epoch, members)
            )
            resp = pb.NewEpochResponse()
            if last is not None:
                resp.last_segment_txid = last
            return resp

        return await _guard(context, call())

    async def StartLogSegment(self, request: pb.StartLogSegmentRequest, context: Any) -> Any:
        """Open a new segment."""
        await self._on(
            context,
            request.req.jid,
            lambda j: j.start_log_segment(request.req, request.txid, request.layout_version),
        )
        return pb.Empty()

    async def Journal(self, request: pb.JournalRequest, context: Any) -> Any:
        """Append and sync a batch."""
        await self._on(
            context,
            request.req.jid,
            lambda j: j.journal(
                request.req,
                request.segment_txid,
                request.first_txid,
                request.num_txns,
                request.records,
            ),
        )
        return pb.Empty()

    async def Heartbeat(self, request: pb.HeartbeatRequest, context: Any) -> Any:
        """Check epoch and serial; record the committed txid."""
        await self._on(context, request.req.jid, lambda j: j.heartbeat(request.req))
        return pb.Empty()

    async def FinalizeLogSegment(self, request: pb.FinalizeLogSegmentRequest, context: Any) -> Any:
        """Finalize a segment."""
        await self._on(
            context,
            request.req.jid,
            lambda j: j.finalize_log_segment(request.req, request.start_txid, request.end_txid),
        )
        return pb.Empty()

    async def PurgeLogs(self, request: pb.PurgeLogsRequest, context: Any) -> Any:
        """Delete segments below a txid."""
        await self._on(
            context,
            request.req.jid,
            lambda j: j.purge_logs_older_than(request.req, request.min_txid_to_keep),
        )
        return pb.Empty()

    async def GetEditLogManifest(self, request: pb.GetEditLogManifestRequest, context: Any) -> Any:
        """The segments at or after a txid, and the committed txid."""

        def manifest(j: Journal) -> pb.GetEditLogManifestResponse:
            resp = pb.GetEditLogManifestResponse(
                http_port=self.node.http_port,
                from_url=self.node.http_url(),
                last_writer_epoch=j.last_writer_epoch,
                last_promised_epoch=j.last_promised_epoch,
            )
            for seg in j.get_edit_log_manifest(request.since_txid, request.in_progress_ok):
                resp.logs.add(
                    start_txid=seg.start_txid,
                    end_txid=seg.end_txid,
                    is_in_progress=seg.is_in_progress,
                )
            if j.committed_txid is not None:
                resp.committed_txid = j.committed_txid
            return resp

        return await self._on(context, request.jid, manifest)

    async def PrepareRecovery(self, request: pb.PrepareRecoveryRequest, context: Any) -> Any:
        """Paxos phase 1 for a segment."""
        return await self._on(
            context,
            request.req.jid,
            lambda j: j.prepare_recovery(request.req, request.segment_txid),
        )

    async def AcceptRecovery(self, request: pb.AcceptRecoveryRequest, context: Any) -> Any:
        """Paxos phase 2 for a segment."""
        await _guard(
            context,
            self.node.accept_recovery(
                request.req.jid, request.req, request.state_to_accept, request.from_url
            ),
        )
        return pb.Empty()

    async def GetJournaledEdits(self, request: pb.GetJournaledEditsRequest, context: Any) -> Any:
        """Recent edits from the node's memory cache, without queueing behind writes."""

        async def call() -> pb.GetJournaledEditsResponse:
            journal = await self.node.journal(request.jid)
            if not journal.cache.enabled:
                raise JournalError(
                    "the journaled-edits cache is disabled on this JournalNode "
                    "(journalnode.edit_cache_size_bytes = 0); read segments over HTTP"
                )
            wait_s = min(max(request.wait_ms, 0), MAX_LONG_POLL_MS) / 1000
            deadline = time.monotonic() + wait_s
            progress = self.node.progress[request.jid]
            while True:
                woken = progress.current()
                resp, visible = journal.poll_journaled_edits(request.since_txid, request.max_txns)
                left = deadline - time.monotonic()
                if visible or left <= 0:
                    return resp
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(woken.wait(), left)

        return await _guard(context, call())

    async def GetJournalStatus(self, request: pb.JournalIdRequest, context: Any) -> Any:
        """One journal's status."""
        return await _guard(context, self.node.journal_status(request.jid))

    async def GetNodeStatus(self, request: pb.GetNodeStatusRequest, context: Any) -> Any:
        """The node's status with every journal."""
        return await _guard(context, self.node.node_status())


class _Malformed:
    """Stands in for a request whose bytes did not parse."""

    def __init__(self, type_name: str, error: Exception) -> None:
        self.message = f"malformed {type_name}: {error}"


def _lenient_parser(cls: Any) -> Callable[[bytes], Any]:
    def parse(data: bytes) -> Any:
        try:
            return cls.FromString(data)
        except Exception as e:  # protobuf raises DecodeError and others
            return _Malformed(cls.DESCRIPTOR.name, e)

    return parse


def _checked(
    method: Callable[[Any, Any], Awaitable[Any]], inflight: InflightBytes | None = None
) -> Callable[[Any, Any], Awaitable[Any]]:
    async def handler(request: Any, context: grpc.aio.ServicerContext) -> Any:
        if isinstance(request, _Malformed):
            log.warning("refused a request: %s", request.message)
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                request.message,
                trailing_metadata=((ERROR_METADATA_KEY, InvalidRequestError.code),),
            )
        if inflight is None:
            return await method(request, context)
        try:
            held = inflight.take(request.ByteSize())
        except JournalError as e:
            await context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                str(e),
                trailing_metadata=((ERROR_METADATA_KEY, JournalError.code),),
            )
        try:
            return await method(request, context)
        finally:
            inflight.release(held)

    return handler


def register_service(service: JournalNodeService, server: grpc.aio.Server) -> None:
    """Add the QJournal service to a server; unparseable requests get INVALID_ARGUMENT."""
    descriptor = pb.DESCRIPTOR.services_by_name["QJournalService"]
    handlers = {
        m.name: grpc.unary_unary_rpc_method_handler(
            _checked(getattr(service, m.name), service.node.inflight),
            request_deserializer=_lenient_parser(getattr(pb, m.input_type.name)),
            response_serializer=lambda msg: msg.SerializeToString(),
        )
        for m in descriptor.methods
    }
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(descriptor.full_name, handlers),)
    )
