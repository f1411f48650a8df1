"""`qjm datanode`: run a DataNode (design §B.13)."""

from __future__ import annotations

import argparse
from pathlib import Path

from qjm import runtime
from qjm.cli.common import add_config_arg
from qjm.config import parse_address
from qjm.config_site import load_cluster_config
from qjm.ipc.login import daemon_login
from qjm.logs import setup_logging


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `qjm datanode`."""
    p = sub.add_parser(
        "datanode",
        help="run a DataNode",
        description="Run the DataNode [datanodes.<id>] of --config: it stores block replicas "
        "and reports to every NameNode of the config.",
    )
    add_config_arg(p)
    p.add_argument("--id", required=True, help="which [datanodes.<id>] of --config to run")
    p.add_argument("--ready-file", help="write {pid, rpc, http, transfer} JSON here once serving")
    p.add_argument("--log-level", default="INFO")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Start the DataNode and serve until SIGTERM."""
    from qjm.datanode.server import DataNode, serve_forever

    setup_logging(f"datanode-{args.id}", args.log_level)
    cfg = load_cluster_config(args.config)
    dn = cfg.datanode_named(args.id)
    daemon_login(
        cfg.security, "datanode", parse_address(dn.ipc_address, "ipc_address")[0], cfg.proxyusers
    )
    from qjm.namenode.client import NameNodeClient

    def namespace_calls(addresses: list[str], user: str, real_user: str) -> NameNodeClient:
        """WebHDFS's ClientProtocol calls as user, a proxy of real_user if set (design §W)."""
        return NameNodeClient(addresses, user=user, real_user=real_user)

    node = DataNode(cfg, dn, namespace_factory=namespace_calls)
    ready = Path(args.ready_file) if args.ready_file else None
    runtime.run(serve_forever(node, ready))
    return 0
