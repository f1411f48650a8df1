"""`qjm cluster up|status|down`: a local cluster on loopback."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from qjm import runtime
from qjm.cli.journal import STATUS_HEADERS, status_rows
from qjm.cli.table import render_table
from qjm.client.admin import journal_status
from qjm.client.uri import parse_qjournal_uri
from qjm.cluster.launcher import (
    CLUSTER_JSON,
    MAX_NAMENODES,
    cluster_down,
    cluster_up,
    daemon_url,
    daemons_of,
    datanode_liveness,
    datanode_status,
    namenode_states,
    read_cluster,
    start_daemons,
)
from qjm.cluster.process import LaunchError, pid_alive
from qjm.cluster.zookeeper import server_mode
from qjm.config import load_config
from qjm.ipc.login import logged_in
from qjm.protocol.status import problem_lines
from qjm.security import tls


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `qjm cluster` and its subcommands."""
    p = sub.add_parser("cluster", help="run a local cluster on loopback")
    csub = p.add_subparsers(dest="cluster_cmd", required=True, metavar="COMMAND")

    up = csub.add_parser(
        "up",
        help="start a local cluster in DIR",
        description=(
            "Start a local cluster on loopback. By default: ZooKeeper, 3 JournalNodes, 2 "
            "NameNodes and their failover controllers (zkfc1, zkfc2) with automatic failover; "
            "--no-zookeeper runs the NameNodes in manual HA (nn1 made active, fail over with "
            "`qjm haadmin -failover`); --namenodes 0 starts the JournalNodes only."
        ),
    )
    up.add_argument("--dir", required=True, type=Path, help="cluster directory")
    up.add_argument("--journalnodes", type=int, default=3, help="number of JournalNodes (3)")
    up.add_argument(
        "--namenodes",
        type=int,
        default=2,
        help="number of NameNodes (2: one active, one standby; 0: JournalNodes only)",
    )
    up.add_argument(
        "--datanodes",
        type=int,
        default=None,
        help="number of DataNodes, each reporting to every NameNode (3 with NameNodes; a "
        "stopped cluster keeps its count; 0: metadata only)",
    )
    up.add_argument(
        "--no-zookeeper",
        action="store_true",
        help="no ZooKeeper and no ZKFCs: manual HA, fail over with `qjm haadmin -failover`",
    )
    up.add_argument(
        "--zookeeper-members",
        type=int,
        choices=(1, 3),
        default=1,
        help="ZooKeeper servers: 1 (standalone, the default) or a 3-server ensemble",
    )
    up.add_argument(
        "--base-port",
        type=int,
        help="allocate ports upward from this one: JournalNodes, NameNodes (2 each), ZKFCs, "
        "ZooKeeper, then DataNodes (3 each)",
    )
    mode = up.add_mutually_exclusive_group()
    mode.add_argument(
        "--kerberos",
        action="store_true",
        help="a secure cluster (the default for a new DIR): start a KDC in DIR/kdc, a "
        "principal and keytab per daemon, Kerberos on every RPC and HTTP port, RPC encrypted",
    )
    mode.add_argument(
        "--insecure",
        action="store_true",
        help="an open cluster as HDFS's default: no KDC, every caller is the user it claims "
        "(anyone on this machine can act as the superuser)",
    )
    up.add_argument(
        "--https",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="serve every daemon's HTTP port over TLS only (dfs.http.policy HTTPS_ONLY) with a "
        "certificate of the cluster's own CA in DIR/tls; the default with Kerberos for a new "
        "DIR, --no-https plain HTTP",
    )
    up.add_argument("--json", action="store_true", help="print cluster.json")
    up.set_defaults(func=run_up)

    st = csub.add_parser("status", help="show the daemons of the cluster in DIR")
    st.add_argument("--dir", required=True, type=Path)
    st.add_argument("--json", action="store_true", help="print JSON")
    st.set_defaults(func=run_status)

    start = csub.add_parser(
        "start",
        help="start stopped daemons of the cluster in DIR again (a NameNode rejoins as standby)",
    )
    start.add_argument("--dir", required=True, type=Path)
    start.add_argument(
        "names", nargs="+", metavar="NAME", help="daemon names: jn1, nn1, zkfc1, ..."
    )
    start.set_defaults(func=run_start)

    down = csub.add_parser("down", help="stop the cluster in DIR")
    down.add_argument("--dir", required=True, type=Path)
    down.set_defaults(func=run_down)


