"""The segment files of one journal directory: scan, append, finalize, truncate, install.

A FileJournal knows the files and their framing, nothing of epochs or recovery decisions:
the acceptor (journalnode/journal.py) decides what may be written, finalized or replaced,
and calls in here to do it. Blocking and single-threaded, like the acceptor that owns it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from qjm.editlog.errors import SegmentCorruptError, SegmentIOError, SegmentRangeError
from qjm.editlog.file_names import (
    STAGED_GLOB,
    finalized_name,
    finalized_prefix,
    inprogress_name,
    parse_staged_name,
    staged_name,
)
from qjm.editlog.framing import HEADER_LEN, MIN_OP_SIZE, ScanResult, iter_ops
from qjm.editlog.segments import (
    SegmentFile,
    SegmentWriter,
    list_segments,
    scan_file,
)
from qjm.fileutil import fsync_dir

log = logging.getLogger("qjm.editlog.file_journal")
T = TypeVar("T")
DOWNLOAD_SUFFIX = ".download"  # accept_recovery's private download files in current/


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    """A segment as found on disk: its range and whether it is still open."""

    start_txid: int
    end_txid: int
    is_in_progress: bool
    byte_length: int = 0  # valid bytes of the file; 0 where not measured
    # Why an in-progress file is corrupt (a bad op that valid ops follow); then end_txid is
    # its last valid txid (start - 1 if none), not the end of the log it held.
    corrupt: str | None = None
    # For a finalized segment on a JournalNode: the epoch that decided it, if recorded.
    decided_epoch: int | None = None


class FileJournal:
    """The edits_* files of one directory, and the in-progress segment open for appends."""

    def __init__(
        self,
        directory: Path,
        jid: str,
        *,
        on_moved_aside: Callable[[SegmentFile], None] = lambda seg: None,
    ) -> None:
        self.directory = directory
        self.jid = jid  # names the journal in messages
        # Called after a bad finalized segment was moved aside (check_finalized).
        self.on_moved_aside = on_moved_aside
        self._writer: SegmentWriter | None = None
        self.cur_segment_txid: int | None = None  # start of the open segment
        self._verified: dict[str, tuple[int, int]] = {}  # finalized name: (size, mtime) checked
        # The newest in-progress file, if corrupt, and why (scan_for_latest_edits): shown
        # in status problems until a recovery replaces it.
        self.corrupt_latest: tuple[Path, str] | None = None

    def reset(self) -> None:
        """Forget everything known of the files (the directory was wiped and re-created)."""
        self.abort_open()
        self._verified.clear()
        self.corrupt_latest = None

    # -- listing ------------------------------------------------------------------------------
    def segments(self) -> list[SegmentFile]:
        """The segment files, ordered by start txid (finalized first on ties)."""
        return list_segments(self.directory)

    def find_segment(self, start_txid: int) -> SegmentFile | None:
        """The segment file starting at a txid; a finalized one wins over an in-progress one."""
        for seg in self.segments():
            if seg.start == start_txid:
                return seg
        return None

    def is_latest_inprogress(
        self, seg: SegmentFile, segments: list[SegmentFile] | None = None
    ) -> bool:
        """True unless a segment starting later supersedes this in-progress one."""
        segments = segments if segments is not None else self.segments()
        return all(other.start <= seg.start for other in segments)

    def finalized_gap_below(self, txid: int) -> bool:
        """True when the finalized segments leave a hole between them or before txid."""
        expected: int | None = None
        for seg in self.segments():
            if seg.end is None or seg.start >= txid:
                continue
            if expected is not None and seg.start > expected:
                return True
            expected = max(expected or 0, seg.end + 1)
        return expected is not None and expected < txid

    def scan(self, path: Path) -> ScanResult:
        """Scan a segment file for its valid ops."""
        return scan_file(path)

    # -- the open segment ---------------------------------------------------------------------
    def open_segment(self, txid: int, layout_version: int) -> None:
        """Create edits_inprogress_<txid> holding just the header, synced, open for appends."""
        path = self.directory / inprogress_name(txid)
        self._writer = self._io(lambda: SegmentWriter.create(path, layout_version), path)
        self.cur_segment_txid = txid

    @property
    def open_path(self) -> Path | None:
        """The file of the open segment, if any."""
        return self._writer.path if self._writer is not None else None

    @property
    def open_position(self) -> int:
        """Bytes of the open segment written so far (its valid length)."""
        assert self._writer is not None
        return self._writer.position

    def append(self, records: bytes) -> None:
        """Append framed ops to the open segment (not yet durable); raises OSError."""
        assert self._writer is not None
        self._writer.write(records)

    def sync(self) -> None:
        """Make the open segment's appends durable (fdatasync); raises OSError."""
        assert self._writer is not None
        self._writer.sync()

    def abort_open(self) -> None:
        """Close the open segment without cutting its padding (a reader stops there)."""
        if self._writer is not None:
            self._writer.abort()
            self._writer = None
        self.cur_segment_txid = None

    def close_open(self) -> int:
        """Close the open segment, cutting its padding; return its valid length."""
        writer = self._writer
        assert writer is not None
        self._writer = None
        self.cur_segment_txid = None
        valid_length = writer.position
        self._io(writer.close, writer.path)
        return valid_length

    # -- finalize, purge, install ---------------------------------------------------------------
    def finalize(self, existing: SegmentFile, end_txid: int, valid_length: int) -> Path:
        """Cut an in-progress file at valid_length, sync it, rename it edits_<start>-<end>."""
        final = self.directory / finalized_name(existing.start, end_txid)

        def cut_and_rename() -> None:
            with open(existing.path, "r+b") as f:
                if os.fstat(f.fileno()).st_size != valid_length:
                    f.truncate(valid_length)
                os.fsync(f.fileno())
            os.replace(existing.path, final)
            fsync_dir(final.parent)

        self._io(cut_and_rename, existing.path)
        return final

    def purge_older_than(self, min_txid_to_keep: int) -> int:
        """Delete finalized segments wholly below a txid and superseded in-progress ones."""
        removed = 0
        for seg in self.segments():
            stale_inprogress = seg.in_progress and seg.start < min_txid_to_keep
            if (seg.end is not None and seg.end < min_txid_to_keep) or stale_inprogress:
                if stale_inprogress and self.is_latest_inprogress(seg):
                    continue  # it may still be recovered
                seg.path.unlink()
                removed += 1
        if removed:
            fsync_dir(self.directory)
        return removed

    def last_txid(self, seg: SegmentFile) -> int:
        """The last valid txid of an in-progress segment (start - 1 when it holds none)."""
        return self.scan(seg.path).last_txid or seg.start - 1

    def remove(self, segments: list[SegmentFile]) -> None:
        """Delete segment files and make their removal durable."""
        for seg in segments:
            seg.path.unlink()
        if segments:
            fsync_dir(self.directory)

    def install_finalized(self, tmp: Path, start: int, end: int) -> Path | None:
        """Move a checked finalized segment into place; None if one here overlaps it."""
        for seg in self.segments():
            if seg.end is not None and not (end < seg.start or start > seg.end):
                tmp.unlink(missing_ok=True)
                return None
        final = self.directory / finalized_name(start, end)
        os.replace(tmp, final)
        fsync_dir(final.parent)
        return final

    # -- downloads and staged accepts -----------------------------------------------------------
    def remove_stale_downloads(self) -> None:
        """Delete downloads a stop or a crash cut short."""
        for stale in self.directory.glob(f"*{DOWNLOAD_SUFFIX}"):
            stale.unlink()

    def staged_path(self, segment_txid: int, epoch: int) -> Path:
        """Where an accepted download waits until its decision is persisted."""
        return self.directory / staged_name(segment_txid, epoch)

    def download_path(self, segment_txid: int, epoch: int, tag: str) -> Path:
        """A private file for one download of a segment (deleted at load if left over)."""
        tmp = self.staged_path(segment_txid, epoch)
        return tmp.with_name(f"{tmp.name}.{tag}{DOWNLOAD_SUFFIX}")

    def check_download(self, dest: Path, start: int, end: int, source: str) -> None:
        """Check a downloaded segment holds start..end, cut what follows end, and sync it."""
        found = scan_file(dest)
        if found.first_txid != start or (found.last_txid or 0) < end:
            raise SegmentRangeError(
                f"segment downloaded from {source} holds txids {found.first_txid}-"
                f"{found.last_txid}, not {start}-{end}"
            )
        if found.last_txid != end:
            truncate_after(dest, end)
        with open(dest, "rb+") as f:
            os.fsync(f.fileno())

    def same_log(self, synced: Path, start: int) -> bool:
        """True when a downloaded segment holds exactly the ops of the local one at start."""
        seg = self.find_segment(start)
        if seg is None:
            return False
        found = scan_file(seg.path)
        with open(seg.path, "rb") as f:
            mine = f.read(found.valid_length)
        return synced.read_bytes() == mine

    def retire(self, seg: SegmentFile) -> Path:
        """Rename a finalized segment a recovery replaces to *.replaced, kept for the operator."""
        aside = seg.path.with_name(seg.path.name + ".replaced")
        os.replace(seg.path, aside)
        fsync_dir(seg.path.parent)
        self._verified.pop(seg.path.name, None)
        return aside

    def stage(self, download: Path, start: int, epoch: int) -> Path:
        """Rename a download to its staged name, which roll_forward_staged recognizes."""
        staged = self.staged_path(start, epoch)
        os.replace(download, staged)
        return staged

    def install_staged(self, staged: Path, start: int) -> None:
        """Make a staged download the in-progress segment at start."""
        target = self.directory / inprogress_name(start)
        os.replace(staged, target)
        fsync_dir(target.parent)

    def roll_forward_staged(self, accepted: Callable[[int, int], bool]) -> bool:
        """Install each staged download that accepted(start, epoch) names; delete the rest.

        A staged file the decision does not name, or one a finalized segment superseded,
        is deleted. True when any file was installed.
        """
        cur = self.directory
        changed = rolled = False
        for tmp in sorted(cur.glob(STAGED_GLOB)):
            staged = parse_staged_name(tmp.name)
            if staged is None:
                continue  # a download in flight (remove_stale_downloads deletes those cut short)
            start, epoch = staged
            segments = self.segments()
            superseded = any(s.start == start and s.end is not None for s in segments)
            changed = True
            if superseded or not accepted(start, epoch):
                log.info(
                    "journal %s: deleting %s: no accepted recovery names it, or a finalized "
                    "segment superseded it",
                    self.jid,
                    tmp.name,
                )
                tmp.unlink()
                continue
            log.info("journal %s: rolling forward accepted recovery file %s", self.jid, tmp.name)
            os.replace(tmp, cur / inprogress_name(start))
            rolled = True
        if changed:
            fsync_dir(cur)
        return rolled

    # -- scans and corruption -------------------------------------------------------------------
    def segment_info(self, start_txid: int, *, corrupt_ok: bool = False) -> SegmentInfo | None:
        """The segment starting at a txid as recovery sees it; empty ones count as absent.

        A corrupt in-progress file fails loudly, or with corrupt_ok is returned marked
        corrupt (SegmentInfo.corrupt).
        """
        seg = self.find_segment(start_txid)
        if seg is None:
            return None
        if seg.end is not None:
            return SegmentInfo(seg.start, seg.end, False, seg.path.stat().st_size)
        found = scan_file(seg.path)
        if corrupt_ok and found.end == "corrupt":
            return _corrupt_info(seg, found, self.corrupt_message(seg, found))
        self.refuse_corrupt(seg, found)
        if found.num_ops == 0:
            self.move_aside_empty(seg, found)
            return None
        assert found.last_txid is not None
        return SegmentInfo(seg.start, found.last_txid, True, found.valid_length)

    def scan_for_latest_edits(self) -> SegmentInfo | None:
        """The newest segment holding txns; empty in-progress files are moved aside.

        A corrupt newest in-progress file does not fail the journal (design §J.15): it
        is reported by the start txid of its name, so new_epoch names it and the writer
        recovers it, with end_txid its last valid txid; a warning and the status name it.
        Only prepare_recovery and serving it fail (refuse_corrupt). HDFS's scan resyncs
        past the bad op and reports the txids after it as written; we deviate and count
        only the valid prefix, since the txids past the damage cannot be served from here.
        """
        self.corrupt_latest = None
        segments = self.segments()
        for seg in reversed(segments):
            if seg.end is not None:
                return SegmentInfo(seg.start, seg.end, False)
            if any(o.start == seg.start and o.end is not None for o in segments):
                continue  # a finalized copy (e.g. synced from a peer) supersedes this file
            found = scan_file(seg.path)
            if found.end == "corrupt":
                why = self.corrupt_message(seg, found)
                log.warning("%s; a recovery must replace it with the chosen copy", why)
                self.corrupt_latest = (seg.path, why)
                return _corrupt_info(seg, found, why)
            if found.num_ops == 0:
                self.move_aside_empty(seg, found)
                continue
            if found.problem:
                log.warning("journal %s: %s: %s", self.jid, seg.path.name, found.problem)
            assert found.last_txid is not None
            return SegmentInfo(seg.start, found.last_txid, True)
        return None

    def servable_length(self, seg: SegmentFile) -> int | None:
        """The valid length of an in-progress segment to serve; None if it holds no txns."""
        if seg.start == self.cur_segment_txid and self._writer is not None:
            return self._writer.position
        found = scan_file(seg.path)
        self.refuse_corrupt(seg, found)  # never serve the prefix as the log: readers switch
        if found.num_ops == 0:
            return None
        return found.valid_length

    def refuse_corrupt(self, seg: SegmentFile, found: ScanResult) -> None:
        """Fail loudly on a bad op that valid ops follow: it is damage, not a torn tail.

        Cutting there would make this node report a log shorter than what it acknowledged,
        and recovery could choose that length (design §J.15); failing makes this node one
        failed answer instead. HDFS resyncs past the bad op; see framing._valid_frame_after.
        """
        if found.end == "corrupt":
            raise SegmentCorruptError(f"{self.corrupt_message(seg, found)}; refusing to use it")

    def corrupt_message(self, seg: SegmentFile, found: ScanResult) -> str:
        """Name the corrupt file, the txid and offset of the damage, and what is wrong."""
        where = (
            f"at txid {found.problem_txid}"
            if found.problem_txid is not None
            else f"after txid {found.last_txid}"
        )
        return (
            f"journal {self.jid!r}: {seg.path} is corrupt {where} (offset "
            f"{found.valid_length}) with valid ops after it, so it is not a torn tail: "
            f"{found.problem}"
        )

    def check_finalized(self, seg: SegmentFile) -> str | None:
        """None if a finalized segment holds exactly its named range; else move it aside."""
        assert seg.end is not None
        try:
            st = seg.path.stat()
        except FileNotFoundError:
            return "it went away"
        key = (st.st_size, st.st_mtime_ns)
        if self._verified.get(seg.path.name) == key:
            return None
        need = HEADER_LEN + (seg.end - seg.start + 1) * MIN_OP_SIZE
        problem: str | None = None
        if st.st_size < need:
            problem = f"{st.st_size} bytes, shorter than the {need} its txids need"
        else:
            found = scan_file(seg.path)
            # A bad frame with valid ones after it is mid-file corruption, not a short file:
            # that is left to the corruption scans (readers check every CRC and switch node).
            short = found.end != "corrupt"
            if short and (found.first_txid, found.last_txid, found.end) != (
                seg.start,
                seg.end,
                "eof",
            ):
                problem = (
                    f"it holds txids {found.first_txid}-{found.last_txid} and ends with "
                    f"{found.problem or found.end}"
                )
        if problem is None:
            self._verified[seg.path.name] = key
            return None
        self._verified.pop(seg.path.name, None)
        aside = seg.path.with_name(seg.path.name + ".corrupt")
        os.replace(seg.path, aside)
        fsync_dir(seg.path.parent)
        self.on_moved_aside(seg)
        log.warning(
            "journal %s: finalized segment %s is bad (%s); moved aside as %s, never served; "
            "the syncer fetches it from a peer",
            self.jid,
            seg.path.name,
            problem,
            aside.name,
        )
        return problem

    def tombstone(self, segment_txid: int) -> Path | None:
        """The newest moved-aside finalized segment at segment_txid, unless a good one is back."""
        seg = self.find_segment(segment_txid)
        if seg is not None and seg.end is not None:
            return None  # a good finalized copy is back (e.g. fetched by the syncer)
        prefix = finalized_prefix(segment_txid)
        dead = sorted(self.directory.glob(f"{prefix}-*.corrupt"))
        return dead[-1] if dead else None

    def move_aside_empty(self, seg: SegmentFile, found: ScanResult) -> None:
        """Rename an in-progress file without txns to *.empty (never the open one)."""
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

    # -- internals -------------------------------------------------------------------------------
    def _io(self, fn: Callable[[], T], path: Path) -> T:
        try:
            return fn()
        except OSError as e:
            raise SegmentIOError(f"I/O error on {path}: {e.strerror or e}") from None


def _corrupt_info(seg: SegmentFile, found: ScanResult, why: str) -> SegmentInfo:
    """A corrupt in-progress file as a SegmentInfo: its name's start, its last valid txid."""
    end = found.last_txid if found.last_txid is not None else seg.start - 1
    return SegmentInfo(seg.start, end, True, found.valid_length, corrupt=why)


def truncate_after(path: Path, end_txid: int) -> None:
    """Cut a segment file right after the op with end_txid."""
    data = path.read_bytes()
    for op in iter_ops(data):
        if op.txid == end_txid:
            with open(path, "r+b") as f:
                f.truncate(op.offset + op.size)
            return
