"""One journal on a JournalNode: the acceptor side of the protocol (design §J).

Blocking and single-threaded by contract: the daemon runs every call of one journal on
that journal's own thread, so calls apply in arrival order and disk work stays off the
event loop. Every method checks all its preconditions before it changes anything.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import struct
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from qjm.editlog.file_journal import FileJournal, SegmentInfo
from qjm.editlog.framing import EDITLOG_LENGTH_LAYOUT, LAYOUT_VERSION, validate_batch
from qjm.editlog.segments import SegmentFile
from qjm.errors import EditLogError
from qjm.journalnode import rules
from qjm.journalnode.accept_recovery import describe_state, roll_forward_half_done_accepts
from qjm.journalnode.edits_cache import JournaledEditsCache
from qjm.journalnode.rules import (
    MAX_EPOCH,
    Accepted,
    JournalState,
    Request,
)
from qjm.journalnode.segment_fetch import (
    TRANSFER_TIMEOUT_SECONDS,
    FetchLimits,
    SegmentFetcher,
)
from qjm.journalnode.segment_fetch import (
    download_segment as download_segment,
)
from qjm.journalnode.storage import (
    COMMITTED_TXID,
    LAST_PROMISED_EPOCH,
    LAST_WRITER_EPOCH,
    JNStorage,
    MemberChangeRecord,
)
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import (
    BadFinalizedSegmentError,
    CacheMissError,
    InvalidRequestError,
    NamespaceMismatchError,
    NoSuchSegmentError,
    SegmentExistsError,
    StorageError,
    StorageInfoMismatchError,
    StorageNotEmptyError,
    TombstonedSegmentError,
)
from qjm.protocol.member_change import MemberChange, check_member_change
from qjm.protocol.namespace import NamespaceInfo, StorageInfo, same_namespace
from qjm.protocol.urls import GetJournalQuery

log = logging.getLogger("qjm.journalnode.journal")
T = TypeVar("T")
SLOW_SYNC_SECONDS = 1.0
DEFAULT_CACHE_BYTES = 1024 * 1024  # HDFS's dfs.journalnode.edit-cache-size.bytes
MAX_TXID = 2**63 - 1


@dataclass
class FaultInjector:
    """Hooks tests use to crash a journal at the points HDFS's tests do."""

    before_persist_paxos_data: Callable[[], None] = lambda: None
    after_persist_paxos_data: Callable[[], None] = lambda: None


@dataclass
class JournalCounters:
    """Running totals a metrics collector reads; plain ints, updated on the journal thread."""

    batches_written: int = 0
    batches_written_while_lagging: int = 0
    txns_written: int = 0
    bytes_written: int = 0
    last_journal_timestamp: float = 0.0
    txns_served_via_rpc: int = 0
    bytes_served_via_rpc: int = 0
    rpc_empty_responses: int = 0
    rpc_cache_misses: int = 0
    segments_synced: int = 0
    last_sync_timestamp: float = 0.0
    observe_sync: Callable[[float], None] = lambda seconds: None  # set by the metrics


def _segment_proto(seg: SegmentInfo) -> pb.SegmentStateProto:
    """A segment as the wire message."""
    return pb.SegmentStateProto(
        start_txid=seg.start_txid,
        end_txid=seg.end_txid,
        is_in_progress=seg.is_in_progress,
        byte_length=seg.byte_length,
    )


def remote_edit_log(seg: SegmentInfo) -> pb.RemoteEditLogProto:
    """A segment as a manifest entry, with the epoch that decided it where known."""
    out = pb.RemoteEditLogProto(
        start_txid=seg.start_txid, end_txid=seg.end_txid, is_in_progress=seg.is_in_progress
    )
    if seg.decided_epoch is not None:
        out.decided_epoch = seg.decided_epoch
    return out


