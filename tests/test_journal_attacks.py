"""Hostile or stale requests against real JournalNode processes (design §J)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
from google.protobuf.message import Message

from conftest import JNFactory, JNProcess
from hadoop_wire import ERROR, PREAMBLE, call, connection_context, read_response
from qjm.editlog.framing import HEADER, OP_OPAQUE, encode_op
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import (
    AwaitingNewEpochError,
    EpochLimitError,
    InvalidRequestError,
    JournalInUseError,
    JournalNotFormattedError,
    MembershipMismatchError,
    NamespaceMismatchError,
)
from qjm.protocol.namespace import StorageInfo
from qjm.protocol.qjournal import journal_id
from raw_writer import JNClient, RawWriter, ns_info

JID = "attacked"
NS_A = ns_info(1111, "CID-A")
NS_B = ns_info(2222, "CID-B")
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


def raw(jn: JNProcess, epoch: int, ns: pb.NamespaceInfoProto | None = None) -> RawWriter:
    """One writer's raw calls to one JournalNode, on this file's journal and namespace."""
    return RawWriter(jn, epoch, jid=JID, ns=ns or NS_A, make_txns=txns)


@pytest.mark.slow
async def test_hostile_epoch_and_committed_txid_do_not_wedge_the_journal(
    jn_factory: JNFactory,
) -> None:
    jn = jn_factory.start("jn1")
    evil, w1, w2 = raw(jn, 2**63 - 1), raw(jn, 1), raw(jn, 2)
    try:
        await w1.format()
        with pytest.raises(EpochLimitError, match="above the limit 1000000"):
            await evil.new_epoch()
        await w1.new_epoch()
        await w1.start(1)
        await w1.write(1, 1, 3)
        await w1.call("heartbeat", pb.HeartbeatRequestProto(req=w1.req(committed=2**63 - 1)))
        await w1.write(1, 4, 2, committed=10**9)
        st = await w1.status()
        assert st.last_promised_epoch == 1
        assert st.committed_txid == 5  # never above what the node holds
        # the next writer recovers and finalizes as if nothing happened
        await w2.new_epoch()
        prep = await w2.call(
            "prepareRecovery", pb.PrepareRecoveryRequestProto(req=w2.req(), segment_txid=1)
        )
        assert prep.segment_state.end_txid == 5
        await w2.call(
            "acceptRecovery",
            pb.AcceptRecoveryRequestProto(
                req=w2.req(), state_to_accept=prep.segment_state, from_url=""
            ),
        )
        await w2.call(
            "finalizeLogSegment",
            pb.FinalizeLogSegmentRequestProto(req=w2.req(), start_txid=1, end_txid=5),
        )
        await w2.start(6)
        await w2.write(6, 6, 1, committed=6)
        assert (await w2.status()).committed_txid == 6
    finally:
        for w in (evil, w1, w2):
            await w.close()


@pytest.mark.slow
async def test_journal_id_colliding_with_storage_names_is_refused(jn_factory: JNFactory) -> None:
    jn = jn_factory.start("jn1")
    client = JNClient(jn.rpc)
    try:
        for jid in ("in_use.lock", "current", "edits.sync"):
            with pytest.raises(InvalidRequestError, match=f"invalid journal id '{jid}'"):
                await client.call(
                    "format", pb.FormatRequestProto(jid=journal_id(jid), ns_info=NS_A), T
                )
            with pytest.raises(InvalidRequestError, match="storage uses itself"):
                await client.call(
                    "getJournalState", pb.GetJournalStateRequestProto(jid=journal_id(jid)), T
                )
        st = await client.call("getNodeStatus", pb.GetNodeStatusRequestProto(), T)
        assert list(st.journals) == []
    finally:
        await client.close()


@pytest.mark.slow
async def test_reformat_with_another_namespace_refuses_the_live_writer(
    jn_factory: JNFactory,
) -> None:
    jn = jn_factory.start("jn1")
    a, b = raw(jn, 1, NS_A), raw(jn, 2, NS_B)
    try:
        await a.format()
        await a.new_epoch()
        await a.start(1)
        await a.write(1, 1, 3)
        # while the writer holds its segment, a forced format for another namespace is
        # refused and changes nothing
        with pytest.raises(JournalInUseError, match="segment 1 is open for the writer of epoch 1"):
            await b.format(force=True)
        await a.write(1, 4, 1)
        # the node restarts and the writer stays quiet: the journal is no longer in use
        await a.close()
        await b.close()
        jn_factory.stop(jn)
        long_ago = time.time() - 3600
        for f in (jn.edits_dir / JID / "current").iterdir():
            os.utime(f, (long_ago, long_ago))
        jn = jn_factory.start(jn.name, jn.rpc, jn.http)
        serial = a.serial
        a, b = raw(jn, 1, NS_A), raw(jn, 2, NS_B)
        a.serial = serial
        await b.format(force=True)
        with pytest.raises(
            AwaitingNewEpochError, match="formatted for namespaceID=2222.*new_epoch"
        ):
            await a.start(1)
        with pytest.raises(AwaitingNewEpochError, match="formatted for namespaceID=2222"):
            await a.write(1, 1, 1)
        with pytest.raises(NamespaceMismatchError, match="namespaceID=1111"):
            await raw(jn, 2, NS_A).new_epoch()
        st = await b.status()
        assert st.last_promised_epoch == 1 and st.highest_written_txid == 0
        await b.new_epoch()
        await b.start(1)
        await b.write(1, 1, 1)
    finally:
        await a.close()
        await b.close()


@pytest.mark.slow
async def test_older_writers_inprogress_edits_are_not_listed_streamed_or_served(
    jn_factory: JNFactory,
) -> None:
    jn = jn_factory.start("jn1")
    w1, w2 = raw(jn, 1), raw(jn, 2)
    url = f"http://{jn.http}/getJournal?jid={JID}&segmentTxId=1&inProgressOk=true"
    try:
        await w1.format()
        await w1.new_epoch()
        await w1.start(1)
        await w1.write(1, 1, 5, committed=0)
        status, body = http_get(url)
        assert status == 200 and body == HEADER + txns(1, 5)
        await w2.new_epoch()  # writer 1 is fenced; its unrecovered tail must vanish
        await w2.call("heartbeat", pb.HeartbeatRequestProto(req=w2.req(committed=5)))
        status, body = http_get(url)
        assert status == 404, body
        man = await w2.call(
            "getEditLogManifest",
            pb.GetEditLogManifestRequestProto(
                jid=journal_id(JID), since_txid=1, in_progress_ok=True
            ),
        )
        assert list(man.manifest.logs) == []
        assert (man.last_writer_epoch, man.last_promised_epoch) == (1, 2)
        edits = await w2.call(
            "getJournaledEdits",
            pb.GetJournaledEditsRequestProto(jid=journal_id(JID), since_txid=1, max_txns=9),
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


@pytest.mark.slow
async def test_membership_from_format_is_enforced_and_shown(jn_factory: JNFactory) -> None:
    jn = jn_factory.start("jn1")
    members = ["127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"]
    w = raw(jn, 1)
    try:
        await w.format(members=members)
        with pytest.raises(MembershipMismatchError, match=r"names \['127.0.0.1:7002'\] but"):
            await w.new_epoch(members=members[1:2])
        await w.new_epoch(members=list(reversed(members)))
        assert list((await w.status()).members) == members
        status, body = http_get(f"http://{jn.http}/status")
        assert status == 200
        assert json.loads(body)["journals"][JID]["members"] == members
    finally:
        await w.close()


@pytest.mark.slow
async def test_journal_state_names_the_node_and_the_writer_epoch(jn_factory: JNFactory) -> None:
    jn = jn_factory.start("jn1")
    w = raw(jn, 3)
    try:
        await w.format()
        await w.new_epoch()
        await w.start(1)
        first = await w.call("getJournalState", pb.GetJournalStateRequestProto(jid=journal_id(JID)))
        again = await w.call("getJournalState", pb.GetJournalStateRequestProto(jid=journal_id(JID)))
        assert re.fullmatch(r"[0-9a-f]{32}", first.node_id)
        assert again.node_id == first.node_id
        assert (first.last_promised_epoch, first.last_writer_epoch) == (3, 3)
        node = await w.call("getNodeStatus", pb.GetNodeStatusRequestProto())
        assert node.node_id == first.node_id
    finally:
        await w.close()
    jn = jn_factory.restart(jn)
    client = JNClient(jn.rpc)
    try:
        after = await client.call(
            "getJournalState", pb.GetJournalStateRequestProto(jid=journal_id(JID)), T
        )
        assert after.node_id != first.node_id and after.last_writer_epoch == 3
    finally:
        await client.close()


def not_utf8(msg: Message, marker: bytes = b"@@") -> bytes:
    """msg's wire bytes with its one marker replaced by bytes that are not UTF-8."""
    data = msg.SerializeToString()
    assert data.count(marker) == 1, data
    return data.replace(marker, b"\xff\xfe")


