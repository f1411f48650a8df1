"""The block scanner: each volume's finalized replicas read back and checked against their
sums in the background, at a bounded rate (HDFS's BlockScanner and VolumeScanner).

A replica whose bytes fail their sums is reported to every NameNode (reportBadBlocks), which
has a good copy made and the bad one deleted (design §B.18). Each replica is scanned once a
period (`dfs.datanode.scan.period.hours`); one never scanned since the DataNode started comes
first. The rules (what is due, how long to pause for the rate) are pure functions; the
VolumeScanner does the reading on the DataNode's disk pool.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from qjm.datanode.dataset import FsDataset, ReplicaReader
from qjm.datanode.fs_replicas import DiskPool
from qjm.datanode.replica import ReplicaState
from qjm.errors import QjmError, describe_error
from qjm.hdfs.checksum import ChecksumError

log = logging.getLogger("qjm.datanode.scanner")

STEP_BYTES = 1 << 20  # read and checked per disk call (whole chunks)
IDLE_MAX_S = 30.0  # a scanner with nothing due looks again at least this often

Key = tuple[str, int]  # (block pool id, block id)


@dataclass(frozen=True, slots=True)
class ScanSettings:
    """How fast and how often: bytes a second per volume (0: no scanning) and the period."""

    bytes_per_second: int
    period_s: float


def due_order(
    keys: Sequence[Key], last_scanned: dict[Key, float], now: float, period_s: float
) -> list[Key]:
    """The replicas to scan now, in order: never scanned first (by pool, block id), then
    those last scanned a period or more ago, oldest first."""
    never = sorted(k for k in keys if k not in last_scanned)
    old = sorted(
        (k for k in keys if k in last_scanned and now - last_scanned[k] >= period_s),
        key=lambda k: (last_scanned[k], k),
    )
    return never + old


def next_due_in(
    keys: Sequence[Key], last_scanned: dict[Key, float], now: float, period_s: float
) -> float:
    """Seconds until the next replica falls due (0 if one is due), at most IDLE_MAX_S."""
    soonest = IDLE_MAX_S
    for k in keys:
        at = last_scanned.get(k)
        if at is None:
            return 0.0
        soonest = min(soonest, at + period_s - now)
    return max(0.0, soonest)


def pause_for_rate(bytes_done: int, elapsed_s: float, bytes_per_second: int) -> float:
    """How long to wait so that bytes_done over elapsed_s stays within the rate."""
    if bytes_per_second <= 0:
        return 0.0
    return max(0.0, bytes_done / bytes_per_second - elapsed_s)


@dataclass(slots=True)
class ScanCounts:
    """What a volume's scanner has done since the DataNode started."""

    blocks_scanned: int = 0
    bytes_scanned: int = 0
    corrupt_found: int = 0
    read_errors: int = 0


