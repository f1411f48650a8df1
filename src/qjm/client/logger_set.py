"""The channels to every JournalNode of a journal, called together as quorum calls."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TypeVar

from qjm.client.async_logger import AsyncLogger
from qjm.client.lease import Clock, lease_clock
from qjm.client.logger_channel import ChannelMetrics
from qjm.client.quorum_call import QuorumCall, call_all, majority_of
from qjm.protocol import qjournal_pb2 as pb

T = TypeVar("T")


class AsyncLoggerSet:
    """Fans each call out to all channels and waits for a majority (HDFS's AsyncLoggerSet)."""

    def __init__(self, channels: Sequence[AsyncLogger], clock: Clock = lease_clock) -> None:
        if not channels:
            raise ValueError("a logger set needs at least one JournalNode")
        self.channels = list(channels)
        self.epoch: int | None = None
        self.clock = clock
        # When (on clock) the newest call carrying this writer's epoch that a majority then
        # accepted was sent: the start of the writer's lease (design §N.1). None: none yet.
        self.renewed_at: float | None = None
        # Told when an out-of-sync node answers again (design §N.2); None: nobody listens.
        self.on_node_back: Callable[[], None] | None = None
        for ch in self.channels:
            ch.on_back = self._node_back

    def __str__(self) -> str:
        return "[" + ", ".join(ch.address for ch in self.channels) + "]"

    @property
    def majority(self) -> int:
        """How many nodes make a quorum."""
        return majority_of(len(self.channels))

    def set_epoch(self, epoch: int) -> None:
        """Use this epoch on every later call of every channel."""
        self.epoch = epoch
        for ch in self.channels:
            ch.epoch = epoch

    def set_committed_txid(self, txid: int) -> None:
        """Piggyback a quorum-acknowledged txid on every later request."""
        for ch in self.channels:
            ch.set_committed_txid(txid)

    def report_committed(self) -> None:
        """Send the committed txid to every node that has no call queued to carry it."""
        for ch in self.channels:
            ch.report_committed()

    def _call(
        self,
        operation: str,
        fn: Callable[[AsyncLogger], asyncio.Future[T]],
        *,
        renews: bool = False,
    ) -> QuorumCall[AsyncLogger, T]:
        """fn on every channel; renews: a call at the writer's epoch, which renews its lease
        from the instant before any channel sent it once a majority accepted it."""
        sent = self.clock() if renews else 0.0
        call = call_all(operation, self.channels, fn)
        if renews:
            call.on_majority(lambda: self._renewed(sent))
        return call

    def _node_back(self) -> None:
        if self.on_node_back is not None:
            self.on_node_back()

    @property
    def nodes_back(self) -> list[AsyncLogger]:
        """The out-of-sync nodes that answer again: a new segment would take them back."""
        return [ch for ch in self.channels if ch.out_of_sync and ch.answers_again]

    def _renewed(self, sent: float) -> None:
        if self.renewed_at is None or sent > self.renewed_at:
            self.renewed_at = sent

    async def wait_for_write_quorum(
        self, call: QuorumCall[AsyncLogger, T], wait_s: float
    ) -> dict[AsyncLogger, T]:
        """The answers once a majority succeeded; raise once a majority cannot."""
        return await call.wait_for_quorum(wait_s)

    # -- fan-outs ------------------------------------------------------------------------------
    def is_formatted(self) -> QuorumCall[AsyncLogger, bool]:
        """is_formatted on every node."""
        return self._call("isFormatted()", lambda ch: ch.is_formatted())

    def format(self, ns_info: pb.NamespaceInfoProto, force: bool) -> QuorumCall[AsyncLogger, None]:
        """format on every node."""
        return self._call("format()", lambda ch: ch.format(ns_info, force))

    def get_journal_status(self) -> QuorumCall[AsyncLogger, pb.JournalStatusProto]:
        """get_journal_status on every node."""
        return self._call("getJournalStatus()", lambda ch: ch.get_journal_status())

    def get_journal_state(self) -> QuorumCall[AsyncLogger, pb.GetJournalStateResponseProto]:
        """get_journal_state on every node."""
        return self._call("getJournalState()", lambda ch: ch.get_journal_state())

    def new_epoch(
        self, ns_info: pb.NamespaceInfoProto, epoch: int
    ) -> QuorumCall[AsyncLogger, pb.NewEpochResponseProto]:
        """new_epoch on every node."""
        return self._call(
            f"newEpoch({epoch})", lambda ch: ch.new_epoch(ns_info, epoch), renews=True
        )

    def start_log_segment(self, txid: int, layout_version: int) -> QuorumCall[AsyncLogger, None]:
        """start_log_segment on every node."""
        return self._call(
            f"startLogSegment({txid})",
            lambda ch: ch.start_log_segment(txid, layout_version),
            renews=True,
        )

    def send_edits(
        self, segment_txid: int, first_txid: int, num_txns: int, records: bytes
    ) -> QuorumCall[AsyncLogger, None]:
        """journal() of one batch on every node."""
        last = first_txid + num_txns - 1
        return self._call(
            f"journal({first_txid}-{last})",
            lambda ch: ch.send_edits(segment_txid, first_txid, num_txns, records),
            renews=True,
        )

    def finalize_log_segment(self, start: int, end: int) -> QuorumCall[AsyncLogger, None]:
        """finalize_log_segment on every node."""
        return self._call(
            f"finalizeLogSegment({start}-{end})",
            lambda ch: ch.finalize_log_segment(start, end),
            renews=True,
        )

    def heartbeat(self) -> QuorumCall[AsyncLogger, None]:
        """A heartbeat at the writer's epoch on every node: renews the writer's lease."""
        return self._call("heartbeat()", lambda ch: ch.lease_heartbeat(), renews=True)

    def release_lease(self) -> QuorumCall[AsyncLogger, None]:
        """Tell every node this writer answers no client as active any more."""
        return self._call("heartbeat(release)", lambda ch: ch.release_lease())

    def purge_logs_older_than(self, min_txid: int) -> QuorumCall[AsyncLogger, None]:
        """purge_logs_older_than on every node."""
        return self._call(
            f"purgeLogsOlderThan({min_txid})", lambda ch: ch.purge_logs_older_than(min_txid)
        )

    def discard_segments(self, start_txid: int) -> QuorumCall[AsyncLogger, None]:
        """discard_segments on every node."""
        return self._call(
            f"discardSegments({start_txid})", lambda ch: ch.discard_segments(start_txid)
        )

    def prepare_recovery(
        self, segment_txid: int
    ) -> QuorumCall[AsyncLogger, pb.PrepareRecoveryResponseProto]:
        """prepare_recovery on every node."""
        return self._call(
            f"prepareRecovery({segment_txid})", lambda ch: ch.prepare_recovery(segment_txid)
        )

    def accept_recovery(
        self, state: pb.SegmentStateProto, source: AsyncLogger, from_url: str
    ) -> QuorumCall[AsyncLogger, None]:
        """accept_recovery on every node; the source gets no URL: it holds the chosen log."""
        desc = f"{state.start_txid}-{state.end_txid}"
        return self._call(
            f"acceptRecovery({desc})",
            lambda ch: ch.accept_recovery(state, "" if ch is source else from_url),
        )

    def get_edit_log_manifest(
        self, since_txid: int, in_progress_ok: bool
    ) -> QuorumCall[AsyncLogger, pb.GetEditLogManifestResponseProto]:
        """get_edit_log_manifest on every node."""
        return self._call(
            f"getEditLogManifest({since_txid})",
            lambda ch: ch.get_edit_log_manifest(since_txid, in_progress_ok),
        )

    # -- state ---------------------------------------------------------------------------------
    def metrics(self) -> list[ChannelMetrics]:
        """Every channel's metrics."""
        return [ch.metrics() for ch in self.channels]

    async def wait_idle(self) -> None:
        """Return once every channel answered every call queued so far."""
        await asyncio.gather(*(ch.wait_idle() for ch in self.channels), return_exceptions=True)

    async def close(self) -> None:
        """Close every channel."""
        await asyncio.gather(*(ch.close() for ch in self.channels))
