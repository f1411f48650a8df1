"""The writer's side of a quorum journal: fencing by epoch, recovery, segments (design §J.11-§J.13).

Becoming the writer: create_new_unique_epoch (get_journal_state from a majority, then
new_epoch(max+1) on a majority) fences every older writer; recover_unfinalized_segments
then settles the newest segment by a single Paxos round (prepare_recovery, choose the
source by design §J.4, accept_recovery with the source's URL, finalize). Only then may
the writer start segments and write.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from qjm.client.async_logger import AsyncLogger
from qjm.client.decisions import (
    EpochAnswer,
    FormatRefused,
    NothingToRecover,
    RecoveryAnswer,
    RestoredNodesError,
    Segment,
    format_refusal,
    newest_segment,
    next_epoch,
    plan_recovery,
)
from qjm.client.journalnode_client import JournalNodeClient
from qjm.client.logger_channel import IPCLoggerChannel, RpcClient
from qjm.client.logger_set import AsyncLoggerSet
from qjm.client.output_stream import DEFAULT_MAX_IN_FLIGHT, QuorumOutputStream
from qjm.client.quorum_call import QuorumError
from qjm.client.recovery_comparator import describe_response, seen_epoch
from qjm.client.uri import QJournalUri, check_distinct_nodes, parse_qjournal_uri
from qjm.config import QJournalSettings, seconds
from qjm.editlog.framing import LAYOUT_VERSION
from qjm.errors import QjmError
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import NamespaceMismatchError
from qjm.protocol.namespace import describe_namespace, namespace_identity, same_namespace

log = logging.getLogger("qjm.client.qjm")

FORMAT_TIMEOUT_S = 60.0  # HDFS's dfs.qjm.operations.timeout
DISTINCT_NODES_GRACE_S = 1.0  # how long to wait for the last get_journal_state answers


def _majority_namespace(
    answers: dict[AsyncLogger, pb.JournalStatusProto], majority: int
) -> pb.NamespaceInfoProto | None:
    """The namespace a majority of all the journal's nodes is formatted for, if any."""
    by_id: dict[tuple[int, str], list[pb.NamespaceInfoProto]] = {}
    for st in answers.values():
        if st.is_formatted:
            by_id.setdefault(namespace_identity(st.ns_info), []).append(st.ns_info)
    for infos in by_id.values():
        if len(infos) >= majority:
            return infos[0]
    return None


def _epoch_answers(
    answers: dict[AsyncLogger, pb.NewEpochResponseProto],
) -> dict[AsyncLogger, EpochAnswer]:
    """new_epoch answers as the plain records the decision takes."""
    return {
        ch: EpochAnswer(
            r.last_segment_txid if r.HasField("last_segment_txid") else None, r.restored
        )
        for ch, r in answers.items()
    }


def _recovery_answer(resp: pb.PrepareRecoveryResponseProto) -> RecoveryAnswer:
    """A prepare_recovery answer as the plain record the recovery decision takes."""
    s = resp.segment_state
    return RecoveryAnswer(
        Segment(s.start_txid, s.end_txid, s.is_in_progress)
        if resp.HasField("segment_state")
        else None,
        resp.last_writer_epoch,
        resp.accepted_in_epoch if resp.HasField("accepted_in_epoch") else None,
        resp.last_committed_txid if resp.HasField("last_committed_txid") else None,
    )


def _writer_idle_s(resp: pb.NewEpochResponseProto) -> float:
    """Seconds the node reports since it last accepted an older writer's call (0: unsaid)."""
    return resp.writer_idle_ms / 1000.0 if resp.HasField("writer_idle_ms") else 0.0


class NotWriterError(QjmError):
    """A write operation before this manager became the writer (or after it closed)."""


