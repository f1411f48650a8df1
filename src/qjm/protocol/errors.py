"""Errors a JournalNode returns, shared by server and client so each side names them alike."""

from __future__ import annotations

from qjm.errors import QjmError


class JournalError(QjmError):
    """A JournalNode refused a request; the message says which rule and which values."""

    code = "JOURNAL_ERROR"


class JournalNotFormattedError(JournalError):
    """The journal id has no formatted storage on this JournalNode."""

    code = "NOT_FORMATTED"


class EpochError(JournalError):
    """A request's epoch is older than the promise, or not the writer's epoch."""

    code = "STALE_EPOCH"


class JournalOutOfSyncError(JournalError):
    """The writer and this node disagree on the segment, txid or IPC serial."""

    code = "OUT_OF_SYNC"


class NamespaceMismatchError(JournalError):
    """The request's namespace or cluster id differs from the formatted journal's."""

    code = "NAMESPACE_MISMATCH"


class InvalidRequestError(JournalError):
    """A request whose fields are malformed or out of range."""

    code = "INVALID_REQUEST"


class SegmentStateError(JournalError):
    """An operation that the segments on disk do not allow (finalize, restart, replace)."""

    code = "SEGMENT_STATE"


class StorageError(JournalError):
    """The node's storage failed (disk full, I/O error, lock held by another process)."""

    code = "STORAGE"


class CacheMissError(JournalError):
    """The edits asked for are no longer (or not yet) in the node's memory cache."""

    code = "CACHE_MISS"


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
ERROR_METADATA_KEY = "qjm-error"
