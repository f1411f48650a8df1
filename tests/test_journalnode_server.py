"""Real JournalNode processes on loopback: RPC rules, HTTP, metrics, CLI, refusals."""

from __future__ import annotations

import asyncio
import json
import socket
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import JNFactory, read_json, run_qjm, snapshot
from hadoop_wire import ERROR, PREAMBLE, call, connection_context, read_response
from qjm.editlog.file_names import finalized_name, inprogress_name
from qjm.editlog.framing import HEADER
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import (
    CacheMissError,
    InvalidRequestError,
    JournalNodeUnavailable,
    JournalNotFormattedError,
    MissingEpochError,
    NamespaceMismatchError,
    SegmentStateError,
    StaleEpochError,
    TxidGapError,
)
from qjm.protocol.qjournal import journal_id
from raw_writer import JID, JNClient, RawWriter, ns_info, txns

T = 10.0


def http_get(url: str) -> tuple[int, bytes]:
    """GET a URL; (status, body) also for error statuses."""
    try:
        with urllib.request.urlopen(url, timeout=T) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


@pytest.mark.slow
def test_format_then_status_shows_all_formatted_at_epoch_0(jn_factory: JNFactory) -> None:
    jns = [jn_factory.start(f"jn{i}") for i in (1, 2, 3)]
    uri = f"qjournal://{';'.join(j.rpc for j in jns)}/{JID}"
    before = run_qjm("journal", "status", "--uri", uri, "--json")
    assert before.returncode == 0, before.stderr
    assert all(not n["formatted"] for n in read_json(before.stdout)["nodes"])  # type: ignore[union-attr,index]
    fmt = run_qjm("journal", "format", "--uri", uri)
    assert fmt.returncode == 0, fmt.stderr
    assert "formatted journal ns1" in fmt.stdout
    st = run_qjm("journal", "status", "--uri", uri, "--json")
    assert st.returncode == 0, st.stderr
    nodes = read_json(st.stdout)["nodes"]
    assert len(nodes) == 3  # type: ignore[arg-type]
    for n in nodes:  # type: ignore[union-attr]
        assert n["reachable"] and n["formatted"]
        assert n["last_promised_epoch"] == 0 and n["last_writer_epoch"] == 0
    again = run_qjm("journal", "format", "--uri", uri)
    assert again.returncode == 1
    assert "already formatted" in again.stderr and "--force" in again.stderr
    assert "Traceback" not in again.stderr
    table = run_qjm("journal", "status", "--uri", uri)
    assert table.returncode == 0 and "PROMISED" in table.stdout


@pytest.mark.slow
def test_status_with_a_node_down_names_it(jn_factory: JNFactory) -> None:
    jns = [jn_factory.start(f"jn{i}") for i in (1, 2)]
    dead = jns[1].rpc
    jn_factory.stop(jns[1])
    uri = f"qjournal://{jns[0].rpc};{dead}/{JID}"
    st = run_qjm("journal", "status", "--uri", uri, "--json")
    nodes = read_json(st.stdout)["nodes"]
    down = next(n for n in nodes if n["address"] == dead)  # type: ignore[union-attr,index]
    assert not down["reachable"] and "unreachable" in down["error"]
    assert st.returncode == 2  # a majority of 2 is 2
    fmt = run_qjm("journal", "format", "--uri", uri)
    assert fmt.returncode == 1 and dead in fmt.stderr and "unreachable" in fmt.stderr


