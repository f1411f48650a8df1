"""Hostile or stale requests against real JournalNode processes (issue 8, JournalNode side)."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from typing import Any

import pytest

from conftest import JNFactory, JNProcess
from qjm.client.rpc import JournalNodeClient
from qjm.editlog.framing import HEADER, OP_OPAQUE, encode_op
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import (
    AwaitingNewEpochError,
    EpochLimitError,
    InvalidRequestError,
    MembershipMismatchError,
    NamespaceMismatchError,
)

JID = "attacked"
NS_A = pb.NamespaceInfo(namespace_id=1111, cluster_id="CID-A")
NS_B = pb.NamespaceInfo(namespace_id=2222, cluster_id="CID-B")
T = 10.0


def txns(first: int, n: int) -> bytes:
    """n opaque ops numbered from first."""
    return b"".join(encode_op(OP_OPAQUE, t, b"op %d" % t) for t in range(first, first + n))


def http_get(url: str) -> tuple[int, bytes]:
    """GET a URL; (status, body) also for error statuses."""
    try:
        with urllib.request.urlopen(url, timeout=T) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


class Raw:
    """One writer's raw RPCs to one JournalNode."""

    def __init__(self, jn: JNProcess, epoch: int, ns: pb.NamespaceInfo = NS_A) -> None:
        self.client = JournalNodeClient(jn.rpc)
        self.epoch = epoch
        self.ns = ns
        self.serial = 0

    def req(self, committed: int | None = None) -> pb.RequestInfo:
        """The next RequestInfo."""
        self.serial += 1
        r = pb.RequestInfo(jid=JID, epoch=self.epoch, ipc_serial=self.serial)
        if committed is not None:
            r.committed_txid = committed
        return r

    async def call(self, method: str, request: object) -> Any:
        """One RPC."""
        return await self.client.call(method, request, T)

    async def format(self, force: bool = False, members: list[str] | None = None) -> None:
        """Format the journal for this writer's namespace."""
        await self.call(
            "Format", pb.FormatRequest(jid=JID, ns_info=self.ns, force=force, members=members)
        )

    async def new_epoch(self, members: list[str] | None = None) -> None:
        """Win this writer's epoch."""
        await self.call(
            "NewEpoch",
            pb.NewEpochRequest(jid=JID, ns_info=self.ns, epoch=self.epoch, members=members),
        )

    async def start(self, txid: int) -> None:
        """Open a segment."""
        await self.call("StartLogSegment", pb.StartLogSegmentRequest(req=self.req(), txid=txid))

    async def write(self, seg: int, first: int, n: int, committed: int | None = None) -> None:
        """Journal n txns."""
        await self.call(
            "Journal",
            pb.JournalRequest(
                req=self.req(committed),
                segment_txid=seg,
                first_txid=first,
                num_txns=n,
                records=txns(first, n),
            ),
        )

    async def status(self) -> pb.JournalStatus:
        """The journal's status."""
        st: pb.JournalStatus = await self.call("GetJournalStatus", pb.JournalIdRequest(jid=JID))
        return st

    async def close(self) -> None:
        """Close the channel."""
        await self.client.close()


async def test_hostile_epoch_and_committed_txid_do_not_wedge_the_journal(
    jn_factory: JNFactory,
) -> None:
    jn = jn_factory.start("jn1")
    evil, w1, w2 = Raw(jn, 2**63 - 1), Raw(jn, 1), Raw(jn, 2)
    try:
        await w1.format()
        with pytest.raises(EpochLimitError):
            await evil.new_epoch()
        await w1.new_epoch()
        await w1.start(1)
        await w1.write(1, 1, 3)
        await w1.call("Heartbeat", pb.HeartbeatRequest(req=w1.req(committed=2**63 - 1)))
        await w1.write(1, 4, 2, committed=10**9)
        st = await w1.status()
        assert st.last_promised_epoch == 1
        assert st.committed_txid == 5  # never above what the node holds
        # the next writer recovers and finalizes as if nothing happened
        await w2.new_epoch()
        prep = await w2.call(
            "PrepareRecovery", pb.PrepareRecoveryRequest(req=w2.req(), segment_txid=1)
        )
        assert prep.segment_state.end_txid == 5
        await w2.call(
            "AcceptRecovery",
            pb.AcceptRecoveryRequest(req=w2.req(), state_to_accept=prep.segment_state),
        )
        await w2.call(
            "FinalizeLogSegment",
            pb.FinalizeLogSegmentRequest(req=w2.req(), start_txid=1, end_txid=5),
        )
        await w2.start(6)
        await w2.write(6, 6, 1, committed=6)
        assert (await w2.status()).committed_txid == 6
    finally:
        for w in (evil, w1, w2):
            await w.close()


