"""The DataNode's on-disk layout as HDFS lays it out, as pure rules (design §B.1).

<data dir>/in_use.lock
<data dir>/current/VERSION                        storageID, clusterID, datanodeUuid, ...
<data dir>/current/BP-<...>/current/VERSION       namespaceID, blockpoolID, ...
<data dir>/current/BP-<...>/current/finalized/subdirA/subdirB/blk_<id>, blk_<id>_<gs>.meta
<data dir>/current/BP-<...>/current/rbw/blk_<id>, blk_<id>_<gs>.meta
<data dir>/current/BP-<...>/tmp/                  temporary replicas, dropped at start-up
<data dir>/current/BP-<...>/quarantine/           files never served (ours, design §B.1)
"""

from __future__ import annotations

import re
import struct
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from qjm.datanode.errors import DiskOutOfSpaceError, StorageError
from qjm.hdfs.checksum import HEADER_LEN, ChecksumError, DataChecksum, num_chunks

# DataNodeLayoutVersion.CURRENT_LAYOUT_VERSION of Hadoop 3 (BLOCKID_BASED_LAYOUT_32_by_32).
DATANODE_LAYOUT_VERSION = -57
STORAGE_TYPE = "DATA_NODE"
META_VERSION = 1  # BlockMetadataHeader.VERSION
META_HEADER_LEN = 2 + HEADER_LEN
LOCK_FILE = "in_use.lock"
CURRENT = "current"
VERSION = "VERSION"
FINALIZED = "finalized"
RBW = "rbw"
TMP = "tmp"
QUARANTINE = "quarantine"

_BLOCK_RE = re.compile(r"blk_(-?\d+)")
_META_RE = re.compile(r"blk_(-?\d+)_(\d+)\.meta")
_BPID_RE = re.compile(r"BP-[A-Za-z0-9][A-Za-z0-9._-]*")
_META_VERSION = struct.Struct(">h")


# -- block and meta file names ------------------------------------------------------------
def id_to_block_dir(block_id: int) -> tuple[str, str]:
    """The two subdirs of finalized/ that hold a block: DatanodeUtil.idToBlockDir."""
    return f"subdir{(block_id >> 16) & 0x1F}", f"subdir{(block_id >> 8) & 0x1F}"


def block_file_name(block_id: int) -> str:
    """A block's data file name."""
    return f"blk_{block_id}"


def meta_file_name(block_id: int, genstamp: int) -> str:
    """A block's meta file name, which carries its generation stamp."""
    return f"blk_{block_id}_{genstamp}.meta"


def parse_block_file_name(name: str) -> int | None:
    """The block id of a data file name, None for any other name."""
    m = _BLOCK_RE.fullmatch(name)
    return int(m.group(1)) if m else None


