"""The local launcher: a whole cluster of daemons on loopback, described by DIR/cluster.json.

With ZooKeeper (automatic failover): ZooKeeper under DIR/zookeeper, 3 JournalNodes, nn1
(formatted) and nn2 (bootstrapped) both started as standby, and one ZKFC per NameNode
(zkfc1, zkfc2) that elect the active NameNode in ZooKeeper.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import os
import random
import subprocess
import sys
import time
import tomllib
import urllib.parse
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar, cast

from qjm.cluster.certs import TLS_DIR, ClusterTls, make_certificates
from qjm.cluster.hadoop_conf import write_hadoop_conf
from qjm.cluster.kdc import Kdc
from qjm.cluster.process import (
    Daemon,
    LaunchError,
    pid_alive,
    port_is_free,
    spawn,
    stop_pid,
    tail,
    wait_ready,
)
from qjm.config import (
    HTTP_ONLY,
    HTTPS_ONLY,
    JN_HTTP_PORT,
    JN_RPC_PORT,
    NN_HTTP_PORT,
    NN_RPC_PORT,
    ClusterConfig,
    DataNodeConfig,
    DataNodeSettings,
    FailoverControllerSettings,
    JournalNodeConfig,
    NameNodeConfig,
    NameNodeSettings,
    ProxyUserConfig,
    SecuritySettings,
    ZooKeeperSettings,
    dump_config,
    load_config,
    parse_address,
)
from qjm.errors import ConfigError, QjmError
from qjm.ipc.login import logged_in
from qjm.security import tls
from qjm.security.gss import SaslError
from qjm.security.http import negotiate_headers
from qjm.security.principal import KerberosName, canonical_host
from qjm.security.users import os_user

T = TypeVar("T")

HOST = "127.0.0.1"
CLUSTER_JSON = "cluster.json"
CLUSTER_TOML = "cluster.toml"
CONFIG_STAMP = ".cluster.toml.sha256"  # the digest of the cluster.toml the launcher wrote
ZOOKEEPER_DIR = "zookeeper"
PORT_STEP = 10  # default ports: jn1 8485/8480, jn2 8495/8490, ...; nn1 8020/9870, nn2 8030/9880
ZKFC_PORT = 8019  # HDFS's dfs.ha.zkfc.port; zkfc2 8029 (stepped like the NameNodes)
ZOOKEEPER_PORT = 2181  # ZooKeeper's client port
AUTO_PORT_RANGE = (20000, 32000)  # a ZooKeeper ensemble's default block (below ephemeral ports)
MAX_NAMENODES = 2  # HA as HDFS has it: one active, one standby
MAX_DATANODES = 32  # loopback DataNodes, each with its own ports and data directory
DEFAULT_DATANODES = 3  # `qjm cluster up` with NameNodes: HDFS's replication factor
ADMIN_TIMEOUT_S = 60.0  # format, bootstrap-standby, transitionToActive, format-zk
ELECTION_TIMEOUT_S = 90.0  # the ZKFCs elect an active NameNode (bounded, generous under load)
DEFAULT_FENCING = "shell(true)"  # the quorum journal fences a deposed writer by its epoch
# start order, and the reverse of the stop order
KIND_ORDER = ("kdc", "zookeeper", "journalnode", "namenode", "datanode", "zkfc")
# HDFS's DataNode ports: dfs.datanode.address, .ipc.address, .http.address (stepped by 10)
DN_TRANSFER_PORT, DN_IPC_PORT, DN_HTTP_PORT = 9866, 9867, 9864


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


def zookeeper_port_count(members: int) -> int:
    """How many ports a ZooKeeper of members uses: a client port each, and for an ensemble a
    quorum and an election port each."""
    return 1 if members == 1 else 3 * members


@dataclass
class PortPlan:
    """Every port of a cluster: (rpc, http) per JournalNode and NameNode, one per ZKFC, and
    the first of ZooKeeper's (client ports first, as start_zookeeper lays them out)."""

    journalnodes: list[tuple[int, int]]
    namenodes: list[tuple[int, int]]
    zkfcs: list[int] = field(default_factory=list)
    zookeeper_base: int | None = None
    zookeeper_members: int = 0
    datanodes: list[tuple[int, int, int]] = field(default_factory=list)  # transfer, ipc, http

    def zookeeper_ports(self) -> list[int]:
        """Every port ZooKeeper listens on."""
        if self.zookeeper_base is None:
            return []
        n = zookeeper_port_count(self.zookeeper_members)
        return list(range(self.zookeeper_base, self.zookeeper_base + n))


