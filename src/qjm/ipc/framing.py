"""Hadoop IPC framing: the connection preamble, 4-byte length frames, varint-delimited messages."""

from __future__ import annotations

import struct
from collections.abc import Sequence

from qjm.ipc.errors import FrameTooLargeError, MalformedRpcError

RPC_VERSION = 9
MAGIC = b"hrpc"
PREAMBLE_LENGTH = 7
AUTH_NONE = 0  # simple authentication: the user name in the connection context is trusted
AUTH_SASL = 0xDF
DEFAULT_SERVICE_CLASS = 0

CONNECTION_CONTEXT_CALL_ID = -3
PING_CALL_ID = -4
SASL_CALL_ID = -33
UNKNOWN_CALL_ID = -1  # answers to a connection whose call id is unknown
DEFAULT_MAX_DATA_LENGTH = 128 * 1024 * 1024  # ipc.maximum.data.length in Hadoop 3

_LENGTH = struct.Struct(">i")
pack_length = struct.Struct(">I").pack
_SMALL_VARINTS = tuple(bytes((i,)) for i in range(128))


def preamble(
    version: int = RPC_VERSION, service_class: int = DEFAULT_SERVICE_CLASS, auth: int = AUTH_NONE
) -> bytes:
    """The 7 bytes a client sends first: b"hrpc", version, service class, auth protocol."""
    return MAGIC + bytes((version, service_class, auth))


PREAMBLE = preamble()


def parse_preamble(data: bytes) -> tuple[int, int, int]:
    """(version, service class, auth protocol) of a preamble; MalformedRpcError if not hrpc."""
    head = bytes(data[:4])
    if head != MAGIC[: len(head)]:
        raise MalformedRpcError(f"connection preamble starts with {head!r}, not b'hrpc'")
    if len(data) < PREAMBLE_LENGTH:
        raise MalformedRpcError(f"connection preamble is {len(data)} bytes, expected 7")
    return data[4], data[5], data[6]


def encode_varint(value: int) -> bytes:
    """Protobuf base-128 varint of a non-negative integer."""
    if value < 128:
        return _SMALL_VARINTS[value]
    out = bytearray()
    while value > 127:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def zigzag32(value: int) -> int:
    """The zigzag encoding of a sint32 (-1 → 1, -3 → 5, 2 → 4)."""
    return ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF


def decode_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """(value, position after it) of the varint at pos; MalformedRpcError if malformed."""
    try:
        b = buf[pos]
        if b < 128:
            return b, pos + 1
        result = b & 0x7F
        shift = 7
        pos += 1
        while True:
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 128:
                return result, pos
            shift += 7
            if shift > 63:
                raise MalformedRpcError("varint longer than 10 bytes")
    except IndexError:
        raise MalformedRpcError("varint cut short by the end of the frame") from None


def read_delimited(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """(start, end) of the varint-delimited message at pos; MalformedRpcError if it overruns."""
    length, start = decode_varint(buf, pos)
    end = start + length
    if end > len(buf):
        raise MalformedRpcError(
            f"delimited message of {length} bytes at offset {start} overruns the "
            f"{len(buf)}-byte frame"
        )
    return start, end


_PLAIN_HEADER_START = (
    b"\x08\x02\x10\x00\x18"  # rpcKind=RPC_PROTOCOL_BUFFER, rpcOp=FINAL, callId tag
)


def plain_call_header(frame: bytes) -> tuple[int, bytes, int, int] | None:
    """(callId, clientId, retryCount, end) if the frame starts with a plain call header.

    Plain: exactly rpcKind=2, rpcOp=0, callId >= 0, clientId, retryCount, in field order, as
    IpcClient writes it. Anything else (other fields, order, values) is None: protobuf decides.
    """
    try:
        n = frame[0]
        if n >= 128 or frame[1:6] != _PLAIN_HEADER_START:
            return None
        end = 1 + n
        v = frame[6]
        if v < 128:
            pos = 7
        else:
            v, pos = decode_varint(frame, 6)
            if v >> 32:
                return None
        if v & 1 or frame[pos] != 0x22:  # odd zigzag: a negative (special) call id
            return None
        id_len = frame[pos + 1]
        if id_len >= 128:
            return None
        id_end = pos + 2 + id_len
        if frame[id_end] != 0x28:
            return None
        r = frame[id_end + 1]
        if r < 128:
            pos = id_end + 2
        else:
            r, pos = decode_varint(frame, id_end + 1)
            if r >> 32:
                return None
        if pos != end:
            return None
        return v >> 1, frame[id_end - id_len : id_end], (r >> 1) ^ -(r & 1), end
    except (IndexError, MalformedRpcError):
        return None


def delimited(message: bytes) -> bytes:
    """message prefixed by its varint length."""
    return encode_varint(len(message)) + message


def build_frame(parts: Sequence[bytes]) -> bytes:
    """One frame: 4-byte big-endian length, then each part varint-delimited."""
    chunks: list[bytes] = [b""]
    total = 0
    for part in parts:
        n = len(part)
        prefix = encode_varint(n)
        chunks.append(prefix)
        chunks.append(part)
        total += len(prefix) + n
    chunks[0] = pack_length(total)
    return b"".join(chunks)


class FrameReader:
    """Cuts a byte stream into frames (payloads without the length), enforcing a size limit."""

    __slots__ = ("_buf", "max_data_length")

    def __init__(self, max_data_length: int = DEFAULT_MAX_DATA_LENGTH) -> None:
        self._buf = bytearray()
        self.max_data_length = max_data_length

    def pending(self) -> int:
        """Bytes received that do not yet form a whole frame."""
        return len(self._buf)

    def discard(self) -> None:
        """Drop the bytes of an unfinished frame (the connection is closing)."""
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        """Whole frames completed by data; FrameTooLargeError if a length is over the limit."""
        buf = self._buf
        if buf:
            buf += data
            src: bytes | bytearray = buf
        else:
            src = data
        frames: list[bytes] = []
        pos = 0
        n = len(src)
        limit = self.max_data_length
        unpack = _LENGTH.unpack_from
        view = memoryview(src)  # slices copy once, straight into bytes
        try:
            while n - pos >= 4:
                (length,) = unpack(src, pos)
                if length < 0 or length > limit:
                    raise FrameTooLargeError(
                        f"RPC frame of {length} bytes exceeds ipc.maximum.data.length {limit}"
                        if length >= 0
                        else f"RPC frame declares a negative length {length}"
                    )
                end = pos + 4 + length
                if end > n:
                    break
                frames.append(bytes(view[pos + 4 : end]))
                pos = end
        finally:
            view.release()  # a bytearray cannot shrink while viewed
        if src is buf:
            if pos:
                del buf[:pos]
        elif pos < n:
            buf += data[pos:]
        return frames
