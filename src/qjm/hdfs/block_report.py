"""HDFS's block lists in a block report (BlockListAsLongs), both encodings (design §B.11).

A storage's replicas travel in StorageBlockReportProto one of two ways:

- **Legacy longs** (`blocks`, repeated uint64): the finalized count, the under-construction
  count, three longs (id, length, genstamp) per finalized replica, a delimiter triple of -1s,
  then four longs (id, length, genstamp, replica state) per replica under construction.
  Negative longs travel as their two's complement. An empty list, and `[0, 0]`, are no
  replicas; with no replica under construction the delimiter may be left out.
- **Buffers** (`numberOfBlocks` and `blocksBuffers`, Hadoop 2.7 and later): per replica the
  block id as a zig-zag varint (sint64), then the length, the genstamp and the state as plain
  varints; the byte string is cut into 64 KiB pieces. A reader masks the length to 48 bits
  and the state to 4 bits (the upper bits are reserved), as HDFS does.

Pure: bytes and ints in, replicas out; each error names what was wrong. The `_columns`
decoders give the same replicas as numpy columns (BlockColumns), decoded without a Python
step per replica; on input the vector pass cannot take they run the per-replica decoder,
so their errors are its errors.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import overload

import numpy as np
import numpy.typing as npt

from qjm.errors import QjmError

CHUNK_SIZE = 64 * 1024  # HDFS's BlockListAsLongs.CHUNK_SIZE: one blocksBuffers piece
NUM_BYTES_MASK = (1 << 48) - 1  # the bits of a length a reader keeps
REPLICA_STATE_MASK = 0xF  # the bits of a state a reader keeps
DEFAULT_MAX_BLOCKS = 1 << 24  # replicas one storage's report may hold
_UINT64 = (1 << 64) - 1
_MIN_BUFFER_BYTES = 4  # the least bytes a replica takes in the buffers encoding
_DELIMITER = (-1, -1, -1)


class ReplicaState(IntEnum):
    """A replica's state on a DataNode (ReplicaStateProto's numbers)."""

    FINALIZED = 0
    RBW = 1
    RWR = 2
    RUR = 3
    TEMPORARY = 4


@dataclass(frozen=True, slots=True)
class ReportedReplica:
    """One replica as a block report lists it."""

    block_id: int  # signed 64-bit (legacy random ids may be negative)
    num_bytes: int
    gen_stamp: int
    state: ReplicaState = ReplicaState.FINALIZED


class BlockReportError(QjmError):
    """A block list that cannot be decoded (or encoded); the message says what is wrong."""

    java_class = "java.io.IOException"


def _signed64(value: int) -> int:
    value &= _UINT64
    return value - (1 << 64) if value >> 63 else value


def _state(value: int, where: str) -> ReplicaState:
    try:
        return ReplicaState(value)
    except ValueError:
        raise BlockReportError(
            f"{where}: replica state {value} is none of "
            f"{', '.join(f'{s.value} ({s.name})' for s in ReplicaState)}"
        ) from None


def _check_replica(r: ReportedReplica, where: str) -> None:
    if not -(1 << 63) <= r.block_id < (1 << 63):
        raise BlockReportError(f"{where}: block id {r.block_id} does not fit in 64 bits")
    if not 0 <= r.num_bytes <= NUM_BYTES_MASK:
        raise BlockReportError(f"{where}: length {r.num_bytes} is not within 0..2^48-1")
    if not 0 <= r.gen_stamp < (1 << 63):
        raise BlockReportError(f"{where}: generation stamp {r.gen_stamp} is negative or too big")


def _check_count(count: int, max_blocks: int, what: str) -> None:
    if count < 0:
        raise BlockReportError(f"{what}: negative replica count {count}")
    if count > max_blocks:
        raise BlockReportError(
            f"{what}: {count} replicas exceed the limit of {max_blocks} in one storage's report"
        )


def decode_longs(
    values: Sequence[int], max_blocks: int = DEFAULT_MAX_BLOCKS
) -> list[ReportedReplica]:
    """The replicas of a legacy block list (uint64 or signed longs, as the wire gives them)."""
    n = len(values)
    if n == 0:
        return []
    if n < 2:
        raise BlockReportError(
            "legacy block list: 1 long, need at least the two counts "
            "(finalized, under construction)"
        )
    finalized, uc = _signed64(values[0]), _signed64(values[1])
    _check_count(finalized, max_blocks, "legacy block list (finalized)")
    _check_count(uc, max_blocks, "legacy block list (under construction)")
    _check_count(finalized + uc, max_blocks, "legacy block list")
    with_delimiter = 2 + 3 * (finalized + 1) + 4 * uc
    without = 2 + 3 * finalized
    if n != with_delimiter and not (uc == 0 and n == without):
        raise BlockReportError(
            f"legacy block list: {n} longs for {finalized} finalized and {uc} under-construction "
            f"replicas, expected {with_delimiter} (2 counts, 3 per finalized, a delimiter of "
            "three -1s, 4 per replica under construction)"
        )
    out: list[ReportedReplica] = []
    pos = 2
    for i in range(finalized):
        r = ReportedReplica(
            _signed64(values[pos]),
            _signed64(values[pos + 1]),
            _signed64(values[pos + 2]),
            ReplicaState.FINALIZED,
        )
        _check_replica(r, f"legacy block list, finalized replica {i}")
        out.append(r)
        pos += 3
    if n == without:
        return out
    delimiter = tuple(_signed64(v) for v in values[pos : pos + 3])
    if delimiter != _DELIMITER:
        raise BlockReportError(
            f"legacy block list: long {pos} should start the delimiter (-1, -1, -1) after "
            f"{finalized} finalized replicas, found {delimiter}"
        )
    pos += 3
    for i in range(uc):
        where = f"legacy block list, replica under construction {i}"
        r = ReportedReplica(
            _signed64(values[pos]),
            _signed64(values[pos + 1]),
            _signed64(values[pos + 2]),
            _state(_signed64(values[pos + 3]), where),
        )
        _check_replica(r, where)
        out.append(r)
        pos += 4
    return out


def encode_longs(replicas: Iterable[ReportedReplica]) -> list[int]:
    """The legacy block list of replicas as the uint64s the wire carries (with the delimiter)."""
    finalized: list[int] = []
    uc: list[int] = []
    for i, r in enumerate(replicas):
        _check_replica(r, f"replica {i}")
        if r.state == ReplicaState.FINALIZED:
            finalized += (r.block_id, r.num_bytes, r.gen_stamp)
        else:
            uc += (r.block_id, r.num_bytes, r.gen_stamp, int(r.state))
    longs = [len(finalized) // 3, len(uc) // 4, *finalized, *_DELIMITER, *uc]
    return [v & _UINT64 for v in longs]


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_buffers(replicas: Iterable[ReportedReplica]) -> tuple[int, list[bytes]]:
    """(numberOfBlocks, blocksBuffers) of replicas in the buffers encoding, 64 KiB pieces."""
    parts: list[bytes] = []
    count = 0
    for i, r in enumerate(replicas):
        _check_replica(r, f"replica {i}")
        zigzag = ((r.block_id << 1) ^ (r.block_id >> 63)) & _UINT64
        parts.append(
            _varint(zigzag) + _varint(r.num_bytes) + _varint(r.gen_stamp) + _varint(int(r.state))
        )
        count += 1
    data = b"".join(parts)
    if not data:
        return 0, [b""]  # as HDFS sends an empty report: one empty piece
    return count, [data[p : p + CHUNK_SIZE] for p in range(0, len(data), CHUNK_SIZE)]


def _read_varint(data: bytes, pos: int, where: str) -> tuple[int, int]:
    value = 0
    shift = 0
    start = pos
    while True:
        if pos >= len(data):
            raise BlockReportError(f"{where}: the buffers end inside a varint at byte {start}")
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift >= 70:
            raise BlockReportError(f"{where}: varint at byte {start} is longer than 10 bytes")
    if value > _UINT64:
        raise BlockReportError(f"{where}: varint at byte {start} exceeds 64 bits")
    return value, pos


def decode_buffers(
    count: int, buffers: Sequence[bytes], max_blocks: int = DEFAULT_MAX_BLOCKS
) -> list[ReportedReplica]:
    """The count replicas of a buffers-encoded block list (the pieces are joined first)."""
    _check_count(count, max_blocks, "block buffers")
    data = b"".join(buffers)
    if count * _MIN_BUFFER_BYTES > len(data):
        raise BlockReportError(
            f"block buffers: {count} replicas cannot fit in {len(data)} bytes "
            f"(each takes at least {_MIN_BUFFER_BYTES})"
        )
    out: list[ReportedReplica] = []
    pos = 0
    for i in range(count):
        where = f"block buffers, replica {i}"
        zigzag, pos = _read_varint(data, pos, where)
        num_bytes, pos = _read_varint(data, pos, where)
        gen_stamp, pos = _read_varint(data, pos, where)
        state, pos = _read_varint(data, pos, where)
        r = ReportedReplica(
            (zigzag >> 1) ^ -(zigzag & 1),
            num_bytes & NUM_BYTES_MASK,
            _signed64(gen_stamp),
            _state(state & REPLICA_STATE_MASK, where),
        )
        _check_replica(r, where)
        out.append(r)
    if pos != len(data):
        raise BlockReportError(
            f"block buffers: {len(data) - pos} bytes left over after the {count} replicas "
            "numberOfBlocks declares"
        )
    return out


# -- the same replicas as numpy columns -------------------------------------------------

_MAX_STATE = max(ReplicaState)


@dataclass(frozen=True, slots=True, eq=False)
class BlockColumns(Sequence[ReportedReplica]):
    """A block list as columns (ids, lengths, genstamps, states), a Sequence of replicas."""

    ids: npt.NDArray[np.int64]
    num_bytes: npt.NDArray[np.int64]
    gen_stamps: npt.NDArray[np.int64]
    states: npt.NDArray[np.uint8]

    @classmethod
    def of(cls, replicas: Sequence[ReportedReplica]) -> BlockColumns:
        """The columns of a list of replicas."""
        n = len(replicas)
        return cls(
            np.fromiter((r.block_id for r in replicas), dtype=np.int64, count=n),
            np.fromiter((r.num_bytes for r in replicas), dtype=np.int64, count=n),
            np.fromiter((r.gen_stamp for r in replicas), dtype=np.int64, count=n),
            np.fromiter((int(r.state) for r in replicas), dtype=np.uint8, count=n),
        )

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, i: int) -> ReportedReplica: ...

    @overload
    def __getitem__(self, i: slice) -> list[ReportedReplica]: ...

    def __getitem__(self, i: int | slice) -> ReportedReplica | list[ReportedReplica]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        return ReportedReplica(
            int(self.ids[i]),
            int(self.num_bytes[i]),
            int(self.gen_stamps[i]),
            ReplicaState(int(self.states[i])),
        )

    def __iter__(self) -> Iterator[ReportedReplica]:
        cols = (self.ids, self.num_bytes, self.gen_stamps, self.states)
        for i, n, g, st in zip(*(c.tolist() for c in cols), strict=True):
            yield ReportedReplica(i, n, g, ReplicaState(st))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, BlockColumns):
            return (
                np.array_equal(self.ids, other.ids)
                and np.array_equal(self.num_bytes, other.num_bytes)
                and np.array_equal(self.gen_stamps, other.gen_stamps)
                and np.array_equal(self.states, other.states)
            )
        if isinstance(other, (list, tuple)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


def _vector_buffers(count: int, data: bytes) -> BlockColumns | None:
    """The replicas of well-formed buffers, or None for anything the checks would refuse."""
    raw = np.frombuffer(data, dtype=np.uint8)
    if count == 0:
        return BlockColumns.of([]) if not len(raw) else None
    n = 4 * count
    ends = np.flatnonzero(raw < 0x80)  # the last byte of each varint
    if len(ends) != n or ends[-1] != len(raw) - 1:
        return None
    starts = np.empty(n, dtype=np.int64)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    lens = ends - starts + 1
    longest = int(lens.max())
    if longest > 10:
        return None
    vals = (raw[starts] & 0x7F).astype(np.uint64)
    for k in range(1, longest):
        at = np.flatnonzero(lens > k)
        part = (raw[starts[at] + k] & 0x7F).astype(np.uint64)
        if k == 9 and np.any(part > 1):
            return None  # above 64 bits
        vals[at] |= part << np.uint64(7 * k)
    v = vals.reshape(count, 4)
    z = v[:, 0]
    ids = ((z >> np.uint64(1)) ^ (np.uint64(0) - (z & np.uint64(1)))).view(np.int64)
    gs = v[:, 2].view(np.int64)
    states = v[:, 3] & np.uint64(REPLICA_STATE_MASK)
    if np.any(gs < 0) or np.any(states > _MAX_STATE):
        return None
    return BlockColumns(
        np.ascontiguousarray(ids),
        (v[:, 1] & np.uint64(NUM_BYTES_MASK)).astype(np.int64),
        np.ascontiguousarray(gs),
        states.astype(np.uint8),
    )


def decode_buffers_columns(
    count: int, buffers: Sequence[bytes], max_blocks: int = DEFAULT_MAX_BLOCKS
) -> BlockColumns:
    """decode_buffers' replicas as columns (the same replicas, the same errors)."""
    _check_count(count, max_blocks, "block buffers")
    data = b"".join(buffers)
    cols = _vector_buffers(count, data) if count * _MIN_BUFFER_BYTES <= len(data) else None
    return cols if cols is not None else BlockColumns.of(decode_buffers(count, [data], max_blocks))


