"""Errors of the segment files on disk, apart from any wire protocol.

A FileJournal raises these; the JournalNode maps them to its wire errors at its RPC
boundary (journalnode/rpc.py), and the NameNode reports them as they are.
"""

from __future__ import annotations

from qjm.errors import QjmError


class SegmentIOError(QjmError):
    """A segment file could not be read or written: an I/O error, a full disk."""


class SegmentCorruptError(SegmentIOError):
    """An in-progress segment with a bad op that valid ops follow: damage, not a torn tail."""


class SegmentRangeError(QjmError):
    """A downloaded segment does not hold the txids asked for."""
