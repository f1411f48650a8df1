"""`qjm cluster up` with ZooKeeper and automatic failover, as real processes: ZooKeeper,
3 JournalNodes, 2 NameNodes and their ZKFCs; kill -9 of the active NameNode."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import read_json, run_qjm
from ha_cluster import (
    auto_cluster,
    free_cluster_ports,
    ha_states,
    namenode_addresses,
    processes_of,
    wait_single_active,
)
from qjm.cluster.hadoop_conf import read_site
from qjm.cluster.launcher import cluster_up, plan_cluster_ports, read_cluster
from qjm.cluster.process import LaunchError, pid_alive
from qjm.config import FailoverControllerSettings, ZooKeeperSettings, load_config
from qjm.namenode.client import NameNodeClient, NoActiveNameNodeError
from qjm.testing.wait import wait_until

DAEMONS = ("zk1", "jn1", "jn2", "jn3", "nn1", "nn2", "zkfc1", "zkfc2")


def up(directory: Path, *args: str) -> dict[str, Any]:
    """`qjm cluster up --dir D <args> --json --insecure` (no DataNodes unless args ask):
    cluster.json's contents."""
    if "--datanodes" not in args:
        args = (*args, "--datanodes", "0")
    args = (*args, "--insecure")
    r = run_qjm("cluster", "up", "--dir", str(directory), *args, "--json", timeout=240)
    assert r.returncode == 0, f"cluster up failed:\n{r.stderr}\n{r.stdout}"
    return read_json(r.stdout)


def down(directory: Path) -> None:
    """`qjm cluster down --dir D`."""
    r = run_qjm("cluster", "down", "--dir", str(directory), timeout=120)
    assert r.returncode == 0, r.stderr


async def mkdirs_until(
    client: NameNodeClient, prefix: str, done: Any, acked: list[str], within: float
) -> None:
    """mkdirs prefix/0, prefix/1, ... until done() (retrying one not acknowledged yet);
    every acknowledged path goes to acked."""
    deadline = time.monotonic() + within
    i = 0
    while not done():
        assert time.monotonic() < deadline, f"workload stuck after {len(acked)} ops"
        path = f"{prefix}/{i}"
        try:
            ok = await client.mkdirs(path)
        except NoActiveNameNodeError:
            continue  # not acknowledged: tried again (mkdirs of an existing dir is true)
        assert ok, path
        acked.append(path)
        i += 1


async def missing_on(address: str, paths: list[str]) -> list[str]:
    """The paths the NameNode at address does not have."""
    async with NameNodeClient([address], max_rounds=1) as nn:
        return [p for p in paths if await nn.stat(p) is None]


