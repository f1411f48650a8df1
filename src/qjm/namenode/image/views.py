"""Text views of an image, as `hdfs oiv` prints them: Delimited, FileDistribution, JSON lines."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from typing import Any

from qjm.namenode.image.model import DIRECTORY, FILE, SYMLINK, Inode
from qjm.namenode.image.reader import FsImage

DELIMITED_COLUMNS = (
    "Path",
    "Replication",
    "ModificationTime",
    "AccessTime",
    "PreferredBlockSize",
    "BlocksCount",
    "FileSize",
    "NSQUOTA",
    "DSQUOTA",
    "Permission",
    "UserName",
    "GroupName",
)


def permission_string(mode: int) -> str:
    """FsPermission's symbolic form, e.g. rwxr-xr-x (t/T for the sticky bit)."""
    chars = []
    for shift in (6, 3, 0):
        bits = (mode >> shift) & 7
        chars.append(("r" if bits & 4 else "-") + ("w" if bits & 2 else "-"))
        chars.append("x" if bits & 1 else "-")
    s = "".join(chars)
    if mode & 0o1000:
        s = s[:-1] + ("t" if mode & 1 else "T")
    return s


def format_time(ms: int) -> str:
    """A millisecond timestamp as `yyyy-MM-dd HH:mm` in local time, like the Delimited view."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ms / 1000))


def delimited_row(path: str, node: Inode, delimiter: str = "\t") -> str:
    """One Delimited line (without newline) for an inode."""
    if node.type == FILE:
        cols: list[Any] = [
            node.replication,
            format_time(node.mtime),
            format_time(node.atime),
            node.preferred_block_size,
            len(node.blocks),
            node.size,
            0,
            0,
        ]
    elif node.type == DIRECTORY:
        cols = [0, format_time(node.mtime), format_time(0), 0, 0, 0, node.ns_quota, node.ds_quota]
    else:
        cols = [0, format_time(node.mtime), format_time(node.atime), 0, 0, 0, 0, 0]
    prefix = "d" if node.type == DIRECTORY else "-"
    cols += [prefix + permission_string(node.mode), node.user, node.group]
    return delimiter.join([path, *(str(c) for c in cols)])


def iter_delimited(image: FsImage, delimiter: str = "\t", header: bool = True) -> Iterator[str]:
    """The Delimited view: a header line, then one line per inode with its full path."""
    if header:
        yield delimiter.join(DELIMITED_COLUMNS) + "\n"
    for path, node in image.iter_paths():
        yield delimited_row(path, node, delimiter) + "\n"


def inode_dict(path: str | None, node: Inode) -> dict[str, Any]:
    """A JSON-ready dict of an inode and its path."""
    out: dict[str, Any] = {
        "id": node.id,
        "path": path,
        "type": node.type,
        "name": node.name,
        "user": node.user,
        "group": node.group,
        "mode": node.mode,
        "permission": permission_string(node.mode),
        "mtime": node.mtime,
    }
    if node.type == FILE:
        out.update(
            atime=node.atime,
            replication=node.replication,
            preferred_block_size=node.preferred_block_size,
            size=node.size,
            blocks=[
                {"id": b.block_id, "num_bytes": b.num_bytes, "genstamp": b.genstamp}
                for b in node.blocks
            ],
            storage_policy_id=node.storage_policy_id,
        )
        if node.client_name is not None:
            out["under_construction"] = {
                "client_name": node.client_name,
                "client_machine": node.client_machine,
            }
        if node.erasure_coding_policy_id is not None:
            out["erasure_coding_policy_id"] = node.erasure_coding_policy_id
    elif node.type == DIRECTORY:
        out.update(ns_quota=node.ns_quota, ds_quota=node.ds_quota)
        if node.type_quotas:
            out["type_quotas"] = dict(node.type_quotas)
    elif node.type == SYMLINK:
        out.update(atime=node.atime, target=node.target)
    if node.acls:
        out["acls"] = [
            {"scope": e.scope, "type": e.type, "name": e.name, "perm": e.perm} for e in node.acls
        ]
    if node.xattrs:
        out["xattrs"] = [
            {
                "namespace": x.namespace,
                "name": x.name,
                "value": None if x.value is None else x.value.hex(),
            }
            for x in node.xattrs
        ]
    return out


def iter_json_lines(image: FsImage) -> Iterator[str]:
    """One JSON object per inode (path null for inodes outside the tree)."""
    paths = image.paths()
    for i, node in image.inodes.items():
        yield json.dumps(inode_dict(paths.get(i), node), ensure_ascii=False) + "\n"


def iter_file_distribution(
    image: FsImage, step: int = 2 * 1024 * 1024, max_size: int = 128 * 1024**3
) -> Iterator[str]:
    """File counts by size bucket, like `hdfs oiv -p FileDistribution`."""
    if step <= 0 or max_size <= 0:
        raise ValueError("step and max size must be positive")
    buckets = [0] * (max_size // step + 2)
    files = dirs = blocks = 0
    space = largest = 0
    for node in image.inodes.values():
        if node.type == DIRECTORY:
            dirs += 1
            continue
        if node.type != FILE:
            continue
        files += 1
        size = node.size
        blocks += len(node.blocks)
        space += size * node.replication
        largest = max(largest, size)
        k = len(buckets) - 1 if size > max_size else math.ceil(size / step)
        buckets[k] += 1
    yield f"totalFiles = {files}\n"
    yield f"totalDirectories = {dirs}\n"
    yield f"totalBlocks = {blocks}\n"
    yield f"totalSpace = {space}\n"
    yield f"maxFileSize = {largest}\n"
    yield "Size\tNumFiles\n"
    for k, n in enumerate(buckets):
        if n:
            label = f">{max_size}" if k == len(buckets) - 1 else str(k * step)
            yield f"{label}\t{n}\n"