def plan_cluster_ports(
    journalnodes: int,
    base_port: int | None,
    namenodes: int = 0,
    zookeeper_members: int = 0,
    datanodes: int = 0,
) -> PortPlan:
    """Every port of a new cluster: HDFS's and ZooKeeper's defaults (stepped by 10), or
    consecutive from base_port: JournalNodes, NameNodes (2 each), ZKFCs (1 each), ZooKeeper,
    DataNodes (3 each).

    zookeeper_members 0 is no ZooKeeper and no ZKFCs. A ZooKeeper ensemble without base_port
    gets a free block of loopback ports.
    """
    zkfcs = namenodes if zookeeper_members else 0
    zk_ports = zookeeper_port_count(zookeeper_members) if zookeeper_members else 0
    needed = 2 * (journalnodes + namenodes) + zkfcs + zk_ports + 3 * datanodes
    if base_port is not None and not 1 <= base_port <= 65536 - needed:
        what = f"{journalnodes} JournalNode(s) and {namenodes} NameNode(s)"
        if zookeeper_members:
            what = (
                f"{journalnodes} JournalNode(s), {namenodes} NameNode(s) with their ZKFCs and "
                f"a ZooKeeper of {zookeeper_members}"
            )
        if datanodes:
            what += f" and {datanodes} DataNode(s)"
        raise LaunchError(
            f"--base-port {base_port}: {what} need ports {base_port}-{base_port + needed - 1}, "
            "but ports run from 1 to 65535"
        )
    if base_port is None:
        jns = [
            (JN_RPC_PORT + PORT_STEP * i, JN_HTTP_PORT + PORT_STEP * i) for i in range(journalnodes)
        ]
        nns = [
            (NN_RPC_PORT + PORT_STEP * i, NN_HTTP_PORT + PORT_STEP * i) for i in range(namenodes)
        ]
        zk_base: int | None = None
        if zookeeper_members == 1:
            zk_base = ZOOKEEPER_PORT
        elif zookeeper_members > 1:
            zk_base = _free_block(zk_ports)
        dns = [
            (
                DN_TRANSFER_PORT + PORT_STEP * i,
                DN_IPC_PORT + PORT_STEP * i,
                DN_HTTP_PORT + PORT_STEP * i,
            )
            for i in range(datanodes)
        ]
        return PortPlan(
            jns,
            nns,
            [ZKFC_PORT + PORT_STEP * i for i in range(zkfcs)],
            zk_base,
            zookeeper_members,
            dns,
        )
    pairs = [(base_port + 2 * i, base_port + 2 * i + 1) for i in range(journalnodes + namenodes)]
    after = base_port + 2 * (journalnodes + namenodes)
    dn_base = after + zkfcs + zk_ports
    return PortPlan(
        pairs[:journalnodes],
        pairs[journalnodes:],
        [after + i for i in range(zkfcs)],
        after + zkfcs if zookeeper_members else None,
        zookeeper_members,
        [(dn_base + 3 * i, dn_base + 3 * i + 1, dn_base + 3 * i + 2) for i in range(datanodes)],
    )


def _free_block(n: int) -> int:
    low, high = AUTO_PORT_RANGE
    rng = random.Random()
    for _ in range(500):
        base = rng.randrange(low, high - n)
        if all(port_is_free(HOST, p) for p in range(base, base + n)):
            return base
    raise LaunchError(f"no {n} consecutive free ports on {HOST} between {low} and {high}")


def _run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion, also when the caller is inside an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


async def namenode_state(address: str, rpc_timeout_s: float = 5.0) -> str:
    """A NameNode's HA state in lower case (active, standby, ...), or "down" when it does not
    answer."""
    from qjm.namenode.client import HAAdminClient

    try:
        async with HAAdminClient(address, timeout=rpc_timeout_s) as admin:
            return (await admin.get_service_state()).name.lower()
    except (QjmError, OSError):
        return "down"


async def datanode_liveness(address: str, rpc_timeout_s: float = 5.0) -> dict[str, str]:
    """Transfer address -> "live" or "dead" for each DataNode the NameNode at address knows
    (getDatanodeReport); empty when it does not answer."""
    from qjm.ipc import IpcClient
    from qjm.namenode import protocols
    from qjm.namenode.proto import ClientNamenodeProtocol_pb2 as cn

    spec = protocols.CLIENT_METHODS["getDatanodeReport"]
    client = IpcClient(address, protocols.CLIENT_PROTOCOL, reconnect_attempts=1)
    out: dict[str, str] = {}
    try:
        for kind, word in ((cn.LIVE, "live"), (cn.DEAD, "dead")):
            resp = cast(
                cn.GetDatanodeReportResponseProto,
                await client.call(
                    "getDatanodeReport",
                    spec.request(type=kind),
                    spec.response,
                    timeout=rpc_timeout_s,
                ),
            )
            for info in resp.di:
                out[f"{info.id.ipAddr}:{info.id.xferPort}"] = word
    except (QjmError, OSError):
        return {}
    finally:
        await client.close()
    return out


def daemon_url(entry: dict[str, Any]) -> str:
    """The base URL of a cluster.json daemon's HTTP server (https under HTTPS_ONLY, §S.13)."""
    return f"{entry.get('scheme') or 'http'}://{entry['http']}"


def datanode_status(http: str, timeout: float = 2.0) -> dict[str, Any]:
    """A DataNode's /status JSON (http is host:port or a base URL), or {} when it does not
    answer."""
    url = tls.base_url(http)
    try:
        host = urllib.parse.urlsplit(url).hostname or "localhost"
        with tls.urlopen(f"{url}/status", timeout, negotiate_headers(host)) as r:
            data = json.loads(r.read())
    except (OSError, ValueError, SaslError, ConfigError):
        return {}
    return data if isinstance(data, dict) else {}


def namenode_states(addresses: dict[str, str], timeout: float = 5.0) -> dict[str, str]:
    """name → HA state ("down" when unreachable) of NameNodes given by RPC address."""

    async def ask() -> dict[str, str]:
        names = list(addresses)
        states = await asyncio.gather(*(namenode_state(addresses[n], timeout) for n in names))
        return dict(zip(names, states, strict=True))

    return _run_sync(ask())


