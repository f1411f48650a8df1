"""One JournalNode as the writer sees it: an ordered, pipelined stream of calls.

Calls to one node go out in the order they were queued, on one ordered IPC connection,
so the node sees a writer's requests in order; the channels of different nodes run in
parallel. journal() batches and heartbeats are pipelined: the next batch is written to
the connection while the node still syncs the previous one (the node handles them in
arrival order, and its txid and IPC-serial checks refuse any reordering). Every other
call waits until the calls before it were answered, and later calls wait for it.

A journal() that fails puts the channel out of sync: later batches of the segment fail
at once (with a heartbeat to the node at most once a second, so it still learns the
committed txid), until the next start_log_segment succeeds (design §J.14).
Edits waiting for a slow node are bounded in bytes; past the bound, batches are dropped
for that node and it is out of sync until the next segment.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from qjm.client.journalnode_client import JournalNodeClient
from qjm.config import QJournalSettings, seconds
from qjm.errors import QjmError
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import EpochError, JournalNodeUnavailable, JournalOutOfSyncError
from qjm.protocol.qjournal import journal_id
from qjm.protocol.urls import get_journal_url

__all__ = [
    "ChannelClosedError",
    "ChannelMetrics",
    "HeartbeatPendingError",
    "IPCLoggerChannel",
    "JournalNodeUnavailable",
    "LoggerTooFarBehindError",
    "OutOfSyncError",
    "RpcClient",
    "RpcStats",
]

log = logging.getLogger("qjm.client.channel")
T = TypeVar("T")

HEARTBEAT_INTERVAL_S = 1.0  # HDFS's IPCLoggerChannel.HEARTBEAT_INTERVAL_MILLIS
SLOW_RPC_S = 1.0  # an RPC slower than this is logged
OPERATIONS_TIMEOUT_S = 60.0  # HDFS's dfs.qjm.operations.timeout (format, status)
MAX_PIPELINED_CALLS = 64  # journal()/heartbeat calls sent and not yet answered, per node


def _retrieve(fut: asyncio.Future[Any]) -> None:
    """Mark a future's error as seen, so a call nobody waits for does not warn."""
    if not fut.cancelled():
        fut.exception()


def request_info(
    jid: str, epoch: int, ipc_serial: int, committed_txid: int | None = None
) -> pb.RequestInfoProto:
    """The RequestInfoProto every journal-changing call carries."""
    req = pb.RequestInfoProto(journal_id=journal_id(jid), epoch=epoch, ipc_serial=ipc_serial)
    if committed_txid is not None:
        req.committed_txid = committed_txid
    return req


class RpcClient(Protocol):
    """What a channel needs of a JournalNode connection (tests wrap it to inject faults)."""

    address: str

    async def call(self, method: str, request: Any, deadline: float) -> Any:
        """Invoke an RPC by name; raise QjmError on failure."""
        ...

    async def close(self) -> None:
        """Release the connection."""
        ...


class LoggerTooFarBehindError(QjmError):
    """A node's queue of unsent edits is full; the batch was dropped for that node."""


class ChannelClosedError(QjmError):
    """The channel was closed before the call was sent or answered."""


class HeartbeatPendingError(QjmError):
    """The node has not answered the previous lease heartbeat yet; no other was sent."""


class OutOfSyncError(JournalOutOfSyncError):
    """The channel skips writes to a node that failed, until the next segment starts."""


@dataclass
class RpcStats:
    """Latency of one RPC method on one channel."""

    calls: int = 0
    failures: int = 0
    total_s: float = 0.0
    max_s: float = 0.0
    last_s: float = 0.0

    @property
    def mean_s(self) -> float:
        """Average latency in seconds."""
        return self.total_s / self.calls if self.calls else 0.0


@dataclass(frozen=True)
class ChannelMetrics:
    """A snapshot of one channel's health, like HDFS's IPCLoggerChannelMetrics."""

    address: str
    out_of_sync: bool
    lag_txns: int
    lag_ms: float
    queued_bytes: int
    highest_acked_txid: int
    rpc: dict[str, RpcStats] = field(default_factory=dict)


