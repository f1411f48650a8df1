"""BlockManager rules and attacks: reports, states, queues, HA (design §B.5-§B.8)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from qjm.editlog.ops.types import Block
from qjm.errors import ConfigError
from qjm.namenode.blocks import host_file
from qjm.namenode.blocks.block_manager import (
    QUEUE_HIGHEST_PRIORITY,
    BlockManager,
    BlockUCState,
    CorruptReason,
    InvalidateCommand,
    ReceivedDeletedStatus,
    RegisterCommand,
    TransferCommand,
    check_replica_corrupt,
    redundancy_priority,
)
from qjm.namenode.blocks.block_map import BlockMap
from qjm.namenode.blocks.datanode_manager import (
    AdminState,
    DatanodeDescriptor,
    DatanodeRegistration,
    StorageReport,
)
from qjm.namenode.blocks.errors import (
    BlockStateError,
    PendingMessagesFullError,
    UnregisteredNodeError,
)
from qjm.namenode.blocks.pending_messages import ReplicaState, ReportedReplica
from qjm.namenode.blocks.safe_mode import SafeMode

FIN, RBW, RWR = ReplicaState.FINALIZED, ReplicaState.RBW, ReplicaState.RWR
COMPLETE, COMMITTED, UC = (
    BlockUCState.COMPLETE,
    BlockUCState.COMMITTED,
    BlockUCState.UNDER_CONSTRUCTION,
)
RECEIVING, RECEIVED, DELETED = (
    ReceivedDeletedStatus.RECEIVING,
    ReceivedDeletedStatus.RECEIVED,
    ReceivedDeletedStatus.DELETED,
)
B0 = 1 << 30


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class Namespace:
    """What the tailer has applied so far (the NamespaceView)."""

    def __init__(self) -> None:
        self.gs = 1010
        self.last_id = B0 + 10

    def current_generation_stamp(self) -> int:
        return self.gs

    def last_allocated_block_id(self) -> int:
        return self.last_id


def reg(uuid: str, ip: str = "127.0.0.1", port: int | None = None) -> DatanodeRegistration:
    p = port if port is not None else 9000 + int(uuid[2:]) * 10
    return DatanodeRegistration(uuid, ip, uuid, p, p + 1, p + 2)


def make(
    n: int = 3, *, active: bool = True, pending_limit: int = 100
) -> tuple[BlockManager, Clock, Namespace]:
    clock, ns = Clock(), Namespace()
    bm = BlockManager(
        ns, clock, random.Random(0), safe_mode=SafeMode(extension_s=0), pending_limit=pending_limit
    )
    for i in range(n):
        bm.register_datanode(reg(f"dn{i}"))
        bm.heartbeat(f"dn{i}", [StorageReport(f"s{i}", capacity=1 << 40, remaining=1 << 40)])
    bm.safe_mode.leave()
    bm.set_active(active)
    return bm, clock, ns


def blk(i: int, n: int = 10, gs: int = 1001) -> Block:
    return Block(B0 + i, n, gs)


def complete(bm: BlockManager, b: Block, repl: int = 3) -> None:
    bm.add_block(b, repl)
    bm.force_complete(b)


def report(bm: BlockManager, i: int, *replicas: ReportedReplica) -> None:
    bm.process_report(f"dn{i}", f"s{i}", list(replicas))


def fin(b: Block, state: ReplicaState = FIN) -> ReportedReplica:
    return ReportedReplica(b, state)


def placed(bm: BlockManager, b: Block, repl: int, holders: tuple[int, ...], n: int) -> None:
    """b complete at repl with a finalized replica on each holder; every one of the n nodes
    has sent its full report."""
    complete(bm, b, repl=repl)
    for i in range(n):
        report(bm, i, *([fin(b)] if i in holders else []))


def commands(bm: BlockManager, i: int) -> list:  # type: ignore[type-arg]
    return bm.heartbeat(f"dn{i}", [])


def invalidated(bm: BlockManager, i: int) -> set[int]:
    return {
        b.block_id for c in commands(bm, i) if isinstance(c, InvalidateCommand) for b in c.blocks
    }


# -- the block map's columns ----------------------------------------------------------


def test_block_map_insert_find_delete_grow() -> None:
    m = BlockMap()
    ids = [B0 + i for i in range(1000)] + [-5, 7, (1 << 62) + 3]
    for k in ids:
        m.insert(k, k & 0xFF, 1001, 3, 0)
    assert len(m) == len(ids) and m.capacity >= 2 * len(ids) // 2
    assert all(m.nbytes[m.find(k)] == k & 0xFF for k in ids)
    for k in ids[::2]:
        m.delete(m.find(k))
    assert all(m.find(k) < 0 for k in ids[::2]) and all(m.find(k) >= 0 for k in ids[1::2])
    with pytest.raises(KeyError):
        m.insert(ids[1], 0, 0, 1, 0)


def test_block_map_locations_beyond_three_and_scan() -> None:
    m = BlockMap()
    s = m.insert(B0, 1, 1, 5, 0)
    for st in (4, 9, 1 << 20, 2, 7):
        assert m.add_location(s, st)
    assert not m.add_location(s, 9)
    assert sorted(m.locations(s)) == [2, 4, 7, 9, 1 << 20]
    other = m.insert(B0 + 1, 1, 1, 3, 0)
    m.add_location(other, 1 << 20)
    assert m.slots_on_storage(1 << 20) == sorted([s, other])
    assert m.slots_on_storage(7) == [s] and m.slots_on_storage(3) == []
    assert m.remove_location(s, 7) and not m.remove_location(s, 7)


# -- rules as tables ------------------------------------------------------------------

GM, SM, IS = (
    CorruptReason.GENSTAMP_MISMATCH,
    CorruptReason.SIZE_MISMATCH,
    CorruptReason.INVALID_STATE,
)


@pytest.mark.parametrize(
    ("stored", "rstate", "rgs", "rlen", "want"),
    [
        (COMPLETE, FIN, 1001, 10, None),
        (COMPLETE, FIN, 1000, 10, GM),  # an older genstamp
        (COMPLETE, FIN, 1002, 10, GM),
        (COMPLETE, FIN, 1001, 9, SM),
        (COMMITTED, FIN, 1001, 11, SM),
        (UC, FIN, 1000, 10, GM),
        (UC, FIN, 1002, 99, None),
        (UC, RBW, 1001, 3, None),
        (UC, RBW, 1000, 3, GM),
        (COMMITTED, RBW, 1001, 3, None),
        (COMPLETE, RBW, 1001, 3, None),  # the report raced the close
        (COMPLETE, RBW, 1000, 3, GM),
        (COMPLETE, RWR, 1001, 10, IS),
        (COMPLETE, ReplicaState.TEMPORARY, 1001, 10, IS),
    ],
)
def test_check_replica_corrupt(
    stored: BlockUCState, rstate: ReplicaState, rgs: int, rlen: int, want: CorruptReason | None
) -> None:
    r = ReportedReplica(Block(B0, rlen, rgs), rstate)
    assert check_replica_corrupt(stored, 1001, 10, r) is want


@pytest.mark.parametrize(
    ("live", "expected", "prio"),
    [(3, 3, None), (4, 3, None), (0, 3, 4), (1, 3, 0), (2, 3, 2), (2, 7, 1), (1, 1, None)],
)
def test_redundancy_priority(live: int, expected: int, prio: int | None) -> None:
    assert redundancy_priority(live, expected) == prio


# -- block life ----------------------------------------------------------------------


def test_add_commit_complete_with_min_replicas() -> None:
    bm, _, _ = make()
    b = blk(1, 0)
    bm.add_block(b, 3, ["s0", "s1"])
    info = bm.block_info(b.block_id)
    assert info is not None and info.state is UC and info.expected == ("s0", "s1")
    with pytest.raises(BlockStateError, match="mismatching GS"):
        bm.commit_block(Block(b.block_id, 5, 999))
    assert bm.commit_block(Block(b.block_id, 5, b.genstamp)) is COMMITTED
    bm.process_incremental("dn0", "s0", [(RECEIVED, Block(b.block_id, 5, b.genstamp))])
    info = bm.block_info(b.block_id)
    assert info is not None and info.state is COMPLETE and info.locations == ("s0",)
    assert (bm.complete_total, bm.complete_safe) == (1, 1)
    with pytest.raises(BlockStateError, match="already"):
        bm.add_block(b, 3)


def test_receiving_is_an_expected_location_not_a_replica() -> None:
    bm, _, _ = make()
    b = blk(2, 0)
    bm.add_block(b, 3)
    bm.process_incremental("dn1", "s1", [(RECEIVING, b)])
    info = bm.block_info(b.block_id)
    assert info is not None and info.expected == ("s1",) and info.locations == ()
    assert [n.uuid for n, _ in bm.locations(b.block_id)] == ["dn1"]


def test_full_report_adds_and_removes() -> None:
    bm, _, _ = make()
    a, b = blk(1), blk(2)
    complete(bm, a)
    complete(bm, b)
    report(bm, 0, fin(a), fin(b))
    assert bm.live_replicas(a.block_id) == 1 and bm.live_replicas(b.block_id) == 1
    report(bm, 0, fin(a))  # b is gone from that storage
    assert bm.live_replicas(b.block_id) == 0
    assert bm.fs_stats().missing_blocks == 1 and bm.fs_stats().under_replicated == 2


def test_report_of_deleted_files_block_is_invalidated() -> None:
    bm, _, _ = make()
    a = blk(1)
    complete(bm, a)
    report(bm, 0, fin(a))
    bm.remove_blocks([a.block_id])
    assert invalidated(bm, 0) == {a.block_id}
    report(bm, 1, fin(a))  # a node that still lists it
    assert invalidated(bm, 1) == {a.block_id} and bm.block_info(a.block_id) is None


def test_older_genstamp_replica_is_corrupt_then_deleted_when_enough_live() -> None:
    bm, _, _ = make()
    b = blk(1)
    complete(bm, b, repl=2)
    report(bm, 0, fin(b))
    report(bm, 1, fin(Block(b.block_id, 10, 1000)))
    assert bm.fs_stats().corrupt_blocks == 1 and bm.live_replicas(b.block_id) == 1
    assert invalidated(bm, 1) == set()  # kept while it is needed for counting
    report(bm, 2, fin(b))
    assert invalidated(bm, 1) == {b.block_id}
    assert bm.fs_stats().corrupt_blocks == 0 and bm.live_replicas(b.block_id) == 2


@pytest.mark.parametrize("dead", [False, True])
def test_report_from_unregistered_or_dead_node_refused(dead: bool) -> None:
    bm, clock, _ = make(2)
    b = blk(1)
    complete(bm, b)
    if dead:
        clock.t += 631
        bm.heartbeat("dn1", [])
        assert bm.check_heartbeats() == ["dn0"]
    who = "dn0" if dead else "dn9"
    with pytest.raises(UnregisteredNodeError, match=who):
        bm.process_report(who, "s0", [fin(b)])
    with pytest.raises(UnregisteredNodeError):
        bm.process_incremental(who, "s0", [(RECEIVED, b)])
    assert bm.live_replicas(b.block_id) == 0
    assert bm.heartbeat(who, []) == [RegisterCommand()]


def test_dead_node_replicas_leave_and_block_is_rereplicated() -> None:
    bm, clock, _ = make(4)
    b = blk(1)
    placed(bm, b, 2, (0, 1), 4)
    clock.t += 631
    for i in (1, 2, 3):
        bm.heartbeat(f"dn{i}", [])
    assert bm.check_heartbeats() == ["dn0"]
    assert bm.live_replicas(b.block_id) == 1 and bm.fs_stats().under_replicated == 1
    assert bm.compute_reconstruction_work(10) == 1
    assert bm.compute_reconstruction_work(10) == 0  # in flight
    cmds = commands(bm, 1)
    assert len(cmds) == 1 and isinstance(cmds[0], TransferCommand)
    target_uuid, target_sid = cmds[0].targets[0]
    assert target_uuid in ("dn2", "dn3")
    bm.process_incremental(target_uuid, target_sid, [(RECEIVED, b)])
    assert bm.live_replicas(b.block_id) == 2 and bm.fs_stats().under_replicated == 0


def test_a_failed_storage_loses_its_replicas_and_the_rest_of_its_node_serves_on() -> None:
    # dn0 has two volumes; the one holding b fails: the heartbeat says so, b is copied from
    # dn1, and dn0's other volume keeps its replica of c
    bm, _, _ = make(4)
    cap = {"capacity": 1 << 40, "remaining": 1 << 40}
    bm.heartbeat("dn0", [StorageReport("s0", **cap), StorageReport("s0b", **cap)])
    b, c = blk(1), blk(2)
    complete(bm, b, repl=2)
    complete(bm, c, repl=1)
    report(bm, 0, fin(b))
    bm.process_report("dn0", "s0b", [fin(c)])
    report(bm, 1, fin(b))
    assert bm.live_replicas(b.block_id) == 2
    failed = [StorageReport("s0", failed=True, **cap), StorageReport("s0b", **cap)]
    bm.heartbeat("dn0", failed)
    assert bm.live_replicas(b.block_id) == 1 and bm.live_replicas(c.block_id) == 1
    assert bm.fs_stats().under_replicated == 1 and bm.metrics["failed_storages"] == 1
    bm.heartbeat("dn0", failed)  # still failed: counted once
    assert bm.metrics["failed_storages"] == 1
    assert bm.compute_reconstruction_work(10) == 1
    [cmd] = commands(bm, 1)
    assert isinstance(cmd, TransferCommand) and cmd.targets[0][0] != "dn1"  # dn1 is the source


def test_a_copy_in_flight_to_a_node_that_dies_is_scheduled_again_at_once() -> None:
    # The target of a DNA_TRANSFER dies before it reports the copy: the copy will never come,
    # so the block is scheduled again when the target is found dead, not 5 minutes later.
    bm, clock, _ = make(4)
    bm.dm.expire_s = 5.0  # a short heartbeat recheck: dead well inside the 5 minutes
    b = blk(1)
    complete(bm, b, repl=3)
    report(bm, 0, fin(b))
    report(bm, 1, fin(b))
    for i in (2, 3):
        report(bm, i)
    assert bm.compute_reconstruction_work(10) == 1
    [cmd] = [c for i in (0, 1) for c in commands(bm, i)]
    assert isinstance(cmd, TransferCommand)
    [(target, _)] = cmd.targets
    other = "dn3" if target == "dn2" else "dn2"
    assert bm.compute_reconstruction_work(10) == 0  # in flight to the target
    clock.t += 6
    for uuid in ("dn0", "dn1", other):
        bm.heartbeat(uuid, [])
    assert bm.check_heartbeats() == [target]
    assert bm.compute_reconstruction_work(10) == 1  # again, now, to the node still alive
    [again] = [c for i in (0, 1) for c in commands(bm, i)]
    assert isinstance(again, TransferCommand) and [u for u, _ in again.targets] == [other]


def test_a_replica_reported_bad_is_replaced_then_deleted_and_no_report_clears_it() -> None:
    bm, _, _ = make(3)
    b = blk(1)
    complete(bm, b, repl=2)
    report(bm, 0, fin(b))
    report(bm, 1, fin(b))
    report(bm, 2)
    assert bm.mark_reported_corrupt(b.block_id, b.genstamp, "dn0")
    assert [n.uuid for n, _ in bm.locations(b.block_id)] == ["dn1"]  # reads avoid it
    assert bm.live_replicas(b.block_id) == 1
    report(bm, 0, fin(b))  # its DataNode still lists it: a report cannot vouch for the bytes
    assert bm.live_replicas(b.block_id) == 1
    assert bm.compute_reconstruction_work(10) == 1
    [copy] = commands(bm, 1)  # copied from the good replica, to the node without one
    assert isinstance(copy, TransferCommand) and [u for u, _ in copy.targets] == ["dn2"]
    assert invalidated(bm, 0) == set()  # the damaged copy stays until a good one is made
    bm.process_incremental("dn2", "s2", [(RECEIVED, b)])
    assert bm.live_replicas(b.block_id) == 2
    assert invalidated(bm, 0) == {b.block_id}
    assert sorted(n.uuid for n, _ in bm.locations(b.block_id)) == ["dn1", "dn2"]


@pytest.mark.parametrize(
    ("block_id", "node", "storage", "why"),
    [
        (B0 + 99, "dn0", "", "a block no file has"),
        (B0 + 1, "dn9", "", "a node never registered"),
        (B0 + 1, "dn2", "", "a node that does not hold the block"),
        (B0 + 1, "dn0", "s9", "a storage of the node that does not hold it"),
    ],
)
def test_a_bad_block_report_about_a_replica_not_held_changes_nothing(
    block_id: int, node: str, storage: str, why: str
) -> None:
    # a stranger's or a confused reader's report cannot add a replica or mark a good one
    bm, _, _ = make(3)
    b = blk(1)
    complete(bm, b, repl=2)
    report(bm, 0, fin(b))
    report(bm, 1, fin(b))
    report(bm, 2)
    assert not bm.mark_reported_corrupt(block_id, b.genstamp, node, storage), why
    assert bm.live_replicas(b.block_id) == 2
    assert sorted(n.uuid for n, _ in bm.locations(b.block_id)) == ["dn0", "dn1"]
    assert bm.compute_reconstruction_work(10) == 0


def test_the_last_replica_reported_bad_is_never_deleted() -> None:
    bm, _, _ = make(2)
    b = blk(1)
    complete(bm, b, repl=1)
    report(bm, 0, fin(b))
    report(bm, 1)
    assert bm.mark_reported_corrupt(b.block_id, b.genstamp, "dn0")
    assert bm.live_replicas(b.block_id) == 0
    assert bm.compute_reconstruction_work(10) == 0  # no good copy to make one from
    assert invalidated(bm, 0) == set()
    # every replica reported bad (a stranger can send such reports): readers still get it
    assert [n.uuid for n, _ in bm.locations(b.block_id)] == ["dn0"]


def test_no_commands_while_standby_or_in_safe_mode() -> None:
    bm, _, _ = make(3, active=False)
    b, short = blk(1), blk(2)
    complete(bm, b, repl=1)
    complete(bm, short, repl=3)
    report(bm, 0, fin(b), fin(short))  # short: under-replicated
    report(bm, 1, fin(b))  # b: over-replicated
    report(bm, 2, fin(blk(5)))  # unknown
    assert bm.fs_stats().under_replicated == 1
    assert bm.compute_reconstruction_work(10) == 0
    assert all(commands(bm, i) == [] for i in range(3))
    bm.set_active(True)
    bm.safe_mode.enter()
    for i in range(3):
        report(bm, i, *([fin(b)] if i < 2 else []))
    assert all(commands(bm, i) == [] for i in range(3))


def test_replication_lowered_deletes_excess() -> None:
    bm, _, _ = make()
    b = blk(1)
    complete(bm, b)
    for i in range(3):
        report(bm, i, fin(b))
    bm.set_replication([b.block_id], 1)
    gone = [i for i in range(3) if invalidated(bm, i) == {b.block_id}]
    assert len(gone) == 2 and bm.live_replicas(b.block_id) == 1


def test_safe_mode_counts_complete_blocks_with_min_replicas() -> None:
    clock, ns = Clock(), Namespace()
    bm = BlockManager(ns, clock, random.Random(0), safe_mode=SafeMode(extension_s=0))
    bm.register_datanode(reg("dn0"))
    bm.heartbeat("dn0", [StorageReport("s0", remaining=1 << 40)])
    for i in range(3):
        complete(bm, blk(i))
    assert bm.check_safe_mode() and "The reported blocks 0 needs additional 2 blocks" in (
        bm.safe_mode_tip()
    )
    report(bm, 0, fin(blk(0)))
    assert bm.complete_safe == 1 and bm.check_safe_mode()
    report(bm, 0, fin(blk(0)), fin(blk(1)))  # int(3 * 0.999) = 2 blocks are enough
    assert bm.complete_safe == 2 and not bm.check_safe_mode()


# -- HA: standby reports, pending messages, postponed deletions (design §B.6) ----------


def test_report_on_standby_before_the_edit_is_queued_then_applied() -> None:
    bm, _, ns = make(active=False)
    future = Block(B0 + 11, 10, 1011)
    bm.process_incremental("dn0", "s0", [(RECEIVED, future)])
    assert len(bm.pending) == 1 and bm.block_info(future.block_id) is None
    assert bm.process_pending() == 0 and len(bm.pending) == 1  # still ahead of the tailer
    ns.gs, ns.last_id = 1011, B0 + 11
    bm.add_block(future, 3)
    bm.force_complete(future)
    assert bm.process_pending() == 1 and len(bm.pending) == 0
    assert bm.live_replicas(future.block_id) == 1


def test_newer_genstamp_on_standby_is_queued_not_corrupt() -> None:
    bm, _, _ = make(active=False)
    b = blk(1)
    complete(bm, b)
    newer = Block(b.block_id, 20, 1005)  # an append the tailer has not applied
    report(bm, 0, fin(newer))
    assert len(bm.pending) == 1 and bm.fs_stats().corrupt_blocks == 0
    bm.update_block(newer)
    bm.process_pending()
    assert bm.live_replicas(b.block_id) == 1 and bm.fs_stats().corrupt_blocks == 0


def test_pending_bound_refuses_whole_report() -> None:
    bm, _, _ = make(active=False, pending_limit=2)
    known = blk(1)
    complete(bm, known)
    with pytest.raises(PendingMessagesFullError, match="bound is 2"):
        report(bm, 0, fin(known), *(fin(Block(B0 + 100 + i, 1, 2000)) for i in range(3)))
    assert len(bm.pending) == 0 and bm.live_replicas(known.block_id) == 0
    assert bm.pending.refused == 3


def test_deleted_replica_drops_its_queued_message() -> None:
    bm, _, _ = make(active=False)
    f = Block(B0 + 50, 1, 2000)
    bm.process_incremental("dn0", "s0", [(RECEIVED, f), (DELETED, f)])
    assert len(bm.pending) == 0


def test_deletions_postponed_until_each_node_reports_after_failover() -> None:
    bm, _, _ = make(active=False)
    b = blk(1)
    complete(bm, b, repl=2)
    for i in range(3):
        report(bm, i, fin(b))  # over-replicated, seen while standby
    bm.set_active(True)
    assert b.block_id in bm.postponed
    assert all(invalidated(bm, i) == set() for i in range(3))
    bm.process_incremental("dn0", "s0", [(RECEIVED, blk(77))])  # unknown, node stale
    assert invalidated(bm, 0) == set()
    report(bm, 0, fin(b))
    report(bm, 1, fin(b))
    assert b.block_id in bm.postponed  # dn2 has not reported yet
    report(bm, 2, fin(b))
    assert b.block_id not in bm.postponed
    assert sum(len(invalidated(bm, i)) for i in range(3)) == 1
    assert bm.live_replicas(b.block_id) == 2


def test_second_failover_before_reports_postpones_again() -> None:
    bm, _, _ = make(active=False)
    b = blk(1)
    complete(bm, b, repl=2)
    bm.set_active(True)
    for i in range(2):
        report(bm, i, fin(b))
    bm.set_active(False)
    report(bm, 2, fin(b))  # a third replica, seen while standby
    bm.set_active(True)  # the second failover: every node is stale again
    assert b.block_id in bm.postponed
    assert all(invalidated(bm, i) == set() for i in range(3))


def test_reregistering_under_new_address_keeps_replicas() -> None:
    bm, _, _ = make()
    b = blk(1)
    complete(bm, b)
    report(bm, 0, fin(b))
    bm.register_datanode(reg("dn0", ip="10.1.1.1", port=5000))
    assert bm.live_replicas(b.block_id) == 1
    assert [n.reg.ip for n, _ in bm.locations(b.block_id)] == ["10.1.1.1"]


def test_other_node_at_registered_address_loses_old_replicas() -> None:
    bm, _, _ = make()
    b = blk(1)
    complete(bm, b)
    report(bm, 0, fin(b))
    bm.register_datanode(reg("dn7", port=9000))  # dn0's address
    assert "dn0" not in bm.dm.nodes and bm.live_replicas(b.block_id) == 0


# -- decommission (design §B.20) --------------------------------------------------------


def node(bm: BlockManager, i: int) -> DatanodeDescriptor:
    return bm.dm.nodes[f"dn{i}"]


def test_decommission_copies_a_nodes_blocks_elsewhere_then_marks_it_done() -> None:
    bm, _, _ = make(4)
    b = blk(1)
    placed(bm, b, 2, (0, 1), 4)
    assert bm.check_decommission() == []  # nothing decommissioning
    assert bm.start_decommission(node(bm, 0)) and not bm.start_decommission(node(bm, 0))
    # dn0's replica no longer counts: b needs a copy, but is not missing
    assert bm.fs_stats().under_replicated == 1 and bm.fs_stats().missing_blocks == 0
    assert bm.check_decommission() == []
    assert bm.compute_reconstruction_work(10) == 1
    [cmd] = [c for i in (0, 1) for c in commands(bm, i) if isinstance(c, TransferCommand)]
    target_uuid, target_sid = cmd.targets[0]
    assert target_uuid in ("dn2", "dn3")  # never the decommissioning node
    # readers are sent to the decommissioning node last
    assert [n.uuid for n, _ in bm.locations(b.block_id)][-1] == "dn0"
    bm.process_incremental(target_uuid, target_sid, [(RECEIVED, b)])
    assert bm.fs_stats().under_replicated == 0
    assert bm.check_decommission() == ["dn0"]
    assert node(bm, 0).admin_state is AdminState.DECOMMISSIONED
    assert bm.live_replicas(b.block_id) == 3  # its replica stays, and is not deleted
    assert all(b.block_id not in invalidated(bm, i) for i in range(4))


def test_a_block_only_a_decommissioning_node_holds_is_copied_first() -> None:
    bm, _, _ = make(3)
    b = blk(1)
    complete(bm, b, repl=1)
    report(bm, 0, fin(b))
    bm.start_decommission(node(bm, 0))
    assert bm.queue_of[b.block_id] == QUEUE_HIGHEST_PRIORITY
    assert bm.fs_stats().missing_blocks == 0
    assert bm.compute_reconstruction_work(10) == 1
    [cmd] = commands(bm, 0)  # the decommissioning node is the source
    assert isinstance(cmd, TransferCommand) and cmd.targets[0][0] in ("dn1", "dn2")


def test_too_few_nodes_in_service_keep_a_decommission_in_progress() -> None:
    bm, _, _ = make(3)
    b = blk(1)
    placed(bm, b, 3, (0, 1, 2), 3)
    bm.start_decommission(node(bm, 2))
    assert bm.compute_reconstruction_work(10) == 0  # no node left to copy to
    assert bm.check_decommission() == []
    assert node(bm, 2).admin_state is AdminState.DECOMMISSION_INPROGRESS
    # back in service: nothing to copy any more
    assert bm.stop_decommission(node(bm, 2)) and not bm.stop_decommission(node(bm, 2))
    assert bm.fs_stats().under_replicated == 0 and bm.out_of_service == set()


def test_a_recommissioned_nodes_extra_replica_is_deleted() -> None:
    bm, _, _ = make(3)
    b = blk(1)
    complete(bm, b, repl=2)
    for i in range(3):
        report(bm, i)
    bm.start_decommission(node(bm, 0))
    for i in range(3):  # dn0 plus the copy made meanwhile on dn1 and dn2
        report(bm, i, fin(b))
    assert not any(b.block_id in invalidated(bm, i) for i in range(3))
    bm.stop_decommission(node(bm, 0))
    assert sum(b.block_id in invalidated(bm, i) for i in range(3)) == 1


@pytest.mark.parametrize(
    ("text", "ip", "name", "port", "listed"),
    [
        ("127.0.0.1:9866\n", "127.0.0.1", "h", 9866, True),
        ("127.0.0.1:9866\n", "127.0.0.1", "h", 9876, False),
        ("  h:9876  other:1 # a comment 127.0.0.1:9866\n", "127.0.0.1", "h", 9876, True),
        ("# 127.0.0.1:9866", "127.0.0.1", "h", 9866, False),
        ("10.0.0.5", "10.0.0.5", "h", 1234, True),  # a host alone: every node on it
        ("", "127.0.0.1", "h", 9866, False),
    ],
)
def test_the_exclude_list_names_nodes_by_address_or_host(
    text: str, ip: str, name: str, port: int, listed: bool
) -> None:
    assert host_file.listed(host_file.parse_hosts(text), ip, name, port) is listed


def test_an_exclude_file_that_cannot_be_read_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"namenode.hosts_exclude: cannot read .*nope"):
        host_file.read_hosts(str(tmp_path / "nope"))
    assert host_file.read_hosts("") == frozenset()


def test_a_source_takes_at_most_its_streams_of_copies_at_once() -> None:
    # 6 blocks at 1 replica of 2 (the highest priority: its last replica) only on dn0
    bm, _, _ = make(3)
    bm.max_streams, bm.streams_hard_limit = 1, 3
    blocks = [blk(i) for i in range(1, 7)]
    for b in blocks:
        complete(bm, b, repl=2)
    report(bm, 0, *(fin(b) for b in blocks))
    for i in (1, 2):
        report(bm, i)
    assert bm.compute_reconstruction_work(10) == 3  # dn0 is the only source
    assert len(commands(bm, 0)) == 3
    assert bm.compute_reconstruction_work(10) == 3  # its queue emptied by the heartbeat
