"""The block map's bulk paths give the per-block rules' result (design §B.5, §B.14):
vector lookups and inserts against find/insert, a full report processed on columns against
the report taken one replica at a time, and an image load against add_block/force_complete,
over seeded random maps with every kind of replica."""

from __future__ import annotations

import copy
import random
from typing import Any

import numpy as np
import pytest

from qjm.editlog.ops.types import Block
from qjm.namenode.blocks.block_manager import BlockManager, BlockUCState
from qjm.namenode.blocks.block_map import EMPTY, TOMBSTONE, BlockMap
from qjm.namenode.blocks.datanode_manager import DatanodeRegistration, StorageReport
from qjm.namenode.blocks.errors import BlockStateError
from qjm.namenode.blocks.pending_messages import ReplicaState, ReportedReplica
from qjm.namenode.blocks.report_columns import ReplicaColumns
from qjm.namenode.blocks.safe_mode import SafeMode

B0 = 1 << 30
NODES = 5


class Namespace:
    def __init__(self, gs: int, last_id: int) -> None:
        self.gs, self.last_id = gs, last_id

    def current_generation_stamp(self) -> int:
        return self.gs

    def last_allocated_block_id(self) -> int:
        return self.last_id


def ids_of(m: BlockMap) -> dict[int, int]:
    return {m.ids[s]: s for s in m.slots()}


# -- the map's vector operations -----------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_find_many_and_insert_many_agree_with_find_and_insert(seed: int) -> None:
    rng = random.Random(seed)
    m = BlockMap()
    keys = rng.sample(range(-(1 << 40), 1 << 40), 3000) + [B0 + i for i in range(2000)]
    for k in keys[:1500]:
        m.insert(k, k & 0xFFFF, 7, 3, 0)
    for k in keys[:500]:
        m.delete(m.find(k))  # tombstones for insert_many to reuse
    slots = m.insert_many(
        np.array(keys[1500:], dtype=np.int64),
        np.array([k & 0xFFFF for k in keys[1500:]], dtype=np.int64),
        np.full(len(keys) - 1500, 7, dtype=np.int64),
        np.full(len(keys) - 1500, 3),
        np.zeros(len(keys) - 1500, dtype=np.uint8),
    )
    assert slots.tolist() == [m.find(k) for k in keys[1500:]]
    assert len(m) == len(keys) - 500
    probe = np.array([*keys, B0 - 1, 5, -7], dtype=np.int64)
    assert m.find_many(probe).tolist() == [m.find(int(k)) for k in probe]
    assert all(m.nbytes[m.find(k)] == k & 0xFFFF for k in keys[500:])
    assert m.used <= m.capacity * 0.75
    with pytest.raises(KeyError, match="already in the map"):
        m.insert_many(np.array([keys[-1]]), *(np.zeros(1, dtype=np.int64),) * 4)
    with pytest.raises(KeyError, match="listed twice"):
        m.insert_many(np.array([3, 3]), *(np.zeros(2, dtype=np.int64),) * 4)
    with pytest.raises(ValueError, match="reserved"):
        m.insert_many(np.array([EMPTY, TOMBSTONE]), *(np.zeros(2, dtype=np.int64),) * 4)


def test_grow_keeps_every_column() -> None:
    m = BlockMap()
    for k in range(100):
        s = m.insert(B0 + k, k, k + 1, k % 7 + 1, k % 3)
        for st in range(k % 5):
            m.add_location(s, st * 10 + k % 2)
    m.insert_many(np.arange(B0 + 100, B0 + 5000), *(np.ones(4900, dtype=np.int64),) * 4)
    for k in range(100):
        s = m.find(B0 + k)
        assert (m.nbytes[s], m.gs[s], m.repl[s], m.state[s]) == (k, k + 1, k % 7 + 1, k % 3)
        assert sorted(m.locations(s)) == sorted(st * 10 + k % 2 for st in range(k % 5))
    assert m.capacity == 8192 and len(m) == 5000


# -- a full report on columns against one replica at a time ---------------------------


