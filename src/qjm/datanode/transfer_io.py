"""Reading DataTransferProtocol frames from an asyncio stream, each length bounded first.

The codec (qjm.hdfs.datatransfer) checks the bytes; this reads just enough of them, so a
stranger's 2 GiB length is refused before anything of that size is read (design §B.3).
"""

from __future__ import annotations

import asyncio
from typing import TypeVar

from google.protobuf.message import Message

from qjm.hdfs import datatransfer as codec
from qjm.hdfs.proto import datatransfer_pb2 as dt
from qjm.hdfs.proto import hdfs_pb2

_M = TypeVar("_M", bound=Message)


class ConnectionClosedError(codec.DataTransferError):
    """The peer closed the connection where a frame was expected."""


async def read_exactly(reader: asyncio.StreamReader, n: int, what: str) -> bytes:
    """n bytes; ConnectionClosedError naming what when the peer closes first."""
    try:
        return await reader.readexactly(n)
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise ConnectionClosedError(
                f"connection closed inside {what} ({len(exc.partial)} of {n} bytes)"
            ) from None
        raise ConnectionClosedError(f"connection closed before {what}") from None


async def read_delimited(reader: asyncio.StreamReader, limit: int, what: str) -> bytes:
    """A varint-length-prefixed message's bytes, its length at most limit."""
    prefix = await read_exactly(reader, 1, what)
    length = prefix[0] if prefix[0] < 0x80 else None  # a length under 128: one byte
    while length is None:
        prefix += await read_exactly(reader, 1, what)
        length = codec.decode_varint(prefix, what)
    codec.check_length(length, limit, what)
    return await read_exactly(reader, length, what)


async def read_message(reader: asyncio.StreamReader, cls: type[_M], limit: int, what: str) -> _M:
    """A delimited proto of type cls."""
    return codec.parse_message(cls, await read_delimited(reader, limit, what), what)


async def read_response(reader: asyncio.StreamReader, what: str) -> dt.BlockOpResponseProto:
    """A BlockOpResponseProto (a DataNode's answer to an op)."""
    return await read_message(reader, dt.BlockOpResponseProto, codec.MAX_RESPONSE_PROTO, what)


async def read_op(reader: asyncio.StreamReader) -> tuple[codec.Op, bytes]:
    """An op request's code and proto bytes."""
    op = codec.decode_op_prefix(await read_exactly(reader, 3, "op request"))
    return op, await read_delimited(reader, codec.MAX_OP_PROTO, f"{op.name} request")


async def read_packet_frame(
    reader: asyncio.StreamReader, max_payload: int = codec.MAX_PACKET_PAYLOAD
) -> tuple[codec.PacketHeader, bytes, memoryview]:
    """A packet as read: its header, its lengths and header bytes, and its body (the sums,
    then the data) as a view of one buffer, so it can be forwarded and written from views."""
    lengths = await read_exactly(reader, codec.PACKET_LENGTHS.size, "packet lengths")
    payload_len, header_len = codec.decode_packet_lengths(lengths, max_payload)
    # the header and the body in one read: both lengths were checked against their bounds
    rest = await read_exactly(reader, header_len + payload_len - 4, "packet header and body")
    header = codec.decode_packet_header(rest[:header_len], payload_len)
    return header, lengths + rest[:header_len], memoryview(rest)[header_len:]


async def read_packet(
    reader: asyncio.StreamReader, max_payload: int = codec.MAX_PACKET_PAYLOAD
) -> tuple[codec.Packet, bytes]:
    """A packet and its raw bytes (a pipeline node forwards them as they came)."""
    header, head, body = await read_packet_frame(reader, max_payload)
    raw = head + body
    sums_at = len(head) + header.sums_len
    return codec.Packet(header, raw[len(head) : sums_at], raw[sums_at:]), raw


async def read_ack(reader: asyncio.StreamReader) -> codec.PipelineAck:
    """A pipeline ack."""
    return codec.decode_ack(await read_delimited(reader, codec.MAX_ACK_PROTO, "pipeline ack"))


def xfer_address(node: hdfs_pb2.DatanodeInfoProto) -> tuple[str, int]:
    """(host, port) of a DatanodeInfoProto's data transfer endpoint."""
    return str(node.id.ipAddr), int(node.id.xferPort)


def xfer_name(node: hdfs_pb2.DatanodeInfoProto) -> str:
    """'ip:port' of a DatanodeInfoProto, as HDFS names a bad link."""
    host, port = xfer_address(node)
    return f"{host}:{port}"
