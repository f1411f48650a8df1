"""FsDataset: the replica map over every volume, and the calls the transfer server and the
block reporter make on it (design §B.1).

All disk I/O here is blocking; the daemon calls it from threads. One lock guards the map
and the volumes' counters and is never held across data I/O or an fsync, so readers and
writers of different replicas run at once; each writer has its own lock for its packets.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from qjm.datanode.errors import (
    DiskOutOfSpaceError,
    ReplicaAlreadyExistsError,
    ReplicaNotFoundError,
    StorageError,
    VolumeFailedError,
)
from qjm.datanode.layout import (
    BlockPoolInfo,
    block_file_name,
    choose_round_robin,
    chunk_aligned,
    meta_file_name,
    meta_header,
    meta_length,
    sum_position,
)
from qjm.datanode.replica import ReplicaInfo, ReplicaState
from qjm.datanode.storage import BlockPoolSliceStorage, DataStorage
from qjm.datanode.volume import BlockPoolSlice, FsVolume, Quarantined, Statvfs
from qjm.errors import describe_error
from qjm.fileutil import fsync_dir, start_writeback
from qjm.hdfs.checksum import ChecksumError, DataChecksum, num_chunks, sums_length

log = logging.getLogger(__name__)

DEFAULT_BLOCK_SIZE = 128 * 1024 * 1024
# Bytes of a replica written before the kernel is told to start writing them back, so the
# fsync at its close finds little left (HDFS's sync-behind-writes, design §B.1).
SYNC_BEHIND_BYTES = 8 * 1024 * 1024
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


@dataclass(frozen=True)
class VolumeReport:
    """One volume's space as a heartbeat reports it (StorageReportProto)."""

    storage_id: str
    path: Path
    failed: str
    capacity: int
    dfs_used: int
    remaining: int
    block_pool_used: dict[str, int]


@dataclass(frozen=True)
class FailedVolume:
    """A volume given up: where, why, and when (seconds since the epoch)."""

    path: Path
    storage_id: str
    reason: str
    when: float


def _pwrite_all(fd: int, data: bytes | memoryview, offset: int) -> None:
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, offset)
        view = view[n:]
        offset += n


_IOV_MAX = 512  # buffers per pwritev, under every system's IOV_MAX (1024 on Linux)


def _pwritev_all(fd: int, parts: Sequence[bytes | memoryview], offset: int) -> None:
    for i in range(0, len(parts), _IOV_MAX):
        group = parts[i : i + _IOV_MAX]
        n = os.pwritev(fd, group, offset)
        total = sum(len(p) for p in group)
        if n < total:  # a short write: the rest in plain writes
            _pwrite_all(fd, memoryview(b"".join(group))[n:], offset + n)
        offset += total


def _pread_exact(fd: int, length: int, offset: int, what: Path) -> bytes:
    out = os.pread(fd, length, offset)
    if len(out) != length:
        raise StorageError(f"{what} ends at {offset + len(out)}, before byte {offset + length}")
    return out


