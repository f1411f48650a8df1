"""What several `qjm` commands share: where the journal is (--uri or --config)."""

from __future__ import annotations

import argparse

from qjm.client.uri import QJournalUri, parse_qjournal_uri
from qjm.config import load_config
from qjm.errors import ConfigError
from qjm.ipc.login import user_login


def add_uri_args(p: argparse.ArgumentParser) -> None:
    """--uri or --config: where the journal is."""
    p.add_argument("--uri", help="qjournal://host:port;host:port;.../journal-id")
    p.add_argument("--config", help="cluster TOML file (its JournalNodes and journal id)")


def resolve_uri(args: argparse.Namespace) -> QJournalUri:
    """The journal URI from --uri or --config; a Kerberos --config logs the command in."""
    # A given --config is always read, so a missing or bad file is an error, never ignored;
    # --uri then only overrides where the journal is.
    cfg = load_config(args.config) if getattr(args, "config", None) else None
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