class IPCLoggerChannel:
    """The writer's connection to one JournalNode for one journal id."""

    def __init__(
        self,
        address: str,
        jid: str,
        settings: QJournalSettings | None = None,
        client: RpcClient | None = None,
    ) -> None:
        self.address = address
        self.jid = jid
        self.settings = settings or QJournalSettings()
        self.client: RpcClient = client if client is not None else JournalNodeClient(address)
        self.epoch = 0
        self.committed_txid: int | None = None
        self.out_of_sync = False
        self.http_url: str | None = None
        self.highest_acked_txid = 0
        self.queue_limit_bytes = self.settings.queued_edits_limit_mb * 1024 * 1024
        self.max_pipelined = MAX_PIPELINED_CALLS
        self._jid_proto = journal_id(jid)
        self._write_timeout_s = self.settings.write_txns_timeout_ms / 1000.0
        self._queued_bytes = 0
        self._ipc_serial = -1
        self._last_heartbeat: float | None = None
        self._last_commit_time = 0.0
        self._last_ack_submit_time = time.monotonic()  # lag counts from the start
        self._rpc_stats: dict[str, RpcStats] = {}
        # (pipelined, fn, future): a pipelined fn sends its call and returns what answers
        # it (without waiting); any other fn runs alone, once the calls before it answered.
        self._queue: deque[tuple[bool, Callable[[], Awaitable[Any]], asyncio.Future[Any]]] = deque()
        self._inflight: set[asyncio.Future[Any]] = set()
        self._slot_free: asyncio.Future[None] | None = None
        self._running_alone = False  # the drain task runs a non-pipelined call
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._sent_committed: int | None = None
        self._report_pending = False
        self._sync_generation = 0  # bumped whenever the channel goes out of sync
        # Out of sync, but it answered a call sent since it went out: a new segment would
        # take it back (design §N.2). on_back is told when that becomes true.
        self.answers_again = False
        self.on_back: Callable[[], None] | None = None
        self._lease_heartbeat: asyncio.Future[None] | None = None
        # What new_epoch needs, kept to rejoin a node that missed the writer's new_epoch.
        self.ns_info: pb.NamespaceInfoProto | None = None
        self.members: tuple[str, ...] = ()
        self.promised_epoch = 0  # the epoch this node promised this writer (0: none yet)

    def __str__(self) -> str:
        return self.address

    def __repr__(self) -> str:
        return f"IPCLoggerChannel({self.address}, jid={self.jid!r})"

    # -- the ordered queue ------------------------------------------------------------------
    def _submit(self, fn: Callable[[], Awaitable[T]], pipelined: bool = False) -> asyncio.Future[T]:
        loop = asyncio.get_running_loop()
        if (
            pipelined
            and not self._closed
            and not self._queue
            and not self._running_alone
            and len(self._inflight) < self.max_pipelined
        ):
            # Nothing before it waits: send it now; its task is the caller's future.
            try:
                task = asyncio.ensure_future(fn())
            except Exception as e:  # a request that could not be built
                failed: asyncio.Future[T] = loop.create_future()
                failed.set_exception(e)
                return failed
            task.add_done_callback(_retrieve)
            self._inflight.add(task)
            task.add_done_callback(self._landed)
            return task
        fut: asyncio.Future[T] = loop.create_future()
        fut.add_done_callback(_retrieve)
        if self._closed:
            fut.set_exception(ChannelClosedError(f"{self.address}: channel is closed"))
            return fut
        self._queue.append((pipelined, fn, fut))
        if self._task is None:
            self._wake = asyncio.Event()
            self._task = loop.create_task(self._drain(), name=f"qjm-channel-{self.address}")
        assert self._wake is not None
        self._wake.set()
        return fut

    def _launch(self, fn: Callable[[], Awaitable[T]], fut: asyncio.Future[T]) -> None:
        """Start a pipelined call now; its task sends it before any call started later."""
        try:
            task = asyncio.ensure_future(fn())
        except Exception as e:  # a request that could not be built
            fut.set_exception(e)
            return
        self._inflight.add(task)

        def done(t: asyncio.Future[T]) -> None:
            self._landed(t)
            if fut.done():
                if not t.cancelled():
                    t.exception()
            elif t.cancelled():
                fut.set_exception(ChannelClosedError(f"{self.address}: channel closed"))
            elif (e := t.exception()) is not None:
                fut.set_exception(e)
            else:
                fut.set_result(t.result())

        task.add_done_callback(done)

    def _landed(self, task: asyncio.Future[Any]) -> None:
        """A pipelined call was answered (or failed): free its slot."""
        self._inflight.discard(task)
        if self._slot_free is not None and not self._slot_free.done():
            self._slot_free.set_result(None)

    async def _wait_inflight(self, below: int) -> None:
        """Wait until fewer than `below` pipelined calls are unanswered."""
        while len(self._inflight) >= below:
            self._slot_free = asyncio.get_running_loop().create_future()
            await self._slot_free

    async def _drain(self) -> None:
        assert self._wake is not None
        while True:
            while not self._queue:
                self._wake.clear()
                await self._wake.wait()
            pipelined, fn, fut = self._queue[0]
            if fut.done():
                self._queue.popleft()
                continue
            if pipelined:
                await self._wait_inflight(self.max_pipelined)
                self._queue.popleft()
                if not fut.done():
                    self._launch(fn, fut)
                continue
            self._running_alone = True
            try:
                await self._wait_inflight(1)
                self._queue.popleft()
                if fut.done():
                    continue
                try:
                    result = await fn()
                except asyncio.CancelledError:
                    if not fut.done():
                        fut.set_exception(ChannelClosedError(f"{self.address}: channel closed"))
                    raise
                except Exception as e:
                    if not fut.done():
                        fut.set_exception(e)
                else:
                    if not fut.done():
                        fut.set_result(result)
            finally:
                self._running_alone = False

    async def wait_idle(self) -> None:
        """Return once every call queued so far has been answered."""

        async def nothing() -> None:
            return None

        await self._submit(nothing)

    # -- requests --------------------------------------------------------------------------
    def _req(self) -> pb.RequestInfoProto:
        """The RequestInfoProto for the next call: built as it is sent, so serials ascend."""
        self._ipc_serial += 1
        req = pb.RequestInfoProto(
            journal_id=self._jid_proto, epoch=self.epoch, ipc_serial=self._ipc_serial
        )
        if self.committed_txid is not None:
            req.committed_txid = self.committed_txid
            self._sent_committed = self.committed_txid
        return req

    async def _rpc(self, method: str, request: Any, deadline_s: float) -> Any:
        stats = self._rpc_stats.get(method)
        if stats is None:
            stats = self._rpc_stats[method] = RpcStats()
        started = time.perf_counter()
        try:
            resp = await self.client.call(method, request, deadline_s)
        except Exception:
            stats.failures += 1
            raise
        else:
            req = getattr(request, "req", None)
            if isinstance(req, pb.RequestInfoProto) and req.epoch > 0 and req.epoch == self.epoch:
                # A node takes an epoch-carrying call only at its promise: it promised ours.
                self.promised_epoch = self.epoch
            return resp
        finally:
            took = time.perf_counter() - started
            stats.calls += 1
            stats.total_s += took
            stats.last_s = took
            if took > stats.max_s:
                stats.max_s = took
            if took > SLOW_RPC_S:
                log.warning("%s: %s took %.3fs", self.address, method, took)

    def set_committed_txid(self, txid: int) -> None:
        """Piggyback this committed txid on every later request (never moves backward)."""
        if self.committed_txid is None or txid > self.committed_txid:
            self.committed_txid = txid
            self._last_commit_time = time.monotonic()

    def build_url(self, segment_txid: int) -> str:
        """The URL a peer downloads this node's copy of a segment from."""
        if not self.http_url:
            raise QjmError(f"{self.address}: HTTP address unknown (no get_journal_state answer)")
        return get_journal_url(
            self.http_url, self.jid, segment_txid, in_progress_ok=True, ns_info=self.ns_info
        )

    def _go_out_of_sync(self) -> None:
        self.out_of_sync = True
        self.answers_again = False
        self._sync_generation += 1

    def _answered(self, generation: int) -> None:
        """A call sent at sync generation `generation` succeeded: an out-of-sync node whose
        failure came before that call answers again."""
        if not self.out_of_sync or generation != self._sync_generation or self.answers_again:
            return
        self.answers_again = True
        log.info("%s: answers again while out of sync (it rejoins at the next segment)", self)
        if self.on_back is not None:
            self.on_back()

    # -- calls without an epoch ---------------------------------------------------------------
    def is_formatted(self) -> asyncio.Future[bool]:
        """Whether the node has formatted storage for the journal."""

        async def run() -> bool:
            req = pb.IsFormattedRequestProto(jid=self._jid_proto)
            resp = await self._rpc("isFormatted", req, OPERATIONS_TIMEOUT_S)
            return bool(resp.is_formatted)

        return self._submit(run)

    def format(self, ns_info: pb.NamespaceInfoProto, force: bool) -> asyncio.Future[None]:
        """Format the journal on the node."""

        async def run() -> None:
            req = pb.FormatRequestProto(
                jid=self._jid_proto, ns_info=ns_info, force=force, members=list(self.members)
            )
            await self._rpc("format", req, OPERATIONS_TIMEOUT_S)

        return self._submit(run)

    def get_journal_status(self) -> asyncio.Future[pb.JournalStatusProto]:
        """The node's full status of the journal (namespace, epochs, segments)."""

        async def run() -> pb.JournalStatusProto:
            req = pb.GetJournalStatusRequestProto(jid=self._jid_proto)
            resp: pb.JournalStatusProto = await self._rpc(
                "getJournalStatus", req, OPERATIONS_TIMEOUT_S
            )
            return resp

        return self._submit(run)

    async def _get_journal_state(self) -> pb.GetJournalStateResponseProto:
        req = pb.GetJournalStateRequestProto(jid=self._jid_proto)
        timeout = seconds(self.settings.get_journal_state_timeout_ms)
        resp: pb.GetJournalStateResponseProto = await self._rpc("getJournalState", req, timeout)
        if resp.from_url:
            self.http_url = resp.from_url.rstrip("/")
        return resp

    def get_journal_state(self) -> asyncio.Future[pb.GetJournalStateResponseProto]:
        """The node's last promised epoch; remembers its HTTP address."""
        return self._submit(self._get_journal_state)

    async def fetch_url(self, segment_txid: int) -> str:
        """build_url, asking the node for its HTTP address when no answer has told it yet."""
        if not self.http_url:
            await self.get_journal_state()
        return self.build_url(segment_txid)

    def new_epoch(
        self, ns_info: pb.NamespaceInfoProto, epoch: int
    ) -> asyncio.Future[pb.NewEpochResponseProto]:
        """Ask the node to promise an epoch (Paxos phase 1a of fencing)."""
        self.ns_info = ns_info

        async def run() -> pb.NewEpochResponseProto:
            return await self._new_epoch(ns_info, epoch)

        return self._submit(run)

    async def _new_epoch(
        self, ns_info: pb.NamespaceInfoProto, epoch: int
    ) -> pb.NewEpochResponseProto:
        req = pb.NewEpochRequestProto(
            jid=self._jid_proto, ns_info=ns_info, epoch=epoch, members=list(self.members)
        )
        resp: pb.NewEpochResponseProto = await self._rpc(
            "newEpoch", req, seconds(self.settings.new_epoch_timeout_ms)
        )
        self.promised_epoch = epoch
        return resp

    async def _rejoin_if_unpromised(self) -> None:
        """Send new_epoch to a node that missed the writer's: only new_epoch raises a promise.

        HDFS lets any request raise a node's promise; here a node must pass new_epoch's
        checks (namespace, membership, a restored node's marker) before it takes writes.
        """
        if self.epoch <= 0 or self.promised_epoch == self.epoch or self.ns_info is None:
            return
        # The reply to our new_epoch may have been lost or late while the node promised:
        # sending it again would be refused (epoch <= promise) at every segment.
        state = await self._get_journal_state()
        if state.last_promised_epoch == self.epoch:
            self.promised_epoch = self.epoch
            return
        if state.last_promised_epoch > self.epoch:
            raise EpochError(
                f"{self.address}: the node promised epoch {state.last_promised_epoch}, above "
                f"our epoch {self.epoch}: a newer writer fenced us (journal {self.jid!r})"
            )
        log.info(
            "%s: missed new_epoch(%d); sending it before the segment", self.address, self.epoch
        )
        await self._new_epoch(self.ns_info, self.epoch)

    def get_edit_log_manifest(
        self, since_txid: int, in_progress_ok: bool
    ) -> asyncio.Future[pb.GetEditLogManifestResponseProto]:
        """The node's segments from a txid (sent in order like every other call)."""

        async def run() -> pb.GetEditLogManifestResponseProto:
            req = pb.GetEditLogManifestRequestProto(
                jid=self._jid_proto, since_txid=since_txid, in_progress_ok=in_progress_ok
            )
            timeout = seconds(self.settings.select_input_streams_timeout_ms)
            resp: pb.GetEditLogManifestResponseProto = await self._rpc(
                "getEditLogManifest", req, timeout
            )
            return resp

        return self._submit(run)

    # -- calls of the writer ------------------------------------------------------------------
    def start_log_segment(self, txid: int, layout_version: int) -> asyncio.Future[None]:
        """Open a segment on the node; success brings an out-of-sync node back."""

        async def run() -> None:
            try:
                await self._rejoin_if_unpromised()
                req = pb.StartLogSegmentRequestProto(
                    req=self._req(), txid=txid, layout_version=layout_version
                )
                await self._rpc(
                    "startLogSegment", req, seconds(self.settings.start_segment_timeout_ms)
                )
            except Exception:
                self._go_out_of_sync()
                raise
            if self.out_of_sync:
                log.info("%s: back in sync at the segment starting at txid %d", self.address, txid)
                self.out_of_sync = False
                self.answers_again = False
            self._last_heartbeat = None

        return self._submit(run)

    def send_edits(
        self, segment_txid: int, first_txid: int, num_txns: int, records: bytes
    ) -> asyncio.Future[None]:
        """Queue a batch of framed ops for the node; fails at once when the queue is full.

        The batch is written to the connection as soon as the calls queued before it were
        sent, without waiting for their answers (pipelining).
        """
        size = len(records)
        last_txid = first_txid + num_txns - 1
        if self._queued_bytes + size > self.queue_limit_bytes and self._queued_bytes > 0:
            log.warning(
                "%s: %d bytes of edits already queued (limit %d); dropping txids %d-%d for "
                "this node, which is out of sync until the next segment",
                self.address,
                self._queued_bytes,
                self.queue_limit_bytes,
                first_txid,
                last_txid,
            )

            def mark() -> Awaitable[None]:
                # In call order: the batches sent before it still count when they succeed.
                self.out_of_sync = True
                self.answers_again = False
                return _nothing()

            self._submit(mark, pipelined=True)
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            fut.set_exception(
                LoggerTooFarBehindError(
                    f"{self.address}: too far behind: {self._queued_bytes} bytes of edits "
                    f"queued (limit {self.settings.queued_edits_limit_mb} MiB); dropped "
                    f"txids {first_txid}-{last_txid}"
                )
            )
            return fut
        self._queued_bytes += size
        submitted = time.monotonic()

        def send() -> Awaitable[None]:
            # Runs when the batch's turn comes: decides in call order, sends at once.
            if self.out_of_sync:
                return self._skip_out_of_sync(first_txid, last_txid, size)
            req = pb.JournalRequestProto(
                req=self._req(),
                first_txid=first_txid,
                num_txns=num_txns,
                records=records,
                segment_txid=segment_txid,
            )
            return self._journal(req, first_txid, last_txid, size, submitted)

        return self._submit(send, pipelined=True)

    async def _skip_out_of_sync(self, first_txid: int, last_txid: int, size: int) -> None:
        try:
            await self._heartbeat_if_due()
            raise OutOfSyncError(
                f"{self.address}: out of sync, journal disabled until the next segment "
                f"starts; skipped txids {first_txid}-{last_txid}"
            )
        finally:
            self._queued_bytes -= size

    async def _journal(
        self,
        req: pb.JournalRequestProto,
        first_txid: int,
        last_txid: int,
        size: int,
        submitted: float,
    ) -> None:
        generation = self._sync_generation
        try:
            try:
                await self._rpc("journal", req, self._write_timeout_s)
            except Exception as e:
                if generation == self._sync_generation:
                    log.warning(
                        "%s: failed to write txids %d-%d (%s); will write to it again from "
                        "the next segment",
                        self.address,
                        first_txid,
                        last_txid,
                        e,
                    )
                self._go_out_of_sync()
                raise
            if generation != self._sync_generation:
                # An earlier batch failed while this one was on its way: the node may hold
                # this one, but the channel keeps to "out of sync until the next segment".
                raise OutOfSyncError(
                    f"{self.address}: out of sync since an earlier batch failed; not "
                    f"counting txids {first_txid}-{last_txid}"
                )
            if last_txid > self.highest_acked_txid:
                self.highest_acked_txid = last_txid
                self._last_ack_submit_time = submitted
        finally:
            self._queued_bytes -= size

    async def _heartbeat_if_due(self) -> None:
        now = time.monotonic()
        if self._last_heartbeat is not None and now - self._last_heartbeat < HEARTBEAT_INTERVAL_S:
            return
        self._last_heartbeat = now  # not more often than the interval, even when it fails
        generation = self._sync_generation
        try:
            req = pb.HeartbeatRequestProto(req=self._req())
            await self._rpc("heartbeat", req, self._write_timeout_s)
        except QjmError as e:
            log.debug("%s: heartbeat failed: %s", self.address, e)
        else:
            self._answered(generation)

    def report_committed(self) -> None:
        """Tell the node the committed txid now if no queued call will carry it soon.

        Readers see an edit only once the writer reported it committed; when the writer
        goes idle after a batch, this heartbeat makes that batch visible at once. At most
        one such heartbeat waits in the queue, so a hanging node collects no backlog.
        """
        if (
            self._closed
            or self.out_of_sync  # it gets its rate-limited heartbeats instead
            or self._report_pending
            or self._queue
            or self.committed_txid is None
            or self.committed_txid == self._sent_committed
        ):
            return
        self._report_pending = True

        def send() -> Awaitable[None]:
            self._report_pending = False
            if self.committed_txid == self._sent_committed:
                return _nothing()
            req = pb.HeartbeatRequestProto(req=self._req())
            return self._rpc("heartbeat", req, self._write_timeout_s)

        self._submit(send, pipelined=True)

    def heartbeat(self) -> asyncio.Future[None]:
        """Send a heartbeat (epoch and committed txid, no edits)."""

        def send() -> Awaitable[None]:
            req = pb.HeartbeatRequestProto(req=self._req())
            return self._rpc("heartbeat", req, self._write_timeout_s)

        return self._submit(send, pipelined=True)

    def lease_heartbeat(self) -> asyncio.Future[None]:
        """A heartbeat that renews the writer's lease (design §N.1), also while out of sync.

        While the node has not answered the previous one, none is sent and the future fails
        at once: a node that hangs collects no backlog of heartbeats.
        """
        pending = self._lease_heartbeat
        if pending is not None and not pending.done():
            busy: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            busy.set_exception(
                HeartbeatPendingError(f"{self.address}: the previous heartbeat is unanswered")
            )
            busy.add_done_callback(_retrieve)
            return busy
        generation = self._sync_generation

        def send() -> Awaitable[None]:
            req = pb.HeartbeatRequestProto(req=self._req())
            return self._rpc("heartbeat", req, self._write_timeout_s)

        fut = self._submit(send, pipelined=True)

        def answered(f: asyncio.Future[None]) -> None:
            if not f.cancelled() and f.exception() is None:
                self._answered(generation)

        fut.add_done_callback(answered)
        self._lease_heartbeat = fut
        return fut

    def release_lease(self) -> asyncio.Future[None]:
        """Tell the node, after every call queued before, that this writer answers no client
        as active any more (design §N.1)."""

        def send() -> Awaitable[None]:
            req = pb.HeartbeatRequestProto(req=self._req(), release_lease=True)
            return self._rpc("heartbeat", req, self._write_timeout_s)

        return self._submit(send, pipelined=True)

    def finalize_log_segment(self, start_txid: int, end_txid: int) -> asyncio.Future[None]:
        """Finalize a segment on the node."""

        async def run() -> None:
            if self.out_of_sync:
                # It missed writes or refused the segment's start, so what it holds at
                # start_txid is not this segment: it may be an older writer's log of the
                # same length, which finalizing would make permanent.
                raise OutOfSyncError(
                    f"{self.address}: out of sync, not finalizing segment "
                    f"{start_txid}-{end_txid} on it"
                )
            req = pb.FinalizeLogSegmentRequestProto(
                req=self._req(), start_txid=start_txid, end_txid=end_txid
            )
            timeout = seconds(self.settings.finalize_segment_timeout_ms)
            await self._rpc("finalizeLogSegment", req, timeout)

        return self._submit(run)

    def purge_logs_older_than(self, min_txid_to_keep: int) -> asyncio.Future[None]:
        """Delete the node's segments wholly below a txid."""

        async def run() -> None:
            req = pb.PurgeLogsRequestProto(req=self._req(), min_txid_to_keep=min_txid_to_keep)
            timeout = seconds(self.settings.finalize_segment_timeout_ms)
            await self._rpc("purgeLogs", req, timeout)

        return self._submit(run)

    def discard_segments(self, start_txid: int) -> asyncio.Future[None]:
        """Delete the node's segments from a txid on (rolling-upgrade rollback)."""

        async def run() -> None:
            await self._rejoin_if_unpromised()
            req = pb.DiscardSegmentsRequestProto(
                jid=self._jid_proto, start_txid=start_txid, req=self._req()
            )
            await self._rpc("discardSegments", req, OPERATIONS_TIMEOUT_S)

        return self._submit(run)

    def prepare_recovery(
        self, segment_txid: int
    ) -> asyncio.Future[pb.PrepareRecoveryResponseProto]:
        """Paxos phase 1 of recovering a segment."""

        async def run() -> pb.PrepareRecoveryResponseProto:
            req = pb.PrepareRecoveryRequestProto(req=self._req(), segment_txid=segment_txid)
            timeout = seconds(self.settings.prepare_recovery_timeout_ms)
            resp: pb.PrepareRecoveryResponseProto = await self._rpc("prepareRecovery", req, timeout)
            return resp

        return self._submit(run)

    def accept_recovery(self, state: pb.SegmentStateProto, from_url: str) -> asyncio.Future[None]:
        """Paxos phase 2: the node takes the chosen segment (from from_url if it differs)."""

        async def run() -> None:
            req = pb.AcceptRecoveryRequestProto(
                req=self._req(), state_to_accept=state, from_url=from_url
            )
            timeout = seconds(self.settings.accept_recovery_timeout_ms)
            try:
                await self._rpc("acceptRecovery", req, timeout)
            except Exception:
                self._go_out_of_sync()  # it did not take the chosen log: do not finalize it
                raise

        return self._submit(run)

    # -- metrics and lifecycle ----------------------------------------------------------------
    @property
    def queued_bytes(self) -> int:
        """Bytes of edits queued or in flight to the node."""
        return self._queued_bytes

    def metrics(self) -> ChannelMetrics:
        """Out-of-sync flag, lag in txns and ms, queued bytes and RPC latencies."""
        committed = self.committed_txid
        lag_txns = max(committed - self.highest_acked_txid, 0) if committed else 0
        lag_ms = max(self._last_commit_time - self._last_ack_submit_time, 0.0) * 1000.0
        if not committed:
            lag_ms = 0.0
        return ChannelMetrics(
            address=self.address,
            out_of_sync=self.out_of_sync,
            lag_txns=lag_txns,
            lag_ms=lag_ms,
            queued_bytes=self._queued_bytes,
            highest_acked_txid=self.highest_acked_txid,
            rpc={k: RpcStats(**vars(v)) for k, v in self._rpc_stats.items()},
        )

    async def close(self) -> None:
        """Stop sending: fail queued calls, cancel those in flight, close the connection."""
        if self._closed:
            return
        self._closed = True
        task, self._task = self._task, None
        inflight = list(self._inflight)
        for t in inflight:
            t.cancel()
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if inflight:
            await asyncio.gather(*inflight, return_exceptions=True)
        while self._queue:
            _, _, fut = self._queue.popleft()
            if not fut.done():
                fut.set_exception(ChannelClosedError(f"{self.address}: channel closed"))
        await self.client.close()


async def _nothing() -> None:
    """A call with nothing to send."""
    return None
