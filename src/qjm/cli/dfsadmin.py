"""`qjm dfsadmin`: HDFS's DFSAdmin commands against the cluster's NameNodes.

-report and -refreshNodes (design §B.17); -safemode, -saveNamespace, -rollEdits, the quota
commands and -metasave (design §N.11). Each goes over HDFS's client protocol and prints
what `hdfs dfsadmin` prints, so scripts written for HDFS read it; a refusal prints
`<command>: <the NameNode's message>` on stderr and exits 255, as DFSAdmin's -1.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import sys

from qjm import runtime
from qjm.cli.dfs import namenode_addresses
from qjm.errors import QjmError
from qjm.hdfs.proto import hdfs_pb2 as hdfs
from qjm.ipc import RemoteError
from qjm.namenode.client import NameNodeClient
from qjm.namenode.fsck import java_date
from qjm.namenode.proto import ClientNamenodeProtocol_pb2 as cn

_PREFIXES = "KMGTPE"
SAFEMODE_ACTIONS = ("enter", "leave", "get", "wait", "forceExit")
_SAFEMODE_WIRE = {
    "enter": cn.SAFEMODE_ENTER,
    "leave": cn.SAFEMODE_LEAVE,
    "get": cn.SAFEMODE_GET,
    "wait": cn.SAFEMODE_GET,
    "forceExit": cn.SAFEMODE_FORCE_EXIT,
}
SAFEMODE_WAIT_POLL_S = 1.0  # how often -safemode wait asks again (HDFS: 5 s)
QUOTA_DONT_SET = (1 << 63) - 1  # HdfsConstants.QUOTA_DONT_SET (Long.MAX_VALUE)
QUOTA_RESET = -1  # HdfsConstants.QUOTA_RESET
_BINARY_PREFIXES = {"k": 10, "m": 20, "g": 30, "t": 40, "p": 50, "e": 60}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `qjm dfsadmin`."""
    p = sub.add_parser(
        "dfsadmin",
        help="cluster reports and administration (as hdfs dfsadmin)",
        description="hdfs dfsadmin's commands against the cluster's NameNodes.",
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
    what.add_argument(
        "-safemode",
        choices=SAFEMODE_ACTIONS,
        metavar="enter|leave|get|wait|forceExit",
        help="each NameNode's safe mode",
    )
    what.add_argument(
        "-saveNamespace",
        action="store_true",
        help="each NameNode saves an image of its namespace now (in safe mode)",
    )
    what.add_argument(
        "-rollEdits", action="store_true", help="finalize the open edit log segment, start anew"
    )
    what.add_argument(
        "-setQuota",
        nargs="+",
        metavar="ARG",
        help="<quota> <dirname>...: the most names under each directory",
    )
    what.add_argument(
        "-clrQuota", nargs="+", metavar="DIR", help="<dirname>...: remove the name quota"
    )
    what.add_argument(
        "-setSpaceQuota",
        nargs="+",
        metavar="ARG",
        help="<quota> <dirname>...: the most bytes (replicas counted) under each directory; "
        "the quota may end in k, m, g, t, p, e",
    )
    what.add_argument(
        "-clrSpaceQuota", nargs="+", metavar="DIR", help="<dirname>...: remove the space quota"
    )
    what.add_argument(
        "-metasave",
        metavar="FILENAME",
        help="each NameNode writes its block and DataNode state to FILENAME in its log directory",
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
    if args.metasave is not None:
        return runtime.run(_metasave(addresses, user, args.timeout, args.metasave))
    for flag in ("setQuota", "clrQuota", "setSpaceQuota", "clrSpaceQuota"):
        if getattr(args, flag) is not None:
            return runtime.run(_quota(addresses, user, args.timeout, flag, getattr(args, flag)))
    if args.safemode or args.saveNamespace:
        name = "safemode" if args.safemode else "saveNamespace"
        return runtime.run(_on_each(addresses, user, args.timeout, name, args))
    if args.rollEdits:
        return runtime.run(_roll_edits(addresses, user, args.timeout))
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


def safemode_text(on: bool) -> str:
    """DFSAdmin's answer to -safemode: 'Safe mode is ON' or 'Safe mode is OFF'."""
    return f"Safe mode is {'ON' if on else 'OFF'}"


def roll_edits_text(txid: int) -> str:
    """DFSAdmin's answer to -rollEdits."""
    return f"Successfully rolled edit logs.\nNew segment starts at txid {txid}"


def metasave_text(filename: str, address: str) -> str:
    """DFSAdmin's line for one NameNode's -metasave."""
    return f"Created metasave file {filename} in the log directory of namenode {address}"


def parse_quota(text: str, *, space: bool) -> int:
    """A quota argument: a positive count, or for a space quota bytes with an optional binary
    prefix (10g, 512m) as Hadoop's TraditionalBinaryPrefix.string2long; ValueError naming
    the value as DFSAdmin does otherwise."""
    body, shift = text.strip(), 0
    if space and body[-1:].lower() in _BINARY_PREFIXES:
        body, shift = body[:-1], _BINARY_PREFIXES[body[-1].lower()]
    try:
        value = int(body, 10) << shift
    except ValueError:
        raise ValueError(f'"{text}" is not a valid value for a quota.') from None
    if value <= 0 or value >= QUOTA_DONT_SET:
        raise ValueError(f'"{text}" is not a valid value for a quota.')
    return value


def quota_requests(flag: str, argv: list[str]) -> list[cn.SetQuotaRequestProto]:
    """The setQuota calls of one quota command (-setQuota N dirs..., -clrQuota dirs..., ...);
    ValueError naming what is missing or wrong."""
    sets = flag in ("setQuota", "setSpaceQuota")
    space = flag in ("setSpaceQuota", "clrSpaceQuota")
    if sets and len(argv) < 2:
        raise ValueError(f"-{flag} needs <quota> <dirname>...<dirname>")
    value = parse_quota(argv[0], space=space) if sets else QUOTA_RESET
    paths = argv[1:] if sets else argv
    ns_quota, ds_quota = (QUOTA_DONT_SET, value) if space else (value, QUOTA_DONT_SET)
    return [
        cn.SetQuotaRequestProto(
            path=p,
            namespaceQuota=ns_quota & ((1 << 64) - 1),
            storagespaceQuota=ds_quota & ((1 << 64) - 1),
        )
        for p in paths
    ]


def _first_line(e: QjmError) -> str:
    """What DFSAdmin shows of a refusal: the remote message's first line."""
    message = e.message if isinstance(e, RemoteError) else str(e)
    return message.split("\n", 1)[0]


async def _quota(
    addresses: list[str], user: str, call_timeout_s: float, flag: str, argv: list[str]
) -> int:
    """One quota command: setQuota for each directory; 255 when any was refused."""
    try:
        requests = quota_requests(flag, argv)
    except ValueError as e:
        print(f"{flag}: {e}", file=sys.stderr)
        return 255
    failed = 0
    async with NameNodeClient(addresses, user=user, timeout=call_timeout_s) as client:
        for req in requests:
            try:
                await client.call("setQuota", req)
            except RemoteError as e:
                failed += 1
                print(f"{flag}: {_first_line(e)}", file=sys.stderr)
    return 255 if failed else 0


async def _safemode(client: NameNodeClient, args: argparse.Namespace) -> bool:
    """One NameNode's safe mode after the action (unchecked, as DFSAdmin's in HA)."""
    action = args.safemode
    req = cn.SetSafeModeRequestProto(action=_SAFEMODE_WIRE[action], checked=False)
    on = bool((await client.call("setSafeMode", req)).result)
    while action == "wait" and on:  # as DFSAdmin's waitExitSafeMode: until it is off
        await asyncio.sleep(SAFEMODE_WAIT_POLL_S)
        on = bool((await client.call("setSafeMode", req)).result)
    return on


def safemode_line(on: bool, address: str | None) -> str:
    """DFSAdmin's line: 'Safe mode is ON', or in HA 'Safe mode is ON in <NameNode>'."""
    return safemode_text(on) + (f" in {address}" if address else "")


def save_namespace_line(saved: bool, address: str | None) -> str:
    """DFSAdmin's line for one NameNode's saveNamespace (in HA it names the NameNode)."""
    text = "Save namespace successful" if saved else "No extra checkpoint has been made"
    return text + (f" for {address}" if address else "")


async def _save_namespace(client: NameNodeClient, args: argparse.Namespace) -> bool:
    r = await client.call("saveNamespace", cn.SaveNamespaceRequestProto())
    return bool(r.saved)


async def _on_each(
    addresses: list[str],
    user: str,
    call_timeout_s: float,
    name: str,
    args: argparse.Namespace,
) -> int:
    """-safemode or -saveNamespace on every NameNode in turn, as DFSAdmin in HA (one line
    each, naming it); with one NameNode HDFS's plain line. 255 when one refused."""
    command = _safemode if name == "safemode" else _save_namespace
    line = safemode_line if name == "safemode" else save_namespace_line
    several = len(addresses) > 1
    failed = 0
    for address in addresses:
        try:
            async with NameNodeClient(
                [address], user=user, timeout=call_timeout_s, max_rounds=1
            ) as c:
                result = await command(c, args)
        except QjmError as e:
            failed += 1
            if name == "saveNamespace" and several:
                print(f"Save namespace failed for {address}")
            print(f"{name}: {_first_line(e)}", file=sys.stderr)
        else:
            print(line(result, address if several else None))
    return 255 if failed else 0


async def _roll_edits(addresses: list[str], user: str, call_timeout_s: float) -> int:
    """rollEdits on the active NameNode; its text, or `rollEdits: <refusal>` and 255."""
    async with NameNodeClient(addresses, user=user, timeout=call_timeout_s) as client:
        try:
            r = await client.call("rollEdits", cn.RollEditsRequestProto())
        except RemoteError as e:
            print(f"rollEdits: {_first_line(e)}", file=sys.stderr)
            return 255
    print(roll_edits_text(int(r.newSegmentTxId)))
    return 0


async def _metasave(addresses: list[str], user: str, call_timeout_s: float, filename: str) -> int:
    """metaSave on every NameNode, as DFSAdmin in HA; 255 when one refused."""
    failed = 0
    for address in addresses:
        try:
            async with NameNodeClient(
                [address], user=user, timeout=call_timeout_s, max_rounds=1
            ) as c:
                await c.call("metaSave", cn.MetaSaveRequestProto(filename=filename))
        except QjmError as e:
            failed += 1
            print(f"metasave: {address}: {_first_line(e)}", file=sys.stderr)
        else:
            print(metasave_text(filename, address))
    return 255 if failed else 0
