"""Paths as HDFS checks and resolves them: limits on a new path, splitting, resolving."""

from __future__ import annotations

from qjm.namenode.errors import (
    InvalidPathError,
    NamenodeError,
)

MAX_PATH_LENGTH = 8000  # HdfsConstants.MAX_PATH_LENGTH (characters, counted as Java does)
MAX_PATH_DEPTH = 1000  # HdfsConstants.MAX_PATH_DEPTH (components)
# No path longer than this is resolved at all (design §N.4): splitting it would cost memory
# in proportion, and no path this long can exist (a path is created at most MAX_PATH_LENGTH
# characters long; only renaming an ancestor makes its descendants' paths longer).
MAX_RESOLVABLE_PATH = 1 << 20


class PathTooLongError(NamenodeError):
    """A new path over 8,000 characters or 1,000 levels (NameNodeRpcServer.checkPathLength)."""


def java_length(text: str) -> int:
    """The length of text as Java's String.length() counts it (UTF-16 code units)."""
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


def path_depth(path: str) -> int:
    """The components of a path as Hadoop's Path.depth() counts them (empty ones ignored)."""
    return sum(1 for c in path.split("/") if c)


def check_path_length(method: str, path: str) -> None:
    """Refuse a new path over HDFS's 8,000 characters or 1,000 levels, as its RPC server does."""
    if len(path) > MAX_PATH_LENGTH or (
        java_length(path) > MAX_PATH_LENGTH or path_depth(path) > MAX_PATH_DEPTH
    ):
        raise PathTooLongError(
            f"{method}: Pathname too long.  Limit {MAX_PATH_LENGTH} characters, "
            f"{MAX_PATH_DEPTH} levels."
        )


def split_path(path: str) -> list[str]:
    """The components of an absolute path; InvalidPathError as HDFS's DFSUtil.isValidName."""
    if not isinstance(path, str) or not path.startswith("/"):
        raise InvalidPathError(f"Invalid path name {path!r}: not an absolute path")
    if len(path) > MAX_RESOLVABLE_PATH:
        raise InvalidPathError(
            f"Invalid path name {path[:64]}... ({len(path)} characters): no path longer than "
            f"{MAX_RESOLVABLE_PATH} characters is served"
        )
    if path == "/":
        return []
    comps = path[1:].split("/")
    if comps[-1] == "":
        comps.pop()  # one trailing slash is allowed
    if "//" in path or "/." in path or ":" in path or "\x00" in path or not comps:
        for c in comps or [""]:
            if c in ("", ".", "..") or ":" in c or "\x00" in c:
                raise InvalidPathError(f"Invalid path name {path}: bad component {c!r}")
    return comps


def join_path(comps: list[str]) -> str:
    """The normalized absolute path of components."""
    return "/" + "/".join(comps)


class Resolved:
    """A path resolved as far as it exists: slots[0] is the root, slots[i] is comps[i-1]."""

    __slots__ = ("comps", "found", "path", "slots")

    def __init__(self, path: str, comps: list[str], slots: list[int]) -> None:
        self.path = path
        self.comps = comps
        self.slots = slots
        self.found = len(slots) == len(comps) + 1  # the whole path exists

    @property
    def last(self) -> int:
        """The deepest existing slot."""
        return self.slots[-1]

    @property
    def ancestors(self) -> list[int]:
        """Existing slots above the last component (HDFS's traverse set)."""
        return self.slots[:-1] if self.found else self.slots
