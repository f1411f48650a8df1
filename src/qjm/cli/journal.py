"""`qjm journal ...`: operator commands on a quorum journal."""

from __future__ import annotations

import argparse
import json

from qjm import runtime
from qjm.cli.common import add_uri_args, resolve_uri
from qjm.cli.table import render_table
from qjm.client.admin import (
    MemberChangeReport,
    change_members,
    format_journal,
    journal_status,
    new_namespace_info,
)
from qjm.client.uri import parse_members
from qjm.protocol.quorum import majority_of
from qjm.protocol.status import describe_member_change, describe_segments, problem_lines


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `qjm journal` and its subcommands."""
    p = sub.add_parser("journal", help="inspect and administer a quorum journal")
    jsub = p.add_subparsers(dest="journal_cmd", required=True, metavar="COMMAND")

    st = jsub.add_parser("status", help="the journal's state on every JournalNode")
    add_uri_args(st)
    st.add_argument("--json", action="store_true", help="print JSON")
    st.set_defaults(func=run_status)

    fm = jsub.add_parser("format", help="format the journal on every JournalNode")
    add_uri_args(fm)
    fm.add_argument("--force", action="store_true", help="wipe existing journal data")
    fm.add_argument("--cluster-id", help="cluster id (default: a new CID-<uuid>)")
    fm.add_argument("--namespace-id", type=int, help="namespace id (default: random)")
    fm.set_defaults(func=run_format)

    cm = jsub.add_parser(
        "change-members",
        help="replace, add or remove one JournalNode of the journal",
        description="Change the journal's JournalNodes, one at a time (replace, add or remove "
        "one); every node that stays or joins must answer. Then put the new URI in every "
        "NameNode and restart them one at a time, the standby first.",
    )
    cm.add_argument(
        "--journal",
        "--uri",
        dest="uri",
        help="the journal with its members now: qjournal://host:port;host:port;.../journal-id",
    )
    cm.add_argument("--config", help="cluster TOML file (its JournalNodes and journal id)")
    cm.add_argument(
        "--to", required=True, help="the new members: 'host:port;host:port;...' (quoted)"
    )
    cm.set_defaults(func=run_change_members)

    from qjm.cli.journal_read import add_read_commands

    add_read_commands(jsub, add_uri_args)

    from qjm.cli.journal_write import add_parsers as add_writer_parsers

    add_writer_parsers(jsub, add_uri_args)


def status_rows(nodes: list[dict[str, object]]) -> list[list[str]]:
    """Table rows for journal status."""
    rows = []
    for n in nodes:
        if not n["reachable"]:
            rows.append([str(n["address"]), "no", "-", "-", "-", "-", "-", str(n.get("error"))])
            continue
        committed = n.get("committed_txid")
        rows.append(
            [
                str(n["address"]),
                "yes",
                "yes" if n.get("formatted") else "no",
                str(n.get("last_promised_epoch", "-")),
                str(n.get("last_writer_epoch", "-")),
                "-" if committed is None else str(committed),
                str(n.get("highest_written_txid", "-")),
                describe_segments(n.get("segments", [])),  # type: ignore[arg-type]
            ]
        )
    return rows


STATUS_HEADERS = [
    "NODE",
    "REACHABLE",
    "FORMATTED",
    "PROMISED",
    "WRITER",
    "COMMITTED",
    "LAST TXID",
    "SEGMENTS",
]


def run_status(args: argparse.Namespace) -> int:
    """Print the journal's state per node; exit 2 when a majority is unreachable."""
    uri = resolve_uri(args)
    nodes = runtime.run(journal_status(uri))
    if args.json:
        print(json.dumps({"jid": uri.jid, "uri": str(uri), "nodes": nodes}, indent=2))
    else:
        print(f"journal {uri.jid} on {len(nodes)} JournalNodes")
        print(render_table(STATUS_HEADERS, status_rows(nodes)))
        for n in nodes:
            change = describe_member_change(n)
            if change:
                print(f"CHANGE {n['address']}: {change}")
        for line in problem_lines(nodes):
            print(f"PROBLEM {line}")
    reachable = sum(1 for n in nodes if n["reachable"])
    return 0 if reachable >= majority_of(len(nodes)) else 2


def run_format(args: argparse.Namespace) -> int:
    """Format the journal on all nodes."""
    uri = resolve_uri(args)
    ns = new_namespace_info(args.cluster_id, args.namespace_id)
    nodes = runtime.run(format_journal(uri, ns, args.force))
    print(
        f"formatted journal {uri.jid} on {', '.join(nodes)} "
        f"(namespaceID={ns.storage_info.namespace_id}, clusterID={ns.storage_info.cluster_id})"
    )
    return 0


def run_change_members(args: argparse.Namespace) -> int:
    """Change the journal's members and say what the operator does next."""
    uri = resolve_uri(args)
    to = parse_members(args.to, f"--to {args.to!r}")
    report = runtime.run(change_members(uri, to))
    for line in change_report_lines(report):
        print(line)
    return 0


def change_report_lines(report: MemberChangeReport) -> list[str]:
    """What a member change did, node by node, and the operator's next steps."""
    change = report.change
    lines = [f"journal {report.uri.jid}: {change.describe()}"]
    for a in report.uri.addresses:
        role = "joins" if a in change.added else "stays"
        again = ", had it already" if a in report.already else ""
        votes = (
            "; votes in recovery once a writer starts a segment on it" if role == "joins" else ""
        )
        lines.append(f"  {a}  {role}: change recorded in epoch {report.epochs[a]}{again}{votes}")
    lines += [f"  {a}  removed (not contacted)" for a in change.removed]
    lines += [
        f"new shared edits URI: {report.uri}",
        "next:",
        "  1. put the new URI in every NameNode's shared edits setting "
        "(dfs.namenode.shared.edits.dir, or the [journalnodes.*] of the cluster TOML)",
        "  2. restart the standby NameNode",
        "  3. fail over to it: qjm haadmin -failover <active> <standby>",
        "  4. restart the other NameNode",
        "until a NameNode with the new URI starts a segment, writers of the old URI are "
        "refused and so is another member change",
    ]
    return lines
