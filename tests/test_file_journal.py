"""The file journal alone: segment files of one directory, without any acceptor rules."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from qjm.editlog.errors import SegmentCorruptError, SegmentRangeError
from qjm.editlog.file_journal import FileJournal, SegmentInfo, truncate_after
from qjm.editlog.file_names import finalized_name, inprogress_name
from qjm.editlog.framing import HEADER_LEN, LAYOUT_VERSION, OP_OPAQUE, encode_op, header
from qjm.editlog.segments import SegmentFile, scan_file


def ops(first: int, count: int) -> bytes:
    """count framed ops from txid first, each with a body naming its txid."""
    return b"".join(encode_op(OP_OPAQUE, t, f"op{t}".encode()) for t in range(first, first + count))


def segment_bytes(first: int, count: int) -> bytes:
    """A whole segment file: the header, then the ops."""
    return header() + ops(first, count)


def op_offset(data: bytes, txid: int, first: int = 1) -> int:
    """The offset of txid's op in a file written by segment_bytes(first, ...)."""
    return HEADER_LEN + len(ops(first, txid - first))


@pytest.fixture
def files(tmp_path: Path) -> FileJournal:
    directory = tmp_path / "current"
    directory.mkdir()
    return FileJournal(directory, "t")


def write_inprogress(files: FileJournal, start: int, data: bytes) -> Path:
    path = files.directory / inprogress_name(start)
    path.write_bytes(data)
    return path


def test_append_sync_and_scan(files: FileJournal) -> None:
    files.open_segment(1, LAYOUT_VERSION)
    assert files.cur_segment_txid == 1
    assert files.open_position == HEADER_LEN
    records = ops(1, 3)
    files.append(records)
    files.sync()
    assert files.open_position == HEADER_LEN + len(records)
    path = files.directory / inprogress_name(1)
    assert files.open_path == path
    found = files.scan(path)
    assert (found.first_txid, found.last_txid, found.num_ops) == (1, 3, 3)
    assert found.end == "padding"  # pre-extended with 0xFF, cut only at close
    assert [s.start for s in files.segments()] == [1]
    seg = files.find_segment(1)
    assert seg is not None and seg.in_progress
    assert files.servable_length(seg) == HEADER_LEN + len(records)
    assert files.scan_for_latest_edits() == SegmentInfo(1, 3, True)
    assert files.segment_info(1) == SegmentInfo(1, 3, True, HEADER_LEN + len(records))


def test_an_empty_inprogress_file_is_absent_and_moved_aside_unless_open(files: FileJournal) -> None:
    files.open_segment(1, LAYOUT_VERSION)
    assert files.scan_for_latest_edits() is None
    assert (files.directory / inprogress_name(1)).exists()  # the open one stays
    files.abort_open()
    assert files.cur_segment_txid is None
    assert files.segment_info(1) is None
    assert not (files.directory / inprogress_name(1)).exists()
    assert (files.directory / (inprogress_name(1) + ".empty")).exists()


def test_a_torn_tail_is_cut_off_a_corrupt_op_is_refused(files: FileJournal) -> None:
    data = segment_bytes(1, 5)
    torn = write_inprogress(files, 1, data[:-7])  # the last op half written
    info = files.segment_info(1)
    assert info == SegmentInfo(1, 4, True, op_offset(data, 5))
    assert files.scan_for_latest_edits() == SegmentInfo(1, 4, True)
    assert files.corrupt_latest is None
    torn.unlink()

    bad = bytearray(data)
    bad[op_offset(data, 3) + 14] ^= 0xFF  # a body byte of txid 3: its CRC fails, 4-5 follow
    path = write_inprogress(files, 1, bytes(bad))
    with pytest.raises(SegmentCorruptError, match=r"at txid 3"):
        files.segment_info(1)
    marked = files.segment_info(1, corrupt_ok=True)
    assert marked is not None and marked.end_txid == 2 and marked.corrupt is not None
    latest = files.scan_for_latest_edits()
    assert latest is not None and (latest.end_txid, latest.corrupt is not None) == (2, True)
    assert files.corrupt_latest is not None and files.corrupt_latest[0] == path
    seg = files.find_segment(1)
    assert seg is not None
    with pytest.raises(SegmentCorruptError):
        files.servable_length(seg)
    assert path.read_bytes() == bytes(bad)  # never cut


def test_finalize_the_open_segment_cuts_the_padding(files: FileJournal) -> None:
    files.open_segment(1, LAYOUT_VERSION)
    files.append(ops(1, 3))
    files.sync()
    seg = files.find_segment(1)
    assert seg is not None
    length = files.close_open()
    assert files.cur_segment_txid is None
    final = files.finalize(seg, 3, length)
    assert final == files.directory / finalized_name(1, 3)
    assert final.read_bytes() == segment_bytes(1, 3)
    assert not seg.path.exists()
    finalized = files.find_segment(1)
    assert finalized is not None and finalized.end == 3
    assert files.check_finalized(finalized) is None
    assert files.scan_for_latest_edits() == SegmentInfo(1, 3, False)


def test_finalize_a_closed_inprogress_file_at_its_valid_length(files: FileJournal) -> None:
    data = segment_bytes(1, 4)
    path = write_inprogress(files, 1, data + bytes([0xFF]) * 100)
    found = scan_file(path)
    final = files.finalize(SegmentFile(1, None, path), 4, found.valid_length)
    assert final.read_bytes() == data


