"""Read a whole fsimage into memory: namespace info, inodes, the tree and full paths."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qjm.namenode.image import sections as sec
from qjm.namenode.image.format import (
    CACHE_MANAGER,
    ERASURE_CODING,
    FILES_UNDERCONSTRUCTION,
    INODE,
    INODE_DIR,
    INODE_REFERENCE,
    LAYOUT_VERSION,
    NS_INFO,
    SECRET_MANAGER,
    SNAPSHOT,
    SNAPSHOT_DIFF,
    STRING_TABLE,
    ImageError,
    Summary,
    read_summary,
    section_bytes,
)
from qjm.namenode.image.md5 import verify_md5
from qjm.namenode.image.model import (
    ROOT_INODE_ID,
    EcPolicy,
    ImageContents,
    Inode,
    NameSystemInfo,
    SecretManagerImage,
)

# Protobuf images begin at layout -51 (PROTOBUF_FORMAT); their messages are read alike.
OLDEST_PROTOBUF_LAYOUT = -51


@dataclass(slots=True)
class FsImage:
    """A decoded image: every section we understand, plus the directory tree."""

    summary: Summary
    ns_info: NameSystemInfo
    last_inode_id: int
    inodes: dict[int, Inode]
    dir_entries: list[sec.DirEntry]
    strings: dict[int, str]
    ec_policies: list[EcPolicy] = field(default_factory=list)
    files_under_construction: list[tuple[int, str]] = field(default_factory=list)
    references: list[Any] = field(default_factory=list)
    snapshots: sec.SnapshotInfo | None = None
    snapshot_diffs: list[sec.DiffEntry] = field(default_factory=list)
    secret_manager: SecretManagerImage | None = None
    cache_manager: tuple[int, int, int] | None = None
    parents: dict[int, int] = field(default_factory=dict)
    _paths: dict[int, str] | None = None

    def children(self, inode_id: int) -> list[int]:
        """Child inode ids of a directory, in image order."""
        return [c for c, p in self.parents.items() if p == inode_id]

    def paths(self) -> dict[int, str]:
        """Full path of every inode reachable from the root."""
        if self._paths is None:
            kids: dict[int, list[int]] = {}
            for child, parent in self.parents.items():
                kids.setdefault(parent, []).append(child)
            out = {ROOT_INODE_ID: "/"}
            stack = [ROOT_INODE_ID]
            while stack:
                d = stack.pop()
                base = out[d].rstrip("/")
                for c in kids.get(d, ()):
                    node = self.inodes.get(c)
                    if node is None or c in out:
                        continue
                    out[c] = f"{base}/{node.name}"
                    stack.append(c)
            self._paths = out
        return self._paths

    def path(self, inode_id: int) -> str | None:
        """Full path of an inode, or None if it is not in the tree."""
        return self.paths().get(inode_id)

    def iter_paths(self) -> Iterator[tuple[str, Inode]]:
        """(full path, inode) in INODE section order, for inodes in the tree."""
        paths = self.paths()
        for i, node in self.inodes.items():
            p = paths.get(i)
            if p is not None:
                yield p, node

    def to_contents(self) -> ImageContents:
        """The image as writer input (what our writer keeps of it)."""
        return ImageContents(
            ns_info=self.ns_info,
            inodes=list(self.inodes.values()),
            parents=dict(self.parents),
            last_inode_id=self.last_inode_id,
            ec_policies=list(self.ec_policies),
            snapshot_counter=self.snapshots.counter if self.snapshots else 0,
            secret_current_id=self.secret_manager.current_id if self.secret_manager else 0,
            token_sequence_number=self.secret_manager.sequence_number if self.secret_manager else 0,
            delegation_keys=list(self.secret_manager.keys) if self.secret_manager else [],
            delegation_tokens=list(self.secret_manager.tokens) if self.secret_manager else [],
            next_cache_directive_id=self.cache_manager[0] if self.cache_manager else 1,
        )


def load_image(data: bytes) -> FsImage:
    """Decode an image held in memory."""
    summary = read_summary(data)
    if not OLDEST_PROTOBUF_LAYOUT >= summary.layout_version >= LAYOUT_VERSION:
        raise ImageError(
            f"image layout {summary.layout_version} is not understood: layouts "
            f"{OLDEST_PROTOBUF_LAYOUT}..{LAYOUT_VERSION} are",
            "FileSummary",
        )

    def body(name: str) -> bytes | None:
        info = summary.section(name)
        return None if info is None else section_bytes(data, info, summary.codec)

    raw_ns = body(NS_INFO)
    if raw_ns is None:
        raise ImageError("the image has no NS_INFO section", NS_INFO)
    ns_info = sec.decode_ns_info(raw_ns)
    raw = body(STRING_TABLE)
    strings = sec.decode_string_table(raw) if raw is not None else {}
    raw = body(INODE)
    if raw is None:
        raise ImageError("the image has no INODE section", INODE)
    last_inode_id, _ = sec.inode_header(raw)
    inodes = {i.id: i for i in sec.iter_inodes(raw, strings)}
    raw = body(INODE_DIR)
    dir_entries = list(sec.iter_dir_entries(raw)) if raw is not None else []
    raw = body(INODE_REFERENCE)
    references = list(sec.iter_references(raw)) if raw is not None else []
    image = FsImage(summary, ns_info, last_inode_id, inodes, dir_entries, strings)
    image.references = references
    image.parents.update(sec.parents_of(dir_entries, references))
    if (raw := body(ERASURE_CODING)) is not None:
        image.ec_policies = sec.decode_ec_section(raw)
    if (raw := body(FILES_UNDERCONSTRUCTION)) is not None:
        image.files_under_construction = list(sec.iter_files_under_construction(raw))
    if (raw := body(SNAPSHOT)) is not None:
        image.snapshots = sec.decode_snapshot_section(raw)
    if (raw := body(SNAPSHOT_DIFF)) is not None:
        image.snapshot_diffs = list(sec.iter_snapshot_diffs(raw))
    if (raw := body(SECRET_MANAGER)) is not None:
        image.secret_manager = sec.decode_secret_manager(raw)
    if (raw := body(CACHE_MANAGER)) is not None:
        image.cache_manager = sec.decode_cache_manager(raw)
    return image


def read_image(path: str | os.PathLike[str], *, check_md5: bool = True) -> FsImage:
    """Read and decode an image file; if its .md5 file exists, the digest must match."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ImageError(f"cannot read image {path}: {e.strerror or e}") from None
    image = load_image(data)
    if check_md5:
        verify_md5(path)
    return image
