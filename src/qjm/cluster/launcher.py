"""The local launcher: a whole cluster of daemons on loopback, described by DIR/cluster.json."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from qjm.cluster.process import LaunchError, pid_alive, port_is_free, spawn, stop_pid, wait_ready
from qjm.config import (
    JN_HTTP_PORT,
    JN_RPC_PORT,
    ClusterConfig,
    JournalNodeConfig,
    dump_config,
)

HOST = "127.0.0.1"
CLUSTER_JSON = "cluster.json"
CLUSTER_TOML = "cluster.toml"
PORT_STEP = 10  # default ports: jn1 8485/8480, jn2 8495/8490, ...


def read_cluster(directory: Path) -> dict[str, Any]:
    """The cluster.json of a cluster directory."""
    path = directory / CLUSTER_JSON
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        raise LaunchError(f"no cluster in {directory} ({path} does not exist)") from None
    except json.JSONDecodeError as e:
        raise LaunchError(f"{path} is not valid JSON: {e}") from None
    return data


def daemons_of(cluster: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The daemon entries of cluster.json (everything that has a pid)."""
    return {k: v for k, v in cluster.items() if isinstance(v, dict) and "pid" in v}


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, path)


def plan_ports(journalnodes: int, base_port: int | None) -> list[tuple[int, int]]:
    """(rpc, http) ports per JournalNode: HDFS's defaults stepped by 10, or from base_port."""
    if base_port is not None and not 1 <= base_port <= 65536 - 2 * journalnodes:
        raise LaunchError(
            f"--base-port {base_port}: {journalnodes} JournalNode(s) need ports {base_port}-"
            f"{base_port + 2 * journalnodes - 1}, but ports run from 1 to 65535"
        )
    if base_port is None:
        return [
            (JN_RPC_PORT + PORT_STEP * i, JN_HTTP_PORT + PORT_STEP * i) for i in range(journalnodes)
        ]
    return [(base_port + 2 * i, base_port + 2 * i + 1) for i in range(journalnodes)]


def cluster_up(
    directory: Path,
    journalnodes: int = 3,
    namenodes: int = 0,
    zookeeper: bool = False,
    base_port: int | None = None,
    nameservice: str = "ns1",
) -> dict[str, Any]:
    """Start the daemons, write cluster.toml and cluster.json, return once all answer."""
    if journalnodes < 1:
        raise LaunchError("a cluster needs at least one JournalNode")
    if namenodes:
        raise LaunchError("NameNodes are not part of qjm yet; use --namenodes 0")
    if zookeeper:
        raise LaunchError("ZooKeeper is not part of qjm yet; use --no-zookeeper")
    directory = directory.resolve()
    directory.mkdir(parents=True, exist_ok=True)
    if (directory / CLUSTER_JSON).exists():
        running = [n for n, d in daemons_of(read_cluster(directory)).items() if pid_alive(d["pid"])]
        if running:
            raise LaunchError(
                f"a cluster in {directory} is running ({', '.join(running)}); "
                f"stop it first with `qjm cluster down --dir {directory}`"
            )
    jns: dict[str, JournalNodeConfig] = {}
    for i, (rpc, http) in enumerate(plan_ports(journalnodes, base_port), start=1):
        name = f"jn{i}"
        for port in (rpc, http):
            if not port_is_free(HOST, port):
                raise LaunchError(
                    f"port {port} for {name} on {HOST} is in use; pick other ports with --base-port"
                )
        jns[name] = JournalNodeConfig(
            name, f"{HOST}:{rpc}", f"{HOST}:{http}", str(directory / "data" / name)
        )
    cfg = replace(
        ClusterConfig(),
        nameservice=nameservice,
        journal_id=nameservice,
        journalnodes=jns,
        source=str(directory / CLUSTER_TOML),
    )
    toml_path = directory / CLUSTER_TOML
    toml_path.write_text(dump_config(cfg))
    started = [
        spawn(
            name,
            ["journalnode", "--config", str(toml_path), "--name", name],
            directory / "logs" / f"{name}.log",
            directory / "run" / f"{name}.ready",
        )
        for name in jns
    ]
    try:
        ready = wait_ready(started)
    except LaunchError:
        for d in started:
            stop_pid(d.pid)
        raise
    cluster: dict[str, Any] = {}
    for d in started:
        cluster[d.name] = {
            "rpc": ready[d.name]["rpc"],
            "http": ready[d.name]["http"],
            "pid": d.pid,
            "log": str(d.log),
            "kind": "journalnode",
        }
    cluster["shared_edits"] = cfg.shared_edits_uri()
    cluster["config"] = str(toml_path)
    _write_json(directory / CLUSTER_JSON, cluster)
    return cluster


def cluster_down(directory: Path) -> list[str]:
    """Stop every daemon of the cluster; return the names that were running."""
    directory = directory.resolve()
    cluster = read_cluster(directory)
    stopped = []
    for name, d in daemons_of(cluster).items():
        if stop_pid(d["pid"]):
            stopped.append(name)
        d["pid"] = None
        ready = directory / "run" / f"{name}.ready"
        ready.unlink(missing_ok=True)
    _write_json(directory / CLUSTER_JSON, cluster)
    return stopped
