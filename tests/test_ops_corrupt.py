"""Damaged ops are reported with their txid and offset, never decoded into a wrong op."""

from __future__ import annotations

import random
import struct
import zlib

import pytest

from conftest import FIXTURES
from qjm.editlog import framing
from qjm.editlog.ops import (
    MkdirOp,
    OpDecodeError,
    OpEncodeError,
    PermissionStatus,
    decode_op,
    encode_op,
    iter_decoded,
    read_ops,
)
from qjm.errors import CorruptOpError, EditLogError

EDITS = FIXTURES / "editsStored"


def _reframe(opcode: int, txid: int, body: bytes) -> bytes:
    """A frame with a correct CRC for an arbitrary (possibly bad) body."""
    head = struct.pack(">Biq", opcode, 12 + len(body), txid)
    return head + body + struct.pack(">I", zlib.crc32(head + body))


def test_every_bit_flip_is_reported_with_its_txid() -> None:
    data = EDITS.read_bytes()
    rng = random.Random(20240601)
    raws = list(framing.iter_ops(data))
    checked = 0
    for raw in raws:
        frame = data[raw.offset : raw.offset + raw.size]
        for pos in range(len(frame)):
            bad = bytearray(frame)
            bad[pos] ^= 1 << rng.randrange(8)
            with pytest.raises(CorruptOpError) as info:
                list(iter_decoded(bytes(bad)))
            err = info.value
            if 5 <= pos < 13:  # the txid field itself: located by offset
                assert err.offset == 0
            else:
                assert err.txid == raw.txid, (raw.txid, pos, str(err))
            assert str(raw.txid) in str(err) or 5 <= pos < 13
            checked += 1
    assert checked == len(data) - framing.HEADER_LEN


def test_bit_flips_in_the_whole_file() -> None:
    data = EDITS.read_bytes()
    raws = list(framing.iter_ops(data))
    rng = random.Random(7)
    for _ in range(200):
        raw = rng.choice(raws)
        pos = raw.offset + 13 + rng.randrange(max(1, len(raw.body) + 4))
        bad = bytearray(data)
        bad[pos] ^= 1 << rng.randrange(8)
        with pytest.raises(CorruptOpError) as info:
            list(read_ops(bytes(bad)))
        assert info.value.txid == raw.txid
        assert info.value.offset == raw.offset


def test_short_or_overlong_bodies_with_valid_crc_are_refused() -> None:
    data = EDITS.read_bytes()
    for raw in framing.iter_ops(data):
        longer = _reframe(raw.opcode, raw.txid, raw.body + b"\x00")
        with pytest.raises(OpDecodeError, match=f"txid {raw.txid}") as info:
            list(iter_decoded(longer))
        assert info.value.txid == raw.txid and info.value.offset == 0
        for cut in range(1, len(raw.body) + 1):
            short = _reframe(raw.opcode, raw.txid, raw.body[:-cut])
            with pytest.raises(OpDecodeError, match=f"txid {raw.txid}"):
                list(iter_decoded(short))


def test_unknown_opcode_names_txid_and_offset() -> None:
    frame = framing.encode_op(60, 42, b"\x00\x01")
    raw = next(framing.iter_ops(b"\x00" * 5 + frame, 5))
    with pytest.raises(OpDecodeError, match="txid 42 at offset 5 has unknown opcode 60") as info:
        decode_op(raw)
    assert (info.value.txid, info.value.offset, info.value.opcode) == (42, 5, 60)


def test_bad_values_are_refused() -> None:
    # OP_SET_OWNER whose path bytes are not UTF-8
    body = b"\x00\x02\xff\xfe\x00\x00\x00\x00"
    with pytest.raises(OpDecodeError, match="not valid UTF-8"):
        list(iter_decoded(_reframe(8, 9, body)))
    # OP_RENAME with an unknown option byte
    body = b"\x00\x01a\x00\x01b" + b"\x00" * 8 + b"\x00\x00\x00\x01\x07" + b"\x00\x00" + b"\xff" * 4
    with pytest.raises(OpDecodeError, match="unknown rename option 7"):
        list(iter_decoded(_reframe(15, 3, body)))


def test_other_layouts_are_refused() -> None:
    data = framing.header(-63) + encode_op(
        MkdirOp(
            inode_id=1, path="/a", timestamp=0, permission_status=PermissionStatus("a", "b", 0)
        ),
        1,
    )
    with pytest.raises(EditLogError, match="layout -63"):
        list(read_ops(data))


def test_unencodable_values_raise_encode_error() -> None:
    op = MkdirOp(
        inode_id=2**63, path="/a", timestamp=0, permission_status=PermissionStatus("a", "b", 0)
    )
    with pytest.raises(OpEncodeError, match="OP_MKDIR"):
        encode_op(op, 1)