def test_a_bad_finalized_segment_is_moved_aside_and_leaves_a_tombstone(tmp_path: Path) -> None:
    directory = tmp_path / "current"
    directory.mkdir()
    moved: list[SegmentFile] = []
    files = FileJournal(directory, "t", on_moved_aside=moved.append)
    good = directory / finalized_name(1, 3)
    good.write_bytes(segment_bytes(1, 3))
    bad = directory / finalized_name(4, 5)
    bad.write_bytes(segment_bytes(4, 3))  # named 4-5, holds 4-6
    assert files.check_finalized(SegmentFile(1, 3, good)) is None
    problem = files.check_finalized(SegmentFile(4, 5, bad))
    assert problem is not None and "holds txids 4-6" in problem
    assert [(s.start, s.end) for s in moved] == [(4, 5)]
    assert not bad.exists()
    assert files.tombstone(4) == bad.with_name(bad.name + ".corrupt")
    assert files.tombstone(1) is None
    short = directory / finalized_name(7, 9)
    short.write_bytes(segment_bytes(7, 1))
    problem = files.check_finalized(SegmentFile(7, 9, short))
    assert problem is not None and "shorter than" in problem
    bad.write_bytes(segment_bytes(4, 2))  # a good copy is back
    assert files.tombstone(4) is None


def test_truncate_and_check_a_download(files: FileJournal, tmp_path: Path) -> None:
    dest = tmp_path / "dl"
    dest.write_bytes(segment_bytes(1, 5))
    files.check_download(dest, 1, 3, "peer")
    assert dest.read_bytes() == segment_bytes(1, 3)
    with pytest.raises(SegmentRangeError, match="holds txids 1-3, not 1-4"):
        files.check_download(dest, 1, 4, "peer")
    with pytest.raises(SegmentRangeError):
        files.check_download(dest, 2, 3, "peer")
    other = tmp_path / "other"
    other.write_bytes(segment_bytes(1, 5))
    truncate_after(other, 1)
    assert other.read_bytes() == segment_bytes(1, 1)


def test_install_a_synced_finalized_segment(files: FileJournal, tmp_path: Path) -> None:
    (files.directory / finalized_name(1, 3)).write_bytes(segment_bytes(1, 3))
    tmp = tmp_path / "synced"
    tmp.write_bytes(segment_bytes(4, 3))
    final = files.install_finalized(tmp, 4, 6)
    assert final == files.directory / finalized_name(4, 6)
    assert final.read_bytes() == segment_bytes(4, 3) and not tmp.exists()
    overlapping = tmp_path / "again"
    overlapping.write_bytes(segment_bytes(3, 2))
    assert files.install_finalized(overlapping, 3, 4) is None
    assert not overlapping.exists()
    assert [(s.start, s.end) for s in files.segments()] == [(1, 3), (4, 6)]
    assert not files.finalized_gap_below(7)
    (files.directory / finalized_name(9, 10)).write_bytes(segment_bytes(9, 2))
    assert files.finalized_gap_below(11)


def test_stage_install_and_roll_forward_accepted_downloads(files: FileJournal) -> None:
    write_inprogress(files, 1, segment_bytes(1, 2))
    download = files.download_path(1, 5, "abc")
    download.write_bytes(segment_bytes(1, 4))
    assert not files.same_log(download, 1)
    staged = files.stage(download, 1, 5)
    assert staged == files.staged_path(1, 5) and not download.exists()
    # A crash here: roll forward installs what the decision names, deletes the rest.
    other = files.staged_path(7, 2)
    other.write_bytes(segment_bytes(7, 1))
    leftover = files.download_path(9, 5, "def")
    leftover.write_bytes(b"partial")
    assert files.roll_forward_staged(lambda start, epoch: (start, epoch) == (1, 5))
    assert not staged.exists() and not other.exists()
    assert leftover.exists()  # a download in flight is not a staged accept
    assert (files.directory / inprogress_name(1)).read_bytes() == segment_bytes(1, 4)
    files.remove_stale_downloads()
    assert not leftover.exists()
    assert not files.roll_forward_staged(lambda start, epoch: True)  # nothing left

    again = files.download_path(1, 6, "ghi")
    again.write_bytes(segment_bytes(1, 4))
    assert files.same_log(again, 1)
    files.install_staged(files.stage(again, 1, 6), 1)
    assert scan_file(files.directory / inprogress_name(1)).last_txid == 4


def test_purge_keeps_the_newest_inprogress_segment(files: FileJournal) -> None:
    (files.directory / finalized_name(1, 3)).write_bytes(segment_bytes(1, 3))
    write_inprogress(files, 2, segment_bytes(2, 1))  # superseded by a later segment
    (files.directory / finalized_name(4, 6)).write_bytes(segment_bytes(4, 3))
    write_inprogress(files, 7, segment_bytes(7, 1))
    assert files.purge_older_than(8) == 3
    assert [(s.start, s.end) for s in files.segments()] == [(7, None)]


def test_reset_forgets_the_open_segment(files: FileJournal) -> None:
    files.open_segment(1, LAYOUT_VERSION)
    files.reset()
    assert files.cur_segment_txid is None and files.open_path is None
    assert os.path.exists(files.directory / inprogress_name(1))