def _vector_longs(values: Sequence[int], max_blocks: int) -> BlockColumns | None:
    """The replicas of a well-formed legacy list, or None for anything to check one by one."""
    n = len(values)
    if n < 2:
        return None
    try:
        arr = np.fromiter(values, dtype=np.uint64, count=n).view(np.int64)
    except (OverflowError, ValueError, TypeError):
        return None  # signed longs: the per-replica decoder reads them
    finalized, uc = int(arr[0]), int(arr[1])
    if not (finalized >= 0 and uc >= 0 and finalized + uc <= max_blocks):
        return None
    without = 2 + 3 * finalized
    if n == without:
        uc_rows = arr[without:without].reshape(0, 4)
    elif n == without + 3 + 4 * uc and np.all(arr[without : without + 3] == -1):
        uc_rows = arr[without + 3 :].reshape(uc, 4)
    else:
        return None
    fin_rows = arr[2:without].reshape(finalized, 3)
    ids = np.concatenate((fin_rows[:, 0], uc_rows[:, 0]))
    nbytes = np.concatenate((fin_rows[:, 1], uc_rows[:, 1]))
    gs = np.concatenate((fin_rows[:, 2], uc_rows[:, 2]))
    states = np.concatenate((np.zeros(finalized, dtype=np.int64), uc_rows[:, 3]))
    if (
        np.any((nbytes < 0) | (nbytes > NUM_BYTES_MASK))
        or np.any(gs < 0)
        or np.any((states < 0) | (states > _MAX_STATE))
    ):
        return None
    return BlockColumns(ids, nbytes, gs, states.astype(np.uint8))


def decode_longs_columns(
    values: Sequence[int], max_blocks: int = DEFAULT_MAX_BLOCKS
) -> BlockColumns:
    """decode_longs' replicas as columns (the same replicas, the same errors)."""
    if len(values) == 0:
        return BlockColumns.of([])
    cols = _vector_longs(values, max_blocks)
    return cols if cols is not None else BlockColumns.of(decode_longs(values, max_blocks))