def cluster_up(
    directory: Path,
    journalnodes: int = 3,
    namenodes: int = 0,
    zookeeper: bool = False,
    base_port: int | None = None,
    nameservice: str = "ns1",
    namenode_settings: NameNodeSettings | None = None,
    *,
    zookeeper_members: int = 1,
    zookeeper_settings: ZooKeeperSettings | None = None,
    zkfc_settings: FailoverControllerSettings | None = None,
    datanodes: int | None = 0,
    datanode_settings: DataNodeSettings | None = None,
    datanode_dirs: int = 1,
    kerberos: bool | None = None,
    rpc_protection: str = "privacy",
    proxyusers: dict[str, ProxyUserConfig] | None = None,
    https: bool | None = None,
) -> dict[str, Any]:
    """Start the daemons, write cluster.toml and cluster.json, return once all answer.

    datanodes DataNodes start after the NameNodes, each with datanode_dirs data directories
    under DIR/data (DIR/data/dnN, or its d1, d2, ...), and register with every NameNode;
    None is the stopped cluster's count in directory, else DEFAULT_DATANODES with NameNodes
    and none without.

    With NameNodes: format nn1 (and the shared journal), start it, bootstrap nn2 from it,
    start nn2, and write DIR/hadoop-conf for HDFS clients. Manual HA (zookeeper False): make
    nn1 active. Automatic failover (zookeeper True, 2 NameNodes): start ZooKeeper first and
    format it, start a ZKFC per NameNode, and return once they elected one active NameNode.
    zookeeper_settings and zkfc_settings override the [zookeeper] and [zkfc] sections (the
    quorum is always the started ZooKeeper's; empty fencing_methods become shell(true)).
    kerberos True: start a KDC first (DIR/kdc), give every daemon a principal and keytab,
    and make the cluster take Kerberos callers only (design §S.4); False: an open cluster
    (refused for a cluster made with Kerberos); None: as the stopped cluster in directory was
    made, else open. rpc_protection: hadoop.rpc.protection of a Kerberos cluster
    (authentication, integrity or privacy, design §S.8), and its dfs.data.transfer.protection
    (design §S.12). proxyusers: who may act for whom (design §S.14); None keeps the stopped
    cluster's, else none.
    https True: every daemon serves its HTTP port over TLS only
    (dfs.http.policy HTTPS_ONLY) with a certificate of the cluster's own CA in DIR/tls, and
    hadoop-conf tells Java clients to trust it (design §S.13); None: as the stopped cluster
    in directory was made, else plain HTTP.
    """
    if journalnodes < 1:
        raise LaunchError("a cluster needs at least one JournalNode")
    if not 0 <= namenodes <= MAX_NAMENODES:
        raise LaunchError(
            f"--namenodes {namenodes}: qjm runs 0 NameNodes or up to {MAX_NAMENODES} "
            "(one active, one standby)"
        )
    if zookeeper and namenodes != MAX_NAMENODES:
        raise LaunchError(
            f"automatic failover with ZooKeeper needs {MAX_NAMENODES} NameNodes (got "
            f"{namenodes}); run manual HA with --no-zookeeper, or JournalNodes only with "
            "--namenodes 0"
        )
    if datanodes is None:
        datanodes = datanodes_of_stopped(directory.resolve())
        if datanodes is None:
            datanodes = DEFAULT_DATANODES if namenodes else 0
    if datanodes and not namenodes:
        raise LaunchError(f"--datanodes {datanodes} needs NameNodes to report to (--namenodes 2)")
    if not 0 <= datanodes <= MAX_DATANODES:
        raise LaunchError(f"--datanodes {datanodes}: the launcher runs 0 to {MAX_DATANODES}")
    if zookeeper and (zookeeper_members < 1 or zookeeper_members % 2 == 0):
        raise LaunchError(
            f"--zookeeper-members {zookeeper_members}: run 1 (standalone) or an odd number (3)"
        )
    directory = directory.resolve()
    if proxyusers is None:
        proxyusers = proxyusers_of_stopped(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if (directory / CLUSTER_JSON).exists():
        running = [n for n, d in daemons_of(read_cluster(directory)).items() if pid_alive(d["pid"])]
        if running:
            raise LaunchError(
                f"a cluster in {directory} is running ({', '.join(running)}); "
                f"stop it first with `qjm cluster down --dir {directory}`"
            )
    kerberos = kerberos_mode(directory, kerberos)
    https = https_mode(directory, https)
    members = zookeeper_members if zookeeper else 0
    plan = _ports_for(directory, journalnodes, namenodes, members, base_port, datanodes)
    # the HTTPS port of each node (design §S.13): only the one a client uses listens
    secure = _https_ports(directory, plan, base_port) if https else {}

    def https_of(name: str) -> str:
        return f"{HOST}:{secure[name]}" if name in secure else ""

    jns: dict[str, JournalNodeConfig] = {}
    nns: dict[str, NameNodeConfig] = {}
    for i, (rpc, http) in enumerate(plan.journalnodes, start=1):
        name = f"jn{i}"
        _check_free(name, rpc, *([secure[name]] if https else [http]))
        jns[name] = JournalNodeConfig(
            name,
            f"{HOST}:{rpc}",
            f"{HOST}:{http}",
            str(directory / "data" / name),
            https_address=https_of(name),
        )
    for i, (rpc, http) in enumerate(plan.namenodes, start=1):
        name = f"nn{i}"
        _check_free(name, rpc, *([secure[name]] if https else [http]))
        zkfc_address = f"{HOST}:{plan.zkfcs[i - 1]}" if plan.zkfcs else ""
        nns[name] = NameNodeConfig(
            name,
            f"{HOST}:{rpc}",
            f"{HOST}:{http}",
            str(directory / "data" / name),
            zkfc_address,
            https_address=https_of(name),
        )
    dns: dict[str, DataNodeConfig] = {}
    for i, (transfer, ipc, http) in enumerate(plan.datanodes, start=1):
        name = f"dn{i}"
        _check_free(name, transfer, ipc, *([secure[name]] if https else [http]))
        dns[name] = DataNodeConfig(
            name,
            f"{HOST}:{transfer}",
            f"{HOST}:{ipc}",
            f"{HOST}:{http}",
            str(directory / "data" / name)
            if datanode_dirs == 1
            else ",".join(
                str(directory / "data" / name / f"d{j}") for j in range(1, datanode_dirs + 1)
            ),
            https_address=https_of(name),
        )
    for i, port in enumerate(plan.zkfcs, start=1):
        _check_free(f"zkfc{i} (the failover controller of nn{i})", port)
    zk_ports = plan.zookeeper_ports()
    if zk_ports:
        _check_free("ZooKeeper", *zk_ports)
    zk_base = plan.zookeeper_base
    # under Kerberos clients name ZooKeeper by host name: a SASL client asks a ticket for
    # zookeeper/<the quorum's host> (design §S.11)
    zk_host = canonical_host(HOST) if kerberos else HOST
    connect = ",".join(f"{zk_host}:{zk_base + i}" for i in range(members)) if zk_base else ""
    zk_settings = replace(zookeeper_settings or ZooKeeperSettings(), quorum=connect)
    zkfc = zkfc_settings or FailoverControllerSettings()
    if not zkfc.fencing_methods.strip():
        zkfc = replace(zkfc, fencing_methods=DEFAULT_FENCING)
    cfg = replace(
        ClusterConfig(),
        nameservice=nameservice,
        journal_id=nameservice,
        journalnodes=jns,
        namenodes=nns,
        namenode=replace(namenode_settings or NameNodeSettings(), automatic_failover=zookeeper),
        zookeeper=zk_settings if zookeeper else ZooKeeperSettings(),
        zkfc=zkfc if zookeeper else FailoverControllerSettings(),
        datanode=datanode_settings or DataNodeSettings(),
        datanodes=dns,
        proxyusers=dict(proxyusers),
        source=str(directory / CLUSTER_TOML),
    )
    toml_path = directory / CLUSTER_TOML
    cluster: dict[str, Any] = {}
    started: list[Daemon] = []
    ensemble: Any = None  # ZooKeeperEnsemble
    zk_kerberos: Any = None  # ZooKeeperKerberos: the server's principal and keytab
    kdc: Kdc | None = None
    certs: ClusterTls | None = None
    try:
        if https:  # a CA and a server certificate in DIR/tls, kept across restarts (§S.13)
            certs = make_certificates(directory)
            cfg = replace(cfg, security=_https_security(cfg.security, certs))
            tls.configure(cfg.security)  # this process's status requests trust the CA
        if kerberos:
            kdc, security = _start_kdc(directory, rpc_protection)
            if certs is not None:
                security = _https_security(security, certs)
            cfg = replace(cfg, security=security)
            if zookeeper:  # only the ZKFCs may touch the HA znodes (design §S.6, §S.11)
                zk_kerberos = _zookeeper_principal(kdc)
                cfg = replace(cfg, zookeeper=_zookeeper_sasl(cfg.zookeeper, security, kdc))
            cluster["kdc"] = {
                "rpc": kdc.address,
                "http": "",
                "pid": kdc.pid,
                "log": str(kdc.log),
                "kind": "kdc",
                "realm": kdc.realm,
                "krb5_conf": str(kdc.krb5_conf),
                "admin_ccache": str(kdc.directory / ADMIN_CCACHE),
                "user_ccache": str(kdc.directory / USER_CCACHE),
                "user_principal": kdc.principal(os_user()),
                "user_keytab": str(_keytab_of(kdc, os_user())),
            }
            _admin_env.update(kdc.env(), KRB5CCNAME=f"FILE:{kdc.directory / ADMIN_CCACHE}")
        edited = edited_config(directory)
        if edited is None:
            write_config(directory, cfg)
        else:  # the operator's edits since the launcher wrote it win (design §A.6)
            cluster["config_edited"] = changed_keys(cfg, edited)
            cfg = _same_nodes(cfg, edited)
        if zookeeper:
            ensemble = _start_zookeeper(directory, members, plan.zookeeper_base, zk_kerberos)
            for name, info in ensemble.describe().items():
                cluster[name] = {
                    "rpc": info["client"],
                    "http": "",
                    "pid": info["pid"],
                    "log": info["log"],
                    "kind": "zookeeper",
                }
            _format_zk(toml_path)
        jn_daemons = [
            spawn(
                name,
                ["journalnode", "--config", str(toml_path), "--name", name],
                directory / "logs" / f"{name}.log",
                directory / "run" / f"{name}.ready",
            )
            for name in jns
        ]
        started += jn_daemons
        ready = wait_ready(jn_daemons)
        for d in jn_daemons:
            cluster[d.name] = _entry(d, ready[d.name], "journalnode")
        if nns:
            for d, info in _start_namenodes(
                directory, toml_path, list(nns), started, manual=not zookeeper
            ):
                cluster[d.name] = _entry(d, info, "namenode")
        if dns:
            dn_daemons = [
                spawn(
                    name,
                    ["datanode", "--config", str(toml_path), "--id", name],
                    directory / "logs" / f"{name}.log",
                    directory / "run" / f"{name}.ready",
                )
                for name in dns
            ]
            started += dn_daemons
            ready = wait_ready(dn_daemons)
            for d in dn_daemons:
                cluster[d.name] = {
                    **_entry(d, ready[d.name], "datanode"),
                    "transfer": ready[d.name].get("transfer", ""),
                }
        if zookeeper:
            zkfcs = [
                spawn(
                    f"zkfc{i}",
                    ["zkfc", "--config", str(toml_path), "--id", nn],
                    directory / "logs" / f"zkfc{i}.log",
                    directory / "run" / f"zkfc{i}.ready",
                )
                for i, nn in enumerate(nns, start=1)
            ]
            started += zkfcs
            ready = wait_ready(zkfcs)
            for d, nn in zip(zkfcs, nns, strict=True):
                cluster[d.name] = {**_entry(d, ready[d.name], "zkfc"), "namenode": nn}
            with logged_in(cfg.security, _admin_env.get("KRB5CCNAME", "")):
                _wait_elected(cfg, zkfcs)
    except BaseException:  # a failed start or an interrupt leaves nothing running
        for d in reversed(started):  # ZKFCs, DataNodes, NameNodes, then the JournalNodes
            stop_pid(d.pid)
        if ensemble is not None:
            ensemble.stop()
        if kdc is not None:
            kdc.stop()
        raise
    finally:
        _admin_env.clear()
    cluster["shared_edits"] = cfg.shared_edits_uri()
    cluster["config"] = str(toml_path)
    cluster["zookeeper"] = connect if zookeeper else ""
    cluster["automatic_failover"] = zookeeper
    if certs is not None:
        cluster["tls"] = {
            "http_policy": cfg.security.http_policy,
            "ca": str(certs.ca),
            "truststore": str(certs.truststore),
        }
    if nns:
        cluster["nameservice"] = nameservice
        cluster["hadoop_conf"] = str(write_hadoop_conf(directory, cfg, certs))
    _write_json(directory / CLUSTER_JSON, cluster)
    return cluster


ADMIN_CCACHE = "admin.ccache"  # tickets of the NameNodes' principal, for admin commands
USER_CCACHE = "user.ccache"  # tickets of the OS user's principal, what `kinit` would give
# the environment of the launcher's admin commands (a Kerberos cluster's admin tickets)
_admin_env: dict[str, str] = {}


def zookeeper_sasl_acl(security: SecuritySettings) -> str:
    """The HA znodes' ACL under ZooKeeper's Kerberos (design §S.11): every right to the
    NameNodes' SASL id, their principal's first component (nn/_HOST@REALM: `nn`), as HDFS's
    `ha.zookeeper.acl = sasl:nn:rwcda`."""
    return f"sasl:{KerberosName.parse(security.namenode_principal).service}:rwcda"


def _zookeeper_sasl(
    zk: ZooKeeperSettings, security: SecuritySettings, kdc: Kdc
) -> ZooKeeperSettings:
    """[zookeeper] of a Kerberos cluster: the ZKFCs log in with SASL and the HA znodes carry
    the sasl ACL. A cluster made before with the digest ACL (design §S.6) keeps its
    credential as auth, so its ZKFCs may still change the znodes that ACL guards."""
    digest = kdc.directory / "zkfc-auth"
    auth = f"@{digest}" if digest.exists() else ""
    return replace(zk, sasl=True, acl=zookeeper_sasl_acl(security), auth=auth)


def _zookeeper_principal(kdc: Kdc) -> Any:
    """ZooKeeper's own principal, zookeeper/<host>, and its keytab (made the first time)."""
    from qjm.cluster.zookeeper import ZooKeeperKerberos

    name = f"zookeeper/{canonical_host(HOST)}"
    keytab = _keytab_of(kdc, name)
    if not keytab.exists():
        keytab = kdc.add_principal(name)
    return ZooKeeperKerberos(kdc.principal(name), keytab, kdc.krb5_conf)


def _keytab_of(kdc: Kdc, name: str) -> Path:
    """Where kdc.add_principal(name) puts name's keytab."""
    return kdc.keytab_dir / f"{name.replace('/', '_').replace('@', '_')}.keytab"


def _stamp_of(text: bytes) -> str:
    return hashlib.sha256(text).hexdigest()


def write_config(directory: Path, cfg: ClusterConfig) -> None:
    """Write DIR/cluster.toml, and beside it the digest that tells a later edit of it."""
    text = dump_config(cfg).encode()
    (directory / CLUSTER_TOML).write_bytes(text)
    (directory / CONFIG_STAMP).write_text(_stamp_of(text) + "\n")


def edited_config(directory: Path) -> ClusterConfig | None:
    """The stopped cluster's cluster.toml where an operator edited it since the launcher
    wrote it (its digest differs from the one written with it), else None."""
    toml_path, stamp = directory / CLUSTER_TOML, directory / CONFIG_STAMP
    try:
        text, written = toml_path.read_bytes(), stamp.read_text().strip()
    except OSError:
        return None  # none yet, or written before the digest was kept: the launcher's
    if _stamp_of(text) == written:
        return None
    try:
        return load_config(toml_path)
    except ConfigError as e:
        raise LaunchError(
            f"{toml_path} was edited since the launcher wrote it and does not load: {e}; "
            f"fix it, or remove it (and {stamp}) to have the launcher write it again"
        ) from None


def _flat(cfg: ClusterConfig) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for section, table in tomllib.loads(dump_config(cfg)).items():
        for key, value in table.items():
            if isinstance(value, dict):  # [journalnodes.jn1] and the like
                out |= {f"{section}.{key}.{k}": v for k, v in value.items()}
            else:
                out[f"{section}.{key}"] = value
    return out


def changed_keys(launcher: ClusterConfig, edited: ClusterConfig) -> list[str]:
    """The keys in which an edited cluster.toml differs from what the launcher would write."""
    a, b = _flat(launcher), _flat(edited)
    return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))


