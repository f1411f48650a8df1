"""HDFS's names for the files of a storage directory: images and edit-log segments.

Txids are written as 19 zero-padded digits, as HDFS's NNStorage names them.
"""

from __future__ import annotations


def inprogress_name(start: int) -> str:
    """File name of the open segment starting at a txid."""
    return f"edits_inprogress_{start:019d}"


def finalized_name(start: int, end: int) -> str:
    """File name of a finalized segment."""
    return f"edits_{start:019d}-{end:019d}"


def image_file_name(txid: int) -> str:
    """HDFS's name for the image of a txid: fsimage_ and 19 digits."""
    return f"fsimage_{txid:019d}"
