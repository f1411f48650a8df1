"""Framing facts of the protobuf fsimage: magic, sections, FileSummary, permission packing."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import DecodeError, Message

from qjm.editlog.ops.codec import encode_pb_varint
from qjm.errors import QjmError
from qjm.namenode.image import fsimage_pb2 as pb

MAGIC = b"HDFSIMG1"
ONDISK_VERSION = 1
LAYOUT_VERSION = -64
# Section names in the order HDFS writes them.
NS_INFO = "NS_INFO"
STRING_TABLE = "STRING_TABLE"
ERASURE_CODING = "ERASURE_CODING"
INODE = "INODE"
INODE_REFERENCE = "INODE_REFERENCE"
SNAPSHOT = "SNAPSHOT"
INODE_DIR = "INODE_DIR"
FILES_UNDERCONSTRUCTION = "FILES_UNDERCONSTRUCTION"
SNAPSHOT_DIFF = "SNAPSHOT_DIFF"
SECRET_MANAGER = "SECRET_MANAGER"
CACHE_MANAGER = "CACHE_MANAGER"
# The order of HDFS's SectionName enum, which its viewers print sections in.
SECTION_ORDER = (
    NS_INFO,
    STRING_TABLE,
    "EXTENDED_ACL",
    ERASURE_CODING,
    INODE,
    INODE_REFERENCE,
    SNAPSHOT,
    INODE_DIR,
    FILES_UNDERCONSTRUCTION,
    SNAPSHOT_DIFF,
    SECRET_MANAGER,
    CACHE_MANAGER,
)
CODECS = {
    "org.apache.hadoop.io.compress.DefaultCodec": 15,  # zlib stream
    "org.apache.hadoop.io.compress.GzipCodec": 31,  # gzip stream
}
U64 = 1 << 64


class ImageError(QjmError):
    """An fsimage that cannot be read or written; names the section at fault."""

    def __init__(self, message: str, section: str | None = None) -> None:
        super().__init__(message)
        self.section = section


@dataclass(frozen=True, slots=True)
class SectionInfo:
    """Where one section lies in the image file."""

    name: str
    offset: int
    length: int


@dataclass(frozen=True, slots=True)
class Summary:
    """The FileSummary: versions, codec and the section index."""

    ondisk_version: int
    layout_version: int
    codec: str | None
    sections: tuple[SectionInfo, ...]

    def section(self, name: str) -> SectionInfo | None:
        """The first section with this name, if any."""
        for s in self.sections:
            if s.name == name:
                return s
        return None


def signed64(v: int) -> int:
    """A uint64 field value as the Java long HDFS meant."""
    return v - U64 if v >= 1 << 63 else v


def unsigned64(v: int) -> int:
    """A Java long as the uint64 field value HDFS writes."""
    return v + U64 if v < 0 else v


def signed32(v: int) -> int:
    """A uint32 field value as the Java int HDFS meant."""
    return v - (1 << 32) if v >= 1 << 31 else v


def pack_permission(user_id: int, group_id: int, mode: int) -> int:
    """The fixed64 permission: user id << 40 | group id << 16 | mode."""
    return (user_id << 40) | (group_id << 16) | (mode & 0xFFFF)


def unpack_permission(p: int) -> tuple[int, int, int]:
    """(user id, group id, mode) from a packed permission."""
    return (p >> 40) & 0xFFFFFF, (p >> 16) & 0xFFFFFF, p & 0xFFFF


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """(value, next position) of the protobuf varint at pos; IndexError/ValueError if bad."""
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift >= 64:
            raise ValueError("varint longer than 10 bytes")


def delimited(msg: Message) -> bytes:
    """A message with its varint length prefix."""
    body = msg.SerializeToString()
    return encode_pb_varint(len(body)) + body


def iter_delimited(buf: bytes, section: str, pos: int = 0) -> Iterator[bytes]:
    """The payload of each delimited message in buf from pos to its end."""
    end = len(buf)
    while pos < end:
        try:
            n, p = read_varint(buf, pos)
        except (ValueError, IndexError):
            raise ImageError(
                f"section {section} is corrupt: bad message length at byte {pos}", section
            ) from None
        if p + n > end:
            raise ImageError(
                f"section {section} is truncated: a message at byte {pos} needs {n} bytes, "
                f"{end - p} left",
                section,
            )
        yield buf[p : p + n]
        pos = p + n


def parse(cls: type[Message], raw: bytes, section: str, what: str) -> Message:
    """Parse one message, naming the section on failure."""
    try:
        return cls.FromString(raw)
    except DecodeError as e:
        raise ImageError(f"section {section} is corrupt: bad {what}: {e}", section) from None


def read_summary(data: bytes) -> Summary:
    """Check the magic and read the FileSummary at the end of a whole image in memory."""
    return summary_from_parts(data[: len(MAGIC)], data, 0, len(data))


def summary_from_parts(head: bytes, tail: bytes, tail_start: int, size: int) -> Summary:
    """Read the FileSummary from the file's first bytes and its bytes from tail_start on."""
    if size < len(MAGIC) + 4 or not head.startswith(MAGIC):
        raise ImageError(
            f"not an HDFS protobuf image: it does not start with {MAGIC.decode()}", "header"
        )
    (n,) = struct.unpack_from(">i", tail, len(tail) - 4)
    start = size - 4 - n
    if n <= 0 or start < len(MAGIC) or start < tail_start:
        raise ImageError(
            f"the image's FileSummary is missing (length field {n}): the file is truncated "
            f"or was never completed",
            "FileSummary",
        )
    try:
        body_len, p = read_varint(tail, start - tail_start)
        if p + body_len != len(tail) - 4:
            raise DecodeError("its length prefix does not match the footer")
        fs: Any = pb.FileSummary.FromString(tail[p : p + body_len])
    except (DecodeError, IndexError, ValueError) as e:
        raise ImageError(
            f"the image's FileSummary is corrupt ({e}): the file is truncated or damaged",
            "FileSummary",
        ) from None
    sections = tuple(SectionInfo(s.name, s.offset, s.length) for s in fs.sections)
    for sec in sections:
        if sec.offset < len(MAGIC) or sec.offset + sec.length > start:
            raise ImageError(
                f"section {sec.name} claims bytes {sec.offset}..{sec.offset + sec.length} but "
                f"the sections end at byte {start}: the image is truncated or damaged",
                sec.name,
            )
    return Summary(fs.ondiskVersion, signed32(fs.layoutVersion), fs.codec or None, sections)


def section_bytes(data: bytes, info: SectionInfo, codec: str | None) -> bytes:
    """The (decompressed) bytes of one section."""
    raw = data[info.offset : info.offset + info.length]
    if len(raw) != info.length:
        raise ImageError(
            f"section {info.name} is truncated: {len(raw)} of {info.length} bytes", info.name
        )
    return decompress(raw, info.name, codec)


def decompress(raw: bytes, section: str, codec: str | None) -> bytes:
    """Undo the image codec for one section (zlib and gzip are understood)."""
    if not codec:
        return raw
    wbits = CODECS.get(codec)
    if wbits is None:
        raise ImageError(f"image codec {codec} is not supported", section)
    try:
        return zlib.decompress(raw, wbits)
    except zlib.error as e:
        raise ImageError(f"section {section} does not decompress: {e}", section) from None
