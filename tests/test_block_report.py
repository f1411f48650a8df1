"""BlockListAsLongs in both encodings, against hand-built longs and bytes (design §B.11)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from qjm.hdfs.block_report import (
    CHUNK_SIZE,
    BlockColumns,
    BlockReportError,
    ReplicaState,
    ReportedReplica,
    decode_buffers,
    decode_buffers_columns,
    decode_longs,
    decode_longs_columns,
    encode_buffers,
    encode_longs,
)

M1 = (1 << 64) - 1  # -1 as the uint64 the wire carries
FIN = ReplicaState.FINALIZED
RBW = ReplicaState.RBW

A = ReportedReplica(1073741825, 1024, 1001, FIN)
B = ReportedReplica(1073741826, 0, 1002, RBW)
NEG = ReportedReplica(-5, 7, 3, FIN)  # a legacy random block id may be negative


@pytest.mark.parametrize(
    ("longs", "want"),
    [
        ([], []),
        ([0, 0], []),  # HDFS's BlockListAsLongs.EMPTY
        ([0, 0, M1, M1, M1], []),
        ([1, 0, 1073741825, 1024, 1001], [A]),  # no delimiter when nothing is under construction
        ([1, 0, 1073741825, 1024, 1001, M1, M1, M1], [A]),
        ([0, 1, M1, M1, M1, 1073741826, 0, 1002, 1], [B]),
        ([1, 1, 1073741825, 1024, 1001, M1, M1, M1, 1073741826, 0, 1002, 1], [A, B]),
        ([1, 0, M1 - 4, 7, 3, M1, M1, M1], [NEG]),  # -5 as uint64
        ([1, 0, -5, 7, 3, -1, -1, -1], [NEG]),  # signed longs read the same
    ],
)
def test_decode_longs(longs: list[int], want: list[ReportedReplica]) -> None:
    assert decode_longs(longs) == want
    assert list(decode_longs_columns(longs)) == want


@pytest.mark.parametrize(
    ("longs", "error"),
    [
        ([1], "need at least the two counts"),
        ([1, 0], "2 longs for 1 finalized"),
        (
            [0, 1, M1, M1, M1, 5, 0, 1],
            "8 longs for 0 finalized and 1 under-construction replicas, expected 9",
        ),  # truncated UC entry
        ([0, 1, 5, 5, 5, 1, 0, 1, 1], "should start the delimiter"),
        ([0, 1, M1, M1, M1, 1, 0, 1, 9], "replica state 9 is none of"),
        ([1, 0, 1, M1, 1, M1, M1, M1], "length -1 is not within"),
        ([1, 0, 1, 5, M1, M1, M1, M1], "generation stamp -1 is negative"),
        ([M1, 0], "negative replica count -1"),
        ([4, 0, *([1, 1, 1] * 4), M1, M1, M1], "4 replicas exceed the limit of 3"),
    ],
)
def test_decode_longs_refuses(longs: list[int], error: str) -> None:
    with pytest.raises(BlockReportError, match=error):
        decode_longs(longs, max_blocks=3)
    with pytest.raises(BlockReportError, match=error):
        decode_longs_columns(longs, max_blocks=3)


def test_encode_longs_layout() -> None:
    assert encode_longs([B, A, NEG]) == [
        2,
        1,
        1073741825,
        1024,
        1001,
        M1 - 4,
        7,
        3,
        M1,
        M1,
        M1,
        1073741826,
        0,
        1002,
        1,
    ]
    assert decode_longs(encode_longs([B, A, NEG])) == [A, NEG, B]


# Hand-built buffers: zig-zag id, length, genstamp, state.
# 1073741825 zig-zag is 2147483650 = varint 82 80 80 80 08; 1024 = 80 08; 1001 = e9 07.
A_BYTES = bytes.fromhex("8280808008") + bytes.fromhex("8008") + bytes.fromhex("e907") + b"\x00"
# -5 zig-zag is 9; 7; 3; FINALIZED
NEG_BYTES = bytes([9, 7, 3, 0])
# 1073741826 zig-zag 2147483652 = 84 80 80 80 08; 0; 1002 = ea 07; RBW
B_BYTES = bytes.fromhex("8480808008") + b"\x00" + bytes.fromhex("ea07") + b"\x01"


@pytest.mark.parametrize(
    ("count", "buffers", "want"),
    [
        (0, [b""], []),
        (0, [], []),
        (1, [A_BYTES], [A]),
        (3, [A_BYTES + NEG_BYTES + B_BYTES], [A, NEG, B]),
        (2, [A_BYTES[:3], A_BYTES[3:] + NEG_BYTES], [A, NEG]),  # a varint split across pieces
        # upper bits of the length (above 48) and the state (above 4) are reserved: masked off
        (1, [bytes([9]) + bytes.fromhex("8780808080808001") + bytes([3, 0x10])], [NEG]),
    ],
)
def test_decode_buffers(count: int, buffers: list[bytes], want: list[ReportedReplica]) -> None:
    assert decode_buffers(count, buffers) == want
    assert list(decode_buffers_columns(count, buffers)) == want


@pytest.mark.parametrize(
    ("count", "buffers", "error"),
    [
        (3, [A_BYTES], "3 replicas cannot fit in 10 bytes"),
        (1, [A_BYTES + b"\x00"], "1 bytes left over"),
        (3, [NEG_BYTES + A_BYTES[:-1] + b"\x80\x80"], "end inside a varint"),
        (1, [b"\x80" * 11 + b"\x00\x00\x00\x00"], "longer than 10 bytes"),
        (1, [bytes([9, 7, 3, 6])], "replica state 6 is none of"),
        (4, [NEG_BYTES * 4], "4 replicas exceed the limit of 3"),
        (-1, [b""], "negative replica count"),
    ],
)
def test_decode_buffers_refuses(count: int, buffers: list[bytes], error: str) -> None:
    with pytest.raises(BlockReportError, match=error):
        decode_buffers(count, buffers, max_blocks=3)
    with pytest.raises(BlockReportError, match=error):
        decode_buffers_columns(count, buffers, max_blocks=3)


def test_encode_buffers_bytes_and_pieces() -> None:
    assert encode_buffers([A, NEG, B]) == (3, [A_BYTES + NEG_BYTES + B_BYTES])
    assert encode_buffers([]) == (0, [b""])
    many = [ReportedReplica(1 << 40 | i, 1 << 27, 1 << 20 | i, FIN) for i in range(10_000)]
    count, pieces = encode_buffers(many)
    assert count == 10_000
    assert len(pieces) > 1
    assert all(len(p) == CHUNK_SIZE for p in pieces[:-1])
    assert decode_buffers(count, pieces) == many


def test_encode_refuses_out_of_range() -> None:
    with pytest.raises(BlockReportError, match="length -1"):
        encode_buffers([ReportedReplica(1, -1, 1)])
    with pytest.raises(BlockReportError, match="does not fit in 64 bits"):
        encode_longs([ReportedReplica(1 << 63, 0, 1)])


def _random_replicas(rng: random.Random, n: int) -> list[ReportedReplica]:
    ids = (1 << 30, -(1 << 63), (1 << 63) - 1, -1, 0)
    return [
        ReportedReplica(
            rng.choice(ids) if rng.random() < 0.05 else rng.randrange(-(1 << 63), 1 << 63),
            rng.choice((0, (1 << 48) - 1, rng.randrange(1 << 48))),
            rng.choice((0, (1 << 63) - 1, rng.randrange(1 << rng.randrange(1, 63)))),
            rng.choice(list(ReplicaState)),
        )
        for _ in range(n)
    ]


@pytest.mark.parametrize("seed", range(5))
def test_column_decoders_equal_the_per_replica_ones(seed: int) -> None:
    rng = random.Random(seed)
    reps = _random_replicas(rng, 3000)
    count, pieces = encode_buffers(reps)
    cols = decode_buffers_columns(count, pieces)
    assert isinstance(cols, BlockColumns) and cols == decode_buffers(count, pieces) == reps
    assert cols.ids.dtype == np.int64 and cols.states.dtype == np.uint8
    longs = encode_longs(reps)
    by_longs = decode_longs_columns(longs)
    assert list(by_longs) == decode_longs(longs)
    assert by_longs == [r for r in reps if r.state == FIN] + [r for r in reps if r.state != FIN]
    # reserved upper bits of lengths and states are masked as the per-replica decoder does
    data = b"".join(pieces)
    noisy = bytearray()
    for r in reps[:50]:
        z = ((r.block_id << 1) ^ (r.block_id >> 63)) & ((1 << 64) - 1)
        for v in (z, r.num_bytes | (rng.randrange(1 << 15) << 48), r.gen_stamp, r.state | 0x30):
            while v > 0x7F:
                noisy.append((v & 0x7F) | 0x80)
                v >>= 7
            noisy.append(v)
    assert decode_buffers_columns(50, [bytes(noisy)]) == decode_buffers(50, [bytes(noisy)])
    # a damaged byte anywhere: the same replicas or the same error as one at a time
    for _ in range(20):
        bad = bytearray(data[:2000])
        bad[rng.randrange(len(bad))] = rng.randrange(256)
        n = rng.randrange(1, 200)
        try:
            want: object = decode_buffers(n, [bytes(bad)])
        except BlockReportError as e:
            want = str(e)
        try:
            got: object = list(decode_buffers_columns(n, [bytes(bad)]))
        except BlockReportError as e:
            got = str(e)
        assert got == want
