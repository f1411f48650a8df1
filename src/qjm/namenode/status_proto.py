"""HdfsFileStatusProto and ContentSummaryProto to and from FileStatus and ContentSummary.

Both directions in one place: the NameNode's handlers answer with these protos, the
client reads them back.
"""

from __future__ import annotations

from qjm.hdfs.proto import hdfs_pb2 as hdfs
from qjm.namenode.types import MODE_MASK, ContentSummary, FileStatus

_UINT64 = (1 << 64) - 1
_INT64_SIGN = 1 << 63


def signed64(value: int) -> int:
    """A uint64 field carrying a Java long (-1 arrives as 2**64 - 1) as the long."""
    return value - (1 << 64) if value & _INT64_SIGN else value


def unsigned64(value: int) -> int:
    """A Java long for a uint64 field (-1 goes as 2**64 - 1)."""
    return value & _UINT64


def file_status_proto(status: FileStatus, path: bytes) -> hdfs.HdfsFileStatusProto:
    """HdfsFileStatusProto of status; path is the local name (listings) or b"" (getFileInfo)."""
    if status.symlink is not None:
        file_type = hdfs.HdfsFileStatusProto.IS_SYMLINK
    elif status.is_dir:
        file_type = hdfs.HdfsFileStatusProto.IS_DIR
    else:
        file_type = hdfs.HdfsFileStatusProto.IS_FILE
    proto = hdfs.HdfsFileStatusProto(
        fileType=file_type,
        path=path,
        length=status.length,
        permission=hdfs.FsPermissionProto(perm=status.permission & MODE_MASK),
        owner=status.owner,
        group=status.group,
        modification_time=status.mtime,
        access_time=status.atime,
        block_replication=status.replication,
        blocksize=status.block_size,
        fileId=status.file_id,
        # HDFS: a directory's entries, 0 for a file (FSDirStatAndListingOp.createFileStatus)
        childrenNum=status.children if status.is_dir else 0,
    )
    if status.symlink is not None:
        proto.symlink = status.symlink.encode()
    return proto


def content_summary_proto(summary: ContentSummary) -> hdfs.ContentSummaryProto:
    """ContentSummaryProto of summary (a quota of -1, none, goes as Java's -1)."""
    return hdfs.ContentSummaryProto(
        length=summary.length,
        fileCount=summary.file_count,
        directoryCount=summary.directory_count,
        quota=unsigned64(summary.ns_quota),
        spaceConsumed=summary.space_consumed,
        spaceQuota=unsigned64(summary.space_quota),
    )


def status_from_proto(proto: hdfs.HdfsFileStatusProto, name: str) -> FileStatus:
    """A FileStatus from an HdfsFileStatusProto; name is the entry's name (or the path's last)."""
    is_dir = proto.fileType == hdfs.HdfsFileStatusProto.IS_DIR
    return FileStatus(
        name=name,
        is_dir=is_dir,
        length=proto.length,
        permission=proto.permission.perm,
        owner=proto.owner,
        group=proto.group,
        mtime=proto.modification_time,
        atime=proto.access_time,
        replication=proto.block_replication,
        block_size=proto.blocksize,
        file_id=proto.fileId,
        children=proto.childrenNum if is_dir else -1,
        symlink=proto.symlink.decode() if proto.HasField("symlink") else None,
    )


def summary_from_proto(proto: hdfs.ContentSummaryProto) -> ContentSummary:
    """A ContentSummary from a ContentSummaryProto (Java's -1 quotas back to -1)."""
    return ContentSummary(
        length=proto.length,
        file_count=proto.fileCount,
        directory_count=proto.directoryCount,
        ns_quota=signed64(proto.quota),
        space_consumed=proto.spaceConsumed,
        space_quota=signed64(proto.spaceQuota),
    )
