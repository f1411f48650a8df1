"""A NameNode's name dir, laid out as HDFS lays it out.

<name_dir>/in_use.lock                     flock held while a NameNode (or an admin tool) uses it
<name_dir>/current/VERSION                 namespaceID, clusterID, cTime, storageType=NAME_NODE, ...
<name_dir>/current/seen_txid               the highest txid this dir knows was written: a
                                           segment's start, or a txid a quorum acknowledged
<name_dir>/current/fsimage_<txid>(.md5)    checkpoint images
<name_dir>/current/edits_<s>-<e>           the local copy of finalized edit-log segments
<name_dir>/current/edits_inprogress_<s>    the local copy of the open segment

Every metadata file is written temp + fsync + rename + fsync(dir). Every method blocks on
disk: from the event loop, call it through asyncio.to_thread.
"""

from __future__ import annotations

import contextlib
import dataclasses
import getpass
import hashlib
import logging
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Protocol

from qjm.editlog.file_names import IMAGE_PREFIX, image_file_name, parse_image_name
from qjm.editlog.segments import SegmentFile, list_segments
from qjm.fileutil import FileLockError, atomic_write, fsync_dir, lock_file
from qjm.namenode.errors import NamenodeError
from qjm.namenode.image import (
    DIRECTORY,
    ROOT_INODE_ID,
    ImageContents,
    ImageError,
    Inode,
    NameSystemInfo,
    decode_ns_info,
    md5_path,
    read_section,
    read_summary_from_file,
    write_image,
)
from qjm.namenode.image.md5 import write_md5_file
from qjm.namenode.image.model import ROOT_NS_QUOTA
from qjm.protocol.namespace import NamespaceInfo

log = logging.getLogger("qjm.namenode.storage")

__all__ = [
    "NNStorage",
    "NameDirLocked",
    "NamespaceInfo",
    "StorageFormatError",
    "empty_image",
]

LOCK_FILE = "in_use.lock"
UPLOAD_SUFFIX = ".upload"  # an image being received over PUT /imagetransfer
CURRENT_DIR = "current"
VERSION = "VERSION"
SEEN_TXID = "seen_txid"
STORAGE_TYPE = "NAME_NODE"
LAYOUT_VERSION = -64


class StorageFormatError(NamenodeError):
    """A name dir that is not formatted, or is formatted for something else."""


class NameDirLocked(StorageFormatError):
    """Another process holds the name dir's lock."""


class ImageSource(Protocol):
    """What save_image needs of a namespace: its checkpoint contents at a txid."""

    def to_image(self, txid: int, ns_info: NameSystemInfo) -> ImageContents:
        """The namespace as image contents at txid."""
        ...


def empty_image(
    namespace_id: int, txid: int = 0, *, owner: str | None = None, group: str = "supergroup"
) -> ImageContents:
    """The image of a freshly formatted namespace: only the root, as HDFS formats it."""
    root = Inode(
        id=ROOT_INODE_ID,
        type=DIRECTORY,
        name="",
        user=owner or getpass.getuser(),
        group=group,
        mode=0o755,
        ns_quota=ROOT_NS_QUOTA,
    )
    return ImageContents(
        ns_info=NameSystemInfo(namespace_id=namespace_id, txid=txid),
        inodes=[root],
        last_inode_id=ROOT_INODE_ID,
    )