@pytest.mark.slow
async def test_text_fields_that_are_not_utf8_are_refused_naming_the_field(
    jn_factory: JNFactory,
) -> None:
    jn = jn_factory.start("jn1")
    w = raw(jn, 1)
    bad_req = pb.RequestInfoProto(journal_id=journal_id("j@@"), epoch=1, ipc_serial=1)
    cases = {
        "isFormatted": (
            pb.IsFormattedRequestProto(jid=journal_id("j@@")),
            "jid.identifier",
        ),
        "getJournalState": (
            pb.GetJournalStateRequestProto(jid=journal_id("j@@")),
            "jid.identifier",
        ),
        "heartbeat": (pb.HeartbeatRequestProto(req=bad_req), "req.journal_id.identifier"),
        "journal": (
            pb.JournalRequestProto(
                req=bad_req, segment_txid=1, first_txid=1, num_txns=1, records=txns(1, 1)
            ),
            "req.journal_id.identifier",
        ),
        "format": (
            pb.FormatRequestProto(jid=journal_id("fresh"), ns_info=ns_info(1, "CID-@@")),
            "ns_info.storage_info.cluster_id",
        ),
    }
    try:
        await w.format()
        await w.new_epoch()
        host, port = jn.rpc.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=T) as sock:
            sock.sendall(PREAMBLE + connection_context())
            for call_id, (method, (msg, field)) in enumerate(cases.items(), start=1):
                sock.sendall(call(call_id, method, not_utf8(msg)))
                header, body = read_response(sock)
                assert (header[1], header[2], body) == (call_id, ERROR, None), method
                assert header[4] == b"qjm.protocol.errors.InvalidRequestError", header
                message = header[5].decode()  # type: ignore[union-attr]
                assert f"malformed {type(msg).__name__} in {method}" in message, message
                assert f"field {field} is not valid UTF-8: '" in message, message
                assert r"\xff\xfe'" in message, message
        assert not (jn.edits_dir / "fresh").exists()  # no journal for a garbled namespace
        log = jn.log.read_text()
        assert "Traceback" not in log and "TypeError" not in log, log
        await w.start(1)  # still serving
    finally:
        await w.close()