class FsDataset:
    """Every replica of every block pool on this DataNode's volumes."""

    def __init__(
        self,
        storage: DataStorage,
        *,
        reserved: int = 0,
        statvfs: Statvfs = os.statvfs,
        sync_on_close: bool = True,
        checksum: DataChecksum | None = None,
    ) -> None:
        self.storage = storage
        self.sync_on_close = sync_on_close
        self.checksum = checksum or DataChecksum()
        self.volumes = [
            FsVolume(sd.root, sd.info.storage_id, statvfs=statvfs, reserved=reserved)
            for sd in storage.storage_dirs
        ]
        self.failed_volumes: list[FailedVolume] = [
            FailedVolume(path, "", why, time.time()) for path, why in storage.failed.items()
        ]
        self.pools: dict[str, BlockPoolInfo] = {}
        self._lock = threading.RLock()
        self._map: dict[str, dict[int, ReplicaInfo]] = {}
        self._where: dict[tuple[str, int], FsVolume] = {}
        self._writers: dict[tuple[str, int], ReplicaWriter] = {}
        self._next_volume = 0
        # called (from whichever thread saw the error) each time a volume fails
        self.on_volume_failed: Callable[[], None] | None = None

    # -- block pools ---------------------------------------------------------------------
    def add_block_pool(self, info: BlockPoolInfo) -> list[ReplicaInfo]:
        """Check or create the pool's directories on every volume and load its replicas."""
        loaded: list[ReplicaInfo] = []
        for volume in self.live_volumes():
            bp = BlockPoolSliceStorage(volume.root / "current", info)
            try:
                bp.load()
                bps = BlockPoolSlice(volume, bp.bpid, bp.root)
                bps.make_dirs()
                found = bps.scan()
            except OSError as e:
                self._fail_volume(volume, e)
                continue
            with self._lock:
                volume.slices[bp.bpid] = bps
                pool = self._map.setdefault(bp.bpid, {})
                for r in found:
                    old = pool.get(r.block_id)
                    if old is not None:
                        r = self._resolve_duplicate(bps, old, r)
                    pool[r.block_id] = r
                    self._where[(r.bpid, r.block_id)] = self._volume(r.storage_id)
        with self._lock:
            self.pools[info.block_pool_id] = info
            self._map.setdefault(info.block_pool_id, {})
            loaded = [replace(r) for r in self._map[info.block_pool_id].values()]
        return loaded

    def _resolve_duplicate(
        self, bps: BlockPoolSlice, old: ReplicaInfo, new: ReplicaInfo
    ) -> ReplicaInfo:
        """Keep the newer genstamp, then a finalized one, then the longer; set the other aside."""

        def rank(r: ReplicaInfo) -> tuple[int, bool, int]:
            return r.genstamp, r.state == ReplicaState.FINALIZED, r.num_bytes

        keep, drop = (new, old) if rank(new) > rank(old) else (old, new)
        where = self._volume(drop.storage_id).slices.get(drop.bpid, bps)
        where.quarantine(
            [drop.data_path, drop.meta_path], f"a second replica; kept {keep.describe()}"
        )
        return keep

    def _volume(self, storage_id: str) -> FsVolume:
        for v in self.volumes:
            if v.storage_id == storage_id:
                return v
        raise StorageError(f"no volume with storage id {storage_id}")

    def live_volumes(self) -> list[FsVolume]:
        """The volumes still serving."""
        return [v for v in self.volumes if not v.failed]

    @property
    def quarantined(self) -> list[Quarantined]:
        """Files set aside and never served, on every volume and pool."""
        return [q for v in self.volumes for s in v.slices.values() for q in s.quarantined]

    # -- failures ------------------------------------------------------------------------
    def _fail_volume(self, volume: FsVolume, exc: BaseException) -> None:
        """Give up a volume whose disk failed; its replicas leave the map."""
        with self._lock:
            if volume.failed:
                return
            volume.failed = describe_error(exc)
            self.failed_volumes.append(
                FailedVolume(volume.root, volume.storage_id, volume.failed, time.time())
            )
            lost = [key for key, v in self._where.items() if v is volume]
            for key in lost:
                del self._where[key]
                self._map.get(key[0], {}).pop(key[1], None)
                w = self._writers.pop(key, None)
                if w is not None:
                    w._stale = f"its volume {volume.root} failed"
        log.error(
            "volume %s (%s) failed: %s; %d replica(s) dropped",
            volume.root,
            volume.storage_id,
            volume.failed,
            len(lost),
        )
        if self.on_volume_failed is not None:
            self.on_volume_failed()

    @contextmanager
    def _io(self, volume: FsVolume, what: str) -> Iterator[None]:
        """Map an OSError on a volume: out of space stays an error of the call, any other
        marks the volume failed."""
        if volume.failed:
            raise VolumeFailedError(f"volume {volume.root} has failed: {volume.failed}")
        try:
            yield
        except OSError as e:
            if e.errno in _NO_SPACE:
                raise DiskOutOfSpaceError(f"volume {volume.root} is out of space {what}") from None
            self._fail_volume(volume, e)
            raise VolumeFailedError(
                f"volume {volume.root} failed {what}: {describe_error(e)}"
            ) from None

    # -- lookups -------------------------------------------------------------------------
    def _get(self, bpid: str, block_id: int) -> ReplicaInfo:
        r = self._map.get(bpid, {}).get(block_id)
        if r is None:
            if bpid not in self._map:
                raise ReplicaNotFoundError(f"block pool {bpid} is not served by this DataNode")
            raise ReplicaNotFoundError(f"no replica of blk_{block_id} in {bpid}")
        return r

    def get_replica(self, bpid: str, block_id: int) -> ReplicaInfo | None:
        """A copy of the replica of that block, None if there is none."""
        with self._lock:
            r = self._map.get(bpid, {}).get(block_id)
            return replace(r) if r is not None else None

    def replicas(self, bpid: str) -> list[ReplicaInfo]:
        """Copies of every replica of a pool, for block reports."""
        with self._lock:
            return [replace(r) for r in self._map.get(bpid, {}).values()]

    def block_report(self, bpid: str) -> dict[str, list[ReplicaInfo]]:
        """A pool's replicas per storage id (each live volume, even with none)."""
        with self._lock:
            out: dict[str, list[ReplicaInfo]] = {v.storage_id: [] for v in self.live_volumes()}
            for r in self._map.get(bpid, {}).values():
                out.setdefault(r.storage_id, []).append(replace(r))
            return out

    # -- space ---------------------------------------------------------------------------
    def _used(self, volume: FsVolume, bpid: str | None = None) -> int:
        """Bytes of data and meta files of the volume's replicas (of one pool if named)."""
        total = 0
        for (pool, block_id), v in self._where.items():
            if v is volume and (bpid is None or pool == bpid):
                total += self._map[pool][block_id].bytes_on_disk
        return total

    def volume_reports(self) -> list[VolumeReport]:
        """Capacity, dfsUsed, remaining and per-pool used bytes of every volume."""
        out = []
        for v in self.volumes:
            with self._lock:
                used = self._used(v)
                per_pool = {bpid: self._used(v, bpid) for bpid in v.slices}
            if v.failed:
                out.append(VolumeReport(v.storage_id, v.root, v.failed, 0, used, 0, per_pool))
                continue
            try:
                capacity, _ = v.space()
                remaining = v.available(used)
            except OSError as e:
                self._fail_volume(v, e)
                out.append(VolumeReport(v.storage_id, v.root, v.failed, 0, used, 0, per_pool))
                continue
            out.append(VolumeReport(v.storage_id, v.root, "", capacity, used, remaining, per_pool))
        return out

    def pool_used(self, bpid: str) -> int:
        """Bytes the pool's replicas take on every live volume."""
        with self._lock:
            return sum(self._used(v, bpid) for v in self.live_volumes())

    def _choose_volume(self, bpid: str, size: int) -> FsVolume:
        """Round-robin among live volumes with more than size bytes available."""
        with self._lock:
            vols = [v for v in self.live_volumes() if bpid in v.slices]
            avail = []
            for v in vols:
                try:
                    avail.append(v.available(self._used(v)))
                except OSError:
                    avail.append(-1)
            i, self._next_volume = choose_round_robin(avail, self._next_volume, size)
            vols[i].reserved_for_replicas += size
            return vols[i]

    # -- writing -------------------------------------------------------------------------
    def create_rbw(
        self,
        bpid: str,
        block_id: int,
        genstamp: int,
        *,
        expected_size: int = DEFAULT_BLOCK_SIZE,
        temporary: bool = False,
        checksum: DataChecksum | None = None,
    ) -> ReplicaWriter:
        """A new replica being written (TEMPORARY for a transfer's copy) on a chosen volume,
        its sums of the writer's checksum (else the dataset's)."""
        state = ReplicaState.TEMPORARY if temporary else ReplicaState.RBW
        cs = checksum or self.checksum
        replaced: tuple[ReplicaInfo, FsVolume | None] | None = None
        with self._lock:
            old = self._map.get(bpid, {}).get(block_id)
            if bpid not in self._map:
                raise ReplicaNotFoundError(f"block pool {bpid} is not served by this DataNode")
            if (
                old is not None
                and temporary
                and old.state == ReplicaState.TEMPORARY
                and old.genstamp < genstamp
            ):
                # an older transfer's copy never finished: the newer one replaces it
                # (HDFS's createTemporary, design §B.4)
                replaced = (old, self._forget(old, "a newer transfer replaces it"))
                old = None
            if old is not None:
                raise ReplicaAlreadyExistsError(
                    f"blk_{block_id} already exists as {old.describe()} and cannot be created"
                )
            volume = self._choose_volume(bpid, expected_size)
            bps = volume.slices[bpid]
            data, meta = bps.paths(state, block_id, genstamp)
            r = ReplicaInfo(bpid, block_id, genstamp, state, 0, volume.storage_id, data, meta, cs)
            self._map[bpid][block_id] = r
            self._where[(bpid, block_id)] = volume
        try:
            if replaced is not None:  # its files go before the new copy's are made
                log.info("%s dropped: a newer transfer replaces it", replaced[0].describe())
                self._delete_files(*replaced)
            with self._io(volume, f"creating {r.describe()}"):
                fd_meta = os.open(meta, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
                try:
                    _pwrite_all(fd_meta, meta_header(cs), 0)
                    fd_data = os.open(data, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
                except BaseException:
                    os.close(fd_meta)
                    raise
        except BaseException:
            with self._lock:
                volume.reserved_for_replicas -= expected_size
                if self._map[bpid].get(block_id) is r:
                    del self._map[bpid][block_id]
                    self._where.pop((bpid, block_id), None)
            raise
        return self._writer(r, volume, fd_data, fd_meta, expected_size)

    def _writer(
        self, r: ReplicaInfo, volume: FsVolume, fd_data: int, fd_meta: int, reserved: int
    ) -> ReplicaWriter:
        w = ReplicaWriter(self, r, volume, fd_data, fd_meta, reserved)
        with self._lock:
            self._writers[(r.bpid, r.block_id)] = w
        return w

    def _open_writer(self, r: ReplicaInfo, volume: FsVolume, reserved: int) -> ReplicaWriter:
        with self._io(volume, f"opening {r.describe()}"):
            fd_data = os.open(r.data_path, os.O_RDWR)
            try:
                fd_meta = os.open(r.meta_path, os.O_RDWR)
            except BaseException:
                os.close(fd_data)
                raise
        return self._writer(r, volume, fd_data, fd_meta, reserved)

    def _stop_writer(self, key: tuple[str, int], why: str) -> None:
        """Make a replica's writer refuse further calls and release the room it held."""
        w = self._writers.pop(key, None)
        if w is not None:
            w._stale = why
            w._volume.reserved_for_replicas -= w._reserved
            w._reserved = 0

    def _check_gs(self, r: ReplicaInfo, genstamp: int) -> None:
        if r.genstamp != genstamp:
            raise ReplicaNotFoundError(
                f"{r.describe()} has genstamp {r.genstamp}, the request names {genstamp}"
            )

    def _rename_meta(self, r: ReplicaInfo, new_gs: int, directory: Path) -> Path:
        dest = directory / meta_file_name(r.block_id, new_gs)
        os.replace(r.meta_path, dest)
        return dest

    def append(
        self,
        bpid: str,
        block_id: int,
        genstamp: int,
        new_genstamp: int,
        *,
        expected_length: int | None = None,
        expected_size: int = DEFAULT_BLOCK_SIZE,
    ) -> ReplicaWriter:
        """Reopen a finalized replica for append under a new genstamp: back to rbw/."""
        with self._lock:
            r = self._get(bpid, block_id)
            if r.state != ReplicaState.FINALIZED:
                raise ReplicaNotFoundError(f"{r.describe()} is not finalized: cannot append")
            self._check_gs(r, genstamp)
            # HDFS's FsDatasetImpl.append refuses only a lower stamp: a client that appends
            # under the block's own stamp (hdfs-native does) is served (design §B.4)
            if new_genstamp < genstamp:
                raise StorageError(
                    f"append of {r.describe()}: new genstamp {new_genstamp} is below {genstamp}"
                )
            if expected_length is not None and r.num_bytes != expected_length:
                raise StorageError(
                    f"append of {r.describe()}: the NameNode expects {expected_length} bytes"
                )
            volume = self._where[(bpid, block_id)]
            bps = volume.slices[bpid]
            with self._io(volume, f"moving {r.describe()} to rbw/ for append"):
                # The data file first: a crash between the two renames leaves the meta file
                # in finalized/, and the start-up scan puts the block back there (design §B.1).
                data = bps.rbw / block_file_name(block_id)
                os.replace(r.data_path, data)
                r.data_path = data
                r.meta_path = self._rename_meta(r, new_genstamp, bps.rbw)
            r.genstamp = new_genstamp
            r.state = ReplicaState.RBW
            r.bytes_acked = r.num_bytes
            reserve = max(0, expected_size - r.num_bytes)
            volume.reserved_for_replicas += reserve
        return self._open_writer(r, volume, reserve)

    def recover_rbw(
        self,
        bpid: str,
        block_id: int,
        genstamp: int,
        new_genstamp: int,
        min_bytes: int,
        max_bytes: int,
    ) -> ReplicaWriter:
        """Pipeline recovery of a replica being written: stop its writer, bump its genstamp,
        cut what was not acknowledged, and hand back a new writer (FsDatasetImpl.recoverRbw).

        A replica already finalized with every byte the client sent (max_bytes) is reopened
        under the new genstamp instead of refused: a client that missed the last ack
        recovers so, and then gives the NameNode the new genstamp (design §B.4)."""
        with self._lock:
            r = self._get(bpid, block_id)
            whole = (
                r.state == ReplicaState.FINALIZED
                and r.num_bytes == max_bytes
                and min_bytes <= r.num_bytes
                and genstamp <= r.genstamp < new_genstamp
            )
            if r.state != ReplicaState.RBW and not whole:
                raise ReplicaNotFoundError(f"{r.describe()} is not being written")
        if whole:
            log.info(
                "%s: finalized with all %d bytes the client sent; reopened for its pipeline "
                "recovery under genstamp %d",
                r.describe(),
                max_bytes,
                new_genstamp,
            )
            return self.append(bpid, block_id, r.genstamp, new_genstamp, expected_length=max_bytes)
        with self._lock:
            r = self._get(bpid, block_id)
            if r.state != ReplicaState.RBW:
                raise ReplicaNotFoundError(f"{r.describe()} is not being written")
            if not genstamp <= r.genstamp <= new_genstamp:
                raise ReplicaNotFoundError(
                    f"{r.describe()}: genstamp outside {genstamp}..{new_genstamp}"
                )
            if r.bytes_acked < min_bytes or r.num_bytes > max_bytes:
                raise ReplicaNotFoundError(
                    f"{r.describe()} with {r.bytes_acked} acknowledged bytes does not match "
                    f"the {min_bytes}..{max_bytes} bytes the client received"
                )
            self._stop_writer((bpid, block_id), "the pipeline was recovered")
            volume = self._where[(bpid, block_id)]
            with self._io(volume, f"bumping the genstamp of {r.describe()}"):
                r.meta_path = self._rename_meta(r, new_genstamp, r.meta_path.parent)
            r.genstamp = new_genstamp
        w = self._open_writer(r, volume, 0)
        if r.num_bytes > r.bytes_acked:
            w.truncate(r.bytes_acked)
        return w

    def bump_genstamp(self, bpid: str, block_id: int, new_genstamp: int) -> ReplicaInfo:
        """Rename a replica's meta file to a newer genstamp (recovery)."""
        with self._lock:
            r = self._get(bpid, block_id)
            if new_genstamp < r.genstamp:
                raise StorageError(f"{r.describe()}: genstamp {new_genstamp} is older")
            volume = self._where[(bpid, block_id)]
            with self._io(volume, f"bumping the genstamp of {r.describe()}"):
                r.meta_path = self._rename_meta(r, new_genstamp, r.meta_path.parent)
            r.genstamp = new_genstamp
            return replace(r)

    def recover_close(
        self, bpid: str, block_id: int, genstamp: int, new_genstamp: int, expected_length: int
    ) -> ReplicaInfo:
        """Close recovery: bump the genstamp of a replica of the expected length and finalize
        it if still being written (FsDatasetImpl.recoverClose)."""
        with self._lock:
            r = self._get(bpid, block_id)
            if r.state not in (ReplicaState.FINALIZED, ReplicaState.RBW):
                raise ReplicaNotFoundError(f"{r.describe()} cannot be closed")
            if not genstamp <= r.genstamp <= new_genstamp or r.num_bytes != expected_length:
                raise ReplicaNotFoundError(
                    f"{r.describe()} does not match genstamp {genstamp}..{new_genstamp}, "
                    f"{expected_length} bytes"
                )
            self._stop_writer((bpid, block_id), "the block was closed by recovery")
        self.bump_genstamp(bpid, block_id, new_genstamp)
        if r.state == ReplicaState.RBW:
            return self._finalize(r, None)
        return self.get_replica(bpid, block_id) or replace(r)

    def init_replica_recovery(self, bpid: str, block_id: int, recovery_id: int) -> ReplicaInfo:
        """Start block recovery: stop any writer and hold the replica under recovery (RUR);
        the copy answered carries the state it had before (original_state, design §B.16)."""
        with self._lock:
            r = self._get(bpid, block_id)
            if r.genstamp >= recovery_id:
                raise StorageError(
                    f"{r.describe()}: recovery id {recovery_id} is not above its genstamp"
                )
            if r.recovery_id >= recovery_id:
                raise StorageError(
                    f"{r.describe()}: a recovery with id {r.recovery_id} >= {recovery_id} "
                    "is in progress"
                )
            self._stop_writer((bpid, block_id), "block recovery started")
            if r.original_state is None:
                r.original_state = r.state
            r.recovery_id = recovery_id
            if r.state != ReplicaState.FINALIZED:
                r.state = ReplicaState.RUR
            return replace(r)

    def update_replica_under_recovery(
        self, bpid: str, block_id: int, recovery_id: int, new_length: int
    ) -> ReplicaInfo:
        """Finish block recovery: cut to new_length, take the recovery id as genstamp, finalize."""
        with self._lock:
            r = self._get(bpid, block_id)
            if new_length > r.num_bytes:
                raise StorageError(f"{r.describe()} cannot grow to {new_length} bytes")
            if r.recovery_id != recovery_id:
                raise StorageError(
                    f"{r.describe()}: its recovery id is {r.recovery_id}, not {recovery_id}"
                )
            volume = self._where[(bpid, block_id)]
            if r.state == ReplicaState.FINALIZED and new_length == r.num_bytes:
                r.original_state, r.recovery_id = None, 0
                return self.bump_genstamp(bpid, block_id, recovery_id)
            # a truncate cuts a finalized replica in place, as HDFS (design §B.16)
            r.original_state, r.recovery_id = None, 0
        w = self._open_writer(r, volume, 0)
        w.truncate(new_length)
        self.bump_genstamp(bpid, block_id, recovery_id)
        return w.finalize()

    def _finalize(self, r: ReplicaInfo, writer: ReplicaWriter | None) -> ReplicaInfo:
        """Move a replica's files into finalized/subdirA/subdirB and mark it FINALIZED."""
        with self._lock:
            key = (r.bpid, r.block_id)
            if self._map.get(r.bpid, {}).get(r.block_id) is not r:
                raise ReplicaNotFoundError(f"{r.describe()} was removed while written")
            volume = self._where[key]
            bps = volume.slices[r.bpid]
            src_dir = r.data_path.parent
            data, meta = bps.paths(ReplicaState.FINALIZED, r.block_id, r.genstamp)
            with self._io(volume, f"finalizing {r.describe()}"):
                new_dirs = not data.parent.is_dir()
                data.parent.mkdir(parents=True, exist_ok=True)
                # The meta file first: a crash between the renames leaves the block file in
                # rbw/, and the start-up scan finishes the move (design §B.1).
                os.replace(r.meta_path, meta)
                os.replace(r.data_path, data)
            r.data_path, r.meta_path = data, meta
            r.state = ReplicaState.FINALIZED
            r.bytes_acked = r.num_bytes
            if writer is not None:
                volume.reserved_for_replicas -= writer._reserved
                writer._reserved = 0
                if self._writers.get(key) is writer:
                    del self._writers[key]
            out = replace(r)
        if self.sync_on_close:
            with self._io(volume, f"syncing the directories of {r.describe()}"):
                fsync_dir(data.parent)
                if new_dirs:
                    fsync_dir(data.parent.parent)
                    fsync_dir(data.parent.parent.parent)
                fsync_dir(src_dir)
        return out

    # -- reading -------------------------------------------------------------------------
    def open_reader(self, bpid: str, block_id: int, genstamp: int = 0) -> ReplicaReader:
        """A reader of a replica's visible bytes and their sums (its files stay open while
        the replica is finalized, moved or deleted meanwhile)."""
        with self._lock:
            r = self._get(bpid, block_id)
            if r.genstamp < genstamp:
                raise ReplicaNotFoundError(
                    f"{r.describe()} is older than the genstamp {genstamp} asked for"
                )
            if r.state == ReplicaState.TEMPORARY:
                raise ReplicaNotFoundError(f"{r.describe()} is a transfer's copy, not readable")
            volume = self._where[(bpid, block_id)]
            snap = replace(r)
            with self._io(volume, f"opening {r.describe()}"):
                fd_data = os.open(r.data_path, os.O_RDONLY)
                try:
                    fd_meta = os.open(r.meta_path, os.O_RDONLY)
                except BaseException:
                    os.close(fd_data)
                    raise
        return ReplicaReader(snap, fd_data, fd_meta)

    def visible_length(self, bpid: str, block_id: int) -> int:
        """getReplicaVisibleLength: bytes a reader may see now."""
        with self._lock:
            return self._get(bpid, block_id).visible_length

    # -- deleting ------------------------------------------------------------------------
    def _forget(self, r: ReplicaInfo, why: str) -> FsVolume | None:
        """Take a replica out of the maps and stop its writer (with the lock held); the
        volume its files are on."""
        key = (r.bpid, r.block_id)
        volume = self._where.pop(key, None)
        self._map.get(r.bpid, {}).pop(r.block_id, None)
        self._stop_writer(key, why)
        return volume

    def _delete_files(self, r: ReplicaInfo, volume: FsVolume | None) -> None:
        """Delete a forgotten replica's files (disk work: without the lock)."""
        if volume is None:
            return
        with self._io(volume, f"deleting {r.describe()}"):
            for path in (r.data_path, r.meta_path):
                path.unlink(missing_ok=True)

    def discard_temporary(self, bpid: str, block_id: int, genstamp: int) -> bool:
        """A transfer's copy whose transfer failed: removed, as HDFS's BlockReceiver cleans
        up (unfinalizeBlock), so that a later transfer can send it again; False if the
        replica is not that temporary copy any more."""
        with self._lock:
            r = self._map.get(bpid, {}).get(block_id)
            if r is None or r.state != ReplicaState.TEMPORARY or r.genstamp != genstamp:
                return False
            volume = self._forget(r, "its transfer did not finish")
        log.info("%s dropped: its transfer did not finish", r.describe())
        self._delete_files(r, volume)
        return True

    def invalidate(self, bpid: str, block_id: int, genstamp: int) -> ReplicaInfo:
        """Delete a replica (a NameNode's DNA_INVALIDATE), stopping any writer of it."""
        with self._lock:
            r = self._get(bpid, block_id)
            self._check_gs(r, genstamp)
            volume = self._forget(r, "the replica was deleted")
        self._delete_files(r, volume)
        return replace(r)

    def close(self) -> None:
        """Stop every writer (their replicas stay on disk) and release the directory locks."""
        with self._lock:
            writers = list(self._writers.values())
        for w in writers:
            w.close()
        self.storage.release()


class ReplicaWriter:
    """Writes one replica's packets: data and sums at an offset, syncs, then finalizes."""

    def __init__(
        self,
        dataset: FsDataset,
        replica: ReplicaInfo,
        volume: FsVolume,
        fd_data: int,
        fd_meta: int,
        reserved: int,
    ) -> None:
        self._ds = dataset
        self._r = replica
        self._volume = volume
        self._fd_data = fd_data
        self._fd_meta = fd_meta
        self._reserved = reserved
        self._lock = threading.Lock()
        self._stale = ""
        self._dir_synced = False
        self._writeback_from = replica.num_bytes  # data bytes below this are being written back

    @property
    def replica(self) -> ReplicaInfo:
        """A copy of the replica as now written."""
        with self._ds._lock:
            return replace(self._r)

    @property
    def bytes_on_disk(self) -> int:
        """Data bytes written (and covered by sums)."""
        return self._r.num_bytes

    def _check(self) -> None:
        if self._fd_data < 0:
            raise StorageError(f"the writer of {self._r.describe()} is closed")
        if self._stale:
            raise ReplicaNotFoundError(f"{self._r.describe()}: {self._stale}")

    def write_packet(
        self,
        offset: int,
        data: bytes | memoryview,
        sums: bytes | memoryview,
        *,
        sync: bool = False,
        verify: bool = False,
    ) -> None:
        """Write a packet's data at block offset `offset` with its sums (one per chunk of the
        block the packet touches, as on the wire; checked first when verify); bytes already on
        disk are skipped, the last partial chunk's sum rewritten as it grows."""
        with self._lock:
            self._check()
            r = self._r
            cs = r.checksum
            bpc, size = cs.bytes_per_checksum, cs.checksum_size
            view = memoryview(data).cast("B")
            want = sums_length(offset, len(view), bpc) if size else 0
            if len(sums) != want:
                raise ChecksumError(
                    f"{r.describe()}: {len(sums)} bytes of sums for a packet of {len(view)} "
                    f"bytes at offset {offset}, expected {want}",
                    offset=offset,
                )
            if verify:
                cs.verify(view, sums, offset=offset)
            disk = r.num_bytes
            end = offset + len(view)
            if offset < 0 or offset > disk:
                raise StorageError(
                    f"{r.describe()}: a packet at offset {offset} would leave a gap after the "
                    f"{disk} bytes on disk"
                )
            if end > disk:
                chunk_start = disk - disk % bpc
                new = view[disk - offset :]
                with self._ds._io(self._volume, f"writing {r.describe()}"):
                    if offset % bpc == 0:
                        first = (chunk_start - offset) // bpc
                        new_sums = bytes(sums[first * size :])
                    else:
                        # A packet starting inside a chunk (design §B.2): the sums from its start
                        # are computed here from the bytes on disk and the new ones.
                        prefix = b""
                        if disk > chunk_start:
                            prefix = _pread_exact(
                                self._fd_data, disk - chunk_start, chunk_start, r.data_path
                            )
                            cs.verify(prefix, r.last_sum, offset=chunk_start)
                        new_sums = cs.compute(prefix + bytes(new))
                    _pwrite_all(self._fd_data, new, disk)
                    _pwrite_all(self._fd_meta, new_sums, sum_position(cs, chunk_start))
                self._grown(disk, end, new_sums)
            if sync:
                self._sync()

    def _grown(self, disk: int, end: int, new_sums: bytes) -> None:
        """Account bytes disk..end just written, new_sums' last the last chunk's sum."""
        r = self._r
        size = r.checksum.checksum_size
        with self._ds._lock:
            r.num_bytes = end
            if size:
                r.last_sum = new_sums[-size:]
            take = min(end - disk, self._reserved)
            self._reserved -= take
            self._volume.reserved_for_replicas -= take

    def append_parts(
        self, offset: int, parts: Sequence[bytes | memoryview], sums: bytes | memoryview
    ) -> None:
        """Write packets' data that continue the replica at its end, on a chunk boundary,
        with the sums of their chunks, in one pwritev (a write-behind batch, design §B.4);
        anything else is written as one packet."""
        with self._lock:
            self._check()
            r = self._r
            cs = r.checksum
            bpc, size = cs.bytes_per_checksum, cs.checksum_size
            fast = size and offset == r.num_bytes and offset % bpc == 0
            if fast:
                total = sum(len(p) for p in parts)
                want = sums_length(offset, total, bpc)
                if len(sums) != want:
                    raise ChecksumError(
                        f"{r.describe()}: {len(sums)} bytes of sums for {total} bytes at "
                        f"offset {offset}, expected {want}",
                        offset=offset,
                    )
                if total:
                    new_sums = bytes(sums)
                    with self._ds._io(self._volume, f"writing {r.describe()}"):
                        _pwritev_all(self._fd_data, parts, offset)
                        _pwrite_all(self._fd_meta, new_sums, sum_position(cs, offset))
                        self._write_behind(offset + total)
                    self._grown(offset, offset + total, new_sums)
                return
        self.write_packet(offset, b"".join(parts), sums)

    def _write_behind(self, end: int) -> None:
        """Start the disk's writeback of each SYNC_BEHIND_BYTES written (design §B.1)."""
        start = min(self._writeback_from, end)
        if end - start >= SYNC_BEHIND_BYTES:
            start_writeback(self._fd_data, start, end - start)
            self._writeback_from = end

    def read(self, offset: int, length: int) -> bytes:
        """Bytes already written (a writer extending a partial last chunk reads it back)."""
        with self._lock:
            self._check()
            if offset < 0 or length < 0 or offset + length > self._r.num_bytes:
                raise StorageError(
                    f"{self._r.describe()}: bytes {offset}..{offset + length} are not written"
                )
            return _pread_exact(self._fd_data, length, offset, self._r.data_path)

    def set_bytes_acked(self, n: int) -> None:
        """Record that the pipeline acknowledged the first n bytes (the visible length)."""
        with self._ds._lock:
            self._r.bytes_acked = max(self._r.bytes_acked, min(n, self._r.num_bytes))

    def sync(self) -> None:
        """fsync the data and meta files (an hsync), and the directory the first time."""
        with self._lock:
            self._check()
            self._sync()

    def _sync(self) -> None:
        with self._ds._io(self._volume, f"syncing {self._r.describe()}"):
            os.fsync(self._fd_data)
            os.fsync(self._fd_meta)
            if not self._dir_synced:
                fsync_dir(self._r.data_path.parent)
                self._dir_synced = True

    def truncate(self, length: int) -> None:
        """Cut the replica to length bytes, its sums and the last partial chunk's sum with it."""
        with self._lock:
            self._check()
            r = self._r
            cs = r.checksum
            bpc, size = cs.bytes_per_checksum, cs.checksum_size
            if not 0 <= length <= r.num_bytes:
                raise StorageError(f"{r.describe()} cannot be cut to {length} bytes")
            last = b""
            with self._ds._io(self._volume, f"truncating {r.describe()}"):
                os.ftruncate(self._fd_data, length)
                os.ftruncate(self._fd_meta, meta_length(cs, length))
                if size and length:
                    start = (length - 1) - (length - 1) % bpc
                    if length % bpc:
                        tail = _pread_exact(self._fd_data, length - start, start, r.data_path)
                        last = cs.compute(tail)
                        _pwrite_all(self._fd_meta, last, sum_position(cs, start))
                    else:
                        last = _pread_exact(
                            self._fd_meta, size, sum_position(cs, start), r.meta_path
                        )
                os.fsync(self._fd_data)
                os.fsync(self._fd_meta)
            with self._ds._lock:
                r.num_bytes = length
                r.bytes_acked = min(r.bytes_acked, length)
                r.last_sum = last

    def finalize(self) -> ReplicaInfo:
        """Sync (when sync-on-close) and move the replica into finalized/; close the writer."""
        with self._lock:
            self._check()
            if self._ds.sync_on_close:
                with self._ds._io(self._volume, f"syncing {self._r.describe()}"):
                    os.fsync(self._fd_data)
                    os.fsync(self._fd_meta)
            out = self._ds._finalize(self._r, self)
            self._close_fds()
            return out

    def close(self) -> None:
        """Stop writing without finalizing; the replica stays as it is."""
        with self._lock:
            self._close_fds()
        with self._ds._lock:
            key = (self._r.bpid, self._r.block_id)
            if self._ds._writers.get(key) is self:
                del self._ds._writers[key]
            self._volume.reserved_for_replicas -= self._reserved
            self._reserved = 0

    def to_rbw(self) -> ReplicaInfo:
        """A TRANSFER_RBW copy received whole becomes a replica being written (RBW), which the
        client's pipeline recovery then takes over (HDFS's convertTemporaryToRbw)."""
        with self._lock:
            self._check()
            r = self._r
            with self._ds._lock:
                if r.state != ReplicaState.TEMPORARY:
                    raise ReplicaNotFoundError(f"{r.describe()} is not a transfer's copy")
                bps = self._volume.slices[r.bpid]
                data, meta = bps.paths(ReplicaState.RBW, r.block_id, r.genstamp)
                with self._ds._io(self._volume, f"moving {r.describe()} to rbw/"):
                    os.replace(r.meta_path, meta)
                    os.replace(r.data_path, data)
                r.data_path, r.meta_path = data, meta
                r.state = ReplicaState.RBW
                r.bytes_acked = r.num_bytes
                return replace(r)

    def discard(self) -> None:
        """Stop writing; a transfer's copy (TEMPORARY) is deleted, any other stays."""
        self.close()
        r = self._r
        self._ds.discard_temporary(r.bpid, r.block_id, r.genstamp)

    def _close_fds(self) -> None:
        for fd in (self._fd_data, self._fd_meta):
            if fd >= 0:
                os.close(fd)
        self._fd_data = self._fd_meta = -1

    def __enter__(self) -> ReplicaWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ReplicaReader:
    """A replica's visible bytes and their sums, from files opened when it was asked for."""

    def __init__(self, replica: ReplicaInfo, fd_data: int, fd_meta: int) -> None:
        self.replica = replica
        self.data_fd = fd_data
        self.meta_fd = fd_meta

    @property
    def data_path(self) -> Path:
        """The data file as it was named when opened."""
        return self.replica.data_path

    @property
    def meta_path(self) -> Path:
        """The meta file as it was named when opened."""
        return self.replica.meta_path

    @property
    def visible_length(self) -> int:
        """The bytes this reader may serve."""
        return self.replica.visible_length

    @property
    def checksum(self) -> DataChecksum:
        """The replica's checksum type and chunk size."""
        return self.replica.checksum

    def chunk_range(self, offset: int, length: int) -> tuple[int, int]:
        """The whole chunks [start, end) that READ_BLOCK sends for offset and length."""
        return chunk_aligned(offset, length, self.visible_length, self.checksum.bytes_per_checksum)

    def read(self, offset: int, length: int) -> bytes:
        """Bytes [offset, offset+length) of the visible data."""
        if offset < 0 or length < 0 or offset + length > self.visible_length:
            raise StorageError(
                f"{self.replica.describe()}: bytes {offset}..{offset + length} are outside "
                f"its {self.visible_length} visible bytes"
            )
        return _pread_exact(self.data_fd, length, offset, self.data_path)

    def sums(self, start: int, end: int) -> bytes:
        """The sums of the chunks of [start, end): start on a chunk boundary, end on one or
        at the visible length. A chunk that has more bytes on disk than are visible gets the
        sum of its visible part, after the whole chunk is checked against its stored sum."""
        r = self.replica
        cs = r.checksum
        bpc, size = cs.bytes_per_checksum, cs.checksum_size
        if start % bpc or not 0 <= start <= end <= self.visible_length:
            raise StorageError(
                f"{r.describe()}: sums of {start}..{end} are not whole chunks of its "
                f"{self.visible_length} visible bytes"
            )
        if end % bpc and end != self.visible_length:
            raise StorageError(f"{r.describe()}: sums up to {end} end inside a chunk")
        if not size or end == start:
            return b""
        n = num_chunks(end - start, bpc)
        raw = bytearray(_pread_exact(self.meta_fd, n * size, sum_position(cs, start), r.meta_path))
        # The chunk holding the last byte on disk may be rewritten by a writer right now:
        # its sum is the one kept in memory when this reader was opened.
        disk = r.num_bytes
        held = (disk - 1) // bpc - start // bpc
        if disk and 0 <= held < n and r.last_sum:
            raw[held * size : (held + 1) * size] = r.last_sum
        last_start = start + (n - 1) * bpc
        full_end = min(last_start + bpc, disk)
        if end < full_end:
            chunk = _pread_exact(self.data_fd, full_end - last_start, last_start, r.data_path)
            cs.verify(chunk, bytes(raw[-size:]), offset=last_start)
            raw[-size:] = cs.compute(chunk[: end - last_start])
        return bytes(raw)

    def read_chunks(self, offset: int, length: int) -> tuple[int, bytes, bytes]:
        """(start, data, sums) of the whole chunks covering offset and length."""
        start, end = self.chunk_range(offset, length)
        return start, self.read(start, end - start), self.sums(start, end)

    def close(self) -> None:
        """Close the files."""
        for fd in (self.data_fd, self.meta_fd):
            if fd >= 0:
                os.close(fd)
        self.data_fd = self.meta_fd = -1

    def __enter__(self) -> ReplicaReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
