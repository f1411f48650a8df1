"""HDFS edit-log framing (layout -64): the file header and the op frame, nothing of op bodies.

An op is ``opcode:u8, length:i32, txid:i64, body, crc32:i32``, big-endian, where
``length = 4 + 8 + len(body)`` and the CRC (zlib's) covers opcode through body.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from qjm.errors import CorruptOpError, EditLogError

LAYOUT_VERSION = -64
HEADER_LEN = 8
HEADER = struct.pack(">ii", LAYOUT_VERSION, 0)
OP_INVALID = 0xFF
OP_END_LOG_SEGMENT = 23
OP_START_LOG_SEGMENT = 24
# A user of the journal that is not a NameNode carries opaque payloads in this op; it lies
# outside HDFS's opcode table (0..52) so HDFS tools report it as unknown, not as a wrong op.
OP_OPAQUE = 0x80
MIN_OP_SIZE = 17  # opcode + length + txid + crc with an empty body
MAX_OP_SIZE = 50 * 1024 * 1024  # HDFS's dfs.namenode.max.op.size
# The oldest layout whose ops carry a length field (EDITLOG_LENGTH); newer ones are smaller.
EDITLOG_LENGTH_LAYOUT = -56

Buffer = bytes | bytearray | memoryview  # anything the parsers read from
_HDR = struct.Struct(">ii")
_FRAME = struct.Struct(">Biq")  # opcode, length, txid
_CRC = struct.Struct(">I")
_CRC_FRAME = struct.Struct(">IBiq")  # a CRC, then the next frame's opcode, length, txid
_ZERO_LENGTH = bytes(4)
_NONZERO = re.compile(rb"[^\x00]")


def header(layout_version: int = LAYOUT_VERSION) -> bytes:
    """The 8-byte edit-log file header for a layout version."""
    return _HDR.pack(layout_version, 0)


def read_header(data: Buffer) -> int:
    """Validate an edit-log header and return its layout version."""
    if len(data) < HEADER_LEN:
        raise EditLogError(f"edit log too short for its header: {len(data)} of 8 bytes")
    layout, flags = _HDR.unpack_from(data, 0)
    if layout == -1 and flags == -1:
        raise EditLogError("edit log header is 0xFF padding: the file holds no edits")
    if layout >= 0 or layout > EDITLOG_LENGTH_LAYOUT:
        raise EditLogError(
            f"unsupported edit log layout version {layout}: ops carry a length field only "
            f"from layout {EDITLOG_LENGTH_LAYOUT} on (newer layouts are smaller numbers)"
        )
    if flags != 0:
        raise EditLogError(f"edit log header has layout flags {flags}; only 0 is understood")
    return int(layout)


def encode_op(opcode: int, txid: int, body: bytes = b"") -> bytes:
    """Frame one op: opcode, length, txid, body and its CRC32."""
    head = _FRAME.pack(opcode, 12 + len(body), txid)
    crc = zlib.crc32(body, zlib.crc32(head))
    return head + body + _CRC.pack(crc)


def op_size(body_len: int) -> int:
    """Bytes one framed op takes for a body of this length."""
    return MIN_OP_SIZE + body_len


@dataclass(frozen=True, slots=True)
class RawOp:
    """One framed op: its opcode, txid, body and where its frame starts."""

    opcode: int
    txid: int
    body: bytes
    offset: int

    @property
    def size(self) -> int:
        """Bytes of the whole frame."""
        return MIN_OP_SIZE + len(self.body)


def _frame_at(data: Buffer, pos: int, end: int) -> tuple[int, int, int]:
    """Check the frame at pos; return (opcode, txid, frame end) or raise CorruptOpError."""
    if end - pos < 13:
        raise CorruptOpError(
            f"op at offset {pos} is cut short: {end - pos} bytes left, a frame needs at least "
            f"{MIN_OP_SIZE}",
            offset=pos,
        )
    opcode, length, txid = _FRAME.unpack_from(data, pos)
    size = length + 5
    if size < MIN_OP_SIZE or size > MAX_OP_SIZE:
        raise CorruptOpError(
            f"op at offset {pos} (txid {txid}?) has impossible length {length}",
            offset=pos,
            txid=txid,
        )
    stop = pos + size
    if stop > end:
        raise CorruptOpError(
            f"op txid {txid} at offset {pos} is cut short: needs {size} bytes, {end - pos} left",
            offset=pos,
            txid=txid,
        )
    crc = zlib.crc32(data[pos : stop - 4])
    (stored,) = _CRC.unpack_from(data, stop - 4)
    if crc != stored:
        raise CorruptOpError(
            f"op txid {txid} at offset {pos} is corrupt: checksum {stored:#010x} "
            f"stored, {crc:#010x} computed",
            offset=pos,
            txid=txid,
        )
    return opcode, txid, stop


def iter_ops(data: Buffer, offset: int = HEADER_LEN) -> Iterator[RawOp]:
    """Yield the ops from offset to the end or to 0xFF padding; raise on a bad frame."""
    end = len(data)
    pos = offset
    expected: int | None = None
    while pos < end and data[pos] != OP_INVALID:
        opcode, txid, stop = _frame_at(data, pos, end)
        if expected is not None and txid != expected:
            raise CorruptOpError(
                f"txid {txid} at offset {pos} breaks the sequence: expected {expected}",
                offset=pos,
                txid=txid,
            )
        yield RawOp(opcode, txid, bytes(data[pos + 13 : stop - 4]), pos)
        expected = txid + 1
        pos = stop


def validate_batch(records: Buffer, first_txid: int, num_txns: int) -> list[int]:
    """Check that records are exactly num_txns whole ops numbered from first_txid.

    Returns the offset where each op starts, so callers can cut the batch at op boundaries.
    Every frame's length, checksum and txid is checked; the first irregular frame sends
    the batch to _explain_bad_batch, which names what is wrong.
    """
    end = len(records)
    if end < MIN_OP_SIZE or num_txns <= 0:
        return _explain_bad_batch(records, first_txid, num_txns)
    # zlib.crc32 of a bytes slice (a 200-byte copy) beats one of a memoryview slice.
    data = records if isinstance(records, bytes) else bytes(records)
    crc32 = zlib.crc32
    unpack_crc_and_next = _CRC_FRAME.unpack_from  # this op's CRC and the next op's head
    _, length, found = _FRAME.unpack_from(data, 0)
    offsets: list[int] = []
    pos = 0
    txid = first_txid
    last_txid = first_txid + num_txns - 1
    while True:
        stop = pos + length + 5
        if found != txid or length < 12 or length > MAX_OP_SIZE - 5 or stop > end:
            break
        offsets.append(pos)
        if txid < last_txid and stop <= end - 13:
            stored, _, length, found = unpack_crc_and_next(data, stop - 4)
            if crc32(data[pos : stop - 4]) != stored:
                break
        else:
            if crc32(data[pos : stop - 4]) == _CRC.unpack_from(data, stop - 4)[0] and (
                txid == last_txid and stop == end
            ):
                return offsets
            break
        txid += 1
        pos = stop
    return _explain_bad_batch(records, first_txid, num_txns)


def _explain_bad_batch(records: Buffer, first_txid: int, num_txns: int) -> list[int]:
    """Raise the error that names the first problem of a batch validate_batch refused."""
    end = len(records)
    pos = 0
    offsets: list[int] = []
    expected = first_txid
    while pos < end:
        if len(offsets) == num_txns:
            raise EditLogError(
                f"batch from txid {first_txid} claims {num_txns} ops but has "
                f"{end - pos} more bytes after them"
            )
        _, txid, stop = _frame_at(records, pos, end)
        if txid != expected:
            raise CorruptOpError(
                f"batch op at offset {pos} has txid {txid}, expected {expected} "
                f"(batch claims txids {first_txid}..{first_txid + num_txns - 1})",
                offset=pos,
                txid=txid,
            )
        offsets.append(pos)
        expected += 1
        pos = stop
    if len(offsets) != num_txns:
        raise EditLogError(
            f"batch from txid {first_txid} claims {num_txns} ops but holds {len(offsets)}"
        )
    return offsets


@dataclass(frozen=True, slots=True)
class ScanResult:
    """What a scan of one edit-log file found."""

    layout_version: int | None
    first_txid: int | None
    last_txid: int | None
    num_ops: int
    valid_length: int  # bytes from the start of the file through the last good op
    end: str  # "eof", "padding", "torn", "corrupt" or "no-header"
    problem: str | None = None
    problem_txid: int | None = None


def scan(data: Buffer) -> ScanResult:
    """Find the last valid op of an edit-log file, stopping at padding or a bad frame.

    A bad frame with no valid frame after it (only 0xFF, zeros or a partial write) is a
    torn tail: the file is valid up to the last good op. A bad frame that valid frames
    follow is corruption ("corrupt"): the ops after it exist, so the file is damaged, not
    short, and callers must not treat the last good op as the end of the log.
    """
    try:
        layout = read_header(data)
    except EditLogError as e:
        return ScanResult(None, None, None, 0, 0, "no-header", str(e))
    end = len(data)
    pos = HEADER_LEN
    first: int | None = None
    last: int | None = None
    count = 0
    while True:
        if pos >= end:
            return ScanResult(layout, first, last, count, pos, "eof")
        if data[pos] == OP_INVALID:
            return ScanResult(layout, first, last, count, pos, "padding")
        try:
            _, txid, stop = _frame_at(data, pos, end)
        except CorruptOpError as e:
            kind = "corrupt" if _valid_frame_after(data, pos, end, last) else "torn"
            return ScanResult(layout, first, last, count, pos, kind, str(e), e.txid)
        if last is not None and txid != last + 1:  # a whole op out of sequence is damage
            problem = f"txid {txid} at offset {pos} breaks the sequence: expected {last + 1}"
            return ScanResult(layout, first, last, count, pos, "corrupt", problem, txid)
        if first is None:
            first = txid
        last = txid
        count += 1
        pos = stop


def _valid_frame_after(data: Buffer, pos: int, end: int, last: int | None) -> bool:
    """True when a whole, checksummed op with a txid above last starts after pos.

    HDFS's scanEditLog resyncs past a bad op and counts the ops after it, which advertises
    txids around a hole it cannot serve; we only detect them, so that the bad file fails
    loudly instead of being cut (design §J.15). The frame the bad op's length points at is
    tried first; a bad length makes us look at every later offset but those in trailing
    0xFF padding and those whose length field is all zeros (a 4 MiB zero tail: 0.94 s
    before, 0.03 s now).
    """
    if end - pos >= 13:
        _, length, _ = _FRAME.unpack_from(data, pos)
        stop = pos + length + 5
        if MIN_OP_SIZE <= length + 5 <= MAX_OP_SIZE and _is_frame(data, stop, end, last):
            return True
    # A frame cannot start in the trailing 0xFF padding: skip it (often a whole MiB).
    used = pos + 1 + len(bytes(data[pos + 1 : end]).rstrip(bytes([OP_INVALID])))
    q = pos + 1
    while q < used:
        if data[q + 1 : q + 5] == _ZERO_LENGTH:
            # No frame has length 0: jump over a run of zeros (a preallocated or zero-filled
            # tail) to the first offset whose length field reaches a nonzero byte.
            m = _NONZERO.search(data, q + 5, used)
            if m is None:
                return False
            q = m.start() - 4
            continue
        if _is_frame(data, q, end, last):
            return True
        q += 1
    return False


def _is_frame(data: Buffer, pos: int, end: int, last: int | None) -> bool:
    """True when a valid op with a txid above last starts at pos."""
    if end - pos < MIN_OP_SIZE or data[pos] == OP_INVALID:
        return False
    _, length, txid = _FRAME.unpack_from(data, pos)
    if not MIN_OP_SIZE <= length + 5 <= min(MAX_OP_SIZE, end - pos):
        return False
    if last is not None and txid <= last:
        return False
    if last is None and txid <= 0:
        return False
    try:
        _frame_at(data, pos, end)
    except CorruptOpError:
        return False
    return True


def parse_available(data: Buffer, pos: int) -> tuple[list[RawOp], int, bool, CorruptOpError | None]:
    """Parse the whole ops from pos on, for data that arrives in pieces.

    Returns (ops, position after the last whole op, whether 0xFF padding was reached, the
    error of a bad frame after those ops or None). A frame cut off at the end of data is
    left for the next call.
    """
    ops: list[RawOp] = []
    end = len(data)
    while pos < end:
        if data[pos] == OP_INVALID:
            return ops, pos, True, None
        if end - pos < 13:
            break
        _, length, _ = _FRAME.unpack_from(data, pos)
        size = length + 5
        if MIN_OP_SIZE <= size <= MAX_OP_SIZE and pos + size > end:
            break  # the rest of this op has not arrived yet
        try:
            opcode, txid, stop = _frame_at(data, pos, end)
        except CorruptOpError as e:
            return ops, pos, False, e
        ops.append(RawOp(opcode, txid, bytes(data[pos + 13 : stop - 4]), pos))
        pos = stop
    return ops, pos, False, None
