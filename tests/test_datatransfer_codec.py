"""DataTransferProtocol framing (design §B.3): op prefixes, packets, acks, chunk sums."""

from __future__ import annotations

import struct

import crc32c
import pytest

from qjm.hdfs import checksum
from qjm.hdfs import datatransfer as codec
from qjm.hdfs.proto import datatransfer_pb2 as dt
from qjm.hdfs.proto import hdfs_pb2


def test_op_codes_are_hadoops() -> None:
    assert {op.name: op.value for op in codec.Op} == {
        "WRITE_BLOCK": 80,
        "READ_BLOCK": 81,
        "READ_METADATA": 82,
        "REPLACE_BLOCK": 83,
        "COPY_BLOCK": 84,
        "BLOCK_CHECKSUM": 85,
        "TRANSFER_BLOCK": 86,
        "REQUEST_SHORT_CIRCUIT_FDS": 87,
        "RELEASE_SHORT_CIRCUIT_FDS": 88,
        "REQUEST_SHORT_CIRCUIT_SHM": 89,
        "BLOCK_GROUP_CHECKSUM": 90,
        "CUSTOM": 127,
    }


def test_op_request_bytes() -> None:
    op = dt.OpBlockChecksumProto(
        header=dt.BaseHeaderProto(
            block=hdfs_pb2.ExtendedBlockProto(poolId="BP-1", blockId=1 << 30, generationStamp=1001)
        )
    )
    body = op.SerializeToString()
    frame = codec.encode_op(codec.Op.BLOCK_CHECKSUM, op)
    # version 28 big-endian, op 85, varint length, proto
    assert frame[:3] == b"\x00\x1c\x55"
    assert frame[3] == len(body) and frame[4:] == body
    assert codec.decode_op_prefix(frame[:3]) is codec.Op.BLOCK_CHECKSUM


@pytest.mark.parametrize(
    ("prefix", "message"),
    [
        (b"\x00\x1b\x51", "version mismatch: expected 28, received 27"),
        (b"\x47\x45\x54", "received 18245"),  # "GET": an HTTP client on the wrong port
        (b"\x00\x1c\x10", "unknown data transfer op code 16"),
        (b"\x00\x1c", "op prefix is 2 bytes"),
    ],
)
def test_op_prefix_refused(prefix: bytes, message: str) -> None:
    with pytest.raises(codec.MalformedTransferError, match=message):
        codec.decode_op_prefix(prefix)


def test_packet_layout_matches_hadoop() -> None:
    data = b"x" * 700
    sums = checksum.chunk_sums(data)
    frame = codec.encode_packet(1024, 7, data, sums, sync=True)
    payload_len, header_len = struct.unpack(">iH", frame[:6])
    assert payload_len == 4 + len(sums) + len(data) == 4 + 8 + 700
    assert header_len == 27  # four fixed fields and syncBlock
    header = dt.PacketHeaderProto.FromString(frame[6 : 6 + header_len])
    assert (header.offsetInBlock, header.seqno, header.dataLen, header.syncBlock) == (
        1024,
        7,
        700,
        True,
    )
    assert frame[6 + header_len :] == sums + data
    # Without sync the field is absent, as Hadoop sends it: 25 bytes.
    assert struct.unpack(">iH", codec.encode_packet(0, 0, b"", b"")[:6])[1] == 25


@pytest.mark.parametrize(
    ("offset", "data", "last", "sync"),
    [
        (0, b"", True, False),
        (0, b"a" * 512, False, False),
        (512, b"b" * 1500, False, True),
        (700, b"c" * 400, False, False),  # starts inside a chunk (append)
        (1 << 40, b"d", True, False),
    ],
)
def test_packet_round_trip(offset: int, data: bytes, last: bool, sync: bool) -> None:
    sums = checksum.chunk_sums(data, 512, offset)
    packet = codec.decode_packet(codec.encode_packet(offset, 3, data, sums, last=last, sync=sync))
    assert packet.header.offset_in_block == offset
    assert packet.header.last_packet_in_block is last and packet.header.sync_block is sync
    assert (packet.data, packet.sums) == (data, sums)
    assert packet.end_offset == offset + len(data)
    assert checksum.first_bad_chunk(packet.data, packet.sums, 512, offset) is None


def test_heartbeat_packet() -> None:
    packet = codec.decode_packet(codec.heartbeat_packet())
    assert packet.header.is_heartbeat and packet.header.seqno == -1 and packet.data == b""


def _lengths(payload: int, header: int) -> bytes:
    return struct.pack(">iH", payload, header)


@pytest.mark.parametrize(
    ("lengths", "message"),
    [
        (_lengths(0x7FFFFFFF, 25), "packet data and checksums of 2147483643 bytes is outside"),
        (_lengths(-5, 25), "payload length -5 is below 4"),
        (_lengths(3, 25), "payload length 3 is below 4"),
        (_lengths(100, 0), "header length is 0"),
        (_lengths(100, 60000), "packet header of 60000 bytes is outside 0..256"),
        (b"\x00\x00", "packet lengths are 2 bytes"),
    ],
)
def test_packet_lengths_refused(lengths: bytes, message: str) -> None:
    with pytest.raises(codec.MalformedTransferError, match=message):
        codec.decode_packet_lengths(lengths)


