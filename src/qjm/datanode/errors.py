"""The DataNode storage's errors; each message names the directory, block or ids at fault."""

from __future__ import annotations

from qjm.datanode import replica_store
from qjm.errors import QjmError


class StorageError(QjmError):
    """A data directory or block pool directory that cannot be used as it is."""


class DiskOutOfSpaceError(StorageError):
    """No volume has room for a new replica, or a write ran out of space."""


class VolumeFailedError(StorageError):
    """A volume's disk failed (or had failed before) under an operation on it."""


class ReplicaNotFoundError(StorageError, replica_store.ReplicaNotFoundError):
    """No replica of that block (or of that generation stamp, or in that state)."""


class ReplicaAlreadyExistsError(StorageError, replica_store.ReplicaAlreadyExistsError):
    """A replica of that block is already held or being written."""