def _same_nodes(launcher: ClusterConfig, edited: ClusterConfig) -> ClusterConfig:
    """edited, where it names the nodes the launcher runs (it starts them by these names)
    and keeps the cluster's security mode (a Kerberos or HTTPS cluster stays so, §S.4)."""
    for key in ("authentication", "http_policy"):
        ours, theirs = getattr(launcher.security, key), getattr(edited.security, key)
        if ours != theirs:
            raise LaunchError(
                f"{edited.source} was edited to security.{key} = {theirs!r}; this cluster "
                f"starts with {ours!r} (its KDC or CA decides; make a cluster of the other "
                "kind in a new --dir)"
            )
    for kind in ("journalnodes", "namenodes", "datanodes"):
        ours, theirs = list(getattr(launcher, kind)), list(getattr(edited, kind))
        if ours != theirs:
            raise LaunchError(
                f"{edited.source} was edited to name {kind} {', '.join(theirs) or 'none'}; "
                f"the launcher runs {', '.join(ours) or 'none'} (change the counts with "
                "cluster up's flags, or use a new --dir)"
            )
    return edited


def proxyusers_of_stopped(directory: Path) -> dict[str, ProxyUserConfig]:
    """The proxy users of the cluster.toml in directory, none where there is none to read."""
    try:
        return dict(load_config(directory / CLUSTER_TOML).proxyusers)
    except ConfigError:
        return {}


