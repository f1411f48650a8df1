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


class StorageInfoMismatchError(NamespaceMismatchError):
    """A segment fetch (/getJournal) whose storageInfo names another namespace."""

    code = "STORAGE_INFO_MISMATCH"
    java_class = "qjm.protocol.errors.StorageInfoMismatchError"


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


class JournalInUseError(JournalError):
    """A format of a journal in use, not forced for the namespace it is formatted for."""

    code = "JOURNAL_IN_USE"
    java_class = "qjm.protocol.errors.JournalInUseError"


class CacheMissError(JournalError):
    """The edits asked for are no longer (or not yet) in the node's memory cache."""

    code = "CACHE_MISS"
    java_class = "org.apache.hadoop.hdfs.qjournal.server.JournaledEditsCache$CacheMissException"


class StaleEpochError(EpochError):
    """A request's epoch is below the last promised epoch: a newer writer has taken over."""

    code = "EPOCH_BELOW_PROMISE"
    java_class = "qjm.protocol.errors.StaleEpochError"


class UnpromisedEpochError(EpochError):
    """A request's epoch is above the last promise: the writer never won new_epoch here."""

    code = "EPOCH_NOT_PROMISED"
    java_class = "qjm.protocol.errors.UnpromisedEpochError"


class EpochNotNewerError(EpochError):
    """new_epoch proposed an epoch not above the last promise."""

    code = "EPOCH_NOT_NEWER"
    java_class = "qjm.protocol.errors.EpochNotNewerError"


class NotWriterEpochError(EpochError):
    """A write whose epoch is not the epoch of the writer that started the segment."""

    code = "NOT_WRITER_EPOCH"
    java_class = "qjm.protocol.errors.NotWriterEpochError"


class AwaitingNewEpochError(EpochError):
    """The journal was formatted or restored and refuses writers until a new_epoch."""

    code = "AWAITING_NEW_EPOCH"
    java_class = "qjm.protocol.errors.AwaitingNewEpochError"


class NewerAcceptError(EpochError):
    """accept_recovery of a segment already accepted in a newer epoch."""

    code = "NEWER_ACCEPT"
    java_class = "qjm.protocol.errors.NewerAcceptError"


class IpcSerialError(JournalOutOfSyncError):
    """An IPC serial not above the previous one in the same epoch."""

    code = "IPC_SERIAL"
    java_class = "qjm.protocol.errors.IpcSerialError"


class TxidGapError(JournalOutOfSyncError):
    """A batch whose first txid is not the next expected one (a gap or a reordering)."""

    code = "TXID_GAP"
    java_class = "qjm.protocol.errors.TxidGapError"


class NoOpenSegmentError(JournalOutOfSyncError):
    """A batch while no segment is open here."""

    code = "NO_OPEN_SEGMENT"
    java_class = "qjm.protocol.errors.NoOpenSegmentError"


class WrongSegmentError(JournalOutOfSyncError):
    """A batch for another segment than the open one."""

    code = "WRONG_SEGMENT"
    java_class = "qjm.protocol.errors.WrongSegmentError"


class MembershipMismatchError(NamespaceMismatchError):
    """A writer's URI names another member set than the journal was formatted for."""

    code = "MEMBERSHIP_MISMATCH"
    java_class = "qjm.protocol.errors.MembershipMismatchError"


class MemberChangeError(JournalError):
    """A member change (`qjm journal change-members`) this node or the rule refuses."""

    code = "MEMBER_CHANGE"
    java_class = "qjm.protocol.errors.MemberChangeError"


class UnsafeMemberChangeError(MemberChangeError):
    """A new member set that breaks the member-change rule: names why."""

    code = "UNSAFE_MEMBER_CHANGE"
    java_class = "qjm.protocol.errors.UnsafeMemberChangeError"


class MemberChangePendingError(MemberChangeError):
    """Another member change while no writer of the last one has started a segment here."""

    code = "MEMBER_CHANGE_PENDING"
    java_class = "qjm.protocol.errors.MemberChangePendingError"


class MissingEpochError(InvalidRequestError):
    """A writer call that carries no epoch (0 or negative)."""

    code = "MISSING_EPOCH"
    java_class = "qjm.protocol.errors.MissingEpochError"


class EpochLimitError(InvalidRequestError):
    """A proposed epoch too far above the last promise, or too close to 2**62."""

    code = "EPOCH_LIMIT"
    java_class = "qjm.protocol.errors.EpochLimitError"


class IpcSerialLimitError(InvalidRequestError):
    """An IPC serial at or above 2**62, the bound epochs have."""

    code = "IPC_SERIAL_LIMIT"
    java_class = "qjm.protocol.errors.IpcSerialLimitError"


class CommittedTxidRegressionError(InvalidRequestError):
    """A request that would move the committed txid backward."""

    code = "COMMITTED_TXID_BACKWARD"
    java_class = "qjm.protocol.errors.CommittedTxidRegressionError"


class EmptyFinalizeError(InvalidRequestError):
    """A finalize whose end txid is before its start (an empty segment)."""

    code = "EMPTY_FINALIZE"
    java_class = "qjm.protocol.errors.EmptyFinalizeError"


class SegmentExistsError(SegmentStateError):
    """A segment start where a finalized segment or one holding txns already begins."""

    code = "SEGMENT_EXISTS"
    java_class = "qjm.protocol.errors.SegmentExistsError"