def parse_meta_file_name(name: str) -> tuple[int, int] | None:
    """(block id, genstamp) of a meta file name, None for any other name."""
    m = _META_RE.fullmatch(name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def check_block_pool_id(bpid: str) -> str:
    """Return bpid if it can name a directory like HDFS's BP-<n>-<ip>-<ms>; raise otherwise."""
    if not _BPID_RE.fullmatch(bpid) or ".." in bpid or len(bpid) > 200:
        raise StorageError(f"block pool id {bpid!r} is not of the form BP-<...>")
    return bpid


# -- meta files ---------------------------------------------------------------------------
def meta_header(checksum: DataChecksum) -> bytes:
    """A meta file's 7-byte header: version 1, then the checksum header."""
    return _META_VERSION.pack(META_VERSION) + checksum.header()


def parse_meta_header(raw: bytes, where: str) -> DataChecksum:
    """The checksum a meta file's header names; raise naming `where` when it is unusable."""
    if len(raw) < META_HEADER_LEN:
        raise ChecksumError(f"{where}: {len(raw)} bytes, a meta header needs {META_HEADER_LEN}")
    (version,) = _META_VERSION.unpack_from(raw)
    if version != META_VERSION:
        raise ChecksumError(f"{where}: meta version {version}, expected {META_VERSION}")
    return DataChecksum.from_header(raw[2:META_HEADER_LEN], where)


def meta_length(checksum: DataChecksum, data_length: int) -> int:
    """The length of the meta file of a replica of data_length bytes."""
    return META_HEADER_LEN + checksum.sums_length(data_length)


def sum_position(checksum: DataChecksum, data_offset: int) -> int:
    """Where in the meta file the sum of the chunk holding data_offset starts."""
    return META_HEADER_LEN + (data_offset // checksum.bytes_per_checksum) * checksum.checksum_size


def chunk_aligned(offset: int, length: int, visible: int, bpc: int) -> tuple[int, int]:
    """The whole chunks [start, end) that cover [offset, offset+length) of a replica
    whose visible length is `visible` (end clipped to it), as READ_BLOCK sends them."""
    if offset < 0 or length < 0 or offset > visible:
        raise StorageError(
            f"read of {length} bytes at offset {offset} is outside the replica's "
            f"{visible} visible bytes"
        )
    start = offset - offset % bpc
    end = min(visible, num_chunks(offset + length, bpc) * bpc)
    return start, end


def torn_candidate(data_len: int, meta_len: int, checksum: DataChecksum) -> tuple[int, int]:
    """(chunks, bytes) that both files of a torn replica cover: the length to check from."""
    if checksum.checksum_size == 0:
        return 0, data_len
    in_meta = max(0, meta_len - META_HEADER_LEN) // checksum.checksum_size
    chunks = min(num_chunks(data_len, checksum.bytes_per_checksum), in_meta)
    return chunks, min(data_len, chunks * checksum.bytes_per_checksum)


# -- volume choice ------------------------------------------------------------------------
def choose_round_robin(available: Sequence[int], start: int, size: int) -> tuple[int, int]:
    """(the volume index, the next start) by RoundRobinVolumeChoosingPolicy: the first
    volume from `start` on with more than `size` bytes available."""
    n = len(available)
    if n == 0:
        raise DiskOutOfSpaceError("no volume left to hold a replica: every volume failed")
    start %= n
    for step in range(n):
        i = (start + step) % n
        if available[i] > size:
            return i, (i + 1) % n
    raise DiskOutOfSpaceError(
        f"out of space: the volume with the most available space (={max(available)} B) "
        f"is less than the block size (={size} B)"
    )


# -- VERSION files ------------------------------------------------------------------------
def parse_properties(text: str) -> dict[str, str]:
    """A Java properties file's key=value pairs (the subset HDFS's VERSION files use)."""
    props: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        key, sep, value = line.partition("=")
        if sep:
            props[key.strip()] = value.strip()
    return props


def format_properties(pairs: Sequence[tuple[str, str | int]]) -> str:
    """A VERSION file's text: a date comment, then key=value lines, as Java writes it."""
    stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime())
    return f"#{stamp}\n" + "".join(f"{k}={v}\n" for k, v in pairs)


def new_storage_id() -> str:
    """A fresh storage id, DS-<uuid>, as DatanodeStorage.generateUuid."""
    return f"DS-{uuid.uuid4()}"


def valid_storage_id(storage_id: str) -> bool:
    """True for a DS-<uuid> id (older ids are replaced at start-up, as HDFS does)."""
    if not storage_id.startswith("DS-"):
        return False
    try:
        uuid.UUID(storage_id[3:])
    except ValueError:
        return False
    return True


def _int(props: dict[str, str], key: str, where: str) -> int:
    try:
        return int(props[key])
    except KeyError:
        raise StorageError(f"{where} lacks the key {key}") from None
    except ValueError:
        raise StorageError(f"{where}: {key}={props[key]!r} is not an integer") from None


def _str(props: dict[str, str], key: str, where: str) -> str:
    value = props.get(key, "")
    if not value:
        raise StorageError(f"{where} lacks the key {key}")
    return value


def _check_layout(layout: int, where: str) -> None:
    if layout != DATANODE_LAYOUT_VERSION:
        raise StorageError(
            f"{where}: layoutVersion {layout} is not the supported DataNode layout "
            f"{DATANODE_LAYOUT_VERSION}"
        )


@dataclass(frozen=True)
class StorageInfo:
    """A data directory's current/VERSION."""

    storage_id: str
    cluster_id: str
    datanode_uuid: str
    ctime: int = 0
    layout_version: int = DATANODE_LAYOUT_VERSION

    def to_text(self) -> str:
        """The VERSION file's text, keys in HDFS's order."""
        return format_properties(
            [
                ("storageID", self.storage_id),
                ("clusterID", self.cluster_id),
                ("cTime", self.ctime),
                ("datanodeUuid", self.datanode_uuid),
                ("storageType", STORAGE_TYPE),
                ("layoutVersion", self.layout_version),
            ]
        )

    @classmethod
    def parse(cls, text: str, where: str) -> StorageInfo:
        """Parse a data directory's VERSION; raise naming `where` and the bad key."""
        props = parse_properties(text)
        kind = props.get("storageType", "")
        if kind != STORAGE_TYPE:
            raise StorageError(f"{where}: storageType is {kind!r}, expected {STORAGE_TYPE}")
        layout = _int(props, "layoutVersion", where)
        _check_layout(layout, where)
        return cls(
            storage_id=props.get("storageID", ""),
            cluster_id=_str(props, "clusterID", where),
            datanode_uuid=props.get("datanodeUuid", ""),
            ctime=_int(props, "cTime", where),
            layout_version=layout,
        )


def check_storage(
    info: StorageInfo, where: str, cluster_id: str, datanode_uuid: str | None
) -> None:
    """Refuse a data directory of another cluster or another DataNode, naming both ids."""
    if info.cluster_id != cluster_id:
        raise StorageError(
            f"{where} belongs to cluster {info.cluster_id}, not to this DataNode's cluster "
            f"{cluster_id}"
        )
    if datanode_uuid and info.datanode_uuid and info.datanode_uuid != datanode_uuid:
        raise StorageError(
            f"{where} belongs to DataNode {info.datanode_uuid}, not to this DataNode "
            f"{datanode_uuid}"
        )


@dataclass(frozen=True)
class BlockPoolInfo:
    """A block pool directory's current/VERSION (the NameNode's namespace info)."""

    namespace_id: int
    block_pool_id: str
    ctime: int = 0
    layout_version: int = DATANODE_LAYOUT_VERSION

    def to_text(self) -> str:
        """The VERSION file's text, keys in HDFS's order."""
        return format_properties(
            [
                ("namespaceID", self.namespace_id),
                ("cTime", self.ctime),
                ("blockpoolID", self.block_pool_id),
                ("layoutVersion", self.layout_version),
            ]
        )

    @classmethod
    def parse(cls, text: str, where: str) -> BlockPoolInfo:
        """Parse a block pool's VERSION; raise naming `where` and the bad key."""
        props = parse_properties(text)
        layout = _int(props, "layoutVersion", where)
        _check_layout(layout, where)
        return cls(
            namespace_id=_int(props, "namespaceID", where),
            block_pool_id=_str(props, "blockpoolID", where),
            ctime=_int(props, "cTime", where),
            layout_version=layout,
        )


def check_block_pool(info: BlockPoolInfo, where: str, want: BlockPoolInfo) -> None:
    """Refuse a block pool directory of another namespace or pool, naming both ids."""
    if info.block_pool_id != want.block_pool_id:
        raise StorageError(
            f"{where} holds block pool {info.block_pool_id}, not {want.block_pool_id}"
        )
    if info.namespace_id != want.namespace_id:
        raise StorageError(
            f"{where} belongs to namespace {info.namespace_id}, not to the NameNode's "
            f"namespace {want.namespace_id}"
        )