@pytest.mark.slow
async def test_rejected_requests_change_nothing_on_disk(jn_factory: JNFactory) -> None:
    jn = jn_factory.start("jn1")
    w = RawWriter(jn, epoch=2)
    try:
        await w.format()
        await w.new_epoch()
        await w.start(1)
        await w.write(1, 1, 3)
        before = snapshot(jn.edits_dir)

        stale = RawWriter(jn, epoch=1)
        with pytest.raises(StaleEpochError, match="epoch 1 is less than the last promised epoch 2"):
            await stale.write(1, 4, 1)
        await stale.close()
        with pytest.raises(TxidGapError, match="can't write txid 7: expecting next txid 4"):
            await w.write(1, 7, 1)
        other = ns_info(1, "CID-other")
        with pytest.raises(NamespaceMismatchError, match="namespaceID=1.*namespaceID=4242"):
            await w.call(
                "newEpoch", pb.NewEpochRequestProto(jid=journal_id(JID), ns_info=other, epoch=9)
            )
        bad = bytearray(txns(4, 2))
        bad[-1] ^= 0xFF
        with pytest.raises(InvalidRequestError, match="malformed batch.*txid 5"):
            await w.call(
                "journal",
                pb.JournalRequestProto(
                    req=w.req(), segment_txid=1, first_txid=4, num_txns=2, records=bytes(bad)
                ),
            )
        with pytest.raises(JournalNotFormattedError, match="journal 'nosuch' is not formatted"):
            await w.call(
                "getJournalState", pb.GetJournalStateRequestProto(jid=journal_id("nosuch"))
            )
        with pytest.raises(InvalidRequestError, match="invalid journal id '../x'"):
            await w.call("getJournalState", pb.GetJournalStateRequestProto(jid=journal_id("../x")))
        with pytest.raises(InvalidRequestError, match="no journal id"):
            await w.call(
                "heartbeat",
                pb.HeartbeatRequestProto(
                    req=pb.RequestInfoProto(journal_id=journal_id(""), epoch=2, ipc_serial=99)
                ),
            )
        assert snapshot(jn.edits_dir) == before
        assert not (jn.edits_dir / "nosuch").exists()
        await w.write(1, 4, 1)  # the real writer is unharmed
    finally:
        await w.close()


@pytest.mark.slow
async def test_restart_keeps_epochs_committed_txid_and_segments(jn_factory: JNFactory) -> None:
    jn = jn_factory.start("jn1")
    w = RawWriter(jn, epoch=3)
    await w.format()
    await w.new_epoch()
    await w.start(1)
    await w.write(1, 1, 5)
    await w.write(1, 6, 2, committed=5)
    await w.close()
    jn = jn_factory.restart(jn)
    st = run_qjm("journal", "status", "--uri", f"qjournal://{jn.rpc}/{JID}", "--json")
    node = read_json(st.stdout)["nodes"][0]  # type: ignore[index]
    assert node["last_promised_epoch"] == 3 and node["last_writer_epoch"] == 3
    assert node["committed_txid"] == 5
    assert node["highest_written_txid"] == 7
    assert node["segments"] == [{"start": 1, "end": 7, "in_progress": True}]
    w = RawWriter(jn, epoch=4)
    try:
        assert (await w.new_epoch()).last_segment_txid == 1
    finally:
        await w.close()


@pytest.mark.slow
async def test_get_journal_serves_segments_over_http(jn_factory: JNFactory) -> None:
    jn = jn_factory.start("jn1")
    w = RawWriter(jn, epoch=1)
    try:
        await w.format()
        await w.new_epoch()
        await w.start(1)
        await w.write(1, 1, 10)
        await w.finalize(1, 10)
        await w.start(11)
        await w.write(11, 11, 3)
    finally:
        await w.close()
    base = f"http://{jn.http}/getJournal?jid={JID}"
    status, body = http_get(f"{base}&segmentTxId=1")
    assert status == 200
    assert body == HEADER + txns(1, 10)
    assert body == (jn.edits_dir / JID / "current" / finalized_name(1, 10)).read_bytes()
    status, body = http_get(f"{base}&segmentTxId=11")
    assert status == 404  # in progress, not asked for
    status, body = http_get(f"{base}&segmentTxId=11&inProgressOk=true")
    assert status == 200 and body == HEADER + txns(11, 3)  # no padding
    assert (jn.edits_dir / JID / "current" / inprogress_name(11)).stat().st_size > len(body)
    status, body = http_get(f"{base}&segmentTxId=99")
    assert status == 404 and b"no finalized segment starting at txid 99" in body
    status, body = http_get(f"{base}&segmentTxId=abc")
    assert status == 400 and b"segmentTxId='abc' is not a number" in body
    status, body = http_get(f"http://{jn.http}/getJournal?jid=nosuch&segmentTxId=1")
    assert status == 404 and b"not formatted" in body


