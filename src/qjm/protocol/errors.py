"""Errors a JournalNode returns, shared by server and client so each side names them alike."""

from __future__ import annotations

from qjm.errors import QjmError


class JournalError(QjmError):
    """A JournalNode refused a request; the message says which rule and which values."""

    code = "JOURNAL_ERROR"
    java_class = "java.io.IOException"


class JournalNotFormattedError(JournalError):
    """The journal id has no formatted storage on this JournalNode."""

    code = "NOT_FORMATTED"
    java_class = "org.apache.hadoop.hdfs.qjournal.protocol.JournalNotFormattedException"


class EpochError(JournalError):
    """A request's epoch is older than the promise, or not the writer's epoch."""

    code = "STALE_EPOCH"
    java_class = "qjm.protocol.errors.EpochError"


class JournalOutOfSyncError(JournalError):
    """The writer and this node disagree on the segment, txid or IPC serial."""

    code = "OUT_OF_SYNC"
    java_class = "org.apache.hadoop.hdfs.qjournal.protocol.JournalOutOfSyncException"


class NamespaceMismatchError(JournalError):
    """The request's namespace or cluster id differs from the formatted journal's."""

    code = "NAMESPACE_MISMATCH"
    java_class = "qjm.protocol.errors.NamespaceMismatchError"


class InvalidRequestError(JournalError):
    """A request whose fields are malformed or out of range."""

    code = "INVALID_REQUEST"
    java_class = "qjm.protocol.errors.InvalidRequestError"


class SegmentStateError(JournalError):
    """An operation that the segments on disk do not allow (finalize, restart, replace)."""

    code = "SEGMENT_STATE"
    java_class = "qjm.protocol.errors.SegmentStateError"


class StorageError(JournalError):
    """The node's storage failed (disk full, I/O error, lock held by another process)."""

    code = "STORAGE"
    java_class = "qjm.protocol.errors.StorageError"


class CacheMissError(JournalError):
    """The edits asked for are no longer (or not yet) in the node's memory cache."""

    code = "CACHE_MISS"
    java_class = "org.apache.hadoop.hdfs.qjournal.server.JournaledEditsCache$CacheMissException"


ERROR_CLASSES: dict[str, type[JournalError]] = {
    cls.code: cls
    for cls in (
        JournalError,
        JournalNotFormattedError,
        EpochError,
        JournalOutOfSyncError,
        NamespaceMismatchError,
        InvalidRequestError,
        SegmentStateError,
        StorageError,
        CacheMissError,
    )
}
# The exception class name a JournalNode sends for each error (Hadoop's where Hadoop has
# one; a Java client sees the others as a RemoteException, an IOException).
ERROR_CLASSES_BY_JAVA_NAME: dict[str, type[JournalError]] = {
    cls.java_class: cls for cls in ERROR_CLASSES.values()
}


class JournalNodeUnavailable(QjmError):
    """The JournalNode did not answer: down, unreachable, or too slow."""
