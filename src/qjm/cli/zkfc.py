"""`qjm zkfc`: run the ZKFailoverController of one NameNode; `format-zk` prepares ZooKeeper."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qjm import runtime
from qjm.cli.common import add_config_arg
from qjm.config import ClusterConfig, parse_address
from qjm.config_site import key_name, load_cluster_config
from qjm.errors import ConfigError
from qjm.ipc.login import daemon_login, role_principal, use_krb5_conf
from qjm.ipc.sasl import client_security
from qjm.logs import setup_logging
from qjm.security.principal import KerberosName

if TYPE_CHECKING:
    from qjm.ha.elector import ActiveNodeInfo, KazooStore

log = logging.getLogger(__name__)

# `hdfs zkfc` exit codes
EXIT_FORMAT_DENIED = 2
EXIT_NO_PARENT_ZNODE = 3
EXIT_NO_FENCER = 4
EXIT_CANNOT_CONNECT = 6


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `qjm zkfc`."""
    p = sub.add_parser(
        "zkfc",
        help="run a NameNode's failover controller (automatic failover), or format-zk",
        description=(
            "Without an action: run the ZKFailoverController of [namenodes.<id>] of --config: "
            "it watches that NameNode's health, takes part in the election in ZooKeeper "
            "([zookeeper]), fences the old active ([zkfc] fencing_methods) and makes its "
            "NameNode active or standby; it serves ZKFCProtocol on [zkfc] port. format-zk: "
            "create the nameservice's znode (--force clears an existing one)."
        ),
    )
    p.add_argument("action", nargs="?", choices=("format-zk",), help="what to do (default: run)")
    add_config_arg(p)
    p.add_argument("--id", dest="nn_id", help="which [namenodes.<id>] to control (to run)")
    p.add_argument("--force", action="store_true", help="format-zk: clear an existing znode")
    p.add_argument("--ready-file", help="write {pid, zkfc, namenode} JSON here once running")
    p.add_argument("--log-level", default="INFO")
    p.set_defaults(func=run)


def _quorum(cfg: ClusterConfig) -> str:
    if not cfg.zookeeper.quorum.strip():
        raise ConfigError(
            f"{cfg.source}: {key_name(cfg, 'zookeeper.quorum')} is not set "
            "(host:port[,host:port...] of the ZooKeeper servers, HDFS's ha.zookeeper.quorum)"
        )
    return cfg.zookeeper.quorum


def zookeeper_sasl_login(cfg: ClusterConfig, nn_host: str) -> dict[str, Any] | None:
    """kazoo's sasl_options for a ZKFC that logs in to ZooKeeper with Kerberos as its
    NameNode, from the NameNode's keytab (design §S.11); None where [zookeeper] sasl is off.

    pure-sasl's GSSAPI (pykerberos) takes the process's default credentials, so this points
    them at the keytab: MIT's client keytab (KRB5_CLIENT_KTNAME) fills a ticket cache of the
    process's memory (KRB5CCNAME) and refreshes it before the ticket ends. The ZKFC's own
    IPC login names its keytab and cache itself, so nothing else of the process uses these.
    """
    if not cfg.zookeeper.sasl:
        return None
    if not cfg.security.kerberos:
        raise ConfigError(
            f"{cfg.source}: {key_name(cfg, 'zookeeper.sasl')} needs Kerberos ([security] "
            'authentication = "kerberos"): the ZKFC logs in to ZooKeeper as its '
            "NameNode's principal"
        )
    principal, keytab = role_principal(cfg.security, "namenode", nn_host)
    principal = str(KerberosName.parse(principal).in_realm(cfg.security.realm))
    use_krb5_conf(cfg.security)
    os.environ["KRB5_CLIENT_KTNAME"] = f"FILE:{os.path.abspath(keytab)}"
    os.environ["KRB5CCNAME"] = f"MEMORY:qjm-zkfc-{os.getpid()}"
    return {"mechanism": "GSSAPI", "service": cfg.zookeeper.sasl_service, "principal": principal}