def build(rng: random.Random, blocks: int, *, active: bool) -> BlockManager:
    """A manager with blocks in every state, replicas, corrupt ones, excess and deletions."""
    ns = Namespace(1000 + 50, B0 + blocks)
    bm = BlockManager(
        ns, lambda: 1000.0, random.Random(1), safe_mode=SafeMode(extension_s=0), pending_limit=10**6
    )
    for i in range(NODES):
        u = f"dn{i}"
        bm.register_datanode(DatanodeRegistration(u, "127.0.0.1", u, 9000 + i, 1, 2))
        bm.heartbeat(u, [StorageReport(f"s{i}", capacity=1 << 40, remaining=(1 << 30) * (i + 1))])
    bm.safe_mode.leave()
    bm.set_active(True)
    for k in range(blocks):
        b = Block(B0 + k, rng.choice((10, 20)), 1000 + rng.randrange(40))
        bm.add_block(b, rng.choice((1, 2, 3, 3, 3, 5)))
        kind = rng.random()
        if kind < 0.8:
            bm.force_complete(b)
        elif kind < 0.9:
            bm.commit_block(b)
    for i in range(NODES):  # what each node held before: its first report, per replica
        reps = [
            ReportedReplica(bm.block_info(B0 + k).block)  # type: ignore[union-attr]
            for k in range(blocks)
            if rng.random() < 0.6
        ]
        bm._process_report_each(*bm._reporting(f"dn{i}", f"s{i}"), reps)
    for k in rng.sample(range(blocks), blocks // 20):  # corrupt replicas
        info = bm.block_info(B0 + k)
        assert info is not None
        i = rng.randrange(NODES)
        bad = Block(info.block.block_id, info.block.num_bytes, info.block.genstamp - 1)
        bm.process_incremental(f"dn{i}", f"s{i}", [(bmod_received(), bad)])
    bm.remove_blocks([B0 + k for k in rng.sample(range(blocks), blocks // 50)])
    bm.set_active(active)  # every storage stale: deletions postponed until reports
    return bm


def bmod_received() -> Any:
    from qjm.namenode.blocks.block_manager import ReceivedDeletedStatus

    return ReceivedDeletedStatus.RECEIVED


def random_report(rng: random.Random, bm: BlockManager, blocks: int) -> list[ReportedReplica]:
    """Most blocks as stored, some with another genstamp, length or state, unknown and
    future ids, in random order."""
    out = []
    for k in range(blocks + blocks // 20):
        info = bm.block_info(B0 + k)
        if rng.random() < 0.3:
            continue
        b = Block(B0 + k, 10, 1000 + rng.randrange(60)) if info is None else info.block
        r = rng.random()
        if r < 0.05:
            b = Block(b.block_id, b.num_bytes, b.genstamp + rng.choice((-1, 1, 20)))
        elif r < 0.08:
            b = Block(b.block_id, b.num_bytes + 1, b.genstamp)
        state = ReplicaState.FINALIZED
        if rng.random() < 0.06:
            state = rng.choice(list(ReplicaState))
        out.append(ReportedReplica(b, state))
    rng.shuffle(out)
    return out


def snapshot(bm: BlockManager) -> dict[str, Any]:
    m = bm.map
    return {
        "map": {
            m.ids[s]: (m.nbytes[s], m.gs[s], m.repl[s], m.state[s], sorted(m.locations(s)))
            for s in m.slots()
        },
        "expected": bm.expected,
        "corrupt": bm.corrupt,
        "queues": [set(q) for q in bm.queues],
        "queue_of": bm.queue_of,
        "postponed": bm.postponed,
        "invalidates": bm.invalidates,
        "totals": (bm.complete_total, bm.complete_safe),
        "metrics": dict(bm.metrics),
        "pending": {b: list(v) for b, v in bm.pending.by_block.items()},
        "storages": [
            (st.storage_id, st.block_report_count, st.block_contents_stale) for st in bm.dm.storages
        ],
    }


def per_replica_report(bm: BlockManager, i: int, reps: list[ReportedReplica]) -> None:
    """process_report as it was: every replica through the per-replica rules."""
    node, st = bm._reporting(f"dn{i}", f"s{i}")
    bm._process_report_each(node, st, reps)
    st.block_report_count += 1
    bm.metrics["block_reports"] += 1
    if bm.active and st.block_contents_stale:
        st.block_contents_stale = False
        bm._rescan_postponed()


@pytest.mark.parametrize("active", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_report_on_columns_equals_per_replica(seed: int, active: bool) -> None:
    rng = random.Random(seed)
    blocks = 800
    base = build(rng, blocks, active=active)
    sent: dict[int, list[ReportedReplica]] = {}
    bulk_steps = 0
    for round_ in range(4):  # a first report after the failover, a repeat, new ones, empty
        for i in range(NODES):
            if round_ == 1:
                reps = sent[i]
            elif round_ == 3 and i == 0:
                reps = []
            else:
                reps = random_report(rng, base, blocks)
            sent[i] = reps
            one, bulk = copy.deepcopy(base), copy.deepcopy(base)
            per_replica_report(one, i, reps)
            each = bulk._process_reported
            calls = 0

            def counted(*a: Any, each: Any = each, **kw: Any) -> None:
                nonlocal calls
                calls += 1
                each(*a, **kw)

            bulk._process_reported = counted  # type: ignore[method-assign]
            bulk.process_report(f"dn{i}", f"s{i}", ReplicaColumns.from_replicas(reps))
            del bulk._process_reported
            bulk_steps += len(reps) - calls
            assert snapshot(bulk) == snapshot(one), (seed, round_, i)
            base = bulk if i % 2 else one
            if round_ == 1 and i == 1:
                base.set_replication(
                    [B0 + k for k in range(0, blocks, 7) if base.map.find(B0 + k) >= 0], 1
                )
    assert base.complete_safe > 0 and base.metrics["block_reports"] == 4 * NODES
    assert bulk_steps > blocks  # thousands of replicas took the bulk path


def test_report_with_a_duplicate_id_takes_the_per_replica_path() -> None:
    rng = random.Random(7)
    base = build(rng, 300, active=True)
    info = base.block_info(B0 + 1)
    assert info is not None
    reps = [ReportedReplica(info.block), ReportedReplica(info.block, ReplicaState.RWR)]
    reps += random_report(rng, base, 300)
    one, bulk = copy.deepcopy(base), copy.deepcopy(base)
    per_replica_report(one, 0, reps)
    bulk.process_report("dn0", "s0", reps)
    assert snapshot(bulk) == snapshot(one)


# -- an image load against add_block and force_complete -------------------------------


@pytest.mark.parametrize("active", [True, False])
def test_load_blocks_equals_add_and_force_complete(active: bool) -> None:
    rng = random.Random(3)
    one = build(rng, 200, active=active)
    bulk = copy.deepcopy(one)
    new = [
        (Block(B0 + 10_000 + k, rng.randrange(100), 1001), rng.choice((0, 1, 3, 70000)))
        for k in range(3000)
    ]
    complete = [rng.random() < 0.9 for _ in new]
    for (b, repl), done in zip(new, complete, strict=True):
        one.add_block(b, repl)
        if done:
            one.force_complete(b)
    bulk.load_blocks(
        np.array([b.block_id for b, _ in new]),
        np.array([b.num_bytes for b, _ in new]),
        np.array([b.genstamp for b, _ in new]),
        np.array([r for _, r in new]),
        np.array(complete),
    )
    assert snapshot(bulk) == snapshot(one)
    assert bulk.block_info(B0 + 10_000) is not None
    with pytest.raises(BlockStateError, match=f"block {B0 + 10_000} is already in the map"):
        bulk.load_blocks(*(np.array([B0 + 10_000]),) * 4, np.array([True]))
    assert BlockUCState(bulk.map.state[bulk.map.find(B0 + 10_000)]) in tuple(BlockUCState)
