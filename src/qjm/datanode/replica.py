"""ReplicaInfo: what the DataNode knows of one replica, in HDFS's replica states (design §B.1)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path

from qjm.datanode.layout import meta_length
from qjm.hdfs.checksum import DataChecksum


class ReplicaState(IntEnum):
    """HdfsServerConstants.ReplicaState, numbered as block reports carry it."""

    FINALIZED = 0
    RBW = 1  # being written
    RWR = 2  # waiting to be recovered (an RBW found at start-up)
    RUR = 3  # under recovery
    TEMPORARY = 4  # a transfer's copy, dropped at start-up


@dataclass
class ReplicaInfo:
    """One replica: its block, state, length and files (a copy when handed out)."""

    bpid: str
    block_id: int
    genstamp: int
    state: ReplicaState
    num_bytes: int  # bytes in the data file that its sums cover
    storage_id: str
    data_path: Path
    meta_path: Path
    checksum: DataChecksum
    bytes_acked: int = 0  # what the pipeline acknowledged (RBW); the visible length
    last_sum: bytes = field(default=b"", repr=False)  # the sum of the last chunk, kept in memory
    # under block recovery (design §B.16): the state before it began, and its recovery id
    original_state: ReplicaState | None = None
    recovery_id: int = 0

    @property
    def visible_length(self) -> int:
        """The bytes a reader may see: acknowledged bytes while written, else its length."""
        if self.state in (ReplicaState.RBW, ReplicaState.TEMPORARY):
            return min(self.bytes_acked, self.num_bytes)
        return self.num_bytes

    @property
    def bytes_on_disk(self) -> int:
        """Data and meta bytes the replica takes."""
        return self.num_bytes + meta_length(self.checksum, self.num_bytes)

    def describe(self) -> str:
        """blk_<id>_<gs> in <pool> (<state>, <n> bytes), for messages."""
        return (
            f"blk_{self.block_id}_{self.genstamp} of {self.bpid} "
            f"({self.state.name}, {self.num_bytes} bytes)"
        )