def made_with_kerberos(directory: Path) -> bool:
    """Whether the cluster in directory was made with Kerberos (its KDC database is there)."""
    return (directory / "kdc" / "db" / "stash").exists()


def kerberos_mode(directory: Path, kerberos: bool | None) -> bool:
    """Whether the cluster in directory starts with Kerberos: as asked, else as it was made.

    A cluster made with Kerberos stays so (its principals, keytabs and ZooKeeper credential
    are kept): opening it up would hand its files to anyone who claims a name (design §S.4).
    """
    made = made_with_kerberos(directory)
    if kerberos is False and made:
        raise LaunchError(
            f"the cluster in {directory} was made with Kerberos (its KDC is in "
            f"{directory / 'kdc'}) and starts only as a Kerberos cluster; leave out "
            "--insecure, or make an open cluster in another directory"
        )
    return made if kerberos is None else kerberos


def made_with_https(directory: Path) -> bool:
    """Whether the stopped cluster in directory serves HTTPS: its CA is in DIR/tls and its
    cluster.toml's http_policy is not HTTP_ONLY (a config that does not load: no)."""
    toml_path = directory / CLUSTER_TOML
    if not ((directory / TLS_DIR / "ca.pem").exists() and toml_path.exists()):
        return False
    try:
        return load_config(toml_path).security.http_policy != HTTP_ONLY
    except ConfigError:
        return False  # _ports_for names what is wrong with it


