"""Block recovery on the DataNode: HDFS's BlockRecoveryWorker and InterDatanodeProtocol
(design §B.16).

The primary DataNode of a DNA_RECOVERBLOCK asks every holder of the block to start
recovering its replica (initReplicaRecovery: its writer stopped, its state before and its
length answered), chooses the length (choose_sync, pure), has each chosen holder cut its
replica to that length under the recovery id and finalize it (updateReplicaUnderRecovery),
and commits the result to the active NameNode (commitBlockSynchronization).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from google.protobuf.message import Message

from qjm.datanode.replica import ReplicaState
from qjm.errors import QjmError, describe_error
from qjm.hdfs import datanode_protocol as wire
from qjm.hdfs.datanode_protocol import (
    BlockSynchronization,
    DatanodeId,
    ExtendedBlock,
    RecoveringBlock,
)
from qjm.hdfs.proto import InterDatanodeProtocol_pb2 as idp
from qjm.ipc.methods import MethodSpec, method_table
from qjm.ipc.server import CallContext, Method

log = logging.getLogger("qjm.datanode.recovery")

INTER_DATANODE_PROTOCOL = "org.apache.hadoop.hdfs.server.protocol.InterDatanodeProtocol"
INTER_DATANODE_METHODS: dict[str, MethodSpec] = method_table(
    MethodSpec(
        "initReplicaRecovery",
        idp.InitReplicaRecoveryRequestProto,
        idp.InitReplicaRecoveryResponseProto,
    ),
    MethodSpec(
        "updateReplicaUnderRecovery",
        idp.UpdateReplicaUnderRecoveryRequestProto,
        idp.UpdateReplicaUnderRecoveryResponseProto,
    ),
)


class BlockRecoveryError(QjmError):
    """A block recovery that cannot go on; the message says why."""

    java_class = "java.io.IOException"


@dataclass(frozen=True)
class ReplicaRecord:
    """One holder's answer to initReplicaRecovery: its replica before recovery began."""

    node: DatanodeId
    state: ReplicaState
    num_bytes: int
    genstamp: int


@dataclass(frozen=True)
class SyncChoice:
    """What a recovery commits: the length, the holders that take it, or a deletion."""

    length: int
    participants: tuple[ReplicaRecord, ...]
    delete_block: bool = False


def choose_sync(
    block_genstamp: int, records: Sequence[ReplicaRecord], truncate_length: int | None
) -> SyncChoice:
    """HDFS's BlockRecoveryWorker.syncBlock rules (design §B.16).

    Replicas older than the block's stamp or empty take no part; none left: the block is
    deleted. The best state wins (FINALIZED over RBW over RWR): with finalized replicas
    (which must agree on their length) the length is theirs, and RBW replicas of that
    length join; otherwise the shortest replica of the best state sets it. A truncate's
    length overrides the choice.
    """
    usable = [r for r in records if r.genstamp >= block_genstamp and r.num_bytes > 0]
    if not usable:
        return SyncChoice(0, (), True)
    rank = {ReplicaState.FINALIZED: 0, ReplicaState.RBW: 1, ReplicaState.RWR: 2}
    if any(r.state not in rank for r in usable):
        bad = next(r for r in usable if r.state not in rank)
        raise BlockRecoveryError(f"bad replica state {bad.state.name} on {bad.node.datanode_uuid}")
    best = min((r.state for r in usable), key=lambda s: rank[s])
    if best is ReplicaState.FINALIZED:
        lengths = {r.num_bytes for r in usable if r.state is ReplicaState.FINALIZED}
        if len(lengths) > 1:
            raise BlockRecoveryError(f"Inconsistent size of finalized replicas: {sorted(lengths)}")
        length = lengths.pop()
        chosen = tuple(
            r
            for r in usable
            if r.state is ReplicaState.FINALIZED
            or (r.state is ReplicaState.RBW and r.num_bytes == length)
        )
    else:
        chosen = tuple(r for r in usable if r.state is best)
        length = min(r.num_bytes for r in chosen)
    if truncate_length is not None:
        length = truncate_length
    return SyncChoice(length, chosen)


class ReplicaRecovery(Protocol):
    """What InterDatanodeProtocol needs of this DataNode's storage (disk work off the loop)."""

    async def init_replica_recovery(self, rb: RecoveringBlock) -> ReplicaRecord | None:
        """Start recovering this node's replica of rb; None when there is none."""
        ...

    async def update_replica_under_recovery(
        self, block: ExtendedBlock, recovery_id: int, new_length: int
    ) -> str:
        """Cut the replica to new_length under recovery_id and finalize it; its storage id."""
        ...