def run_up(args: argparse.Namespace) -> int:
    """Start the cluster and print where everything is."""
    automatic = bool(args.namenodes) and not args.no_zookeeper
    if args.namenodes and automatic and args.namenodes != MAX_NAMENODES:
        raise LaunchError(
            f"--namenodes {args.namenodes}: automatic failover runs {MAX_NAMENODES} NameNodes "
            "(one active, one standby); add --no-zookeeper for manual HA, or --namenodes 0 "
            "for JournalNodes only"
        )
    if args.zookeeper_members != 1 and not automatic:
        raise LaunchError(
            f"--zookeeper-members {args.zookeeper_members}: ZooKeeper runs only with automatic "
            "failover (2 NameNodes, without --no-zookeeper)"
        )
    cluster = cluster_up(
        args.dir,
        journalnodes=args.journalnodes,
        namenodes=args.namenodes,
        zookeeper=automatic,
        base_port=args.base_port,
        zookeeper_members=args.zookeeper_members,
        datanodes=args.datanodes,
        kerberos=up_kerberos(args.dir, kerberos=args.kerberos, insecure=args.insecure),
        https=up_https(args.dir, https=args.https, insecure=args.insecure),
    )
    if args.json:
        print(json.dumps(cluster, indent=2))
        return 0
    daemons = daemons_of(cluster)
    nns = {n: d["rpc"] for n, d in daemons.items() if d.get("kind") == "namenode"}
    states = admin_states(cluster, nns)
    rows = [
        [
            name,
            states.get(name, "") or _role(d),
            str(d["pid"]),
            d["rpc"],
            _url(d),
            d["log"],
        ]
        for name, d in daemons.items()
    ]
    print(render_table(["DAEMON", "ROLE", "PID", "RPC", "HTTP", "LOG"], rows))
    print()
    print(f"shared edits: {cluster['shared_edits']}")
    print(f"config:       {cluster['config']}")
    edited = cluster.get("config_edited")
    if edited:  # the operator's edits were kept (design §A.6)
        shown = ", ".join(edited[:8]) + (f" and {len(edited) - 8} more" if len(edited) > 8 else "")
        print(f"              started from it as edited; the launcher's would differ in {shown}")
    if cluster.get("zookeeper"):
        print(f"zookeeper:    {cluster['zookeeper']}")
    if "hadoop_conf" in cluster:
        print(f"hadoop conf:  {cluster['hadoop_conf']} (HADOOP_CONF_DIR for HDFS clients)")
        active = [n for n, s in states.items() if s == "active"]
        shown = ", ".join(f"{n} {s}" for n, s in states.items())
        how = (
            "automatic failover: the ZKFCs elect the active NameNode in ZooKeeper"
            if cluster.get("automatic_failover")
            else f"manual: `qjm haadmin --config {cluster['config']} -failover ...`"
        )
        print(f"HA:           {shown} ({how})")
        dns = [n for n, d in daemons.items() if d.get("kind") == "datanode"]
        print(
            f"data:         {len(dns)} DataNodes ({', '.join(dns)})"
            if dns
            else "data:         metadata only: no DataNode, so files keep names and no bytes "
            "(`--datanodes 3` to store them)"
        )
        for name in active:
            print(f"active:       {name} {daemon_url(daemons[name])}/")
    if kdc := cluster.get("kdc"):
        print(f"kerberos:     realm {kdc['realm']}, KDC {kdc['rpc']}; you are logged in as")
        print(f"              {kdc.get('user_principal', 'your user')}; to use the cluster:")
        print(f"              export KRB5_CONFIG={kdc['krb5_conf']}")
        print(f"              export KRB5CCNAME=FILE:{kdc['user_ccache']}")
        if kdc.get("user_keytab"):
            print(f"              kinit -kt {kdc['user_keytab']} {kdc['user_principal']}")
            print("              (again when the ticket expires, after 24 hours)")
        print(f"              Java clients: -Djava.security.krb5.conf={kdc['krb5_conf']}")
        print("              (an open cluster: `qjm cluster up --insecure` in another --dir)")
    if tls_info := cluster.get("tls"):
        print(f"https:        {tls_info['http_policy']}; the cluster's CA is {tls_info['ca']}")
        print(f"              e.g. curl --cacert {tls_info['ca']} <URL above>/status")
    return 0


def up_kerberos(directory: Path, *, kerberos: bool, insecure: bool) -> bool | None:
    """The launcher's kerberos argument for cluster up's flags: secure by default (design
    §S.4), a stopped cluster as it was made, --insecure an open one."""
    if kerberos:
        return True
    if insecure:
        return False
    return None if (directory / CLUSTER_JSON).exists() else True


def up_https(directory: Path, *, https: bool | None, insecure: bool) -> bool | None:
    """The launcher's https argument for cluster up's flags: HTTPS_ONLY by default with
    Kerberos (design §S.13), a stopped cluster as it was made, --insecure plain HTTP."""
    if https is not None:
        return https
    if insecure:
        return False
    return None if (directory / CLUSTER_JSON).exists() else True


def _url(d: dict[str, Any]) -> str:
    return f"{daemon_url(d)}/" if d.get("http") else "-"


def _role(d: dict[str, Any]) -> str:
    """What the ROLE column says of a daemon without an HA state or ZooKeeper mode."""
    kind = d.get("kind")
    if kind == "zkfc":
        return f"zkfc of {d.get('namenode', '?')}"
    if kind == "zookeeper":
        return "zookeeper"
    return ""


def _zk_mode(d: dict[str, Any]) -> str:
    return f"zookeeper {d['mode']}" if d.get("mode") else ""


