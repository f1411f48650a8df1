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

import asyncio
import contextlib
import dataclasses
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from jn_proxy import JournalProxy
from ports import free_port_block
from qjm.cluster import launcher
from qjm.cluster.launcher import (
    cluster_down,
    cluster_up,
    daemons_of,
    namenode_states,
    plan_cluster_ports,
)
from qjm.cluster.process import pid_alive
from qjm.config import (
    DataNodeSettings,
    FailoverControllerSettings,
    NameNodeSettings,
    ProxyUserConfig,
    ZooKeeperSettings,
    dump_config,
    load_config,
)

NAMENODES = ("nn1", "nn2")


def auto_cluster_ports(zookeeper_members: int = 1, datanodes: int = 0) -> int:
    """How many consecutive ports an auto_cluster takes from its base_port."""
    plan = plan_cluster_ports(3, 1, 2, zookeeper_members, datanodes)
    ports = [p for pair in plan.journalnodes + plan.namenodes for p in pair]
    dn_ports = [p for triple in plan.datanodes for p in triple]
    return len(ports) + len(plan.zkfcs) + len(plan.zookeeper_ports()) + len(dn_ports)


AUTO_CLUSTER_PORTS = auto_cluster_ports(1)  # 3 JNs x 2 + 2 NNs x 2 + 2 ZKFCs + ZooKeeper = 13


def free_cluster_ports(zookeeper_members: int = 1, datanodes: int = 0) -> int:
    """The first of a block of free ports for an auto_cluster (its base_port)."""
    return free_port_block(auto_cluster_ports(zookeeper_members, datanodes))


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
    datanodes: int = 0,
    datanode_settings: DataNodeSettings | None = None,
    kerberos: bool = False,
    proxyusers: dict[str, ProxyUserConfig] | None = None,
) -> Iterator[dict[str, Any]]:
    """ZooKeeper + 3 JNs + 2 NNs + 2 ZKFCs (+ datanodes DataNodes) with short timeouts, one
    NameNode active; yields cluster.json's contents and always stops every daemon at exit.

    base_port None takes a free block of loopback ports (not HDFS's default ports, which
    other tests and clusters may hold).
    """
    if base_port is None:
        base_port = free_cluster_ports(zookeeper_members, datanodes)
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
        datanodes=datanodes,
        datanode_settings=datanode_settings,
        kerberos=kerberos,
        proxyusers=proxyusers,
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


class JournalProxies:
    """One JournalProxy per JournalNode, on an event loop in a thread (the test blocks)."""

    def __init__(self, targets: list[str]) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.proxies = [self._run(JournalProxy(t).start()) for t in targets]

    def _run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=30)

    async def _each(self, action: str) -> None:
        for p in self.proxies:
            getattr(p, action)()

    @property
    def addresses(self) -> list[str]:
        """Each proxy's host:port, in the JournalNodes' order."""
        return [p.address for p in self.proxies]

    def hold(self) -> None:
        """Keep back the JournalNodes' answers to every journal() sent from now on."""
        self._run(self._each("hold"))

    def release(self) -> None:
        """Stop holding and send what was kept back."""
        self._run(self._each("release"))

    def close(self) -> None:
        """Stop the proxies and their loop."""
        for p in self.proxies:
            self._run(p.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@contextlib.contextmanager
def auto_cluster_behind_proxies(
    directory: Path, **options: Any
) -> Iterator[tuple[dict[str, Any], JournalProxies, Path]]:
    """auto_cluster whose NameNodes reach each JournalNode through a JournalProxy; yields the
    cluster, the proxies and the NameNodes' config (DIR/namenodes.toml: cluster.toml with the
    proxies as the JournalNodes' RPC addresses, from the format of the shared journal on).

    The launcher starts every NameNode command (format, bootstrap-standby, the daemons) with
    that config; the JournalNodes and the ZKFCs keep cluster.toml.
    """
    base_port = free_cluster_ports()
    plan = plan_cluster_ports(3, base_port, 2, 1)
    proxies = JournalProxies([f"127.0.0.1:{rpc}" for rpc, _ in plan.journalnodes])
    nn_toml = directory.resolve() / "namenodes.toml"

    def for_namenodes(argv: list[str]) -> list[str]:
        if not argv or argv[0] != "namenode" or "--config" not in argv:
            return argv
        i = argv.index("--config") + 1
        if not nn_toml.exists():
            cfg = load_config(argv[i])
            jns = {
                name: dataclasses.replace(jn, rpc_address=address)
                for (name, jn), address in zip(
                    cfg.journalnodes.items(), proxies.addresses, strict=True
                )
            }
            nn_toml.write_text(dump_config(dataclasses.replace(cfg, journalnodes=jns)))
        return [*argv[:i], str(nn_toml), *argv[i + 1 :]]

    spawn, run_admin = launcher.spawn, launcher.run_admin
    patches = [
        mock.patch.object(
            launcher, "spawn", lambda name, argv, *a: spawn(name, for_namenodes(argv), *a)
        ),
        mock.patch.object(
            launcher,
            "run_admin",
            lambda argv, name, *a, **k: run_admin(for_namenodes(argv), name, *a, **k),
        ),
    ]
    try:
        with contextlib.ExitStack() as stack:
            for p in patches:
                stack.enter_context(p)
            started = auto_cluster(directory, base_port=base_port, **options)
            cluster = started.__enter__()
        try:
            yield cluster, proxies, nn_toml
        finally:
            started.__exit__(None, None, None)
    finally:
        proxies.close()