async def _store(cfg: ClusterConfig, nn_host: str) -> KazooStore:
    from qjm.ha.elector import KazooStore, parse_acl, parse_auth, resolve_indirection

    zk = cfg.zookeeper
    try:
        acl = parse_acl(resolve_indirection(zk.acl, "zookeeper.acl"))
        auth = parse_auth(resolve_indirection(zk.auth, "zookeeper.auth"))
    except Exception as e:
        keys = f"{key_name(cfg, 'zookeeper.acl')} / {key_name(cfg, 'zookeeper.auth')}"
        raise ConfigError(f"{cfg.source}: {keys}: {e}") from None
    store = KazooStore(
        _quorum(cfg),
        session_timeout_s=zk.session_timeout_ms / 1000.0,
        auth=auth,
        acl=acl,
        sasl_options=zookeeper_sasl_login(cfg, nn_host),
    )
    await store.start()
    return store


def run(args: argparse.Namespace) -> int:
    """Run the ZKFC until SIGTERM, or format ZooKeeper."""
    cfg = load_cluster_config(args.config)
    _quorum(cfg)
    if args.action == "format-zk":
        logging.getLogger("kazoo").setLevel(logging.CRITICAL)  # errors are reported below
        return runtime.run(_format_zk(cfg, args.force))
    if not args.nn_id:
        raise ConfigError("qjm zkfc needs --id <namenode> (which [namenodes.<id>] to control)")
    nn = cfg.namenode_named(args.nn_id)
    # HDFS's ZKFC logs in as its NameNode (design §S.1)
    daemon_login(
        cfg.security, "namenode", parse_address(nn.rpc_address, "rpc_address")[0], cfg.proxyusers
    )
    from qjm.ha.fencing import FencingConfigError, parse_methods

    try:
        methods = parse_methods(cfg.zkfc.fencing_methods)
    except FencingConfigError as e:
        raise ConfigError(f"{cfg.source}: {key_name(cfg, 'zkfc.fencing_methods')}: {e}") from None
    if not methods:
        print(
            f"qjm zkfc: error: {cfg.source}: {key_name(cfg, 'zkfc.fencing_methods')} is empty; "
            "automatic failover needs a way to fence the old active (shell(cmd) or sshfence, "
            "one per line; shell(true) when the graceful transition to standby is enough)",
            file=sys.stderr,
        )
        return EXIT_NO_FENCER
    setup_logging(f"zkfc-{args.nn_id}", args.log_level)
    ready = Path(args.ready_file) if args.ready_file else None
    return runtime.run(_serve(cfg, args.nn_id, ready))


async def _connect(cfg: ClusterConfig, nn_id: str = "") -> KazooStore | None:
    """A connected store (logged in as nn_id's NameNode, else the first one, where SASL is
    on), or None after saying on stderr that ZooKeeper is unreachable."""
    nn = cfg.namenode_named(nn_id) if nn_id else next(iter(cfg.namenodes.values()), None)
    host = parse_address(nn.rpc_address, "rpc_address")[0] if nn is not None else "localhost"
    try:
        return await _store(cfg, host)
    except ConfigError:
        raise
    except Exception as e:
        print(
            f"qjm zkfc: error: cannot connect to ZooKeeper {cfg.zookeeper.quorum}: {e}",
            file=sys.stderr,
        )
        return None


class _NotElecting:
    """Callbacks for an elector used only to format ZooKeeper (it never joins)."""

    async def become_active(self) -> None:
        raise RuntimeError("format-zk does not take part in the election")

    async def become_standby(self) -> None:
        """Nothing to do."""

    async def enter_neutral_mode(self) -> None:
        """Nothing to do."""

    async def fence_old_active(self, old: ActiveNodeInfo) -> None:
        raise RuntimeError("format-zk does not fence")


async def _format_zk(cfg: ClusterConfig, force: bool) -> int:
    from qjm.ha.elector import ActiveStandbyElector, ElectorError, node_info

    store = await _connect(cfg)
    if store is None:
        return EXIT_CANNOT_CONNECT
    info = node_info(cfg.nameservice, "", "", 0, 0)
    elector = ActiveStandbyElector(store, info, _NotElecting(), parent=cfg.zookeeper.parent_znode)
    try:
        await elector.format_zk(force)
    except ElectorError as e:
        print(f"qjm zkfc: error: {e}", file=sys.stderr)
        return EXIT_FORMAT_DENIED
    finally:
        await elector.close()
    print(f"{elector.parent_znode} created in ZooKeeper {cfg.zookeeper.quorum}")
    return 0


