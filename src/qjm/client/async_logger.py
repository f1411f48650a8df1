"""What the writer's quorum calls need of one JournalNode (HDFS's AsyncLogger interface).

AsyncLoggerSet, QuorumJournalManager and the output stream use a JournalNode only through
these methods and attributes. IPCLoggerChannel implements them over Hadoop IPC; a test can
run the same channel over an in-process transport (qjm.testing.in_memory) or put another
implementation behind the logger set.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from qjm.protocol import qjournal_pb2 as pb

if TYPE_CHECKING:
    from qjm.client.logger_channel import ChannelMetrics, IPCLoggerChannel

__all__ = ["AsyncLogger"]


class AsyncLogger(Protocol):
    """One JournalNode of one journal, every call answered by a future, in call order."""

    address: str
    epoch: int  # the writer epoch every epoch-carrying call sends (set by the logger set)
    members: tuple[str, ...]  # the journal's node addresses, sent in format and new_epoch
    out_of_sync: bool  # skips the open segment's writes until the next segment starts
    answers_again: bool  # out of sync, yet answered a call sent since (design §N.2)
    on_back: Callable[[], None] | None  # called when answers_again turns true

    def set_committed_txid(self, txid: int) -> None:
        """Piggyback this committed txid on later requests (never moves backward)."""
        ...

    def report_committed(self) -> None:
        """Send the committed txid now if no queued call will carry it soon."""
        ...

    def is_formatted(self) -> asyncio.Future[bool]:
        """Whether the node has formatted storage for the journal."""
        ...

    def format(self, ns_info: pb.NamespaceInfoProto, force: bool) -> asyncio.Future[None]:
        """Format the journal on the node."""
        ...

    def get_journal_status(self) -> asyncio.Future[pb.JournalStatusProto]:
        """The node's full status of the journal."""
        ...

    def get_journal_state(self) -> asyncio.Future[pb.GetJournalStateResponseProto]:
        """The node's last promised epoch and where to fetch its segments."""
        ...

    def new_epoch(
        self, ns_info: pb.NamespaceInfoProto, epoch: int
    ) -> asyncio.Future[pb.NewEpochResponseProto]:
        """Ask the node to promise an epoch."""
        ...

    def start_log_segment(self, txid: int, layout_version: int) -> asyncio.Future[None]:
        """Open a segment on the node."""
        ...

    def send_edits(
        self, segment_txid: int, first_txid: int, num_txns: int, records: bytes
    ) -> asyncio.Future[None]:
        """Send one batch of framed ops."""
        ...

    def lease_heartbeat(self) -> asyncio.Future[None]:
        """A heartbeat at the writer's epoch (none while the previous one is unanswered)."""
        ...

    def release_lease(self) -> asyncio.Future[None]:
        """Tell the node this writer answers no client as active any more."""
        ...

    def finalize_log_segment(self, start_txid: int, end_txid: int) -> asyncio.Future[None]:
        """Finalize a segment on the node."""
        ...

    def purge_logs_older_than(self, min_txid_to_keep: int) -> asyncio.Future[None]:
        """Delete the node's segments wholly below a txid."""
        ...

    def discard_segments(self, start_txid: int) -> asyncio.Future[None]:
        """Delete the node's segments from a txid on (rolling-upgrade rollback)."""
        ...

    def prepare_recovery(
        self, segment_txid: int
    ) -> asyncio.Future[pb.PrepareRecoveryResponseProto]:
        """Paxos phase 1 of recovering a segment."""
        ...

    def accept_recovery(self, state: pb.SegmentStateProto, from_url: str) -> asyncio.Future[None]:
        """Paxos phase 2: the node takes the chosen segment, fetched from from_url."""
        ...

    def get_edit_log_manifest(
        self, since_txid: int, in_progress_ok: bool
    ) -> asyncio.Future[pb.GetEditLogManifestResponseProto]:
        """The node's segments from a txid."""
        ...

    async def fetch_url(self, segment_txid: int) -> str:
        """The URL a peer downloads this node's copy of a segment from."""
        ...

    def metrics(self) -> ChannelMetrics:
        """A snapshot of the logger's health."""
        ...

    async def wait_idle(self) -> None:
        """Return once every call queued so far has been answered."""
        ...

    async def close(self) -> None:
        """Stop sending and release the connection."""
        ...


if TYPE_CHECKING:

    def _ipc_channel_is_an_async_logger(channel: IPCLoggerChannel) -> AsyncLogger:
        """mypy checks here that IPCLoggerChannel implements the interface."""
        return channel
