"""The NameNode's block management, wired (design §B.14).

One BlockManager (with its DatanodeManager) per NameNode process. The namespace's apply
path feeds it, live and replayed ops alike (follow_op); DatanodeProtocol reaches it through
the BlockManagement adapter (NameNodeBlocks); the client protocol asks it where replicas
are and where new ones go. Blocks a live op removed leave the map (and are queued for
deletion on DataNodes) only once that op is synced; replayed ops' removals at once.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from qjm.config import DataNodeSettings
from qjm.editlog.ops import (
    AddBlockOp,
    AddOp,
    AllocateBlockIdOp,
    AppendOp,
    Block,
    CloseOp,
    ConcatDeleteOp,
    Op,
    SetGenstampV1Op,
    SetGenstampV2Op,
    SetReplicationOp,
    TruncateOp,
    UpdateBlocksOp,
)
from qjm.hdfs import datanode_protocol as wire
from qjm.hdfs.block_report import BlockColumns
from qjm.hdfs.datanode_protocol import (
    BadBlock,
    BlockReportContext,
    BlockSynchronization,
    DatanodeCommand,
    DatanodeId,
    DatanodeProtocolError,
    DatanodeRegistration,
    HeartbeatFacts,
    NamespaceInfo,
    StorageBlockReport,
    StorageInfo,
    StorageReceivedDeleted,
    TransferTarget,
    UnregisteredNodeError,
)
from qjm.namenode.block_tokens import BlockTokenSecretManager
from qjm.namenode.blocks import block_manager as bmod
from qjm.namenode.blocks import datanode_manager as dmod
from qjm.namenode.blocks import host_file
from qjm.namenode.blocks.block_manager import (
    BlockManager,
    BlockUCState,
    ReceivedDeletedStatus,
)
from qjm.namenode.blocks.datanode_manager import (
    DatanodeDescriptor,
    DatanodeManager,
    DatanodeStorageInfo,
    StorageState,
    StorageType,
)
from qjm.namenode.blocks.errors import UnregisteredNodeError as BmUnregisteredNodeError
from qjm.namenode.blocks.report_columns import ReplicaColumns
from qjm.namenode.blocks.safe_mode import SafeMode
from qjm.namenode.fsck import BlockView, ReplicaState, ReplicaView

if TYPE_CHECKING:
    from qjm.namenode.namespace import Namespace
    from qjm.namenode.namespace.recovery import BlockRecovery, LastBlockFacts

log = logging.getLogger("qjm.namenode.blocks")

RECONSTRUCTION_BLOCKS_PER_TICK = 100  # blocks scheduled for re-replication per monitor tick


ALLOCATIONS = (AllocateBlockIdOp, SetGenstampV2Op, SetGenstampV1Op)


class NamespaceIds:
    """The BlockManager's NamespaceView: the ids and generation stamps of the namespace as
    of the last op that was not an allocation (design §B.14).

    HDFS's standby applies an addBlock's OP_ALLOCATE_BLOCK_ID, OP_SET_GENSTAMP_V2 and
    OP_ADD_BLOCK under one lock; here the tailer applies them one by one, and a report
    between them would find the id allocated but no block, and be dropped. Allocations
    count only once an op that uses them is applied, so such a report waits as one from
    the future (design §B.6).
    """

    def __init__(self) -> None:
        self.genstamp = 0
        self.block_id = 0

    def take(self, ns: Namespace) -> None:
        """Count the namespace's allocations so far."""
        self.genstamp = ns.block_ids.genstamp_v2
        self.block_id = ns.block_ids.last_block_id

    def current_generation_stamp(self) -> int:
        """The newest generation stamp an applied op used (GenerationStamp V2)."""
        return self.genstamp

    def last_allocated_block_id(self) -> int:
        """The newest sequential block id an applied op used."""
        return self.block_id


def op_path(op: Op) -> str | None:
    """The file whose block list op changes, or None for an op that changes none."""
    if isinstance(op, (AddOp, CloseOp, AddBlockOp, UpdateBlocksOp, AppendOp, SetReplicationOp)):
        return op.path
    if isinstance(op, TruncateOp):
        return op.src
    if isinstance(op, ConcatDeleteOp):
        return op.trg
    return None


