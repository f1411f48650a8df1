"""One journal on a JournalNode: the acceptor side of the protocol (design 2.3-2.9).

Blocking and single-threaded by contract: the daemon runs every call of one journal on
that journal's own thread, so calls apply in arrival order and disk work stays off the
event loop. Every method checks all its preconditions before it changes anything.
"""

from __future__ import annotations

import logging
import os
import struct
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from qjm.editlog.framing import (
    EDITLOG_LENGTH_LAYOUT,
    LAYOUT_VERSION,
    ScanResult,
    iter_ops,
    validate_batch,
)
from qjm.editlog.segments import (
    SegmentFile,
    SegmentWriter,
    finalized_name,
    fsync_dir,
    inprogress_name,
    scan_file,
)
from qjm.errors import EditLogError
from qjm.journalnode.edits_cache import JournaledEditsCache
from qjm.journalnode.storage import (
    LAST_PROMISED_EPOCH,
    LAST_WRITER_EPOCH,
    JNStorage,
    NsInfo,
)
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import (
    CacheMissError,
    EpochError,
    InvalidRequestError,
    JournalNotFormattedError,
    JournalOutOfSyncError,
    NamespaceMismatchError,
    SegmentStateError,
    StorageError,
)

log = logging.getLogger("qjm.journalnode.journal")
T = TypeVar("T")
SLOW_SYNC_SECONDS = 1.0
DEFAULT_CACHE_BYTES = 1024 * 1024  # HDFS's dfs.journalnode.edit-cache-size.bytes
DOWNLOAD_TIMEOUT_SECONDS = 30.0  # HDFS's dfs.edit.log.transfer.timeout


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


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    """A segment as found on disk: its range and whether it is still open."""

    start_txid: int
    end_txid: int
    is_in_progress: bool

    def to_proto(self) -> pb.SegmentState:
        """The wire message."""
        return pb.SegmentState(
            start_txid=self.start_txid,
            end_txid=self.end_txid,
            is_in_progress=self.is_in_progress,
        )


