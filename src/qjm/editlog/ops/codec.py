"""HDFS's primitive binary encodings: Java DataOutput, Writable varints, UTF8 and Text strings.

A Reader walks one op body and raises ShortBodyError or BadValueError; the op decoder turns
those into an OpDecodeError naming the txid and offset. A Writer appends to a bytearray.
"""

from __future__ import annotations

import struct

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


class BodyError(Exception):
    """A body that cannot be read; pos is the offset inside the body."""

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.pos = pos


class ShortBodyError(BodyError):
    """The body ends before a field does."""


class BadValueError(BodyError):
    """A field holds a value HDFS could not have written."""


class Reader:
    """Sequential big-endian reads over one op body."""

    __slots__ = ("data", "end", "pos")

    def __init__(self, data: bytes, pos: int = 0, end: int | None = None) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end

    def _need(self, n: int, what: str) -> int:
        p = self.pos
        if p + n > self.end:
            raise ShortBodyError(
                f"body ends inside {what}: needs {n} bytes at body offset {p}, {self.end - p} left",
                p,
            )
        self.pos = p + n
        return p

    def bad(self, message: str, pos: int | None = None) -> BadValueError:
        """An error for a bad value at pos (default: the current position)."""
        return BadValueError(message, self.pos if pos is None else pos)

    def remaining(self) -> int:
        """Bytes not read yet."""
        return self.end - self.pos

    def raw(self, n: int, what: str = "bytes") -> bytes:
        """n raw bytes."""
        p = self._need(n, what)
        return self.data[p : p + n]

    def byte(self) -> int:
        """A signed byte (Java readByte)."""
        p = self._need(1, "a byte")
        v = self.data[p]
        return v - 256 if v > 127 else v

    def ubyte(self) -> int:
        """An unsigned byte."""
        return self.data[self._need(1, "a byte")]

    def boolean(self) -> bool:
        """A boolean byte, 0 or 1."""
        p = self._need(1, "a boolean")
        v = self.data[p]
        if v > 1:
            raise BadValueError(f"boolean byte is {v}, not 0 or 1", p)
        return v == 1

    def short(self) -> int:
        """A signed 16-bit int."""
        return int(_I16.unpack_from(self.data, self._need(2, "a short"))[0])

    def int32(self) -> int:
        """A signed 32-bit int."""
        return int(_I32.unpack_from(self.data, self._need(4, "an int"))[0])

    def long(self) -> int:
        """A signed 64-bit long (LongWritable / writeLong)."""
        return int(_I64.unpack_from(self.data, self._need(8, "a long"))[0])

    def vlong(self) -> int:
        """A Hadoop WritableUtils variable-length long."""
        first = self.byte()
        if first >= -112:
            return first
        n = -119 - first if first < -120 else -111 - first
        p = self._need(n - 1, "a variable-length long")
        v = int.from_bytes(self.data[p : p + n - 1], "big")
        if v > INT64_MAX:
            raise BadValueError("variable-length long overflows 64 bits", p)
        return ~v if first < -120 else v

    def vint(self) -> int:
        """A Hadoop WritableUtils variable-length int."""
        p = self.pos
        v = self.vlong()
        if not INT32_MIN <= v <= INT32_MAX:
            raise BadValueError(f"variable-length int {v} does not fit 32 bits", p)
        return v

    def short_bytes(self) -> bytes:
        """Bytes prefixed by an unsigned 16-bit length (FSImageSerialization.readBytes)."""
        n = int(_U16.unpack_from(self.data, self._need(2, "a length"))[0])
        p = self._need(n, "a byte string")
        return self.data[p : p + n]

    def string(self) -> str:
        """An HDFS UTF8 string: unsigned 16-bit length, then Java-style UTF-8 bytes."""
        start = self.pos
        raw = self.short_bytes()
        try:
            return decode_java_utf8(raw)
        except ValueError as e:
            raise BadValueError(f"string is not valid UTF-8: {e}", start) from None

    def text(self) -> str:
        """A Hadoop Text string: vint length, then UTF-8 bytes."""
        start = self.pos
        n = self.vint()
        if n < 0:
            raise BadValueError(f"negative string length {n}", start)
        p = self._need(n, "a string")
        try:
            return self.data[p : p + n].decode("utf-8")
        except UnicodeDecodeError as e:
            raise BadValueError(f"string is not valid UTF-8: {e.reason}", start) from None

    def pb_varint(self) -> int:
        """A protobuf base-128 varint (unsigned, up to 64 bits)."""
        shift = 0
        result = 0
        start = self.pos
        while True:
            b = self.data[self._need(1, "a protobuf varint")]
            result |= (b & 0x7F) << shift
            if b < 0x80:
                break
            shift += 7
            if shift >= 64:
                raise BadValueError("protobuf varint longer than 10 bytes", start)
        return result

    def pb_delimited(self, what: str) -> Reader:
        """A varint-length-prefixed protobuf message, as a sub-reader over its bytes."""
        start = self.pos
        n = self.pb_varint()
        if n > self.end - self.pos:
            raise ShortBodyError(f"{what} claims {n} bytes, {self.end - self.pos} left", start)
        sub = Reader(self.data, self.pos, self.pos + n)
        self.pos += n
        return sub


