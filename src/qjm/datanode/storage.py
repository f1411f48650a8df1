"""DataStorage: the DataNode's data directories, their locks and VERSION files (design §B.1).

Each directory is locked (in_use.lock), formatted on first start (current/VERSION with a new
storage id) and refused when it belongs to another cluster or another DataNode. Block pool
directories (BlockPoolSliceStorage) get their own VERSION when the NameNode's namespace is
known.
"""

from __future__ import annotations

import logging
import os
import uuid
from dataclasses import dataclass, replace
from pathlib import Path

from qjm.datanode.errors import StorageError
from qjm.datanode.layout import (
    CURRENT,
    LOCK_FILE,
    VERSION,
    BlockPoolInfo,
    StorageInfo,
    check_block_pool,
    check_block_pool_id,
    check_storage,
    new_storage_id,
    valid_storage_id,
)
from qjm.errors import describe_error
from qjm.fileutil import FileLockError, LockHeld, atomic_write, fsync_dir, lock_file

log = logging.getLogger(__name__)


@dataclass
class StorageDirectory:
    """One locked data directory and its VERSION."""

    root: Path
    info: StorageInfo
    lock_fd: int

    @property
    def current(self) -> Path:
        """<root>/current."""
        return self.root / CURRENT


def _read_version(path: Path) -> StorageInfo | None:
    """A data directory's VERSION, None when it has none (a fresh directory)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise StorageError(f"{path} is not a text VERSION file") from None
    return StorageInfo.parse(text, str(path))


class DataStorage:
    """The DataNode's data directories: locked, formatted and checked at start-up."""

    def __init__(self, dirs: list[Path]) -> None:
        if not dirs:
            raise StorageError("no data directories configured (dfs.datanode.data.dir)")
        self.dirs = [Path(d) for d in dirs]
        if len(set(self.dirs)) != len(self.dirs):
            raise StorageError(f"data directories are listed twice: {self.dirs}")
        self.storage_dirs: list[StorageDirectory] = []
        self.failed: dict[Path, str] = {}
        self.datanode_uuid = ""
        self.cluster_id = ""
        self._pending_locks: dict[Path, int] = {}

    def load(
        self, cluster_id: str, datanode_uuid: str | None = None, *, failed_tolerated: int = 0
    ) -> None:
        """Lock every directory, check or format its VERSION; raise if more than
        failed_tolerated directories cannot be used, or one belongs elsewhere."""
        found: list[tuple[Path, StorageInfo | None]] = []
        for root in self.dirs:
            try:
                info = self._open(root)
            except LockHeld:
                # A directory in use is a setup error (two DataNodes on one disk), not a disk's.
                self.release()
                raise
            except (OSError, FileLockError) as e:
                self.failed[root] = describe_error(e)
                log.error("data directory %s cannot be used: %s", root, self.failed[root])
                continue
            except StorageError:
                self.release()
                raise
            found.append((root, info))
        if len(self.failed) > failed_tolerated or not found:
            self.release()
            bad = "; ".join(f"{d}: {why}" for d, why in self.failed.items())
            raise StorageError(
                f"{len(self.failed)} of {len(self.dirs)} data directories failed "
                f"({failed_tolerated} tolerated): {bad}"
            )
        dn_uuid = datanode_uuid or ""
        for root, info in found:
            if info is None:
                continue
            try:
                check_storage(info, str(root / CURRENT / VERSION), cluster_id, dn_uuid or None)
            except StorageError:
                self.release()
                raise
            if not dn_uuid and info.datanode_uuid:
                dn_uuid = info.datanode_uuid
        self.datanode_uuid = dn_uuid or str(uuid.uuid4())
        self.cluster_id = cluster_id
        seen_ids: set[str] = set()
        for root, info in found:
            self._adopt(root, info, seen_ids)

    def lock(self) -> None:
        """Lock every directory now, before the cluster id is known (design §B.13): one held
        by another process raises LockHeld; other failures are left for load to count."""
        for root in self.dirs:
            if root in self._pending_locks:
                continue
            try:
                self._lock(root)
            except LockHeld:
                self.release()
                raise
            except (OSError, FileLockError):
                continue

    def _lock(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        fd = lock_file(root / LOCK_FILE, f"data directory {root} is in use by another process")
        self._pending_locks[root] = fd

    def _open(self, root: Path) -> StorageInfo | None:
        """Create and lock root (unless lock() did); return its VERSION (None if fresh)."""
        if root not in self._pending_locks:
            self._lock(root)
        info = _read_version(root / CURRENT / VERSION)
        if info is None:
            current = root / CURRENT
            pools = [p.name for p in current.glob("BP-*")] if current.is_dir() else []
            if pools:
                raise StorageError(
                    f"{current} holds block pools {sorted(pools)} but no VERSION: restore "
                    "VERSION or empty the directory"
                )
        return info

    def _adopt(self, root: Path, info: StorageInfo | None, seen_ids: set[str]) -> None:
        """Format a fresh directory or fill in a VERSION's missing ids; keep it."""
        path = root / CURRENT / VERSION
        if info is None:
            info = StorageInfo(new_storage_id(), self.cluster_id, self.datanode_uuid)
            log.info("formatting data directory %s as %s", root, info.storage_id)
        changed = replace(info, datanode_uuid=self.datanode_uuid, cluster_id=self.cluster_id)
        if not valid_storage_id(changed.storage_id) or changed.storage_id in seen_ids:
            # As DataStorage.createStorageID: an old-style or duplicated (copied) id is replaced.
            log.warning("data directory %s: new storage id for %r", root, info.storage_id)
            changed = replace(changed, storage_id=new_storage_id())
        seen_ids.add(changed.storage_id)
        if changed != info or not path.exists():
            (root / CURRENT).mkdir(parents=True, exist_ok=True)
            atomic_write(path, changed.to_text().encode())
            fsync_dir(root)
        self.storage_dirs.append(StorageDirectory(root, changed, self._pending_locks.pop(root)))

    def release(self) -> None:
        """Release every directory lock."""
        for fd in self._pending_locks.values():
            os.close(fd)
        self._pending_locks.clear()
        for sd in self.storage_dirs:
            if sd.lock_fd >= 0:
                os.close(sd.lock_fd)
                sd.lock_fd = -1
        self.storage_dirs.clear()


class BlockPoolSliceStorage:
    """A block pool's directory in one data directory: current/BP-<id>/current/VERSION."""

    def __init__(self, data_current: Path, want: BlockPoolInfo) -> None:
        self.bpid = check_block_pool_id(want.block_pool_id)
        self.root = data_current / self.bpid
        self.current = self.root / CURRENT
        self.info = want

    def load(self) -> None:
        """Check the pool's VERSION, or write it for a pool new to this directory."""
        path = self.current / VERSION
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            self.current.mkdir(parents=True, exist_ok=True)
            atomic_write(path, self.info.to_text().encode())
            fsync_dir(self.root)
            fsync_dir(self.root.parent)
            return
        except UnicodeDecodeError:
            raise StorageError(f"{path} is not a text VERSION file") from None
        found = BlockPoolInfo.parse(text, str(path))
        check_block_pool(found, str(path), self.info)