def follow_op(bm: BlockManager, ns: Namespace, op: Op, *, live: bool) -> None:
    """Bring the block map in line with the file op changed (after ns.apply(op)).

    Blocks the file lists and the map lacks are added (under construction while the file
    is open and the block is its last); every block but an open file's last is committed
    (live: by the client's length, complete once it has min replicas) or force-completed
    (replayed, as HDFS's edit log loader); a closed file's blocks are complete; new
    lengths and generation stamps and the file's replication are taken. Removed blocks
    come through Namespace.on_blocks_removed instead (design §B.14).
    """
    path = op_path(op)
    if path is None:
        return
    f = ns.file_blocks(path)
    if f is None:
        return
    n = len(f.blocks)
    for i, b in enumerate(f.blocks):
        info = bm.block_info(b.block_id)
        open_last = f.under_construction and i == n - 1
        if info is None:
            bm.add_block(b, f.replication)
            info = bm.block_info(b.block_id)
            assert info is not None
        elif open_last and info.state is BlockUCState.COMPLETE:
            bm.reopen_block(b)  # append, or truncate inside the last block
        if (info.block.genstamp, info.block.num_bytes) != (b.genstamp, b.num_bytes):
            bm.update_block(b)
        if info.replication != f.replication:
            bm.set_replication([b.block_id], f.replication)
        if open_last:
            continue
        state = bm.block_info(b.block_id)
        assert state is not None
        if state.state is BlockUCState.COMPLETE:
            continue
        if live and not isinstance(op, CloseOp):
            if state.state is BlockUCState.UNDER_CONSTRUCTION:
                bm.commit_block(b)  # completes it once it has min replicas
        else:
            bm.force_complete(b)


@dataclass
class Recovering:
    """A block recovery this active started: its recovery id, when, and its primary."""

    recovery: BlockRecovery
    started: float
    primary: str | None


def choose_primary(candidates: Sequence[tuple[str, float]]) -> str | None:
    """The primary DataNode of a block recovery: among live holders (uuid, last heartbeat),
    the one heard from last, as HDFS's DatanodeManager picks it; None when none is live."""
    if not candidates:
        return None
    return max(candidates, key=lambda c: c[1])[0]


def load_block_map(bm: BlockManager, ns: Namespace) -> int:
    """Fill an empty block map from a loaded namespace: every block complete but an open
    file's last, which is under construction (as HDFS's image loader); how many blocks."""
    ids: list[int] = []
    nbytes: list[int] = []
    gs: list[int] = []
    repl: list[int] = []
    complete: list[bool] = []
    for f in ns.all_file_blocks():
        n = len(f.blocks)
        for b in f.blocks:
            ids.append(b.block_id)
            nbytes.append(b.num_bytes)
            gs.append(b.genstamp)
        repl += [f.replication] * n
        complete += [True] * n
        if f.under_construction:
            complete[-1] = False
    bm.load_blocks(
        np.array(ids, dtype=np.int64),
        np.array(nbytes, dtype=np.int64),
        np.array(gs, dtype=np.int64),
        np.array(repl, dtype=np.int64),
        np.array(complete, dtype=bool),
    )
    return len(ids)


CORRUPT_FILES_RETURNED_MAX = 500  # dfs.corruptfilesreturned.max


def _replica_state(
    corrupt: bool, node: DatanodeDescriptor, storage: DatanodeStorageInfo, stale: bool
) -> ReplicaState:
    """fsck's name for a replica's state, in NamenodeFsck's order of precedence."""
    if node.admin_state is dmod.AdminState.DECOMMISSIONED:
        return ReplicaState.DECOMMISSIONED
    if node.admin_state is dmod.AdminState.DECOMMISSION_INPROGRESS:
        return ReplicaState.DECOMMISSIONING
    if corrupt:
        return ReplicaState.CORRUPT
    if stale:
        return ReplicaState.STALE_NODE
    if storage.block_contents_stale:
        return ReplicaState.STALE_BLOCK_CONTENT
    return ReplicaState.LIVE


def to_registration(reg: DatanodeRegistration) -> dmod.DatanodeRegistration:
    """The block manager's view of a DataNode's registration."""
    d = reg.datanode
    return dmod.DatanodeRegistration(
        d.datanode_uuid,
        d.ip_addr,
        d.host_name,
        d.xfer_port,
        d.info_port,
        d.ipc_port,
        info_secure_port=d.info_secure_port,
    )


