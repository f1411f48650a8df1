"""What several `qjm` commands share: where the journal is (--uri or --config)."""

from __future__ import annotations

import argparse
import os

from qjm.client.uri import QJournalUri, parse_qjournal_uri
from qjm.config_site import load_cluster_config
from qjm.errors import ConfigError
from qjm.ipc.login import user_login

CONFIG_HELP = "cluster TOML file, or Hadoop conf dir holding hdfs-site.xml"


def add_config_arg(p: argparse.ArgumentParser, what: str = "") -> None:
    """A required --config (a cluster TOML file or a Hadoop conf dir), HADOOP_CONF_DIR
    where it is left out (design §A.6)."""
    env = os.environ.get("HADOOP_CONF_DIR") or None
    p.add_argument(
        "--config",
        required=env is None,
        default=env,
        help=f"{CONFIG_HELP}{' ' + what if what else ''} (default: $HADOOP_CONF_DIR)",
    )


def add_uri_args(p: argparse.ArgumentParser) -> None:
    """--uri or --config: where the journal is."""
    p.add_argument("--uri", help="qjournal://host:port;host:port;.../journal-id")
    p.add_argument("--config", help=f"{CONFIG_HELP} (its JournalNodes and journal id)")


def resolve_uri(args: argparse.Namespace) -> QJournalUri:
    """The journal URI from --uri or --config; a Kerberos --config logs the command in."""
    # A given --config is always read, so a missing or bad file is an error, never ignored;
    # --uri then only overrides where the journal is.
    cfg = load_cluster_config(args.config) if getattr(args, "config", None) else None
    if cfg is not None:
        # the journal takes the NameNodes' principal only (design §S.3): an operator's
        # ticket cache holds its ticket (kinit -kt with the NameNode's keytab)
        user_login(cfg.security)
    if args.uri:
        return parse_qjournal_uri(args.uri)
    if cfg is not None:
        if not cfg.journalnodes:
            raise ConfigError(f"{args.config} configures no [journalnodes.*]")
        return parse_qjournal_uri(cfg.shared_edits_uri())
    raise ConfigError("give --uri qjournal://... or --config cluster.toml")