def test_packet_bound_is_configurable() -> None:
    assert codec.decode_packet_lengths(_lengths(4 + 1000, 25), max_payload=1000) == (1004, 25)
    with pytest.raises(codec.MalformedTransferError, match="outside 0..999"):
        codec.decode_packet_lengths(_lengths(4 + 1000, 25), max_payload=999)


def test_packet_header_inconsistent_with_lengths() -> None:
    frame = bytearray(codec.encode_packet(0, 1, b"z" * 10, checksum.chunk_sums(b"z" * 10)))
    header_len = struct.unpack(">H", frame[4:6])[0]
    header = dt.PacketHeaderProto.FromString(bytes(frame[6 : 6 + header_len]))
    header.dataLen = 100  # more data than the payload holds
    with pytest.raises(codec.MalformedTransferError, match="data length 100 is outside 0..14"):
        codec.decode_packet_header(header.SerializeToString(), 4 + 4 + 10)
    with pytest.raises(codec.MalformedTransferError, match="malformed packet header"):
        codec.decode_packet_header(b"\xff\xff\xff", 18)
    with pytest.raises(codec.MalformedTransferError, match="its lengths say"):
        codec.decode_packet(bytes(frame[:-1]))


def test_chunk_sums_are_crc32c_big_endian() -> None:
    data = bytes(range(256)) * 5  # 1280 bytes: chunks 512, 512, 256
    sums = checksum.chunk_sums(data, 512)
    assert sums == b"".join(
        crc32c.crc32c(data[i : i + 512]).to_bytes(4, "big") for i in (0, 512, 1024)
    )
    # A start inside a chunk: the first chunk ends at the block's next boundary.
    assert checksum.chunk_bounds(700, 1000, 512) == [(0, 324), (324, 836), (836, 1000)]


def test_first_bad_chunk_names_the_block_offset() -> None:
    data = bytearray(b"q" * 2000)
    sums = checksum.chunk_sums(bytes(data), 512, 4096)
    data[1100] ^= 1  # in the third chunk: block offset 4096 + 1024
    assert checksum.first_bad_chunk(bytes(data), sums, 512, 4096) == 4096 + 1024
    with pytest.raises(checksum.ChecksumError, match="has 12 checksum bytes"):
        checksum.first_bad_chunk(bytes(data), sums[:12], 512, 4096)


@pytest.mark.parametrize(
    ("replies", "first_bad"),
    [
        ((dt.SUCCESS,), None),
        ((dt.SUCCESS, dt.SUCCESS, dt.SUCCESS), None),
        ((dt.SUCCESS, dt.ERROR), 1),
        ((dt.SUCCESS, dt.SUCCESS, dt.ERROR), 2),
        ((dt.ERROR_CHECKSUM,), 0),
    ],
)
def test_ack_round_trip(replies: tuple[int, ...], first_bad: int | None) -> None:
    frame = codec.encode_ack(codec.PipelineAck(9, replies, 1234))
    assert frame[0] == len(frame) - 1
    proto = dt.PipelineAckProto.FromString(frame[1:])
    assert list(proto.reply) == list(replies)
    assert list(proto.flag) == list(replies)  # ECN disabled: the flag is the status
    ack = codec.decode_ack(frame[1:])
    assert ack == codec.PipelineAck(9, replies, 1234)
    assert ack.first_bad == first_bad and ack.ok is (first_bad is None)


def test_ack_status_comes_from_flag_when_sent() -> None:
    # Hadoop 3 reads the flag: ECN bits (5-6) set, status in the low 4 bits.
    congested = (3 << codec.ACK_ECN_SHIFT) | dt.ERROR
    proto = dt.PipelineAckProto(seqno=4, reply=[dt.SUCCESS], flag=[congested])
    assert codec.decode_ack(proto.SerializeToString()).replies == (dt.ERROR,)
    # An old sender with no flags: the reply list.
    old = dt.PipelineAckProto(seqno=4, reply=[dt.SUCCESS, dt.ERROR_CHECKSUM])
    assert codec.decode_ack(old.SerializeToString()).replies == (dt.SUCCESS, dt.ERROR_CHECKSUM)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (dt.PipelineAckProto(seqno=1).SerializeToString(), "ack for seqno 1 has no replies"),
        (
            dt.PipelineAckProto(seqno=1, reply=[0, 0], flag=[0]).SerializeToString(),
            "2 replies but 1 flags",
        ),
        (b"\x0a\x05ab", "malformed pipeline ack"),
    ],
)
def test_malformed_acks(payload: bytes, message: str) -> None:
    with pytest.raises(codec.MalformedTransferError, match=message):
        codec.decode_ack(payload)


def test_varints_and_length_bounds() -> None:
    for value in (0, 1, 127, 128, 300, 1 << 20, (1 << 32) - 1):
        enc = codec.encode_varint(value)
        assert codec.decode_varint(enc, "x") == value
        assert codec.decode_varint(enc[:-1], "x") is None  # needs more bytes
    with pytest.raises(codec.MalformedTransferError, match="op length varint longer than 5"):
        codec.decode_varint(b"\xff" * 5, "op")
    with pytest.raises(codec.MalformedTransferError, match="WRITE_BLOCK request of 2147483648"):
        codec.check_length(1 << 31, codec.MAX_OP_PROTO, "WRITE_BLOCK request")
