"""Namespace identity on the wire: one home for building, reading and comparing it.

HDFS sends a namespace as NamespaceInfoProto holding a StorageInfoProto; the identity a
journal is formatted for is the namespace id and cluster id, compared here and nowhere
else (the wire message, a node's NamespaceInfo record and the syncer's peer all use
same_namespace). Layout versions are negative
in HDFS and travel as 32-bit two's complement in a uint32.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from qjm import __version__
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import InvalidRequestError

DEFAULT_LAYOUT_VERSION = -64


def to_uint32(value: int) -> int:
    """A signed 32-bit number as the uint32 the wire carries."""
    return value & 0xFFFFFFFF


def to_signed32(value: int) -> int:
    """A uint32 from the wire read as the signed 32-bit number HDFS meant."""
    return value - (1 << 32) if value & 0x80000000 else value


def namespace_info(
    namespace_id: int,
    cluster_id: str,
    block_pool_id: str = "",
    ctime: int = 0,
    layout_version: int = DEFAULT_LAYOUT_VERSION,
) -> pb.NamespaceInfoProto:
    """A NamespaceInfoProto with every required field set."""
    return pb.NamespaceInfoProto(
        build_version="",
        unused=0,
        block_pool_id=block_pool_id,
        storage_info=pb.StorageInfoProto(
            layout_version=to_uint32(layout_version),
            namespace_id=namespace_id,
            cluster_id=cluster_id,
            ctime=ctime,
        ),
        software_version=__version__,
    )


class NamespaceIds(Protocol):
    """Anything naming a namespace by its ids: StorageInfoProto, a node's NamespaceInfo record."""

    @property
    def namespace_id(self) -> int: ...

    @property
    def cluster_id(self) -> str: ...


def namespace_identity(ns: pb.NamespaceInfoProto | NamespaceIds) -> tuple[int, str]:
    """What makes two namespaces the same namespace: (namespace id, cluster id)."""
    ids: NamespaceIds = ns.storage_info if isinstance(ns, pb.NamespaceInfoProto) else ns
    return (ids.namespace_id, ids.cluster_id)


def same_namespace(
    a: pb.NamespaceInfoProto | NamespaceIds, b: pb.NamespaceInfoProto | NamespaceIds
) -> bool:
    """Whether a and b name the same namespace (HDFS's NamespaceInfo check)."""
    return namespace_identity(a) == namespace_identity(b)


def layout_version(ns: pb.NamespaceInfoProto) -> int:
    """The namespace's (negative) layout version."""
    return to_signed32(ns.storage_info.layout_version)


def describe_namespace(ns: pb.NamespaceInfoProto) -> str:
    """Short form for messages: namespace id and cluster id."""
    namespace_id, cluster_id = namespace_identity(ns)
    return f"namespace {namespace_id} cluster {cluster_id}"


@dataclass(frozen=True, slots=True)
class NamespaceInfo:
    """The namespace a journal is formatted for."""

    namespace_id: int
    cluster_id: str
    block_pool_id: str = ""
    ctime: int = 0
    layout_version: int = -64

    @classmethod
    def from_proto(cls, msg: pb.NamespaceInfoProto) -> NamespaceInfo:
        """Build from the wire message, rejecting an empty identity."""
        si = msg.storage_info
        if si.namespace_id == 0 or not si.cluster_id:
            raise InvalidRequestError(
                f"namespace info needs a non-zero namespace id and a cluster id, got "
                f"namespace id {si.namespace_id} and cluster id {si.cluster_id!r}"
            )
        return cls(si.namespace_id, si.cluster_id, msg.block_pool_id, si.ctime, layout_version(msg))

    def to_proto(self) -> pb.NamespaceInfoProto:
        """The wire message (every required field set)."""
        return namespace_info(
            self.namespace_id, self.cluster_id, self.block_pool_id, self.ctime, self.layout_version
        )

    def describe(self) -> str:
        """Short form for messages: namespace id and cluster id."""
        return f"namespaceID={self.namespace_id}, clusterID={self.cluster_id}"


@dataclass(frozen=True, slots=True)
class StorageInfo:
    """HDFS's StorageInfo in the colon-separated form /getJournal's storageInfo carries."""

    layout_version: int
    namespace_id: int
    ctime: int
    cluster_id: str

    @classmethod
    def of(cls, ns: pb.NamespaceInfoProto) -> StorageInfo:
        """The storage info of a namespace's wire message."""
        si = ns.storage_info
        return cls(layout_version(ns), si.namespace_id, si.ctime, si.cluster_id)

    @classmethod
    def parse(cls, text: str) -> StorageInfo:
        """Read layoutVersion:namespaceID:cTime:clusterID; ValueError if it is not that."""
        parts = text.split(":", 3)
        if len(parts) != 4 or not parts[3]:
            raise ValueError(f"{text!r} has not four fields")
        return cls(int(parts[0]), int(parts[1]), int(parts[2]), parts[3])

    def __str__(self) -> str:
        """HDFS's StorageInfo.toColonSeparatedString()."""
        return f"{self.layout_version}:{self.namespace_id}:{self.ctime}:{self.cluster_id}"
