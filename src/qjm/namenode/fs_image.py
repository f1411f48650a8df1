"""Start-up from a name dir: load the newest readable image, replay edits after it.

load_newest tries images newest first and falls back to an older one when an image is
unreadable or fails its MD5 (as HDFS does), saying so. replay applies (txid, op) pairs
through the namespace's one apply path and refuses a hole in the txids, naming the txid
it expected and the one it found.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Protocol, TypeVar

from qjm.editlog.framing import iter_ops, read_header
from qjm.editlog.ops import Op, decode_op
from qjm.editlog.segments import scan_file, txid_run
from qjm.errors import QjmError
from qjm.namenode.errors import NamenodeError
from qjm.namenode.image import FsImage, ImageError, read_image
from qjm.namenode.storage import NNStorage

log = logging.getLogger("qjm.namenode.fs_image")

__all__ = [
    "EditLogGapError",
    "NoImageError",
    "Replayable",
    "load_newest",
    "local_edits",
    "read_segment_ops",
    "replay",
]


class Replayable(Protocol):
    """What replay needs of a namespace: the one apply path."""

    def apply(self, op: Op) -> None:
        """Apply one logged op."""
        ...


N = TypeVar("N")
R = TypeVar("R", bound=Replayable)


class NoImageError(NamenodeError):
    """A name dir without any readable image."""


class EditLogGapError(NamenodeError):
    """The edits to replay skip txids."""

    def __init__(self, expected: int, found: int, where: str = "") -> None:
        self.expected = expected
        self.found = found
        super().__init__(
            f"edit log gap{f' in {where}' if where else ''}: expected txid {expected}, "
            f"found txid {found} (txids {expected}-{found - 1} are missing)"
        )


def load_newest(
    storage: NNStorage,
    ns_factory: Callable[[FsImage], N],
    *,
    path_loader: Callable[[Path], tuple[N, int]] | None = None,
) -> tuple[N, int]:
    """The namespace from the newest readable image, and that image's txid.

    path_loader, when given, loads an image file straight to (namespace, its txid) instead
    of read_image + ns_factory (the NameNode's faster start-up).
    """
    images = storage.images()
    if not images:
        raise NoImageError(
            f"name dir {storage.root} holds no fsimage; run `qjm namenode format` or "
            "`qjm namenode bootstrap-standby`"
        )

    def by_factory(path: Path) -> tuple[N, int]:
        image = read_image(path)
        return ns_factory(image), image.ns_info.txid

    load = path_loader or by_factory
    problems: list[str] = []
    for txid, path in reversed(images):
        try:
            ns, held = load(Path(path))
        except (ImageError, OSError) as e:
            problems.append(f"{path.name}: {e}")
            log.warning("cannot load image %s (%s); trying an older one", path, e)
            continue
        if held != txid:
            problems.append(f"{path.name} says it is at txid {held}")
            log.warning("%s holds txid %d, not %d; trying an older one", path, held, txid)
            continue
        return ns, txid
    raise NoImageError(f"no image in {storage.current} can be loaded: " + "; ".join(problems))


def replay(ns: Replayable, ops: Iterable[tuple[int, Op]], expect_from: int, where: str = "") -> int:
    """Apply ops from txid expect_from on; returns the last txid applied (expect_from-1 if none).

    Ops below expect_from (already in the image) are skipped; a txid above the next
    expected one is a gap and raises EditLogGapError.
    """
    expected = expect_from
    for txid, op in ops:
        if txid < expected:
            continue
        if txid > expected:
            raise EditLogGapError(expected, txid, where)
        ns.apply(op)
        expected += 1
    return expected - 1


def read_segment_ops(path: Path, in_progress: bool = False) -> Iterator[tuple[int, Op]]:
    """(txid, op) of a segment file's valid ops; an in-progress one ends at its torn tail."""
    data = path.read_bytes()
    layout = read_header(data)
    if in_progress:
        data = data[: scan_file(path).valid_length]
    for raw in iter_ops(data):
        yield raw.txid, decode_op(raw, layout)


def local_edits(storage: NNStorage, after_txid: int) -> Iterator[tuple[int, Op]]:
    """The name dir's local edits with txids above after_txid, in txid order.

    The segments are those of txid_run from after_txid + 1 (stale copies and segments
    wholly at or below after_txid are skipped); the caller's replay checks for gaps.
    """
    for seg in txid_run(storage.edit_segments(), after_txid + 1).segments:
        try:
            yield from read_segment_ops(seg.path, seg.in_progress)
        except QjmError as e:
            raise NamenodeError(f"cannot read local edits {seg.path}: {e}") from None
