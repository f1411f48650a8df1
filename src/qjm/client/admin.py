"""Operator actions on all JournalNodes of a journal: status, format and member changes."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from qjm.client.decisions import FormatRefused, format_refusal
from qjm.client.journalnode_client import JournalNodeClient
from qjm.client.quorum_call import QuorumError, call_all
from qjm.client.quorum_journal_manager import QuorumJournalManager
from qjm.client.uri import QJournalUri, check_distinct_nodes
from qjm.errors import QjmError
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import MemberChangeError
from qjm.protocol.member_change import (
    MemberChange,
    NodeJournal,
    check_member_change,
    plan_member_change,
)
from qjm.protocol.namespace import namespace_info
from qjm.protocol.qjournal import journal_id
from qjm.protocol.status import journal_status_dict

STATUS_TIMEOUT = 5.0
CHANGE_TIMEOUT = 20.0  # one node's changeMembers: a few metadata writes, or a restore
ANSWER_GRACE_S = 1.0  # beyond each call's own timeout, before a node counts as silent
__all__ = [
    "FormatRefused",
    "MemberChangeReport",
    "change_members",
    "format_journal",
    "journal_status",
    "new_namespace_info",
]


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
        refused = format_refusal(
            [c.address for c in clients],
            [c.address for c in statuses],
            {c.address: e for c, e in call.errors.items()},
        )
        if refused is not None:
            raise refused
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


@dataclass(frozen=True)
class MemberChangeReport:
    """What change_members did: the change, the new URI, and each node's recorded epoch."""

    change: MemberChange
    uri: QJournalUri  # the journal with its new members
    epochs: dict[str, int]  # the epoch each staying or joining node recorded the change in
    already: tuple[str, ...]  # nodes that held the new members before (a rerun)


def _node_journal(status: pb.NodeStatusProto, jid: str) -> NodeJournal:
    """What a node's status says of one journal, for plan_member_change."""
    j = next((j for j in status.journals if j.jid == jid and j.is_formatted), None)
    if j is None:
        return NodeJournal(None)
    si = j.ns_info.storage_info
    return NodeJournal(
        (si.namespace_id, si.cluster_id),
        tuple(j.members),
        j.last_promised_epoch,
        j.last_writer_epoch,
        j.member_change_epoch if j.HasField("member_change_epoch") else None,
        tuple(j.members_before_change),
    )


async def change_members(uri: QJournalUri, to: Sequence[str]) -> MemberChangeReport:
    """Change the journal's members from uri's to `to` (docs/design.md §J.7).

    The rule first; then every node that stays or joins must answer its status (the plan),
    every staying node must record the change (they are the new set's first quorum), then
    every joining node. Removed nodes are not called. A rerun completes a change that
    stopped part way.
    """
    change = check_member_change(uri.addresses, to)
    addresses = list(dict.fromkeys((*uri.addresses, *to)))
    clients = {a: JournalNodeClient(a) for a in addresses}
    try:
        req = pb.GetNodeStatusRequestProto()
        call = call_all(
            "getNodeStatus()",
            addresses,
            lambda a: clients[a].call("getNodeStatus", req, STATUS_TIMEOUT),
        )
        statuses: dict[str, pb.NodeStatusProto] = await call.wait_for_every_answer(
            STATUS_TIMEOUT + ANSWER_GRACE_S
        )
        plan = plan_member_change(
            change, {a: _node_journal(st, uri.jid) for a, st in statuses.items()}
        )
        new_uri = QJournalUri(tuple(a for a in addresses if a in change.new), uri.jid)
        # One node named twice would get two votes in the new set.
        check_distinct_nodes({a: statuses[a].node_id for a in new_uri.addresses}, new_uri)
        ns_info = next(
            j.ns_info
            for a in change.old
            if a in statuses
            for j in statuses[a].journals
            if j.jid == uri.jid
            and j.is_formatted
            and (j.ns_info.storage_info.namespace_id, j.ns_info.storage_info.cluster_id)
            == plan.namespace
        )

        def request(address: str) -> pb.ChangeMembersRequestProto:
            return pb.ChangeMembersRequestProto(
                jid=journal_id(uri.jid),
                ns_info=ns_info,
                old_members=change.old,
                new_members=change.new,
                joining=address in change.added,
                promised_epoch=plan.promised_epoch,
            )

        answers: dict[str, pb.ChangeMembersResponseProto] = {}
        for phase, nodes in (("staying", change.staying), ("joining", change.added)):
            if not nodes:
                continue
            calls = call_all(
                f"changeMembers() on the {phase} nodes",
                nodes,
                lambda a: clients[a].call("changeMembers", request(a), CHANGE_TIMEOUT),
            )
            try:
                answers |= await calls.wait_for_all(CHANGE_TIMEOUT + ANSWER_GRACE_S)
            except QuorumError as e:
                done = sorted(answers) + sorted(calls.successes)
                raise MemberChangeError(
                    f"{e}; the change is recorded on {', '.join(done) or 'no node'} only: run "
                    "the command again to complete it"
                ) from None
    finally:
        await asyncio.gather(*(c.close() for c in clients.values()))
    return MemberChangeReport(
        change,
        new_uri,
        {a: r.change_epoch for a, r in answers.items()},
        tuple(a for a, r in answers.items() if r.already_changed),
    )