@pytest.mark.slow
async def test_accept_recovery_downloads_from_a_peer_over_http(jn_factory: JNFactory) -> None:
    a, b = jn_factory.start("jna"), jn_factory.start("jnb")
    wa, wb = RawWriter(a, epoch=1), RawWriter(b, epoch=1)
    try:
        for w in (wa, wb):
            await w.format()
            await w.new_epoch()
            await w.start(1)
        await wa.write(1, 1, 5)
        await wb.write(1, 1, 3)
        ra, rb = RawWriter(a, epoch=2), RawWriter(b, epoch=2)
        for r in (ra, rb):
            await r.new_epoch()
        prep = await ra.call(
            "prepareRecovery", pb.PrepareRecoveryRequestProto(req=ra.req(), segment_txid=1)
        )
        assert prep.segment_state.end_txid == 5  # type: ignore[attr-defined]
        url = f"http://{a.http}/getJournal?jid={JID}&segmentTxId=1&inProgressOk=true"
        await rb.call(
            "prepareRecovery", pb.PrepareRecoveryRequestProto(req=rb.req(), segment_txid=1)
        )
        await rb.call(
            "acceptRecovery",
            pb.AcceptRecoveryRequestProto(
                req=rb.req(), state_to_accept=prep.segment_state, from_url=url
            ),  # type: ignore[attr-defined]
        )
        await rb.finalize(1, 5)
        got = (b.edits_dir / JID / "current" / finalized_name(1, 5)).read_bytes()
        assert got == HEADER + txns(1, 5)
        again = await rb.call(
            "prepareRecovery", pb.PrepareRecoveryRequestProto(req=rb.req(), segment_txid=1)
        )
        assert not again.segment_state.is_in_progress  # type: ignore[attr-defined]
        await ra.close()
        await rb.close()
    finally:
        await wa.close()
        await wb.close()


@pytest.mark.slow
async def test_metrics_are_valid_prometheus_and_count_writes(jn_factory: JNFactory) -> None:
    jn = jn_factory.start("jn1")
    w = RawWriter(jn, epoch=1)
    try:
        await w.format()
        await w.new_epoch()
        await w.start(1)
        await w.write(1, 1, 4)
        await w.write(1, 5, 2, committed=4)
    finally:
        await w.close()
    status, body = http_get(f"http://{jn.http}/metrics")
    assert status == 200
    samples = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            samples[(s.name, s.labels.get("jid"))] = s.value
    assert samples[("qjm_journal_batches_written_total", JID)] == 2
    assert samples[("qjm_journal_txns_written_total", JID)] == 6
    assert samples[("qjm_journal_bytes_written_total", JID)] == len(txns(1, 6))
    assert samples[("qjm_journal_sync_seconds_count", JID)] == 2
    assert samples[("qjm_journal_last_promised_epoch", JID)] == 1
    assert samples[("qjm_journal_last_writer_epoch", JID)] == 1
    assert samples[("qjm_journal_last_written_txid", JID)] == 6
    assert samples[("qjm_journal_committed_txid", JID)] == 4
    assert samples[("qjm_journal_current_lag_txns", JID)] == 0
    status, page = http_get(f"http://{jn.http}/")
    assert status == 200 and b"<table>" in page and b">ns1<" in page
    status, js = http_get(f"http://{jn.http}/status")
    st = json.loads(js)
    assert st["journals"][JID]["highest_written_txid"] == 6


@pytest.mark.slow
def test_second_process_on_the_same_storage_is_refused(jn_factory: JNFactory) -> None:
    jn = jn_factory.start("jn1")
    second = run_qjm(
        "journalnode",
        "--edits-dir",
        str(jn.edits_dir),
        "--rpc-address",
        "127.0.0.1:0",
        "--http-address",
        "127.0.0.1:0",
    )
    assert second.returncode == 1
    assert f"in use by another JournalNode (pid {jn.pid})" in second.stderr
    assert "Traceback" not in second.stderr


