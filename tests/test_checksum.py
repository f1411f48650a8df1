"""HDFS's DataChecksum: known CRC32C vectors, chunking, headers, and a meta file Hadoop wrote."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from qjm.datanode.layout import META_HEADER_LEN, parse_meta_header
from qjm.hdfs.checksum import (
    CHECKSUM_CRC32,
    CHECKSUM_CRC32C,
    CHECKSUM_NULL,
    ChecksumError,
    DataChecksum,
    chunk_sums,
    first_bad_chunk,
    sums_agree,
    verify,
)

FIXTURES = Path(__file__).parent / "fixtures" / "hadoop" / "datanode"


@pytest.mark.parametrize(
    ("data", "crc"),
    [
        (b"123456789", 0xE3069283),  # the CRC-32C check value
        (b"", 0x00000000),
        (bytes(32), 0x8A9136AA),  # RFC 3720 B.4: 32 bytes of zeros
        (b"\xff" * 32, 0x62A8AB43),  # RFC 3720 B.4: 32 bytes of ones
        (bytes(range(32)), 0x46DD794E),  # RFC 3720 B.4: incrementing
        (bytes(range(31, -1, -1)), 0x113FDB5C),  # RFC 3720 B.4: decrementing
    ],
)
def test_known_crc32c_vectors(data: bytes, crc: int) -> None:
    want = crc.to_bytes(4, "big") if data else b""
    assert chunk_sums(data, 512) == want


def test_chunks_split_at_bytes_per_checksum_last_partial() -> None:
    data = bytes((i * 7) & 0xFF for i in range(1300))
    sums = chunk_sums(data, 512)
    assert len(sums) == 12
    for k, start in enumerate((0, 512, 1024)):
        one = chunk_sums(data[start : start + 512], 512)
        assert sums[4 * k : 4 * k + 4] == one
    assert chunk_sums(memoryview(data), 512) == sums


def test_verify_names_the_offset_of_the_bad_chunk() -> None:
    data = bytearray(range(256)) * 8  # 2048 bytes, 4 chunks
    sums = chunk_sums(bytes(data), 512)
    verify(bytes(data), sums, 512, offset=4096)
    data[1500] ^= 1
    with pytest.raises(ChecksumError, match="byte offset 5120") as e:
        verify(bytes(data), sums, 512, offset=4096)
    assert e.value.offset == 4096 + 1024


def test_verify_refuses_sums_of_the_wrong_length() -> None:
    with pytest.raises(ChecksumError, match="expected 8"):
        verify(b"x" * 600, b"\0" * 4, 512)


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        (b"\x02\x00\x00", "needs 5"),
        (b"\x07\x00\x00\x02\x00", "unknown checksum type 7"),
        (b"\x02\x00\x00\x00\x00", "bytesPerChecksum 0"),
        (b"\x02\xff\xff\xff\xff", "bytesPerChecksum -1"),
        (b"\x02\x7f\x00\x00\x00", "out of range"),
    ],
)
def test_bad_headers_are_refused(raw: bytes, error: str) -> None:
    with pytest.raises(ChecksumError, match=error):
        DataChecksum.from_header(raw, "hdr")


def test_header_round_trip_and_types() -> None:
    cs = DataChecksum()
    assert cs.header() == b"\x02\x00\x00\x02\x00"
    assert DataChecksum.from_header(cs.header()) == cs
    null = DataChecksum(CHECKSUM_NULL, 512)
    assert null.compute(b"abc") == b"" and null.sums_length(5000) == 0
    null.verify(b"abc", b"")
    crc32 = DataChecksum(CHECKSUM_CRC32, 4)
    assert crc32.compute(b"abcdefgh") == zlib.crc32(b"abcd").to_bytes(4, "big") + zlib.crc32(
        b"efgh"
    ).to_bytes(4, "big")
    with pytest.raises(ChecksumError, match="CRC32 mismatch"):
        crc32.verify(b"abcdefgh", bytes(8))
    assert DataChecksum(CHECKSUM_CRC32C, 512).sums_length(1025) == 12


def test_a_meta_file_hadoop_wrote() -> None:
    data = (FIXTURES / "blk_1073741825").read_bytes()
    meta = (FIXTURES / "blk_1073741825_1001.meta").read_bytes()
    assert len(data) == 1300
    cs = parse_meta_header(meta[:META_HEADER_LEN], "fixture")
    assert cs == DataChecksum(CHECKSUM_CRC32C, 512)
    assert meta[META_HEADER_LEN:] == chunk_sums(data, 512)
    assert meta[:META_HEADER_LEN] == b"\x00\x01" + cs.header()
    cs.verify(data, meta[META_HEADER_LEN:])


@pytest.mark.parametrize("bpc", [1, 4, 7, 512, 4096])
@pytest.mark.parametrize("offset_chunks", [0, 3])
@pytest.mark.parametrize("length", [0, 1, 511, 512, 513, 4095, 65536 - 3, 65536])
def test_sums_agree_with_the_chunk_by_chunk_check(
    bpc: int, offset_chunks: int, length: int
) -> None:
    data = bytes((i * 131 + 7) % 251 for i in range(length))
    offset = offset_chunks * bpc
    sums = chunk_sums(data, bpc, offset)
    assert sums_agree(data, sums, bpc, offset)
    if length:
        for at in {0, length // 2, length - 1}:  # any one flipped bit is seen
            bad = bytearray(data)
            bad[at] ^= 0x10
            assert not sums_agree(bytes(bad), sums, bpc, offset)
            assert first_bad_chunk(bytes(bad), sums, bpc, offset) is not None


@pytest.mark.parametrize("offset", [1, 100, 511])
def test_sums_agree_inside_a_chunk_checks_chunk_by_chunk(offset: int) -> None:
    data = bytes(range(256)) * 8
    sums = chunk_sums(data, 512, offset)
    assert sums_agree(data, sums, 512, offset)
    wrong = bytearray(sums)
    wrong[-1] ^= 1
    assert not sums_agree(data, bytes(wrong), 512, offset)


def test_sums_agree_refuses_sums_of_the_wrong_length() -> None:
    with pytest.raises(ChecksumError, match="expected 8"):
        sums_agree(bytes(1024), b"\0" * 4)
