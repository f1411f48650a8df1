"""BlockPlacementPolicyDefault for one rack (design §B.7)."""

from __future__ import annotations

import random

from qjm.namenode.blocks.datanode_manager import (
    AdminState,
    DatanodeDescriptor,
    DatanodeRegistration,
    DatanodeStorageInfo,
    StorageState,
)
from qjm.namenode.blocks.placement import choose_targets

BS = 100


def node(uuid: str, remaining: int = 10 * BS, load: int = 0) -> DatanodeDescriptor:
    d = DatanodeDescriptor(DatanodeRegistration(uuid, "127.0.0.1", uuid, 1, 2, 3), 0.0)
    d.storages["s-" + uuid] = DatanodeStorageInfo("s-" + uuid, 0, uuid, remaining=remaining)
    d.xceiver_count = load
    return d


def uuids(ts: list) -> list[str]:  # type: ignore[type-arg]
    return [t.node.uuid for t in ts]


def test_distinct_nodes_and_fewer_when_short() -> None:
    live = [node("a"), node("b")]
    got = choose_targets(3, live, BS, random.Random(1))
    assert sorted(uuids(got)) == ["a", "b"]


def test_space_decommission_exclusion_and_failed_storage() -> None:
    full = node("full", remaining=BS - 1)
    dec = node("dec")
    dec.admin_state = AdminState.DECOMMISSION_INPROGRESS
    bad = node("bad")
    bad.storages["s-bad"].state = StorageState.FAILED
    sched = node("sched", remaining=2 * BS)
    sched.blocks_scheduled = 2
    live = [full, dec, bad, sched, node("ex"), node("ok")]
    got = choose_targets(5, live, BS, random.Random(0), excluded={"ex"})
    assert uuids(got) == ["ok"]


def test_favored_then_writer_first() -> None:
    live = [node(u) for u in "abcde"]
    got = choose_targets(3, live, BS, random.Random(0), writer="d", favored=["c", "zz"])
    assert uuids(got)[:2] == ["c", "d"] and len(set(uuids(got))) == 3


def test_writer_not_a_datanode_is_ignored() -> None:
    live = [node(u) for u in "ab"]
    assert len(choose_targets(1, live, BS, random.Random(0), writer="client-host")) == 1


def test_overloaded_node_avoided_and_less_loaded_preferred() -> None:
    live = [node("busy", load=100), node("x", load=1), node("y", load=1), node("z", load=50)]
    seen = set()
    for seed in range(50):
        seen.update(uuids(choose_targets(1, live, BS, random.Random(seed))))
    assert "busy" not in seen  # over twice the average load
    assert seen <= {"x", "y", "z"} and {"x", "y"} <= seen


def test_random_is_seeded() -> None:
    live = [node(u) for u in "abcdefgh"]
    a = uuids(choose_targets(3, live, BS, random.Random(7)))
    assert a == uuids(choose_targets(3, live, BS, random.Random(7)))


def test_one_open_connection_does_not_make_a_node_of_an_idle_cluster_too_busy() -> None:
    # DataNodes report their connections plus one (HDFS counts the xceiver server's thread)
    live = [node("writing", load=2), node("x", load=1), node("y", load=1)]
    got = choose_targets(3, live, BS, random.Random(3))
    assert sorted(uuids(got)) == ["writing", "x", "y"]
    # reported without the one, the same moment excluded the node: three targets impossible
    bare = [node("writing", load=1), node("x", load=0), node("y", load=0)]
    assert "writing" not in uuids(choose_targets(3, bare, BS, random.Random(3)))
