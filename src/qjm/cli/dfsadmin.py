"""`qjm dfsadmin -report | -refreshNodes`: HDFS's DFSAdmin report of capacity, block health
and DataNodes, and the exclude list read again by every NameNode.

It asks the active NameNode over HDFS's client protocol (getFsStats, setSafeMode GET,
getDatanodeReport) and prints what `hdfs dfsadmin -report` prints, so scripts written for
HDFS read it (design §B.17).
"""

from __future__ import annotations

import argparse
import getpass
import sys

from qjm import runtime
from qjm.cli.dfs import namenode_addresses
from qjm.errors import QjmError
from qjm.hdfs.proto import hdfs_pb2 as hdfs
from qjm.namenode.client import NameNodeClient
from qjm.namenode.fsck import java_date
from qjm.namenode.proto import ClientNamenodeProtocol_pb2 as cn

_PREFIXES = "KMGTPE"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `qjm dfsadmin`."""
    p = sub.add_parser(
        "dfsadmin",
        help="cluster reports and administration (as hdfs dfsadmin)",
        description="hdfs dfsadmin's commands against the active NameNode.",
    )
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--config", help="cluster TOML file, or Hadoop conf dir (hdfs-site.xml)")
    where.add_argument("--namenodes", help="comma-separated NameNode RPC addresses")
    p.add_argument("--user", help="the user to act as (default: this OS user)")
    p.add_argument("--timeout", type=float, default=30.0, help="per-call timeout in seconds")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "-report", action="store_true", help="capacity, block health and every DataNode"
    )
    what.add_argument(
        "-refreshNodes",
        action="store_true",
        help="every NameNode reads its exclude list again (decommission starts or stops)",
    )
    p.add_argument("-live", action="store_true", help="with -report: live DataNodes only")
    p.add_argument("-dead", action="store_true", help="with -report: dead DataNodes only")
    p.add_argument(
        "-decommissioning",
        action="store_true",
        help="with -report: decommissioning DataNodes only",
    )
    p.set_defaults(func=run_dfsadmin)


def byte_desc(n: int) -> str:
    """Bytes as Hadoop's StringUtils.byteDesc writes them: 0 B, 36 KB, 1.11 TB."""
    if n < 1024:
        return f"{n} B"
    shift = 10
    while shift < 60 and n >= 1 << (shift + 10):
        shift += 10
    symbol = _PREFIXES[shift // 10 - 1]
    if n & ((1 << shift) - 1) == 0:
        return f"{n >> shift} {symbol}B"
    text = f"{n / (1 << shift):.2f}"
    if text.startswith("1024") and shift < 60:
        shift += 10
        symbol = _PREFIXES[shift // 10 - 1]
        text = f"{n / (1 << shift):.2f}"
    return f"{text} {symbol}B"


def _amount(n: int) -> str:
    return f"{n} ({byte_desc(n)})"


def summary_text(stats: cn.GetFsStatsResponseProto, safe_mode: bool) -> str:
    """The report's first part: capacity and the block counts, as DFSAdmin prints them."""
    present = stats.used + stats.remaining
    used_pct = stats.used / present * 100 if present else 0.0
    lines = ["Safe mode is ON"] if safe_mode else []
    lines += [
        f"Configured Capacity: {_amount(stats.capacity)}",
        f"Present Capacity: {_amount(present)}",
        f"DFS Remaining: {_amount(stats.remaining)}",
        f"DFS Used: {_amount(stats.used)}",
        f"DFS Used%: {used_pct:.2f}%",
        "Replicated Blocks:",
        f"\tUnder replicated blocks: {stats.under_replicated}",
        f"\tBlocks with corrupt replicas: {stats.corrupt_blocks}",
        f"\tMissing blocks: {stats.missing_blocks}",
        f"\tMissing blocks (with replication factor 1): {stats.missing_repl_one_blocks}",
        f"\tPending deletion blocks: {stats.pending_deletion_blocks}",
        "Erasure Coded Block Groups: ",
        "\tLow redundancy block groups: 0",
        "\tBlock groups with corrupt internal blocks: 0",
        "\tMissing block groups: 0",
        "\tPending deletion blocks: 0",
        "",
        "-------------------------------------------------",
    ]
    return "\n".join(lines) + "\n"


def datanode_text(d: hdfs.DatanodeInfoProto) -> str:
    """One DataNode as DatanodeInfo.getDatanodeReport writes it."""
    i = d.id
    c, u, r = d.capacity, d.dfsUsed, d.remaining
    status = {
        hdfs.DatanodeInfoProto.DECOMMISSIONED: "Decommissioned",
        hdfs.DatanodeInfoProto.DECOMMISSION_INPROGRESS: "Decommission in progress",
        hdfs.DatanodeInfoProto.IN_MAINTENANCE: "In maintenance",
        hdfs.DatanodeInfoProto.ENTERING_MAINTENANCE: "Entering maintenance",
    }.get(d.adminState, "Normal")
    lines = [f"Name: {i.ipAddr}:{i.xferPort} ({i.hostName})", f"Hostname: {i.hostName}"]
    if d.location and d.location != "/default-rack":
        lines.append(f"Rack: {d.location}")
    lines += [
        f"Decommission Status : {status}",
        f"Configured Capacity: {_amount(c)}",
        f"DFS Used: {_amount(u)}",
        f"Non DFS Used: {_amount(d.nonDfsUsed)}",
        f"DFS Remaining: {_amount(r)}",
        f"DFS Used%: {(u * 100 / c if c > 0 else 100.0):.2f}%",
        f"DFS Remaining%: {(r * 100 / c if c > 0 else 0.0):.2f}%",
        "Configured Cache Capacity: 0 (0 B)",
        "Cache Used: 0 (0 B)",
        "Cache Remaining: 0 (0 B)",
        "Cache Used%: 100.00%",
        "Cache Remaining%: 0.00%",
        f"Xceivers: {d.xceiverCount}",
        f"Last contact: {java_date(d.lastUpdate / 1000)}",
        "Last Block Report: "
        + (java_date(d.lastBlockReportTime / 1000) if d.lastBlockReportTime else "Never"),
        f"Num of Blocks: {d.numBlocks}",
    ]
    return "\n".join(lines) + "\n"


def nodes_text(title: str, nodes: list[hdfs.DatanodeInfoProto]) -> str:
    """A section of DataNodes: 'Live datanodes (3):' and each node's report."""
    return f"{title} datanodes ({len(nodes)}):\n\n" + "".join(
        datanode_text(d) + "\n" for d in nodes
    )


def run_dfsadmin(args: argparse.Namespace) -> int:
    """Run the command: the report from the active NameNode, or refreshNodes on each."""
    addresses = namenode_addresses(args)
    user = args.user or getpass.getuser()
    if args.refreshNodes:
        return runtime.run(_refresh_nodes(addresses, user, args.timeout))
    chosen = [k for k in ("live", "dead", "decommissioning") if getattr(args, k)]
    sections = chosen or ["live", "dead", "decommissioning"]
    kinds: dict[str, tuple[cn.DatanodeReportTypeProto, str]] = {
        "live": (cn.LIVE, "Live"),
        "dead": (cn.DEAD, "Dead"),
        "decommissioning": (cn.DECOMMISSIONING, "Decommissioning"),
    }

    async def main() -> int:
        async with NameNodeClient(addresses, user=user, timeout=args.timeout) as client:
            stats = await client.call("getFsStats", cn.GetFsStatusRequestProto())
            safe = await client.call(
                "setSafeMode", cn.SetSafeModeRequestProto(action=cn.SAFEMODE_GET)
            )
            out = [summary_text(stats, bool(safe.result))]
            for name in sections:
                kind, title = kinds[name]
                r = await client.call(
                    "getDatanodeReport", cn.GetDatanodeReportRequestProto(type=kind)
                )
                if name != "decommissioning" or r.di or chosen:
                    out.append(nodes_text(title, list(r.di)))
        print("".join(out), end="")
        return 0

    return runtime.run(main())


async def _refresh_nodes(addresses: list[str], user: str, call_timeout_s: float) -> int:
    """refreshNodes on every NameNode, standbys too, as HDFS's DFSAdmin does in HA; 0 when
    each took it."""
    failed = 0
    for address in addresses:
        try:
            async with NameNodeClient(
                [address], user=user, timeout=call_timeout_s, max_rounds=1
            ) as c:
                await c.call("refreshNodes", cn.RefreshNodesRequestProto())
        except QjmError as e:
            failed += 1
            print(f"refreshNodes: failed for {address}: {e}", file=sys.stderr)
        else:
            print(f"Refresh nodes successful for {address}")
    return 1 if failed else 0
