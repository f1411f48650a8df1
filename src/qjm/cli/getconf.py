"""`qjm getconf`: HDFS's GetConf, the cluster's configuration as HDFS keys (design §N.11).

The keys come from the cluster's TOML mapped as every daemon's /conf maps it, and, when
HADOOP_CONF_DIR is set, from its core-site.xml and hdfs-site.xml (read last: they win). Every
answer is read from those keys as HDFS's DFSUtil reads them, so the output is `hdfs
getconf`'s: host names space-separated, one RPC address a line, a missing key on stderr as
"Configuration KEY is missing." with exit code 255 (GetConf's -1).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from qjm.errors import ConfigError

SECONDARY_DEFAULT = "0.0.0.0:9868"  # dfs.namenode.secondary.http-address's default
BACKUP_DEFAULT = "0.0.0.0:50100"  # dfs.namenode.backup.address's default
FAILED = 255


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `qjm getconf`."""
    p = sub.add_parser(
        "getconf",
        help="configuration keys and the cluster's nodes (as hdfs getconf)",
        description="hdfs getconf: gets configuration information from the configuration.",
    )
    p.add_argument(
        "--config",
        help="cluster TOML file (default: only HADOOP_CONF_DIR's core-site.xml and hdfs-site.xml)",
    )
    what = p.add_mutually_exclusive_group(required=True)
    for flag, text in (
        ("-namenodes", "gets list of namenodes in the cluster."),
        ("-secondaryNameNodes", "gets list of secondary namenodes in the cluster."),
        ("-backupNodes", "gets list of backup nodes in the cluster."),
        ("-journalNodes", "gets list of journal nodes in the cluster."),
        (
            "-includeFile",
            "gets the include file path that defines the datanodes that can join the cluster.",
        ),
        (
            "-excludeFile",
            "gets the exclude file path that defines the datanodes that need to decommissioned.",
        ),
        ("-nnRpcAddresses", "gets the namenode rpc addresses"),
    ):
        what.add_argument(flag, action="store_true", help=text)
    what.add_argument("-confKey", metavar="KEY", help="gets a specific key from the configuration")
    p.set_defaults(func=run_getconf)


def load_properties(config: str | None, hadoop_conf_dir: str | None) -> dict[str, str]:
    """The configuration as HDFS keys: the TOML's mapping, then HADOOP_CONF_DIR's files."""
    props: dict[str, str] = {}
    if config:
        from qjm.config_site import load_cluster_config
        from qjm.hdfs.site_conf import conf_properties

        props.update((k, v) for k, v, _ in conf_properties(load_cluster_config(config)))
    if hadoop_conf_dir:
        from qjm.cluster.hadoop_conf import read_site

        for name in ("core-site.xml", "hdfs-site.xml"):
            path = Path(hadoop_conf_dir) / name
            if path.is_file():
                try:
                    props.update(read_site(path))
                except Exception as e:  # a broken XML file: name it
                    raise ConfigError(f"cannot read {path}: {e}") from None
    if not config and not hadoop_conf_dir:
        raise ConfigError("give --config cluster.toml or set HADOOP_CONF_DIR")
    return props


def _ids(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def _host(address: str) -> str:
    """The host of host:port (brackets of an IPv6 literal removed)."""
    host = address.rsplit(":", 1)[0] if ":" in address else address
    return host.strip("[]")


def namenode_addresses(props: dict[str, str], key: str, default: str | None) -> list[str]:
    """DFSUtil.getAddresses: key.<ns>.<nn> of each NameNode of each nameservice (default
    when unset; none when there is no default), or key itself without nameservices."""
    out: list[str] = []
    nameservices = _ids(props.get("dfs.nameservices"))
    if not nameservices:
        value = props.get(key, default)
        return [value] if value else []
    for ns in nameservices:
        nns = _ids(props.get(f"dfs.ha.namenodes.{ns}"))
        suffixes = [f"{ns}.{nn}" for nn in nns] if nns else [ns]
        for suffix in suffixes:
            value = props.get(f"{key}.{suffix}", props.get(key, default))
            if value:
                out.append(value)
    return out


def journal_hosts(props: dict[str, str]) -> list[str]:
    """The JournalNodes' hosts of dfs.namenode.shared.edits.dir's qjournal:// URIs, each
    once, as DFSUtil.getJournalNodeAddresses."""
    nameservices = _ids(props.get("dfs.nameservices"))
    keys = ["dfs.namenode.shared.edits.dir"]
    keys += [f"dfs.namenode.shared.edits.dir.{ns}" for ns in nameservices]
    hosts: list[str] = []
    for key in keys:
        uri = props.get(key, "")
        if not uri.startswith("qjournal://"):
            continue
        authority = uri[len("qjournal://") :].split("/", 1)[0]
        for address in authority.split(";"):
            host = _host(address.strip())
            if host and host not in hosts:
                hosts.append(host)
    return hosts


def getconf(props: dict[str, str], args: argparse.Namespace) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of one getconf command over props."""
    if args.confKey is not None or args.includeFile or args.excludeFile:
        key = args.confKey or ("dfs.hosts" if args.includeFile else "dfs.hosts.exclude")
        value = props.get(key)
        if value is None:
            return FAILED, "", f"Configuration {key} is missing.\n"
        return 0, value.strip() + "\n", ""
    if args.journalNodes:
        hosts = journal_hosts(props)
        if not hosts:
            return FAILED, "", "Did not get journal nodes, did you configure a qjournal URI?\n"
        return 0, " ".join(hosts) + "\n", ""
    if args.nnRpcAddresses or args.namenodes:
        # the service RPC address, else the RPC address (getNNServiceRpcAddressesForCluster)
        addresses = namenode_addresses(props, "dfs.namenode.servicerpc-address", None)
        addresses = addresses or namenode_addresses(props, "dfs.namenode.rpc-address", None)
        if not addresses:
            return FAILED, "", "Did not get namenode service rpc addresses.\n"
        if args.namenodes:
            return 0, " ".join(_host(a) for a in addresses) + "\n", ""
        return 0, "".join(a + "\n" for a in addresses), ""
    if args.secondaryNameNodes:
        key, default, what = "dfs.namenode.secondary.http-address", SECONDARY_DEFAULT, "snn"
    else:
        key, default, what = "dfs.namenode.backup.address", BACKUP_DEFAULT, "backup nodes"
    addresses = namenode_addresses(props, key, default)
    if not addresses:
        return FAILED, "", f"Incorrect configuration: {what} not configured ({key})\n"
    return 0, " ".join(_host(a) for a in addresses) + "\n", ""


def run_getconf(args: argparse.Namespace) -> int:
    """Print the answer; GetConf's exit code."""
    props = load_properties(args.config, os.environ.get("HADOOP_CONF_DIR"))
    code, out, err = getconf(props, args)
    sys.stdout.write(out)
    sys.stderr.write(err)
    return code
