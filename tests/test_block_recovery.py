"""Block recovery (design §B.16): the primary's length rules as a table, and the
namespace's lease release and commitBlockSynchronization plans."""

from __future__ import annotations

import pytest

from qjm.datanode.block_recovery import (
    BlockRecoveryError,
    ReplicaRecord,
    SyncChoice,
    choose_sync,
)
from qjm.datanode.replica import ReplicaState
from qjm.editlog.ops import Block, CloseOp, ReassignLeaseOp, SetGenstampV2Op
from qjm.hdfs.datanode_protocol import DatanodeId
from qjm.namenode.errors import AlreadyBeingCreatedError, NamenodeError
from qjm.namenode.lease_manager import LeaseClock
from qjm.namenode.namespace.recovery import NAMENODE_LEASE_HOLDER, LastBlockFacts
from test_namespace_blocks import SU, W, replay

F, RBW, RWR = ReplicaState.FINALIZED, ReplicaState.RBW, ReplicaState.RWR


def rec(name: str, state: ReplicaState, n: int, gs: int = 1001) -> ReplicaRecord:
    return ReplicaRecord(DatanodeId("127.0.0.1", name, name, 1, 2, 3), state, n, gs)


def names(c: SyncChoice) -> list[str]:
    return [r.node.datanode_uuid for r in c.participants]


@pytest.mark.parametrize(
    ("records", "truncate", "length", "chosen", "delete"),
    [
        # the shortest RBW replica sets the length; every RBW takes part
        ([rec("a", RBW, 300), rec("b", RBW, 200), rec("c", RBW, 250)], None, 200, "abc", False),
        # finalized beats RBW: its length, and RBW replicas of that length join
        ([rec("a", F, 300), rec("b", RBW, 200), rec("c", RBW, 300)], None, 300, "ac", False),
        # RBW beats RWR (a replica found at a DataNode's restart)
        ([rec("a", RWR, 100), rec("b", RBW, 400)], None, 400, "b", False),
        ([rec("a", RWR, 100), rec("b", RWR, 90)], None, 90, "ab", False),
        # older than the block's stamp, or empty: no part; none left: the block is deleted
        ([rec("a", RBW, 500, gs=1000), rec("b", RBW, 200)], None, 200, "b", False),
        ([rec("a", RBW, 0), rec("b", RBW, 0, gs=999)], None, 0, "", True),
        ([], None, 0, "", True),
        # a truncate's length wins
        ([rec("a", F, 300), rec("b", F, 300)], 120, 120, "ab", False),
    ],
)
def test_choose_sync(
    records: list[ReplicaRecord], truncate: int | None, length: int, chosen: str, delete: bool
) -> None:
    c = choose_sync(1001, records, truncate)
    assert (c.length, "".join(names(c)), c.delete_block) == (length, chosen, delete)


def test_finalized_replicas_of_different_lengths_are_refused() -> None:
    with pytest.raises(BlockRecoveryError, match="Inconsistent size of finalized replicas"):
        choose_sync(1001, [rec("a", F, 300), rec("b", F, 200)], None)


def test_lease_clock_soft_and_hard_limits() -> None:
    now = [100.0]
    c = LeaseClock(60, 3600, lambda: now[0])
    assert not c.expired_soft("x")  # first seen: its clock starts now
    now[0] += 61
    assert c.expired_soft("x") and not c.expired_hard("x")
    c.renew("x")
    assert not c.expired_soft("x")
    now[0] += 3601
    assert c.expired_hard("x")


def facts(
    committed: bool = False, has_min: bool = False, located: int = 3, recovering: bool = False
) -> LastBlockFacts:
    return LastBlockFacts(
        lambda b: committed, lambda b: has_min, lambda b: located, lambda b: recovering
    )


def open_file(w: W, sizes: list[int]) -> Block:
    """/d/f open by c1 with blocks of sizes (the last written but not committed)."""
    w.create("/d/f")
    prev: Block | None = None
    for n in sizes:
        b = w.add("/d/f", prev).block
        prev = Block(b.block_id, n, b.genstamp)
    last = w.blocks("/d/f")[-1]
    return last