class SegmentStartError(SegmentStateError):
    """A segment start not above the committed or highest written txid, or past committed + 1."""

    code = "SEGMENT_START"
    java_class = "qjm.protocol.errors.SegmentStartError"


class NoSuchSegmentError(SegmentStateError):
    """A finalize of a segment that is not here."""

    code = "NO_SUCH_SEGMENT"
    java_class = "qjm.protocol.errors.NoSuchSegmentError"


class FinalizeEndMismatchError(SegmentStateError):
    """A finalize whose end differs from what was written or already finalized."""

    code = "FINALIZE_END_MISMATCH"
    java_class = "qjm.protocol.errors.FinalizeEndMismatchError"


class FinalizeRefusedError(SegmentStateError):
    """Finalize of an in-progress segment neither its writer wrote nor a recovery accepted."""

    code = "FINALIZE_REFUSED"
    java_class = "qjm.protocol.errors.FinalizeRefusedError"


class PurgeRefusedError(SegmentStateError):
    """A purge that would delete the open segment."""

    code = "PURGE_REFUSED"
    java_class = "qjm.protocol.errors.PurgeRefusedError"


class AmnesiacNodeError(SegmentStateError):
    """A node restored from peers may not answer prepare_recovery until a segment starts."""

    code = "AMNESIAC"
    java_class = "qjm.protocol.errors.AmnesiacNodeError"


class TombstonedSegmentError(SegmentStateError):
    """A finalized segment here was moved aside as bad and no good copy is back."""

    code = "TOMBSTONED"
    java_class = "qjm.protocol.errors.TombstonedSegmentError"


class AcceptedStateMismatchError(SegmentStateError):
    """The segment on disk differs from the recovery this node accepted."""

    code = "ACCEPTED_STATE_MISMATCH"
    java_class = "qjm.protocol.errors.AcceptedStateMismatchError"


class CommittedTxidLossError(SegmentStateError):
    """An accept_recovery that would discard a committed txid."""

    code = "COMMITTED_TXID_LOSS"
    java_class = "qjm.protocol.errors.CommittedTxidLossError"


class FinalizedReplaceError(SegmentStateError):
    """An accept_recovery that would replace a finalized segment."""

    code = "FINALIZED_REPLACE"
    java_class = "qjm.protocol.errors.FinalizedReplaceError"


class SegmentChangedError(SegmentStateError):
    """The segment changed (or its download went away) while a recovery downloaded it."""

    code = "SEGMENT_CHANGED"
    java_class = "qjm.protocol.errors.SegmentChangedError"


class DownloadRangeError(SegmentStateError):
    """A downloaded segment does not hold the txids asked for."""

    code = "DOWNLOAD_RANGE"
    java_class = "qjm.protocol.errors.DownloadRangeError"


class BadFinalizedSegmentError(SegmentStateError):
    """A finalized segment that does not hold its named range; moved aside, never served."""

    code = "BAD_FINALIZED_SEGMENT"
    java_class = "qjm.protocol.errors.BadFinalizedSegmentError"


class CorruptSegmentError(StorageError):
    """An in-progress segment with a bad op that valid ops follow: damage, not a torn tail."""

    code = "CORRUPT_SEGMENT"
    java_class = "qjm.protocol.errors.CorruptSegmentError"


class StorageNotEmptyError(StorageError):
    """A format of storage that holds data, without force."""

    code = "STORAGE_NOT_EMPTY"
    java_class = "qjm.protocol.errors.StorageNotEmptyError"


ERROR_CLASSES: dict[str, type[JournalError]] = {
    cls.code: cls
    for cls in (
        JournalError,
        JournalNotFormattedError,
        EpochError,
        JournalOutOfSyncError,
        NamespaceMismatchError,
        StorageInfoMismatchError,
        InvalidRequestError,
        SegmentStateError,
        StorageError,
        JournalInUseError,
        CacheMissError,
        StaleEpochError,
        UnpromisedEpochError,
        EpochNotNewerError,
        NotWriterEpochError,
        AwaitingNewEpochError,
        NewerAcceptError,
        IpcSerialError,
        TxidGapError,
        NoOpenSegmentError,
        WrongSegmentError,
        MembershipMismatchError,
        MemberChangeError,
        UnsafeMemberChangeError,
        MemberChangePendingError,
        MissingEpochError,
        EpochLimitError,
        IpcSerialLimitError,
        CommittedTxidRegressionError,
        EmptyFinalizeError,
        SegmentExistsError,
        SegmentStartError,
        NoSuchSegmentError,
        FinalizeEndMismatchError,
        FinalizeRefusedError,
        PurgeRefusedError,
        AmnesiacNodeError,
        TombstonedSegmentError,
        AcceptedStateMismatchError,
        CommittedTxidLossError,
        FinalizedReplaceError,
        SegmentChangedError,
        DownloadRangeError,
        BadFinalizedSegmentError,
        CorruptSegmentError,
        StorageNotEmptyError,
    )
}
# The exception class name a JournalNode sends for each error (Hadoop's where Hadoop has
# one; a Java client sees the others as a RemoteException, an IOException).
ERROR_CLASSES_BY_JAVA_NAME: dict[str, type[JournalError]] = {
    cls.java_class: cls for cls in ERROR_CLASSES.values()
}


class JournalNodeUnavailable(QjmError):
    """The JournalNode did not answer: down, unreachable, or too slow."""
