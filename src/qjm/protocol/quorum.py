"""Quorum arithmetic, one home for the writer, the readers and the JournalNodes."""

from __future__ import annotations


def majority_of(n: int) -> int:
    """The smallest majority of n nodes."""
    return n // 2 + 1
