"""A local cluster with automatic failover for tests: ZooKeeper, 3 JournalNodes, 2 NameNodes
and their ZKFCs as real processes, started by qjm.cluster.launcher.cluster_up.

    with auto_cluster(tmp_path / "c", base_port=free_port_block(AUTO_CLUSTER_PORTS)) as c:
        active = wait_single_active(c, 30)
        os.kill(c["nn1"]["pid"], signal.SIGKILL)
        ...

The cluster dict is DIR/cluster.json's contents as cluster_up returned it (pids of the first
start); read_cluster(directory) gives the current file.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ports import free_port_block
from qjm.cluster.launcher import (
    cluster_down,
    cluster_up,
    daemons_of,
    namenode_states,
    plan_cluster_ports,
)
from qjm.cluster.process import pid_alive
from qjm.config import FailoverControllerSettings, NameNodeSettings, ZooKeeperSettings

NAMENODES = ("nn1", "nn2")


def auto_cluster_ports(zookeeper_members: int = 1) -> int:
    """How many consecutive ports an auto_cluster takes from its base_port."""
    plan = plan_cluster_ports(3, 1, 2, zookeeper_members)
    ports = [p for pair in plan.journalnodes + plan.namenodes for p in pair]
    return len(ports) + len(plan.zkfcs) + len(plan.zookeeper_ports())


AUTO_CLUSTER_PORTS = auto_cluster_ports(1)  # 3 JNs x 2 + 2 NNs x 2 + 2 ZKFCs + ZooKeeper = 13


def free_cluster_ports(zookeeper_members: int = 1) -> int:
    """The first of a block of free ports for an auto_cluster (its base_port)."""
    return free_port_block(auto_cluster_ports(zookeeper_members))


@contextlib.contextmanager
def auto_cluster(
    directory: Path,
    *,
    session_timeout_ms: int = 4000,
    health_rpc_timeout_ms: int = 3000,
    health_check_interval_ms: int = 500,
    base_port: int | None = None,
    zookeeper_members: int = 1,
    fencing_methods: str = "shell(true)",
    namenode_settings: NameNodeSettings | None = None,
) -> Iterator[dict[str, Any]]:
    """ZooKeeper + 3 JNs + 2 NNs + 2 ZKFCs with short timeouts, one NameNode active; yields
    cluster.json's contents and always stops every daemon at exit.

    base_port None takes a free block of loopback ports (not HDFS's default ports, which
    other tests and clusters may hold).
    """
    if base_port is None:
        base_port = free_cluster_ports(zookeeper_members)
    cluster = cluster_up(
        directory,
        journalnodes=3,
        namenodes=2,
        zookeeper=True,
        base_port=base_port,
        namenode_settings=namenode_settings,
        zookeeper_members=zookeeper_members,
        zookeeper_settings=ZooKeeperSettings(session_timeout_ms=session_timeout_ms),
        zkfc_settings=FailoverControllerSettings(
            fencing_methods=fencing_methods,
            health_rpc_timeout_ms=health_rpc_timeout_ms,
            health_check_interval_ms=health_check_interval_ms,
            graceful_fence_timeout_ms=min(5000, health_rpc_timeout_ms),
            new_active_timeout_ms=30_000,
        ),
    )
    try:
        yield cluster
    finally:
        cluster_down(directory)


def namenode_addresses(cluster: dict[str, Any]) -> dict[str, str]:
    """name → RPC address of the cluster's NameNodes."""
    return {n: d["rpc"] for n, d in daemons_of(cluster).items() if d.get("kind") == "namenode"}


def ha_states(cluster: dict[str, Any], timeout: float = 3.0) -> dict[str, str]:
    """name → "active", "standby", ... of each NameNode; "down" when it does not answer."""
    return namenode_states(namenode_addresses(cluster), timeout=timeout)


def wait_single_active(
    cluster: dict[str, Any], timeout_s: float, exclude: Iterable[str] = ()
) -> str:
    """Wait until exactly one NameNode is active (one not in exclude); its name.

    A NameNode in exclude may be down or in any state, but not active (an excluded active
    NameNode means no failover happened yet).
    """
    excluded = set(exclude)
    deadline = time.monotonic() + timeout_s
    seen: list[dict[str, str]] = []
    while True:
        states = ha_states(cluster, timeout=min(3.0, max(0.5, timeout_s / 4)))
        if not seen or seen[-1] != states:
            seen.append(states)
        active = [n for n, s in states.items() if s == "active"]
        if len(active) == 1 and active[0] not in excluded:
            return active[0]
        if time.monotonic() > deadline:
            history = " -> ".join(
                "{" + ", ".join(f"{n}: {s}" for n, s in st.items()) + "}" for st in seen[-6:]
            )
            but = f" (excluding {', '.join(sorted(excluded))})" if excluded else ""
            raise AssertionError(
                f"no single active NameNode{but} within {timeout_s:.0f}s; states seen: {history}"
            )
        time.sleep(0.1)


def processes_of(directory: Path) -> list[int]:
    """Pids of the live processes whose command line names directory (the cluster's daemons:
    --config DIR/cluster.toml, ZooKeeper's DIR/zookeeper/conf/zkN.cfg)."""
    needle = str(directory.resolve()).encode() + b"/"
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if needle in cmdline and pid_alive(int(entry.name)):
            pids.append(int(entry.name))
    return sorted(pids)
