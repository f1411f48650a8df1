"""Segment files as HDFS names them, and the writer that appends to an open one."""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from qjm.editlog import file_names
from qjm.editlog.framing import HEADER_LEN, OP_INVALID, ScanResult, header, scan
from qjm.fileutil import fsync_dir

PREALLOCATE_CHUNK = 1024 * 1024  # HDFS's MIN_PREALLOCATION_LENGTH


@dataclass(frozen=True, order=True, slots=True)
class SegmentFile:
    """One segment file in a directory: finalized (end known) or in progress."""

    start: int
    end: int | None
    path: Path

    @property
    def in_progress(self) -> bool:
        """True for an edits_inprogress_ file."""
        return self.end is None


def parse_segment_name(path: Path) -> SegmentFile | None:
    """The segment a file name denotes, or None for any other file."""
    found = file_names.parse_segment_name(path.name)
    return SegmentFile(found[0], found[1], path) if found else None


class Span(Protocol):
    """A segment's txid range, wherever it is (a file, a manifest entry)."""

    @property
    def start(self) -> int:
        """Its first txid."""
        ...

    @property
    def end(self) -> int | None:
        """Its last txid; None for an in-progress segment whose end is not known."""
        ...


S = TypeVar("S", bound=Span)


@dataclass(frozen=True)
class TxidRun(Generic[S]):
    """The segments that chain into one run of txids, and the holes between them."""

    segments: list[S] = field(default_factory=list)
    gaps: list[tuple[int, int]] = field(default_factory=list)  # (first, last) txid missing


def txid_run(segments: Iterable[S], from_txid: int = 1, to_txid: int | None = None) -> TxidRun[S]:
    """The run of segments that holds txids from from_txid (up to to_txid, if given).

    Ordered by start, a finalized segment before an in-progress one of the same start and
    a longer before a shorter. Ones ending before from_txid are skipped; once the run has
    begun, one starting inside it is a stale or overlapping copy and skipped too. One
    starting after the run's next txid is taken, and the txids it skips are a gap. An
    in-progress segment whose end is not known ends the run.
    """
    ordered = sorted(segments, key=lambda s: (s.start, s.end is None, -(s.end or 0)))
    run: TxidRun[S] = TxidRun()
    next_txid = from_txid  # the first txid the run does not hold yet
    for seg in ordered:
        if to_txid is not None and seg.start > to_txid:
            break
        if run.segments:
            if seg.start < next_txid:
                continue  # a stale copy, or an in-progress one of a finalized segment
        elif seg.end is not None and seg.end < next_txid:
            continue  # wholly before from_txid
        if seg.start > next_txid:
            run.gaps.append((next_txid, seg.start - 1))
        run.segments.append(seg)
        if seg.end is None:
            break  # an open tail: where it ends is not known
        next_txid = seg.end + 1
    return run


def list_segments(directory: Path) -> list[SegmentFile]:
    """Every segment file in a directory, ordered by start txid (finalized first on ties)."""
    found = []
    with os.scandir(directory) as it:
        for entry in it:
            seg = parse_segment_name(Path(entry.path))
            if seg is not None:
                found.append(seg)
    found.sort(key=lambda s: (s.start, s.end is None, s.end or 0))
    return found


def scan_file(path: Path) -> ScanResult:
    """Scan an edit-log file on disk for its valid ops."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return scan(b"")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            return scan(memoryview(m))


class SegmentWriter:
    """Appends framed ops to an in-progress segment file; blocking, one thread at a time.

    Like HDFS, the file is pre-extended with 0xFF padding in 1 MiB steps so that a sync
    need not update the file size, and the padding is cut when the segment is closed.
    """

    def __init__(self, path: Path, fd: int, position: int, allocated: int) -> None:
        self.path = path
        self._fd = fd
        self.position = position
        self._allocated = allocated

    @classmethod
    def create(cls, path: Path, layout_version: int) -> SegmentWriter:
        """Create (or truncate) a segment file holding just the header, synced."""
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, header(layout_version))
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            raise
        fsync_dir(path.parent)
        return cls(path, fd, HEADER_LEN, HEADER_LEN)

    def write(self, records: bytes | memoryview) -> None:
        """Append records at the current position (not yet durable)."""
        n = len(records)
        if self.position + n > self._allocated:
            self._preallocate(self.position + n)
        written = os.pwrite(self._fd, records, self.position)
        while written < n:
            written += os.pwrite(self._fd, records[written:], self.position + written)
        self.position += n

    def _preallocate(self, needed: int) -> None:
        new_size = self._allocated
        while new_size < needed:
            new_size += PREALLOCATE_CHUNK
        pad = bytes([OP_INVALID]) * (new_size - self._allocated)
        os.pwrite(self._fd, pad, self._allocated)
        self._allocated = new_size

    def sync(self) -> None:
        """Make everything written so far durable (fdatasync)."""
        os.fdatasync(self._fd)

    def close(self) -> None:
        """Cut the padding after the last op, sync and close the file."""
        if self._fd < 0:
            return
        try:
            if self._allocated > self.position:
                os.ftruncate(self._fd, self.position)
            os.fsync(self._fd)
        finally:
            os.close(self._fd)
            self._fd = -1

    def abort(self) -> None:
        """Close the file without cutting padding (a reader stops at the padding)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
