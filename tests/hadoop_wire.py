"""Hadoop IPC bytes built and read by hand, from the protocol's description, for wire tests.

Nothing here uses qjm.ipc or generated protobuf code: field numbers and wire types are
written out as Hadoop's RpcHeader.proto, ProtobufRpcEngine.proto and
IpcConnectionContext.proto define them, so a test checks the server against the
description, not against our own encoder.
"""

from __future__ import annotations

import socket
import struct
import time

PREAMBLE = b"hrpc" + bytes([9, 0, 0])  # version 9, service class 0, auth protocol NONE
QJOURNAL = "org.apache.hadoop.hdfs.qjournal.protocol.QJournalProtocol"
CLIENT_ID = bytes(range(16))
RPC_PROTOCOL_BUFFER = 2
CONNECTION_CONTEXT_CALL_ID = -3
SUCCESS, ERROR, FATAL = 0, 1, 2
VARINT, LEN = 0, 2


def varint(n: int) -> bytes:
    """Protobuf base-128 varint of a non-negative int (negative int64: two's complement)."""
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def zigzag(n: int) -> int:
    """sint32's zigzag form."""
    return (n << 1) ^ (n >> 31)


def field(number: int, value: int | bytes | str) -> bytes:
    """One field: an int as a varint, bytes or str length-delimited."""
    if isinstance(value, int):
        return varint(number << 3 | VARINT) + varint(value)
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | LEN) + varint(len(data)) + data


def delimited(message: bytes) -> bytes:
    """A message preceded by its varint length."""
    return varint(len(message)) + message


def frame(*messages: bytes) -> bytes:
    """A 4-byte big-endian length, then each message varint-delimited."""
    body = b"".join(delimited(m) for m in messages)
    return struct.pack(">I", len(body)) + body


def rpc_request_header(call_id: int, retry_count: int = 0) -> bytes:
    """RpcRequestHeaderProto: rpcKind(1), rpcOp(2), callId(3, sint32), clientId(4), retry(5)."""
    return (
        field(1, RPC_PROTOCOL_BUFFER)
        + field(2, 0)  # RPC_FINAL_PACKET
        + field(3, zigzag(call_id))
        + field(4, CLIENT_ID)
        + field(5, zigzag(retry_count))
    )


def connection_context(protocol: str = QJOURNAL, user: str = "tester") -> bytes:
    """The context frame: header with callId -3, IpcConnectionContextProto{userInfo(2), protocol(3)}."""
    user_info = field(1, user)  # UserInformationProto.effectiveUser
    context = field(2, user_info) + field(3, protocol)
    return frame(rpc_request_header(CONNECTION_CONTEXT_CALL_ID, -1), context)


def call(call_id: int, method: str, request: bytes, protocol: str = QJOURNAL) -> bytes:
    """One call frame: RpcRequestHeaderProto, RequestHeaderProto, the request message."""
    header = field(1, method) + field(2, protocol) + field(3, 1)  # clientProtocolVersion 1
    return frame(rpc_request_header(call_id), header, request)


def journal_id(jid: str) -> bytes:
    """JournalIdProto{identifier(1)}."""
    return field(1, jid)


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """A varint at pos: (value, next position)."""
    shift = value = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, pos


def parse(message: bytes) -> dict[int, int | bytes]:
    """A message's fields by number (the last value of each; varints and bytes only)."""
    out: dict[int, int | bytes] = {}
    pos = 0
    while pos < len(message):
        key, pos = read_varint(message, pos)
        number, wire = key >> 3, key & 7
        if wire == VARINT:
            out[number], pos = read_varint(message, pos)
        elif wire == LEN:
            n, pos = read_varint(message, pos)
            out[number] = message[pos : pos + n]
            pos += n
        else:
            raise AssertionError(f"unexpected wire type {wire} for field {number}")
    return out


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    """n bytes, or fewer when the peer closed first."""
    got = b""
    while len(got) < n:
        chunk = sock.recv(n - len(got))
        if not chunk:
            break
        got += chunk
    return got


def read_response(sock: socket.socket) -> tuple[dict[int, int | bytes], bytes | None]:
    """One response frame: the parsed RpcResponseHeaderProto and the response message bytes.

    Header fields: callId(1, uint32), status(2), serverIpcVersionNum(3),
    exceptionClassName(4), errorMsg(5), errorDetail(6), clientId(7), retryCount(8).
    """
    head = recv_exactly(sock, 4)
    if len(head) < 4:
        raise ConnectionError(f"connection closed by the server ({head!r})")
    (length,) = struct.unpack(">I", head)
    body = recv_exactly(sock, length)
    assert len(body) == length, f"frame cut short: {len(body)} of {length} bytes"
    n, pos = read_varint(body, 0)
    header = parse(body[pos : pos + n])
    pos += n
    if pos == len(body):
        return header, None
    n, pos = read_varint(body, pos)
    return header, body[pos : pos + n]


def wait_closed(sock: socket.socket, timeout: float) -> bytes:
    """Read until the server closes the connection; what it sent first (fail after timeout)."""
    sock.settimeout(timeout)
    got = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(4096)
        except ConnectionResetError:
            return got
        if not chunk:
            return got
        got += chunk
    raise AssertionError(f"the server kept the connection open for {timeout}s: {got!r}")