@pytest.mark.slow
def test_cluster_up_kill_the_active_fails_over_by_itself(tmp_path: Path) -> None:
    d = tmp_path / "cluster"
    base = free_cluster_ports()
    cluster = up(d, "--base-port", str(base))
    try:
        for name in DAEMONS:
            entry = cluster[name]
            assert pid_alive(entry["pid"]), name
            assert Path(entry["log"]).exists(), name
        assert cluster["automatic_failover"] is True
        assert cluster["zk1"]["kind"] == "zookeeper"
        assert cluster["zk1"]["rpc"] == f"127.0.0.1:{base + 12}"  # after 5 x 2 + 2 ZKFC ports
        assert cluster["zookeeper"] == cluster["zk1"]["rpc"]
        for i in (1, 2):
            zkfc = cluster[f"zkfc{i}"]
            assert zkfc["kind"] == "zkfc" and zkfc["namenode"] == f"nn{i}"
            assert zkfc["rpc"] == f"127.0.0.1:{base + 9 + i}"
        cfg = load_config(d / "cluster.toml")
        assert cfg.namenode.automatic_failover
        assert cfg.zookeeper.quorum == cluster["zookeeper"]
        assert cfg.zkfc.fencing_methods == "shell(true)"
        assert cfg.zkfc_address_of("nn2") == cluster["zkfc2"]["rpc"]
        hdfs_site = read_site(d / "hadoop-conf" / "hdfs-site.xml")
        assert hdfs_site["dfs.ha.automatic-failover.enabled"] == "true"
        core_site = read_site(d / "hadoop-conf" / "core-site.xml")
        assert core_site["ha.zookeeper.quorum"] == cluster["zookeeper"]

        states = ha_states(cluster)
        assert sorted(states.values()) == ["active", "standby"], states
        active = wait_single_active(cluster, 10)
        other = next(n for n in ("nn1", "nn2") if n != active)

        acked: list[str] = []
        addresses = list(namenode_addresses(cluster).values())
        killed_at: list[float] = []

        async def workload() -> None:
            async with NameNodeClient(addresses, timeout=10.0, max_rounds=8) as client:
                await mkdirs_until(client, "/before", lambda: len(acked) >= 30, acked, 60)
                os.kill(cluster[active]["pid"], signal.SIGKILL)
                killed_at.append(time.monotonic())
                n = len(acked)
                await mkdirs_until(client, "/after", lambda: len(acked) >= n + 30, acked, 120)

        asyncio.run(workload())
        assert not pid_alive(cluster[active]["pid"])
        assert wait_single_active(cluster, 60, exclude=[active]) == other
        assert ha_states(cluster) == {active: "down", other: "active"}
        assert asyncio.run(missing_on(cluster[other]["rpc"], acked)) == []
        assert len(acked) == 60

        st = run_qjm("cluster", "status", "--dir", str(d), "--json")
        assert st.returncode == 3, st.stderr  # a daemon is not running
        status = read_json(st.stdout)
        daemons = status["daemons"]
        assert daemons[active]["running"] is False and daemons[active]["ha_state"] == "down"
        assert daemons[other]["running"] is True and daemons[other]["ha_state"] == "active"
        assert daemons["zk1"]["mode"] == "standalone"
        assert daemons["zkfc1"]["running"] and daemons["zkfc2"]["running"]
        table = run_qjm("cluster", "status", "--dir", str(d))
        assert table.returncode == 3
        assert re.search(r"^zk1\s+running\s+zookeeper standalone\s", table.stdout, re.M)
        assert re.search(rf"^{active}\s+stopped\s+down\s", table.stdout, re.M), table.stdout
        assert re.search(rf"^{other}\s+running\s+active\s", table.stdout, re.M), table.stdout
        assert re.search(r"^zkfc2\s+running\s+zkfc of nn2\s", table.stdout, re.M)

        # `qjm cluster start` brings the killed NameNode back as standby, recorded in
        # cluster.json; a running daemon, ZooKeeper alone and an unknown name are refused
        old_pid = cluster[active]["pid"]
        r = run_qjm("cluster", "start", "--dir", str(d), active, timeout=120)
        assert r.returncode == 0, r.stderr
        new_pid = read_cluster(d)[active]["pid"]
        assert new_pid != old_pid and pid_alive(new_pid)
        assert f"{active} started (pid {new_pid})" in r.stdout
        back = {active: "standby", other: "active"}
        wait_until(f"{back}", lambda: ha_states(cluster) == back or None, timeout_s=60)
        for name, says in (
            (other, f"{other} is running (pid {cluster[other]['pid']})"),
            (
                "zk1",
                "zk1 is zookeeper: only JournalNodes, NameNodes, DataNodes and ZKFCs start alone",
            ),
            ("nn9", "no daemon nn9 in this cluster"),
        ):
            r = run_qjm("cluster", "start", "--dir", str(d), name)
            assert r.returncode != 0 and says in r.stderr, r.stderr
            assert "Traceback" not in r.stderr
        cluster = read_cluster(d)
    finally:
        down(d)
    assert [n for n in DAEMONS if pid_alive(cluster[n]["pid"])] == []
    assert processes_of(d) == []

    # started again in the same directory: same ports, ZooKeeper's data kept, one active,
    # every acknowledged op still there
    r = run_qjm("cluster", "up", "--dir", str(d), timeout=240)  # the table for people
    assert r.returncode == 0, f"cluster up failed:\n{r.stderr}\n{r.stdout}"
    again = read_cluster(d)
    try:
        # made with --insecure, started again without a flag: still open, no KDC
        assert "kdc" not in again and "kerberos:" not in r.stdout, r.stdout
        for name in DAEMONS:
            assert again[name]["rpc"] == cluster[name]["rpc"], name
        now_active = wait_single_active(again, 10)
        nn = again[now_active]
        row = rf"^{now_active}\s+active\s+{nn['pid']}\s+{nn['rpc']}\s+http://{nn['http']}/\s+"
        assert re.search(row + re.escape(nn["log"]), r.stdout, re.M), r.stdout
        assert f"active:       {now_active} http://{nn['http']}/" in r.stdout
        zkfc = again["zkfc1"]
        assert re.search(rf"^zkfc1\s+zkfc of nn1\s+{zkfc['pid']}\s+{zkfc['rpc']}\s", r.stdout, re.M)
        assert asyncio.run(missing_on(again[now_active]["rpc"], acked)) == []
    finally:
        down(d)
    assert processes_of(d) == []


@pytest.mark.slow
@pytest.mark.parametrize(("offset", "daemon"), [(10, "zkfc1"), (11, "zkfc2"), (12, "ZooKeeper")])
def test_cluster_up_refuses_a_taken_zkfc_or_zookeeper_port(
    tmp_path: Path, offset: int, daemon: str
) -> None:
    base = free_cluster_ports()
    d = tmp_path / "c"
    with socket.socket() as s:
        s.bind(("127.0.0.1", base + offset))
        s.listen()
        r = run_qjm("cluster", "up", "--dir", str(d), "--base-port", str(base), "--datanodes", "0")
    assert r.returncode == 1
    assert f"port {base + offset} for {daemon}" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert not (d / "cluster.json").exists()
    assert not (d / "logs").exists() and not (d / "zookeeper").exists()  # nothing started
    assert processes_of(d) == []


