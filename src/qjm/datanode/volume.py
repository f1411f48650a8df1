"""FsVolume and BlockPoolSlice: one data directory's space and one block pool's files in it,
with the start-up scan that rebuilds the replica map (design §B.1)."""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from qjm.datanode.errors import StorageError
from qjm.datanode.layout import (
    FINALIZED,
    META_HEADER_LEN,
    QUARANTINE,
    RBW,
    TMP,
    block_file_name,
    id_to_block_dir,
    meta_file_name,
    meta_length,
    parse_block_file_name,
    parse_meta_file_name,
    parse_meta_header,
    sum_position,
    torn_candidate,
)
from qjm.datanode.replica import ReplicaInfo, ReplicaState
from qjm.fileutil import fsync_dir
from qjm.hdfs.checksum import ChecksumError, DataChecksum

log = logging.getLogger(__name__)


class StatvfsResult(Protocol):
    """The fields of os.statvfs that a volume's space is computed from."""

    @property
    def f_frsize(self) -> int: ...
    @property
    def f_blocks(self) -> int: ...
    @property
    def f_bavail(self) -> int: ...


Statvfs = Callable[[str], StatvfsResult]


@dataclass(frozen=True)
class Quarantined:
    """A file set aside at start-up, never served: where it now is and why."""

    path: Path
    reason: str


@dataclass
class FsVolume:
    """One data directory as block storage: its space, its pools, whether its disk failed."""

    root: Path
    storage_id: str
    statvfs: Statvfs = os.statvfs
    reserved: int = 0  # dfs.datanode.du.reserved: bytes kept free for other users
    failed: str = ""  # why the disk was given up, empty while it serves
    reserved_for_replicas: int = 0  # room promised to replicas being written
    slices: dict[str, BlockPoolSlice] = field(default_factory=dict)

    def space(self) -> tuple[int, int]:
        """(capacity, free bytes) of the volume's file system, less the reserved bytes."""
        st = self.statvfs(str(self.root))
        capacity = max(0, st.f_blocks * st.f_frsize - self.reserved)
        free = max(0, st.f_bavail * st.f_frsize - self.reserved)
        return capacity, free

    def available(self, dfs_used: int) -> int:
        """Bytes a new replica may still take: FsVolumeImpl.getAvailable."""
        capacity, free = self.space()
        remaining = capacity - dfs_used - self.reserved_for_replicas
        return max(0, min(remaining, free - self.reserved_for_replicas))


class BlockPoolSlice:
    """One block pool's directories in one volume: finalized/, rbw/, tmp/ and quarantine/."""

    def __init__(self, volume: FsVolume, bpid: str, pool_root: Path) -> None:
        self.volume = volume
        self.bpid = bpid
        self.root = pool_root
        self.current = pool_root / "current"
        self.finalized = self.current / FINALIZED
        self.rbw = self.current / RBW
        self.tmp = pool_root / TMP
        self.quarantine_dir = pool_root / QUARANTINE
        self.quarantined: list[Quarantined] = []

    def make_dirs(self) -> None:
        """Create finalized/, rbw/ and an empty tmp/ (temporary replicas die at restart)."""
        self.finalized.mkdir(parents=True, exist_ok=True)
        self.rbw.mkdir(parents=True, exist_ok=True)
        if self.tmp.exists():
            shutil.rmtree(self.tmp)
        self.tmp.mkdir(parents=True)

    def dir_for(self, state: ReplicaState, block_id: int) -> Path:
        """The directory a replica in that state lives in."""
        if state == ReplicaState.FINALIZED:
            a, b = id_to_block_dir(block_id)
            return self.finalized / a / b
        if state == ReplicaState.TEMPORARY:
            return self.tmp
        return self.rbw

    def paths(self, state: ReplicaState, block_id: int, genstamp: int) -> tuple[Path, Path]:
        """(data file, meta file) of a replica in that state."""
        d = self.dir_for(state, block_id)
        return d / block_file_name(block_id), d / meta_file_name(block_id, genstamp)

    # -- quarantine ----------------------------------------------------------------------
    def quarantine(self, files: list[Path], reason: str) -> None:
        """Move files into quarantine/ with a .reason note beside them; never served."""
        self.quarantine_dir.mkdir(exist_ok=True)
        for f in files:
            dest = self.quarantine_dir / f.name
            n = 0
            while dest.exists():
                n += 1
                dest = self.quarantine_dir / f"{f.name}.{n}"
            os.replace(f, dest)
            dest.with_name(dest.name + ".reason").write_text(f"{f}: {reason}\n")
            self.quarantined.append(Quarantined(dest, reason))
            log.warning("block pool %s: set %s aside in %s: %s", self.bpid, f, dest, reason)
        fsync_dir(self.quarantine_dir)

    # -- the start-up scan ---------------------------------------------------------------
    def scan(self) -> list[ReplicaInfo]:
        """Every replica on this slice: finalized ones as they are, RBW ones cut to their
        last verified chunk and waiting to be recovered (RWR); bad files set aside."""
        fin_blocks, fin_metas = _collect(self.finalized, recursive=True)
        rbw_blocks, rbw_metas = _collect(self.rbw, recursive=False)
        self._reunite(fin_blocks, fin_metas, rbw_blocks, rbw_metas)
        out: list[ReplicaInfo] = []
        for state, blocks, metas in (
            (ReplicaState.FINALIZED, fin_blocks, fin_metas),
            (ReplicaState.RBW, rbw_blocks, rbw_metas),
        ):
            for block_id in sorted(blocks.keys() | metas.keys()):
                r = self._load(state, block_id, blocks.get(block_id), metas.get(block_id, []))
                if r is not None:
                    out.append(r)
        return out

    def _reunite(
        self,
        fin_blocks: dict[int, Path],
        fin_metas: dict[int, list[tuple[int, Path]]],
        rbw_blocks: dict[int, Path],
        rbw_metas: dict[int, list[tuple[int, Path]]],
    ) -> None:
        """Finish a move between rbw/ and finalized/ that a crash cut in half: the block's
        two files end up in finalized/ (design §B.1)."""
        for block_id in list(fin_metas.keys() - fin_blocks.keys()):
            if block_id in rbw_blocks and block_id not in rbw_metas:
                dest = fin_metas[block_id][0][1].parent / block_file_name(block_id)
                os.replace(rbw_blocks.pop(block_id), dest)
                fin_blocks[block_id] = dest
                log.warning(
                    "block pool %s: finished moving blk_%d to finalized/", self.bpid, block_id
                )
        for block_id in list(fin_blocks.keys() - fin_metas.keys()):
            if block_id in rbw_metas and block_id not in rbw_blocks:
                moved = []
                for gs, meta in rbw_metas.pop(block_id):
                    dest = fin_blocks[block_id].parent / meta.name
                    os.replace(meta, dest)
                    moved.append((gs, dest))
                fin_metas[block_id] = moved
                log.warning(
                    "block pool %s: finished moving blk_%d to finalized/", self.bpid, block_id
                )

    def _load(
        self,
        state: ReplicaState,
        block_id: int,
        data: Path | None,
        metas: list[tuple[int, Path]],
    ) -> ReplicaInfo | None:
        if data is None:
            self.quarantine([m for _, m in metas], "a meta file without its block file")
            return None
        if not metas:
            self.quarantine([data], "a block file without a meta file")
            return None
        metas.sort()
        genstamp, meta = metas[-1]
        if len(metas) > 1:
            self.quarantine([m for _, m in metas[:-1]], f"an older meta file than {meta.name}")
        with open(meta, "rb") as f:
            head = f.read(META_HEADER_LEN)
        try:
            checksum = parse_meta_header(head, str(meta))
        except ChecksumError as e:
            self.quarantine([data, meta], f"a bad meta header: {e}")
            return None
        data_len = data.stat().st_size
        meta_len = meta.stat().st_size
        if state == ReplicaState.FINALIZED:
            if meta_len != meta_length(checksum, data_len):
                self.quarantine(
                    [data, meta],
                    f"the meta file has {meta_len} bytes, a block of {data_len} bytes needs "
                    f"{meta_length(checksum, data_len)}",
                )
                return None
            length = data_len
        else:
            length = recover_rbw_length(data, meta, checksum, data_len, meta_len)
            state = ReplicaState.RWR
        last_sum = read_last_sum(meta, checksum, length)
        return ReplicaInfo(
            bpid=self.bpid,
            block_id=block_id,
            genstamp=genstamp,
            state=state,
            num_bytes=length,
            storage_id=self.volume.storage_id,
            data_path=data,
            meta_path=meta,
            checksum=checksum,
            bytes_acked=length,
            last_sum=last_sum,
        )