class Journal:
    """The state of one journal id and every rule that guards it."""

    def __init__(
        self,
        jid: str,
        storage: JNStorage,
        *,
        fetch: Callable[[str, Path], None] | None = None,
        faults: FaultInjector | None = None,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> None:
        self.jid = jid
        self.storage = storage
        self.counters = JournalCounters()
        self.faults = faults or FaultInjector()
        self._fetch = fetch  # tests' stand-in for HTTP; None: self.fetcher
        self.fetcher = SegmentFetcher()
        self.transfer_timeout = TRANSFER_TIMEOUT_SECONDS
        self.ns_info: NamespaceInfo | None = None
        self.members: list[str] | None = None
        self.member_change: MemberChangeRecord | None = None  # the last one recorded
        self.awaiting_new_epoch: str | None = None  # why writers wait for a new_epoch
        self.amnesiac: str | None = None  # why prepare_recovery is refused (restored storage)
        self.last_promised_epoch = 0
        self.last_writer_epoch = 0
        self.committed_txid: int | None = None
        self.highest_written_txid = 0
        self.current_epoch_ipc_serial = -1
        # When a promise or an accepted writer call last happened, on self.clock (tests
        # move it); None: never since the format. Read from the files' times at load.
        self.clock: Callable[[], float] = time.monotonic
        self.last_used: float | None = None
        # When (on self.clock) this node last accepted a writer's call or promise; from the
        # start, since what came before is older. newEpoch reports the time since (design
        # §N.1): the least a newer writer must know of the older writers' leases.
        self.writer_seen_at = self.clock()
        self.idle_before_promise_s = 0.0  # what the last new_epoch found
        # The segment files; the open segment (cur_segment_txid) is the current writer's.
        self.files = FileJournal(storage.current, jid, on_moved_aside=self._forget_moved_aside)
        self._next_txid = 0
        self._cur_layout = LAYOUT_VERSION
        self._committed_fd = -1
        self.cache = JournaledEditsCache(cache_bytes)
        # Called on the journal thread after new edits or a new committed txid (long polls).
        self.on_progress: Callable[[], None] = lambda: None
        # Called on the journal thread when a segment is started or finalized above txids
        # this node lacks, so the syncer fetches them now rather than at its next interval.
        self.on_gap: Callable[[], None] = lambda: None
        storage.lock()
        try:
            self._load()
        except BaseException:
            storage.unlock()
            raise

    @property
    def cur_segment_txid(self) -> int | None:
        """The start txid of the segment open for the current writer, if any."""
        return self.files.cur_segment_txid

    # -- lifecycle -----------------------------------------------------------------------
    def _load(self) -> None:
        """Read the persisted state and the newest segment; errors name the bad file."""
        self.storage.forget_cached()
        if not self.storage.is_formatted():
            return
        cur = self.storage.current
        self.ns_info = _read(cur / "VERSION", self.storage.read_version)
        self.last_promised_epoch = _read(
            cur / LAST_PROMISED_EPOCH, lambda: self._read_epoch(LAST_PROMISED_EPOCH)
        )
        self.last_writer_epoch = _read(
            cur / LAST_WRITER_EPOCH, lambda: self._read_epoch(LAST_WRITER_EPOCH)
        )
        self.committed_txid = _read(cur / "committed-txid", self.storage.read_committed_txid)
        self.members = _read(cur / "members", self.storage.read_members)
        self.member_change = _read(cur / "member-change", self.storage.read_member_change)
        self.awaiting_new_epoch = self.storage.awaiting_new_epoch()
        self.amnesiac = self.storage.amnesiac()
        for txid in self.storage.paxos_txids():
            _read(self.storage.paxos_file(txid), functools.partial(self.storage.read_paxos, txid))
        self.files.remove_stale_downloads()  # accept_recovery downloads cut short
        self._committed_fd = self.storage.open_committed_txid()
        for seg in self.files.segments():
            if seg.end is not None:
                self._check_finalized(seg)
        roll_forward_half_done_accepts(self)
        latest = self.files.scan_for_latest_edits()
        if latest is not None:
            self.highest_written_txid = latest.end_txid
        self.last_used = self._last_use_on_disk()

    def _last_use_on_disk(self) -> float | None:
        """When the files a writer touches last changed, as an instant on self.clock.

        The promise file changes with each new_epoch, committed-txid with the writer's
        calls and an in-progress segment with its batches. A time ahead of the wall clock
        counts as now.
        """
        cur = self.storage.current
        paths = [cur / LAST_PROMISED_EPOCH, cur / COMMITTED_TXID]
        paths += [seg.path for seg in self.files.segments() if seg.in_progress]
        times = []
        for path in paths:
            try:
                times.append(path.stat().st_mtime)
            except FileNotFoundError:
                continue
        if not times:
            return None
        return self.clock() - max(0.0, time.time() - max(times))

    def _read_epoch(self, name: str) -> int:
        """An epoch file's value, refused outside 0..MAX_EPOCH - 1 (new_epoch's range).

        HDFS loads any long; a value out of range would load and then fail every call
        that reports it, while the node looked healthy (design §J.9).
        """
        value = self.storage.read_long(name, 0)
        if not 0 <= value < MAX_EPOCH:
            raise StorageError(
                f"{self.storage.current / name} holds {value}, outside the epochs a writer "
                f"can win (0 to 2**62 - 1); the file is corrupt or was edited"
            )
        return value

    def close(self) -> None:
        """Close the open segment and release the storage lock."""
        self.abort_open_segment()
        if self._committed_fd >= 0:
            os.close(self._committed_fd)
            self._committed_fd = -1
        self.storage.unlock()

    # -- checks ------------------------------------------------------------------------------
    def state(self) -> JournalState:
        """A frozen snapshot of what the acceptor's rules read (journalnode.rules)."""
        return JournalState(
            jid=self.jid,
            formatted=self.ns_info is not None,
            last_promised_epoch=self.last_promised_epoch,
            last_writer_epoch=self.last_writer_epoch,
            ipc_serial=self.current_epoch_ipc_serial,
            committed_txid=self.committed_txid,
            highest_written_txid=self.highest_written_txid,
            open_segment=self.cur_segment_txid,
            awaiting_new_epoch=self.awaiting_new_epoch,
            amnesiac=self.amnesiac,
        )

    def check_formatted(self) -> NamespaceInfo:
        """The namespace this journal is formatted for; refuses an unformatted journal."""
        if self.ns_info is None:
            rules.check_formatted(self.state())
        assert self.ns_info is not None
        return self.ns_info

    def _check_ns(self, ns: NamespaceInfo) -> None:
        mine = self.check_formatted()
        if not same_namespace(ns, mine):
            raise NamespaceMismatchError(
                f"incompatible namespace for journal {self.jid!r}: the request has "
                f"{ns.describe()}, this JournalNode is formatted for {mine.describe()}"
            )

    def check_writer_call(self, req: pb.RequestInfoProto, state: JournalState) -> Request:
        """Check a writer call against state (rules.check_writer_call); return its values.

        state is this journal's snapshot, taken once per call: the call passes the same
        one to the rest of its rules and to record_request.
        """
        plain = Request.of(req)
        rules.check_writer_call(state, plain)
        self.writer_seen_at = self.clock()  # the writer may count it: design §N.1
        return plain

    def record_request(
        self, req: Request, state: JournalState, written_through: int | None = None
    ) -> None:
        """Record what a checked request tells: its serial and committed txid.

        state is the snapshot the request was checked against; nothing it holds has
        changed since. The epoch needs no recording: rules.check_request refused any
        above the promise.
        """
        txid = rules.committed_txid_to_record(state, req, written_through)
        claimed, bound = req.committed_txid, max(self.highest_written_txid, written_through or 0)
        if claimed is not None and claimed != self.committed_txid and claimed > bound:
            log.debug(
                "journal %s: committed txid %d is above the highest txid %d here",
                self.jid,
                claimed,
                bound,
            )
        self.current_epoch_ipc_serial = req.ipc_serial
        self.last_used = self.clock()
        if txid is not None:
            self._set_committed_txid(txid)
            self.on_progress()

    def _is_current_writers(
        self, start_txid: int, segments: list[SegmentFile] | None = None
    ) -> bool:
        """True when the in-progress segment at start_txid is the current writer's.

        That is: the writer epoch equals the promise and the segment is the newest one,
        started in that epoch (start_log_segment only opens a segment above every txid
        written before) or accepted in a recovery of that epoch. HDFS lists and serves any
        in-progress segment; then a fenced writer's never-acknowledged tail can be read.
        """
        writer = self.last_writer_epoch
        if self.awaiting_new_epoch is not None or writer <= 0 or writer != self.last_promised_epoch:
            return False
        if start_txid == self.cur_segment_txid:
            return True
        segments = segments if segments is not None else self.files.segments()
        if any(
            s.start > start_txid or (s.start == start_txid and not s.in_progress) for s in segments
        ):
            return False
        accepted = self.storage.read_paxos(start_txid)
        return accepted is None or accepted.accepted_in_epoch == writer

    # -- persisted setters ------------------------------------------------------------------
    def _set_promised_epoch(self, epoch: int) -> None:
        self.cache.clear()  # the cache holds the old writer's edits: never serve them again
        self.storage.write_long(LAST_PROMISED_EPOCH, epoch)
        self.last_promised_epoch = epoch
        self.current_epoch_ipc_serial = -1
        self.last_used = self.clock()

    def _set_committed_txid(self, txid: int) -> None:
        os.pwrite(self._committed_fd, struct.pack(">q", txid), 0)
        self.committed_txid = txid

    # -- RPCs ------------------------------------------------------------------------------
    def is_formatted(self) -> bool:
        """True when the journal has formatted storage."""
        return self.ns_info is not None

    def format(self, ns: NamespaceInfo, force: bool, members: Sequence[str] = ()) -> None:
        """Format the storage for a namespace and membership; writers wait for new_epoch."""
        self._check_not_in_use(ns, force)
        if self.storage.has_data() and not force:
            raise StorageNotEmptyError(
                f"can't format the storage directory {self.storage.current} because it is "
                "not empty; pass --force to wipe it"
            )
        self.abort_open_segment()
        if self._committed_fd >= 0:
            os.close(self._committed_fd)
            self._committed_fd = -1
        # Epochs never go back (HDFS resets them to 0, which lets a live writer of the old
        # namespace write into the new journal): the promise is kept, and the marker makes
        # every writer call wait for a new_epoch, which checks the namespace.
        kept = max(self.last_promised_epoch, self._promise_on_disk())
        new_members = sorted(members) if members else None
        self.storage.format(ns, kept, new_members)
        self.files.reset()
        self.cache.clear()
        self.ns_info = ns
        self.members = new_members
        self.member_change = None
        self.awaiting_new_epoch = self.storage.awaiting_new_epoch()
        # A format starts a journal no node had data for: it votes at once (see restore_version).
        self.amnesiac = self.storage.amnesiac()
        self.last_promised_epoch = kept
        self.last_writer_epoch = 0
        self.committed_txid = None
        self.highest_written_txid = 0
        self.current_epoch_ipc_serial = -1
        self.last_used = None
        self._committed_fd = self.storage.open_committed_txid()
        log.info("journal %s formatted: %s", self.jid, ns.describe())

    def _check_not_in_use(self, ns: NamespaceInfo, force: bool) -> None:
        """Refuse to format a journal in use unless forced for its own namespace (§J.8)."""
        idle = None if self.last_used is None else self.clock() - self.last_used
        why = rules.check_format_in_use(self.state(), self.ns_info, ns, force, idle)
        if why is not None:
            log.warning("journal %s: formatting it although %s (forced)", self.jid, why)

    def _promise_on_disk(self) -> int:
        """The last-promised-epoch file's value, also when VERSION is lost; 0 if unreadable."""
        try:
            return self._read_epoch(LAST_PROMISED_EPOCH)
        except (StorageError, ValueError):
            return 0

    def get_journal_state(self) -> int:
        """The last promised epoch."""
        self.check_formatted()
        return self.last_promised_epoch

    def new_epoch(self, ns: NamespaceInfo, epoch: int, members: Sequence[str] = ()) -> int | None:
        """Promise an epoch (Paxos phase 1) and return the newest non-empty segment's txid."""
        self._check_ns(ns)
        rules.check_members(self.jid, members, self.members, self.member_change)
        rules.check_new_epoch(self.state(), epoch)
        now = self.clock()
        self.idle_before_promise_s = max(0.0, now - self.writer_seen_at)
        self.writer_seen_at = now  # a promise starts the new writer's lease too
        self._set_promised_epoch(epoch)
        if self.awaiting_new_epoch is not None:
            self.storage.set_awaiting_new_epoch(None)
            self.awaiting_new_epoch = None
        self.abort_open_segment()  # _set_promised_epoch cleared the old writer's cache
        roll_forward_half_done_accepts(self)
        latest = self.files.scan_for_latest_edits()
        log.info("journal %s: promised epoch %d; latest segment %s", self.jid, epoch, latest)
        return latest.start_txid if latest else None

    def change_members(
        self,
        ns: NamespaceInfo,
        old: Sequence[str],
        new: Sequence[str],
        joining: bool = False,
        promised_epoch: int = 0,
    ) -> pb.ChangeMembersResponseProto:
        """This node's part of a member change from old to new (docs/design.md §J.7).

        Checks the rule, then records the change (its epoch: this node's promise now, and
        both sets) before the new members, so a crash between the two is completed by a
        rerun. A node that joins is amnesiac until a writer starts a segment on it; one
        without storage is restored for ns with promised_epoch. A rerun on a node that holds
        the new members already succeeds and changes nothing else.
        HDFS keeps no member list, so any URI may write and a replaced host needs nothing;
        here the list guards new_epoch, and this is the one way to change it.
        """
        rules.check_member_addresses(old, "old")
        rules.check_member_addresses(new, "new")
        change = check_member_change(old, new)
        if self.ns_info is None:
            return self._join_without_storage(ns, change, joining, promised_epoch)
        self._check_ns(ns)
        step = rules.member_change_step(
            self.state(), self.members, self.member_change, change, joining
        )
        if step.record is not None:
            self.storage.write_member_change(step.record)
            self.member_change = step.record
        if step.mark_joined:
            self._set_amnesiac(_joined(step.epoch))
        if step.already_changed:
            return pb.ChangeMembersResponseProto(change_epoch=step.epoch, already_changed=True)
        self.storage.write_members(list(change.new))
        self.members = list(change.new)
        log.warning(
            "journal %s: members changed in epoch %d: %s",
            self.jid,
            step.epoch,
            change.describe(),
        )
        return pb.ChangeMembersResponseProto(change_epoch=step.epoch)

    def _join_without_storage(
        self, ns: NamespaceInfo, change: MemberChange, joining: bool, promised_epoch: int
    ) -> pb.ChangeMembersResponseProto:
        """Set up a joining node that has no storage: VERSION, the promise, the new members."""
        rules.check_join_without_storage(self.state(), change, joining)
        epoch = max(promised_epoch, self._promise_on_disk())
        # The record first: a crash before VERSION leaves unformatted storage and a rerun.
        self.storage.write_member_change(MemberChangeRecord(epoch, change.old, change.new))
        self.restore_version(ns, epoch, change.new, why=_joined(epoch))
        log.warning(
            "journal %s: joined in a member change (%s), promised epoch %d",
            self.jid,
            change.describe(),
            epoch,
        )
        return pb.ChangeMembersResponseProto(change_epoch=epoch)

    def _set_amnesiac(self, why: str) -> None:
        self.storage.set_amnesiac(why)
        self.amnesiac = why

    def start_log_segment(self, req: pb.RequestInfoProto, txid: int, layout_version: int) -> None:
        """Open edits_inprogress_<txid> for the writer of req's epoch."""
        state = self.state()
        plain = self.check_writer_call(req, state)
        layout_version = rules.start_layout_version(
            txid, layout_version, LAYOUT_VERSION, EDITLOG_LENGTH_LAYOUT
        )
        existing = self.files.find_segment(txid)
        if existing is not None:
            if not existing.in_progress:
                raise SegmentExistsError(
                    f"already have a finalized segment {existing.path.name} beginning at "
                    f"txid {txid} (journal {self.jid!r})"
                )
            found = self.files.scan(existing.path)
            if found.num_ops > 1:
                raise SegmentExistsError(
                    f"already have an in-progress segment {existing.path.name} beginning at "
                    f"txid {txid} which holds valid transactions up to {found.last_txid}; "
                    "refusing to overwrite it"
                )
        rules.check_segment_start(state, plain, txid, restart=existing is not None)
        if self._misses_txids_below(txid):
            # This node was down or out of sync for some txids: the syncer fetches them
            # now rather than at its next interval.
            self.on_gap()
        self.record_request(plain, state)
        if self.cur_segment_txid is not None:
            log.warning(
                "journal %s: starting segment %d while segment %s is open; aborting it",
                self.jid,
                txid,
                self.cur_segment_txid,
            )
            self.abort_open_segment()
        if req.epoch != self.last_writer_epoch:
            self.storage.write_long(LAST_WRITER_EPOCH, req.epoch)
            self.last_writer_epoch = req.epoch
        self.storage.purge_paxos(txid)
        self.files.open_segment(txid, layout_version)
        self._next_txid = txid
        self._cur_layout = layout_version
        if self.amnesiac is not None:
            # A writer that started a segment here recovered without this node; from now
            # on its data is real, so it votes in recovery again.
            self.storage.set_amnesiac(None)
            self.amnesiac = None
            log.info("journal %s: votes in recovery again (segment %d started)", self.jid, txid)
        log.info("journal %s: started segment %d in epoch %d", self.jid, txid, req.epoch)

    def _misses_txids_below(self, txid: int) -> bool:
        """True when the finalized segments here leave a hole before txid."""
        if txid > self.highest_written_txid + 1:
            return True
        return self.files.finalized_gap_below(txid)

    def journal(
        self,
        req: pb.RequestInfoProto,
        segment_txid: int,
        first_txid: int,
        num_txns: int,
        records: bytes,
    ) -> None:
        """Append a batch to the open segment and fsync it before returning."""
        state = self.state()  # once per call: the checks and the record share it
        plain = self.check_writer_call(req, state)
        rules.check_writer_epoch(state, plain)
        rules.check_batch(state, self._next_txid, segment_txid, first_txid, num_txns)
        offsets: list[int] = []
        if num_txns:
            try:
                offsets = validate_batch(records, first_txid, num_txns)
            except EditLogError as e:
                raise InvalidRequestError(
                    f"malformed batch for journal {self.jid!r}: {e}"
                ) from None
        elif records:
            raise InvalidRequestError("a batch of 0 txns must carry no records")
        last_txid = first_txid + num_txns - 1
        # Behind a committed txid recorded before this request: counted, as HDFS counts it,
        # and fsynced all the same. rules.committed_txid_to_record never records one above
        # what this node holds, so a claimed committed txid cannot talk a node out of its fsync.
        lagging = self.committed_txid is not None and last_txid <= self.committed_txid
        self.record_request(plain, state, written_through=last_txid if num_txns else None)
        if not num_txns:
            return
        path = self.files.open_path
        try:
            self.files.append(records)
            started = time.perf_counter()
            self.files.sync()
            took = time.perf_counter() - started
            self.counters.observe_sync(took)
            if took > SLOW_SYNC_SECONDS:
                log.warning("journal %s: sync of %d txns took %.3fs", self.jid, num_txns, took)
        except OSError as e:
            # The segment's tail is now unknown: stop writing it until the next segment.
            self.abort_open_segment()
            raise StorageError(
                f"writing txids {first_txid}-{last_txid} to {path} failed: "
                f"{e.strerror or e}; the segment is closed until the writer starts a new one"
            ) from None
        self.cache.store(records, first_txid, offsets, self._cur_layout)
        self._next_txid = last_txid + 1
        self.highest_written_txid = last_txid
        c = self.counters
        c.batches_written += 1
        c.txns_written += num_txns
        c.bytes_written += len(records)
        c.last_journal_timestamp = time.time()
        if lagging:
            c.batches_written_while_lagging += 1
        self.on_progress()

    def heartbeat(self, req: pb.RequestInfoProto, release_lease: bool = False) -> None:
        """Check and record a request that carries no edits.

        release_lease: the writer answers no client as active any more, so until the next
        promise no newer writer need wait for its lease (design §N.1).
        """
        state = self.state()
        self.record_request(self.check_writer_call(req, state), state)
        if release_lease:
            self.writer_seen_at = -math.inf
            log.info("journal %s: the writer of epoch %d released its lease", self.jid, req.epoch)

    def finalize_log_segment(
        self, req: pb.RequestInfoProto, start_txid: int, end_txid: int
    ) -> None:
        """Close a segment at end_txid and rename it edits_<start>-<end>."""
        state = self.state()
        plain = self.check_writer_call(req, state)
        rules.check_finalize_range(state, start_txid, end_txid)
        existing = self.files.find_segment(start_txid)
        if existing is None:
            raise NoSuchSegmentError(
                f"no log file to finalize at transaction id {start_txid} (journal {self.jid!r})"
            )
        if not existing.in_progress:
            assert existing.end is not None
            rules.check_refinalize(existing.path.name, existing.end, end_txid)
            # The decision stays as recorded: a recovery of this epoch that accepted this
            # copy recorded its epoch already (finish_accept_recovery); a bare finalize must
            # not make an older decision look newer.
            self.record_request(plain, state)
            return
        rules.check_may_finalize(
            state,
            plain,
            start_txid,
            end_txid,
            self._accepted(start_txid),
            plain.epoch == self.last_writer_epoch and self._is_current_writers(start_txid),
        )
        if self.cur_segment_txid == start_txid:
            rules.check_finalize_end(start_txid, end_txid, self._next_txid - 1, open=True)
            self.record_request(plain, state)
            valid_length = self.files.close_open()
        else:
            found = self.files.scan(existing.path)
            rules.check_finalize_end(start_txid, end_txid, found.last_txid, open=False)
            self.record_request(plain, state)
            valid_length = found.valid_length
        # The decision first: a crash before the rename leaves the in-progress file and a
        # record saying it was decided finalized in this epoch, which prepare_recovery
        # reports as it would the renamed file (design §J.3).
        self.record_decision(start_txid, end_txid, req.epoch, valid_length)
        self.files.finalize(existing, end_txid, valid_length)
        log.info(
            "journal %s: finalized segment %d-%d in epoch %d",
            self.jid,
            start_txid,
            end_txid,
            req.epoch,
        )
        if self._misses_txids_below(start_txid):
            self.on_gap()  # e.g. a recovery just gave this node a segment past a hole

    def record_decision(self, start: int, end: int, epoch: int, byte_length: int = 0) -> None:
        """Persist the epoch that decided the finalized segment start-end (design §J.3).

        Kept as the segment's paxos record, so that it lives and dies with the segment as
        paxos records already do (purge, discard, a bad copy moved aside, format). HDFS
        purges the paxos data at finalize and keeps no such epoch: a finalized copy then
        carries no evidence of which writer decided it, and a deposed writer's finalize
        can win a later recovery.
        """
        state = pb.SegmentStateProto(
            start_txid=start, end_txid=end, is_in_progress=False, byte_length=byte_length
        )
        self.storage.write_paxos(
            start, pb.PersistedRecoveryPaxosData(segment_state=state, accepted_in_epoch=epoch)
        )

    def decided_epoch(self, start: int, end: int) -> int | None:
        """The epoch that decided this node's finalized segment start-end; None if unknown."""
        record = self.storage.read_paxos(start)
        if record is None or record.segment_state.end_txid != end:
            return None
        return int(record.accepted_in_epoch)

    def _accepted(self, start: int) -> Accepted | None:
        """The paxos record of the segment at start, as the rules read it."""
        record = self.storage.read_paxos(start)
        if record is None:
            return None
        return Accepted(record.segment_state.end_txid, record.accepted_in_epoch)

    def purge_logs_older_than(self, req: pb.RequestInfoProto, min_txid_to_keep: int) -> int:
        """Delete finalized segments and paxos files wholly below a txid; return the count."""
        state = self.state()
        plain = self.check_writer_call(req, state)
        rules.check_purge(state, min_txid_to_keep)
        self.record_request(plain, state)
        removed = self.files.purge_older_than(min_txid_to_keep)
        kept = {seg.start for seg in self.files.segments()}
        for txid in self.storage.paxos_txids():
            if txid < min_txid_to_keep and txid not in kept:  # a kept segment keeps its record
                self.storage.purge_paxos(txid)
        log.info(
            "journal %s: purged %d segments below txid %d", self.jid, removed, min_txid_to_keep
        )
        return removed

    def discard_segments(self, req: pb.RequestInfoProto | None, start_txid: int) -> int:
        """Delete every segment from start_txid on (rolling-upgrade rollback); return the count.

        HDFS's discardSegments carries no epoch and is taken whenever it comes. Here it is a
        writer call like any other (design §J.8): it needs the epoch this node promised
        last, so its caller fenced every writer, from a caller that has not started a
        segment in that epoch (so none is open). It is refused when it
        would cut a segment in two; then, as in HDFS, it deletes the segments (finalized and
        in progress) from start_txid on with their paxos files and sets the committed txid
        to start_txid - 1.
        """
        state = self.state()
        if req is None:
            raise rules.discard_without_epoch(state, start_txid)
        plain = self.check_writer_call(req, state)
        rules.check_discard(state, plain, start_txid)
        segments = self.files.segments()
        spans = [
            (
                seg.path.name,
                seg.start,
                seg.end if seg.end is not None else self.files.last_txid(seg),
            )
            for seg in segments
        ]
        doomed = [segments[i] for i in rules.segments_to_discard(state, start_txid, spans)]
        self.record_request(plain, state)
        self.files.remove(doomed)
        for txid in self.storage.paxos_txids():
            if txid >= start_txid:
                self.storage.purge_paxos(txid)
        self.cache.clear()
        self.refresh_highest_written_txid()
        if self.committed_txid is not None and self.committed_txid >= start_txid:
            # The one place the committed txid goes down: a rollback gives up those txids
            # on purpose, and the caller's promise fenced every writer that reported them
            # committed. HDFS sets it to start_txid - 1 also when that is higher; it is
            # only lowered here, never above what this node holds (rules.committed_txid_to_record).
            self._set_committed_txid(start_txid - 1)
        log.info(
            "journal %s: discarded %d segments from txid %d in epoch %d",
            self.jid,
            len(doomed),
            start_txid,
            req.epoch,
        )
        return len(doomed)

    def get_edit_log_manifest(
        self, since_txid: int, in_progress_ok: bool, *, all_in_progress: bool = False
    ) -> list[SegmentInfo]:
        """The segments holding txids at or after since_txid; in-progress ones if visible."""
        self.check_formatted()
        out: list[SegmentInfo] = []
        segments = self.files.segments()
        for seg in segments:
            if seg.end is not None:
                if seg.end >= since_txid:
                    decided = self.decided_epoch(seg.start, seg.end)
                    out.append(SegmentInfo(seg.start, seg.end, False, decided_epoch=decided))
            elif (
                in_progress_ok
                and self.files.is_latest_inprogress(seg, segments)
                and not any(o.start == seg.start and o.end is not None for o in segments)
                and (all_in_progress or self._is_current_writers(seg.start, segments))
            ):
                if seg.start == self.cur_segment_txid:
                    end = self._next_txid - 1
                else:
                    end = self.files.scan(seg.path).last_txid or seg.start - 1
                if end >= seg.start and end >= since_txid:
                    out.append(SegmentInfo(seg.start, end, True))
        return out

    def prepare_recovery(
        self, req: pb.RequestInfoProto, segment_txid: int
    ) -> pb.PrepareRecoveryResponseProto:
        """Paxos phase 1b for a segment: what this node holds and what it accepted."""
        state = self.state()
        plain = self.check_writer_call(req, state)
        rules.check_may_vote(state, segment_txid)
        self.record_request(plain, state)
        self.abort_open_segment()
        roll_forward_half_done_accepts(self)
        self._refuse_tombstoned(segment_txid)
        accepted = self.storage.read_paxos(segment_txid)
        seg = self.files.segment_info(segment_txid)
        resp = pb.PrepareRecoveryResponseProto(last_writer_epoch=self.last_writer_epoch)
        if accepted is not None and (seg is None or seg.is_in_progress):
            acc = accepted.segment_state
            rules.check_accepted_matches(
                self.state(),
                segment_txid,
                seg.end_txid if seg is not None else None,
                describe_state(acc),
                acc.end_txid,
            )
            resp.accepted_in_epoch = accepted.accepted_in_epoch
            resp.segment_state.CopyFrom(acc)
        elif seg is not None:
            resp.segment_state.CopyFrom(_segment_proto(seg))
            if accepted is not None and accepted.segment_state.end_txid == seg.end_txid:
                # The epoch of the recovery that decided this finalized copy (see
                # _keep_paxos_of_finalized): a seen epoch, like an in-progress copy's.
                resp.accepted_in_epoch = accepted.accepted_in_epoch
        if self.committed_txid is not None:
            resp.last_committed_txid = self.committed_txid
        log.info(
            "journal %s: prepared recovery of segment %d: %s",
            self.jid,
            segment_txid,
            str(resp).replace("\n", " "),
        )
        return resp

    def _refuse_tombstoned(self, segment_txid: int) -> None:
        """Fail when a finalized segment at segment_txid was moved aside and not replaced.

        The moved-aside file (see _check_finalized) is a tombstone: this node held those
        txids, so answering "absent" could let a quorum truncate them. HDFS has no such
        file and would answer "absent".
        """
        dead = self.files.tombstone(segment_txid)
        if dead is not None:
            raise TombstonedSegmentError(
                f"journal {self.jid!r}: finalized segment {segment_txid} was moved aside as "
                f"{dead.name} because it was bad, and no good copy is back; refusing to "
                "answer prepare_recovery as if this node never had it (the syncer fetches "
                "a good copy from a peer)"
            )

    def get_journaled_edits(
        self, since_txid: int, max_txns: int
    ) -> pb.GetJournaledEditsResponseProto:
        """Recent edits from memory; thread-safe, so callers need not use the journal thread."""
        self.check_formatted()
        if since_txid <= 0 or max_txns <= 0:
            raise InvalidRequestError(
                f"since_txid and max_txns must be positive, got {since_txid} and {max_txns}"
            )
        writer, promise = self.last_writer_epoch, self.last_promised_epoch
        resp = pb.GetJournaledEditsResponseProto(
            txn_count=0,
            highest_written_txid=self.highest_written_txid,
            last_writer_epoch=writer,
            last_promised_epoch=promise,
        )
        committed = self.committed_txid
        if committed is not None:
            resp.committed_txid = committed
        if self.amnesiac is not None:
            resp.restored = True
        c = self.counters
        # The cache only ever holds the current writer's batches, and is served only
        # while that writer still holds the promise.
        if not rules.serves_cached_edits(self.state(), since_txid):
            c.rpc_empty_responses += 1
            return resp
        try:
            count, data = self.cache.retrieve(since_txid, max_txns)
        except CacheMissError:
            c.rpc_cache_misses += 1
            raise
        resp.txn_count = count
        resp.edit_log = data
        c.txns_served_via_rpc += count
        c.bytes_served_via_rpc += len(data)
        return resp

    def poll_journaled_edits(
        self, since_txid: int, max_txns: int
    ) -> tuple[pb.GetJournaledEditsResponseProto, bool]:
        """get_journaled_edits, and whether a long poll may answer with it before its deadline.

        A waiting reader is answered early only with edits it may read: some txns, and a
        committed txid at or past since_txid. Otherwise the poll waits for progress and
        answers with whatever is there when its time is up.
        """
        resp = self.get_journaled_edits(since_txid, max_txns)
        visible = (
            resp.txn_count > 0
            and resp.HasField("committed_txid")
            and resp.committed_txid >= since_txid
        )
        return resp, visible

    # -- lost storage (the syncer, a member change) ---------------------------------------------
    def restore_version(
        self,
        ns: NamespaceInfo,
        promised_epoch: int,
        members: Sequence[str] | None = None,
        why: str | None = None,
    ) -> bool:
        """Re-create a lost VERSION (and members) for a namespace; False if already formatted.

        why is the markers' reason; None: restored from peers after a loss.
        """
        if self.ns_info is not None:
            return False
        self.storage.restore_version(ns, promised_epoch, members, why)
        self._load()
        log.warning(
            "journal %s: re-created VERSION from a peer (%s), promised epoch %d",
            self.jid,
            ns.describe(),
            self.last_promised_epoch,
        )
        return True

    # -- serving segments -------------------------------------------------------------------
    def check_storage_info(self, theirs: StorageInfo) -> None:
        """Refuse a segment fetch whose storageInfo names another namespace than ours."""
        mine = self.check_formatted()
        if not same_namespace(mine, theirs):
            ours = StorageInfo(mine.layout_version, mine.namespace_id, mine.ctime, mine.cluster_id)
            raise StorageInfoMismatchError(
                f"This node has storage info '{ours}' but the requesting node expected '{theirs}'"
            )

    def segment_for(self, q: GetJournalQuery) -> tuple[Path, int] | None:
        """What /getJournal serves for a query: the file and valid length, or None (404)."""
        if q.storage_info is not None:
            self.check_storage_info(q.storage_info)
        return self.segment_path(q.segment_txid, q.in_progress_ok, q.recovery_epoch)

    def segment_path(
        self, segment_txid: int, in_progress_ok: bool, recovery_epoch: int = 0
    ) -> tuple[Path, int] | None:
        """The file and valid length to serve for a segment, or None.

        An in-progress segment is served to readers only when it is the current writer's
        (_is_current_writers), and to a recovery only in the epoch this node promised last.
        """
        self.check_formatted()
        seg = self.files.find_segment(segment_txid)
        if seg is None:
            return None
        if not seg.in_progress:
            problem = self._check_finalized(seg)
            if problem is not None:
                raise BadFinalizedSegmentError(
                    f"finalized segment {seg.path.name} of journal {self.jid!r} is bad "
                    f"({problem}); moved aside, a peer's copy will replace it"
                )
            return seg.path, seg.path.stat().st_size
        if not in_progress_ok:
            return None
        for_recovery = rules.serves_for_recovery(self.state(), recovery_epoch)
        if not (for_recovery or self._is_current_writers(segment_txid)):
            return None
        length = self.files.servable_length(seg)
        return None if length is None else (seg.path, length)

    # -- internals ---------------------------------------------------------------------------
    def abort_open_segment(self) -> None:
        """Close the segment open for the writer, if any, without finalizing it."""
        self.files.abort_open()

    def refresh_highest_written_txid(self) -> None:
        """Re-read the highest written txid from the segment files (after they changed)."""
        latest = self.files.scan_for_latest_edits()
        self.highest_written_txid = latest.end_txid if latest else 0

    def fetch_segment(self, url: str, dest: Path, limits: FetchLimits) -> None:
        """Download a segment from url into dest within limits (a test's stand-in, if set)."""
        if self._fetch is not None:
            self._fetch(url, dest)
        else:
            self.fetcher.fetch(url, dest, limits)

    def _check_finalized(self, seg: SegmentFile) -> str | None:
        """None if a finalized segment holds exactly its named range; else it is moved aside."""
        return self.files.check_finalized(seg)

    def _forget_moved_aside(self, seg: SegmentFile) -> None:
        """Forget the kept decision of a finalized segment moved aside as bad.

        Without its file, a kept decision (_keep_paxos_of_finalized) names a segment this
        node no longer holds: forget it, as if finalize had purged it (HDFS does).
        """
        accepted = self.storage.read_paxos(seg.start)
        if accepted is not None and accepted.segment_state.end_txid == seg.end:
            self.storage.purge_paxos(seg.start)


def _joined(epoch: int) -> str:
    """The amnesiac reason of a node that joined in a member change."""
    return f"joined the journal in a member change (epoch {epoch})"


def _read(path: Path, read: Callable[[], T]) -> T:
    """Run a metadata read, turning any failure into a StorageError naming the file."""
    try:
        return read()
    except StorageError as e:
        if str(path) in str(e):
            raise
        raise StorageError(f"{path}: {e}") from None
    except UnicodeDecodeError as e:
        raise StorageError(
            f"{path} holds bytes that are not text (byte 0x{e.object[e.start]:02x} at "
            f"offset {e.start}); the file is corrupt"
        ) from None
    except OSError as e:
        raise StorageError(f"cannot read {path}: {e.strerror or e}") from None
    except (ValueError, OverflowError) as e:
        raise StorageError(f"{path} is corrupt: {e}") from None
