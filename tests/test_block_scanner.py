"""The block scanner (design §B.18): which replicas are due and how fast (table tests of the
pure rules), and a VolumeScanner over a real FsDataset finding a byte flipped on disk."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from qjm.datanode.block_scanner import (
    IDLE_MAX_S,
    BlockScanner,
    ScanSettings,
    VolumeScanner,
    due_order,
    next_due_in,
    pause_for_rate,
)
from qjm.datanode.dataset import FsDataset
from qjm.datanode.fs_replicas import DiskPool
from qjm.datanode.layout import BlockPoolInfo
from qjm.datanode.storage import DataStorage
from qjm.hdfs import checksum
from qjm.testing.wait import wait_until_async

P = "BP-1"


@pytest.mark.parametrize(
    ("last", "now", "due"),
    [
        ({}, 100.0, [(P, 1), (P, 2), (P, 3)]),  # never scanned: all, by block id
        ({(P, 1): 95.0, (P, 2): 99.0, (P, 3): 50.0}, 100.0, [(P, 3)]),  # only the stale one
        ({(P, 1): 80.0, (P, 3): 85.0}, 100.0, [(P, 2), (P, 1), (P, 3)]),  # never, then oldest
        ({(P, 1): 90.0, (P, 2): 90.0, (P, 3): 90.0}, 100.0, [(P, 1), (P, 2), (P, 3)]),
        ({(P, 1): 91.0, (P, 2): 92.0, (P, 3): 93.0}, 100.0, []),
    ],
)
def test_due_order(last: dict[tuple[str, int], float], now: float, due: list[object]) -> None:
    assert due_order([(P, 3), (P, 1), (P, 2)], last, now, period_s=10.0) == due


@pytest.mark.parametrize(
    ("last", "wait"),
    [
        ({}, 0.0),  # a replica never scanned is due now
        ({(P, 1): 95.0}, 5.0),
        ({(P, 1): 95.0, (P, 2): 92.0}, 2.0),
        ({(P, 1): 50.0}, 0.0),  # overdue
    ],
)
def test_next_due_in(last: dict[tuple[str, int], float], wait: float) -> None:
    keys = list(last) or [(P, 1)]
    assert next_due_in(keys, last, 100.0, period_s=10.0) == pytest.approx(wait)


def test_an_empty_volume_looks_again_within_the_idle_bound() -> None:
    assert next_due_in([], {}, 100.0, period_s=1e9) == IDLE_MAX_S


@pytest.mark.parametrize(
    ("done", "elapsed", "rate", "pause"),
    [
        (1 << 20, 0.0, 1 << 20, 1.0),  # 1 MiB at once at 1 MiB/s: wait a second
        (1 << 20, 1.5, 1 << 20, 0.0),  # already slower than the rate
        (3 << 20, 1.0, 1 << 20, 2.0),
        (1 << 30, 0.0, 0, 0.0),  # rate 0: no pacing (the scanner is off anyway)
    ],
)
def test_pause_for_rate(done: int, elapsed: float, rate: int, pause: float) -> None:
    assert pause_for_rate(done, elapsed, rate) == pytest.approx(pause)


class Disk:
    """A FsDataset on a temp dir with finalized replicas written through its writer."""

    def __init__(self, root: Path) -> None:
        storage = DataStorage([root / "d1", root / "d2"])
        storage.load("CID-scanner")
        self.dataset = FsDataset(storage)
        self.dataset.add_block_pool(BlockPoolInfo(1, P))
        self.pool = DiskPool(2)

    def write(self, block_id: int, data: bytes) -> Path:
        """A finalized replica of data; its data file."""
        w = self.dataset.create_rbw(P, block_id, 1000 + block_id)
        w.write_packet(0, data, checksum.chunk_sums(data))
        r = w.finalize()
        return r.data_path

    def close(self) -> None:
        self.pool.shutdown()
        self.dataset.close()


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Disk]:
    d = Disk(tmp_path)
    yield d
    d.close()


async def test_a_byte_flipped_on_disk_is_found_and_reported_once_a_pass(disk: Disk) -> None:
    rng = random.Random(5)
    paths = {i: disk.write(i, rng.randbytes(3 << 20 if i == 2 else 70_001)) for i in (1, 2, 3)}
    raw = bytearray(paths[2].read_bytes())
    raw[(2 << 20) + 17] ^= 0x01  # inside the third MiB: found past the first step
    paths[2].write_bytes(bytes(raw))
    reported: list[tuple[str, int, int, int, str]] = []
    scanner = BlockScanner(
        disk.dataset,
        disk.pool,
        ScanSettings(bytes_per_second=64 << 20, period_s=3600.0),
        lambda *a: reported.append(a),
    )
    scanner.start()
    try:
        await wait_until_async(
            "all three replicas scanned", lambda: scanner.totals().blocks_scanned == 3
        )
    finally:
        await scanner.stop()
    [(pool, block_id, genstamp, length, storage)] = reported
    r = disk.dataset.get_replica(P, 2)
    assert r is not None
    assert (pool, block_id, genstamp, length, storage) == (P, 2, 1002, 3 << 20, r.storage_id)
    t = scanner.totals()
    assert t.corrupt_found == 1 and t.read_errors == 0
    # the bad replica stopped the check at its bad chunk: fewer bytes than all three hold
    assert (2 << 20) <= t.bytes_scanned - 2 * 70_001 < 3 << 20


async def test_the_rate_bounds_how_fast_a_volume_is_read(disk: Disk) -> None:
    for i in (1, 2):
        disk.write(i, bytes(1 << 20))
    first = disk.dataset.get_replica(P, 1)
    assert first is not None
    scanner = VolumeScanner(
        first.storage_id, disk.dataset, disk.pool, ScanSettings(4 << 20, 3600.0), lambda *a: None
    )
    loop = asyncio.get_running_loop()
    began = loop.time()
    await scanner.scan((P, 1), 1001)
    await scanner.scan((P, 2), 1002)
    # 2 MiB at 4 MiB/s: half a second at least, however fast the disk
    assert loop.time() - began >= 0.45
    assert scanner.counts.blocks_scanned == 2 and scanner.counts.corrupt_found == 0


async def test_a_replica_deleted_or_restamped_since_the_pass_began_is_skipped(disk: Disk) -> None:
    disk.write(1, b"x" * 5000)
    r = disk.dataset.get_replica(P, 1)
    assert r is not None
    scanner = VolumeScanner(
        r.storage_id, disk.dataset, disk.pool, ScanSettings(1 << 30, 1.0), lambda *a: None
    )
    await scanner.scan((P, 1), 999_999)  # a newer stamp than the replica's: not this one
    disk.dataset.invalidate(P, 1, 1001)
    await scanner.scan((P, 1), 1001)  # gone
    assert scanner.counts.blocks_scanned == 0 and (P, 1) not in scanner.last_scanned


def test_a_zero_rate_turns_the_scanner_off(disk: Disk) -> None:
    scanner = BlockScanner(disk.dataset, disk.pool, ScanSettings(0, 1.0), lambda *a: None)
    assert not scanner.enabled
    scanner.start()  # starts nothing, needs no event loop
    assert scanner._tasks == []
