"""The local member of the NameNode's JournalSet: the edits copy in the name dir.

HDFS writes every edit to each journal of its JournalSet: the shared (quorum) journal is
required, a local name dir is not. A local journal that fails is disabled with a warning
and the NameNode goes on with the quorum alone. Every method here blocks on disk: the
edit log calls them through asyncio.to_thread, one at a time.

The local copy is secondary: start-up and failover read the shared journal. When the
NameNode starts writing at first_txid, an in-progress segment that starts at first_txid
was never committed (the quorum's recovery settled the log below first_txid) and is
moved aside; an in-progress segment below it is finalized at its last valid txid. A
finalized segment reaching first_txid, or an in-progress one holding ops that starts
after it, proves the shared journal once committed more than it holds now: nothing is
moved and the start is refused (design §N.5).
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

from qjm.editlog.file_journal import FileJournal, truncate_after
from qjm.editlog.file_names import inprogress_name
from qjm.editlog.framing import HEADER_LEN, LAYOUT_VERSION
from qjm.editlog.segments import SegmentFile, scan_file
from qjm.fileutil import fsync_dir
from qjm.namenode.journal_check import LocalEditsAheadError, LocalSegment, local_floor

log = logging.getLogger("qjm.namenode.journal_set")
STALE_SUFFIX = ".stale"


def _has_ops(path: Path) -> bool:
    """True when an in-progress file holds more than its header."""
    try:
        return path.stat().st_size > HEADER_LEN
    except OSError:
        return False


class LocalJournal:
    """The name dir's edits_* files, written alongside the quorum journal."""

    def __init__(self, directory: Path, *, enabled: bool = True) -> None:
        self.directory = directory
        self.files = FileJournal(directory, f"local edits in {directory}")
        self.disabled_reason: str | None = None if enabled else "disabled by configuration"
        self.syncs = 0

    def __repr__(self) -> str:
        return f"LocalJournal({str(self.directory)!r}, enabled={self.enabled})"

    @property
    def enabled(self) -> bool:
        """True while edits are written here."""
        return self.disabled_reason is None

    @property
    def segment_start(self) -> int | None:
        """Start txid of the open local segment, if any."""
        return self.files.cur_segment_txid

    def disable(self, error: BaseException | str) -> None:
        """Stop writing here after a failure, with one warning; the quorum journal goes on."""
        if self.disabled_reason is not None:
            return
        self.disabled_reason = str(error)
        log.warning(
            "local edits journal in %s failed and is disabled; going on with the quorum "
            "journal alone: %s",
            self.directory,
            error,
        )
        with contextlib.suppress(OSError):
            self.files.abort_open()

    def _aside(self, seg: SegmentFile, why: str) -> None:
        aside = seg.path.with_name(seg.path.name + STALE_SUFFIX)
        os.replace(seg.path, aside)
        log.warning("local edits: moved %s aside as %s: %s", seg.path.name, aside.name, why)

    def recover(self, first_txid: int) -> None:
        """Settle what an earlier run left behind before writing a segment at first_txid.

        Raises LocalEditsAheadError, moving nothing, when the local edits prove the shared
        journal committed first_txid or more (design §N.5).
        """
        segments = self.files.segments()
        ahead = local_floor(
            LocalSegment(s.start, s.end, s.path.name, s.end is not None or _has_ops(s.path))
            for s in segments
        )
        if ahead is not None and ahead.txid >= first_txid:
            raise LocalEditsAheadError(
                f"the local edits in {self.directory} show the shared journal committed txid "
                f"{ahead.txid} ({ahead.reason}), but it now restarts at txid {first_txid}: "
                "it went backwards; no local edits were moved, and no segment is started"
            )
        changed = False
        for seg in segments:
            if seg.end is not None:
                continue
            if seg.start >= first_txid:
                self._aside(seg, f"it starts at or after {first_txid}, where the log restarts")
                changed = True
                continue
            found = scan_file(seg.path)
            last = found.last_txid
            if last is None or found.num_ops == 0:
                self._aside(seg, "it holds no transactions")
                changed = True
                continue
            if last >= first_txid:
                last = first_txid - 1  # txids from first_txid on were never committed
                truncate_after(seg.path, last)
                length = seg.path.stat().st_size
            else:
                length = found.valid_length
            self.files.finalize(seg, last, length)
            log.info("local edits: finalized %s at txid %d", seg.path.name, last)
            changed = True
        if changed:
            fsync_dir(self.directory)

    def open(self, txid: int) -> None:
        """Create edits_inprogress_<txid> holding just the header, synced."""
        self.files.open_segment(txid, LAYOUT_VERSION)

    def write_and_sync(self, records: bytes) -> None:
        """Append framed ops to the open segment and fdatasync them."""
        self.files.append(records)
        self.files.sync()
        self.syncs += 1

    def finalize(self, end_txid: int) -> Path:
        """Close the open segment and rename it edits_<start>-<end>."""
        start = self.files.cur_segment_txid
        assert start is not None, "no open local segment"
        length = self.files.close_open()
        seg = SegmentFile(start, None, self.directory / inprogress_name(start))
        return self.files.finalize(seg, end_txid, length)

    def abort(self) -> None:
        """Close the open segment as it is (a later recover settles it)."""
        self.files.abort_open()