@pytest.mark.slow
async def test_http_refusals_name_the_journal_and_never_a_path(jn_factory: JNFactory) -> None:
    jn = jn_factory.start("jn1")
    w = raw(jn, 1)
    try:
        await w.format()
    finally:
        await w.close()
    base = f"http://{jn.http}/getJournal?segmentTxId=1&jid="
    status, body = http_get(base + "nosuch")
    assert status == 404, body
    assert json.loads(body) == {
        "error": "journal 'nosuch' is not formatted on this JournalNode; run `qjm journal format`"
    }
    status, body = http_get(base + JID)
    assert status == 404 and b"no finalized segment starting at txid 1" in body, body
    status, body = http_get(base + "%ff")
    assert status == 400 and b"invalid journal id" in body, body
    for answer in (body, http_get(base + "nosuch")[1]):
        assert str(jn.edits_dir).encode() not in answer and b"/" not in answer, answer
    # the same refusal over IPC
    client = JNClient(jn.rpc)
    try:
        with pytest.raises(JournalNotFormattedError) as info:
            await client.call(
                "getJournalState", pb.GetJournalStateRequestProto(jid=journal_id("nosuch")), T
            )
        assert str(jn.edits_dir) not in str(info.value)
    finally:
        await client.close()


@pytest.mark.slow
async def test_get_journal_refuses_a_fetcher_of_another_namespace(jn_factory: JNFactory) -> None:
    jn = jn_factory.start("jn1")
    w = raw(jn, 1)
    try:
        await w.format()
        await w.new_epoch()
        await w.start(1)
        await w.write(1, 1, 3)
        await w.finalize(1, 3)
    finally:
        await w.close()
    url = f"http://{jn.http}/getJournal?jid={JID}&segmentTxId=1"
    mine, theirs = StorageInfo.of(NS_A), StorageInfo.of(NS_B)

    def with_info(info: object) -> str:
        return f"{url}&storageInfo={urllib.parse.quote(str(info))}"

    assert http_get(with_info(mine)) == (200, HEADER + txns(1, 3))
    assert http_get(url) == (200, HEADER + txns(1, 3))  # no storageInfo: not checked
    # HDFS compares the namespace and cluster ids only (an upgrade changes the rest)
    assert http_get(with_info(dataclasses.replace(mine, layout_version=-66)))[0] == 200
    status, body = http_get(with_info(theirs))
    assert status == 403, body
    assert json.loads(body)["error"] == (
        f"This node has storage info '{mine}' but the requesting node expected '{theirs}'"
    )
    status, body = http_get(with_info("-64:1111:CID-A"))
    assert status == 400 and b"is not layoutVersion:namespaceID:cTime:clusterID" in body, body
