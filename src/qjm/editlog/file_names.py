"""HDFS's names for the files of a storage directory: images and edit-log segments.

Txids are written as 19 zero-padded digits, as HDFS's NNStorage names them. Every name
is formatted and parsed here, so that a reader and a writer never disagree on one.
"""

from __future__ import annotations

import re

IMAGE_PREFIX = "fsimage_"
INPROGRESS_PREFIX = "edits_inprogress_"
_IMAGE = re.compile(r"^fsimage_(\d{19})$")
_INPROGRESS = re.compile(r"^edits_inprogress_(\d{19})$")
_FINALIZED = re.compile(r"^edits_(\d{19})-(\d{19})$")
# A download accept_recovery staged before persisting its paxos data (staged_name).
_STAGED = re.compile(r"edits_inprogress_(\d{19})\.epoch=(\d+)")
STAGED_GLOB = f"{INPROGRESS_PREFIX}*.epoch=*"


def inprogress_name(start: int) -> str:
    """File name of the open segment starting at a txid."""
    return f"{INPROGRESS_PREFIX}{start:019d}"


def finalized_name(start: int, end: int) -> str:
    """File name of a finalized segment."""
    return f"edits_{start:019d}-{end:019d}"


def finalized_prefix(start: int) -> str:
    """The part of a finalized segment's name that its start txid fixes (edits_<start>)."""
    return f"edits_{start:019d}"


def parse_segment_name(name: str) -> tuple[int, int | None] | None:
    """(start, end) of a segment's file name (end None while in progress), or None."""
    m = _FINALIZED.match(name)
    if m:
        return int(m.group(1)), int(m.group(2))
    m = _INPROGRESS.match(name)
    if m:
        return int(m.group(1)), None
    return None


def staged_name(start: int, epoch: int) -> str:
    """File name of an accepted recovery download waiting for its decision to persist."""
    return f"{inprogress_name(start)}.epoch={epoch}"


def parse_staged_name(name: str) -> tuple[int, int] | None:
    """(start, epoch) of a staged download's file name, or None."""
    m = _STAGED.fullmatch(name)
    return (int(m[1]), int(m[2])) if m else None


def image_file_name(txid: int) -> str:
    """HDFS's name for the image of a txid: fsimage_ and 19 digits."""
    return f"{IMAGE_PREFIX}{txid:019d}"


def parse_image_name(name: str) -> int | None:
    """The txid of an image's file name (fsimage_<txid>), or None for any other name."""
    m = _IMAGE.match(name)
    return int(m.group(1)) if m else None
