"""The write-behind of a block's packets (design §B.4): ordered batches, acks wait on disk."""

from __future__ import annotations

import asyncio

import pytest

from memory_replicas import MemReplica, MemWriter
from qjm.datanode.replica_store import ExtendedBlock
from qjm.datanode.write_behind import WriteBehind
from qjm.hdfs import checksum
from qjm.testing.wait import wait_until_async

BPC = 512


class GatedWriter(MemWriter):
    """A MemWriter whose writes wait for a gate to open; it records each call's span."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__(MemReplica(ExtendedBlock("BP-1", 1 << 30 | 1, 1001, 0), BPC))
        self.gate = asyncio.Event()
        self.calls: list[tuple[int, int]] = []
        self.waiting = 0
        self.fail = fail

    async def write(self, offset: int, data: bytes, sums: bytes) -> None:
        self.waiting += 1
        await self.gate.wait()
        self.waiting -= 1
        if self.fail:
            raise OSError("disk gone")
        self.calls.append((offset, len(data)))
        await super().write(offset, data, sums)


def packet(i: int, n: int = 4 * BPC) -> tuple[bytes, bytes]:
    """Packet i's data (n bytes) and its sums."""
    data = bytes([i % 251]) * n
    return data, checksum.chunk_sums(data, BPC)


async def test_an_ack_waits_until_the_replica_holds_the_bytes() -> None:
    w = GatedWriter()
    wb = WriteBehind(w, max_pending=1 << 20)
    data, sums = packet(1)
    await wb.put(0, data, sums)
    waiter = asyncio.create_task(wb.wait_written(len(data)))
    await wait_until_async("the write started", lambda: w.waiting == 1, 5.0)
    assert not waiter.done() and wb.written == 0 and w.bytes_on_disk == 0
    w.gate.set()
    await asyncio.wait_for(waiter, 5)
    assert wb.written == len(data) == w.bytes_on_disk
    assert bytes(w.replica.data) == data and bytes(w.replica.sums) == sums
    await wb.close()


async def test_packets_queued_during_a_write_go_to_disk_in_one_batch_in_order() -> None:
    w = GatedWriter()
    wb = WriteBehind(w, max_pending=1 << 20)
    packets = [packet(i) for i in range(6)]
    offset = 0
    await wb.put(offset, *packets[0])
    offset += len(packets[0][0])
    await wait_until_async("the first write started", lambda: w.waiting == 1, 5.0)
    for data, sums in packets[1:]:  # queued while the first write is held
        await wb.put(offset, data, sums)
        offset += len(data)
    w.gate.set()
    await asyncio.wait_for(wb.drain(), 5)
    assert w.calls == [(0, 4 * BPC), (4 * BPC, 5 * 4 * BPC)]
    assert wb.batches == 2 and wb.written == offset
    assert bytes(w.replica.data) == b"".join(d for d, _ in packets)
    assert bytes(w.replica.sums) == b"".join(s for _, s in packets)
    await wb.close()


async def test_a_put_waits_while_too_much_is_queued() -> None:
    w = GatedWriter()
    wb = WriteBehind(w, max_pending=8 * BPC)
    d0, s0 = packet(0)
    await wb.put(0, d0, s0)  # 4 chunks pending: under the bound
    d1, s1 = packet(1, 8 * BPC)
    put = asyncio.create_task(wb.put(len(d0), d1, s1))  # 12 chunks pending: over it
    await wait_until_async("the first write started", lambda: w.waiting == 1, 5.0)
    assert not put.done()
    w.gate.set()
    await asyncio.wait_for(put, 5)
    await asyncio.wait_for(wb.drain(), 5)
    assert wb.written == len(d0) + len(d1)
    await wb.close()


async def test_only_a_chunk_aligned_continuation_is_queued() -> None:
    wb = WriteBehind(GatedWriter(), max_pending=1 << 20)
    assert wb.can_queue(0)
    assert not wb.can_queue(BPC)  # a gap
    data, sums = packet(0, BPC + 10)
    with pytest.raises(ValueError):
        await wb.put(BPC, data, sums)
    await wb.put(0, data, sums)
    assert not wb.can_queue(BPC + 10)  # continues inside a chunk: written directly
    await wb.close()


async def test_a_failed_write_is_raised_to_the_next_put_and_to_the_ack() -> None:
    w = GatedWriter(fail=True)
    wb = WriteBehind(w, max_pending=1 << 20)
    data, sums = packet(0)
    await wb.put(0, data, sums)
    w.gate.set()
    with pytest.raises(OSError, match="disk gone"):
        await asyncio.wait_for(wb.wait_written(len(data)), 5)
    with pytest.raises(OSError, match="disk gone"):
        await wb.put(len(data), *packet(1))
    assert wb.written == 0
    await wb.close()
