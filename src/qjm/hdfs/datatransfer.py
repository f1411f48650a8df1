"""DataTransferProtocol v28 framing, pure: ops, packets and pipeline acks.

A packet's chunk sums are qjm.hdfs.checksum's (chunk_sums, first_bad_chunk).

No sockets here: encoders return bytes, decoders take bytes already read and check every
length a peer sent against a bound before anything is allocated (design §B.3).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum
from typing import TypeVar

from google.protobuf.message import DecodeError, Message

from qjm.errors import QjmError
from qjm.hdfs.proto import datatransfer_pb2 as dt

DATA_TRANSFER_VERSION = 28
HEARTBEAT_SEQNO = -1
BYTES_PER_CHECKSUM = 512
CHECKSUM_SIZE = 4  # a CRC32C, big-endian, per chunk
CHECKSUM_NULL = 0
CHECKSUM_CRC32 = 1
CHECKSUM_CRC32C = 2

# Bounds on lengths a peer sends (design §B.3). Hadoop's PacketReceiver refuses packets over
# 16 MiB; an op's proto carries a few DatanodeInfos and a token, far under 1 MiB.
MAX_PACKET_PAYLOAD = 16 * 1024 * 1024
MAX_PACKET_HEADER = 256
MAX_OP_PROTO = 1024 * 1024
MAX_ACK_PROTO = 4096
MAX_RESPONSE_PROTO = 64 * 1024
MAX_VARINT_BYTES = 5  # a length below 2**32 fits in five varint bytes

# The 6 bytes before a packet's header proto: payload length (4 + sums + data), header length.
PACKET_LENGTHS = struct.Struct(">iH")
_OP_PREFIX = struct.Struct(">hB")

# PipelineAckProto.flag: bits 0-3 the status, bit 4 reserved, bits 5-6 the ECN (Hadoop 3).
ACK_STATUS_MASK = 0x0F
ACK_ECN_SHIFT = 5


class Op(IntEnum):
    """DataTransferProtocol op codes (Hadoop's Op enum)."""

    WRITE_BLOCK = 80
    READ_BLOCK = 81
    READ_METADATA = 82
    REPLACE_BLOCK = 83
    COPY_BLOCK = 84
    BLOCK_CHECKSUM = 85
    TRANSFER_BLOCK = 86
    REQUEST_SHORT_CIRCUIT_FDS = 87
    RELEASE_SHORT_CIRCUIT_FDS = 88
    REQUEST_SHORT_CIRCUIT_SHM = 89
    BLOCK_GROUP_CHECKSUM = 90
    CUSTOM = 127


class DataTransferError(QjmError):
    """A data transfer that failed: a peer's error status or bytes that make no sense."""


class MalformedTransferError(DataTransferError):
    """Bytes from a peer that are not DataTransferProtocol: names the part and the bound."""


def status_name(status: int) -> str:
    """The Status enum's name for a number (or the number when unknown)."""
    try:
        return dt.Status.Name(status)
    except ValueError:
        return f"status {status}"


_M = TypeVar("_M", bound=Message)


def parse_message(cls: type[_M], payload: bytes | bytearray | memoryview, what: str) -> _M:
    """A proto of type cls from payload; MalformedTransferError naming what if it is not one."""
    message = cls()
    try:
        message.ParseFromString(bytes(payload))
    except DecodeError as exc:
        raise MalformedTransferError(f"malformed {what}: {exc}") from None
    return message


def encode_varint(value: int) -> bytes:
    """Protobuf base-128 varint of a non-negative integer."""
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def decode_varint(buf: bytes | bytearray | memoryview, what: str) -> int | None:
    """The varint that buf holds entirely, None while more bytes are needed.

    MalformedTransferError when it runs past MAX_VARINT_BYTES (a length no bound allows).
    """
    value = 0
    for i, b in enumerate(buf):
        if i >= MAX_VARINT_BYTES:
            break
        value |= (b & 0x7F) << (7 * i)
        if b < 0x80:
            return value
    if len(buf) >= MAX_VARINT_BYTES:
        raise MalformedTransferError(f"{what} length varint longer than {MAX_VARINT_BYTES} bytes")
    return None


def check_length(length: int, limit: int, what: str) -> int:
    """length when 0 <= length <= limit, else MalformedTransferError naming what and limit."""
    if length < 0 or length > limit:
        raise MalformedTransferError(f"{what} of {length} bytes is outside 0..{limit}")
    return length


def delimited(message: Message) -> bytes:
    """message with its varint length first (Java's writeDelimitedTo)."""
    body = message.SerializeToString()
    return encode_varint(len(body)) + body


# --- ops ---------------------------------------------------------------------------------


def encode_op(op: Op, message: Message) -> bytes:
    """An op request: version 28 (2 bytes), the op code (1 byte), the delimited proto."""
    return _OP_PREFIX.pack(DATA_TRANSFER_VERSION, op) + delimited(message)


def decode_op_prefix(prefix: bytes | bytearray | memoryview) -> Op:
    """The op of a request's first 3 bytes; MalformedTransferError for a wrong version or op."""
    if len(prefix) != _OP_PREFIX.size:
        raise MalformedTransferError(f"op prefix is {len(prefix)} bytes, expected 3")
    version, code = _OP_PREFIX.unpack(bytes(prefix))
    if version != DATA_TRANSFER_VERSION:
        raise MalformedTransferError(
            f"data transfer version mismatch: expected {DATA_TRANSFER_VERSION}, received {version}"
        )
    try:
        return Op(code)
    except ValueError:
        raise MalformedTransferError(f"unknown data transfer op code {code}") from None


OP_MESSAGES: dict[Op, type[Message]] = {
    Op.WRITE_BLOCK: dt.OpWriteBlockProto,
    Op.READ_BLOCK: dt.OpReadBlockProto,
    Op.REPLACE_BLOCK: dt.OpReplaceBlockProto,
    Op.COPY_BLOCK: dt.OpCopyBlockProto,
    Op.BLOCK_CHECKSUM: dt.OpBlockChecksumProto,
    Op.TRANSFER_BLOCK: dt.OpTransferBlockProto,
}


# --- packets -----------------------------------------------------------------------------


@dataclass(frozen=True)
class PacketHeader:
    """A packet's header and the sizes of what follows it."""

    offset_in_block: int
    seqno: int
    last_packet_in_block: bool
    data_len: int
    sync_block: bool = False
    sums_len: int = 0

    @property
    def is_heartbeat(self) -> bool:
        """A keep-alive packet: no data, seqno -1."""
        return self.seqno == HEARTBEAT_SEQNO


@dataclass(frozen=True)
class Packet:
    """One packet: its header, the chunk checksums and the data."""

    header: PacketHeader
    sums: bytes
    data: bytes

    @property
    def end_offset(self) -> int:
        """The block offset just past this packet's data."""
        return self.header.offset_in_block + len(self.data)


def encode_packet_head(
    offset_in_block: int,
    seqno: int,
    *,
    data_len: int,
    sums_len: int,
    last: bool = False,
    sync: bool = False,
) -> bytes:
    """The lengths and header of a packet whose sums and data follow (design §B.3)."""
    header = dt.PacketHeaderProto(
        offsetInBlock=offset_in_block, seqno=seqno, lastPacketInBlock=last, dataLen=data_len
    )
    if sync:  # only when set, as Hadoop does (older readers size the header without it)
        header.syncBlock = True
    body = header.SerializeToString()
    return PACKET_LENGTHS.pack(4 + sums_len + data_len, len(body)) + body


def encode_packet(
    offset_in_block: int,
    seqno: int,
    data: bytes,
    sums: bytes,
    *,
    last: bool = False,
    sync: bool = False,
) -> bytes:
    """A whole packet: lengths, header, sums, data."""
    head = encode_packet_head(
        offset_in_block, seqno, data_len=len(data), sums_len=len(sums), last=last, sync=sync
    )
    return head + sums + data


def heartbeat_packet() -> bytes:
    """The keep-alive packet a writer sends when it has had no data for a while."""
    return encode_packet(0, HEARTBEAT_SEQNO, b"", b"")


def decode_packet_lengths(
    lengths: bytes | bytearray | memoryview, max_payload: int = MAX_PACKET_PAYLOAD
) -> tuple[int, int]:
    """(payload length, header length) of a packet's first 6 bytes, checked against bounds."""
    if len(lengths) != PACKET_LENGTHS.size:
        raise MalformedTransferError(f"packet lengths are {len(lengths)} bytes, expected 6")
    payload_len, header_len = PACKET_LENGTHS.unpack(bytes(lengths))
    if payload_len < 4:
        raise MalformedTransferError(f"packet payload length {payload_len} is below 4")
    check_length(payload_len - 4, max_payload, "packet data and checksums")
    if header_len == 0:
        raise MalformedTransferError("packet header length is 0")
    check_length(header_len, MAX_PACKET_HEADER, "packet header")
    return payload_len, header_len


def decode_packet_header(
    header_bytes: bytes | bytearray | memoryview, payload_len: int
) -> PacketHeader:
    """The header proto of a packet whose payload length is payload_len, checked against it."""
    proto = parse_message(dt.PacketHeaderProto, header_bytes, "packet header")
    data_len = proto.dataLen
    body_len = payload_len - 4
    if data_len < 0 or data_len > body_len:
        raise MalformedTransferError(
            f"packet data length {data_len} is outside 0..{body_len} (the payload's size)"
        )
    if proto.offsetInBlock < 0:
        raise MalformedTransferError(f"packet offset {proto.offsetInBlock} is negative")
    return PacketHeader(
        offset_in_block=proto.offsetInBlock,
        seqno=proto.seqno,
        last_packet_in_block=proto.lastPacketInBlock,
        data_len=data_len,
        sync_block=proto.syncBlock,
        sums_len=body_len - data_len,
    )


def decode_packet(
    buf: bytes | bytearray | memoryview, max_payload: int = MAX_PACKET_PAYLOAD
) -> Packet:
    """A packet held entirely in buf (tests and tools; streams read it in parts)."""
    view = memoryview(buf)
    payload_len, header_len = decode_packet_lengths(view[:6], max_payload)
    end_header = 6 + header_len
    total = end_header + payload_len - 4
    if len(view) != total:
        raise MalformedTransferError(f"packet is {len(view)} bytes, its lengths say {total}")
    header = decode_packet_header(view[6:end_header], payload_len)
    sums_end = end_header + header.sums_len
    return Packet(header, bytes(view[end_header:sums_end]), bytes(view[sums_end:total]))


# --- acks and responses ------------------------------------------------------------------


@dataclass(frozen=True)
class PipelineAck:
    """A packet's ack: a status per pipeline node, the sender's first."""

    seqno: int
    replies: tuple[int, ...]
    downstream_ack_time_ns: int = 0

    @property
    def ok(self) -> bool:
        """Every node received the packet."""
        return all(r == dt.SUCCESS for r in self.replies)

    @property
    def first_bad(self) -> int | None:
        """The index of the first node whose status is not SUCCESS (HDFS's bad node)."""
        for i, r in enumerate(self.replies):
            if r != dt.SUCCESS:
                return i
        return None


def encode_ack(ack: PipelineAck) -> bytes:
    """The delimited PipelineAckProto, with both reply and flag as Hadoop 3 sends them."""
    proto = dt.PipelineAckProto(
        seqno=ack.seqno,
        reply=list(ack.replies),  # type: ignore[arg-type]
        downstreamAckTimeNanos=ack.downstream_ack_time_ns,
        flag=[r & ACK_STATUS_MASK for r in ack.replies],  # ECN disabled
    )
    return delimited(proto)


def decode_ack(payload: bytes | bytearray | memoryview) -> PipelineAck:
    """A PipelineAck from its proto bytes; the status comes from flag when flag is sent."""
    proto = parse_message(dt.PipelineAckProto, payload, "pipeline ack")
    if proto.flag:
        if len(proto.flag) != len(proto.reply) and proto.reply:
            raise MalformedTransferError(
                f"pipeline ack has {len(proto.reply)} replies but {len(proto.flag)} flags"
            )
        replies = tuple(f & ACK_STATUS_MASK for f in proto.flag)
    else:
        replies = tuple(proto.reply)
    if not replies:
        raise MalformedTransferError(f"pipeline ack for seqno {proto.seqno} has no replies")
    return PipelineAck(proto.seqno, replies, proto.downstreamAckTimeNanos)


def response(status: int, message: str = "", first_bad_link: str = "") -> dt.BlockOpResponseProto:
    """A BlockOpResponseProto with a status and, when given, a message and firstBadLink."""
    proto = dt.BlockOpResponseProto(status=status)  # type: ignore[arg-type]
    if message:
        proto.message = message
    if first_bad_link:
        proto.firstBadLink = first_bad_link
    return proto
