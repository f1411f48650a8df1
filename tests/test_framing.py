"""HDFS edit-log framing: the fixture, torn tails, bit flips, padding, batches."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from qjm.editlog import framing
from qjm.editlog.file_names import finalized_name, inprogress_name
from qjm.editlog.framing import (
    HEADER,
    OP_INVALID,
    OP_OPAQUE,
    encode_op,
    iter_ops,
    parse_available,
    read_header,
    scan,
    validate_batch,
)
from qjm.editlog.segments import (
    PREALLOCATE_CHUNK,
    SegmentWriter,
    list_segments,
    parse_segment_name,
    scan_file,
)
from qjm.errors import CorruptOpError, EditLogError


def ops(first: int, n: int, size: int = 20) -> bytes:
    """n opaque ops numbered from first."""
    return b"".join(
        encode_op(OP_OPAQUE, t, bytes([t % 251]) * size) for t in range(first, first + n)
    )


def test_edits_stored_fixture_scans_clean(fixtures_dir: Path) -> None:
    data = (fixtures_dir / "editsStored").read_bytes()
    result = scan(data)
    assert result.layout_version == -64
    assert (result.first_txid, result.last_txid, result.num_ops) == (1, 121, 121)
    assert result.end == "eof" and result.problem is None
    assert result.valid_length == len(data)
    parsed = list(iter_ops(data))
    assert [op.txid for op in parsed] == list(range(1, 122))
    assert len({op.opcode for op in parsed}) == 45
    assert parsed[0].opcode == 24 and parsed[-1].opcode == 23  # start and end of segment


def test_encode_matches_hdfs_frame_layout() -> None:
    frame = encode_op(24, 7, b"")
    assert len(frame) == 17
    opcode, length, txid = struct.unpack(">Biq", frame[:13])
    assert (opcode, length, txid) == (24, 12, 7)


def test_reencoding_fixture_ops_is_byte_identical(fixtures_dir: Path) -> None:
    data = (fixtures_dir / "editsStored").read_bytes()
    rebuilt = HEADER + b"".join(encode_op(o.opcode, o.txid, o.body) for o in iter_ops(data))
    assert rebuilt == data


@pytest.mark.parametrize("cut", [1, 5, 13, 16])
def test_torn_tail_is_cut_at_last_whole_op(cut: int) -> None:
    data = HEADER + ops(1, 5)
    torn = data[: len(data) - cut]
    result = scan(torn)
    assert result.end == "torn"
    assert result.last_txid == 4
    assert result.problem_txid in (5, None)
    assert result.valid_length == len(HEADER + ops(1, 4))


def test_padding_ends_the_log() -> None:
    data = HEADER + ops(1, 3) + bytes([OP_INVALID]) * 4096
    result = scan(data)
    assert (result.end, result.last_txid, result.valid_length) == (
        "padding",
        3,
        len(HEADER + ops(1, 3)),
    )


def test_torn_op_followed_by_padding_is_a_torn_tail() -> None:
    whole = ops(1, 3)
    last = encode_op(OP_OPAQUE, 4, b"x" * 50)
    data = HEADER + whole + last[:30] + bytes([OP_INVALID]) * 200
    result = scan(data)
    assert result.end == "torn" and result.last_txid == 3


def test_bit_flip_in_the_middle_is_corruption_named_by_txid() -> None:
    data = bytearray(HEADER + ops(1, 10))
    op5 = len(HEADER) + 4 * len(ops(1, 1))
    data[op5 + 20] ^= 0x01  # inside the body of txid 5
    result = scan(bytes(data))
    assert result.end == "corrupt"
    assert result.last_txid == 4
    assert result.problem_txid == 5
    assert "txid 5" in (result.problem or "")
    with pytest.raises(CorruptOpError, match="txid 5") as info:
        list(iter_ops(bytes(data)))
    assert info.value.offset == op5


def test_bad_length_followed_by_valid_ops_is_corruption_not_a_torn_tail() -> None:
    data = bytearray(HEADER + ops(1, 10))
    op5 = len(HEADER) + 4 * len(ops(1, 1))
    data[op5 + 1] ^= 0x40  # the length of txid 5 becomes impossible
    result = scan(bytes(data))
    assert (result.end, result.last_txid) == ("corrupt", 4)


def test_a_whole_op_out_of_sequence_is_corruption_even_at_the_end() -> None:
    result = scan(HEADER + ops(1, 3) + ops(5, 1) + bytes([OP_INVALID]) * 64)
    assert (result.end, result.last_txid, result.problem_txid) == ("corrupt", 3, 5)


def test_bad_last_op_with_zeros_or_padding_after_it_is_a_torn_tail() -> None:
    for filler in (b"\0" * 300, bytes([OP_INVALID]) * 300, b""):
        data = bytearray(HEADER + ops(1, 5))
        data[-10] ^= 0x01  # inside the body of txid 5, the last op
        result = scan(bytes(data) + filler)
        assert (result.end, result.last_txid) == ("torn", 4), filler[:1]
    cut = HEADER + ops(1, 4) + encode_op(OP_OPAQUE, 5, b"x" * 20)[:3] + b"\xff" * 40
    assert scan(cut).end == "torn"  # opcode written, the length still padding


def test_valid_ops_after_a_run_of_zeros_are_still_found() -> None:
    # The search past a bad op jumps over runs of zeros (no frame has
    # length 0) instead of trying every offset; ops after the run must still count.
    torn = HEADER + ops(1, 4) + encode_op(OP_OPAQUE, 5, b"x" * 20)[:10]
    for gap in (0, 1, 3, 4, 5, 17, 4096):
        for after in (ops(6, 2), b"\x01" + ops(6, 2), b"\0\0\x07" + ops(6, 2)):
            result = scan(torn + bytes(gap) + after)
            assert (result.end, result.last_txid) == ("corrupt", 4), (gap, after[:3])
    assert scan(torn + bytes(1 << 20)).end == "torn"
    assert scan(torn + bytes(1 << 20) + b"\x01\x02").end == "torn"


def test_a_zero_filled_tail_is_not_searched_offset_by_offset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A torn op then a MiB of zeros cost ~0.2 s per MiB, once per offset.
    calls = 0
    real = framing._is_frame

    def counting(*args: object) -> bool:
        nonlocal calls
        calls += 1
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(framing, "_is_frame", counting)
    torn = HEADER + ops(1, 4) + encode_op(OP_OPAQUE, 5, b"x" * 20)[:10]
    assert scan(torn + bytes(1 << 20)).end == "torn"
    assert calls < 100, calls


def test_every_single_bit_flip_is_detected() -> None:
    clean = HEADER + ops(1, 3, size=8)
    for pos in range(len(HEADER), len(clean)):
        for bit in (0x01, 0x80):
            data = bytearray(clean)
            data[pos] ^= bit
            result = scan(bytes(data))
            assert result.num_ops < 3, (pos, bit)
            assert result.problem is not None, (pos, bit)


def test_header_checks() -> None:
    assert read_header(HEADER) == -64
    with pytest.raises(EditLogError, match="padding"):
        read_header(b"\xff" * 8)
    with pytest.raises(EditLogError, match="layout version -40"):
        read_header(struct.pack(">ii", -40, 0))
    with pytest.raises(EditLogError, match="flags"):
        read_header(struct.pack(">ii", -64, 1))
    assert scan(b"\xff" * 100).end == "no-header"
    assert scan(b"").end == "no-header"


def test_validate_batch() -> None:
    batch = ops(10, 3)
    assert len(validate_batch(batch, 10, 3)) == 3
    with pytest.raises(EditLogError, match="expected 11"):
        validate_batch(batch, 11, 3)
    with pytest.raises(EditLogError, match="claims 2 ops"):
        validate_batch(batch, 10, 2)
    with pytest.raises(EditLogError, match="holds 3"):
        validate_batch(batch, 10, 4)
    with pytest.raises(EditLogError, match="cut short"):
        validate_batch(batch[:-3], 10, 3)
    gap = ops(10, 1) + ops(12, 1)
    with pytest.raises(EditLogError, match="txid 12, expected 11"):
        validate_batch(gap, 10, 2)


def test_validate_batch_refuses_every_changed_byte() -> None:
    # Each byte of a frame is covered by its length, txid or checksum check.
    batch = b"".join(encode_op(OP_OPAQUE, t, bytes([t]) * (t - 9)) for t in range(10, 13))
    offsets = validate_batch(batch, 10, 3)
    assert offsets == [0, 18, 37]
    assert validate_batch(memoryview(batch), 10, 3) == offsets
    assert validate_batch(bytearray(batch), 10, 3) == offsets
    for i in range(len(batch)):
        bad = bytearray(batch)
        bad[i] ^= 0x01
        with pytest.raises(EditLogError):
            validate_batch(bytes(bad), 10, 3)
    with pytest.raises(EditLogError, match="impossible length"):
        validate_batch(struct.pack(">Biq", OP_OPAQUE, 11, 10) + bytes(8), 10, 1)
    assert validate_batch(b"", 10, 0) == []
    with pytest.raises(EditLogError, match="more bytes after them"):
        validate_batch(batch, 10, 0)


def test_segment_names_round_trip(tmp_path: Path) -> None:
    assert inprogress_name(5) == "edits_inprogress_0000000000000000005"
    assert finalized_name(1, 121) == "edits_0000000000000000001-0000000000000000121"
    for name in (inprogress_name(9), finalized_name(1, 8), "VERSION", "edits_1-2"):
        (tmp_path / name).touch()
    segs = list_segments(tmp_path)
    assert [(s.start, s.end) for s in segs] == [(1, 8), (9, None)]
    assert parse_segment_name(tmp_path / "edits_1-2") is None


def test_segment_writer_preallocates_and_close_cuts_padding(tmp_path: Path) -> None:
    path = tmp_path / inprogress_name(1)
    w = SegmentWriter.create(path, -64)
    w.write(ops(1, 100))
    w.sync()
    assert path.stat().st_size == PREALLOCATE_CHUNK + len(HEADER)
    mid = scan_file(path)
    assert (mid.end, mid.last_txid) == ("padding", 100)
    w.close()
    assert path.stat().st_size == len(HEADER) + len(ops(1, 100))
    assert scan_file(path).end == "eof"


def test_parse_available_handles_data_arriving_in_pieces() -> None:
    data = HEADER + ops(1, 4) + bytes([OP_INVALID]) * 10
    buf = bytearray()
    pos = len(HEADER)
    got: list[int] = []
    padded = False
    for i in range(len(data)):
        buf.append(data[i])
        if len(buf) <= len(HEADER):
            continue
        found, pos, padded, problem = parse_available(buf, pos)
        assert problem is None
        got.extend(op.txid for op in found)
        if padded:
            break
    assert got == [1, 2, 3, 4] and padded


def test_parse_available_returns_the_ops_before_a_bad_frame() -> None:
    data = bytearray(HEADER + ops(1, 4))
    data[len(HEADER) + 2 * len(ops(1, 1)) + 15] ^= 1  # inside txid 3
    found, pos, padded, problem = parse_available(data, len(HEADER))
    assert [op.txid for op in found] == [1, 2] and not padded
    assert problem is not None and problem.txid == 3 and problem.offset == pos
