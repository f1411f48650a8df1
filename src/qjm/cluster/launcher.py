"""The local launcher: a whole cluster of daemons on loopback, described by DIR/cluster.json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from qjm.cluster.hadoop_conf import write_hadoop_conf
from qjm.cluster.process import (
    Daemon,
    LaunchError,
    pid_alive,
    port_is_free,
    spawn,
    stop_pid,
    wait_ready,
)
from qjm.config import (
    JN_HTTP_PORT,
    JN_RPC_PORT,
    NN_HTTP_PORT,
    NN_RPC_PORT,
    ClusterConfig,
    JournalNodeConfig,
    NameNodeConfig,
    NameNodeSettings,
    dump_config,
    load_config,
    parse_address,
)
from qjm.errors import ConfigError

HOST = "127.0.0.1"
CLUSTER_JSON = "cluster.json"
CLUSTER_TOML = "cluster.toml"
PORT_STEP = 10  # default ports: jn1 8485/8480, jn2 8495/8490, ...; nn1 8020/9870, nn2 8030/9880
MAX_NAMENODES = 2  # manual HA as HDFS has it: one active, one standby
ADMIN_TIMEOUT_S = 60.0  # format, bootstrap-standby, transitionToActive


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


def plan_ports(
    journalnodes: int, base_port: int | None, namenodes: int = 0
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(rpc, http) ports per JournalNode and per NameNode: HDFS's defaults stepped by 10, or
    consecutive from base_port (JournalNodes first)."""
    needed = 2 * (journalnodes + namenodes)
    if base_port is not None and not 1 <= base_port <= 65536 - needed:
        raise LaunchError(
            f"--base-port {base_port}: {journalnodes} JournalNode(s) and {namenodes} NameNode(s) "
            f"need ports {base_port}-{base_port + needed - 1}, but ports run from 1 to 65535"
        )
    if base_port is None:
        jns = [
            (JN_RPC_PORT + PORT_STEP * i, JN_HTTP_PORT + PORT_STEP * i) for i in range(journalnodes)
        ]
        nns = [
            (NN_RPC_PORT + PORT_STEP * i, NN_HTTP_PORT + PORT_STEP * i) for i in range(namenodes)
        ]
        return jns, nns
    ports = [(base_port + 2 * i, base_port + 2 * i + 1) for i in range(journalnodes + namenodes)]
    return ports[:journalnodes], ports[journalnodes:]


