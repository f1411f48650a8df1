"""The NameNode's refusals, each carrying the Java exception class an HDFS client expects."""

from __future__ import annotations

from qjm.errors import QjmError


class NamenodeError(QjmError):
    """A namespace call refused; the message names the path and the rule."""

    java_class = "java.io.IOException"


class PathNotFoundError(NamenodeError):
    """The path (or its parent) does not exist."""

    java_class = "java.io.FileNotFoundException"


class FileAlreadyExistsError(NamenodeError):
    """The path exists and the call may not replace it."""

    java_class = "org.apache.hadoop.fs.FileAlreadyExistsException"


class ParentNotDirectoryError(NamenodeError):
    """A component of the path's parent is a file."""

    java_class = "org.apache.hadoop.fs.ParentNotDirectoryException"


class PathIsNotEmptyDirectoryError(NamenodeError):
    """A non-recursive delete of a directory with entries."""

    java_class = "org.apache.hadoop.fs.PathIsNotEmptyDirectoryException"


class InvalidPathError(NamenodeError):
    """A path that is not absolute or has an invalid component."""

    java_class = "org.apache.hadoop.fs.InvalidPathException"


class AccessControlError(NamenodeError):
    """The caller lacks a permission (by owner, group and mode)."""

    java_class = "org.apache.hadoop.security.AccessControlException"


class NSQuotaExceededError(NamenodeError):
    """A directory's name quota would be exceeded."""

    java_class = "org.apache.hadoop.hdfs.protocol.NSQuotaExceededException"


class DSQuotaExceededError(NamenodeError):
    """A directory's space quota would be exceeded."""

    java_class = "org.apache.hadoop.hdfs.protocol.DSQuotaExceededException"


class LeaseError(NamenodeError):
    """A write to a file that is not open for writing by this client (HDFS's checkLease)."""

    java_class = "org.apache.hadoop.hdfs.server.namenode.LeaseExpiredException"


class StandbyError(NamenodeError):
    """This NameNode is not active: an HDFS client tries the other one."""

    java_class = "org.apache.hadoop.ipc.StandbyException"


class SafeModeError(NamenodeError):
    """The NameNode is in safe mode: no namespace change is taken (design §B.14)."""

    java_class = "org.apache.hadoop.hdfs.server.namenode.SafeModeException"


class RetriableError(NamenodeError):
    """Try again later (e.g. an observer read whose state id is not applied yet)."""

    java_class = "org.apache.hadoop.ipc.RetriableException"


class NotSupportedError(NamenodeError):
    """A call qjm does not serve (anything that needs a DataNode, for one)."""

    java_class = "java.lang.UnsupportedOperationException"


class IllegalArgumentError(NamenodeError):
    """A request field out of range (replication 0, a bad permission, ...)."""

    java_class = "org.apache.hadoop.HadoopIllegalArgumentException"


class ServiceFailedError(NamenodeError):
    """An HA transition could not be done."""

    java_class = "org.apache.hadoop.ha.ServiceFailedException"


class HealthCheckFailedError(NamenodeError):
    """monitorHealth: the NameNode is not healthy."""

    java_class = "org.apache.hadoop.ha.HealthCheckFailedException"


class NotReplicatedYetError(NamenodeError):
    """addBlock before the blocks behind the last have their minimum replicas: retry."""

    java_class = "org.apache.hadoop.hdfs.server.namenode.NotReplicatedYetException"


class AlreadyBeingCreatedError(NamenodeError):
    """append or truncate of a file another client (or the same one) has open for writing."""

    java_class = "org.apache.hadoop.hdfs.protocol.AlreadyBeingCreatedException"


class RecoveryInProgressError(NamenodeError):
    """A lease recovery of the file is under way: try again later (design §B.16)."""

    java_class = "org.apache.hadoop.hdfs.protocol.RecoveryInProgressException"


class JavaIllegalArgumentError(NamenodeError):
    """A request HDFS refuses with java.lang.IllegalArgumentException (a Preconditions check)."""

    java_class = "java.lang.IllegalArgumentException"
