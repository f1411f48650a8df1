"""The namespace: HDFS's inode tree, kept compact, changed only by applying edit-log ops.

Writes are two steps: a plan_* method validates a call against the tree (paths, permissions,
quotas) and returns the HDFS ops that carry it out, without changing anything; apply(op)
then changes the tree. Replay at start-up and the standby's tailer call the same apply, so
every NameNode that applied the same ops holds the same tree. apply reads no clock.

Kept from HDFS but not used by the checks: ACL entries and xattrs (permission checks use
owner, group and mode only), storage policies, erasure-coding policy ids. Not modelled:
snapshots (an image's snapshot-only inodes are dropped), /.reserved paths, encryption
zones, atime precision (a directory keeps no atime, as in HDFS's image).
"""

from qjm.namenode.namespace.core import ROOT
from qjm.namenode.namespace.facade import Namespace, load_namespace
from qjm.namenode.namespace.paths import (
    MAX_PATH_DEPTH,
    MAX_PATH_LENGTH,
    MAX_RESOLVABLE_PATH,
    PathTooLongError,
    check_path_length,
    java_length,
    join_path,
    path_depth,
    split_path,
)
from qjm.namenode.namespace.quota import QUOTA_DONT_SET
from qjm.namenode.namespace.rules import (
    IMPLICIT_UWX,
    MAX_COMPONENT_LENGTH,
    MAX_DIRECTORY_ITEMS,
    MAX_REPLICATION,
    MIN_REPLICATION,
    FsLimits,
    MaxDirectoryItemsExceededError,
    PathComponentTooLongError,
    check_replication,
)
from qjm.namenode.types import MODE_MASK

__all__ = [
    "IMPLICIT_UWX",
    "MAX_COMPONENT_LENGTH",
    "MAX_DIRECTORY_ITEMS",
    "MAX_PATH_DEPTH",
    "MAX_PATH_LENGTH",
    "MAX_REPLICATION",
    "MAX_RESOLVABLE_PATH",
    "MIN_REPLICATION",
    "MODE_MASK",
    "QUOTA_DONT_SET",
    "ROOT",
    "FsLimits",
    "MaxDirectoryItemsExceededError",
    "Namespace",
    "PathComponentTooLongError",
    "PathTooLongError",
    "check_path_length",
    "check_replication",
    "java_length",
    "join_path",
    "load_namespace",
    "path_depth",
    "split_path",
]