def datanode_id(node: DatanodeDescriptor) -> DatanodeId:
    """The wire DatanodeId of a registered node."""
    r = node.reg
    return DatanodeId(
        r.ip,
        r.hostname,
        r.uuid,
        r.xfer_port,
        r.info_port,
        r.ipc_port,
        info_secure_port=r.info_secure_port,
    )


def _enum_by_name(kind: type[StorageType] | type[StorageState], name: str, default: int) -> int:
    try:
        return int(kind[name])
    except KeyError:
        return default


def to_storage_report(r: wire.StorageReport) -> dmod.StorageReport:
    """One storage's heartbeat figures as the DatanodeManager keeps them."""
    return dmod.StorageReport(
        storage_id=r.storage.storage_uuid,
        storage_type=StorageType(_enum_by_name(StorageType, r.storage.storage_type, 1)),
        state=StorageState(_enum_by_name(StorageState, r.storage.state, 0)),
        capacity=r.capacity,
        dfs_used=r.dfs_used,
        remaining=r.remaining,
        block_pool_used=r.block_pool_used,
        failed=r.failed,
    )


class NameNodeBlocks:
    """BlockManagement (DatanodeProtocol's side) over this NameNode's BlockManager."""

    def __init__(
        self,
        namespace_info: Callable[[], NamespaceInfo],
        ns: Callable[[], Namespace | None],
        settings: DataNodeSettings,
        *,
        block_size: int,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
        tokens: BlockTokenSecretManager | None = None,
    ) -> None:
        self._namespace_info = namespace_info
        # block access tokens (design §S.9): the keys, and the key generation each
        # DataNode was last given (at registration or in a KeyUpdateCommand)
        self.tokens = tokens
        self.key_generations: dict[str, int] = {}
        self._ns = ns
        self.settings = settings
        self.clock = clock
        self.rng = rng or random.Random()
        self.block_size = block_size
        self.dm = DatanodeManager(
            clock,
            heartbeat_s=settings.heartbeat_interval_ms / 1000,
            recheck_s=settings.heartbeat_recheck_ms / 1000,
        )
        self.safe_mode = SafeMode(
            threshold=settings.safemode_threshold_pct / 1000,
            extension_s=settings.safemode_extension_ms / 1000,
        )
        self.ids = NamespaceIds()
        self.bm = self._new_manager()
        self.removed_while_writing: list[Block] = []  # a live op's removals, until synced
        self.excluded: frozenset[str] = frozenset()  # the exclude list's entries (§B.20)
        self.writing = False  # inside the active's apply of a live call
        self.deferred_removals = 0  # blocks whose removal waited for its op's sync
        # Block recovery (design §B.16): the recoveries this active started, by block id;
        # the commands waiting for each primary's next heartbeat; the committer (the
        # NameNode's commitBlockSynchronization through its write path).
        self.recovering: dict[int, Recovering] = {}
        self.recovery_queue: dict[str, list[wire.RecoveringBlock]] = {}
        self.recovery_timeout_s = settings.heartbeat_recheck_ms / 1000
        self.committer: Callable[[BlockSynchronization], Awaitable[None]] | None = None
        self.recoveries_started = 0
        self.recoveries_committed = 0

    def _new_manager(self) -> BlockManager:
        return BlockManager(
            self.ids,
            self.clock,
            self.rng,
            datanodes=self.dm,
            safe_mode=self.safe_mode,
            min_replication=self.settings.min_replication,
            block_size=self.block_size,
            max_streams=self.settings.replication_max_streams,
            streams_hard_limit=self.settings.replication_streams_hard_limit,
        )

    # -- the namespace's side ------------------------------------------------------------

    def attach(self, ns: Namespace) -> int:
        """A (re)loaded namespace: a new block map from it, keeping the DataNodes and the
        replicas already known of blocks it still holds; its removals come here."""
        old, active = self.bm, self.bm.active
        self.ids.take(ns)
        self.bm = self._new_manager()
        count = load_block_map(self.bm, ns)
        self.bm.adopt_replicas(old)
        self.bm.pending = old.pending
        if active:
            self.bm.set_active(True)
        ns.on_blocks_removed = self._on_removed
        self.removed_while_writing.clear()
        return count

    def _on_removed(self, blocks: Sequence[Block]) -> None:
        if self.writing:
            self.removed_while_writing.extend(blocks)
        else:
            self.bm.remove_blocks(b.block_id for b in blocks)

    def follow(self, ns: Namespace, op: Op, *, live: bool) -> None:
        """After ns.apply(op): the block map follows it (design §B.14)."""
        follow_op(self.bm, ns, op, live=live)
        if isinstance(op, ALLOCATIONS):
            return
        self.ids.take(ns)
        if not live and len(self.bm.pending):
            self.bm.process_pending()  # reports that waited for this edit (design §B.6)

    def take_removed(self) -> list[Block]:
        """The blocks the live call just applied removed (to drop once it is synced)."""
        out, self.removed_while_writing = self.removed_while_writing, []
        return out

    def drop_removed(self, blocks: Sequence[Block]) -> None:
        """A synced op's removed blocks leave the map; the active queues their deletion."""
        if blocks:
            self.deferred_removals += len(blocks)
            self.bm.remove_blocks(b.block_id for b in blocks)

    def set_active(self, active: bool) -> None:
        """This NameNode became active (postponing deletions until each storage reports
        again, design §B.6) or standby (no commands)."""
        self.bm.set_active(active)

    def tick(self) -> None:
        """The monitor's periodic work: dead DataNodes, safe mode, re-replication."""
        dead = self.bm.check_heartbeats()
        for uuid in dead:
            log.warning("DataNode %s is dead: no heartbeat for %.0fs", uuid, self.dm.expire_s)
        self.bm.check_safe_mode()
        self.bm.compute_reconstruction_work(RECONSTRUCTION_BLOCKS_PER_TICK)
        for uuid in self.bm.check_decommission():
            r = self.dm.nodes[uuid].reg
            log.info("DataNode %s:%d (%s) is decommissioned", r.ip, r.xfer_port, uuid)

    def leave_safe_mode_if_met(self) -> None:
        """At start-up: thresholds already met (no blocks) leave safe mode at once (HDFS)."""
        sm = self.safe_mode
        if sm.is_on and not sm.startup_done and sm.thresholds_met(self.bm.safe_mode_counts()):
            sm.leave()

    # -- the client protocol's side -----------------------------------------------------

    def is_complete(self, b: Block) -> bool:
        """Whether a block is complete or has its minimum replicas (the namespace's test)."""
        info = self.bm.block_info(b.block_id)
        if info is None:
            return False
        if info.state is BlockUCState.COMPLETE:
            return True
        if info.block.genstamp != b.genstamp:
            return False
        return self.bm.live_replicas(b.block_id) >= self.bm.min_replication

    def set_expected(
        self, b: Block, targets: Sequence[tuple[DatanodeDescriptor, DatanodeStorageInfo]]
    ) -> None:
        """An under-construction block's pipeline: where readers find it until reported."""
        info = self.bm.block_info(b.block_id)
        if info is not None and info.state is BlockUCState.UNDER_CONSTRUCTION:
            self.bm.expected[b.block_id] = tuple(st.index for _, st in targets)

    def locations(self, b: Block) -> list[tuple[DatanodeDescriptor, DatanodeStorageInfo]]:
        """Where a client reads b."""
        return self.bm.locations(b.block_id)

    # -- fsck (design §B.17) -------------------------------------------------------------

    def fsck_block(self, b: Block) -> BlockView:
        """b as fsck judges it: every stored replica on a live node, with its state."""
        bm, dm = self.bm, self.dm
        name = f"{self.namespace_info().block_pool_id}:blk_{b.block_id}_{b.genstamp}"
        s = bm.map.find(b.block_id)
        if s < 0:
            return BlockView(name, b.num_bytes, ())
        bad = bm.corrupt.get(b.block_id, {})
        replicas = []
        for i in bm.map.locations(s):
            node = dm.node_of_storage(i)
            if node is None or not node.alive:
                continue
            storage = dm.storages[i]
            replicas.append(
                ReplicaView(
                    f"{node.reg.ip}:{node.reg.xfer_port}",
                    storage.storage_id,
                    _replica_state(i in bad, node, storage, dm.is_stale(node)),
                )
            )
        return BlockView(name, bm.map.nbytes[s], tuple(replicas), queued=b.block_id in bm.queue_of)

    def corrupt_files(
        self, ns: Namespace, path: str, start: int, limit: int = CORRUPT_FILES_RETURNED_MAX
    ) -> tuple[list[tuple[str, str]], int]:
        """listCorruptFileBlocks: (blk_<id>_<gs>, file) of blocks under path with no live
        replica left (the corrupt-blocks queue), in block id order from the start-th, at most
        limit; and the cookie that continues after them."""
        missing = self.bm.queues[bmod.QUEUE_WITH_CORRUPT_BLOCKS]
        if not missing:
            return [], start
        prefix = path.rstrip("/") + "/"
        found = sorted(
            (b.block_id, f"blk_{b.block_id}_{b.genstamp}", f.path)
            for f in ns.all_file_blocks()
            if f.path == path or f.path.startswith(prefix)
            for b in f.blocks
            if b.block_id in missing
        )
        rows = [(name, p) for _, name, p in found[start : start + limit]]
        return rows, start + len(rows)

    # -- block recovery (design §B.16) ---------------------------------------------------

    def recovery_facts(self) -> LastBlockFacts:
        """What lease recovery needs to know of a last block."""
        from qjm.namenode.namespace.recovery import LastBlockFacts

        def committed(b: Block) -> bool:
            info = self.bm.block_info(b.block_id)
            return info is not None and info.state is not BlockUCState.UNDER_CONSTRUCTION

        def has_min(b: Block) -> bool:
            info = self.bm.block_info(b.block_id)
            if info is None:
                return False
            return (
                info.state is BlockUCState.COMPLETE
                or self.bm.live_replicas(b.block_id) >= self.bm.min_replication
            )

        def recovering(b: Block) -> bool:
            r = self.recovering.get(b.block_id)
            return r is not None and self.clock() - r.started < self.recovery_timeout_s

        return LastBlockFacts(
            committed, has_min, lambda b: len(self.bm.locations(b.block_id)), recovering
        )

    def start_recovery(self, rec: BlockRecovery) -> str | None:
        """Record a recovery and queue DNA_RECOVERBLOCK for its primary's next heartbeat
        (none while no holder is live: the lease monitor retries after the timeout)."""
        locs = self.bm.locations(rec.block.block_id)
        live = [(n, st) for n, st in locs if not self.dm.is_dead(n)]
        primary = choose_primary([(n.uuid, n.last_update) for n, _ in live])
        self.recovering[rec.block.block_id] = Recovering(rec, self.clock(), primary)
        self.recoveries_started += 1
        if primary is None:
            log.warning("block recovery of %s: no live DataNode holds it", rec.block)
            return None
        b = rec.block
        command = wire.RecoveringBlock(
            wire.ExtendedBlock(
                self.namespace_info().block_pool_id, b.block_id, b.genstamp, b.num_bytes
            ),
            rec.recovery_id,
            tuple(datanode_id(n) for n, _ in live),
            tuple(st.storage_id for _, st in live),
            None
            if rec.truncate_block is None
            else wire.Block(
                rec.truncate_block.block_id,
                rec.truncate_block.genstamp,
                rec.truncate_block.num_bytes,
            ),
        )
        self.recovery_queue.setdefault(primary, []).append(command)
        return primary

    def recovery_id(self, block_id: int) -> int | None:
        """The recovery id this active started for a block, if any."""
        r = self.recovering.get(block_id)
        return None if r is None else r.recovery.recovery_id

    def end_recovery(self, block_id: int) -> None:
        """A recovery was committed."""
        if self.recovering.pop(block_id, None) is not None:
            self.recoveries_committed += 1

    # -- BlockManagement (DatanodeProtocol) ------------------------------------------------

    def namespace_info(self) -> NamespaceInfo:
        """This NameNode's namespace and block pool."""
        return self._namespace_info()

    async def register_datanode(self, registration: DatanodeRegistration) -> DatanodeRegistration:
        """Register (or re-register) a DataNode; one on the exclude list starts to
        decommission at once (design §B.20)."""
        reg = to_registration(registration)
        self.bm.register_datanode(reg)
        node = self.dm.nodes.get(reg.uuid)
        if node is not None and self._excluded(node):
            self.bm.start_decommission(node)
        if self.tokens is None:
            return registration
        # HDFS's DatanodeManager.registerDatanode: the keys go back in the registration
        self.tokens.roll_if_due()
        self.key_generations[reg.uuid] = self.tokens.generation
        return replace(registration, keys=self.tokens.export())

    # -- decommission (design §B.20) ------------------------------------------------------

    def _excluded(self, node: DatanodeDescriptor) -> bool:
        r = node.reg
        return host_file.listed(self.excluded, r.ip, r.hostname, r.xfer_port)

    def refresh_nodes(self, excluded: frozenset[str]) -> tuple[list[str], list[str]]:
        """A new exclude list (refreshNodes): listed nodes start decommissioning, nodes no
        longer listed return to service; the (started, stopped) DataNodes' addresses."""
        self.excluded = excluded
        started, stopped = [], []
        for node in self.dm.nodes.values():
            addr = f"{node.reg.ip}:{node.reg.xfer_port}"
            if self._excluded(node):
                if self.bm.start_decommission(node):
                    started.append(addr)
            elif self.bm.stop_decommission(node):
                stopped.append(addr)
        for addr in started:
            log.info("DataNode %s: decommission started", addr)
        for addr in stopped:
            log.info("DataNode %s: back in service", addr)
        return started, stopped

    async def handle_heartbeat(
        self, registration: DatanodeRegistration, facts: HeartbeatFacts
    ) -> Sequence[DatanodeCommand]:
        """Record a heartbeat; the node's commands (none unless active, design §B.12)."""
        uuid = registration.datanode.datanode_uuid
        reports = [to_storage_report(r) for r in facts.reports]
        commands = self.bm.heartbeat(uuid, reports, facts.xceiver_count)
        out = [self._command(c) for c in commands]
        tokens = self.tokens
        if tokens is not None:  # from any HA state, as HDFS (design §S.9)
            tokens.roll_if_due()
            if self.key_generations.get(uuid, -1) != tokens.generation and uuid in self.dm.nodes:
                self.key_generations[uuid] = tokens.generation
                out.append(wire.KeyUpdateCommand(tokens.export()))
        if self.bm.active and not self.safe_mode.is_on and uuid in self.recovery_queue:
            out.append(wire.RecoveryCommand(tuple(self.recovery_queue.pop(uuid))))
        return out

    def _command(self, c: bmod.Command) -> DatanodeCommand:
        pool = self.namespace_info().block_pool_id
        if isinstance(c, bmod.RegisterCommand):
            return wire.RegisterCommand()
        if isinstance(c, bmod.InvalidateCommand):
            return wire.InvalidateCommand(
                pool, tuple(wire.Block(b.block_id, b.genstamp, b.num_bytes) for b in c.blocks)
            )
        targets = []
        for uuid, storage_id in c.targets:
            node = self.dm.nodes.get(uuid)
            if node is not None:
                targets.append(TransferTarget(datanode_id(node), storage_id))
        b = c.block
        return wire.TransferCommand(
            pool, (wire.Block(b.block_id, b.genstamp, b.num_bytes),), (tuple(targets),)
        )

    def _known(self, registration: DatanodeRegistration) -> str:
        uuid = registration.datanode.datanode_uuid
        try:
            self.dm.get_registered(uuid)
        except BmUnregisteredNodeError as e:
            raise UnregisteredNodeError(str(e)) from None
        return uuid

    async def process_report(
        self,
        registration: DatanodeRegistration,
        pool_id: str,
        reports: Sequence[StorageBlockReport],
        context: BlockReportContext | None,
    ) -> DatanodeCommand | None:
        """Take a full block report, one storage at a time (design §B.5)."""
        uuid = self._known(registration)
        for r in reports:
            xs = r.replicas
            if isinstance(xs, BlockColumns):  # decoded from the wire as columns
                replicas = ReplicaColumns(xs.ids, xs.num_bytes, xs.gen_stamps, xs.states)
            else:
                replicas = ReplicaColumns.of(
                    (x.block_id for x in xs),
                    (x.num_bytes for x in xs),
                    (x.gen_stamp for x in xs),
                    (x.state for x in xs),
                    len(xs),
                )
            self.bm.process_report(uuid, r.storage.storage_uuid, replicas)
        self.bm.check_safe_mode()
        return None

    async def process_incremental(
        self,
        registration: DatanodeRegistration,
        pool_id: str,
        changes: Sequence[StorageReceivedDeleted],
    ) -> None:
        """Take replicas received, being received and deleted."""
        uuid = self._known(registration)
        for ch in changes:
            items = [
                (
                    ReceivedDeletedStatus(int(x.status)),
                    Block(x.block.block_id, x.block.num_bytes, x.block.gen_stamp),
                )
                for x in ch.blocks
            ]
            self.bm.process_incremental(uuid, ch.storage.storage_uuid, items)
        self.bm.check_safe_mode()

    async def error_report(
        self, registration: DatanodeRegistration, code: int, message: str
    ) -> None:
        """A DataNode's error report: logged by the protocol layer; nothing else changes."""
        self.bm.metrics["error_reports"] += 1

    async def report_bad_blocks(self, bad: Sequence[BadBlock]) -> None:
        """Mark each replica named corrupt (a DataNode's or a reader's reportBadBlocks)."""
        self.bm.metrics["bad_block_reports"] += len(bad)
        for b in bad:
            storages = b.storage_uuids or ("",) * len(b.datanodes)
            for dn, storage in zip(b.datanodes, storages, strict=False):
                if self.bm.mark_reported_corrupt(
                    b.block.block_id, b.block.gen_stamp, dn.datanode_uuid, storage
                ):
                    log.warning(
                        "%s on %s:%d reported corrupt",
                        b.block,
                        dn.ip_addr,
                        dn.xfer_port,
                    )

    async def commit_block_synchronization(self, sync: BlockSynchronization) -> None:
        """A primary DataNode's block recovery, committed through the NameNode's write
        path (design §B.16)."""
        if self.committer is None:
            raise DatanodeProtocolError(
                "commitBlockSynchronization: this NameNode has no namespace to commit to"
            )
        await self.committer(sync)

    # -- figures ---------------------------------------------------------------------------

    def datanode_rows(self) -> list[dict[str, object]]:
        """Each registered DataNode as /status and the status page show it (design §B.14)."""
        now = self.clock()
        rows: list[dict[str, object]] = []
        for node in self.dm.datanode_report(dmod.ReportType.ALL):
            r = node.reg
            blocks = self.bm.blocks_on(node)
            rows.append(
                {
                    "uuid": r.uuid,
                    "hostname": r.hostname,
                    "transfer_address": f"{r.ip}:{r.xfer_port}",
                    "ipc_address": f"{r.ip}:{r.ipc_port}",
                    "http_address": f"{r.ip}:{r.info_port}",
                    "https_address": f"{r.ip}:{r.info_secure_port}" if r.info_secure_port else "",
                    "state": "dead" if self.dm.is_dead(node) else "live",
                    "admin_state": node.admin_state.value,
                    "stale": self.dm.is_stale(node),
                    "capacity": node.capacity(),
                    "used": node.dfs_used(),
                    "remaining": node.remaining(),
                    "blocks": blocks,
                    "xceivers": node.xceiver_count,
                    "last_heartbeat_s_ago": round(max(0.0, now - node.last_update), 3),
                }
            )
        return rows

    def status(self) -> dict[str, object]:
        """The figures /status, /jmx and /metrics show."""
        t = self.dm.totals()
        s = self.bm.fs_stats()
        return {
            "live_datanodes": t.live,
            "dead_datanodes": t.dead,
            "blocks": len(self.bm.map),
            "under_replicated_blocks": s.under_replicated,
            "corrupt_blocks": s.corrupt_blocks,
            "missing_blocks": s.missing_blocks,
            "pending_deletion_blocks": s.pending_deletion,
            "pending_datanode_messages": len(self.bm.pending),
            "postponed_misreplicated_blocks": len(self.bm.postponed),
            "block_recoveries_started": self.recoveries_started,
            "block_recoveries_committed": self.recoveries_committed,
            "block_recoveries_pending": len(self.recovering),
            "capacity": t.capacity,
            "used": t.dfs_used,
            "remaining": t.remaining,
            "safe_mode": self.safe_mode.is_on,
            "safe_mode_tip": self.bm.safe_mode_tip(),
        }


def namespace_info_of(
    block_pool_id: str, namespace_id: int, cluster_id: str, layout_version: int, ctime: int
) -> NamespaceInfo:
    """The NamespaceInfo DataNodes are told (versionRequest)."""
    return NamespaceInfo(
        block_pool_id, StorageInfo(layout_version, namespace_id, cluster_id, ctime)
    )
