"""The namespace: an inode tree kept compact in memory (placeholder; the namespace work fills it)."""

from __future__ import annotations


class Namespace:
    """The inode tree with HDFS's semantics."""
