"""One JournalNode as the writer sees it: an ordered queue of calls drained by one task.

Calls to one node are sent one at a time, in the order they were queued, so the node
sees a writer's requests in order; the channels of different nodes run in parallel.
A journal() that fails puts the channel out of sync: later batches of the segment fail
at once (with a heartbeat to the node at most once a second, so it still learns the
committed txid), until the next start_log_segment succeeds (design 2.2 step 4, 2.11).
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

from qjm.client.rpc import JournalNodeClient
from qjm.config import QJournalSettings
from qjm.errors import QjmError
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import EpochError, JournalOutOfSyncError
from qjm.protocol.urls import get_journal_url

log = logging.getLogger("qjm.client.channel")
T = TypeVar("T")

HEARTBEAT_INTERVAL_S = 1.0  # HDFS's IPCLoggerChannel.HEARTBEAT_INTERVAL_MILLIS
SLOW_RPC_S = 1.0  # an RPC slower than this is logged
OPERATIONS_TIMEOUT_S = 60.0  # HDFS's dfs.qjm.operations.timeout (format, status)


def _retrieve(fut: asyncio.Future[Any]) -> None:
    """Mark a future's error as seen, so a call nobody waits for does not warn."""
    if not fut.cancelled():
        fut.exception()


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
        self._queued_bytes = 0
        self._ipc_serial = -1
        self._last_heartbeat: float | None = None
        self._last_commit_time = 0.0
        self._last_ack_submit_time = time.monotonic()  # lag counts from the start
        self._rpc_stats: dict[str, RpcStats] = {}
        self._queue: deque[tuple[Callable[[], Awaitable[Any]], asyncio.Future[Any]]] = deque()
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._sent_committed: int | None = None
        self._report_pending = False
        # What new_epoch needs, kept to rejoin a node that missed the writer's new_epoch.
        self.ns_info: pb.NamespaceInfo | None = None
        self.members: tuple[str, ...] = ()
        self.promised_epoch = 0  # the epoch this node promised this writer (0: none yet)

    def __str__(self) -> str:
        return self.address

    def __repr__(self) -> str:
        return f"IPCLoggerChannel({self.address}, jid={self.jid!r})"

    # -- the ordered queue ------------------------------------------------------------------
    def _submit(self, fn: Callable[[], Awaitable[T]]) -> asyncio.Future[T]:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()
        fut.add_done_callback(_retrieve)
        if self._closed:
            fut.set_exception(ChannelClosedError(f"{self.address}: channel is closed"))
            return fut
        self._queue.append((fn, fut))
        if self._task is None:
            self._wake = asyncio.Event()
            self._task = loop.create_task(self._drain(), name=f"qjm-channel-{self.address}")
        assert self._wake is not None
        self._wake.set()
        return fut

    async def _drain(self) -> None:
        assert self._wake is not None
        while True:
            while not self._queue:
                self._wake.clear()
                await self._wake.wait()
            fn, fut = self._queue.popleft()
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

    async def wait_idle(self) -> None:
        """Return once every call queued so far has been answered."""

        async def nothing() -> None:
            return None

        await self._submit(nothing)

    # -- requests --------------------------------------------------------------------------
    def _req(self) -> pb.RequestInfo:
        """The RequestInfo for the next call: built when it is sent, so serials ascend."""
        self._ipc_serial += 1
        req = pb.RequestInfo(jid=self.jid, epoch=self.epoch, ipc_serial=self._ipc_serial)
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
            if isinstance(req, pb.RequestInfo) and req.epoch > 0 and req.epoch == self.epoch:
                # A node takes an epoch-carrying call only at its promise: it promised ours.
                self.promised_epoch = self.epoch
            return resp
        finally:
            took = time.perf_counter() - started
            stats.calls += 1
            stats.total_s += took
            stats.last_s = took
            stats.max_s = max(stats.max_s, took)
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
        return get_journal_url(self.http_url, self.jid, segment_txid, in_progress_ok=True)

    @staticmethod
    def _s(ms: int) -> float:
        return ms / 1000.0

    # -- calls without an epoch ---------------------------------------------------------------
    def is_formatted(self) -> asyncio.Future[bool]:
        """Whether the node has formatted storage for the journal."""

        async def run() -> bool:
            req = pb.JournalIdRequest(jid=self.jid)
            resp = await self._rpc("IsFormatted", req, OPERATIONS_TIMEOUT_S)
            return bool(resp.is_formatted)

        return self._submit(run)

    def format(self, ns_info: pb.NamespaceInfo, force: bool) -> asyncio.Future[None]:
        """Format the journal on the node."""

        async def run() -> None:
            req = pb.FormatRequest(
                jid=self.jid, ns_info=ns_info, force=force, members=list(self.members)
            )
            await self._rpc("Format", req, OPERATIONS_TIMEOUT_S)

        return self._submit(run)

    def get_journal_status(self) -> asyncio.Future[pb.JournalStatus]:
        """The node's full status of the journal (namespace, epochs, segments)."""

        async def run() -> pb.JournalStatus:
            req = pb.JournalIdRequest(jid=self.jid)
            resp: pb.JournalStatus = await self._rpc("GetJournalStatus", req, OPERATIONS_TIMEOUT_S)
            return resp

        return self._submit(run)

    def get_journal_state(self) -> asyncio.Future[pb.GetJournalStateResponse]:
        """The node's last promised epoch; remembers its HTTP address."""

        async def run() -> pb.GetJournalStateResponse:
            req = pb.JournalIdRequest(jid=self.jid)
            timeout = self._s(self.settings.get_journal_state_timeout_ms)
            resp: pb.GetJournalStateResponse = await self._rpc("GetJournalState", req, timeout)
            if resp.from_url:
                self.http_url = resp.from_url.rstrip("/")
            return resp

        return self._submit(run)

    async def fetch_url(self, segment_txid: int) -> str:
        """build_url, asking the node for its HTTP address when no answer has told it yet."""
        if not self.http_url:
            await self.get_journal_state()
        return self.build_url(segment_txid)

    def new_epoch(
        self, ns_info: pb.NamespaceInfo, epoch: int
    ) -> asyncio.Future[pb.NewEpochResponse]:
        """Ask the node to promise an epoch (Paxos phase 1a of fencing)."""
        self.ns_info = ns_info

        async def run() -> pb.NewEpochResponse:
            return await self._new_epoch(ns_info, epoch)

        return self._submit(run)

    async def _new_epoch(self, ns_info: pb.NamespaceInfo, epoch: int) -> pb.NewEpochResponse:
        req = pb.NewEpochRequest(
            jid=self.jid, ns_info=ns_info, epoch=epoch, members=list(self.members)
        )
        resp: pb.NewEpochResponse = await self._rpc(
            "NewEpoch", req, self._s(self.settings.new_epoch_timeout_ms)
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
        timeout = self._s(self.settings.get_journal_state_timeout_ms)
        state = await self._rpc("GetJournalState", pb.JournalIdRequest(jid=self.jid), timeout)
        if state.from_url:
            self.http_url = state.from_url.rstrip("/")
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
    ) -> asyncio.Future[pb.GetEditLogManifestResponse]:
        """The node's segments from a txid (sent in order like every other call)."""

        async def run() -> pb.GetEditLogManifestResponse:
            req = pb.GetEditLogManifestRequest(
                jid=self.jid, since_txid=since_txid, in_progress_ok=in_progress_ok
            )
            timeout = self._s(self.settings.select_input_streams_timeout_ms)
            resp: pb.GetEditLogManifestResponse = await self._rpc(
                "GetEditLogManifest", req, timeout
            )
            return resp

        return self._submit(run)

    # -- calls of the writer ------------------------------------------------------------------
    def start_log_segment(self, txid: int, layout_version: int) -> asyncio.Future[None]:
        """Open a segment on the node; success brings an out-of-sync node back."""

        async def run() -> None:
            try:
                await self._rejoin_if_unpromised()
                req = pb.StartLogSegmentRequest(
                    req=self._req(), txid=txid, layout_version=layout_version
                )
                await self._rpc(
                    "StartLogSegment", req, self._s(self.settings.start_segment_timeout_ms)
                )
            except Exception:
                self.out_of_sync = True
                raise
            if self.out_of_sync:
                log.info("%s: back in sync at the segment starting at txid %d", self.address, txid)
                self.out_of_sync = False
            self._last_heartbeat = None

        return self._submit(run)

    def send_edits(
        self, segment_txid: int, first_txid: int, num_txns: int, records: bytes
    ) -> asyncio.Future[None]:
        """Queue a batch of framed ops for the node; fails at once when the queue is full."""
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

            async def mark() -> None:
                self.out_of_sync = True

            self._submit(mark)
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

        async def run() -> None:
            try:
                if self.out_of_sync:
                    await self._heartbeat_if_due()
                    raise OutOfSyncError(
                        f"{self.address}: out of sync, journal disabled until the next segment "
                        f"starts; skipped txids {first_txid}-{last_txid}"
                    )
                req = pb.JournalRequest(
                    req=self._req(),
                    first_txid=first_txid,
                    num_txns=num_txns,
                    records=records,
                    segment_txid=segment_txid,
                )
                try:
                    await self._rpc("Journal", req, self._s(self.settings.write_txns_timeout_ms))
                except Exception as e:
                    log.warning(
                        "%s: failed to write txids %d-%d (%s); will write to it again from the "
                        "next segment",
                        self.address,
                        first_txid,
                        last_txid,
                        e,
                    )
                    self.out_of_sync = True
                    raise
                self.highest_acked_txid = last_txid
                self._last_ack_submit_time = submitted
            finally:
                self._queued_bytes -= size

        return self._submit(run)

    async def _heartbeat_if_due(self) -> None:
        now = time.monotonic()
        if self._last_heartbeat is not None and now - self._last_heartbeat < HEARTBEAT_INTERVAL_S:
            return
        self._last_heartbeat = now  # not more often than the interval, even when it fails
        try:
            req = pb.HeartbeatRequest(req=self._req())
            await self._rpc("Heartbeat", req, self._s(self.settings.write_txns_timeout_ms))
        except QjmError as e:
            log.debug("%s: heartbeat failed: %s", self.address, e)

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

        async def run() -> None:
            self._report_pending = False
            if self.committed_txid != self._sent_committed:
                req = pb.HeartbeatRequest(req=self._req())
                await self._rpc("Heartbeat", req, self._s(self.settings.write_txns_timeout_ms))

        self._submit(run)

    def heartbeat(self) -> asyncio.Future[None]:
        """Send a heartbeat (epoch and committed txid, no edits)."""

        async def run() -> None:
            req = pb.HeartbeatRequest(req=self._req())
            await self._rpc("Heartbeat", req, self._s(self.settings.write_txns_timeout_ms))

        return self._submit(run)

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
            req = pb.FinalizeLogSegmentRequest(
                req=self._req(), start_txid=start_txid, end_txid=end_txid
            )
            timeout = self._s(self.settings.finalize_segment_timeout_ms)
            await self._rpc("FinalizeLogSegment", req, timeout)

        return self._submit(run)

    def purge_logs_older_than(self, min_txid_to_keep: int) -> asyncio.Future[None]:
        """Delete the node's segments wholly below a txid."""

        async def run() -> None:
            req = pb.PurgeLogsRequest(req=self._req(), min_txid_to_keep=min_txid_to_keep)
            timeout = self._s(self.settings.finalize_segment_timeout_ms)
            await self._rpc("PurgeLogs", req, timeout)

        return self._submit(run)

    def prepare_recovery(self, segment_txid: int) -> asyncio.Future[pb.PrepareRecoveryResponse]:
        """Paxos phase 1 of recovering a segment."""

        async def run() -> pb.PrepareRecoveryResponse:
            req = pb.PrepareRecoveryRequest(req=self._req(), segment_txid=segment_txid)
            timeout = self._s(self.settings.prepare_recovery_timeout_ms)
            resp: pb.PrepareRecoveryResponse = await self._rpc("PrepareRecovery", req, timeout)
            return resp

        return self._submit(run)

    def accept_recovery(self, state: pb.SegmentState, from_url: str) -> asyncio.Future[None]:
        """Paxos phase 2: the node takes the chosen segment (from from_url if it differs)."""

        async def run() -> None:
            req = pb.AcceptRecoveryRequest(
                req=self._req(), state_to_accept=state, from_url=from_url
            )
            timeout = self._s(self.settings.accept_recovery_timeout_ms)
            try:
                await self._rpc("AcceptRecovery", req, timeout)
            except Exception:
                self.out_of_sync = True  # it did not take the chosen log: do not finalize it
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
        """Stop sending: fail queued calls, cancel the one in flight, close the connection."""
        if self._closed:
            return
        self._closed = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        while self._queue:
            _, fut = self._queue.popleft()
            if not fut.done():
                fut.set_exception(ChannelClosedError(f"{self.address}: channel closed"))
        await self.client.close()
