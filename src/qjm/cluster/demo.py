"""`make demo`: a local cluster of 3 JournalNodes, formatted, with its status shown."""

from __future__ import annotations

import argparse
import sys
import urllib.request
from pathlib import Path

from qjm.cli import eventloop
from qjm.cli.journal import STATUS_HEADERS, status_rows
from qjm.cli.table import render_table
from qjm.client.admin import format_journal, journal_status, new_namespace_info
from qjm.client.uri import parse_qjournal_uri
from qjm.cluster.launcher import CLUSTER_JSON, cluster_down, cluster_up, daemons_of
from qjm.errors import QjmError


def say(text: str) -> None:
    """Print a step of the demo."""
    print(f"\n== {text}", flush=True)


def run(directory: Path) -> int:
    """Start, format and show the cluster; leave it running."""
    if (directory / CLUSTER_JSON).exists():
        say(f"stopping the previous demo cluster in {directory}")
        cluster_down(directory)
    say(f"starting 3 JournalNodes in {directory} (qjm cluster up)")
    cluster = cluster_up(directory, journalnodes=3)
    for name, d in daemons_of(cluster).items():
        print(f"  {name}: pid {d['pid']}, rpc {d['rpc']}, http http://{d['http']}/")
    uri = parse_qjournal_uri(cluster["shared_edits"])
    say(f"formatting journal {uri.jid} on all of them (qjm journal format)")
    ns = new_namespace_info()
    eventloop.run(format_journal(uri, ns, force=True))
    print(f"  namespaceID={ns.storage_info.namespace_id} clusterID={ns.storage_info.cluster_id}")
    say("journal status (qjm journal status)")
    print(render_table(STATUS_HEADERS, status_rows(eventloop.run(journal_status(uri)))))
    jn1 = daemons_of(cluster)["jn1"]
    say(f"a few metrics of jn1 (curl http://{jn1['http']}/metrics)")
    with urllib.request.urlopen(f"http://{jn1['http']}/metrics", timeout=5) as resp:
        for line in resp.read().decode().splitlines():
            if line.startswith("qjm_journal_last") or line.startswith("qjm_journal_committed"):
                print(f"  {line}")
    say("the cluster keeps running")
    print(f"  status page:  http://{jn1['http']}/")
    print(f"  status:       .venv/bin/qjm cluster status --dir {directory}")
    print(f"  stop it:      .venv/bin/qjm cluster down --dir {directory}")
    return 0


def main() -> int:
    """Entry point of `python -m qjm.cluster.demo`."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", type=Path, default=Path("demo"), help="cluster directory")
    args = parser.parse_args()
    try:
        return run(args.dir.resolve())
    except QjmError as e:
        print(f"demo: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
