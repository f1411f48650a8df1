"""Real JournalNode processes on loopback: RPC rules, HTTP, metrics, CLI, refusals."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from pathlib import Path

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import JNFactory, JNProcess, read_json, run_qjm, snapshot
from qjm.client.rpc import JournalNodeClient, JournalNodeUnavailable
from qjm.editlog.framing import HEADER, OP_OPAQUE, encode_op
from qjm.editlog.segments import finalized_name, inprogress_name
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import (
    CacheMissError,
    InvalidRequestError,
    JournalNotFormattedError,
    NamespaceMismatchError,
    StaleEpochError,
    TxidGapError,
)

JID = "ns1"
NS = pb.NamespaceInfo(namespace_id=4242, cluster_id="CID-server-test")
T = 10.0


def txns(first: int, n: int) -> bytes:
    """n opaque ops numbered from first."""
    return b"".join(encode_op(OP_OPAQUE, t, b"x" * 200) for t in range(first, first + n))


class RawWriter:
    """Speaks the writer's RPCs to one JournalNode, one call at a time."""

    def __init__(self, jn: JNProcess, epoch: int) -> None:
        self.client = JournalNodeClient(jn.rpc)
        self.epoch = epoch
        self.serial = 0

    def req(self, committed: int | None = None, epoch: int | None = None) -> pb.RequestInfo:
        """The next RequestInfo."""
        self.serial += 1
        r = pb.RequestInfo(jid=JID, epoch=epoch or self.epoch, ipc_serial=self.serial)
        if committed is not None:
            r.committed_txid = committed
        return r

    async def call(self, method: str, request: object) -> object:
        """One RPC."""
        return await self.client.call(method, request, T)

    async def format(self) -> None:
        """Format the journal."""
        await self.call("Format", pb.FormatRequest(jid=JID, ns_info=NS))

    async def new_epoch(self) -> pb.NewEpochResponse:
        """Win this writer's epoch."""
        return await self.call(  # type: ignore[return-value]
            "NewEpoch", pb.NewEpochRequest(jid=JID, ns_info=NS, epoch=self.epoch)
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

    async def finalize(self, start: int, end: int) -> None:
        """Finalize a segment."""
        await self.call(
            "FinalizeLogSegment",
            pb.FinalizeLogSegmentRequest(req=self.req(), start_txid=start, end_txid=end),
        )

    async def close(self) -> None:
        """Close the channel."""
        await self.client.close()


def http_get(url: str) -> tuple[int, bytes]:
    """GET a URL; (status, body) also for error statuses."""
    try:
        with urllib.request.urlopen(url, timeout=T) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


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
        with pytest.raises(StaleEpochError):
            await stale.write(1, 4, 1)
        await stale.close()
        with pytest.raises(TxidGapError):
            await w.write(1, 7, 1)
        other = pb.NamespaceInfo(namespace_id=1, cluster_id="CID-other")
        with pytest.raises(NamespaceMismatchError, match="namespaceID=1.*namespaceID=4242"):
            await w.call("NewEpoch", pb.NewEpochRequest(jid=JID, ns_info=other, epoch=9))
        bad = bytearray(txns(4, 2))
        bad[-1] ^= 0xFF
        with pytest.raises(InvalidRequestError, match="malformed batch.*txid 5"):
            await w.call(
                "Journal",
                pb.JournalRequest(
                    req=w.req(), segment_txid=1, first_txid=4, num_txns=2, records=bytes(bad)
                ),
            )
        with pytest.raises(JournalNotFormattedError, match="journal 'nosuch' is not formatted"):
            await w.call("GetJournalState", pb.JournalIdRequest(jid="nosuch"))
        with pytest.raises(InvalidRequestError, match="invalid journal id '../x'"):
            await w.call("GetJournalState", pb.JournalIdRequest(jid="../x"))
        with pytest.raises(InvalidRequestError, match="no journal id"):
            await w.call(
                "Heartbeat", pb.HeartbeatRequest(req=pb.RequestInfo(epoch=2, ipc_serial=99))
            )
        assert snapshot(jn.edits_dir) == before
        assert not (jn.edits_dir / "nosuch").exists()
        await w.write(1, 4, 1)  # the real writer is unharmed
    finally:
        await w.close()


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
            "PrepareRecovery", pb.PrepareRecoveryRequest(req=ra.req(), segment_txid=1)
        )
        assert prep.segment_state.end_txid == 5  # type: ignore[attr-defined]
        url = f"http://{a.http}/getJournal?jid={JID}&segmentTxId=1&inProgressOk=true"
        await rb.call("PrepareRecovery", pb.PrepareRecoveryRequest(req=rb.req(), segment_txid=1))
        await rb.call(
            "AcceptRecovery",
            pb.AcceptRecoveryRequest(
                req=rb.req(), state_to_accept=prep.segment_state, from_url=url
            ),  # type: ignore[attr-defined]
        )
        await rb.finalize(1, 5)
        got = (b.edits_dir / JID / "current" / finalized_name(1, 5)).read_bytes()
        assert got == HEADER + txns(1, 5)
        again = await rb.call(
            "PrepareRecovery", pb.PrepareRecoveryRequest(req=rb.req(), segment_txid=1)
        )
        assert not again.segment_state.is_in_progress  # type: ignore[attr-defined]
        await ra.close()
        await rb.close()
    finally:
        await wa.close()
        await wb.close()


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
    client = JournalNodeClient("127.0.0.1:1")
    try:
        with pytest.raises(JournalNodeUnavailable, match="127.0.0.1:1: unreachable"):
            await client.call("GetJournalState", pb.JournalIdRequest(jid=JID), 2.0)
    finally:
        await client.close()


