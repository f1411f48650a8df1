"""What an fsimage holds, as plain values: namespace info, inodes and the directory tree."""

from __future__ import annotations

from dataclasses import dataclass, field

from qjm.editlog.ops.types import (
    AclEntry,
    Block,
    DelegationKey,
    DelegationTokenIdentifier,
    XAttr,
)

ROOT_INODE_ID = 16385  # INodeId.ROOT_INODE_ID
FILE, DIRECTORY, SYMLINK = "FILE", "DIRECTORY", "SYMLINK"
QUOTA_UNSET = -1
ROOT_NS_QUOTA = (1 << 63) - 1  # HDFS gives the root an "unlimited" namespace quota


@dataclass(frozen=True, slots=True)
class NameSystemInfo:
    """The NS_INFO section: namespace id, generation stamps, block ids and the txid."""

    namespace_id: int
    txid: int
    genstamp_v1: int = 1000
    genstamp_v2: int = 1000
    genstamp_v1_limit: int = 0
    last_allocated_block_id: int = 1 << 30  # HDFS's first sequential block id - 1
    rolling_upgrade_start_time: int | None = None
    last_allocated_striped_block_id: int | None = None


@dataclass(frozen=True, slots=True)
class Inode:
    """One file, directory or symlink, with the attributes HDFS keeps in the image."""

    id: int
    type: str
    name: str
    user: str
    group: str
    mode: int
    mtime: int = 0
    atime: int = 0
    replication: int = 0
    preferred_block_size: int = 0
    blocks: tuple[Block, ...] = ()
    ns_quota: int = QUOTA_UNSET
    ds_quota: int = QUOTA_UNSET
    target: str = ""
    client_name: str | None = None  # set while a file is under construction
    client_machine: str | None = None
    storage_policy_id: int = 0
    erasure_coding_policy_id: int | None = None  # set for striped files
    acls: tuple[AclEntry, ...] = ()
    xattrs: tuple[XAttr, ...] = ()
    type_quotas: tuple[tuple[str, int], ...] = ()

    @property
    def size(self) -> int:
        """Bytes in a file's blocks (0 for directories and symlinks)."""
        return sum(b.num_bytes for b in self.blocks)

    @property
    def is_dir(self) -> bool:
        """True for a directory."""
        return self.type == DIRECTORY


@dataclass(frozen=True, slots=True)
class EcPolicy:
    """An erasure-coding policy as the ERASURE_CODING section lists it."""

    id: int
    state: str = "ENABLED"
    name: str | None = None
    codec: str | None = None
    data_units: int | None = None
    parity_units: int | None = None
    cell_size: int | None = None
    options: tuple[tuple[str, str], ...] = ()


@dataclass(slots=True)
class ImageContents:
    """An in-memory namespace to write as an fsimage.

    Inodes list every inode once; `parents` maps each non-root inode id to its directory.
    """

    ns_info: NameSystemInfo
    inodes: list[Inode]
    parents: dict[int, int] = field(default_factory=dict)
    last_inode_id: int | None = None
    ec_policies: list[EcPolicy] = field(default_factory=list)
    snapshot_counter: int = 0
    secret_current_id: int = 0
    token_sequence_number: int = 0
    # the delegation token master keys, and the live tokens with their renew dates (S.10)
    delegation_keys: list[DelegationKey] = field(default_factory=list)
    delegation_tokens: list[tuple[DelegationTokenIdentifier, int]] = field(default_factory=list)
    next_cache_directive_id: int = 1


@dataclass(frozen=True, slots=True)
class SecretManagerImage:
    """SECRET_MANAGER: the key and token counters, the master keys and the live tokens with
    their renew dates (design §S.10)."""

    current_id: int
    sequence_number: int
    keys: tuple[DelegationKey, ...] = ()
    tokens: tuple[tuple[DelegationTokenIdentifier, int], ...] = ()
