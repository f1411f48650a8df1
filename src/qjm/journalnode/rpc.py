"""The JournalNode's Hadoop IPC handlers: decode a request, run it on the journal, answer.

QJournalProtocol, InterQJournalProtocol and qjm's status protocol, registered on an
IpcServer (qjm.ipc). Errors leave as IPC ERROR responses naming the Java exception class of
our error (`java_class`); an unexpected exception is logged with its traceback and leaves
as a java.io.IOException naming it.

Ordering: the IPC server starts the handlers of one connection in the order their calls
arrived; every handler here reaches `JournalNode.run` (which puts its work on the journal's
single thread) before its first suspension, so a pipelining writer's calls apply in the
order it sent them. The journal's txid and IPC-serial checks refuse any other order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from qjm.editlog.errors import SegmentCorruptError, SegmentIOError, SegmentRangeError
from qjm.errors import QjmError
from qjm.ipc import CallContext, IpcServer, Method, MethodSpec
from qjm.journalnode.journal import Journal, remote_edit_log
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import (
    CorruptSegmentError,
    DownloadRangeError,
    InvalidRequestError,
    JournalError,
    StorageError,
)
from qjm.protocol.namespace import NamespaceInfo
from qjm.protocol.qjournal import (
    INTER_QJOURNAL_METHODS,
    INTER_QJOURNAL_PROTOCOL,
    QJOURNAL_METHODS,
    QJOURNAL_PROTOCOL,
    STATUS_METHODS,
    STATUS_PROTOCOL,
)

if TYPE_CHECKING:
    from qjm.journalnode.node import JournalNode

log = logging.getLogger("qjm.journalnode.rpc")
MAX_LONG_POLL_MS = 30_000

Serve = Callable[[Any], Awaitable[Message]]
# The segment files' errors (qjm.editlog) as the wire errors a client is sent; the most
# specific class first.
_WIRE_ERRORS: tuple[tuple[type[QjmError], type[JournalError]], ...] = (
    (SegmentCorruptError, CorruptSegmentError),
    (SegmentIOError, StorageError),
    (SegmentRangeError, DownloadRangeError),
)


def to_wire_error(e: QjmError) -> JournalError:
    """The JournalError a client is sent for an expected failure, keeping its message."""
    if isinstance(e, JournalError):
        return e
    for local, wire in _WIRE_ERRORS:
        if isinstance(e, local):
            return wire(str(e))
    return JournalError(str(e))


def _check_fields(spec: MethodSpec, request: Message, ctx: CallContext) -> None:
    """Refuse a request missing a required field or holding text that is not UTF-8.

    Hadoop's Java runtime reads such text with replacement characters; it is refused here,
    naming the field and the bytes, before any of it reaches a journal (design §J.9).
    """
    what = f"{spec.request.DESCRIPTOR.name} in {spec.name} from {ctx.peer}"
    if not request.IsInitialized():
        missing = ", ".join(request.FindInitializationErrors())  # type: ignore[attr-defined]
        raise InvalidRequestError(f"malformed {what}: missing required fields: {missing}")
    found = _undecoded_text(request)
    if found is not None:
        field, raw = found
        shown = raw.decode("utf-8", errors="backslashreplace")
        raise InvalidRequestError(f"malformed {what}: field {field} is not valid UTF-8: '{shown}'")


def _undecoded_text(msg: Message, prefix: str = "") -> tuple[str, bytes] | None:
    """The first string field (as a dotted path) whose wire bytes are not UTF-8, if any.

    The protobuf runtime hands such a proto2 string over as bytes, which every str
    operation behind it (the journal id check, VERSION's text) would trip on.
    """
    for fd, value in msg.ListFields():
        path = prefix + fd.name
        values = value if fd.is_repeated else (value,)
        if fd.type == FieldDescriptor.TYPE_STRING:
            for v in values:
                if isinstance(v, bytes):
                    return path, v
        elif fd.type == FieldDescriptor.TYPE_MESSAGE:
            for sub in values:
                found = _undecoded_text(sub, path + ".")
                if found is not None:
                    return found
    return None


def _as_journal_error(e: Exception, name: str, peer: str) -> JournalError:
    """The IPC error a handler's exception leaves as: a JournalError (an unexpected
    exception is logged with its traceback and named)."""
    if isinstance(e, JournalError):
        return e
    if isinstance(e, QjmError):
        return to_wire_error(e)
    log.exception("internal error serving %s from %s", name, peer)
    return JournalError(f"internal error in JournalNode serving {name}: {type(e).__name__}: {e}")


def _checked(spec: MethodSpec, serve: Serve, node: JournalNode) -> Method:
    """The IPC method for one handler: field check, in-flight bytes, error translation."""

    async def handler(request: Message, ctx: CallContext) -> Message:
        # Everything before `serve` is synchronous: the journal work is queued in call order.
        _check_fields(spec, request, ctx)
        held = node.inflight.take(request.ByteSize())
        try:
            return await serve(request)
        except JournalError:
            raise
        except Exception as e:
            raise _as_journal_error(e, spec.name, ctx.peer) from None
        finally:
            node.inflight.release(held)

    return Method(spec.request, handler)


Work = tuple[str, Callable[[Journal], Message]]


def _started(spec: MethodSpec, work_of: Callable[[Any], Work], node: JournalNode) -> Method:
    """The IPC method for a call that is one piece of journal work, started without a task.

    The same checks and error translation as _checked; the work is queued on the journal's
    thread as the call arrives and the server answers when it is done.
    """
    name = spec.name

    def guarded(fn: Callable[[Journal], Message], peer: str) -> Callable[[Journal], Message]:
        def run(j: Journal) -> Message:
            try:
                return fn(j)
            except JournalError:
                raise
            except Exception as e:
                raise _as_journal_error(e, name, peer) from None

        return run

    def start(request: Message, ctx: CallContext) -> asyncio.Future[Message]:
        _check_fields(spec, request, ctx)
        jid, fn = work_of(request)
        held = node.inflight.take(request.ByteSize())
        try:
            fut = node.submit(jid, guarded(fn, ctx.peer))
        except BaseException:
            node.inflight.release(held)
            raise
        fut.add_done_callback(lambda _: node.inflight.release(held))
        return fut

    async def handler(request: Message, ctx: CallContext) -> Message:
        return await start(request, ctx)

    return Method(spec.request, handler, start)


def _jid(msg: pb.JournalIdProto) -> str:
    return msg.identifier


MAX_IDLE_MS = (1 << 64) - 1  # writer_idle_ms after a release: no lease to wait for


def idle_ms(idle_s: float) -> int:
    """newEpoch's writer_idle_ms for an idle time in seconds (rounded down; a release's
    infinite idle time as the largest value)."""
    if math.isinf(idle_s):
        return MAX_IDLE_MS
    return min(int(idle_s * 1000), MAX_IDLE_MS)


class JournalNodeHandlers:
    """Serves every QJournal, InterQJournal and status call of one JournalNode."""

    def __init__(self, node: JournalNode) -> None:
        self.node = node

    # -- QJournalProtocol ----------------------------------------------------------------------
    async def is_formatted(self, request: pb.IsFormattedRequestProto) -> Message:
        """Whether the journal has formatted storage here."""
        formatted = await self.node.is_formatted(_jid(request.jid))
        return pb.IsFormattedResponseProto(is_formatted=formatted)

    async def discard_segments(self, request: pb.DiscardSegmentsRequestProto) -> Message:
        """Delete the segments from a txid on (rolling-upgrade rollback), for the writer."""
        start = request.start_txid
        req = request.req if request.HasField("req") else None
        await self.node.run(_jid(request.jid), lambda j: j.discard_segments(req, start))
        return pb.DiscardSegmentsResponseProto()

    async def format(self, request: pb.FormatRequestProto) -> Message:
        """Format the journal's storage for a namespace."""
        ns = NamespaceInfo.from_proto(request.ns_info)
        members = list(request.members)
        force = request.force
        await self.node.run(_jid(request.jid), lambda j: j.format(ns, force, members), create=True)
        return pb.FormatResponseProto()

    async def get_journal_state(self, request: pb.GetJournalStateRequestProto) -> Message:
        """The last promised and writer epochs, this node's id and where to fetch segments."""
        epoch, writer = await self.node.run(
            _jid(request.jid), lambda j: (j.get_journal_state(), j.last_writer_epoch)
        )
        return pb.GetJournalStateResponseProto(
            last_promised_epoch=epoch,
            http_port=self.node.client_port(),
            from_url=self.node.http_url(),
            node_id=self.node.node_id,
            last_writer_epoch=writer,
        )

    async def new_epoch(self, request: pb.NewEpochRequestProto) -> Message:
        """Promise an epoch."""
        ns = NamespaceInfo.from_proto(request.ns_info)
        members = list(request.members)
        epoch = request.epoch
        last, restored, idle_s = await self.node.run(
            _jid(request.jid),
            lambda j: (
                j.new_epoch(ns, epoch, members),
                j.amnesiac is not None,
                j.idle_before_promise_s,
            ),
        )
        resp = pb.NewEpochResponseProto(writer_idle_ms=idle_ms(idle_s))
        if last is not None:
            resp.last_segment_txid = last
        if restored:
            resp.restored = True
        return resp

    async def start_log_segment(self, request: pb.StartLogSegmentRequestProto) -> Message:
        """Open a new segment."""
        req, txid, layout = request.req, request.txid, request.layout_version
        await self.node.run(_jid(req.journal_id), lambda j: j.start_log_segment(req, txid, layout))
        return pb.StartLogSegmentResponseProto()

    @staticmethod
    def journal(request: pb.JournalRequestProto) -> Work:
        """Append and sync a batch."""
        r = request

        def work(j: Journal) -> Message:
            j.journal(r.req, r.segment_txid, r.first_txid, r.num_txns, r.records)
            return pb.JournalResponseProto()

        return _jid(r.req.journal_id), work

    @staticmethod
    def heartbeat(request: pb.HeartbeatRequestProto) -> Work:
        """Check epoch and serial; record the committed txid."""
        req = request.req
        release = request.release_lease

        def work(j: Journal) -> Message:
            j.heartbeat(req, release)
            return pb.HeartbeatResponseProto()

        return _jid(req.journal_id), work

    async def finalize_log_segment(self, request: pb.FinalizeLogSegmentRequestProto) -> Message:
        """Finalize a segment."""
        req, start, end = request.req, request.start_txid, request.end_txid
        await self.node.run(_jid(req.journal_id), lambda j: j.finalize_log_segment(req, start, end))
        return pb.FinalizeLogSegmentResponseProto()

    async def purge_logs(self, request: pb.PurgeLogsRequestProto) -> Message:
        """Delete segments below a txid."""
        req, keep = request.req, request.min_txid_to_keep
        await self.node.run(_jid(req.journal_id), lambda j: j.purge_logs_older_than(req, keep))
        return pb.PurgeLogsResponseProto()

    async def get_edit_log_manifest(self, request: pb.GetEditLogManifestRequestProto) -> Message:
        """The segments at or after a txid, and the committed txid."""
        since, in_progress_ok = request.since_txid, request.in_progress_ok

        def manifest(j: Journal) -> pb.GetEditLogManifestResponseProto:
            resp = pb.GetEditLogManifestResponseProto(
                http_port=self.node.client_port(),
                from_url=self.node.http_url(),
                last_writer_epoch=j.last_writer_epoch,
                last_promised_epoch=j.last_promised_epoch,
            )
            resp.manifest.SetInParent()
            for seg in j.get_edit_log_manifest(since, in_progress_ok):
                resp.manifest.logs.append(remote_edit_log(seg))
            if j.amnesiac is not None:
                resp.restored = True
            if j.committed_txid is not None:
                resp.manifest.committed_txid = j.committed_txid
            return resp

        return await self.node.run(_jid(request.jid), manifest)

    async def prepare_recovery(self, request: pb.PrepareRecoveryRequestProto) -> Message:
        """Paxos phase 1 for a segment."""
        req, seg = request.req, request.segment_txid
        return await self.node.run(_jid(req.journal_id), lambda j: j.prepare_recovery(req, seg))

    async def accept_recovery(self, request: pb.AcceptRecoveryRequestProto) -> Message:
        """Paxos phase 2 for a segment."""
        req = request.req
        await self.node.accept_recovery(
            _jid(req.journal_id), req, request.state_to_accept, request.from_url
        )
        return pb.AcceptRecoveryResponseProto()

    async def get_journaled_edits(self, request: pb.GetJournaledEditsRequestProto) -> Message:
        """Recent committed edits from the node's memory cache, without queueing behind writes."""
        jid = _jid(request.jid)
        journal = await self.node.journal(jid)
        if not journal.cache.enabled:
            raise JournalError(
                "the journaled-edits cache is disabled on this JournalNode "
                "(journalnode.edit_cache_size_bytes = 0); read segments over HTTP"
            )
        wait_s = min(request.wait_ms, MAX_LONG_POLL_MS) / 1000
        deadline = time.monotonic() + wait_s
        progress = self.node.progress[jid]
        while True:
            woken = progress.current()
            resp, visible = journal.poll_journaled_edits(request.since_txid, request.max_txns)
            left = deadline - time.monotonic()
            if visible or left <= 0:
                return resp
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left):
                    await woken.wait()

    async def change_members(self, request: pb.ChangeMembersRequestProto) -> Message:
        """This node's part of a member change (qjm only)."""
        ns = NamespaceInfo.from_proto(request.ns_info)
        old, new = list(request.old_members), list(request.new_members)
        joining, promise = request.joining, request.promised_epoch
        return await self.node.run(
            _jid(request.jid),
            lambda j: j.change_members(ns, old, new, joining, promise),
            create=joining,  # a joining node may have no storage for the journal yet
        )

    # -- status protocol ---------------------------------------------------------------------
    async def get_journal_status(self, request: pb.GetJournalStatusRequestProto) -> Message:
        """One journal's status."""
        return await self.node.journal_status(_jid(request.jid))

    async def get_node_status(self, request: pb.GetNodeStatusRequestProto) -> Message:
        """The node's status with every journal."""
        return await self.node.node_status()

    # -- registration ------------------------------------------------------------------------
    def _table(self) -> dict[str, Serve]:
        return {
            "isFormatted": self.is_formatted,
            "discardSegments": self.discard_segments,
            "getJournalState": self.get_journal_state,
            "newEpoch": self.new_epoch,
            "format": self.format,
            "startLogSegment": self.start_log_segment,
            "finalizeLogSegment": self.finalize_log_segment,
            "purgeLogs": self.purge_logs,
            "getEditLogManifest": self.get_edit_log_manifest,
            "getJournaledEdits": self.get_journaled_edits,
            "prepareRecovery": self.prepare_recovery,
            "acceptRecovery": self.accept_recovery,
            "changeMembers": self.change_members,
            "getEditLogManifestFromJournal": self.get_edit_log_manifest,
            "getJournalStatus": self.get_journal_status,
            "getNodeStatus": self.get_node_status,
        }

    def _work_table(self) -> dict[str, Callable[[Any], Work]]:
        return {"journal": self.journal, "heartbeat": self.heartbeat}

    def methods(self, specs: Mapping[str, MethodSpec]) -> dict[str, Method]:
        """The IPC methods of one protocol's method table."""
        table = self._table()
        works = self._work_table()
        return {
            name: _started(spec, works[name], self.node)
            if name in works
            else _checked(spec, table[name], self.node)
            for name, spec in specs.items()
        }

    def register(self, server: IpcServer) -> None:
        """Register the three protocols a JournalNode serves."""
        server.register(QJOURNAL_PROTOCOL, self.methods(QJOURNAL_METHODS))
        server.register(INTER_QJOURNAL_PROTOCOL, self.methods(INTER_QJOURNAL_METHODS))
        server.register(STATUS_PROTOCOL, self.methods(STATUS_METHODS))