@pytest.mark.slow
def test_busy_port_is_refused_with_one_line(jn_factory: JNFactory, tmp_path: Path) -> None:
    jn = jn_factory.start("jn1")
    for flag, value, what in (
        ("--rpc-address", jn.rpc, "RPC"),
        ("--http-address", jn.http, "HTTP"),
    ):
        args = {"--rpc-address": "127.0.0.1:0", "--http-address": "127.0.0.1:0", flag: value}
        r = run_qjm(
            "journalnode",
            "--edits-dir",
            str(tmp_path / f"other-{what}"),
            *[x for kv in args.items() for x in kv],
        )
        assert r.returncode == 1
        errors = [line for line in r.stderr.splitlines() if line.startswith("qjm: error:")]
        assert errors == [
            f"qjm: error: cannot listen for {what} on {value}: Address already in use"
        ]
        assert "Traceback" not in r.stderr


@pytest.mark.slow
def test_bad_edits_dirs_are_refused(tmp_path: Path) -> None:
    a_file = tmp_path / "afile"
    a_file.write_text("x")
    cases = [
        ("relative/dir", "is not an absolute path"),
        (str(a_file), "is not a directory"),
        (str(a_file / "sub"), "cannot create edits dir"),
    ]
    for edits_dir, message in cases:
        r = run_qjm(
            "journalnode",
            "--edits-dir",
            edits_dir,
            "--rpc-address",
            "127.0.0.1:0",
            "--http-address",
            "127.0.0.1:0",
        )
        assert r.returncode == 1, edits_dir
        assert message in r.stderr and "Traceback" not in r.stderr


@pytest.mark.slow
def test_bad_config_is_refused_naming_the_key(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        '[journalnodes.jn1]\nrpc_address = "127.0.0.1:1"\nhttp_address = "127.0.0.1:2"\n'
        f'edits_dir = "{tmp_path}"\nsync_interval = 5\n'
    )
    r = run_qjm("journalnode", "--config", str(cfg), "--name", "jn1")
    assert r.returncode == 1
    assert "unknown key journalnodes.jn1.sync_interval" in r.stderr
    cfg.write_text('[journalnode]\nsync_interval_ms = "soon"\n')
    r = run_qjm("journal", "status", "--config", str(cfg))
    assert "journalnode.sync_interval_ms: expected int, got str 'soon'" in r.stderr
    r = run_qjm("journal", "status", "--uri", "qjournal://127.0.0.1:x/ns1")
    assert r.returncode == 1 and "port 'x'" in r.stderr and "Traceback" not in r.stderr


async def test_unreachable_node_is_a_clear_error(tmp_path: Path) -> None:
    client = JNClient("127.0.0.1:1")
    try:
        with pytest.raises(JournalNodeUnavailable, match="127.0.0.1:1: unreachable"):
            await client.call(
                "getJournalState", pb.GetJournalStateRequestProto(jid=journal_id(JID)), 2.0
            )
    finally:
        await client.close()


@pytest.mark.slow
async def test_garbage_request_bytes_are_refused(jn_factory: JNFactory) -> None:
    jn = jn_factory.start("jn1")
    w = RawWriter(jn, epoch=1)
    try:
        await w.format()
        before = snapshot(jn.edits_dir)
        host, port = jn.rpc.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=T) as sock:
            garbage = b"\xff\xff\xff\xff not a protobuf"
            sock.sendall(PREAMBLE + connection_context() + call(1, "journal", garbage))
            header, body = read_response(sock)
        assert (header[1], header[2], body) == (1, ERROR, None)  # an error, not a crash
        assert b"journal" in header[5], header  # type: ignore[operator]
        assert snapshot(jn.edits_dir) == before
        assert (await w.new_epoch()).HasField("last_segment_txid") is False  # still serving
    finally:
        await w.close()


@pytest.mark.slow
async def test_several_journals_on_one_node_are_independent(jn_factory: JNFactory) -> None:
    jn = jn_factory.start("jn1")
    client = JNClient(jn.rpc)
    try:
        for jid, epoch in (("alpha", 3), ("beta", 7)):
            ns = ns_info(epoch, f"CID-{jid}")
            await client.call("format", pb.FormatRequestProto(jid=journal_id(jid), ns_info=ns), T)
            await client.call(
                "newEpoch", pb.NewEpochRequestProto(jid=journal_id(jid), ns_info=ns, epoch=epoch), T
            )
        a = await client.call(
            "getJournalState", pb.GetJournalStateRequestProto(jid=journal_id("alpha")), T
        )
        b = await client.call(
            "getJournalState", pb.GetJournalStateRequestProto(jid=journal_id("beta")), T
        )
        assert (a.last_promised_epoch, b.last_promised_epoch) == (3, 7)
        assert sorted(p.name for p in jn.edits_dir.iterdir() if p.is_dir()) == ["alpha", "beta"]
    finally:
        await client.close()
    jn = jn_factory.restart(jn)
    status, body = http_get(f"http://{jn.http}/status")
    assert status == 200
    journals = json.loads(body)["journals"]
    assert {j: journals[j]["last_promised_epoch"] for j in journals} == {"alpha": 3, "beta": 7}


