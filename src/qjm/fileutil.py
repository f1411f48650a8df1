"""File utilities the daemons share: exclusive lock files and durable writes."""

from __future__ import annotations

import ctypes
import errno
import fcntl
import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import cast

from qjm.errors import QjmError


class FileLockError(QjmError):
    """A lock file could not be taken; the message names the file or its holder."""


class LockHeld(FileLockError):
    """Another process holds a lock file."""


def lock_file(path: Path, busy_message: str) -> int:
    """Hold an exclusive flock on path (recording our pid); raise naming the holder's pid."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise LockHeld(f"{busy_message} (pid {holder})") from None
        raise FileLockError(f"cannot lock {path}: {e.strerror}") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def atomic_write(path: Path, data: bytes) -> None:
    """Replace a file's contents durably: temp + fsync + rename + fsync(dir)."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    """Make a directory's entries (creates, renames) durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# sync_file_range(2)'s flag that starts writeback of a range's dirty pages and returns.
_SYNC_FILE_RANGE_WRITE = 2


@functools.cache
def _sync_file_range() -> Callable[[int, int, int, int], int] | None:
    """libc's sync_file_range, or None where there is none (not Linux)."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    fn.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)
    fn.restype = ctypes.c_int
    return cast("Callable[[int, int, int, int], int]", fn)


def start_writeback(fd: int, offset: int, length: int) -> bool:
    """Have the kernel start writing [offset, offset+length) of fd to disk, without waiting;
    whether it could (Linux's sync_file_range, what HDFS's sync-behind-writes calls)."""
    fn = _sync_file_range()
    if fn is None or length <= 0:
        return False
    return fn(fd, offset, length, _SYNC_FILE_RANGE_WRITE) == 0