async def test_journal_id_colliding_with_storage_names_is_refused(jn_factory: JNFactory) -> None:
    jn = jn_factory.start("jn1")
    client = JournalNodeClient(jn.rpc)
    try:
        for jid in ("in_use.lock", "current", "edits.sync"):
            with pytest.raises(InvalidRequestError, match=f"invalid journal id '{jid}'"):
                await client.call("Format", pb.FormatRequest(jid=jid, ns_info=NS_A), T)
            with pytest.raises(InvalidRequestError, match="storage uses itself"):
                await client.call("GetJournalState", pb.JournalIdRequest(jid=jid), T)
        st = await client.call("GetNodeStatus", pb.GetNodeStatusRequest(), T)
        assert list(st.journals) == []
    finally:
        await client.close()


async def test_reformat_with_another_namespace_refuses_the_live_writer(
    jn_factory: JNFactory,
) -> None:
    jn = jn_factory.start("jn1")
    a, b = Raw(jn, 1, NS_A), Raw(jn, 2, NS_B)
    try:
        await a.format()
        await a.new_epoch()
        await a.start(1)
        await a.write(1, 1, 3)
        await b.format(force=True)
        with pytest.raises(
            AwaitingNewEpochError, match="formatted for namespaceID=2222.*new_epoch"
        ):
            await a.start(1)
        with pytest.raises(AwaitingNewEpochError):
            await a.write(1, 1, 1)
        with pytest.raises(NamespaceMismatchError, match="namespaceID=1111"):
            await Raw(jn, 2, NS_A).new_epoch()
        st = await b.status()
        assert st.last_promised_epoch == 1 and st.highest_written_txid == 0
        await b.new_epoch()
        await b.start(1)
        await b.write(1, 1, 1)
    finally:
        await a.close()
        await b.close()


async def test_older_writers_inprogress_edits_are_not_listed_streamed_or_served(
    jn_factory: JNFactory,
) -> None:
    jn = jn_factory.start("jn1")
    w1, w2 = Raw(jn, 1), Raw(jn, 2)
    url = f"http://{jn.http}/getJournal?jid={JID}&segmentTxId=1&inProgressOk=true"
    try:
        await w1.format()
        await w1.new_epoch()
        await w1.start(1)
        await w1.write(1, 1, 5, committed=0)
        status, body = http_get(url)
        assert status == 200 and body == HEADER + txns(1, 5)
        await w2.new_epoch()  # writer 1 is fenced; its unrecovered tail must vanish
        await w2.call("Heartbeat", pb.HeartbeatRequest(req=w2.req(committed=5)))
        status, body = http_get(url)
        assert status == 404, body
        man = await w2.call(
            "GetEditLogManifest",
            pb.GetEditLogManifestRequest(jid=JID, since_txid=1, in_progress_ok=True),
        )
        assert list(man.logs) == []
        assert (man.last_writer_epoch, man.last_promised_epoch) == (1, 2)
        edits = await w2.call(
            "GetJournaledEdits", pb.GetJournaledEditsRequest(jid=JID, since_txid=1, max_txns=9)
        )
        assert edits.txn_count == 0 and edits.edit_log == b""
        assert (edits.last_writer_epoch, edits.last_promised_epoch) == (1, 2)
        # the recovery of epoch 2 still fetches it; a stale epoch does not
        status, body = http_get(url + "&recoveryEpoch=2")
        assert status == 200 and body == HEADER + txns(1, 5)
        assert http_get(url + "&recoveryEpoch=1")[0] == 404
    finally:
        await w1.close()
        await w2.close()


async def test_membership_from_format_is_enforced_and_shown(jn_factory: JNFactory) -> None:
    jn = jn_factory.start("jn1")
    members = ["127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"]
    w = Raw(jn, 1)
    try:
        await w.format(members=members)
        with pytest.raises(MembershipMismatchError):
            await w.new_epoch(members=members[1:2])
        await w.new_epoch(members=list(reversed(members)))
        assert list((await w.status()).members) == members
        status, body = http_get(f"http://{jn.http}/status")
        assert status == 200
        assert json.loads(body)["journals"][JID]["members"] == members
    finally:
        await w.close()


async def test_journal_state_names_the_node_and_the_writer_epoch(jn_factory: JNFactory) -> None:
    jn = jn_factory.start("jn1")
    w = Raw(jn, 3)
    try:
        await w.format()
        await w.new_epoch()
        await w.start(1)
        first = await w.call("GetJournalState", pb.JournalIdRequest(jid=JID))
        again = await w.call("GetJournalState", pb.JournalIdRequest(jid=JID))
        assert re.fullmatch(r"[0-9a-f]{32}", first.node_id)
        assert again.node_id == first.node_id
        assert (first.last_promised_epoch, first.last_writer_epoch) == (3, 3)
        node = await w.call("GetNodeStatus", pb.GetNodeStatusRequest())
        assert node.node_id == first.node_id
    finally:
        await w.close()
    jn = jn_factory.restart(jn)
    client = JournalNodeClient(jn.rpc)
    try:
        after = await client.call("GetJournalState", pb.JournalIdRequest(jid=JID), T)
        assert after.node_id != first.node_id and after.last_writer_epoch == 3
    finally:
        await client.close()