def inter_datanode_methods(replicas: ReplicaRecovery) -> dict[str, Method]:
    """InterDatanodeProtocol's methods, for IpcServer.register(INTER_DATANODE_PROTOCOL)."""

    async def init_replica_recovery(
        req: idp.InitReplicaRecoveryRequestProto, ctx: CallContext
    ) -> idp.InitReplicaRecoveryResponseProto:
        rb = wire.recovering_block_from_proto(req.block)
        rec = await replicas.init_replica_recovery(rb)
        if rec is None:
            return idp.InitReplicaRecoveryResponseProto(replicaFound=False)
        out = idp.InitReplicaRecoveryResponseProto(replicaFound=True, state=int(rec.state))  # type: ignore[arg-type]
        out.block.CopyFrom(
            wire.block_to_proto(wire.Block(rb.block.block_id, rec.genstamp, rec.num_bytes))
        )
        return out

    async def update_replica_under_recovery(
        req: idp.UpdateReplicaUnderRecoveryRequestProto, ctx: CallContext
    ) -> idp.UpdateReplicaUnderRecoveryResponseProto:
        if req.newBlockId:
            raise BlockRecoveryError("copy-on-truncate (newBlockId) is not served by qjm")
        block = wire.extended_block_from_proto(req.block)
        storage = await replicas.update_replica_under_recovery(block, req.recoveryId, req.newLength)
        return idp.UpdateReplicaUnderRecoveryResponseProto(storageUuid=storage)

    handlers: dict[str, Callable[[Any, CallContext], Awaitable[Message]]] = {
        "initReplicaRecovery": init_replica_recovery,
        "updateReplicaUnderRecovery": update_replica_under_recovery,
    }
    return {
        name: Method(spec.request, handlers[name]) for name, spec in INTER_DATANODE_METHODS.items()
    }


class InterDatanodeCalls(Protocol):
    """How the primary reaches a holder (over IPC, itself included)."""

    async def init(self, node: DatanodeId, rb: RecoveringBlock) -> ReplicaRecord | None:
        """initReplicaRecovery on node."""
        ...

    async def update(
        self, node: DatanodeId, block: ExtendedBlock, recovery_id: int, new_length: int
    ) -> str:
        """updateReplicaUnderRecovery on node; the storage id of its replica."""
        ...


async def recover_block(
    rb: RecoveringBlock,
    calls: InterDatanodeCalls,
    commit: Callable[[BlockSynchronization], Awaitable[None]],
) -> BlockSynchronization:
    """Run one block recovery as its primary (HDFS's BlockRecoveryWorker.recover)."""
    records: list[ReplicaRecord] = []
    failed: list[str] = []
    for node in rb.locations:
        try:
            rec = await calls.init(node, rb)
        except Exception as e:
            failed.append(node.datanode_uuid)
            log.warning(
                "initReplicaRecovery of blk_%d on %s failed: %s",
                rb.block.block_id,
                node.datanode_uuid,
                describe_error(e),
            )
            continue
        if rec is not None:
            records.append(rec)
    if rb.locations and len(failed) == len(rb.locations):
        raise BlockRecoveryError(
            f"All datanodes failed: block=blk_{rb.block.block_id}, datanodeids={failed}"
        )
    cut = rb.truncate_block
    choice = choose_sync(rb.block.gen_stamp, records, None if cut is None else cut.num_bytes)
    sync_block = ExtendedBlock(
        rb.block.pool_id, rb.block.block_id, rb.block.gen_stamp, rb.block.num_bytes
    )
    if choice.delete_block:
        sync = BlockSynchronization(sync_block, rb.new_gen_stamp, 0, True, True)
        await commit(sync)
        return sync
    done: list[tuple[DatanodeId, str]] = []
    for r in choice.participants:
        try:
            storage = await calls.update(r.node, sync_block, rb.new_gen_stamp, choice.length)
            done.append((r.node, storage))
        except Exception as e:
            log.warning(
                "updateReplicaUnderRecovery of blk_%d on %s failed: %s",
                rb.block.block_id,
                r.node.datanode_uuid,
                describe_error(e),
            )
    if not done:
        raise BlockRecoveryError(
            f"Cannot recover blk_{rb.block.block_id}: every updateReplicaUnderRecovery failed"
        )
    sync = BlockSynchronization(
        sync_block,
        rb.new_gen_stamp,
        choice.length,
        True,
        False,
        tuple(n for n, _ in done),
        tuple(s for _, s in done),
    )
    await commit(sync)
    return sync