def _collect(
    top: Path, *, recursive: bool
) -> tuple[dict[int, Path], dict[int, list[tuple[int, Path]]]]:
    """Block files by id and meta files by id (with their genstamps) under top."""
    blocks: dict[int, Path] = {}
    metas: dict[int, list[tuple[int, Path]]] = {}
    if not top.is_dir():
        return blocks, metas
    walker = os.walk(top) if recursive else [(str(top), [], os.listdir(top))]
    for dirpath, _dirs, files in walker:
        for name in files:
            path = Path(dirpath) / name
            block_id = parse_block_file_name(name)
            if block_id is not None:
                if block_id in blocks:
                    log.warning("%s: a second copy of blk_%d at %s is ignored", top, block_id, path)
                    continue
                blocks[block_id] = path
                continue
            parsed = parse_meta_file_name(name)
            if parsed is not None:
                metas.setdefault(parsed[0], []).append((parsed[1], path))
    return blocks, metas


def read_last_sum(meta: Path, checksum: DataChecksum, length: int) -> bytes:
    """The stored sum of the chunk that holds a replica's last byte."""
    if length == 0 or checksum.checksum_size == 0:
        return b""
    with open(meta, "rb") as f:
        f.seek(sum_position(checksum, length - 1))
        raw = f.read(checksum.checksum_size)
    if len(raw) != checksum.checksum_size:
        raise StorageError(f"{meta} ends before the sum of byte {length - 1}")
    return raw


def recover_rbw_length(
    data: Path, meta: Path, checksum: DataChecksum, data_len: int, meta_len: int
) -> int:
    """Cut an RBW replica found at start-up to the chunks both files hold whose last chunk
    verifies (HDFS's validateIntegrityAndSetLength); return the length kept."""
    chunks, length = torn_candidate(data_len, meta_len, checksum)
    bpc, size = checksum.bytes_per_checksum, checksum.checksum_size
    if size:
        with open(data, "rb") as fd, open(meta, "rb") as fm:
            while chunks > 0:
                start = (chunks - 1) * bpc
                fd.seek(start)
                chunk = fd.read(length - start)
                fm.seek(sum_position(checksum, start))
                try:
                    checksum.verify(chunk, fm.read(size), offset=start)
                    break
                except ChecksumError:
                    chunks -= 1
                    length = start
    want_meta = meta_length(checksum, length)
    if length != data_len or want_meta != meta_len:
        log.warning(
            "%s: torn replica (block %d bytes, meta %d bytes) cut to %d verified bytes",
            data,
            data_len,
            meta_len,
            length,
        )
        for path, size_to in ((data, length), (meta, want_meta)):
            with open(path, "r+b") as f:
                f.truncate(size_to)
                os.fsync(f.fileno())
    return length