class NNStorage:
    """One name dir: lock, VERSION, seen_txid, images and the local edits directory."""

    def __init__(self, name_dir: Path | str, *, lock: bool = True) -> None:
        self.root = Path(name_dir)
        self.current = self.root / CURRENT_DIR
        self._lock_fd = -1
        self._seen_lock = threading.Lock()  # one writer of seen_txid at a time
        if lock:
            self.lock()

    def __repr__(self) -> str:
        return f"NNStorage({str(self.root)!r})"

    # -- lock ----------------------------------------------------------------------------------
    def lock(self) -> None:
        """Take the name dir's exclusive lock, or raise naming the process holding it."""
        if self._lock_fd >= 0:
            return
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StorageFormatError(f"cannot create name dir {self.root}: {e.strerror}") from None
        try:
            self._lock_fd = lock_file(
                self.root / LOCK_FILE,
                f"cannot lock name dir {self.root}: it is in use by another NameNode or tool",
            )
        except FileLockError as e:
            raise NameDirLocked(str(e)) from None

    def unlock(self) -> None:
        """Release the lock."""
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1

    close = unlock

    def __enter__(self) -> NNStorage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.unlock()

    # -- format and VERSION -------------------------------------------------------------------
    def is_formatted(self) -> bool:
        """True when current/VERSION exists."""
        return (self.current / VERSION).is_file()

    def has_data(self) -> bool:
        """True when current/ holds anything."""
        return self.current.is_dir() and any(self.current.iterdir())

    def format(
        self,
        ns_info: NamespaceInfo,
        force: bool = False,
        image: ImageContents | None = None,
    ) -> None:
        """Make current/ hold VERSION, seen_txid 0 and an empty fsimage_0 (HDFS's format).

        A name dir that holds anything is refused unless force, which wipes it.
        """
        if self.has_data() and not force:
            raise StorageFormatError(
                f"name dir {self.root} is not empty (it holds "
                f"{', '.join(sorted(p.name for p in self.current.iterdir())[:5])}); "
                "pass --force to wipe it"
            )
        try:
            if self.current.exists():
                shutil.rmtree(self.current)
            self.current.mkdir(parents=True)
            contents = image or empty_image(ns_info.namespace_id)
            write_image(self.current / image_file_name(contents.ns_info.txid), contents)
            self.write_seen_txid(contents.ns_info.txid)
            self._write_version(ns_info)  # last: VERSION makes the dir formatted
            fsync_dir(self.root)
        except OSError as e:
            raise StorageFormatError(f"cannot format name dir {self.root}: {e.strerror}") from None
        log.info("formatted name dir %s for %s", self.root, ns_info.describe())

    def _write_version(self, ns: NamespaceInfo) -> None:
        stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime())
        text = (
            f"#{stamp}\n"
            f"namespaceID={ns.namespace_id}\n"
            f"clusterID={ns.cluster_id}\n"
            f"cTime={ns.ctime}\n"
            f"storageType={STORAGE_TYPE}\n"
            f"blockpoolID={ns.block_pool_id}\n"
            f"layoutVersion={ns.layout_version}\n"
        )
        atomic_write(self.current / VERSION, text.encode())

    def write_version(self, ns_info: NamespaceInfo) -> None:
        """Write current/VERSION (creating current/), e.g. when bootstrapping a standby."""
        self.current.mkdir(parents=True, exist_ok=True)
        self._write_version(ns_info)

    def read_ns_info(self) -> NamespaceInfo:
        """The namespace identity in current/VERSION, naming the file and key on a problem."""
        path = self.current / VERSION
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            raise StorageFormatError(
                f"name dir {self.root} is not formatted (no {path}); run `qjm namenode format` "
                "or `qjm namenode bootstrap-standby`"
            ) from None
        except OSError as e:
            raise StorageFormatError(f"cannot read {path}: {e.strerror}") from None
        props: dict[str, str] = {}
        for line in text.splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                key, sep, value = line.partition("=")
                if sep:
                    props[key.strip()] = value.strip()
        try:
            kind = props.get("storageType", STORAGE_TYPE)
            if kind != STORAGE_TYPE:
                raise StorageFormatError(f"{path}: storageType is {kind}, expected {STORAGE_TYPE}")
            return NamespaceInfo(
                namespace_id=int(props["namespaceID"]),
                cluster_id=props["clusterID"],
                block_pool_id=props.get("blockpoolID", ""),
                ctime=int(props.get("cTime", "0")),
                layout_version=int(props.get("layoutVersion", str(LAYOUT_VERSION))),
            )
        except KeyError as e:
            raise StorageFormatError(f"{path} lacks the key {e.args[0]}") from None
        except ValueError as e:
            raise StorageFormatError(f"{path} has a malformed value: {e}") from None

    # -- seen_txid ----------------------------------------------------------------------------
    @property
    def seen_txid(self) -> int:
        """The highest txid this dir recorded as written (0 when the file is absent)."""
        path = self.current / SEEN_TXID
        try:
            text = path.read_text().strip()
        except FileNotFoundError:
            return 0
        try:
            return int(text)
        except ValueError:
            raise StorageFormatError(f"{path} holds {text!r}, not a txid") from None

    def write_seen_txid(self, txid: int) -> None:
        """Durably record seen_txid (temp + fsync + rename + fsync(dir))."""
        with self._seen_lock:
            atomic_write(self.current / SEEN_TXID, f"{txid}\n".encode())

    def raise_seen_txid(self, txid: int) -> bool:
        """Record seen_txid = txid if that is higher than the recorded one; True if written."""
        with self._seen_lock:
            try:
                seen = self.seen_txid
            except StorageFormatError:
                seen = 0  # unreadable: replaced
            if txid <= seen:
                return False
            atomic_write(self.current / SEEN_TXID, f"{txid}\n".encode())
            return True

    # -- images -------------------------------------------------------------------------------
    def image_path(self, txid: int) -> Path:
        """Where the image at txid lives."""
        return self.current / image_file_name(txid)

    def images(self) -> list[tuple[int, Path]]:
        """Every fsimage_<txid> (not .md5, not a checkpoint in progress), oldest first."""
        found = []
        if self.current.is_dir():
            for p in self.current.iterdir():
                txid = parse_image_name(p.name)
                if txid is not None:
                    found.append((txid, p))
        return sorted(found)

    def newest_image(self) -> tuple[int, Path] | None:
        """The image with the highest txid, or None."""
        images = self.images()
        return images[-1] if images else None

    def base_ns_info(self, txid: int) -> NameSystemInfo:
        """The NS_INFO section for a new image at txid: the newest image's, else a fresh one
        (a namespace's to_image puts its own block id and generation stamp counters in)."""
        fresh = NameSystemInfo(namespace_id=self.read_ns_info().namespace_id, txid=txid)
        newest = self.newest_image()
        if newest is None:
            return fresh
        try:
            summary = read_summary_from_file(newest[1])
            info = summary.section("NS_INFO")
            if info is None:
                return fresh
            found = decode_ns_info(read_section(newest[1], info, summary.codec))
        except ImageError as e:
            log.warning("cannot read NS_INFO of %s (%s); using a fresh one", newest[1], e)
            return fresh
        return dataclasses.replace(found, namespace_id=fresh.namespace_id, txid=txid)

    def save_image(self, ns: ImageSource, txid: int) -> Path:
        """Write the namespace's image at txid (ckpt, fsync, rename) with its .md5."""
        return self.save_image_contents(ns.to_image(txid, self.base_ns_info(txid)))

    def save_image_contents(self, contents: ImageContents) -> Path:
        """Write image contents as fsimage_<its txid> with its .md5; returns the path."""
        path = self.image_path(contents.ns_info.txid)
        write_image(path, contents)
        return path

    def install_image(self, data: bytes, txid: int, md5: str) -> Path:
        """Install an image received whole (e.g. uploaded by a standby) after checking its md5."""
        digest = hashlib.md5(data, usedforsecurity=False).hexdigest()
        if digest != md5.strip().lower():
            raise StorageFormatError(
                f"image for txid {txid} has MD5 {digest}, but {md5.strip()} was announced; "
                "not installing it"
            )
        path = self.image_path(txid)
        tmp = path.with_name(path.name + ".ckpt")
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
            write_md5_file(path, digest)
            fsync_dir(self.current)
        except OSError as e:
            raise StorageFormatError(f"cannot install image {path}: {e.strerror}") from None
        return path

    def install_image_file(self, received: Path, txid: int, md5: str) -> Path:
        """Install an image received into a file of the name dir (fsynced, md5 checked by the
        caller) as fsimage_<txid>, with its .md5."""
        path = self.image_path(txid)
        try:
            os.replace(received, path)
            write_md5_file(path, md5)
            fsync_dir(self.current)
        except OSError as e:
            raise StorageFormatError(f"cannot install image {path}: {e.strerror}") from None
        return path

    def remove_partial_uploads(self) -> list[Path]:
        """Delete image uploads a stopped NameNode left half received (fsimage_*.upload)."""
        if not self.current.is_dir():
            return []
        removed = []
        for p in self.current.glob(f"{IMAGE_PREFIX}*{UPLOAD_SUFFIX}"):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
                removed.append(p)
        return removed

    # -- local edits --------------------------------------------------------------------------
    def edit_segments(self) -> list[SegmentFile]:
        """The local edits_* files, ordered by start txid."""
        return list_segments(self.current) if self.current.is_dir() else []

    def purge(self, images_retained: int) -> list[Path]:
        """Delete images older than the newest images_retained and edits below the oldest kept.

        Returns the deleted files.
        """
        if images_retained < 1:
            raise ValueError(f"images_retained must be at least 1, got {images_retained}")
        images = self.images()
        if len(images) <= images_retained:
            return []
        keep_from = images[-images_retained][0]
        removed: list[Path] = []
        for _txid, path in images[:-images_retained]:
            for p in (path, md5_path(path)):
                if p.exists():
                    p.unlink()
                    removed.append(p)
            log.info("purged image %s (keeping %d newer)", path.name, images_retained)
        for seg in self.edit_segments():
            if seg.end is not None and seg.end <= keep_from:
                seg.path.unlink()
                removed.append(seg.path)
        if removed:
            fsync_dir(self.current)
        return removed