def cluster_status(directory: Path) -> dict[str, Any]:
    """Process, HA and journal state of every daemon of a cluster."""
    cluster = read_cluster(directory.resolve())
    kdc = cluster.get("kdc")
    if cluster.get("tls"):  # its DataNodes' /status over HTTPS, trusting its CA (§S.13)
        tls.configure(load_config(cluster["config"]).security)
    if not kdc:
        return _cluster_status(cluster)
    with logged_in(load_config(cluster["config"]).security, kdc["admin_ccache"]):
        return _cluster_status(cluster)


def _cluster_status(cluster: dict[str, Any]) -> dict[str, Any]:
    daemons = {
        name: {**d, "running": pid_alive(d.get("pid"))} for name, d in daemons_of(cluster).items()
    }
    nns = {n: d["rpc"] for n, d in daemons.items() if d.get("kind") == "namenode" and d["running"]}
    states = admin_states(cluster, nns)
    for name, d in daemons.items():
        kind = d.get("kind")
        if kind == "namenode":
            d["ha_state"] = states.get(name, "down") if d["running"] else "down"
        elif kind == "zookeeper":
            d["mode"] = (server_mode(d["rpc"]) or "not serving") if d["running"] else "down"
    active = next((nns[n] for n, st in states.items() if st == "active"), None)
    live = runtime.run(datanode_liveness(active)) if active else {}
    for d in daemons.values():
        if d.get("kind") != "datanode":
            continue
        shown = datanode_status(daemon_url(d)) if d["running"] else {}
        volumes = shown.get("volumes") or []
        d["namenode_view"] = live.get(d.get("transfer", ""), "unknown" if active else "no active")
        d["capacity"] = sum(v.get("capacity") or 0 for v in volumes)
        d["used"] = sum(v.get("used") or 0 for v in volumes)
        d["remaining"] = sum(v.get("remaining") or 0 for v in volumes)
        d["blocks"] = (shown.get("replicas") or {}).get("FINALIZED", 0)
    journal = runtime.run(journal_status(parse_qjournal_uri(cluster["shared_edits"])))
    return {
        "daemons": daemons,
        "journal": journal,
        "shared_edits": cluster["shared_edits"],
        "zookeeper": cluster.get("zookeeper", ""),
        "automatic_failover": bool(cluster.get("automatic_failover", False)),
    }


def print_status(st: dict[str, Any]) -> None:
    """Print the daemons, their HA state and the journal on each JournalNode."""
    rows = [
        [
            name,
            "running" if d["running"] else "stopped",
            d.get("ha_state") or _zk_mode(d) or _role(d),
            str(d.get("pid") or "-"),
            d.get("rpc", "-"),
            _url(d),
        ]
        for name, d in st["daemons"].items()
    ]
    print(render_table(["DAEMON", "STATE", "ROLE", "PID", "RPC", "HTTP"], rows))
    dns = {n: d for n, d in st["daemons"].items() if d.get("kind") == "datanode"}
    if dns:
        print()
        print("datanodes (as the active NameNode sees them)")
        print(
            render_table(
                ["DATANODE", "NAMENODE VIEW", "CAPACITY", "USED", "REMAINING", "BLOCKS"],
                [
                    [
                        n,
                        d["namenode_view"],
                        _size(d["capacity"]),
                        _size(d["used"]),
                        _size(d["remaining"]),
                        str(d["blocks"]),
                    ]
                    for n, d in dns.items()
                ],
            )
        )
    if st.get("zookeeper"):
        print()
        print(f"zookeeper {st['zookeeper']} (automatic failover)")
    print()
    print(f"journal {st['shared_edits']}")
    print(render_table(STATUS_HEADERS, status_rows(st["journal"])))
    for line in problem_lines(st["journal"]):
        print(f"PROBLEM {line}")


def _size(n: int) -> str:
    """Bytes as HDFS's reports show them: 1.5 GB, 800 MB, 12 KB."""
    for unit, scale in (("TB", 1 << 40), ("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def run_status(args: argparse.Namespace) -> int:
    """Print whether each daemon runs, and the journal on each JournalNode."""
    st = cluster_status(args.dir)
    if args.json:
        print(json.dumps(st, indent=2))
    else:
        print_status(st)
    return 0 if all(d["running"] for d in st["daemons"].values()) else 3


def run_start(args: argparse.Namespace) -> int:
    """Start the named stopped daemons again."""
    pids = start_daemons(args.dir, list(dict.fromkeys(args.names)))
    print(", ".join(f"{name} started (pid {pid})" for name, pid in pids.items()))
    return 0


def run_down(args: argparse.Namespace) -> int:
    """Stop every daemon."""
    stopped = cluster_down(args.dir)
    print(f"stopped {', '.join(stopped) if stopped else 'nothing (no daemon was running)'}")
    return 0


def admin_states(cluster: dict[str, Any], nns: dict[str, str]) -> dict[str, str]:
    """The NameNodes' HA states, asked with the cluster's admin ticket where it has a KDC."""
    if not nns:
        return {}
    kdc = cluster.get("kdc")
    if not kdc:
        return namenode_states(nns)
    with logged_in(load_config(cluster["config"]).security, kdc["admin_ccache"]):
        return namenode_states(nns)