def _describe(seg: pb.SegmentState) -> str:
    kind = "in progress" if seg.is_in_progress else "finalized"
    return f"{seg.start_txid}-{seg.end_txid} ({kind})"


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
        self._fetch = fetch or download_segment
        self.ns_info: NsInfo | None = None
        self.last_promised_epoch = 0
        self.last_writer_epoch = 0
        self.committed_txid: int | None = None
        self.highest_written_txid = 0
        self.current_epoch_ipc_serial = -1
        self._writer: SegmentWriter | None = None
        self.cur_segment_txid: int | None = None
        self._next_txid = 0
        self._cur_layout = LAYOUT_VERSION
        self._committed_fd = -1
        self.cache = JournaledEditsCache(cache_bytes)
        # Called on the journal thread after new edits or a new committed txid (long polls).
        self.on_progress: Callable[[], None] = lambda: None
        storage.lock()
        try:
            self._load()
        except BaseException:
            storage.unlock()
            raise

    # -- lifecycle -----------------------------------------------------------------------
    def _load(self) -> None:
        """Read the persisted state and the newest segment."""
        if not self.storage.is_formatted():
            return
        self.ns_info = self.storage.read_version()
        self.last_promised_epoch = self.storage.read_long(LAST_PROMISED_EPOCH, 0)
        self.last_writer_epoch = self.storage.read_long(LAST_WRITER_EPOCH, 0)
        self.committed_txid = self.storage.read_committed_txid()
        self._committed_fd = self.storage.open_committed_txid()
        latest = self._scan_for_latest_edits()
        if latest is not None:
            self.highest_written_txid = latest.end_txid

    def close(self) -> None:
        """Close the open segment and release the storage lock."""
        self._abort_cur_segment()
        if self._committed_fd >= 0:
            os.close(self._committed_fd)
            self._committed_fd = -1
        self.storage.unlock()

    # -- checks ------------------------------------------------------------------------------
    def _check_formatted(self) -> NsInfo:
        if self.ns_info is None:
            raise JournalNotFormattedError(
                f"journal {self.jid!r} is not formatted on this JournalNode "
                f"(storage {self.storage.root}); run `qjm journal format`"
            )
        return self.ns_info

    def _check_ns(self, ns: NsInfo) -> None:
        mine = self._check_formatted()
        if (ns.namespace_id, ns.cluster_id) != (mine.namespace_id, mine.cluster_id):
            raise NamespaceMismatchError(
                f"incompatible namespace for journal {self.jid!r}: the request has "
                f"{ns.describe()}, this JournalNode is formatted for {mine.describe()}"
            )

    def _check_request(self, req: pb.RequestInfo) -> None:
        """Validate epoch, serial and committed txid without changing anything."""
        self._check_formatted()
        if req.epoch <= 0:
            raise InvalidRequestError(
                f"request for journal {self.jid!r} carries no epoch ({req.epoch}); a writer "
                "must win new_epoch first"
            )
        if req.epoch < self.last_promised_epoch:
            raise EpochError(
                f"IPC's epoch {req.epoch} is less than the last promised epoch "
                f"{self.last_promised_epoch} (journal {self.jid!r}): a newer writer has "
                "taken over"
            )
        if req.epoch > self.last_promised_epoch:
            # HDFS raises the promise from any request; we raise it only in new_epoch, so
            # every writer passes new_epoch's checks (namespace, membership, a restored
            # node's marker) and the edits cache is cleared with every promise.
            raise EpochError(
                f"epoch {req.epoch} was never promised here (last promise "
                f"{self.last_promised_epoch}, journal {self.jid!r}); call new_epoch first"
            )
        if (
            req.epoch == self.last_promised_epoch
            and req.ipc_serial <= self.current_epoch_ipc_serial
        ):
            raise JournalOutOfSyncError(
                f"IPC serial {req.ipc_serial} in epoch {req.epoch} is not higher than the "
                f"prior serial {self.current_epoch_ipc_serial} (journal {self.jid!r})"
            )
        if (
            req.HasField("committed_txid")
            and self.committed_txid is not None
            and req.committed_txid < self.committed_txid
        ):
            raise InvalidRequestError(
                f"client tried to move the committed txid backward from "
                f"{self.committed_txid} to {req.committed_txid} (journal {self.jid!r})"
            )

    def _apply_request(self, req: pb.RequestInfo) -> None:
        """Record what a checked request tells: a newer epoch, its serial, committed txid."""
        if req.epoch > self.last_promised_epoch:
            log.info(
                "journal %s: raising promised epoch %d -> %d from a request",
                self.jid,
                self.last_promised_epoch,
                req.epoch,
            )
            self._set_promised_epoch(req.epoch)
        self.current_epoch_ipc_serial = req.ipc_serial
        if req.HasField("committed_txid") and req.committed_txid != self.committed_txid:
            self._set_committed_txid(req.committed_txid)
            self.on_progress()

    def _check_writer_epoch(self, req: pb.RequestInfo) -> None:
        if req.epoch != self.last_writer_epoch:
            raise EpochError(
                f"IPC's epoch {req.epoch} is not the current writer epoch "
                f"{self.last_writer_epoch} (journal {self.jid!r}): start a segment first"
            )

    # -- persisted setters ------------------------------------------------------------------
    def _set_promised_epoch(self, epoch: int) -> None:
        self.storage.write_long(LAST_PROMISED_EPOCH, epoch)
        self.last_promised_epoch = epoch
        self.current_epoch_ipc_serial = -1

    def _set_committed_txid(self, txid: int) -> None:
        os.pwrite(self._committed_fd, struct.pack(">q", txid), 0)
        self.committed_txid = txid

    # -- RPCs ------------------------------------------------------------------------------
    def is_formatted(self) -> bool:
        """True when the journal has formatted storage."""
        return self.ns_info is not None

    def format(self, ns: NsInfo, force: bool) -> None:
        """Format the storage for a namespace; refuse a non-empty one without force."""
        if self.storage.has_data() and not force:
            raise StorageError(
                f"can't format the storage directory {self.storage.current} because it is "
                "not empty; pass --force to wipe it"
            )
        self._abort_cur_segment()
        if self._committed_fd >= 0:
            os.close(self._committed_fd)
            self._committed_fd = -1
        self.storage.format(ns)
        self.cache.clear()
        self.ns_info = ns
        self.last_promised_epoch = 0
        self.last_writer_epoch = 0
        self.committed_txid = None
        self.highest_written_txid = 0
        self.current_epoch_ipc_serial = -1
        self._committed_fd = self.storage.open_committed_txid()
        log.info("journal %s formatted: %s", self.jid, ns.describe())

    def get_journal_state(self) -> int:
        """The last promised epoch."""
        self._check_formatted()
        return self.last_promised_epoch

    def new_epoch(self, ns: NsInfo, epoch: int) -> int | None:
        """Promise an epoch (Paxos phase 1) and return the newest non-empty segment's txid."""
        self._check_ns(ns)
        if epoch <= self.last_promised_epoch:
            raise EpochError(
                f"proposed epoch {epoch} <= last promise {self.last_promised_epoch} "
                f"(journal {self.jid!r})"
            )
        self._set_promised_epoch(epoch)
        self._abort_cur_segment()
        self.cache.clear()  # a new writer may recover a shorter log; never serve the old tail
        latest = self._scan_for_latest_edits()
        log.info("journal %s: promised epoch %d; latest segment %s", self.jid, epoch, latest)
        return latest.start_txid if latest else None

    def start_log_segment(self, req: pb.RequestInfo, txid: int, layout_version: int) -> None:
        """Open edits_inprogress_<txid> for the writer of req's epoch."""
        self._check_request(req)
        if txid <= 0:
            raise InvalidRequestError(f"segment start txid must be positive, got {txid}")
        if layout_version == 0:
            layout_version = LAYOUT_VERSION
        if layout_version > EDITLOG_LENGTH_LAYOUT:
            raise InvalidRequestError(
                f"layout version {layout_version} is not supported (need "
                f"{EDITLOG_LENGTH_LAYOUT} or newer, i.e. smaller)"
            )
        existing = self._find_segment(txid)
        if existing is not None:
            if not existing.in_progress:
                raise SegmentStateError(
                    f"already have a finalized segment {existing.path.name} beginning at "
                    f"txid {txid} (journal {self.jid!r})"
                )
            found = scan_file(existing.path)
            if found.num_ops > 1:
                raise SegmentStateError(
                    f"already have an in-progress segment {existing.path.name} beginning at "
                    f"txid {txid} which holds valid transactions up to {found.last_txid}; "
                    "refusing to overwrite it"
                )
        self._apply_request(req)
        if self._writer is not None:
            log.warning(
                "journal %s: starting segment %d while segment %s is open; aborting it",
                self.jid,
                txid,
                self.cur_segment_txid,
            )
            self._abort_cur_segment()
        if req.epoch != self.last_writer_epoch:
            self.storage.write_long(LAST_WRITER_EPOCH, req.epoch)
            self.last_writer_epoch = req.epoch
        self.storage.purge_paxos(txid)
        path = self.storage.current / inprogress_name(txid)
        self._writer = self._io(lambda: SegmentWriter.create(path, layout_version), path)
        self.cur_segment_txid = txid
        self._next_txid = txid
        self._cur_layout = layout_version
        log.info("journal %s: started segment %d in epoch %d", self.jid, txid, req.epoch)

    def journal(
        self,
        req: pb.RequestInfo,
        segment_txid: int,
        first_txid: int,
        num_txns: int,
        records: bytes,
    ) -> None:
        """Append a batch to the open segment and fsync it before returning."""
        self._check_request(req)
        self._check_writer_epoch(req)
        if self._writer is None or self.cur_segment_txid is None:
            raise JournalOutOfSyncError(
                f"can't write txid {first_txid}: no segment is open on journal {self.jid!r}"
            )
        if segment_txid != self.cur_segment_txid:
            raise JournalOutOfSyncError(
                f"writer out of sync: it writes segment {segment_txid} but the open segment "
                f"is {self.cur_segment_txid} (journal {self.jid!r})"
            )
        if first_txid != self._next_txid:
            raise JournalOutOfSyncError(
                f"can't write txid {first_txid}: expecting next txid {self._next_txid} "
                f"(journal {self.jid!r}); gaps and reordering are refused"
            )
        if num_txns < 0:
            raise InvalidRequestError(f"num_txns must not be negative, got {num_txns}")
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
        self._apply_request(req)
        if not num_txns:
            return
        writer = self._writer
        last_txid = first_txid + num_txns - 1
        lagging = self.committed_txid is not None and last_txid <= self.committed_txid
        try:
            writer.write(records)
            if not lagging:
                started = time.perf_counter()
                writer.sync()
                took = time.perf_counter() - started
                self.counters.observe_sync(took)
                if took > SLOW_SYNC_SECONDS:
                    log.warning("journal %s: sync of %d txns took %.3fs", self.jid, num_txns, took)
        except OSError as e:
            # The segment's tail is now unknown: stop writing it until the next segment.
            self._abort_cur_segment()
            raise StorageError(
                f"writing txids {first_txid}-{last_txid} to {writer.path} failed: "
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

    def heartbeat(self, req: pb.RequestInfo) -> None:
        """Check and record a request that carries no edits."""
        self._check_request(req)
        self._apply_request(req)

    def finalize_log_segment(self, req: pb.RequestInfo, start_txid: int, end_txid: int) -> None:
        """Close a segment at end_txid and rename it edits_<start>-<end>."""
        self._check_request(req)
        if end_txid < start_txid - 1:
            raise InvalidRequestError(
                f"can't finalize segment {start_txid} at end {end_txid}: end before start"
            )
        existing = self._find_segment(start_txid)
        if existing is None:
            raise SegmentStateError(
                f"no log file to finalize at transaction id {start_txid} (journal {self.jid!r})"
            )
        if not existing.in_progress:
            if existing.end != end_txid:
                raise SegmentStateError(
                    f"trying to re-finalize already finalized segment {existing.path.name} "
                    f"with a different end txid {end_txid}"
                )
            self._apply_request(req)
            self.storage.purge_paxos(start_txid)
            return
        if self.cur_segment_txid == start_txid and self._writer is not None:
            if self._next_txid != end_txid + 1:
                raise SegmentStateError(
                    f"trying to finalize in-progress segment {start_txid} to end at txid "
                    f"{end_txid} but only written up to txid {self._next_txid - 1}"
                )
            self._apply_request(req)
            writer = self._writer
            self._writer = None
            self.cur_segment_txid = None
            valid_length = writer.position
            self._io(writer.close, writer.path)
        else:
            found = scan_file(existing.path)
            if found.last_txid != end_txid:
                raise SegmentStateError(
                    f"trying to finalize in-progress segment {start_txid} to end at txid "
                    f"{end_txid} but the disk only contains up to txid {found.last_txid}"
                )
            self._apply_request(req)
            valid_length = found.valid_length
        final = self.storage.current / finalized_name(start_txid, end_txid)

        def cut_and_rename() -> None:
            with open(existing.path, "r+b") as f:
                if os.fstat(f.fileno()).st_size != valid_length:
                    f.truncate(valid_length)
                os.fsync(f.fileno())
            os.replace(existing.path, final)
            fsync_dir(final.parent)

        self._io(cut_and_rename, existing.path)
        self.storage.purge_paxos(start_txid)
        log.info("journal %s: finalized segment %d-%d", self.jid, start_txid, end_txid)

    def purge_logs_older_than(self, req: pb.RequestInfo, min_txid_to_keep: int) -> int:
        """Delete finalized segments and paxos files wholly below a txid; return the count."""
        self._check_request(req)
        if self.cur_segment_txid is not None and self.cur_segment_txid < min_txid_to_keep:
            raise SegmentStateError(
                f"can't purge below txid {min_txid_to_keep}: the open segment starts at "
                f"{self.cur_segment_txid}"
            )
        self._apply_request(req)
        removed = 0
        for seg in self.storage.segments():
            stale_inprogress = seg.in_progress and seg.start < min_txid_to_keep
            if (seg.end is not None and seg.end < min_txid_to_keep) or stale_inprogress:
                if stale_inprogress and self._is_latest_inprogress(seg):
                    continue  # it may still be recovered
                seg.path.unlink()
                removed += 1
        for txid in self.storage.paxos_txids():
            if txid < min_txid_to_keep:
                self.storage.purge_paxos(txid)
        if removed:
            fsync_dir(self.storage.current)
        log.info(
            "journal %s: purged %d segments below txid %d", self.jid, removed, min_txid_to_keep
        )
        return removed

    def get_edit_log_manifest(self, since_txid: int, in_progress_ok: bool) -> list[SegmentInfo]:
        """The segments holding txids at or after since_txid."""
        self._check_formatted()
        out: list[SegmentInfo] = []
        segments = self.storage.segments()
        for seg in segments:
            if seg.end is not None:
                if seg.end >= since_txid:
                    out.append(SegmentInfo(seg.start, seg.end, False))
            elif (
                in_progress_ok
                and self._is_latest_inprogress(seg, segments)
                and not any(o.start == seg.start and o.end is not None for o in segments)
            ):
                if seg.start == self.cur_segment_txid:
                    end = self._next_txid - 1
                else:
                    end = scan_file(seg.path).last_txid or seg.start - 1
                if end >= seg.start and end >= since_txid:
                    out.append(SegmentInfo(seg.start, end, True))
        return out

    def prepare_recovery(
        self, req: pb.RequestInfo, segment_txid: int
    ) -> pb.PrepareRecoveryResponse:
        """Paxos phase 1b for a segment: what this node holds and what it accepted."""
        self._check_request(req)
        self._apply_request(req)
        self._abort_cur_segment()
        accepted = self.storage.read_paxos(segment_txid)
        self._complete_half_done_accept(accepted)
        seg = self._segment_info(segment_txid)
        resp = pb.PrepareRecoveryResponse(last_writer_epoch=self.last_writer_epoch)
        if accepted is not None and (seg is None or seg.is_in_progress):
            acc = accepted.segment_state
            if seg is None or seg.end_txid != acc.end_txid:
                on_disk = f"ends at {seg.end_txid}" if seg else "is absent"
                raise SegmentStateError(
                    f"journal {self.jid!r}: segment {segment_txid} on disk {on_disk}, but the "
                    f"accepted recovery is {_describe(acc)}"
                )
            resp.accepted_in_epoch = accepted.accepted_in_epoch
            resp.segment_state.CopyFrom(acc)
        elif seg is not None:
            resp.segment_state.CopyFrom(seg.to_proto())
        if self.committed_txid is not None:
            resp.last_committed_txid = self.committed_txid
        log.info(
            "journal %s: prepared recovery of segment %d: %s",
            self.jid,
            segment_txid,
            str(resp).replace("\n", " "),
        )
        return resp

    def accept_recovery(self, req: pb.RequestInfo, segment: pb.SegmentState, from_url: str) -> None:
        """Paxos phase 2b: take the chosen segment (downloading it if ours differs), persist."""
        self._check_request(req)
        start, end = segment.start_txid, segment.end_txid
        if not (end > 0 and end >= start):
            raise InvalidRequestError(
                f"bad recovery state {_describe(segment)}: the end must be positive and not "
                "before the start"
            )
        old = self.storage.read_paxos(start)
        if old is not None and old.accepted_in_epoch > req.epoch:
            raise EpochError(
                f"segment {start} was already accepted in epoch {old.accepted_in_epoch}, "
                f"newer than this request's epoch {req.epoch}"
            )
        self._apply_request(req)
        self._abort_cur_segment()
        self.cache.clear()
        current = self._segment_info(start)
        synced: Path | None = None
        if current is None or current.end_txid != end:
            if current is not None:
                committed = self.committed_txid
                if (
                    committed is not None
                    and current.start_txid <= committed <= current.end_txid
                    and not (start <= committed <= end)
                ):
                    raise SegmentStateError(
                        f"can't replace segment {current.start_txid}-{current.end_txid} with "
                        f"{start}-{end}: that would discard committed txid {committed}"
                    )
                if not current.is_in_progress:
                    raise SegmentStateError(
                        f"asked to replace finalized segment {current.start_txid}-"
                        f"{current.end_txid} with {_describe(segment)}"
                    )
            synced = self._sync_log(req.epoch, segment, from_url)
        elif current.is_in_progress and from_url:
            # The same length is not the same log: a node that refused a newer writer's
            # start_log_segment keeps an older writer's ops, which may end at the same txid.
            # Only the source itself is sent no URL: its copy is the chosen one.
            synced = self._sync_log(req.epoch, segment, from_url)
            local = self.storage.current / inprogress_name(start)
            if _same_log(synced, local):
                synced.unlink()
                synced = None
            else:
                log.warning(
                    "journal %s: segment %s here differs from the accepted one at %s although "
                    "it ends at the same txid; replacing it",
                    self.jid,
                    _describe(segment),
                    from_url,
                )
        self.faults.before_persist_paxos_data()
        self.storage.write_paxos(
            start, pb.PersistedRecoveryPaxosData(segment_state=segment, accepted_in_epoch=req.epoch)
        )
        self.faults.after_persist_paxos_data()
        if synced is not None:
            target = self.storage.current / inprogress_name(start)
            os.replace(synced, target)
            fsync_dir(target.parent)
            latest = self._scan_for_latest_edits()
            self.highest_written_txid = latest.end_txid if latest else 0
        log.info(
            "journal %s: accepted recovery of %s in epoch %d",
            self.jid,
            _describe(segment),
            req.epoch,
        )

    def get_journaled_edits(self, since_txid: int, max_txns: int) -> pb.GetJournaledEditsResponse:
        """Recent edits from memory; thread-safe, so callers need not use the journal thread."""
        self._check_formatted()
        if since_txid <= 0 or max_txns <= 0:
            raise InvalidRequestError(
                f"since_txid and max_txns must be positive, got {since_txid} and {max_txns}"
            )
        resp = pb.GetJournaledEditsResponse(highest_written_txid=self.highest_written_txid)
        committed = self.committed_txid
        if committed is not None:
            resp.committed_txid = committed
        c = self.counters
        if since_txid > self.highest_written_txid:
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

    # -- syncer ------------------------------------------------------------------------------
    def restore_version(self, ns: NsInfo, promised_epoch: int) -> bool:
        """Re-create a lost VERSION from a peer's namespace; False if already formatted."""
        if self.ns_info is not None:
            return False
        self.storage.write_version(ns)
        if promised_epoch > self.storage.read_long(LAST_PROMISED_EPOCH, 0):
            self.storage.write_long(LAST_PROMISED_EPOCH, promised_epoch)
        self._load()
        log.warning(
            "journal %s: re-created VERSION from a peer (%s), promised epoch %d",
            self.jid,
            ns.describe(),
            self.last_promised_epoch,
        )
        return True

    def missing_segments(
        self, peer_segments: list[tuple[int, int]], peer_committed: int | None
    ) -> list[tuple[int, int]]:
        """Finalized (start, end) ranges a peer has that this node lacks and may take."""
        self._check_formatted()
        bound = max(self.committed_txid or 0, peer_committed or 0)
        local = [(s.start, s.end) for s in self.storage.segments() if s.end is not None]
        out = []
        for start, end in peer_segments:
            overlaps = any(not (end < a or start > b) for a, b in local)
            if not overlaps and end <= bound and start != self.cur_segment_txid:
                out.append((start, end))
        return out

    def install_synced_segment(self, tmp: Path, start: int, end: int) -> bool:
        """Move a downloaded, checked segment into current/; False if no longer missing."""
        self._check_formatted()
        for seg in self.storage.segments():
            if seg.end is not None and not (end < seg.start or start > seg.end):
                tmp.unlink(missing_ok=True)
                return False
        final = self.storage.current / finalized_name(start, end)
        os.replace(tmp, final)
        fsync_dir(final.parent)
        self.highest_written_txid = max(self.highest_written_txid, end)
        self.counters.segments_synced += 1
        self.counters.last_sync_timestamp = time.time()
        log.info("journal %s: synced segment %s from a peer", self.jid, final.name)
        return True

    # -- status ------------------------------------------------------------------------------
    def status(self) -> pb.JournalStatus:
        """Everything an operator wants to see of this journal."""
        st = pb.JournalStatus(
            jid=self.jid,
            is_formatted=self.ns_info is not None,
            last_promised_epoch=self.last_promised_epoch,
            last_writer_epoch=self.last_writer_epoch,
            highest_written_txid=self.highest_written_txid,
        )
        if self.ns_info is not None:
            st.ns_info.CopyFrom(self.ns_info.to_proto())
            for seg in self.get_edit_log_manifest(0, True):
                st.segments.add(
                    start_txid=seg.start_txid,
                    end_txid=seg.end_txid,
                    is_in_progress=seg.is_in_progress,
                )
        if self.committed_txid is not None:
            st.committed_txid = self.committed_txid
        if self.cur_segment_txid is not None:
            st.current_segment_txid = self.cur_segment_txid
        return st

    def segment_path(self, segment_txid: int, in_progress_ok: bool) -> tuple[Path, int] | None:
        """The file and valid length to serve for a segment, or None."""
        self._check_formatted()
        seg = self._find_segment(segment_txid)
        if seg is None:
            return None
        if not seg.in_progress:
            return seg.path, seg.path.stat().st_size
        if not in_progress_ok:
            return None
        if seg.start == self.cur_segment_txid and self._writer is not None:
            return seg.path, self._writer.position
        found = scan_file(seg.path)
        if found.num_ops == 0:
            return None
        return seg.path, found.valid_length

    # -- internals ---------------------------------------------------------------------------
    def _io(self, fn: Callable[[], T], path: Path) -> T:
        try:
            return fn()
        except OSError as e:
            raise StorageError(f"I/O error on {path}: {e.strerror or e}") from None

    def _abort_cur_segment(self) -> None:
        if self._writer is not None:
            self._writer.abort()
            self._writer = None
        self.cur_segment_txid = None

    def _find_segment(self, start_txid: int) -> SegmentFile | None:
        """The segment file starting at a txid; a finalized one wins over an in-progress one."""
        for seg in self.storage.segments():
            if seg.start == start_txid:
                return seg
        return None

    def _is_latest_inprogress(
        self, seg: SegmentFile, segments: list[SegmentFile] | None = None
    ) -> bool:
        """True unless a segment starting later supersedes this in-progress one."""
        segments = segments if segments is not None else self.storage.segments()
        return all(other.start <= seg.start for other in segments)

    def _segment_info(self, start_txid: int) -> SegmentInfo | None:
        """The segment starting at a txid as recovery sees it; empty ones count as absent."""
        seg = self._find_segment(start_txid)
        if seg is None:
            return None
        if seg.end is not None:
            return SegmentInfo(seg.start, seg.end, False)
        found = scan_file(seg.path)
        if found.num_ops == 0:
            self._move_aside_empty(seg, found)
            return None
        assert found.last_txid is not None
        return SegmentInfo(seg.start, found.last_txid, True)

    def _scan_for_latest_edits(self) -> SegmentInfo | None:
        """The newest segment holding txns; empty in-progress files are moved aside."""
        for seg in reversed(self.storage.segments()):
            if seg.end is not None:
                return SegmentInfo(seg.start, seg.end, False)
            found = scan_file(seg.path)
            if found.num_ops == 0:
                self._move_aside_empty(seg, found)
                continue
            if found.problem:
                log.warning("journal %s: %s: %s", self.jid, seg.path.name, found.problem)
            assert found.last_txid is not None
            return SegmentInfo(seg.start, found.last_txid, True)
        return None

    def _move_aside_empty(self, seg: SegmentFile, found: ScanResult) -> None:
        if seg.start == self.cur_segment_txid:
            return  # the open segment is empty until its first batch
        aside = seg.path.with_name(seg.path.name + ".empty")
        os.replace(seg.path, aside)
        fsync_dir(seg.path.parent)
        log.info(
            "journal %s: moved aside %s, which holds no transactions (%s)",
            self.jid,
            seg.path.name,
            found.end,
        )

    def _complete_half_done_accept(self, accepted: pb.PersistedRecoveryPaxosData | None) -> None:
        """Roll forward a download whose paxos data was persisted before the swap."""
        if accepted is None:
            return
        start = accepted.segment_state.start_txid
        tmp = self.storage.sync_temp_file(start, accepted.accepted_in_epoch)
        if tmp.exists():
            target = self.storage.current / inprogress_name(start)
            log.info("journal %s: rolling forward accepted recovery file %s", self.jid, tmp.name)
            os.replace(tmp, target)
            fsync_dir(target.parent)

    def _sync_log(self, epoch: int, segment: pb.SegmentState, from_url: str) -> Path:
        """Download a segment to its temporary name and check it holds exactly the range."""
        if not from_url:
            raise InvalidRequestError(
                f"accept_recovery of {_describe(segment)} needs a URL to fetch it from"
            )
        tmp = self.storage.sync_temp_file(segment.start_txid, epoch)
        try:
            self._fetch(from_url, tmp)
        except (OSError, urllib.error.URLError) as e:
            tmp.unlink(missing_ok=True)
            raise StorageError(f"downloading {from_url} failed: {e}") from None
        found = scan_file(tmp)
        if found.first_txid != segment.start_txid or (found.last_txid or 0) < segment.end_txid:
            tmp.unlink(missing_ok=True)
            raise SegmentStateError(
                f"segment downloaded from {from_url} holds txids {found.first_txid}-"
                f"{found.last_txid}, not {segment.start_txid}-{segment.end_txid}"
            )
        if found.last_txid != segment.end_txid:
            _truncate_after(tmp, segment.end_txid)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        return tmp


def _same_log(synced: Path, local: Path) -> bool:
    """True when a downloaded segment holds exactly the ops of the local file."""
    found = scan_file(local)
    with open(local, "rb") as f:
        mine = f.read(found.valid_length)
    return synced.read_bytes() == mine


def _truncate_after(path: Path, end_txid: int) -> None:
    """Cut a segment file right after the op with end_txid."""
    data = path.read_bytes()
    for op in iter_ops(data):
        if op.txid == end_txid:
            with open(path, "r+b") as f:
                f.truncate(op.offset + op.size)
            return


def download_segment(url: str, dest: Path) -> None:
    """Fetch a segment over HTTP into dest, synced."""
    with (
        urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_SECONDS) as resp,
        open(dest, "wb") as f,
    ):
        while chunk := resp.read(1 << 20):
            f.write(chunk)
        f.flush()
        os.fsync(f.fileno())