class QuorumJournalManager:
    """One writer's (or reader's) handle on a journal replicated over JournalNodes."""

    def __init__(
        self,
        uri: QJournalUri | str,
        ns_info: pb.NamespaceInfoProto | None = None,
        settings: QJournalSettings | None = None,
        *,
        client_factory: Callable[[str], RpcClient] = JournalNodeClient,
        layout_version: int = LAYOUT_VERSION,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    ) -> None:
        self.uri = parse_qjournal_uri(uri) if isinstance(uri, str) else uri
        self.ns_info = ns_info
        self.settings = settings or QJournalSettings()
        self.layout_version = layout_version
        self.max_in_flight = max_in_flight
        self.loggers = AsyncLoggerSet(
            [
                IPCLoggerChannel(addr, self.uri.jid, self.settings, client_factory(addr))
                for addr in self.uri.addresses
            ]
        )
        members = tuple(sorted(self.uri.addresses))
        for ch in self.loggers.channels:
            ch.members = members  # sent in format and new_epoch: nodes check the set
        self.is_active_writer = False
        self._closed = False
        self._lease_released = False  # a released lease is never renewed again (§N.1)
        self._streams: dict[int, QuorumOutputStream] = {}  # by segment start txid
        self._fenced: BaseException | None = None  # a newer writer refused our epoch
        self._started_segment = False
        self._discarded_from: int | None = None  # discard_segments ran: write nothing more
        # When (on loggers.clock) a majority had promised this writer's epoch, and the least
        # time those answers report since their node last accepted an older writer's call
        # (design §N.1): what a new active waits out before it answers anyone.
        self.epoch_won_at: float | None = None
        self.older_writer_idle_s = 0.0

    def __str__(self) -> str:
        return f"QJM to {self.loggers}"

    @property
    def epoch(self) -> int | None:
        """The writer epoch this manager won, or None before new_epoch succeeded."""
        return self.loggers.epoch

    # -- administration ------------------------------------------------------------------
    async def format(self, ns_info: pb.NamespaceInfoProto, force: bool = False) -> None:
        """Format the journal on every node; all must answer, and without force none may
        hold the journal already."""
        asked = self.loggers.is_formatted()
        try:
            formatted = await asked.wait_for_all(FORMAT_TIMEOUT_S)
        except QuorumError as e:
            refused = format_refusal(asked.keys, asked.successes, asked.errors)
            raise (refused or FormatRefused(f"format failed: {e}")) from None
        held = [str(ch) for ch, yes in formatted.items() if yes]
        if held and not force:
            raise FormatRefused(
                f"journal {self.uri.jid!r} is already formatted on {', '.join(held)}; "
                "pass --force to wipe it"
            )
        try:
            await self.loggers.format(ns_info, force).wait_for_all(FORMAT_TIMEOUT_S)
        except QuorumError as e:
            raise FormatRefused(f"format failed: {e}") from None
        self.ns_info = ns_info

    async def has_some_data(self) -> bool:
        """True when any node that answers has formatted storage for the journal."""
        call = self.loggers.is_formatted()
        try:
            answers = await call.wait_for_all(FORMAT_TIMEOUT_S)
        except QuorumError:
            answers = call.successes
            if not answers:
                raise
        return any(answers.values())

    async def discover_namespace(self) -> pb.NamespaceInfoProto:
        """The namespace the journal is formatted for, as a majority of nodes report it.

        A node formatted for another namespace is one bad node: it is reported, and the
        writer goes on with the majority (it refuses that node's votes in new_epoch).
        """
        call = self.loggers.get_journal_status()
        wait = seconds(self.settings.get_journal_state_timeout_ms)
        started = time.monotonic()
        answers = await self.loggers.wait_for_write_quorum(call, wait)
        found = _majority_namespace(answers, self.loggers.majority)
        if found is None:  # the first majority disagrees or lacks storage: hear the rest
            answers = await call.wait_for_every_answer(max(wait - (time.monotonic() - started), 0))
            found = _majority_namespace(answers, self.loggers.majority)
        formatted = {ch: st for ch, st in answers.items() if st.is_formatted}
        if found is None:
            seen = "; ".join(
                f"{ch}: {describe_namespace(st.ns_info)}" for ch, st in formatted.items()
            )
            raise QjmError(
                f"no namespace of journal {self.uri.jid!r} is held by a majority of "
                f"{self.loggers.majority} of its {len(self.loggers.channels)} JournalNodes "
                f"({len(formatted)} of {len(answers)} answering nodes are formatted"
                + (f": {seen}" if seen else "")
                + "; run `qjm journal format`)"
            )
        for ch, st in formatted.items():
            if not same_namespace(st.ns_info, found):
                log.warning(
                    "%s: JournalNode %s is formatted for another namespace (%s, the majority "
                    "has %s); treating it as one bad node",
                    self,
                    ch,
                    describe_namespace(st.ns_info),
                    describe_namespace(found),
                )
        ns = pb.NamespaceInfoProto()
        ns.CopyFrom(found)
        self.ns_info = ns
        return ns

    # -- becoming the writer ---------------------------------------------------------------
    async def create_new_unique_epoch(
        self, *, survivors_decide: bool = False
    ) -> dict[AsyncLogger, pb.NewEpochResponseProto]:
        """Fence older writers: promise max(last promised)+1 on a majority (design §J.11).

        The answers that count are those of nodes that kept their data: a majority of all
        members must be among them (design §J.5), so a late or lost answer is waited for
        rather than decided without. With survivors_decide (the operator's way out when a
        majority lost their storage) every node must answer instead.
        """
        if self.loggers.epoch is not None:
            raise QjmError(f"{self}: epoch {self.loggers.epoch} already established")
        if self.ns_info is None:
            await self.discover_namespace()
        assert self.ns_info is not None
        call = self.loggers.get_journal_state()
        states = await self.loggers.wait_for_write_quorum(
            call, seconds(self.settings.get_journal_state_timeout_ms)
        )
        # One node named twice in the URI would vote twice: hear the other names too (a
        # node answers about as fast under each of its names), then compare node ids.
        heard = await call.wait_for_every_answer(DISTINCT_NODES_GRACE_S)
        ids = {c.address: heard[c].node_id for c in call.keys if c in heard}
        check_distinct_nodes(ids, self.uri)
        my_epoch = next_epoch([st.last_promised_epoch for st in states.values()], len(call.keys))
        epoch_call = self.loggers.new_epoch(self.ns_info, my_epoch)
        wait = seconds(self.settings.new_epoch_timeout_ms)
        if survivors_decide:
            answers = await epoch_call.wait_for_all(wait)
        else:
            answers = await epoch_call.wait_for_successes_where(
                lambda r: not r.restored, self.loggers.majority, wait
            )
            if sum(1 for r in answers.values() if not r.restored) < self.loggers.majority:
                # Too few can count: hear the rest for an error that names every node.
                answers = await epoch_call.wait_for_every_answer(DISTINCT_NODES_GRACE_S)
        for e in epoch_call.errors.values():
            if isinstance(e, NamespaceMismatchError):
                log.warning("%s: %s; going on with the majority without it", self, e)
        if not survivors_decide:
            if len(answers) < self.loggers.majority:
                raise QuorumError(
                    f"{epoch_call.operation}: got too many exceptions to achieve quorum size "
                    f"{self.loggers.majority}/{len(epoch_call.keys)}: {epoch_call.describe()}",
                    {str(k): e for k, e in epoch_call.errors.items()},
                )
            try:
                newest_segment(_epoch_answers(answers), len(self.loggers.channels))
            except RestoredNodesError as e:
                raise RestoredNodesError(
                    f"{self}: {e}; newEpoch({my_epoch}): {epoch_call.describe()}. Bring back a "
                    "node that kept its data; if the lost disks are gone for good, run "
                    f"`qjm journal recover --survivors-only --uri '{self.uri}'` (txids "
                    "acknowledged only on the lost disks cannot come back)",
                    e.kept,
                    e.restored,
                ) from None
        self.epoch_won_at = self.loggers.clock()
        self.older_writer_idle_s = min(
            (_writer_idle_s(r) for r in epoch_call.successes.values()), default=0.0
        )
        self.loggers.set_epoch(my_epoch)
        log.info(
            "%s: successfully started new epoch %d (older writers idle for at least %.3fs)",
            self,
            my_epoch,
            self.older_writer_idle_s,
        )
        return answers

    async def recover_unfinalized_segments(self, *, survivors_decide: bool = False) -> int:
        """Fence, then finalize the newest segment; returns the last txid of the journal.

        survivors_decide: recover from every node that kept its data, when they are fewer
        than a majority (see create_new_unique_epoch); refused when they are a majority.
        """
        if self.is_active_writer:
            raise QjmError(f"{self}: already the active writer")
        if survivors_decide:
            await self._check_survivors_needed()
        answers = await self.create_new_unique_epoch(survivors_decide=survivors_decide)
        epoch_answers = _epoch_answers(answers)
        survivors: list[AsyncLogger] | None = None
        if survivors_decide:
            survivors = [ch for ch, a in epoch_answers.items() if not a.restored]
            restored = [str(ch) for ch, a in epoch_answers.items() if a.restored]
            if len(survivors) >= self.loggers.majority:
                raise QjmError(
                    f"{self}: {len(survivors)} of {len(self.loggers.channels)} JournalNodes kept "
                    "their data, a majority: a writer recovers the journal as usual"
                )
            if not survivors:
                raise QjmError(
                    f"{self}: every JournalNode was restored after losing its storage "
                    f"({', '.join(restored)}); no node holds the journal's last segments"
                )
            log.warning(
                "%s: recovering from %s only; %s lost their storage",
                self,
                ", ".join(map(str, survivors)),
                ", ".join(restored),
            )
            txids = [epoch_answers[ch].last_segment_txid for ch in survivors]
            newest = max((t for t in txids if t is not None), default=None)
        else:
            newest = newest_segment(epoch_answers, len(self.loggers.channels))
        last = 0
        if newest is not None:
            last = await self._recover_unclosed_segment(newest, survivors)
        if last > 0:
            self.loggers.set_committed_txid(last)
        self.is_active_writer = True
        return last

    async def _check_survivors_needed(self) -> None:
        """Refuse the survivors' recovery before fencing anyone when a majority kept its data."""
        call = self.loggers.get_journal_status()
        heard = await call.wait_for_every_answer(
            seconds(self.settings.get_journal_state_timeout_ms)
        )
        kept = [ch for ch, st in heard.items() if st.is_formatted and not st.restored]
        if len(kept) >= self.loggers.majority:
            raise QjmError(
                f"{self}: {len(kept)} of {len(self.loggers.channels)} JournalNodes kept their "
                "data, a majority: a writer recovers the journal as usual"
            )

    async def _recover_unclosed_segment(
        self, segment_txid: int, survivors: list[AsyncLogger] | None = None
    ) -> int:
        """One Paxos round over a segment; returns its agreed last txid (design §J.12).

        survivors: the only nodes whose answers count, all of which must answer.
        """
        log.info("%s: beginning recovery of the segment starting at txid %d", self, segment_txid)
        call = self.loggers.prepare_recovery(segment_txid)
        wait = seconds(self.settings.prepare_recovery_timeout_ms)
        if survivors is None:
            prepared = await self.loggers.wait_for_write_quorum(call, wait)
            members = len(self.loggers.channels)
        else:
            heard = await call.wait_for_every_answer(wait)
            missing = [str(ch) for ch in survivors if ch not in heard]
            if missing:
                raise QjmError(
                    f"{self}: prepareRecovery({segment_txid}) needs every node that kept its "
                    f"data; no answer from {', '.join(missing)}: {call.describe()}"
                )
            prepared = {ch: heard[ch] for ch in survivors}
            members = len(survivors)
        answers = {ch: _recovery_answer(resp) for ch, resp in prepared.items()}
        for ch, answer in answers.items():
            log.info("%s: prepare_recovery(%d): %s", ch, segment_txid, describe_response(answer))
        plan = plan_recovery(segment_txid, answers, members)
        if isinstance(plan, NothingToRecover):
            # None of a majority has it, so none of its txns was committed; by invariant 2
            # of design §J.12 a majority finalized the previous segment at segment_txid - 1.
            log.info("%s: nothing to recover: %s", self, plan.reason)
            return plan.last_txid
        source = plan.source
        state = pb.SegmentStateProto()
        state.CopyFrom(prepared[source].segment_state)  # the source's own copy, as sent
        if not state.is_in_progress:
            # Acceptors whose finalized copy this epoch decided too need not fetch it.
            state.decided_epoch = seen_epoch(answers[source])
        log.info(
            "%s: recovering segment %d-%d from %s (%s)",
            self,
            state.start_txid,
            state.end_txid,
            source,
            plan.reason,
        )
        url = await source.fetch_url(segment_txid)
        await self.loggers.wait_for_write_quorum(
            self.loggers.accept_recovery(state, source, url),
            seconds(self.settings.accept_recovery_timeout_ms),
        )
        await self.loggers.wait_for_write_quorum(
            self.loggers.finalize_log_segment(state.start_txid, state.end_txid),
            seconds(self.settings.finalize_segment_timeout_ms),
        )
        return int(state.end_txid)

    # -- writing ---------------------------------------------------------------------------
    def _check_writer(self) -> None:
        if self._closed:
            raise NotWriterError(f"{self} is closed")
        if self._discarded_from is not None:
            raise NotWriterError(
                f"{self} ran discard_segments from txid {self._discarded_from}; a new "
                "writer must recover the journal before anything is written"
            )
        if not self.is_active_writer:
            raise NotWriterError(
                f"{self}: not the active writer; call recover_unfinalized_segments first"
            )

    async def start_log_segment(self, txid: int) -> QuorumOutputStream:
        """Open a segment at txid on a majority and return its output stream."""
        self._check_writer()
        try:
            await self.loggers.wait_for_write_quorum(
                self.loggers.start_log_segment(txid, self.layout_version),
                seconds(self.settings.start_segment_timeout_ms),
            )
        except QuorumError as e:
            if e.epoch_error is not None:
                self._fenced = e
            raise
        self._started_segment = True
        stream = QuorumOutputStream(
            self.loggers,
            txid,
            seconds(self.settings.write_txns_timeout_ms),
            max_in_flight=self.max_in_flight,
        )
        self._streams = {txid: stream}
        return stream

    def _check_finalize(self, start_txid: int, end_txid: int) -> None:
        """Refuse a finalize that could make unacknowledged edits permanent (design §J.3).

        A node that holds edits no majority acknowledged would finalize them, and recovery
        prefers a finalized copy: a later writer's acknowledged edits would be replaced.
        """
        what = f"refusing to finalize segment {start_txid}-{end_txid}"
        if end_txid < start_txid:
            raise QjmError(f"{what}: it ends before it starts (an empty segment)")
        if self._fenced is not None:
            raise QjmError(f"{what}: this writer was fenced by a newer one ({self._fenced})")
        stream = self._streams.get(start_txid)
        if stream is None:
            raise QjmError(f"{what}: this writer has no open segment starting at {start_txid}")
        if stream.failed is not None:
            raise QjmError(
                f"{what}: its stream failed ({stream.failed}); a new writer must recover it"
            )
        if end_txid != stream.acked_txid or stream.last_written_txid != stream.acked_txid:
            raise QjmError(
                f"{what}: a majority acknowledged txids up to {stream.acked_txid} and txids up "
                f"to {stream.last_written_txid} were written; flush the stream and finalize "
                "at the acknowledged txid"
            )

    async def finalize_log_segment(self, start_txid: int, end_txid: int) -> None:
        """Finalize the writer's segment on a majority, only at its acknowledged end."""
        self._check_writer()
        self._check_finalize(start_txid, end_txid)
        try:
            await self.loggers.wait_for_write_quorum(
                self.loggers.finalize_log_segment(start_txid, end_txid),
                seconds(self.settings.finalize_segment_timeout_ms),
            )
        except QuorumError as e:
            if e.epoch_error is not None:
                self._fenced = e
            raise
        self._streams.pop(start_txid, None)

    async def purge_logs_older_than(self, min_txid_to_keep: int, wait: bool = False) -> None:
        """Ask every node to delete segments below a txid; by default does not wait."""
        self._check_writer()
        call = self.loggers.purge_logs_older_than(min_txid_to_keep)
        if wait:
            await self.loggers.wait_for_write_quorum(
                call, seconds(self.settings.finalize_segment_timeout_ms)
            )

    async def discard_segments(self, start_txid: int) -> None:
        """Delete every segment from start_txid on, on every node (rolling-upgrade rollback).

        The caller must have won an epoch (create_new_unique_epoch) and started no
        segment; every node must succeed, as for format, since a node that kept the
        discarded txids could bring them back in a later recovery. Afterwards this manager
        writes nothing: the next writer recovers to start_txid - 1.
        """
        what = f"{self}: can't discard the segments from txid {start_txid}"
        if self._closed:
            raise NotWriterError(f"{what}: the manager is closed")
        if self.loggers.epoch is None:
            raise QjmError(f"{what}: win an epoch first (create_new_unique_epoch)")
        if self._started_segment:
            raise QjmError(f"{what}: this writer started a segment; a rollback discards before any")
        call = self.loggers.discard_segments(start_txid)
        try:
            await call.wait_for_all(FORMAT_TIMEOUT_S)
        except QuorumError as e:
            if e.epoch_error is not None:
                self._fenced = e
            raise
        finally:
            self._discarded_from = start_txid
            self.is_active_writer = False
        log.info("%s: discarded the segments from txid %d on every node", self, start_txid)

    # -- the writer's lease (design §N.1) ----------------------------------------------------
    @property
    def lease_renewed_at(self) -> float | None:
        """When the call that last renewed this writer's lease was sent (loggers.clock)."""
        return self.loggers.renewed_at

    def renew_lease(self) -> None:
        """Send a heartbeat at this writer's epoch to every node (its answers renew the lease);
        nothing once the lease was released, so a late renewal cannot undo the release."""
        self._check_writer()
        if self._lease_released:
            return
        self.loggers.heartbeat()

    async def release_lease(self, wait_s: float) -> bool:
        """Tell the nodes this writer answers no client as active any more, so that the next
        writer need not wait out its lease (design §N.1); True once a majority heard it.

        The caller must have stopped answering as active first. Best effort: a node that
        did not hear it makes the next writer wait as if it had not been sent.
        """
        if self._closed or not self.is_active_writer:
            return False
        self._lease_released = True
        call = self.loggers.release_lease()
        try:
            await self.loggers.wait_for_write_quorum(call, wait_s)
        except QjmError as e:
            log.info("%s: the lease release reached no majority: %s", self, e)
            return False
        return True

    @property
    def closed(self) -> bool:
        """True once close() was called."""
        return self._closed

    async def close(self) -> None:
        """Stop being the writer and close every channel (calls in flight are abandoned)."""
        self._closed = True
        self.is_active_writer = False
        await self.loggers.close()