async def _serve(cfg: ClusterConfig, nn_id: str, ready_file: Path | None) -> int:
    from qjm.ha.fencing import NodeFencer
    from qjm.ha.health_monitor import HealthMonitorSettings
    from qjm.ha.zkfc import ZKFailoverController, ZkfcSettings
    from qjm.runtime import stop_on_signals, write_ready_file

    nn = cfg.namenode_named(nn_id)
    host, port = parse_address(nn.rpc_address, f"namenodes.{nn_id}.rpc_address")
    zkfc_host, zkfc_port = parse_address(
        cfg.zkfc_address_of(nn_id), f"namenodes.{nn_id}.zkfc_address"
    )
    z = cfg.zkfc
    store = await _connect(cfg, nn_id)
    if store is None:
        return EXIT_CANNOT_CONNECT
    parent = f"{cfg.zookeeper.parent_znode.rstrip('/')}/{cfg.nameservice}"
    if not await store.exists(parent):
        await store.close()
        print(
            f"qjm zkfc: error: {parent} does not exist in ZooKeeper {cfg.zookeeper.quorum}: "
            "run `qjm zkfc format-zk` first",
            file=sys.stderr,
        )
        return EXIT_NO_PARENT_ZNODE
    settings = ZkfcSettings(
        nameservice=cfg.nameservice,
        namenode_id=nn_id,
        nn_host=host,
        nn_port=port,
        zkfc_host=zkfc_host,
        zkfc_port=zkfc_port,
        health=HealthMonitorSettings(
            check_interval_s=z.health_check_interval_ms / 1000.0,
            rpc_timeout_s=z.health_rpc_timeout_ms / 1000.0,
        ),
        graceful_fence_timeout_s=z.graceful_fence_timeout_ms / 1000.0,
        new_active_timeout_s=z.new_active_timeout_ms / 1000.0,
        superuser_group=cfg.namenode.superuser_group,
        superuser=login.user if (login := client_security()) is not None else None,
        trust_os_user=not cfg.security.kerberos,
        max_cede_s=z.cede_bound_ms(cfg.zookeeper.session_timeout_ms) / 1000.0,
        ipc_max_connections=z.ipc_max_connections,
        ipc_idle_timeout_s=z.ipc_idle_timeout_ms / 1000.0,
        ipc_max_unfinished_bytes=z.ipc_max_unfinished_bytes,
    )
    fencer = NodeFencer.from_config(
        z.fencing_methods,
        shell_timeout_s=z.shell_fence_timeout_ms / 1000.0,
        ssh_private_key_files=[k.strip() for k in z.ssh_private_key_files.split(",") if k.strip()],
        ssh_connect_timeout_s=z.ssh_connect_timeout_ms / 1000.0,
    )
    try:
        zkfc = await ZKFailoverController.start(
            settings, fencer, store, parent=cfg.zookeeper.parent_znode
        )
    except OSError as e:
        await store.close()
        raise ConfigError(
            f"namenodes.{nn_id}.zkfc_address / zkfc.port: cannot serve on "
            f"{zkfc_host}:{zkfc_port}: {e.strerror}"
        ) from None
    stop = stop_on_signals()
    if ready_file is not None:
        assert zkfc.server is not None
        write_ready_file(
            ready_file, {"rpc": f"{zkfc_host}:{zkfc.server.port}", "namenode": nn.rpc_address}
        )
    stopping = asyncio.ensure_future(stop.wait())
    failing = asyncio.ensure_future(zkfc.failed.wait())
    await asyncio.wait([stopping, failing], return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    failing.cancel()
    log.info("zkfc %s stopping", nn_id)
    await zkfc.stop()
    if zkfc.failed.is_set():
        print(f"qjm zkfc: error: {zkfc.fatal_error}", file=sys.stderr)
        return 1
    return 0


__all__ = ["add_parser", "run"]