class VolumeScanner:
    """Scans one volume's finalized replicas, one at a time, within its rate."""

    def __init__(
        self,
        storage_id: str,
        dataset: FsDataset,
        disk: DiskPool,
        settings: ScanSettings,
        on_corrupt: Callable[[str, int, int, int, str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.storage_id = storage_id
        self.dataset = dataset
        self.disk = disk
        self.settings = settings
        self.on_corrupt = on_corrupt  # (pool, block id, genstamp, length, storage id)
        self.clock = clock
        self.last_scanned: dict[Key, float] = {}
        self.counts = ScanCounts()
        self._pace_start = clock()
        self._pace_bytes = 0

    def _finalized(self) -> dict[Key, int]:
        """(pool, block id) -> genstamp of this volume's finalized replicas."""
        out = {}
        for pool in list(self.dataset.pools):
            for r in self.dataset.replicas(pool):
                if r.storage_id == self.storage_id and r.state is ReplicaState.FINALIZED:
                    out[(pool, r.block_id)] = r.genstamp
        return out

    async def run(self) -> None:
        """Scan forever, a pass at a time."""
        while True:
            try:
                await self._pass()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # one bad pass must not end the scanner
                log.warning("scanner of %s: %s", self.storage_id, describe_error(e))
                await asyncio.sleep(IDLE_MAX_S)

    async def _pass(self) -> None:
        """Scan what is due now; with nothing due, wait until something falls due."""
        replicas = self._finalized()
        keys = list(replicas)
        for gone in set(self.last_scanned) - set(keys):
            del self.last_scanned[gone]
        due = due_order(keys, self.last_scanned, self.clock(), self.settings.period_s)
        for key in due:
            await self.scan(key, replicas[key])
        if not due:
            wait = next_due_in(keys, self.last_scanned, self.clock(), self.settings.period_s)
            await asyncio.sleep(max(wait, 0.05))

    async def scan(self, key: Key, genstamp: int) -> None:
        """Read one replica back and check it; report it when its bytes fail their sums."""
        pool, block_id = key
        try:
            reader = await self.disk.run(self.dataset.open_reader, pool, block_id, genstamp)
        except QjmError:  # deleted, or replaced by a newer stamp, since the pass began
            self.last_scanned.pop(key, None)
            return
        r = reader.replica
        try:
            if r.state is not ReplicaState.FINALIZED or r.genstamp != genstamp:
                return
            bad = await self._check(reader)
        except OSError as e:
            self.counts.read_errors += 1
            log.warning("scanner: reading %s failed: %s", r.describe(), describe_error(e))
            return
        finally:
            reader.close()
            self.last_scanned[key] = self.clock()
        self.counts.blocks_scanned += 1
        if bad is not None:
            self.counts.corrupt_found += 1
            log.error(
                "scanner: %s on %s fails its sums (%s): reporting it to the NameNodes",
                r.describe(),
                self.storage_id,
                bad,
            )
            self.on_corrupt(pool, block_id, r.genstamp, r.num_bytes, self.storage_id)

    async def _check(self, reader: ReplicaReader) -> str | None:
        """Why the replica's bytes fail their sums, or None; paced to the rate."""
        length = reader.visible_length
        step = max(
            reader.checksum.bytes_per_checksum,
            STEP_BYTES - STEP_BYTES % reader.checksum.bytes_per_checksum,
        )
        offset = 0
        while offset < length:
            n = min(step, length - offset)
            try:
                await self.disk.run(_check_range, reader, offset, n)
            except ChecksumError as e:
                return str(e)
            offset += n
            self.counts.bytes_scanned += n
            await self._pace(n)
        return None

    async def _pace(self, n: int) -> None:
        """Sleep as long as the rate asks after n more bytes (the window restarts when idle)."""
        now = self.clock()
        if now - self._pace_start > 10.0:
            self._pace_start, self._pace_bytes = now - 1.0, 0
        self._pace_bytes += n
        wait = pause_for_rate(
            self._pace_bytes, now - self._pace_start, self.settings.bytes_per_second
        )
        if wait > 0:
            await asyncio.sleep(wait)


def _check_range(reader: ReplicaReader, offset: int, length: int) -> None:
    """Check bytes [offset, offset+length) of a replica against its stored sums (a disk
    thread); ChecksumError names the first chunk that differs."""
    start, data, sums = reader.read_chunks(offset, length)
    reader.checksum.verify(data, sums, offset=start)


class BlockScanner:
    """One VolumeScanner task per live volume of the dataset (HDFS's BlockScanner)."""

    def __init__(
        self,
        dataset: FsDataset,
        disk: DiskPool,
        settings: ScanSettings,
        on_corrupt: Callable[[str, int, int, int, str], None],
    ) -> None:
        self.scanners = {
            v.storage_id: VolumeScanner(v.storage_id, dataset, disk, settings, on_corrupt)
            for v in dataset.live_volumes()
        }
        self._tasks: list[asyncio.Task[None]] = []
        self.enabled = settings.bytes_per_second > 0

    def start(self) -> None:
        """Start scanning (nothing when the rate is 0, HDFS's way to turn it off)."""
        if not self.enabled:
            return
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(s.run(), name=f"scanner-{sid}") for sid, s in self.scanners.items()
        ]

    async def stop(self) -> None:
        """Stop every volume's scanner."""
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    def totals(self) -> ScanCounts:
        """The counts over every volume."""
        out = ScanCounts()
        for s in self.scanners.values():
            c = s.counts
            out.blocks_scanned += c.blocks_scanned
            out.bytes_scanned += c.bytes_scanned
            out.corrupt_found += c.corrupt_found
            out.read_errors += c.read_errors
        return out