def cluster_up(
    directory: Path,
    journalnodes: int = 3,
    namenodes: int = 0,
    zookeeper: bool = False,
    base_port: int | None = None,
    nameservice: str = "ns1",
    namenode_settings: NameNodeSettings | None = None,
) -> dict[str, Any]:
    """Start the daemons, write cluster.toml and cluster.json, return once all answer.

    With NameNodes (manual HA): format nn1 (and the shared journal), start it, bootstrap nn2
    from it, start nn2, make nn1 active, and write DIR/hadoop-conf for HDFS clients.
    """
    if journalnodes < 1:
        raise LaunchError("a cluster needs at least one JournalNode")
    if not 0 <= namenodes <= MAX_NAMENODES:
        raise LaunchError(
            f"--namenodes {namenodes}: qjm runs 0 NameNodes or up to {MAX_NAMENODES} "
            "(one active, one standby)"
        )
    if zookeeper:
        raise LaunchError(
            "ZooKeeper (automatic failover) is not part of qjm yet; start the NameNodes in "
            "manual HA with --no-zookeeper and fail over with `qjm haadmin -failover`"
        )
    directory = directory.resolve()
    directory.mkdir(parents=True, exist_ok=True)
    if (directory / CLUSTER_JSON).exists():
        running = [n for n, d in daemons_of(read_cluster(directory)).items() if pid_alive(d["pid"])]
        if running:
            raise LaunchError(
                f"a cluster in {directory} is running ({', '.join(running)}); "
                f"stop it first with `qjm cluster down --dir {directory}`"
            )
    jn_ports, nn_ports = _ports_for(directory, journalnodes, namenodes, base_port)
    jns: dict[str, JournalNodeConfig] = {}
    nns: dict[str, NameNodeConfig] = {}
    for i, (rpc, http) in enumerate(jn_ports, start=1):
        name = f"jn{i}"
        _check_free(name, rpc, http)
        jns[name] = JournalNodeConfig(
            name, f"{HOST}:{rpc}", f"{HOST}:{http}", str(directory / "data" / name)
        )
    for i, (rpc, http) in enumerate(nn_ports, start=1):
        name = f"nn{i}"
        _check_free(name, rpc, http)
        nns[name] = NameNodeConfig(
            name, f"{HOST}:{rpc}", f"{HOST}:{http}", str(directory / "data" / name)
        )
    cfg = replace(
        ClusterConfig(),
        nameservice=nameservice,
        journal_id=nameservice,
        journalnodes=jns,
        namenodes=nns,
        namenode=namenode_settings or NameNodeSettings(),
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
    cluster: dict[str, Any] = {}
    try:
        ready = wait_ready(started)
        for d in started:
            cluster[d.name] = _entry(d, ready[d.name], "journalnode")
        if nns:
            for d, info in _start_namenodes(directory, toml_path, list(nns), started):
                cluster[d.name] = _entry(d, info, "namenode")
    except BaseException:  # a failed start or an interrupt leaves nothing running
        for d in reversed(started):  # NameNodes before the JournalNodes they write to
            stop_pid(d.pid)
        raise
    cluster["shared_edits"] = cfg.shared_edits_uri()
    cluster["config"] = str(toml_path)
    if nns:
        cluster["nameservice"] = nameservice
        cluster["hadoop_conf"] = str(write_hadoop_conf(directory, cfg))
    _write_json(directory / CLUSTER_JSON, cluster)
    return cluster


def _ports_for(
    directory: Path, journalnodes: int, namenodes: int, base_port: int | None
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The ports of a new cluster, or of the stopped one whose data is in directory.

    A journal remembers the JournalNodes it was formatted on, so a cluster started again
    keeps its addresses; asking for other ports or other counts is refused.
    """
    toml_path = directory / CLUSTER_TOML
    if not (toml_path.exists() and (directory / "data").is_dir()):
        return plan_ports(journalnodes, base_port, namenodes)
    try:
        old = load_config(toml_path)
    except ConfigError as e:
        raise LaunchError(f"the stopped cluster in {directory} has a broken config: {e}") from None

    def ports(addresses: list[str]) -> list[tuple[int, int]]:
        return [
            (parse_address(rpc, "rpc")[1], parse_address(http, "http")[1])
            for rpc, http in zip(addresses[::2], addresses[1::2], strict=True)
        ]

    jns = ports([a for jn in old.journalnodes.values() for a in (jn.rpc_address, jn.http_address)])
    nns = ports([a for nn in old.namenodes.values() for a in (nn.rpc_address, nn.http_address)])
    if (len(jns), len(nns)) != (journalnodes, namenodes):
        raise LaunchError(
            f"{directory} holds a stopped cluster of {len(jns)} JournalNode(s) and {len(nns)} "
            f"NameNode(s); start it with those counts, or use a new --dir"
        )
    if base_port is not None and (jns, nns) != plan_ports(journalnodes, base_port, namenodes):
        first = jns[0][0]
        raise LaunchError(
            f"{directory} holds a stopped cluster on ports from {first} (its journal remembers "
            f"its JournalNodes); start it with --base-port {first} or none, or use a new --dir"
        )
    return jns, nns


def _check_free(name: str, *ports: int) -> None:
    for port in ports:
        if not port_is_free(HOST, port):
            raise LaunchError(
                f"port {port} for {name} on {HOST} is in use; pick other ports with --base-port"
            )


def _entry(d: Daemon, ready: dict[str, Any], kind: str) -> dict[str, Any]:
    return {
        "rpc": ready["rpc"],
        "http": ready["http"],
        "pid": d.pid,
        "log": str(d.log),
        "kind": kind,
    }


def _formatted(name_dir: Path) -> bool:
    return (name_dir / "current" / "VERSION").is_file()


def _start_namenodes(
    directory: Path, toml_path: Path, names: list[str], started: list[Daemon]
) -> list[tuple[Daemon, dict[str, Any]]]:
    """Format or reuse nn1, start it, bootstrap the others from it, start them, nn1 active."""
    first = names[0]
    out: list[tuple[Daemon, dict[str, Any]]] = []
    if not _formatted(directory / "data" / first):
        run_admin(["namenode", "format", "--config", str(toml_path), "--id", first], first)
    for i, name in enumerate(names):
        if i > 0 and not _formatted(directory / "data" / name):
            run_admin(
                ["namenode", "bootstrap-standby", "--config", str(toml_path), "--id", name], name
            )
        d = spawn(
            name,
            ["namenode", "--config", str(toml_path), "--id", name],
            directory / "logs" / f"{name}.log",
            directory / "run" / f"{name}.ready",
        )
        started.append(d)
        out.append((d, wait_ready([d])[name]))
    run_admin(["haadmin", "--config", str(toml_path), "-transitionToActive", first], first)
    return out


def run_admin(argv: list[str], name: str, timeout: float = ADMIN_TIMEOUT_S) -> str:
    """Run `qjm <argv>` to completion; its stdout, or a LaunchError with its output."""
    try:
        r = subprocess.run(
            [sys.executable, "-m", "qjm", *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise LaunchError(f"`qjm {' '.join(argv)}` for {name} took over {timeout:.0f}s") from None
    if r.returncode != 0:
        out = (r.stderr.strip() or r.stdout.strip()).splitlines()
        raise LaunchError(
            f"`qjm {' '.join(argv)}` for {name} failed (exit {r.returncode}): "
            + "\n".join(out[-5:])
        )
    return r.stdout


def cluster_down(directory: Path) -> list[str]:
    """Stop every daemon of the cluster; return the names that were running."""
    directory = directory.resolve()
    cluster = read_cluster(directory)
    stopped = []
    # NameNodes first: an active whose JournalNodes vanish would end on a failed sync.
    daemons = sorted(daemons_of(cluster).items(), key=lambda kv: kv[1].get("kind") != "namenode")
    for name, d in daemons:
        if stop_pid(d["pid"]):
            stopped.append(name)
        d["pid"] = None
        ready = directory / "run" / f"{name}.ready"
        ready.unlink(missing_ok=True)
    _write_json(directory / CLUSTER_JSON, cluster)
    return stopped