def https_mode(directory: Path, https: bool | None) -> bool:
    """Whether the cluster in directory serves HTTPS: as asked, else as it was made."""
    return made_with_https(directory) if https is None else https


def _https_security(security: SecuritySettings, certs: ClusterTls) -> SecuritySettings:
    """[security] of an HTTPS cluster: HTTPS_ONLY with the cluster's certificate and CA."""
    return replace(
        security,
        http_policy=HTTPS_ONLY,
        ssl_certificate=str(certs.certificate),
        ssl_private_key=str(certs.private_key),
        ssl_ca=str(certs.ca),
    )


def _https_ports(directory: Path, plan: PortPlan, base_port: int | None) -> dict[str, int]:
    """Each node's HTTPS port: the stopped cluster's, else HDFS's default beside each HTTP
    port (9871, 8481, 9865: the HTTP port + 1), else with base_port the ports after the
    plan's."""
    names = (
        [f"jn{i}" for i in range(1, len(plan.journalnodes) + 1)]
        + [f"nn{i}" for i in range(1, len(plan.namenodes) + 1)]
        + [f"dn{i}" for i in range(1, len(plan.datanodes) + 1)]
    )
    old: dict[str, int] = {}
    toml_path = directory / CLUSTER_TOML
    if toml_path.exists() and (directory / "data").is_dir():
        try:
            cfg = load_config(toml_path)
        except ConfigError as e:
            raise LaunchError(
                f"the stopped cluster in {directory} has a broken config: {e}"
            ) from None
        addresses = {n.name: n.https_address for n in cfg.journalnodes.values()}
        addresses |= {n.name: n.https_address for n in cfg.namenodes.values()}
        addresses |= {n.name: n.https_address for n in cfg.datanodes.values()}
        for name, address in addresses.items():
            if address:
                old[name] = parse_address(address, "https_address")[1]
    if base_port is None:
        http = [h for _, h in plan.journalnodes + plan.namenodes] + [h for *_, h in plan.datanodes]
        fresh = [h + 1 for h in http]
    else:
        used = [p for pair in plan.journalnodes + plan.namenodes for p in pair]
        used += [p for triple in plan.datanodes for p in triple] + plan.zkfcs
        used += plan.zookeeper_ports()
        first = max(used) + 1
        fresh = list(range(first, first + len(names)))
        if fresh and fresh[-1] > 65535:
            raise LaunchError(
                f"--base-port {base_port}: the HTTPS ports would run past 65535; pick a lower one"
            )
    return {name: old.get(name, port) for name, port in zip(names, fresh, strict=True)}


def _start_kdc(directory: Path, rpc_protection: str) -> tuple[Kdc, SecuritySettings]:
    """A KDC in DIR/kdc with a principal and keytab per daemon role and one for the OS user
    (both logged in to ccaches there), and the [security] section that names them."""
    kdc = Kdc(directory / "kdc")
    kdc.start()  # a cluster started before keeps its database, principals and keytabs
    try:
        host = canonical_host(HOST)
        roles = (("namenode", "nn"), ("journalnode", "jn"), ("datanode", "dn"))
        user = os_user()
        keytabs = {role: _keytab_of(kdc, f"{short}/{host}") for role, short in roles}
        user_keytab = _keytab_of(kdc, user)
        if not all(k.exists() for k in [*keytabs.values(), user_keytab]):
            keytabs = {role: kdc.add_principal(f"{short}/{host}") for role, short in roles}
            kdc.add_principal(f"HTTP/{host}")  # SPNEGO: its key goes into each daemon's keytab
            for keytab in keytabs.values():
                kdc.export_keytab(f"HTTP/{host}", keytab)
            user_keytab = kdc.add_principal(user)
        kdc.kinit(kdc.principal(f"nn/{host}"), keytabs["namenode"], kdc.directory / ADMIN_CCACHE)
        kdc.kinit(kdc.principal(user), user_keytab, kdc.directory / USER_CCACHE)
    except BaseException:
        kdc.stop()
        raise
    security = SecuritySettings(
        authentication="kerberos",
        realm=kdc.realm,
        krb5_conf=str(kdc.krb5_conf),
        namenode_keytab=str(keytabs["namenode"]),
        journalnode_keytab=str(keytabs["journalnode"]),
        datanode_keytab=str(keytabs["datanode"]),
        rpc_protection=rpc_protection,  # privacy by default: every RPC frame encrypted (§S.8)
        # and every data transfer byte under the same protection (§S.12)
        data_transfer_protection=rpc_protection,
        # under privacy block bytes switch to AES-CTR where the client offers it (§S.12)
        data_transfer_cipher_suites="AES/CTR/NoPadding" if "privacy" in rpc_protection else "",
        # the user who made the cluster reads the daemons' /logs/ (design §N.11)
        cluster_administrators=user,
    )
    return kdc, security