@pytest.mark.slow
def test_a_failed_start_leaves_nothing_running_zookeeper_included(tmp_path: Path) -> None:
    d = tmp_path / "c"
    with pytest.raises(LaunchError, match=r"zkfc[12] exited with code"):
        cluster_up(
            d,
            namenodes=2,
            zookeeper=True,
            base_port=free_cluster_ports(),
            zookeeper_settings=ZooKeeperSettings(session_timeout_ms=4000),
            zkfc_settings=FailoverControllerSettings(fencing_methods="no-such-method(x)"),
        )
    assert (d / "zookeeper" / "logs" / "zk1.log").exists()  # ZooKeeper had been started
    assert processes_of(d) == []
    assert not (d / "cluster.json").exists()


@pytest.mark.slow
def test_a_zookeeper_ensemble_of_three(tmp_path: Path) -> None:
    d = tmp_path / "c"
    with auto_cluster(d, zookeeper_members=3) as cluster:
        zks = [cluster[f"zk{i}"] for i in (1, 2, 3)]
        assert cluster["zookeeper"] == ",".join(z["rpc"] for z in zks)
        wait_single_active(cluster, 30)
        st = run_qjm("cluster", "status", "--dir", str(d), "--json")
        assert st.returncode == 0, st.stderr
        modes = sorted(read_json(st.stdout)["daemons"][f"zk{i}"]["mode"] for i in (1, 2, 3))
        assert modes == ["follower", "follower", "leader"]
    assert processes_of(d) == []
    assert all(not pid_alive(p["pid"]) for p in read_cluster(d).values() if isinstance(p, dict))


def test_the_port_plan_of_an_automatic_failover_cluster() -> None:
    plan = plan_cluster_ports(3, None, 2, 1)  # HDFS's and ZooKeeper's defaults
    assert plan.journalnodes == [(8485, 8480), (8495, 8490), (8505, 8500)]
    assert plan.namenodes == [(8020, 9870), (8030, 9880)]
    assert plan.zkfcs == [8019, 8029]
    assert plan.zookeeper_ports() == [2181]
    plan = plan_cluster_ports(3, 30000, 2, 3)  # JNs, NNs, ZKFCs, then ZooKeeper's 9 ports
    assert plan.namenodes == [(30006, 30007), (30008, 30009)]
    assert plan.zkfcs == [30010, 30011]
    assert plan.zookeeper_ports() == list(range(30012, 30021))
    assert plan_cluster_ports(3, 30000, 2, 0).zkfcs == []  # no ZooKeeper, no ZKFCs
    with pytest.raises(LaunchError, match=r"--base-port 65524: .* need ports 65524-65536\b"):
        plan_cluster_ports(3, 65524, 2, 1)
    plan_cluster_ports(3, 65524, 2, 0)  # without ZooKeeper the same base fits


def test_the_port_plan_places_datanodes_after_everything_else() -> None:
    plan = plan_cluster_ports(3, None, 2, 1, 3)  # HDFS's DataNode ports, stepped by 10
    assert plan.datanodes == [(9866, 9867, 9864), (9876, 9877, 9874), (9886, 9887, 9884)]
    plan = plan_cluster_ports(3, 30000, 2, 1, 2)  # JNs, NNs, ZKFCs, ZooKeeper, then DataNodes
    assert plan.zookeeper_ports() == [30012]
    assert plan.datanodes == [(30013, 30014, 30015), (30016, 30017, 30018)]
    assert plan_cluster_ports(3, 30000, 2, 1).datanodes == []
    with pytest.raises(LaunchError, match=r"and 2 DataNode\(s\) need ports 65520-65538\b"):
        plan_cluster_ports(3, 65520, 2, 1, 2)


def test_a_stopped_cluster_keeps_its_datanode_count(tmp_path: Path) -> None:
    from qjm.cluster.launcher import datanodes_of_stopped
    from qjm.config import ClusterConfig, DataNodeConfig, dump_config

    assert datanodes_of_stopped(tmp_path) is None  # no cluster: the caller's default
    dns = {
        f"dn{i}": DataNodeConfig(f"dn{i}", f"h:{i}1", f"h:{i}2", f"h:{i}3", f"/d{i}")
        for i in (1, 2)
    }
    (tmp_path / "cluster.toml").write_text(dump_config(ClusterConfig(datanodes=dns)))
    assert datanodes_of_stopped(tmp_path) is None  # a config but no data: never started
    (tmp_path / "data").mkdir()
    assert datanodes_of_stopped(tmp_path) == 2
