"""Values the namespace, the edit log and the RPC layer hand each other."""

from __future__ import annotations

import enum
from dataclasses import dataclass

# The permission bits a namespace keeps: every mode coming in (a request, an op, an image)
# is masked with it in one place, the namespace's plans, apply and image loader.
# HDFS sends the ACL and encryption bits in HdfsFileStatusProto's flags instead.
MODE_MASK = 0o7777


class HAState(enum.Enum):
    """A NameNode's HA state (design §N.8); values are HAServiceStateProto's numbers."""

    INITIALIZING = 0
    ACTIVE = 1
    STANDBY = 2
    OBSERVER = 3
    STOPPING = 4  # ours: never sent on the wire (a stopping node stops answering)


@dataclass(frozen=True, slots=True)
class Caller:
    """Who makes a namespace call: the user, their groups, and whether they are a superuser."""

    user: str
    groups: tuple[str, ...] = ()
    superuser: bool = False


@dataclass(frozen=True, slots=True)
class RpcIds:
    """The RPC client id and call id of a mutation (HDFS logs them for its retry cache)."""

    client_id: bytes = b""
    call_id: int = -2  # HDFS's RpcConstants.INVALID_CALL_ID


@dataclass(frozen=True, slots=True)
class FileStatus:
    """One inode as a client sees it (HdfsFileStatusProto's fields)."""

    name: str  # the inode's own name ("" for the root)
    is_dir: bool
    length: int
    permission: int  # the 16-bit mode, e.g. 0o755
    owner: str
    group: str
    mtime: int  # milliseconds since the epoch
    atime: int
    replication: int  # 0 for a directory
    block_size: int  # 0 for a directory
    file_id: int
    children: int  # entries of a directory, -1 for a file
    under_construction: bool = False
    symlink: str | None = None


@dataclass(frozen=True, slots=True)
class ContentSummary:
    """Totals under a path (ContentSummaryProto); quota -1 means none."""

    length: int
    file_count: int
    directory_count: int
    ns_quota: int
    space_consumed: int
    space_quota: int
