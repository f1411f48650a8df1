"""DatanodeManager rules: registration, heartbeats, liveness, reports (design §B.5)."""

from __future__ import annotations

import pytest

from qjm.namenode.blocks.datanode_manager import (
    DatanodeManager,
    DatanodeRegistration,
    ReportType,
    StorageReport,
    expiry_interval,
)
from qjm.namenode.blocks.errors import UnregisteredNodeError


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def reg(uuid: str, ip: str = "127.0.0.1", port: int = 9866) -> DatanodeRegistration:
    return DatanodeRegistration(uuid, ip, "h-" + uuid, port, port + 1, port + 2)


def test_expiry_is_hdfs_formula() -> None:
    assert expiry_interval(300, 3) == 630
    assert DatanodeManager(Clock()).expire_s == 630


def test_new_node_registers_and_heartbeats() -> None:
    dm = DatanodeManager(Clock())
    dm.register(reg("a"))
    d = dm.heartbeat("a", [StorageReport("s1", capacity=100, dfs_used=10, remaining=90)], 4)
    assert not d.register
    node = dm.nodes["a"]
    assert node.xceiver_count == 4 and node.storages["s1"].remaining == 90
    assert not node.reported_since_registration()


@pytest.mark.parametrize("uuid", ["never-registered", "dead"])
def test_unknown_or_dead_node_is_told_to_register(uuid: str) -> None:
    clock = Clock()
    dm = DatanodeManager(clock)
    dm.register(reg("dead"))
    clock.t += 631
    assert [n.uuid for n in dm.expire_dead()] == ["dead"]
    assert dm.heartbeat(uuid, [], 0).register
    with pytest.raises(UnregisteredNodeError, match=uuid):
        dm.get_registered(uuid)


def test_same_uuid_new_address_replaces_entry() -> None:
    dm = DatanodeManager(Clock())
    dm.register(reg("a", port=1000))
    dm.heartbeat("a", [StorageReport("s1")], 0)
    dm.storages[0].block_report_count = 1
    r = dm.register(reg("a", ip="10.0.0.2", port=2000))
    assert r.replaced_address and r.removed == ()
    assert list(dm.nodes) == ["a"] and dm.nodes["a"].reg.ip == "10.0.0.2"
    assert ("127.0.0.1", 1000) not in dm.by_xfer and dm.by_xfer[("10.0.0.2", 2000)] == "a"
    assert dm.nodes["a"].storages["s1"].block_report_count == 0  # next report is a first


def test_other_uuid_at_registered_address_removes_old() -> None:
    dm = DatanodeManager(Clock())
    dm.register(reg("old"))
    r = dm.register(reg("new"))
    assert r.removed == ("old",) and list(dm.nodes) == ["new"]


def test_live_dead_stale_and_report_kinds() -> None:
    clock = Clock()
    dm = DatanodeManager(clock, heartbeat_s=1, recheck_s=10, stale_s=5)
    assert dm.expire_s == 30
    dm.register(reg("a", port=1))
    dm.register(reg("b", port=2))
    clock.t += 6
    dm.heartbeat("a", [], 0)
    assert not dm.is_stale(dm.nodes["a"]) and dm.is_stale(dm.nodes["b"])
    clock.t += 25  # b silent for 31 s
    assert [n.uuid for n in dm.datanode_report(ReportType.LIVE)] == ["a"]
    assert [n.uuid for n in dm.datanode_report(ReportType.DEAD)] == ["b"]
    assert [n.uuid for n in dm.datanode_report(ReportType.ALL)] == ["a", "b"]


def test_totals_count_live_nodes_only() -> None:
    clock = Clock()
    dm = DatanodeManager(clock)
    dm.register(reg("a", port=1))
    dm.register(reg("b", port=2))
    dm.heartbeat("a", [StorageReport("sa", capacity=100, dfs_used=30, remaining=70)], 0)
    dm.heartbeat("b", [StorageReport("sb", capacity=50, dfs_used=5, remaining=45)], 0)
    assert (dm.totals().capacity, dm.totals().live) == (150, 2)
    clock.t += 700
    dm.heartbeat("a", [], 0)
    t = dm.totals()
    assert (t.capacity, t.dfs_used, t.remaining, t.live, t.dead) == (100, 30, 70, 1, 1)


def test_negative_figures_are_clamped() -> None:
    dm = DatanodeManager(Clock())
    dm.register(reg("a"))
    dm.heartbeat("a", [StorageReport("s", capacity=-5, remaining=-1)], -3)
    n = dm.nodes["a"]
    assert (n.capacity(), n.remaining(), n.xceiver_count) == (0, 0, 0)
