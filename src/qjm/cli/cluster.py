"""`qjm cluster up|status|down`: a local cluster on loopback."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from qjm.cli import eventloop
from qjm.cli.journal import STATUS_HEADERS, status_rows
from qjm.cli.table import render_table
from qjm.client.admin import journal_status
from qjm.client.uri import parse_qjournal_uri
from qjm.cluster.launcher import cluster_down, cluster_up, daemons_of, read_cluster
from qjm.cluster.process import LaunchError, pid_alive
from qjm.errors import QjmError
from qjm.namenode.client import HAAdminClient
from qjm.protocol.status import problem_lines


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `qjm cluster` and its subcommands."""
    p = sub.add_parser("cluster", help="run a local cluster on loopback")
    csub = p.add_subparsers(dest="cluster_cmd", required=True, metavar="COMMAND")

    up = csub.add_parser("up", help="start a local cluster in DIR")
    up.add_argument("--dir", required=True, type=Path, help="cluster directory")
    up.add_argument("--journalnodes", type=int, default=3, help="number of JournalNodes (3)")
    up.add_argument(
        "--namenodes",
        type=int,
        default=0,
        help="number of NameNodes (0, or 2 for manual HA: nn1 active, nn2 standby)",
    )
    up.add_argument(
        "--no-zookeeper",
        action="store_true",
        help="no ZooKeeper: manual HA, fail over with `qjm haadmin` (required with NameNodes)",
    )
    up.add_argument("--base-port", type=int, help="allocate ports upward from this one")
    up.add_argument("--json", action="store_true", help="print cluster.json")
    up.set_defaults(func=run_up)

    st = csub.add_parser("status", help="show the daemons of the cluster in DIR")
    st.add_argument("--dir", required=True, type=Path)
    st.add_argument("--json", action="store_true", help="print JSON")
    st.set_defaults(func=run_status)

    down = csub.add_parser("down", help="stop the cluster in DIR")
    down.add_argument("--dir", required=True, type=Path)
    down.set_defaults(func=run_down)


def run_up(args: argparse.Namespace) -> int:
    """Start the cluster and print where everything is."""
    if args.namenodes and not args.no_zookeeper:
        raise LaunchError(
            f"--namenodes {args.namenodes} needs --no-zookeeper: automatic failover with "
            "ZooKeeper is not part of qjm yet, so NameNodes run in manual HA "
            "(`qjm haadmin -failover nn1 nn2`)"
        )
    cluster = cluster_up(
        args.dir,
        journalnodes=args.journalnodes,
        namenodes=args.namenodes,
        zookeeper=False if args.no_zookeeper else bool(args.namenodes),
        base_port=args.base_port,
    )
    if args.json:
        print(json.dumps(cluster, indent=2))
        return 0
    for name, d in daemons_of(cluster).items():
        print(
            f"{name:6} pid {d['pid']:<7} rpc {d['rpc']:<16} http http://{d['http']}/  "
            f"log {d['log']}"
        )
    print(f"shared edits: {cluster['shared_edits']}")
    print(f"config:       {cluster['config']}")
    if "hadoop_conf" in cluster:
        print(f"hadoop conf:  {cluster['hadoop_conf']} (HADOOP_CONF_DIR for HDFS clients)")
        nns = [n for n, d in daemons_of(cluster).items() if d["kind"] == "namenode"]
        states = ", ".join(f"{n} {'active' if i == 0 else 'standby'}" for i, n in enumerate(nns))
        print(f"HA:           {states} (manual: `qjm haadmin --config {cluster['config']} ...`)")
    return 0


def cluster_status(directory: Path) -> dict[str, Any]:
    """Process, HA and journal state of every daemon of a cluster."""
    cluster = read_cluster(directory.resolve())
    daemons = {
        name: {**d, "running": pid_alive(d.get("pid"))} for name, d in daemons_of(cluster).items()
    }
    for d in daemons.values():
        if d.get("kind") == "namenode":
            d["ha_state"] = eventloop.run(_ha_state(d["rpc"])) if d["running"] else "-"
    journal = eventloop.run(journal_status(parse_qjournal_uri(cluster["shared_edits"])))
    return {"daemons": daemons, "journal": journal, "shared_edits": cluster["shared_edits"]}


async def _ha_state(address: str) -> str:
    try:
        async with HAAdminClient(address, timeout=5.0) as admin:
            return (await admin.get_service_state()).name.lower()
    except (QjmError, OSError) as e:
        return f"unreachable ({e})"


def print_status(st: dict[str, Any]) -> None:
    """Print the daemons, their HA state and the journal on each JournalNode."""
    rows = [
        [
            name,
            "running" if d["running"] else "stopped",
            d.get("ha_state", ""),
            str(d.get("pid") or "-"),
            d.get("rpc", "-"),
            d.get("http", "-"),
        ]
        for name, d in st["daemons"].items()
    ]
    print(render_table(["DAEMON", "STATE", "HA", "PID", "RPC", "HTTP"], rows))
    print()
    print(f"journal {st['shared_edits']}")
    print(render_table(STATUS_HEADERS, status_rows(st["journal"])))
    for line in problem_lines(st["journal"]):
        print(f"PROBLEM {line}")


def run_status(args: argparse.Namespace) -> int:
    """Print whether each daemon runs, and the journal on each JournalNode."""
    st = cluster_status(args.dir)
    if args.json:
        print(json.dumps(st, indent=2))
    else:
        print_status(st)
    return 0 if all(d["running"] for d in st["daemons"].values()) else 3


def run_down(args: argparse.Namespace) -> int:
    """Stop every daemon."""
    stopped = cluster_down(args.dir)
    print(f"stopped {', '.join(stopped) if stopped else 'nothing (no daemon was running)'}")
    return 0
