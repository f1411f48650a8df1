"""Where replicas are, and what DataNodes must do about it: HDFS's BlockManager.

Pure state (design §B.5-§B.8): the server passes reports and heartbeats in and takes
commands out; time comes from the injected monotonic clock, randomness from an injected
random.Random. Commands are made only while the caller has said this NameNode is active.
"""

from __future__ import annotations

import enum
import random
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from qjm.editlog.ops.types import Block
from qjm.namenode.blocks import placement
from qjm.namenode.blocks.block_map import NO_STORAGE, BlockMap
from qjm.namenode.blocks.datanode_manager import (
    AdminState,
    DatanodeDescriptor,
    DatanodeManager,
    DatanodeRegistration,
    DatanodeStorageInfo,
    RegisterResult,
    StorageReport,
)
from qjm.namenode.blocks.errors import BlockStateError
from qjm.namenode.blocks.pending_messages import (
    PendingDataNodeMessages,
    PendingMessage,
    ReplicaState,
    ReportedReplica,
)
from qjm.namenode.blocks.report_columns import ReplicaColumns
from qjm.namenode.blocks.safe_mode import SafeMode, SafeModeCounts

MIN_REPLICATION = 1  # dfs.namenode.replication.min
MAX_REPLICATION_STREAMS = 2  # dfs.namenode.replication.max-streams
REPLICATION_STREAMS_HARD_LIMIT = 4  # dfs.namenode.replication.max-streams-hard-limit
INVALIDATE_LIMIT = 1000  # dfs.block.invalidate.limit
PENDING_RECONSTRUCTION_TIMEOUT_S = 300.0  # dfs.namenode.reconstruction.pending.timeout-sec

# DatanodeProtocol's action numbers.
DNA_TRANSFER = 1
DNA_INVALIDATE = 2
DNA_REGISTER = 4

# LowRedundancyBlocks' priorities.
QUEUE_HIGHEST_PRIORITY = 0
QUEUE_VERY_LOW_REDUNDANCY = 1
QUEUE_LOW_REDUNDANCY = 2
QUEUE_WITH_CORRUPT_BLOCKS = 4
LEVELS = 5


class BlockUCState(enum.IntEnum):
    """BlockUCState (the ones a replicated block passes through)."""

    COMPLETE = 0
    UNDER_CONSTRUCTION = 1
    COMMITTED = 3


class CorruptReason(enum.Enum):
    """CorruptReplicasMap.Reason."""

    GENSTAMP_MISMATCH = "GENSTAMP_MISMATCH"
    SIZE_MISMATCH = "SIZE_MISMATCH"
    INVALID_STATE = "INVALID_STATE"
    CORRUPTION_REPORTED = "CORRUPTION_REPORTED"  # its bytes failed their sums on a read


class ReceivedDeletedStatus(enum.Enum):
    """ReceivedDeletedBlockInfo.BlockStatus of an incremental report."""

    RECEIVING = 1
    RECEIVED = 2
    DELETED = 3


class NamespaceView(Protocol):
    """What the block layer asks of the namespace: how far its allocation has gone."""

    def current_generation_stamp(self) -> int:
        """The newest generation stamp the namespace has applied (GenerationStamp V2)."""
        ...

    def last_allocated_block_id(self) -> int:
        """The newest sequential block id the namespace has applied."""
        ...


@dataclass(frozen=True, slots=True)
class BlockInfo:
    """One block as the map holds it (a snapshot of its columns)."""

    block: Block
    replication: int
    state: BlockUCState
    locations: tuple[str, ...]  # storage ids of stored replicas (corrupt included)
    corrupt: tuple[str, ...]  # storage ids of corrupt replicas
    expected: tuple[str, ...]  # an under-construction block's pipeline storages


@dataclass(frozen=True, slots=True)
class TransferCommand:
    """DNA_TRANSFER: copy block from the receiving node to the targets."""

    block: Block
    targets: tuple[tuple[str, str], ...]  # (DataNode uuid, storage id)
    action: int = DNA_TRANSFER


@dataclass(frozen=True, slots=True)
class InvalidateCommand:
    """DNA_INVALIDATE: delete these replicas."""

    blocks: tuple[Block, ...]
    action: int = DNA_INVALIDATE


@dataclass(frozen=True, slots=True)
class RegisterCommand:
    """DNA_REGISTER: the node must register again."""

    action: int = DNA_REGISTER


Command = TransferCommand | InvalidateCommand | RegisterCommand


@dataclass(frozen=True, slots=True)
class FsStats:
    """getFsStats' figures."""

    capacity: int
    used: int
    remaining: int
    under_replicated: int
    corrupt_blocks: int
    missing_blocks: int
    missing_repl_one_blocks: int
    pending_deletion: int


def check_replica_corrupt(
    stored: BlockUCState, stored_gs: int, stored_len: int, reported: ReportedReplica
) -> CorruptReason | None:
    """Why a reported replica is corrupt against the stored block, or None (design §B.5)."""
    gs, length = reported.block.genstamp, reported.block.num_bytes
    if reported.state is ReplicaState.FINALIZED:
        if stored in (BlockUCState.COMPLETE, BlockUCState.COMMITTED):
            if stored_gs != gs:
                return CorruptReason.GENSTAMP_MISMATCH
            if stored_len != length:
                return CorruptReason.SIZE_MISMATCH
            return None
        return CorruptReason.GENSTAMP_MISMATCH if stored_gs > gs else None
    if reported.state in (ReplicaState.RBW, ReplicaState.RWR):
        if stored is not BlockUCState.COMPLETE:
            return CorruptReason.GENSTAMP_MISMATCH if stored_gs > gs else None
        if stored_gs != gs:
            return CorruptReason.GENSTAMP_MISMATCH
        # An RBW of a complete block: the report raced the pipeline's close (HDFS-2791).
        return None if reported.state is ReplicaState.RBW else CorruptReason.INVALID_STATE
    return CorruptReason.INVALID_STATE  # RUR and TEMPORARY are never reported