def test_release_starts_a_recovery_under_a_new_stamp_and_reassigns_the_lease() -> None:
    w = W()
    last = open_file(w, [100, 50])
    rel = w.ns.plan_release_lease("/d/f", NAMENODE_LEASE_HOLDER, facts(has_min=True), w.now)
    gs = w.ns.block_ids.genstamp_v2 + 1
    assert not rel.closed
    assert rel.ops == [
        SetGenstampV2Op(genstamp_v2=gs),
        ReassignLeaseOp(lease_holder="c1", path="/d/f", new_holder=NAMENODE_LEASE_HOLDER),
    ]
    assert rel.recovery is not None
    assert (rel.recovery.block, rel.recovery.recovery_id) == (last, gs)
    w.run(rel.ops)
    assert w.ns.open_files() == [("/d/f", NAMENODE_LEASE_HOLDER)]
    # a recovery under way: no new stamp, nothing to log
    again = w.ns.plan_release_lease("/d/f", NAMENODE_LEASE_HOLDER, facts(recovering=True), w.now)
    assert again.ops == [] and again.recovery is None

    # the primary's commit: a stale recovery id is refused, the right one closes the file
    with pytest.raises(NamenodeError, match=f"does not match current recovery id {gs}"):
        w.ns.plan_commit_block_synchronization(last, gs - 1, gs, 40, True, False, w.now)
    path, ops = w.ns.plan_commit_block_synchronization(last, gs, gs, 40, True, False, w.now)
    assert path == "/d/f" and len(ops) == 1 and isinstance(ops[0], CloseOp)
    assert ops[0].blocks[-1] == Block(last.block_id, 40, gs)
    w.run(ops)
    st = w.ns.stat("/d/f", SU)
    assert st is not None and not st.under_construction and st.length == 140
    assert replay(w.log).dump() == w.ns.dump()
    # a retried commit for the closed file does nothing
    assert w.ns.plan_commit_block_synchronization(last, gs, None, 40, True, False, w.now) == (
        None,
        [],
    )


def test_release_closes_at_once_a_committed_and_replicated_last_block() -> None:
    w = W()
    open_file(w, [100])
    rel = w.ns.plan_release_lease("/d/f", "c2", facts(committed=True, has_min=True), w.now)
    assert rel.closed and [type(op) for op in rel.ops] == [CloseOp]


def test_release_drops_an_empty_last_block_no_datanode_holds() -> None:
    w = W()
    open_file(w, [0])
    rel = w.ns.plan_release_lease("/d/f", None, facts(located=0), w.now)
    assert rel.closed and isinstance(rel.ops[0], CloseOp) and rel.ops[0].blocks == ()


def test_release_waits_for_a_penultimate_block_without_replicas() -> None:
    w = W()
    open_file(w, [100, 10])
    with pytest.raises(AlreadyBeingCreatedError, match="waiting to be minimally replicated"):
        w.ns.plan_release_lease("/d/f", None, facts(committed=True, has_min=False), w.now)


def test_a_truncate_inside_a_block_is_recovered_to_the_cut_length() -> None:
    w = W()
    blocks = w.write("/d/f", [100, 100])
    t = w.ns.plan_truncate("/d/f", SU, 130, "c2", "m2", 77)
    w.run(t.ops)
    assert t.recover is not None
    # the block keeps what its replicas hold until the recovery cuts it (HDFS's in-place)
    assert w.blocks("/d/f")[-1] == blocks[1]
    assert w.ns.truncate_block("/d/f") == t.recover
    # a later recovery (the lease monitor) cuts to the same length under its own stamp
    rel = w.ns.plan_release_lease("/d/f", None, facts(committed=True, has_min=True), w.now)
    assert rel.recovery is not None and rel.recovery.truncate_block is not None
    assert rel.recovery.truncate_block.num_bytes == 30
    _, ops = w.ns.plan_commit_block_synchronization(
        blocks[1], t.recover.genstamp, t.recover.genstamp, 30, True, False, w.now
    )
    w.run(ops)
    st = w.ns.stat("/d/f", SU)
    assert st is not None and st.length == 130 and not st.under_construction
    assert w.ns.truncate_block("/d/f") is None