class Writer:
    """Big-endian appends to a growing buffer."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def getvalue(self) -> bytes:
        """The bytes written so far."""
        return bytes(self.buf)

    def raw(self, b: bytes) -> None:
        """Raw bytes."""
        self.buf += b

    def byte(self, v: int) -> None:
        """A byte (signed or unsigned value)."""
        if not -128 <= v <= 255:
            raise ValueError(f"byte value {v} out of range")
        self.buf.append(v & 0xFF)

    def boolean(self, v: bool) -> None:
        """A boolean as one byte."""
        self.buf.append(1 if v else 0)

    def short(self, v: int) -> None:
        """A signed 16-bit int."""
        self.buf += _I16.pack(v)

    def int32(self, v: int) -> None:
        """A signed 32-bit int."""
        self.buf += _I32.pack(v)

    def long(self, v: int) -> None:
        """A signed 64-bit long."""
        self.buf += _I64.pack(v)

    def vlong(self, v: int) -> None:
        """A Hadoop variable-length long."""
        self.buf += encode_vlong(v)

    def vint(self, v: int) -> None:
        """A Hadoop variable-length int."""
        if not INT32_MIN <= v <= INT32_MAX:
            raise ValueError(f"vint value {v} does not fit 32 bits")
        self.buf += encode_vlong(v)

    def short_bytes(self, b: bytes) -> None:
        """Bytes with an unsigned 16-bit length prefix."""
        if len(b) > 0xFFFF:
            raise ValueError(f"{len(b)} bytes do not fit a 16-bit length")
        self.buf += _U16.pack(len(b))
        self.buf += b

    def string(self, s: str) -> None:
        """An HDFS UTF8 string."""
        self.short_bytes(encode_java_utf8(s))

    def text(self, s: str) -> None:
        """A Hadoop Text string."""
        b = s.encode("utf-8")
        self.buf += encode_vlong(len(b))
        self.buf += b

    def pb_varint(self, v: int) -> None:
        """A protobuf varint."""
        self.buf += encode_pb_varint(v)


def encode_vlong(v: int) -> bytes:
    """Hadoop WritableUtils.writeVLong."""
    if -112 <= v <= 127:
        return bytes((v & 0xFF,))
    if not INT64_MIN <= v <= INT64_MAX:
        raise ValueError(f"vlong value {v} does not fit 64 bits")
    first = -112
    if v < 0:
        v = ~v
        first = -120
    n = (v.bit_length() + 7) // 8
    return bytes(((first - n) & 0xFF,)) + v.to_bytes(n, "big")


def encode_pb_varint(v: int) -> bytes:
    """A protobuf varint (negative ints as 64-bit two's complement)."""
    if v < 0:
        v += 1 << 64
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def encode_java_utf8(s: str) -> bytes:
    """Encode like Hadoop's UTF8: 1-3 bytes per UTF-16 unit (supplementary chars as pairs)."""
    if s.isascii():
        return s.encode("ascii")
    if any(ord(c) > 0xFFFF for c in s):
        s = s.encode("utf-16-be", "surrogatepass").decode("utf-16-be", "surrogatepass")
        s = "".join(_split_pair(c) for c in s)
    return s.encode("utf-8", "surrogatepass")


def _split_pair(c: str) -> str:
    o = ord(c)
    if o <= 0xFFFF:
        return c
    o -= 0x10000
    return chr(0xD800 + (o >> 10)) + chr(0xDC00 + (o & 0x3FF))


def decode_java_utf8(b: bytes) -> str:
    """Decode Hadoop UTF8 bytes (UTF-8, CESU-8 pairs, or the 2-byte NUL)."""
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        pass
    out: list[int] = []
    i = 0
    n = len(b)
    while i < n:
        c = b[i]
        if c < 0x80:
            out.append(c)
            i += 1
            continue
        if c & 0xE0 == 0xC0:
            size = 2
        elif c & 0xF0 == 0xE0:
            size = 3
        elif c & 0xF8 == 0xF0:
            size = 4
        else:
            raise ValueError(f"bad lead byte {c:#04x} at {i}")
        if i + size > n or any(x & 0xC0 != 0x80 for x in b[i + 1 : i + size]):
            raise ValueError(f"bad continuation at {i}")
        cp = c & (0x7F >> size)
        for x in b[i + 1 : i + size]:
            cp = (cp << 6) | (x & 0x3F)
        out.append(cp)
        i += size
    # Recombine surrogate pairs written as two 3-byte sequences.
    text = "".join(map(chr, out))
    return text.encode("utf-16-be", "surrogatepass").decode("utf-16-be", "surrogatepass")