def redundancy_priority(live: int, expected: int) -> int | None:
    """The under-replication queue for a block with live of expected replicas, or None."""
    if live >= expected:
        return None
    if live == 0:
        return QUEUE_WITH_CORRUPT_BLOCKS
    if live == 1:
        return QUEUE_HIGHEST_PRIORITY
    if live * 3 < expected:
        return QUEUE_VERY_LOW_REDUNDANCY
    return QUEUE_LOW_REDUNDANCY


def redundancy_priorities(
    live: npt.NDArray[np.int64], expected: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """redundancy_priority of each (live, expected) pair, -1 for none."""
    return np.select(
        [live >= expected, live == 0, live == 1, live * 3 < expected],
        [-1, QUEUE_WITH_CORRUPT_BLOCKS, QUEUE_HIGHEST_PRIORITY, QUEUE_VERY_LOW_REDUNDANCY],
        QUEUE_LOW_REDUNDANCY,
    ).astype(np.int64)


def _has_duplicates(ids: npt.NDArray[np.int64]) -> bool:
    srt = np.sort(ids)
    return bool(np.any(srt[1:] == srt[:-1]))


def _ids_of(keys: Iterable[int], n: int) -> npt.NDArray[np.int64]:
    return np.fromiter(keys, dtype=np.int64, count=n)


class BlockManager:
    """The block map, replica reports, redundancy queues and DataNode commands."""

    def __init__(
        self,
        namespace: NamespaceView,
        clock: Callable[[], float],
        rng: random.Random,
        *,
        datanodes: DatanodeManager | None = None,
        safe_mode: SafeMode | None = None,
        min_replication: int = MIN_REPLICATION,
        block_size: int = 128 << 20,
        pending_limit: int | None = None,
        invalidate_limit: int = INVALIDATE_LIMIT,
        max_streams: int = MAX_REPLICATION_STREAMS,
        streams_hard_limit: int = REPLICATION_STREAMS_HARD_LIMIT,
    ) -> None:
        self.ns = namespace
        # copies a DataNode is the source of at once: for the highest priority, for others
        self.max_streams, self.streams_hard_limit = max_streams, streams_hard_limit
        self.clock = clock
        self.rng = rng
        self.dm = datanodes or DatanodeManager(clock)
        self.safe_mode = safe_mode or SafeMode()
        self.min_replication = min_replication
        self.block_size = block_size
        self.invalidate_limit = invalidate_limit
        self.map = BlockMap()
        self.pending = (
            PendingDataNodeMessages(pending_limit)
            if pending_limit is not None
            else PendingDataNodeMessages()
        )
        self.active = False
        self.expected: dict[int, tuple[int, ...]] = {}  # UC block id -> storage indexes
        self.corrupt: dict[int, dict[int, CorruptReason]] = {}
        self.queues: list[dict[int, None]] = [{} for _ in range(LEVELS)]
        self.queue_of: dict[int, int] = {}
        self.postponed: set[int] = set()  # over-replicated or corrupt, waiting on reports
        self.invalidates: dict[str, dict[int, Block]] = {}  # node uuid -> blocks to delete
        self.transfers: dict[str, list[TransferCommand]] = {}
        self.in_flight: dict[int, tuple[float, set[str]]] = {}  # block -> deadline, targets
        # storages of decommissioning and decommissioned nodes: their replicas are kept and
        # may be copied from, but do not count toward a block's replication (design §B.20)
        self.out_of_service: set[int] = set()
        self.complete_total = 0
        self.complete_safe = 0
        self.metrics: Counter[str] = Counter()

    # -- views --------------------------------------------------------------------------

    def _storage_id(self, idx: int) -> str:
        return self.dm.storages[idx].storage_id

    def block_info(self, block_id: int) -> BlockInfo | None:
        """The block's state and replicas, or None if the map does not hold it."""
        m, s = self.map, self.map.find(block_id)
        if s < 0:
            return None
        corrupt = self.corrupt.get(block_id, {})
        return BlockInfo(
            block=Block(block_id, m.nbytes[s], m.gs[s]),
            replication=m.repl[s],
            state=BlockUCState(m.state[s]),
            locations=tuple(self._storage_id(i) for i in m.locations(s)),
            corrupt=tuple(self._storage_id(i) for i in corrupt),
            expected=tuple(self._storage_id(i) for i in self.expected.get(block_id, ())),
        )

    def blocks_on(self, node: DatanodeDescriptor) -> int:
        """How many replicas the node's storages hold (a scan of the map: for reports)."""
        return sum(int(self.map.storage_slots(st.index).size) for st in node.storages.values())

    def live_replicas(self, block_id: int) -> int:
        """Stored replicas of the block that are not corrupt."""
        s = self.map.find(block_id)
        return 0 if s < 0 else self._live(s)

    def _live(self, slot: int) -> int:
        locs = self.map.locations(slot)
        bad = self.corrupt.get(self.map.ids[slot])
        return len(locs) if not bad else sum(1 for i in locs if i not in bad)

    def _in_service(self, slot: int) -> int:
        """Replicas that count toward replication: live, on nodes not decommissioning."""
        oos = self.out_of_service
        if not oos:
            return self._live(slot)
        bad = self.corrupt.get(self.map.ids[slot]) or {}
        return sum(1 for i in self.map.locations(slot) if i not in oos and i not in bad)

    def locations(self, block_id: int) -> list[tuple[DatanodeDescriptor, DatanodeStorageInfo]]:
        """Where a client reads the block: live replicas (all, when every one is corrupt), or
        an UC block's pipeline."""
        s = self.map.find(block_id)
        if s < 0:
            return []
        bad = self.corrupt.get(block_id, {})
        idxs = [i for i in self.map.locations(s) if i not in bad]
        if not idxs:  # every replica corrupt: readers still get them, as HDFS's (design §B.5)
            idxs = list(self.map.locations(s))
        if self.map.state[s] == BlockUCState.UNDER_CONSTRUCTION:
            idxs += [i for i in self.expected.get(block_id, ()) if i not in idxs]
        if self.out_of_service:  # decommissioning nodes last, as HDFS sorts them
            idxs.sort(key=lambda i: i in self.out_of_service)
        out = []
        for i in idxs:
            node = self.dm.node_of_storage(i)
            if node is not None and node.alive:
                out.append((node, self.dm.storages[i]))
        return out

    def safe_mode_counts(self) -> SafeModeCounts:
        """The counts safe mode decides on."""
        return SafeModeCounts(self.complete_safe, self.complete_total, len(self.dm.live_nodes()))

    def check_safe_mode(self) -> bool:
        """Advance start-up safe mode; returns whether it is still on (design §B.8)."""
        return self.safe_mode.check(self.safe_mode_counts(), self.clock()) is not (
            self.safe_mode.status.OFF
        )

    def safe_mode_tip(self) -> str:
        """HDFS's safe mode status line."""
        return self.safe_mode.tip(self.safe_mode_counts(), self.clock())

    def fs_stats(self) -> FsStats:
        """getFsStats: live capacity and the block manager's counts."""
        t = self.dm.totals()
        missing = self.queues[QUEUE_WITH_CORRUPT_BLOCKS]
        repl_one = sum(1 for b in missing if self.map.repl[self.map.find(b)] == 1)
        return FsStats(
            capacity=t.capacity,
            used=t.dfs_used,
            remaining=t.remaining,
            under_replicated=len(self.queue_of),
            corrupt_blocks=len(self.corrupt),
            missing_blocks=len(missing),
            missing_repl_one_blocks=repl_one,
            pending_deletion=sum(len(v) for v in self.invalidates.values()),
        )

    def _commanding(self) -> bool:
        return self.active and not self.safe_mode.is_on

    # -- accounting ---------------------------------------------------------------------

    def _safe(self, slot: int) -> int:
        if self.map.state[slot] != BlockUCState.COMPLETE:
            return 0
        return 1 if self._live(slot) >= self.min_replication else 0

    def _set_state(self, slot: int, state: BlockUCState) -> None:
        was = self.map.state[slot] == BlockUCState.COMPLETE
        self.map.state[slot] = state
        now = state is BlockUCState.COMPLETE
        self.complete_total += int(now) - int(was)

    def _requeue(self, block_id: int, slot: int) -> None:
        """Put the block in the under-replication queue its counts call for, or none."""
        old = self.queue_of.pop(block_id, None)
        if old is not None:
            del self.queues[old][block_id]
            # A dict keeps its table when emptied: a queue that drained gives it back.
            if not self.queues[old]:
                self.queues[old] = {}
            if not self.queue_of:
                self.queue_of = {}
        if slot < 0 or self.map.state[slot] != BlockUCState.COMPLETE:
            return
        prio = redundancy_priority(self._in_service(slot), self.map.repl[slot])
        if prio == QUEUE_WITH_CORRUPT_BLOCKS and self.out_of_service and self._live(slot):
            prio = QUEUE_HIGHEST_PRIORITY  # only decommissioning nodes hold it: copy it first
        if prio is not None:
            self.queues[prio][block_id] = None
            self.queue_of[block_id] = prio

    def _requeue_many(self, block_ids: npt.NDArray[np.int64], prios: npt.NDArray[np.int64]) -> None:
        """_requeue of complete blocks whose priority (-1: none) is known, in order."""
        keys = block_ids.tolist()
        qo, qs = self.queue_of, self.queues
        if qo:
            for bid in keys:
                old = qo.pop(bid, None)
                if old is not None:
                    del qs[old][bid]
        for prio in range(LEVELS):
            sel = block_ids[prios == prio].tolist()
            if sel:
                qs[prio].update(dict.fromkeys(sel))
                qo.update(dict.fromkeys(sel, prio))
        # A dict keeps its table when emptied: a queue that drained gives it back.
        for prio in range(LEVELS):
            if not qs[prio]:
                qs[prio] = {}
        if not qo:
            self.queue_of = {}

    def _changed(self, slot: int, safe_before: int) -> None:
        """After a block's replicas or state changed: safe count, queues, deletions."""
        bid = self.map.ids[slot]
        self.complete_safe += self._safe(slot) - safe_before
        if self.map.state[slot] == BlockUCState.COMMITTED and (
            self._live(slot) >= self.min_replication
        ):
            self._set_state(slot, BlockUCState.COMPLETE)
            self.complete_safe += self._safe(slot)
        self._requeue(bid, slot)
        self._check_excess(slot)

    # -- the namespace's calls (the one apply path) --------------------------------------

    def add_block(self, block: Block, replication: int, expected: Sequence[str] = ()) -> None:
        """A new last block of a file being written (OP_ADD_BLOCK): under construction."""
        if self.map.find(block.block_id) >= 0:
            raise BlockStateError(f"Block {block.block_id} is already in the block map")
        self.map.insert(
            block.block_id,
            block.num_bytes,
            block.genstamp,
            max(1, min(replication, 0xFFFF)),
            BlockUCState.UNDER_CONSTRUCTION,
        )
        self.expected[block.block_id] = tuple(
            self.dm.storage_index[s] for s in expected if s in self.dm.storage_index
        )

    def update_block(self, block: Block) -> None:
        """New length or generation stamp of a block (OP_UPDATE_BLOCKS, pipeline update)."""
        s = self._slot(block.block_id)
        self.map.nbytes[s], self.map.gs[s] = block.num_bytes, block.genstamp

    def commit_block(self, block: Block) -> BlockUCState:
        """The client's length for the last block (commitBlock); completes it if it can."""
        s = self._slot(block.block_id)
        if self.map.state[s] != BlockUCState.UNDER_CONSTRUCTION:
            return BlockUCState(self.map.state[s])
        if self.map.gs[s] != block.genstamp:
            raise BlockStateError(
                f"Commit block with mismatching GS. NN has blk_{block.block_id}_"
                f"{self.map.gs[s]}, client submits blk_{block.block_id}_{block.genstamp}"
            )
        before = self._safe(s)
        self.map.nbytes[s] = block.num_bytes
        self._set_state(s, BlockUCState.COMMITTED)
        self.expected.pop(block.block_id, None)
        self._changed(s, before)
        return BlockUCState(self.map.state[s])

    def force_complete(self, block: Block) -> None:
        """Complete a block whatever its replicas (replaying OP_CLOSE on a standby)."""
        s = self._slot(block.block_id)
        before = self._safe(s)
        self.map.nbytes[s], self.map.gs[s] = block.num_bytes, block.genstamp
        self._set_state(s, BlockUCState.COMPLETE)
        self.expected.pop(block.block_id, None)
        self.complete_safe -= before  # _changed adds the block's new safe state
        self._changed(s, 0)

    def load_blocks(
        self,
        ids: npt.NDArray[np.int64],
        nbytes: npt.NDArray[np.int64],
        gs: npt.NDArray[np.int64],
        replication: npt.NDArray[np.int64],
        complete: npt.NDArray[np.bool_],
    ) -> None:
        """Add many blocks at once, each as add_block and then, where complete says so,
        force_complete would (an image load, design §B.14)."""
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        complete = np.asarray(complete, dtype=bool)
        repl = np.clip(np.asarray(replication, dtype=np.int64), 1, 0xFFFF)
        state = np.where(complete, BlockUCState.COMPLETE, BlockUCState.UNDER_CONSTRUCTION)
        try:
            self.map.insert_many(ids, nbytes, gs, repl, state.astype(np.uint8))
        except KeyError as e:
            raise BlockStateError(f"Cannot load the blocks: {e.args[0]}") from None
        done = ids[complete]
        if self.expected:
            old = _ids_of(self.expected, len(self.expected))
            for bid in old[np.isin(old, done)].tolist():
                del self.expected[bid]
        self.expected.update(dict.fromkeys(ids[~complete].tolist(), ()))
        self.complete_total += len(done)
        if self.min_replication <= 0:
            self.complete_safe += len(done)
        self._requeue_many(done, redundancy_priorities(np.zeros_like(done), repl[complete]))
        if self.active and self.postponed:
            self.postponed.difference_update(done.tolist())

    def reopen_block(self, block: Block) -> None:
        """A closed file's last block written again (append): under construction, its
        stored replicas the expected pipeline (HDFS's convertLastBlockToUnderConstruction)."""
        s = self._slot(block.block_id)
        if self.map.state[s] == BlockUCState.UNDER_CONSTRUCTION:
            return
        self.complete_safe -= self._safe(s)
        self._set_state(s, BlockUCState.UNDER_CONSTRUCTION)
        self.expected[block.block_id] = tuple(self.map.locations(s))
        self._requeue(block.block_id, s)
        self.postponed.discard(block.block_id)

    def adopt_replicas(self, old: BlockManager) -> int:
        """Take the replicas old knew of for blocks this map holds with the same generation
        stamp (a namespace reloaded beside the same DataNodes, design §B.14); how many."""
        self.out_of_service = set(old.out_of_service)  # the nodes' admin states stay
        taken = 0
        for os_ in old.map.slots():
            bid = old.map.ids[os_]
            s = self.map.find(bid)
            if s < 0 or self.map.gs[s] != old.map.gs[os_]:
                continue
            before = self._safe(s)
            added = False
            for i in old.map.locations(os_):
                if old.corrupt.get(bid, {}).get(i) is None and self.map.add_location(s, i):
                    added = True
                    taken += 1
            if added:
                self._changed(s, before)
        return taken

    def set_replication(self, block_ids: Iterable[int], replication: int) -> None:
        """A file's new replication (setReplication): its blocks are checked again."""
        for bid in block_ids:
            s = self._slot(bid)
            before = self._safe(s)
            self.map.repl[s] = max(1, min(replication, 0xFFFF))
            self._changed(s, before)

    def remove_blocks(self, block_ids: Iterable[int]) -> None:
        """Blocks of deleted files leave the map; their replicas are queued for deletion."""
        for bid in block_ids:
            s = self.map.find(bid)
            if s < 0:
                continue
            block = Block(bid, self.map.nbytes[s], self.map.gs[s])
            self.complete_safe -= self._safe(s)
            self._set_state(s, BlockUCState.UNDER_CONSTRUCTION)
            for i in self.map.locations(s):
                node = self.dm.node_of_storage(i)
                if node is not None and self.active:
                    self.invalidates.setdefault(node.uuid, {})[bid] = block
            self.map.delete(s)
            self._requeue(bid, -1)
            self.expected.pop(bid, None)
            self.corrupt.pop(bid, None)
            self.postponed.discard(bid)
            self.in_flight.pop(bid, None)

    def _slot(self, block_id: int) -> int:
        s = self.map.find(block_id)
        if s < 0:
            raise BlockStateError(f"Block {block_id} is not in the block map")
        return s

    # -- DataNodes ---------------------------------------------------------------------

    def register_datanode(self, reg: DatanodeRegistration) -> RegisterResult:
        """registerDatanode; a node wiped by it loses its replicas (design §B.5)."""
        old = [self.dm.nodes[u] for u in self._uuid_at(reg) if u in self.dm.nodes]
        result = self.dm.register(reg)
        for node in old:
            self._remove_node_replicas(node)
        return result

    # -- decommission (design §B.20) -----------------------------------------------------

    def start_decommission(self, node: DatanodeDescriptor) -> bool:
        """Begin moving a node's replicas elsewhere; False if it already is (or is done)."""
        if node.admin_state is not AdminState.NORMAL:
            return False
        node.admin_state = AdminState.DECOMMISSION_INPROGRESS
        self._sync_out_of_service(node)
        self.metrics["decommissions_started"] += 1
        return True

    def stop_decommission(self, node: DatanodeDescriptor) -> bool:
        """Back in service (taken off the exclude list); False if it was in service."""
        if node.admin_state is AdminState.NORMAL:
            return False
        node.admin_state = AdminState.NORMAL
        self._sync_out_of_service(node)
        return True

    def _sync_out_of_service(self, node: DatanodeDescriptor) -> None:
        """Make out_of_service match the node's admin state; requeue what it holds."""
        out = node.admin_state is not AdminState.NORMAL
        changed = False
        for st in node.storages.values():
            if out != (st.index in self.out_of_service):
                changed = True
                (self.out_of_service.add if out else self.out_of_service.discard)(st.index)
        if not changed:
            return
        for st in node.storages.values():
            for slot in self.map.slots_on_storage(st.index):
                self._requeue(self.map.ids[slot], slot)
                self._check_excess(slot)

    def check_decommission(self) -> list[str]:
        """Nodes whose every block now has its replication on nodes in service become
        DECOMMISSIONED; returns their uuids (HDFS's DatanodeAdminManager)."""
        done = []
        for node in self.dm.nodes.values():
            if node.admin_state is not AdminState.DECOMMISSION_INPROGRESS or not node.alive:
                continue
            if all(
                self.map.state[slot] == BlockUCState.COMPLETE
                and self._in_service(slot) >= self.map.repl[slot]
                for st in node.storages.values()
                for slot in self.map.slots_on_storage(st.index)
            ):
                node.admin_state = AdminState.DECOMMISSIONED
                done.append(node.uuid)
                self.metrics["decommissions_done"] += 1
        return done

    def _uuid_at(self, reg: DatanodeRegistration) -> list[str]:
        u = self.dm.by_xfer.get(reg.xfer_addr)
        return [u] if u is not None and u != reg.uuid else []

    def heartbeat(
        self, uuid: str, reports: Iterable[StorageReport], xceiver_count: int = 0
    ) -> list[Command]:
        """sendHeartbeat: record it and return the node's commands (only when active)."""
        decision = self.dm.heartbeat(uuid, reports, xceiver_count)
        if decision.register:
            return [RegisterCommand()]
        for st in decision.newly_failed:
            self.metrics["failed_storages"] += 1
            self._remove_storage_replicas(st)
        node = self.dm.nodes.get(uuid)
        if node is not None and node.admin_state is not AdminState.NORMAL:
            self._sync_out_of_service(node)  # a storage it reported for the first time
        if not self._commanding():
            return []
        out: list[Command] = []
        for cmd in self.transfers.pop(uuid, []):
            out.append(cmd)
        inv = self.invalidates.get(uuid)
        if inv:
            batch = list(inv)[: self.invalidate_limit]
            out.append(InvalidateCommand(tuple(inv.pop(b) for b in batch)))
            if not inv:
                del self.invalidates[uuid]
        return out

    def check_heartbeats(self) -> list[str]:
        """Mark expired nodes dead; their replicas leave the map. Returns their uuids."""
        dead = self.dm.expire_dead()
        for node in dead:
            self._remove_node_replicas(node)
        return [n.uuid for n in dead]

    def _remove_storage_replicas(self, st: DatanodeStorageInfo) -> None:
        """A storage failed (its volume's disk) or its node died: none of its replicas
        count any more, and their blocks are queued to be copied (design §B.19)."""
        for s in self.map.slots_on_storage(st.index):
            self._remove_replica(s, st.index)
        self.pending.drop_storage(st.storage_id)

    def _remove_node_replicas(self, node: DatanodeDescriptor) -> None:
        for st in node.storages.values():
            self._remove_storage_replicas(st)
        self.invalidates.pop(node.uuid, None)
        self.transfers.pop(node.uuid, None)
        self._forget_target(node.uuid)
        for bid in self.expected:
            if any(self.dm.storages[i].node_uuid == node.uuid for i in self.expected[bid]):
                self.expected[bid] = tuple(
                    i for i in self.expected[bid] if self.dm.storages[i].node_uuid != node.uuid
                )

    def _forget_target(self, uuid: str) -> None:
        """A dead node will never receive the copies in flight to it: they stop counting, so
        the blocks are scheduled again now, not when their 5 minutes run out (design §B.5)."""
        for bid, (deadline, targets) in list(self.in_flight.items()):
            if uuid in targets:
                if len(targets) == 1:
                    del self.in_flight[bid]
                else:
                    self.in_flight[bid] = (deadline, targets - {uuid})

    def _remove_replica(self, slot: int, storage: int) -> None:
        before = self._safe(slot)
        if not self.map.remove_location(slot, storage):
            return
        bid = self.map.ids[slot]
        bad = self.corrupt.get(bid)
        if bad is not None:
            bad.pop(storage, None)
            if not bad:
                del self.corrupt[bid]
        self._changed(slot, before)

    # -- reports -----------------------------------------------------------------------

    def _reporting(
        self, uuid: str, storage_id: str
    ) -> tuple[DatanodeDescriptor, DatanodeStorageInfo]:
        node = self.dm.get_registered(uuid)
        return node, self.dm.storage_of(node, storage_id)

    def _from_future(self, r: ReportedReplica) -> bool:
        """Whether a standby must wait for edits before it can judge r (design §B.6)."""
        b = r.block
        s = self.map.find(b.block_id)
        if s >= 0:
            return b.genstamp > self.map.gs[s]
        return (
            b.genstamp > self.ns.current_generation_stamp()
            or b.block_id > self.ns.last_allocated_block_id()
        )

    def process_report(
        self,
        uuid: str,
        storage_id: str,
        replicas: Sequence[ReportedReplica] | ReplicaColumns,
    ) -> None:
        """A full block report of one storage: the map follows it (design §B.5).

        The common cases (a good finalized replica of a complete block, new on the storage
        or already there) are taken for the whole report at once on the map's columns;
        every other replica goes through the per-replica rules, with the same result.
        """
        cols = (
            replicas
            if isinstance(replicas, ReplicaColumns)
            else ReplicaColumns.from_replicas(replicas)
        )
        node, st = self._reporting(uuid, storage_id)
        if _has_duplicates(cols.ids):
            self._process_report_each(node, st, cols.replicas())
        else:
            self._process_report_columns(node, st, cols)
        st.block_report_count += 1
        st.last_block_report_ms = int(time.time() * 1000)
        self.metrics["block_reports"] += 1
        if self.active and st.block_contents_stale:
            st.block_contents_stale = False
            self._rescan_postponed()

    def _process_report_each(
        self,
        node: DatanodeDescriptor,
        st: DatanodeStorageInfo,
        replicas: Sequence[ReportedReplica],
    ) -> None:
        """The full report one replica at a time (the rules as written, design §B.5)."""
        queue = [] if self.active else [r for r in replicas if self._from_future(r)]
        self.pending.check_room(len(queue))
        self.pending.drop_storage(st.storage_id)  # this report supersedes what was queued
        for r in queue:
            self.pending.enqueue(PendingMessage(node.uuid, st.storage_id, r))
        queued = {id(r) for r in queue}
        reported: set[int] = set()
        for r in replicas:
            reported.add(r.block.block_id)
            if id(r) not in queued:
                self._process_reported(node, st, r, may_delete_unknown=True)
        for s in self.map.slots_on_storage(st.index):
            if self.map.ids[s] not in reported:
                self._remove_replica(s, st.index)

    def _process_report_columns(
        self, node: DatanodeDescriptor, st: DatanodeStorageInfo, cols: ReplicaColumns
    ) -> None:
        """The full report with the common cases in bulk; the result of the per-replica
        rules for a report without duplicate ids (design §B.5)."""
        ids, nbytes, gs, states = cols.ids, cols.nbytes, cols.gs, cols.states
        _m_ids, m_nb, m_gs, m_repl, m_state, l0, l1, l2 = self.map.columns()
        slots = self.map.find_many(ids)
        found = slots >= 0
        at = np.where(found, slots, 0)
        if self.active:
            queued = np.zeros(len(ids), dtype=bool)
        else:  # replicas a standby must wait for edits to judge (_from_future)
            queued = np.where(
                found,
                gs > m_gs[at],
                (gs > self.ns.current_generation_stamp())
                | (ids > self.ns.last_allocated_block_id()),
            )
        q_idx = np.flatnonzero(queued).tolist()
        self.pending.check_room(len(q_idx))
        self.pending.drop_storage(st.storage_id)  # this report supersedes what was queued
        for i in q_idx:
            self.pending.enqueue(PendingMessage(node.uuid, st.storage_id, cols.replica(i)))
        # The common case: a good finalized replica of a complete block without corrupt
        # replicas, fewer than four replicas, and no deletion of this node's pending.
        common = (
            found
            & ~queued
            & (states == ReplicaState.FINALIZED)
            & (m_state[at] == BlockUCState.COMPLETE)
            & (m_gs[at] == gs)
            & (m_nb[at] == nbytes)
        )
        for keys in (self.invalidates.get(node.uuid), self.corrupt, self.map.extra):
            if keys:
                common &= ~np.isin(ids, _ids_of(keys, len(keys)))
        c_idx = np.flatnonzero(common)
        cs = slots[c_idx]
        a0, a1, a2 = l0[cs], l1[cs], l2[cs]
        here = (a0 == st.index) | (a1 == st.index) | (a2 == st.index)
        live = (a0 >= 0).astype(np.int64) + (a1 >= 0) + (a2 >= 0)
        add = ~here & (live < 3)
        if self.active:  # one more replica than wanted: an excess deletion to choose
            add &= live < m_repl[cs]
        self._add_replicas(cs[add], st.index, live[add])
        rest = ~queued
        rest[c_idx[here | add]] = False
        for i in np.flatnonzero(rest).tolist():
            self._process_reported(node, st, cols.replica(i), may_delete_unknown=True)
        gone = np.setdiff1d(self.map.storage_slots(st.index), slots[found], assume_unique=True)
        for s in gone.tolist():
            self._remove_replica(s, st.index)

    def _add_replicas(
        self, slots: npt.NDArray[np.int64], storage: int, live: npt.NDArray[np.int64]
    ) -> None:
        """A new good replica on storage of each complete block at slots (no corrupt or
        fourth replica among them), live its replicas before: _process_reported in bulk."""
        if not len(slots):
            return
        m_ids, _, _, m_repl, _, *locs = self.map.columns()
        rest = slots
        for col in locs:
            free = col[rest] == NO_STORAGE
            col[rest[free]] = storage
            rest = rest[~free]
        now = live + 1
        mr = self.min_replication
        self.complete_safe += int(np.count_nonzero(now >= mr)) - int(np.count_nonzero(live >= mr))
        bids = m_ids[slots]
        self._requeue_many(bids, redundancy_priorities(now, m_repl[slots].astype(np.int64)))
        if self.out_of_service:  # counts above include decommissioning replicas
            for bid, slot in zip(bids.tolist(), slots.tolist(), strict=True):
                self._requeue(bid, slot)
        if self.active and self.postponed:  # at most as many replicas as wanted now
            self.postponed.difference_update(bids.tolist())

    def process_incremental(
        self,
        uuid: str,
        storage_id: str,
        items: Sequence[tuple[ReceivedDeletedStatus, Block]],
    ) -> None:
        """blockReceivedAndDeleted: RECEIVING, RECEIVED and DELETED replicas (design §B.5)."""
        node, st = self._reporting(uuid, storage_id)
        todo: list[tuple[ReceivedDeletedStatus, ReportedReplica]] = []
        for status, b in items:
            if status is ReceivedDeletedStatus.DELETED:
                todo.append((status, ReportedReplica(b)))
            else:
                state = (
                    ReplicaState.RBW
                    if status is ReceivedDeletedStatus.RECEIVING
                    else ReplicaState.FINALIZED
                )
                todo.append((status, ReportedReplica(b, state)))
        queue = (
            []
            if self.active
            else [
                r
                for status, r in todo
                if status is not ReceivedDeletedStatus.DELETED and self._from_future(r)
            ]
        )
        self.pending.check_room(len(queue))
        queued = {id(r) for r in queue}
        for status, r in todo:
            bid = r.block.block_id
            if status is ReceivedDeletedStatus.DELETED:
                self.pending.drop(bid, storage_id)
                inv = self.invalidates.get(uuid)
                if inv is not None:
                    inv.pop(bid, None)
                s = self.map.find(bid)
                if s >= 0:
                    self._remove_replica(s, st.index)
            elif id(r) in queued:
                self.pending.enqueue(PendingMessage(uuid, storage_id, r))
            else:
                if status is ReceivedDeletedStatus.RECEIVED:
                    node.blocks_scheduled = max(0, node.blocks_scheduled - 1)
                    flight = self.in_flight.get(bid)
                    if flight is not None:
                        flight[1].discard(uuid)
                        if not flight[1]:
                            del self.in_flight[bid]
                self._process_reported(node, st, r, may_delete_unknown=not st.block_contents_stale)
        self.metrics["incremental_reports"] += 1

    def _process_reported(
        self,
        node: DatanodeDescriptor,
        st: DatanodeStorageInfo,
        r: ReportedReplica,
        *,
        may_delete_unknown: bool,
    ) -> None:
        b = r.block
        s = self.map.find(b.block_id)
        if s < 0:
            # No file has this block (deleted, or never written): delete the replica.
            if self.active and may_delete_unknown:
                self.invalidates.setdefault(node.uuid, {})[b.block_id] = b
                self.metrics["invalidated_unknown"] += 1
            else:
                self.metrics["unknown_kept"] += 1
            return
        if b.block_id in self.invalidates.get(node.uuid, {}):
            return  # already being deleted there
        state = BlockUCState(self.map.state[s])
        reason = check_replica_corrupt(state, self.map.gs[s], self.map.nbytes[s], r)
        if reason is not None:
            self._mark_corrupt(s, st.index, reason)
            return
        if state is BlockUCState.UNDER_CONSTRUCTION:
            exp = self.expected.get(b.block_id, ())
            if st.index not in exp:
                self.expected[b.block_id] = (*exp, st.index)
            if r.state is not ReplicaState.FINALIZED:
                return
        elif r.state is not ReplicaState.FINALIZED:
            return
        bad = self.corrupt.get(b.block_id)
        if bad is not None and bad.get(st.index) is CorruptReason.CORRUPTION_REPORTED:
            return  # a report cannot tell damaged bytes: corrupt until it is deleted
        before = self._safe(s)
        added = self.map.add_location(s, st.index)
        if bad is not None and st.index in bad:
            del bad[st.index]  # it was corrupt and is good now
            if not bad:
                del self.corrupt[b.block_id]
            added = True
        if added:
            self._changed(s, before)

    def mark_reported_corrupt(
        self, block_id: int, genstamp: int, node_uuid: str, storage_id: str = ""
    ) -> bool:
        """A replica a reader or its DataNode found damaged (reportBadBlocks): corrupt, so
        reads avoid it, a good copy is made and then it is deleted (design §B.5). Only a
        replica the node is known to hold is marked; whether one was."""
        s = self.map.find(block_id)
        node = self.dm.nodes.get(node_uuid)
        if s < 0 or node is None:
            self.metrics["bad_block_reports_ignored"] += 1
            return False
        held = [
            st.index
            for st in node.storages.values()
            if (not storage_id or st.storage_id == storage_id) and st.index in self.map.locations(s)
        ]
        if not held:
            self.metrics["bad_block_reports_ignored"] += 1
            return False
        reason = (
            CorruptReason.CORRUPTION_REPORTED
            if genstamp == self.map.gs[s]
            else CorruptReason.GENSTAMP_MISMATCH
        )
        for index in held:
            self._mark_corrupt(s, index, reason)
        return True

    def _mark_corrupt(self, slot: int, storage: int, reason: CorruptReason) -> None:
        bid = self.map.ids[slot]
        before = self._safe(slot)
        self.map.add_location(slot, storage)
        self.corrupt.setdefault(bid, {})[storage] = reason
        self.metrics["corrupt_replicas"] += 1
        self._changed(slot, before)

    # -- deletions: excess and corrupt replicas (design §B.6) --------------------------

    def _stale_replicas(self, slot: int) -> bool:
        return any(self.dm.storages[i].block_contents_stale for i in self.map.locations(slot))

    def _check_excess(self, slot: int) -> None:
        """Delete corrupt replicas once enough are live, and replicas beyond replication."""
        bid = self.map.ids[slot]
        if not self.active or self.map.state[slot] != BlockUCState.COMPLETE:
            return
        live, want = self._in_service(slot), self.map.repl[slot]
        bad = self.corrupt.get(bid)
        if live < want or (live == want and not bad):
            self.postponed.discard(bid)
            return
        if self._stale_replicas(slot):
            if bid not in self.postponed:
                self.metrics["postponed_misreplicated"] += 1
            self.postponed.add(bid)
            return
        self.postponed.discard(bid)
        block = Block(bid, self.map.nbytes[slot], self.map.gs[slot])
        drop = list(bad) if bad else []
        if live > want:
            good = [
                i
                for i in self.map.locations(slot)
                if (not bad or i not in bad) and i not in self.out_of_service
            ]
            drop += self._choose_excess(good, live - want)
        for i in drop:
            node = self.dm.node_of_storage(i)
            if node is not None:
                self.invalidates.setdefault(node.uuid, {})[bid] = block
            self._remove_replica(self.map.find(bid), i)

    def _choose_excess(self, storages: list[int], n: int) -> list[int]:
        """Replicas to delete: a stale node's first, then the least free space (HDFS)."""

        def key(i: int) -> tuple[int, float, int]:
            node = self.dm.node_of_storage(i)
            if node is None:
                return (0, 0.0, 0)
            stale = self.dm.is_stale(node)
            return (0 if stale else 1, node.last_update if stale else 0.0, node.remaining())

        return sorted(storages, key=key)[:n]

    def _rescan_postponed(self) -> None:
        for bid in list(self.postponed):
            s = self.map.find(bid)
            self.postponed.discard(bid)
            if s >= 0:
                self._check_excess(s)

    # -- HA (design §B.6) --------------------------------------------------------------

    def set_active(self, active: bool) -> None:
        """The caller says this NameNode became active (or standby)."""
        self.invalidates.clear()
        self.transfers.clear()
        self.in_flight.clear()
        self.postponed.clear()
        for node in self.dm.nodes.values():
            node.blocks_scheduled = 0
        self.active = active
        if not active:
            return
        self.dm.mark_all_stale()
        self.process_pending(everything=True)
        for s in list(self.map.slots()):
            self._requeue(self.map.ids[s], s)
            self._check_excess(s)

    def process_pending(self, *, everything: bool = False) -> int:
        """Run queued messages the applied edits now allow (all of them when active)."""
        done = 0
        msgs: list[PendingMessage] = []
        if everything or self.active:
            msgs = self.pending.take_all()
        else:
            for bid in self.pending.block_ids():
                first = self.pending.by_block[bid][0]
                if not self._from_future(first.replica):
                    msgs += self.pending.take(bid)
        for m in msgs:
            node = self.dm.nodes.get(m.node_uuid)
            if node is None or not node.alive or m.storage_id not in node.storages:
                continue
            st = node.storages[m.storage_id]
            if not self.active and self._from_future(m.replica):
                self.pending.enqueue(m)
                continue
            self._process_reported(
                node, st, m.replica, may_delete_unknown=not st.block_contents_stale
            )
            done += 1
        return done

    # -- reconstruction (design §B.7) --------------------------------------------------

    def compute_reconstruction_work(self, max_blocks: int) -> int:
        """Schedule DNA_TRANSFER for under-replicated blocks; returns how many were scheduled."""
        if not self._commanding():
            return 0
        now = self.clock()
        for bid, (deadline, _) in list(self.in_flight.items()):
            if deadline <= now:
                del self.in_flight[bid]
                self.metrics["reconstruction_timeouts"] += 1
        live = self.dm.live_nodes()
        scheduled = 0
        for prio in range(QUEUE_WITH_CORRUPT_BLOCKS):
            for bid in list(self.queues[prio]):
                if scheduled >= max_blocks:
                    return scheduled
                if self._schedule(bid, prio, live, now):
                    scheduled += 1
        return scheduled

    def _schedule(self, bid: int, prio: int, live: list[DatanodeDescriptor], now: float) -> bool:
        s = self.map.find(bid)
        flight = self.in_flight.get(bid)
        pending = len(flight[1]) if flight else 0
        need = self.map.repl[s] - self._in_service(s) - pending
        if need <= 0:
            return False
        bad = self.corrupt.get(bid, {})
        limit = self.streams_hard_limit if prio == 0 else self.max_streams
        sources = []
        holders = set()
        for i in self.map.locations(s):
            node = self.dm.node_of_storage(i)
            if node is None:
                continue
            holders.add(node.uuid)
            if i not in bad and node.alive and len(self.transfers.get(node.uuid, ())) < limit:
                sources.append(node)
        if not sources:
            return False
        source = min(sources, key=lambda d: (len(self.transfers.get(d.uuid, ())), d.uuid))
        excluded = holders | (flight[1] if flight else set())
        targets = placement.choose_targets(need, live, self.block_size, self.rng, excluded=excluded)
        if not targets:
            return False
        block = Block(bid, self.map.nbytes[s], self.map.gs[s])
        cmd = TransferCommand(block, tuple((t.node.uuid, t.storage.storage_id) for t in targets))
        self.transfers.setdefault(source.uuid, []).append(cmd)
        for t in targets:
            t.node.blocks_scheduled += 1
        uuids = {t.node.uuid for t in targets} | (flight[1] if flight else set())
        self.in_flight[bid] = (now + PENDING_RECONSTRUCTION_TIMEOUT_S, uuids)
        return True

    def choose_targets(
        self,
        n: int,
        *,
        writer: str | None = None,
        excluded: Sequence[str] = (),
        favored: Sequence[str] = (),
        block_size: int | None = None,
    ) -> list[placement.Target]:
        """Targets for a new block (addBlock); fewer than n when no more fit (design §B.7)."""
        return placement.choose_targets(
            n,
            self.dm.live_nodes(),
            block_size or self.block_size,
            self.rng,
            writer=writer,
            excluded=excluded,
            favored=favored,
        )
