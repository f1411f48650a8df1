"""A standby's DataNode messages about edits it has not applied yet (design §B.6).

HDFS's PendingDataNodeMessages, bounded: a report that would take the queue past its
bound is refused whole (PendingMessagesFullError), so the DataNode sends it again later.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass

from qjm.editlog.ops.types import Block
from qjm.namenode.blocks.errors import PendingMessagesFullError

MAX_PENDING_MESSAGES = 1_000_000


class ReplicaState(enum.IntEnum):
    """HdfsServerConstants.ReplicaState numbers."""

    FINALIZED = 0
    RBW = 1
    RWR = 2
    RUR = 3
    TEMPORARY = 4


@dataclass(frozen=True, slots=True)
class ReportedReplica:
    """One replica as a DataNode reports it: the block as it holds it and its state."""

    block: Block
    state: ReplicaState = ReplicaState.FINALIZED


@dataclass(frozen=True, slots=True)
class PendingMessage:
    """A queued report of one replica from one storage."""

    node_uuid: str
    storage_id: str
    replica: ReportedReplica


class PendingDataNodeMessages:
    """Queued reports by block id, in arrival order, with a bound (design §B.6)."""

    def __init__(self, limit: int = MAX_PENDING_MESSAGES) -> None:
        self.limit = limit
        self.by_block: dict[int, list[PendingMessage]] = {}
        self.count = 0
        self.refused = 0  # messages refused at the bound (a metric)

    def __len__(self) -> int:
        return self.count

    def check_room(self, n: int) -> None:
        """Raise PendingMessagesFullError unless n more messages fit."""
        if self.count + n > self.limit:
            self.refused += n
            raise PendingMessagesFullError(
                f"The standby has {self.count} queued DataNode messages and the bound is"
                f" {self.limit}; {n} more refused until its tailer catches up"
            )

    def enqueue(self, msg: PendingMessage) -> None:
        """Queue one message (check_room first)."""
        self.by_block.setdefault(msg.replica.block.block_id, []).append(msg)
        self.count += 1

    def take(self, block_id: int) -> list[PendingMessage]:
        """Remove and return the messages about block_id."""
        msgs = self.by_block.pop(block_id, [])
        self.count -= len(msgs)
        return msgs

    def take_all(self) -> list[PendingMessage]:
        """Remove and return every message, oldest block first."""
        out = [m for msgs in self.by_block.values() for m in msgs]
        self.by_block.clear()
        self.count = 0
        return out

    def drop(self, block_id: int, storage_id: str) -> None:
        """Forget what storage_id said about block_id (it reported the replica deleted)."""
        msgs = self.by_block.get(block_id)
        if not msgs:
            return
        keep = [m for m in msgs if m.storage_id != storage_id]
        self.count -= len(msgs) - len(keep)
        if keep:
            self.by_block[block_id] = keep
        else:
            del self.by_block[block_id]

    def drop_storage(self, storage_id: str) -> None:
        """Forget every message from storage_id (a full report or the node left)."""
        for bid in list(self.by_block):
            self.drop(bid, storage_id)

    def block_ids(self) -> Iterator[int]:
        """The block ids with queued messages."""
        return iter(list(self.by_block))
