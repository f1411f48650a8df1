"""`qjm journalnode`: run a JournalNode."""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path

from qjm import runtime
from qjm.config import (
    JN_HTTP_PORT,
    JN_RPC_PORT,
    JournalNodeSettings,
    SecuritySettings,
    check_sync_interval,
    parse_address,
)
from qjm.config_site import load_cluster_config
from qjm.errors import ConfigError
from qjm.ipc.login import daemon_login
from qjm.journalnode.node import JournalNode, serve_forever
from qjm.logs import setup_logging


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `qjm journalnode`."""
    p = sub.add_parser(
        "journalnode",
        help="run a JournalNode",
        description="Run a JournalNode: from --config and --name, or from the flags.",
    )
    p.add_argument("--config", help="cluster TOML file, or Hadoop conf dir holding hdfs-site.xml")
    p.add_argument(
        "--name",
        help="which [journalnodes.<name>] of --config to run (of a Hadoop conf dir: jn1, "
        "jn2, ... in dfs.namenode.shared.edits.dir's order; then --config defaults to "
        "$HADOOP_CONF_DIR)",
    )
    p.add_argument("--edits-dir", help="absolute directory for journal storage")
    p.add_argument("--rpc-address", default=f"0.0.0.0:{JN_RPC_PORT}", help="host:port for RPC")
    p.add_argument("--http-address", default=f"0.0.0.0:{JN_HTTP_PORT}", help="host:port for HTTP")
    p.add_argument("--peers", help="comma-separated RPC addresses of the other JournalNodes")
    p.add_argument("--sync-interval-ms", type=int, help="how often to sync from peers")
    p.add_argument("--ready-file", help="write {pid, rpc, http} JSON here once serving")
    p.add_argument("--log-level", default="INFO")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Start the JournalNode and serve until SIGTERM."""
    setup_logging(f"journalnode{'-' + args.name if args.name else ''}", args.log_level)
    settings = JournalNodeSettings()
    security = SecuritySettings()
    https: tuple[str, int] | None = None
    peers: list[str] = []
    if args.name and not args.config:  # an HDFS operator's conf dir (design §A.6)
        args.config = os.environ.get("HADOOP_CONF_DIR") or None
    if args.config:
        if not args.name:
            raise ConfigError("--config needs --name to pick the JournalNode to run")
        cfg = load_cluster_config(args.config)
        jn = cfg.journalnode_named(args.name)
        edits_dir, rpc, http = jn.edits_dir, jn.rpc_address, jn.http_address
        settings = cfg.journalnode
        security = cfg.security
        if jn.https_address:
            https = parse_address(jn.https_address, f"journalnodes.{jn.name}.https_address")
        peers = [o.rpc_address for o in cfg.journalnodes.values() if o.name != jn.name]
        daemon_login(
            cfg.security, "journalnode", parse_address(rpc, "rpc_address")[0], cfg.proxyusers
        )
    else:
        if not args.edits_dir:
            raise ConfigError("give --edits-dir (or --config with --name)")
        edits_dir, rpc, http = args.edits_dir, args.rpc_address, args.http_address
    if args.peers:
        peers = [p for p in args.peers.split(",") if p]
        for p in peers:
            parse_address(p, "--peers")
    if args.sync_interval_ms is not None:
        check_sync_interval(args.sync_interval_ms, "--sync-interval-ms")
        settings = replace(settings, sync_interval_ms=args.sync_interval_ms)
    node = JournalNode(
        edits_dir,
        parse_address(rpc, "--rpc-address", JN_RPC_PORT),
        parse_address(http, "--http-address", JN_HTTP_PORT),
        settings,
        peers=peers,
        https_address=https,
        security=security,
    )
    if args.config:  # /conf shows the cluster's configuration (design §N.11)
        from qjm.hdfs.site_conf import conf_properties

        node.conf_source = lambda: conf_properties(cfg, "journalnode", jn.name)
    ready = Path(args.ready_file) if args.ready_file else None
    runtime.run(serve_forever(node, ready))
    return 0