@pytest.mark.slow
async def test_get_journaled_edits_over_rpc(jn_factory: JNFactory) -> None:
    jn = jn_factory.start("jn1")
    w = RawWriter(jn, epoch=1)
    try:
        await w.format()
        await w.new_epoch()
        await w.start(1)
        await w.write(1, 1, 4)
        await w.write(1, 5, 4, committed=4)
        resp = await w.call(
            "getJournaledEdits",
            pb.GetJournaledEditsRequestProto(jid=journal_id(JID), since_txid=3, max_txns=4),
        )
        assert resp.txn_count == 4  # type: ignore[attr-defined]
        assert resp.edit_log == HEADER + txns(3, 4)  # type: ignore[attr-defined]
        assert resp.committed_txid == 4 and resp.highest_written_txid == 8  # type: ignore[attr-defined]
        empty = await w.call(
            "getJournaledEdits",
            pb.GetJournaledEditsRequestProto(jid=journal_id(JID), since_txid=9, max_txns=4),
        )
        assert empty.txn_count == 0  # type: ignore[attr-defined]
    finally:
        await w.close()
    jn = jn_factory.restart(jn)  # the cache is memory only
    client = JNClient(jn.rpc)
    try:
        with pytest.raises(CacheMissError, match="txid 1 is not in the edits cache"):
            await client.call(
                "getJournaledEdits",
                pb.GetJournaledEditsRequestProto(jid=journal_id(JID), since_txid=1, max_txns=4),
                T,
            )
    finally:
        await client.close()


@pytest.mark.slow
async def test_get_journaled_edits_long_poll_waits_for_committed_edits(
    jn_factory: JNFactory,
) -> None:
    jn = jn_factory.start("jn1")
    w = RawWriter(jn, epoch=1)
    reader = JNClient(jn.rpc)
    try:
        await w.format()
        await w.new_epoch()
        await w.start(1)
        await w.write(1, 1, 8, committed=0)
        poll = asyncio.ensure_future(
            reader.call(
                "getJournaledEdits",
                pb.GetJournaledEditsRequestProto(
                    jid=journal_id(JID), since_txid=9, max_txns=100, wait_ms=20_000
                ),
                30,
            )
        )
        await w.write(1, 9, 2, committed=8)  # written, but not yet reported committed
        assert not poll.done()
        await w.call("heartbeat", pb.HeartbeatRequestProto(req=w.req(committed=10)))
        resp = await asyncio.wait_for(poll, 10)  # well before the 20 s long poll ends
        assert resp.txn_count == 2 and resp.committed_txid == 10
        assert resp.edit_log == HEADER + txns(9, 2)
    finally:
        await w.close()
        await reader.close()


@pytest.mark.slow
async def test_finalize_of_a_segment_the_writer_did_not_write_is_refused_over_ipc(
    jn_factory: JNFactory,
) -> None:
    jn = jn_factory.start("jn1")
    w1, w2 = RawWriter(jn, epoch=1), RawWriter(jn, epoch=2)
    try:
        await w1.format()
        await w1.new_epoch()
        await w1.start(1)
        await w1.write(1, 1, 5)
        await w2.new_epoch()
        before = snapshot(jn.edits_dir)
        with pytest.raises(SegmentStateError, match="neither written by the writer of epoch 2"):
            await w2.finalize(1, 5)
        assert snapshot(jn.edits_dir) == before
        prep = await w2.call(
            "prepareRecovery", pb.PrepareRecoveryRequestProto(req=w2.req(), segment_txid=1)
        )
        await w2.call(
            "acceptRecovery",
            pb.AcceptRecoveryRequestProto(
                req=w2.req(), state_to_accept=prep.segment_state, from_url=""
            ),
        )
        await w2.finalize(1, 5)
        assert (jn.edits_dir / JID / "current" / finalized_name(1, 5)).exists()
    finally:
        await w1.close()
        await w2.close()


