"""Operator actions on all JournalNodes of a journal: status and format."""

from __future__ import annotations

import asyncio
import random
import uuid
from typing import Any

from qjm.client.journalnode_client import JournalNodeClient
from qjm.client.quorum_call import call_all
from qjm.client.quorum_journal_manager import FormatRefused, QuorumJournalManager
from qjm.client.uri import QJournalUri, check_distinct_nodes
from qjm.errors import QjmError
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.namespace import namespace_info
from qjm.protocol.status import journal_status_dict

STATUS_TIMEOUT = 5.0
ANSWER_GRACE_S = 1.0  # beyond each call's own timeout, before a node counts as silent
__all__ = ["FormatRefused", "format_journal", "journal_status", "new_namespace_info"]


async def _node_status(client: JournalNodeClient, jid: str) -> dict[str, Any]:
    row: dict[str, Any] = {"address": client.address, "reachable": False}
    try:
        st = await client.call("getNodeStatus", pb.GetNodeStatusRequestProto(), STATUS_TIMEOUT)
    except QjmError as e:
        row["error"] = str(e)
        return row
    row["reachable"] = True
    row["http_address"] = st.http_address
    journal = next((j for j in st.journals if j.jid == jid), None)
    if journal is None:
        row.update(jid=jid, formatted=False, segments=[], problems=[])
    else:
        row.update(journal_status_dict(journal))
    return row


async def journal_status(uri: QJournalUri) -> list[dict[str, Any]]:
    """The status of the journal on every node of the URI, unreachable ones included."""
    clients = [JournalNodeClient(a) for a in uri.addresses]
    try:
        call = call_all("getNodeStatus()", clients, lambda c: _node_status(c, uri.jid))
        rows = await call.wait_for_every_answer(STATUS_TIMEOUT + ANSWER_GRACE_S)
        return [
            rows.get(c)
            or {"address": c.address, "reachable": False, "error": str(call.errors.get(c))}
            for c in clients
        ]
    finally:
        await asyncio.gather(*(c.close() for c in clients))


def new_namespace_info(
    cluster_id: str | None = None, namespace_id: int | None = None
) -> pb.NamespaceInfoProto:
    """A fresh namespace identity, like `hdfs namenode -format` makes."""
    return namespace_info(
        namespace_id=namespace_id or random.randint(1, 2**31 - 1),
        cluster_id=cluster_id or f"CID-{uuid.uuid4()}",
        block_pool_id=f"BP-{random.randint(1, 2**31 - 1)}-127.0.0.1-0",
    )


async def format_journal(
    uri: QJournalUri, ns: pb.NamespaceInfoProto, force: bool = False
) -> list[str]:
    """Format the journal on every node; all must answer. Returns the node addresses."""
    clients = [JournalNodeClient(a) for a in uri.addresses]
    try:
        req = pb.GetNodeStatusRequestProto()
        call = call_all(
            "getNodeStatus()", clients, lambda c: c.call("getNodeStatus", req, STATUS_TIMEOUT)
        )
        statuses = await call.wait_for_every_answer(STATUS_TIMEOUT + ANSWER_GRACE_S)
        down = [
            f"{c.address} ({call.errors.get(c, 'no answer')})" for c in clients if c not in statuses
        ]
        if down:
            raise FormatRefused(
                "format needs every JournalNode to answer; unreachable: " + "; ".join(down)
            )
        # One node named twice would get two votes: refuse before anything is written.
        check_distinct_nodes({c.address: statuses[c].node_id for c in clients}, uri)  # URI order
    finally:
        await asyncio.gather(*(c.close() for c in clients))
    qjm = QuorumJournalManager(uri)
    try:
        await qjm.format(ns, force)
    finally:
        await qjm.close()
    return list(uri.addresses)
