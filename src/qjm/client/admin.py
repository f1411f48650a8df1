"""Operator actions on all JournalNodes of a journal: status and format."""

from __future__ import annotations

import asyncio
import random
import uuid
from typing import Any

from qjm.client.journalnode_client import JournalNodeClient
from qjm.client.uri import QJournalUri, check_distinct_nodes
from qjm.errors import QjmError
from qjm.journalnode.status import journal_status_dict
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.namespace import namespace_info
from qjm.protocol.qjournal import journal_id

STATUS_TIMEOUT = 5.0
FORMAT_TIMEOUT = 60.0  # HDFS's dfs.qjm.operations.timeout


class FormatRefused(QjmError):
    """Format was refused: a node is unreachable or already holds data."""


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
        return list(await asyncio.gather(*(_node_status(c, uri.jid) for c in clients)))
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


async def _check_distinct(clients: list[JournalNodeClient], uri: QJournalUri) -> None:
    """Refuse a URI naming one JournalNode under two addresses."""
    req = pb.GetNodeStatusRequestProto()
    statuses = await asyncio.gather(
        *(c.call("getNodeStatus", req, STATUS_TIMEOUT) for c in clients)
    )
    check_distinct_nodes(
        {c.address: st.node_id for c, st in zip(clients, statuses, strict=True)}, uri
    )


async def format_journal(
    uri: QJournalUri, ns: pb.NamespaceInfoProto, force: bool = False
) -> list[str]:
    """Format the journal on every node; all must answer. Returns the node addresses."""
    clients = [JournalNodeClient(a) for a in uri.addresses]
    try:
        req = pb.IsFormattedRequestProto(jid=journal_id(uri.jid))
        answers = await asyncio.gather(
            *(c.call("isFormatted", req, STATUS_TIMEOUT) for c in clients),
            return_exceptions=True,
        )
        down = [
            f"{c.address} ({a})"
            for c, a in zip(clients, answers, strict=True)
            if isinstance(a, BaseException)
        ]
        if down:
            raise FormatRefused(
                "format needs every JournalNode to answer; unreachable: " + "; ".join(down)
            )
        await _check_distinct(clients, uri)
        formatted = [
            c.address
            for c, a in zip(clients, answers, strict=True)
            if not isinstance(a, BaseException) and a.is_formatted
        ]
        if formatted and not force:
            raise FormatRefused(
                f"journal {uri.jid!r} is already formatted on {', '.join(formatted)}; "
                "pass --force to wipe it"
            )
        freq = pb.FormatRequestProto(
            jid=journal_id(uri.jid), ns_info=ns, force=force, members=sorted(uri.addresses)
        )
        results = await asyncio.gather(
            *(c.call("format", freq, FORMAT_TIMEOUT) for c in clients), return_exceptions=True
        )
        failed = [f"{r}" for r in results if isinstance(r, BaseException)]
        if failed:
            raise FormatRefused("format failed: " + "; ".join(failed))
        return [c.address for c in clients]
    finally:
        await asyncio.gather(*(c.close() for c in clients))