@pytest.mark.slow
async def test_discard_segments_over_ipc(jn_factory: JNFactory) -> None:
    jn = jn_factory.start("jn1")
    w1, w2 = RawWriter(jn, epoch=1), RawWriter(jn, epoch=2)

    def discard(txid: int, w: RawWriter | None) -> pb.DiscardSegmentsRequestProto:
        req = w.req() if w is not None else None
        return pb.DiscardSegmentsRequestProto(jid=journal_id(JID), start_txid=txid, req=req)

    try:
        await w1.format()
        await w1.new_epoch()
        await w1.start(1)
        await w1.write(1, 1, 3)
        await w1.finalize(1, 3)
        await w1.start(4)
        await w1.write(4, 4, 2, committed=3)
        with pytest.raises(
            SegmentStateError, match="the writer of epoch 1 has started segments here"
        ):
            await w1.call("discardSegments", discard(4, w1))
        await w2.new_epoch()
        # Hadoop's NameNode sends no epoch: refused, as is the fenced writer's
        with pytest.raises(MissingEpochError, match="carries no writer epoch"):
            await w2.call("discardSegments", discard(4, None))
        with pytest.raises(StaleEpochError, match="epoch 1 is less than the last promised"):
            await w1.call("discardSegments", discard(4, w1))
        await w2.call("discardSegments", discard(4, w2))
        current = jn.edits_dir / JID / "current"
        assert sorted(p.name for p in current.glob("edits_*")) == [finalized_name(1, 3)]
        man = await w2.call(
            "getEditLogManifest",
            pb.GetEditLogManifestRequestProto(
                jid=journal_id(JID), since_txid=1, in_progress_ok=True
            ),
        )
        assert [(s.start_txid, s.end_txid) for s in man.manifest.logs] == [(1, 3)]
        assert man.manifest.committed_txid == 3
        # InterQJournalProtocol (the syncers' protocol in HDFS) answers the same
        inter = await w2.call(
            "getEditLogManifestFromJournal",
            pb.GetEditLogManifestRequestProto(
                jid=journal_id(JID), since_txid=1, in_progress_ok=True
            ),
        )
        assert inter == man
    finally:
        await w1.close()
        await w2.close()


@pytest.mark.slow
async def test_pipelined_journal_calls_apply_in_the_order_they_were_sent(
    jn_factory: JNFactory,
) -> None:
    jn = jn_factory.start("jn1")
    w = RawWriter(jn, epoch=1)
    try:
        await w.format()
        await w.new_epoch()
        await w.start(1)
        batches = [w.batch(1, first, 3) for first in range(1, 61, 3)]  # serials in order
        # every call is sent before the first answer comes back: one connection, in order
        calls = [asyncio.ensure_future(w.call("journal", b)) for b in batches]
        await asyncio.gather(*calls)
        await w.finalize(1, 60)
    finally:
        await w.close()
    got = (jn.edits_dir / JID / "current" / finalized_name(1, 60)).read_bytes()
    assert got == HEADER + txns(1, 60)


async def test_calls_for_a_journal_that_is_opening_keep_their_order(tmp_path: Path) -> None:
    from qjm.config import JournalNodeSettings
    from qjm.journalnode.journal import Journal
    from qjm.journalnode.node import JournalNode

    node = JournalNode(
        tmp_path / "jn",
        ("127.0.0.1", 0),
        ("127.0.0.1", 0),
        JournalNodeSettings(sync_enabled=False),
    )
    (tmp_path / "jn").mkdir()
    order: list[int] = []

    def step(i: int) -> object:
        def fn(j: Journal) -> None:
            order.append(i)

        return fn

    calls = []
    for i in range(40):  # the first opens the journal; some arrive while it opens, some after
        calls.append(asyncio.ensure_future(node.run("fresh", step(i), create=True)))  # type: ignore[arg-type]
        if i % 7 == 0:
            await asyncio.sleep(0)
    await asyncio.gather(*calls)
    try:
        assert order == list(range(40))
    finally:
        await node.stop()