async def test_garbage_request_bytes_are_refused(jn_factory: JNFactory) -> None:
    jn = jn_factory.start("jn1")
    w = RawWriter(jn, epoch=1)
    try:
        await w.format()
        before = snapshot(jn.edits_dir)
        raw = w.client.channel.unary_unary(
            "/qjm.qjournal.QJournalService/Journal",
            request_serializer=None,
            response_deserializer=None,
        )
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await raw(b"\xff\xff\xff\xff not a protobuf", timeout=T)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "malformed JournalRequest" in (info.value.details() or "")
        assert snapshot(jn.edits_dir) == before
        assert (await w.new_epoch()).HasField("last_segment_txid") is False  # still serving
    finally:
        await w.close()


async def test_several_journals_on_one_node_are_independent(jn_factory: JNFactory) -> None:
    jn = jn_factory.start("jn1")
    client = JournalNodeClient(jn.rpc)
    try:
        for jid, epoch in (("alpha", 3), ("beta", 7)):
            ns = pb.NamespaceInfo(namespace_id=epoch, cluster_id=f"CID-{jid}")
            await client.call("Format", pb.FormatRequest(jid=jid, ns_info=ns), T)
            await client.call("NewEpoch", pb.NewEpochRequest(jid=jid, ns_info=ns, epoch=epoch), T)
        a = await client.call("GetJournalState", pb.JournalIdRequest(jid="alpha"), T)
        b = await client.call("GetJournalState", pb.JournalIdRequest(jid="beta"), T)
        assert (a.last_promised_epoch, b.last_promised_epoch) == (3, 7)
        assert sorted(p.name for p in jn.edits_dir.iterdir() if p.is_dir()) == ["alpha", "beta"]
    finally:
        await client.close()
    jn = jn_factory.restart(jn)
    status, body = http_get(f"http://{jn.http}/status")
    assert status == 200
    journals = json.loads(body)["journals"]
    assert {j: journals[j]["last_promised_epoch"] for j in journals} == {"alpha": 3, "beta": 7}


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
            "GetJournaledEdits", pb.GetJournaledEditsRequest(jid=JID, since_txid=3, max_txns=4)
        )
        assert resp.txn_count == 4  # type: ignore[attr-defined]
        assert resp.edit_log == HEADER + txns(3, 4)  # type: ignore[attr-defined]
        assert resp.committed_txid == 4 and resp.highest_written_txid == 8  # type: ignore[attr-defined]
        empty = await w.call(
            "GetJournaledEdits", pb.GetJournaledEditsRequest(jid=JID, since_txid=9, max_txns=4)
        )
        assert empty.txn_count == 0  # type: ignore[attr-defined]
    finally:
        await w.close()
    jn = jn_factory.restart(jn)  # the cache is memory only
    client = JournalNodeClient(jn.rpc)
    try:
        with pytest.raises(CacheMissError, match="txid 1 is not in the edits cache"):
            await client.call(
                "GetJournaledEdits",
                pb.GetJournaledEditsRequest(jid=JID, since_txid=1, max_txns=4),
                T,
            )
    finally:
        await client.close()


async def test_get_journaled_edits_long_poll_waits_for_committed_edits(
    jn_factory: JNFactory,
) -> None:
    jn = jn_factory.start("jn1")
    w = RawWriter(jn, epoch=1)
    reader = JournalNodeClient(jn.rpc)
    try:
        await w.format()
        await w.new_epoch()
        await w.start(1)
        await w.write(1, 1, 8, committed=0)
        poll = asyncio.ensure_future(
            reader.call(
                "GetJournaledEdits",
                pb.GetJournaledEditsRequest(jid=JID, since_txid=9, max_txns=100, wait_ms=20_000),
                30,
            )
        )
        await w.write(1, 9, 2, committed=8)  # written, but not yet reported committed
        assert not poll.done()
        await w.call("Heartbeat", pb.HeartbeatRequest(req=w.req(committed=10)))
        resp = await asyncio.wait_for(poll, 10)  # well before the 20 s long poll ends
        assert resp.txn_count == 2 and resp.committed_txid == 10
        assert resp.edit_log == HEADER + txns(9, 2)
    finally:
        await w.close()
        await reader.close()
