"""Refusals of the block layer, each with the Java exception class a DataNode expects."""

from __future__ import annotations

from qjm.namenode.errors import NamenodeError


class UnregisteredNodeError(NamenodeError):
    """A DataNode call from a node that is not registered, or is dead (design §B.5)."""

    java_class = "org.apache.hadoop.hdfs.protocol.UnregisteredNodeException"


class BlockStateError(NamenodeError):
    """A block call that does not fit the block's state (unknown block, genstamp mismatch)."""


class PendingMessagesFullError(NamenodeError):
    """The standby's queue of DataNode messages is at its bound (design §B.6)."""
