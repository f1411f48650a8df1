"""`qjm fsck PATH`: HDFS's fsck (DFSck) against the active NameNode's /fsck report.

The flags are HDFS's: -files, -blocks, -locations, -racks, -replicaDetails,
-openforwrite, -list-corruptfileblocks. The exit code is DFSck's: 0 for a HEALTHY path
(or one that does not exist), 1 for a CORRUPT one, 255 when the check could not be made.
"""

from __future__ import annotations

import argparse
import getpass
import sys
import urllib.parse

import aiohttp

from qjm import runtime
from qjm.cli.common import add_config_arg
from qjm.config_site import load_cluster_config
from qjm.errors import ConfigError, QjmError
from qjm.ipc.login import user_login
from qjm.namenode import fsck as report
from qjm.namenode.client import NameNodeClient
from qjm.namenode.proto import ClientNamenodeProtocol_pb2 as cn
from qjm.security import tls
from qjm.security.http import client_middlewares

FLAGS = {  # command-line flag -> the servlet's query key (DFSck's)
    "files": "files",
    "blocks": "blocks",
    "locations": "locations",
    "racks": "racks",
    "replicaDetails": "replicadetails",
    "openforwrite": "openforwrite",
    "list_corruptfileblocks": "listcorruptfileblocks",
}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `qjm fsck`."""
    p = sub.add_parser(
        "fsck",
        help="check the files, blocks and replicas under a path (as hdfs fsck)",
        description="HDFS's fsck report from the active NameNode: files, blocks, under-, "
        "over- and mis-replicated, corrupt and missing blocks. Exit 0 when HEALTHY, "
        "1 when CORRUPT.",
    )
    add_config_arg(p, "with its NameNodes")
    p.add_argument("--user", help="the user to ask as (default: this OS user)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds for the whole report")
    p.add_argument("path", nargs="?", default="/")
    p.add_argument("-files", action="store_true", help="print each file checked")
    p.add_argument("-blocks", action="store_true", help="print each file's blocks")
    p.add_argument("-locations", action="store_true", help="print each block's DataNodes")
    p.add_argument("-racks", action="store_true", help="print each block's racks")
    p.add_argument("-replicaDetails", action="store_true", help="print each replica's state")
    p.add_argument("-openforwrite", action="store_true", help="check files open for write")
    p.add_argument(
        "-list-corruptfileblocks",
        dest="list_corruptfileblocks",
        action="store_true",
        help="list the files with blocks no live replica is left of",
    )
    p.set_defaults(func=run_fsck)


def fsck_query(path: str, user: str, flags: dict[str, bool]) -> str:
    """The servlet's query string for a check, as DFSck builds it."""
    parts = [("ugi", user)] + [(FLAGS[k], "1") for k, on in flags.items() if on]
    return urllib.parse.urlencode([*parts, ("path", path)])


def exit_code(last_line: str) -> int:
    """DFSck's exit code from the report's last line."""
    if last_line.endswith(report.HEALTHY) or last_line.endswith(report.NONEXISTENT):
        return 0
    if last_line.endswith(" CORRUPT files"):  # -list-corruptfileblocks
        return 0 if " has no " in last_line else 1
    if last_line.endswith(report.CORRUPT):
        return 1
    return 255


def run_fsck(args: argparse.Namespace) -> int:
    """Ask the active NameNode for the report, print it, and exit as DFSck does."""
    cfg = load_cluster_config(args.config)
    user_login(cfg.security)
    if not cfg.namenodes:
        raise ConfigError(f"{args.config} configures no [namenodes.*]")
    # each NameNode's URL, https under HTTPS_ONLY (design §S.13)
    http_of = {nn.rpc_address: tls.node_url(cfg.security, nn) for nn in cfg.namenodes.values()}
    user = args.user or getpass.getuser()
    flags = {k: bool(getattr(args, k)) for k in FLAGS}

    async def main() -> int:
        async with NameNodeClient(list(http_of), user=user, timeout=30.0) as client:
            await client.call("msync", cn.MsyncRequestProto())  # finds the active
            active = client.current
        url = f"{http_of[active]}/fsck?{fsck_query(args.path, user, flags)}"
        print(f"Connecting to namenode via {url}", file=sys.stderr)
        last = ""
        timeout = aiohttp.ClientTimeout(total=args.timeout)
        try:
            async with (
                aiohttp.ClientSession(
                    timeout=timeout, middlewares=client_middlewares(), connector=tls.connector()
                ) as s,
                s.get(url) as resp,
            ):
                if resp.status != 200:
                    raise QjmError(f"{url} answered HTTP {resp.status}: is it a NameNode?")
                async for line in resp.content:
                    text = line.decode(errors="replace")
                    sys.stdout.write(text)
                    if text.strip():
                        last = text.rstrip("\n")
        except (aiohttp.ClientError, TimeoutError) as e:
            raise QjmError(f"fsck: {url}: {e or type(e).__name__}") from e
        sys.stdout.write("\n")
        sys.stdout.flush()
        return exit_code(last)

    return runtime.run(main())