def _start_zookeeper(directory: Path, members: int, base: int | None, kerberos: Any) -> Any:
    from qjm.cluster.zookeeper import ZooKeeperError, start_zookeeper

    try:
        return start_zookeeper(directory / ZOOKEEPER_DIR, members, base, kerberos=kerberos)
    except ZooKeeperError as e:
        raise LaunchError(str(e)) from None


def _format_zk(toml_path: Path) -> None:
    """`qjm zkfc format-zk`; a znode left by an earlier start of this cluster is kept."""
    run_admin(
        ["zkfc", "format-zk", "--config", str(toml_path)],
        "ZooKeeper",
        ok=lambda r: r.returncode == 2 and "already exists" in r.stderr,
    )


def _wait_elected(cfg: ClusterConfig, zkfcs: list[Daemon]) -> str:
    """Wait until exactly one NameNode is active and the others standby; its name."""
    addresses = {name: nn.rpc_address for name, nn in cfg.namenodes.items()}
    deadline = time.monotonic() + ELECTION_TIMEOUT_S
    states: dict[str, str] = {}
    while True:
        for d in zkfcs:
            code = d.process.poll()
            if code is not None:
                raise LaunchError(
                    f"{d.name} exited with code {code} while the NameNodes were elected; the "
                    f"end of {d.log}:\n{tail(d.log)}"
                )
        states = namenode_states(addresses, timeout=5.0)
        active = [n for n, s in states.items() if s == "active"]
        if len(active) == 1 and all(s in ("active", "standby") for s in states.values()):
            return active[0]
        if time.monotonic() > deadline:
            shown = ", ".join(f"{n} {s}" for n, s in states.items())
            logs = "".join(f"\n--- the end of {d.log}:\n{tail(d.log)}" for d in zkfcs)
            raise LaunchError(
                f"the ZKFCs did not elect one active NameNode within {ELECTION_TIMEOUT_S:.0f}s "
                f"({shown}){logs}"
            )
        time.sleep(0.2)


def datanodes_of_stopped(directory: Path) -> int | None:
    """How many DataNodes the stopped cluster in directory has (None: no such cluster)."""
    toml_path = directory / CLUSTER_TOML
    if not (toml_path.exists() and (directory / "data").is_dir()):
        return None
    try:
        return len(load_config(toml_path).datanodes)
    except ConfigError:
        return None  # _ports_for names what is wrong with it


def _ports_for(
    directory: Path,
    journalnodes: int,
    namenodes: int,
    zookeeper_members: int,
    base_port: int | None,
    datanodes: int = 0,
) -> PortPlan:
    """The ports of a new cluster, or of the stopped one whose data is in directory.

    A journal remembers the JournalNodes it was formatted on, so a cluster started again
    keeps its addresses (and its ZKFCs' and ZooKeeper's, whose data is kept); asking for
    other ports or other counts is refused.
    """
    toml_path = directory / CLUSTER_TOML
    if not (toml_path.exists() and (directory / "data").is_dir()):
        return plan_cluster_ports(journalnodes, base_port, namenodes, zookeeper_members, datanodes)
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
    fresh = plan_cluster_ports(journalnodes, base_port, namenodes, zookeeper_members, datanodes)
    old_dns = [
        tuple(
            parse_address(getattr(dn, key), key)[1]
            for key in ("transfer_address", "ipc_address", "http_address")
        )
        for dn in old.datanodes.values()
    ]
    if len(old_dns) != datanodes:
        raise LaunchError(
            f"{directory} holds a stopped cluster of {len(old_dns)} DataNode(s); start it with "
            f"--datanodes {len(old_dns)}, or use a new --dir"
        )
    if base_port is not None and (jns, nns) != (fresh.journalnodes, fresh.namenodes):
        first = jns[0][0]
        raise LaunchError(
            f"{directory} holds a stopped cluster on ports from {first} (its journal remembers "
            f"its JournalNodes); start it with --base-port {first} or none, or use a new --dir"
        )
    plan = PortPlan(
        jns,
        nns,
        fresh.zkfcs,
        fresh.zookeeper_base,
        zookeeper_members,
        [(t, i, h) for t, i, h in old_dns],
    )
    if not zookeeper_members:
        return plan
    zkfc_addresses = [nn.zkfc_address for nn in old.namenodes.values()]
    if all(zkfc_addresses):
        plan.zkfcs = [parse_address(a, "zkfc_address")[1] for a in zkfc_addresses]
    quorum = [a.strip() for a in old.zookeeper.quorum.split(",") if a.strip()]
    if quorum and (directory / ZOOKEEPER_DIR / "data").is_dir():
        if len(quorum) != zookeeper_members:
            raise LaunchError(
                f"{directory} holds a stopped cluster whose ZooKeeper has {len(quorum)} "
                f"member(s); start it with --zookeeper-members {len(quorum)}, or use a new --dir"
            )
        plan.zookeeper_base = parse_address(quorum[0], "zookeeper.quorum")[1]
    return plan


