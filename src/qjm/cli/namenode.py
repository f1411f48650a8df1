"""`qjm namenode`: run a NameNode; format, initialize-shared-edits, bootstrap-standby, recover."""

from __future__ import annotations

import argparse
from pathlib import Path

from qjm import runtime
from qjm.cli.common import add_config_arg
from qjm.config import parse_address
from qjm.config_site import load_cluster_config
from qjm.ipc.login import daemon_login
from qjm.logs import setup_logging

ACTIONS = ("format", "initialize-shared-edits", "bootstrap-standby", "recover")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `qjm namenode`."""
    p = sub.add_parser(
        "namenode",
        help="run a NameNode, or format / initialize-shared-edits / bootstrap-standby / recover",
        description=(
            "Without an action: run the NameNode [namenodes.<id>] of --config (it starts as "
            "standby; `qjm haadmin -transitionToActive` makes it active). format: a new "
            "namespace in the name dir and the shared journal. initialize-shared-edits: format "
            "the shared journal from this name dir's edits. bootstrap-standby: copy the newest "
            "image from the other NameNode. recover: save what is readable as a new image (the "
            "shared journal decides every txid it holds; local edits beyond its end only with "
            "--local-edits-beyond-journal)."
        ),
    )
    p.add_argument("action", nargs="?", choices=ACTIONS, help="what to do (default: run)")
    add_config_arg(p)
    p.add_argument("--id", required=True, dest="nn_id", help="which [namenodes.<id>] to use")
    p.add_argument("--force", action="store_true", help="format over existing data")
    p.add_argument(
        "--local-edits-beyond-journal",
        action="store_true",
        help="recover: also apply the local edits after the shared journal's end (ops no "
        "quorum acknowledged, unless the journal lost them); without it they are dropped",
    )
    p.add_argument("--ready-file", help="write {pid, rpc, http} JSON here once serving")
    p.add_argument("--log-level", default="INFO")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the NameNode until SIGTERM, or do one action."""
    cfg = load_cluster_config(args.config)
    nn = cfg.namenode_named(args.nn_id)  # a clear error before anything else
    # HDFS's NameNode logs in from its keytab for every action (design §S.1)
    daemon_login(
        cfg.security, "namenode", parse_address(nn.rpc_address, "rpc_address")[0], cfg.proxyusers
    )
    setup_logging(f"namenode-{args.nn_id}", args.log_level)
    if args.action is None:
        from qjm.namenode.server import NameNode, serve_forever

        async def main() -> int:
            nn = NameNode(cfg, args.nn_id)
            ready = Path(args.ready_file) if args.ready_file else None
            return await serve_forever(nn, ready)

        return int(runtime.run(main()))
    if args.action == "bootstrap-standby":
        from qjm.namenode.checkpointer import bootstrap_standby

        txid = runtime.run(bootstrap_standby(cfg, args.nn_id, force=args.force))
        print(f"NameNode {args.nn_id} bootstrapped from the image at txid {txid}")
        return 0
    from qjm.namenode import admin

    if args.action == "format":
        ns = runtime.run(admin.format_namenode(cfg, args.nn_id, args.force))
        print(
            f"NameNode {args.nn_id} formatted ({ns.describe()}); shared edits "
            f"{cfg.shared_edits_uri()} formatted"
        )
    elif args.action == "initialize-shared-edits":
        report = runtime.run(admin.initialize_shared_edits(cfg, args.nn_id, args.force))
        print(
            f"shared edits {cfg.shared_edits_uri()} initialized from NameNode {args.nn_id}: "
            f"image at txid {report.image_txid}, edits up to txid {report.last_txid}"
        )
    else:
        recovered = runtime.run(
            admin.recover(cfg, args.nn_id, local_beyond_journal=args.local_edits_beyond_journal)
        )
        for line in recovered.lines():
            print(line)
    return 0


__all__ = ["add_parser", "run"]