def _check_free(name: str, *ports: int) -> None:
    for port in ports:
        if not port_is_free(HOST, port):
            raise LaunchError(
                f"port {port} for {name} on {HOST} is in use; pick other ports with --base-port"
            )


def _entry(d: Daemon, ready: dict[str, Any], kind: str) -> dict[str, Any]:
    entry = {
        "rpc": ready["rpc"],
        "http": ready.get("http", ""),  # the address clients use: HTTPS's under HTTPS_ONLY
        "pid": d.pid,
        "log": str(d.log),
        "kind": kind,
    }
    if ready.get("scheme"):
        entry["scheme"] = ready["scheme"]
    return entry


def _formatted(name_dir: Path) -> bool:
    return (name_dir / "current" / "VERSION").is_file()


def _start_namenodes(
    directory: Path, toml_path: Path, names: list[str], started: list[Daemon], *, manual: bool
) -> list[tuple[Daemon, dict[str, Any]]]:
    """Format or reuse nn1, start it, bootstrap the others from it, start them; in manual HA
    make nn1 active (with automatic failover the ZKFCs choose)."""
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
    if manual:
        run_admin(["haadmin", "--config", str(toml_path), "-transitionToActive", first], first)
    return out


def run_admin(
    argv: list[str],
    name: str,
    timeout: float = ADMIN_TIMEOUT_S,
    ok: Callable[[subprocess.CompletedProcess[str]], bool] | None = None,
) -> str:
    """Run `qjm <argv>` to completion; its stdout, or a LaunchError with its output unless
    it exited 0 or ok(result) says its failure is fine."""
    try:
        r = subprocess.run(
            [sys.executable, "-m", "qjm", *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **_admin_env} if _admin_env else None,
        )
    except subprocess.TimeoutExpired:
        raise LaunchError(f"`qjm {' '.join(argv)}` for {name} took over {timeout:.0f}s") from None
    if r.returncode != 0 and not (ok is not None and ok(r)):
        out = (r.stderr.strip() or r.stdout.strip()).splitlines()
        raise LaunchError(
            f"`qjm {' '.join(argv)}` for {name} failed (exit {r.returncode}): "
            + "\n".join(out[-5:])
        )
    return r.stdout


def daemon_argv(cluster: dict[str, Any], name: str) -> list[str]:
    """The `qjm` arguments that start daemon name of cluster.json as the launcher did."""
    daemons = daemons_of(cluster)
    if name not in daemons:
        raise LaunchError(f"no daemon {name} in this cluster (it has {', '.join(daemons)})")
    d, config = daemons[name], cluster["config"]
    kind = d.get("kind")
    if kind == "journalnode":
        return ["journalnode", "--config", config, "--name", name]
    if kind == "namenode":
        return ["namenode", "--config", config, "--id", name]
    if kind == "zkfc":
        return ["zkfc", "--config", config, "--id", d["namenode"]]
    if kind == "datanode":
        return ["datanode", "--config", config, "--id", name]
    raise LaunchError(
        f"{name} is {kind or 'of no known kind'}: only JournalNodes, NameNodes, DataNodes and "
        "ZKFCs start alone; start the whole cluster again with `qjm cluster down` and "
        "`qjm cluster up`"
    )


def start_daemons(directory: Path, names: list[str], timeout: float = 60.0) -> dict[str, int]:
    """Start stopped daemons of a cluster again on their ports and data (a NameNode comes
    back as standby); their pids, also written to cluster.json."""
    directory = directory.resolve()
    cluster = read_cluster(directory)
    argvs = {name: daemon_argv(cluster, name) for name in names}
    running = [n for n in names if pid_alive(cluster[n].get("pid"))]
    if running:
        raise LaunchError(
            ", ".join(f"{n} is running (pid {cluster[n]['pid']})" for n in running)
            + "; stop it first (kill its pid) to start it again"
        )
    started = [
        spawn(
            name,
            argv,
            directory / "logs" / f"{name}.log",
            directory / "run" / f"{name}.ready",
        )
        for name, argv in argvs.items()
    ]
    for d in started:  # in cluster.json at once, so that cluster_down stops them whatever happens
        cluster[d.name]["pid"] = d.pid
    _write_json(directory / CLUSTER_JSON, cluster)
    wait_ready(started, timeout=timeout)
    return {d.name: d.pid for d in started}


def _stop_rank(kind: str | None) -> int:
    """ZKFCs first (nothing fails over while NameNodes stop), then NameNodes (an active whose
    JournalNodes vanish would end on a failed sync), JournalNodes, ZooKeeper last."""
    return -KIND_ORDER.index(kind) if kind in KIND_ORDER else 0


def cluster_down(directory: Path) -> list[str]:
    """Stop every daemon of the cluster; return the names that were running."""
    directory = directory.resolve()
    cluster = read_cluster(directory)
    stopped = []
    daemons = sorted(daemons_of(cluster).items(), key=lambda kv: _stop_rank(kv[1].get("kind")))
    ranks = sorted({_stop_rank(d.get("kind")) for _, d in daemons})
    # one kind at a time, the daemons of a kind together: both ZKFCs leave the election at
    # once, so neither takes over while the other stops
    with concurrent.futures.ThreadPoolExecutor(max(1, len(daemons))) as pool:
        for rank in ranks:
            group = [(n, d) for n, d in daemons if _stop_rank(d.get("kind")) == rank]
            results = list(pool.map(lambda nd: stop_pid(nd[1]["pid"]), group))
            stopped += [n for (n, _), ran in zip(group, results, strict=True) if ran]
    for name, d in daemons:
        d["pid"] = None
        ready = directory / "run" / f"{name}.ready"
        ready.unlink(missing_ok=True)
    _write_json(directory / CLUSTER_JSON, cluster)
    return stopped
