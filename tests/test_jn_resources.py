"""A JournalNode's resources and start-up: corrupt files, bad segments, limits, log floods."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import resource
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from conftest import JNFactory
from ports import free_address
from qjm.config import JournalNodeSettings
from qjm.journalnode.node import JournalNode, JournalNodeStartupError
from qjm.logs import RateLimitFilter, setup_logging
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import JournalError, StorageError
from qjm.protocol.qjournal import journal_id
from qjm.testing.wait import wait_until
from raw_writer import JID, JNClient, ns_info, txns
from test_journalnode_server import http_get
from test_syncer import DEADLINE, seg_path, synced_trio_with_segments

NS = ns_info(4242, "CID-resources")
T = 10.0


def http_json(url: str) -> dict[str, object]:
    """GET a JSON document."""
    with urllib.request.urlopen(url, timeout=T) as resp:
        data: dict[str, object] = json.loads(resp.read())
    return data


async def format_journals(rpc: str, *jids: str) -> None:
    """Format journals on one node and promise epoch 1 on each."""
    client = JNClient(rpc)
    try:
        for jid in jids:
            await client.call("format", pb.FormatRequestProto(jid=journal_id(jid), ns_info=NS), T)
            await client.call(
                "newEpoch", pb.NewEpochRequestProto(jid=journal_id(jid), ns_info=NS, epoch=1), T
            )
    finally:
        await client.close()


CORRUPTIONS = {  # test id: (file, contents)
    "VERSION": ("VERSION", b"namespaceID=\xff\xfe\x00\x81garbage\n"),
    "last-promised-epoch": ("last-promised-epoch", b"\x00\xff\xfe\x81\n"),
    # numbers that parse but no writer could have stored (they used to load, then fail
    # every call and /status)
    "promise-2**70": ("last-promised-epoch", b"%d\n" % 2**70),
    "writer-epoch-negative": ("last-writer-epoch", b"-5\n"),
    "committed-negative": ("committed-txid", b"\xff" * 8),
    "paxos/1": ("paxos/1", b"\x32\x08\x01"),  # says 50 bytes follow, holds 2
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CORRUPTIONS))
async def test_one_corrupt_file_does_not_stop_the_node(jn_factory: JNFactory, case: str) -> None:
    name, contents = CORRUPTIONS[case]
    jn = jn_factory.start("jn0")
    await format_journals(jn.rpc, "good", "bad")
    jn_factory.stop(jn)
    bad_file = jn.edits_dir / "bad" / "current" / name
    bad_file.write_bytes(contents)
    jn = jn_factory.start("jn0", jn.rpc, jn.http)
    log = jn.log.read_text()
    assert str(bad_file) in log, log
    assert "UnicodeDecodeError" not in log and "Traceback" not in log, log
    client = JNClient(jn.rpc)
    try:
        good = await client.call(
            "getJournalState", pb.GetJournalStateRequestProto(jid=journal_id("good")), T
        )
        assert good.last_promised_epoch == 1  # type: ignore[attr-defined]
        with pytest.raises(StorageError, match=str(bad_file)):
            await client.call(
                "getJournalState", pb.GetJournalStateRequestProto(jid=journal_id("bad")), T
            )
        st = await client.call("getNodeStatus", pb.GetNodeStatusRequestProto(), T)
    finally:
        await client.close()
    problems = list(st.problems)  # type: ignore[attr-defined]
    assert any(str(bad_file) in p for p in problems), problems
    bad = [j for j in st.journals if j.jid == "bad"]  # type: ignore[attr-defined]
    assert bad and any(str(bad_file) in p for p in bad[0].problems)
    doc = http_json(f"http://{jn.http}/status")
    assert any(str(bad_file) in p for p in doc["problems"])  # type: ignore[union-attr]
    assert doc["journals"]["good"]["last_promised_epoch"] == 1  # type: ignore[index]
    _, page = http_get(f"http://{jn.http}/")
    assert str(bad_file) in page.decode()
    _, metrics = http_get(f"http://{jn.http}/metrics")
    assert "qjm_journalnode_journals_not_served 1.0" in metrics.decode()


def segment_intact(path: Path, original: bytes) -> bool:
    """True when a finalized segment file is back with its original bytes."""
    return path.exists() and path.read_bytes() == original


@pytest.mark.slow
@pytest.mark.parametrize("cut", ["empty", "truncated"])
async def test_a_bad_finalized_segment_is_moved_aside_on_serve_and_repaired(
    jn_factory: JNFactory, cut: str
) -> None:
    jn1, _, jn3 = await synced_trio_with_segments(jn_factory)
    path = seg_path(jn1, 4, 6)
    original = path.read_bytes()
    os.truncate(path, 0 if cut == "empty" else len(original) - 5)
    status, body = http_get(f"http://{jn1.http}/getJournal?jid={JID}&segmentTxId=4")
    assert status != 200, f"served a bad segment: {status} with {len(body)} bytes"
    assert path.name in body.decode(), body
    assert path.with_name(path.name + ".corrupt").exists()
    wait_until("4-6 repaired on jn1", lambda: segment_intact(path, original), timeout_s=DEADLINE)
    assert "moved aside" in jn1.log.read_text()
    assert seg_path(jn3, 4, 6).read_bytes() == original


@pytest.mark.slow
async def test_a_bad_finalized_segment_is_found_at_start_and_repaired(
    jn_factory: JNFactory,
) -> None:
    jn1, _, _ = await synced_trio_with_segments(jn_factory)
    jn_factory.stop(jn1)
    path = seg_path(jn1, 7, 9)
    original = path.read_bytes()
    path.write_bytes(original[:20])
    jn1 = jn_factory.start(jn1.name, jn1.rpc, jn1.http, *jn1.extra)
    assert path.with_name(path.name + ".corrupt").exists() or segment_intact(path, original)
    wait_until("7-9 repaired on jn1", lambda: segment_intact(path, original), timeout_s=DEADLINE)
    log = jn1.log.read_text()
    assert path.name in log and "moved aside" in log, log


@asynccontextmanager
async def node_with(tmp_path: Path, **settings: int) -> AsyncIterator[JournalNode]:
    """An in-process JournalNode on free loopback ports with some settings changed."""
    node = JournalNode(
        tmp_path / "jn",
        ("127.0.0.1", 0),
        ("127.0.0.1", 0),
        JournalNodeSettings(sync_enabled=False, **settings),  # type: ignore[arg-type]
    )
    await node.start()
    try:
        yield node
    finally:
        await node.stop()


def rpc_of(node: JournalNode) -> str:
    """The node's RPC address."""
    return f"127.0.0.1:{node.rpc_port}"


async def test_journals_per_node_are_limited(tmp_path: Path) -> None:
    async with node_with(tmp_path, max_journals=3) as node:
        await format_journals(rpc_of(node), "a", "b", "c")
        with pytest.raises(JournalError, match=r"journalnode\.max_journals.*'d'"):
            await format_journals(rpc_of(node), "d")
        assert not (tmp_path / "jn" / "d" / "current").exists()
        client = JNClient(rpc_of(node))  # the existing ones still serve
        try:
            st = await client.call(
                "getJournalState", pb.GetJournalStateRequestProto(jid=journal_id("a")), T
            )
            assert st.last_promised_epoch == 1  # type: ignore[attr-defined]
        finally:
            await client.close()


async def test_in_flight_request_bytes_are_limited(tmp_path: Path) -> None:
    async with node_with(
        tmp_path, max_inflight_request_bytes=1_000_000, ipc_maximum_data_length=1_000_000
    ) as node:
        await format_journals(rpc_of(node), JID)
        client = JNClient(rpc_of(node))
        serial = iter(range(1, 100))

        def req() -> pb.RequestInfoProto:
            return pb.RequestInfoProto(journal_id=journal_id(JID), epoch=1, ipc_serial=next(serial))

        def batch(first: int) -> pb.JournalRequestProto:
            return pb.JournalRequestProto(
                req=req(),
                segment_txid=1,
                first_txid=first,
                num_txns=3000,
                records=txns(first, 3000),
            )

        release = threading.Event()
        try:
            await client.call(
                "startLogSegment", pb.StartLogSegmentRequestProto(req=req(), txid=1), T
            )
            busy = asyncio.ensure_future(node.run(JID, lambda j: release.wait(20)))
            first = asyncio.ensure_future(client.call("journal", batch(1), T))
            deadline = time.monotonic() + T
            while node.inflight.used == 0:  # the first batch is queued behind the busy thread
                assert time.monotonic() < deadline, "the first batch never arrived"
                await asyncio.sleep(0.01)  # poll interval of a wait bounded by the deadline
            with pytest.raises(JournalError, match=r"journalnode\.max_inflight_request_bytes"):
                await client.call("journal", batch(3001), T)
            release.set()
            await busy
            await first
            assert node.inflight.used == 0
        finally:
            release.set()
            await client.close()


def recv_until_closed(host: str, port: int, send: bytes, timeout: float) -> bytes:
    """Connect, send some bytes, and read until the server closes (or fail after timeout)."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        if send:
            s.sendall(send)
        got = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(4096)
            except TimeoutError:
                break
            except ConnectionResetError:
                return got
            if not chunk:
                return got
            got += chunk
        raise AssertionError(f"the server kept the connection open for {timeout}s: {got!r}")


async def test_idle_and_half_sent_http_connections_close(tmp_path: Path) -> None:
    async with node_with(tmp_path, http_idle_timeout_ms=300) as node:
        port = node.http_port
        started = time.monotonic()
        await asyncio.to_thread(recv_until_closed, "127.0.0.1", port, b"", 5.0)
        await asyncio.to_thread(recv_until_closed, "127.0.0.1", port, b"GET /status HTT", 5.0)
        assert time.monotonic() - started < 4.0


async def test_http_connections_are_capped(tmp_path: Path) -> None:
    async with node_with(tmp_path, http_max_connections=2) as node:
        port = node.http_port
        held = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(2)]
        try:
            deadline = time.monotonic() + T
            while len(node.http_connections()) < 2:
                assert time.monotonic() < deadline, "the held connections never registered"
                await asyncio.sleep(0.01)  # poll interval of a wait bounded by the deadline
            refused = await asyncio.to_thread(
                recv_until_closed, "127.0.0.1", port, b"GET /status HTTP/1.1\r\n\r\n", 5.0
            )
            assert refused.startswith(b"HTTP/1.1 503"), refused
            assert b"journalnode.http_max_connections" in refused
        finally:
            for s in held:
                s.close()
        deadline = time.monotonic() + T
        while node.http_connections():
            assert time.monotonic() < deadline, "closed connections were never released"
            await asyncio.sleep(0.01)  # poll interval of a wait bounded by the deadline
        doc = await asyncio.to_thread(http_json, f"http://127.0.0.1:{port}/status")
        assert doc["journals"] == {}


async def test_rpc_connections_are_capped_idle_ones_closed_and_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Idle RPC connections at journalnode.ipc_max_connections: newcomers are refused with one
    log line, the idle ones close after journalnode.ipc_idle_timeout_ms, an honest call then
    works, and /metrics and /status count it all (design §N.6)."""
    caplog.set_level("INFO", logger="qjm.ipc.server")
    async with node_with(tmp_path, ipc_max_connections=3, ipc_idle_timeout_ms=500) as node:
        port = node.rpc_port
        idle = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(3)]
        try:
            for s in idle:
                s.sendall(b"hrpc\x09\x00\x00")
            deadline = time.monotonic() + T
            while node.ipc_stats()["connections"] < 3:
                assert time.monotonic() < deadline, node.ipc_stats()
                await asyncio.sleep(0.01)  # poll interval of a wait bounded by the deadline
            for _ in range(20):
                refused = await asyncio.to_thread(recv_until_closed, "127.0.0.1", port, b"", 5.0)
                assert refused == b""
            assert node.ipc_stats()["connections_refused"] == 20
            lines = [r.message for r in caplog.records if "refusing RPC connections" in r.message]
            assert len(lines) == 1 and "journalnode.ipc_max_connections" in lines[0], lines
            while node.ipc_stats()["connections_idle_closed"] < 3:
                assert time.monotonic() < deadline, node.ipc_stats()
                await asyncio.sleep(0.01)  # poll interval of a wait bounded by the deadline
            await format_journals(rpc_of(node), "after")  # an honest caller gets through
        finally:
            for s in idle:
                s.close()
        status, body = await asyncio.to_thread(
            http_get, f"http://127.0.0.1:{node.http_port}/metrics"
        )
        text = body.decode()
        assert status == 200
        assert "qjm_journalnode_rpc_connections_refused_total 20.0" in text
        assert "qjm_journalnode_rpc_connections_idle_closed_total 3.0" in text
        assert "qjm_journalnode_rpc_max_connections 3.0" in text
        doc = await asyncio.to_thread(http_json, f"http://127.0.0.1:{node.http_port}/status")
        rpc = doc["rpc"]
        assert isinstance(rpc, dict)
        assert (rpc["connections_refused"], rpc["connections_idle_closed"]) == (20, 3)


def test_repeated_log_lines_are_rate_limited() -> None:
    now = [1000.0]
    limiter = RateLimitFilter(interval=10.0, clock=lambda: now[0])
    out: list[str] = []

    def emit(msg: str) -> None:
        record = logging.LogRecord("qjm.x", logging.ERROR, __file__, 1, msg, None, None)
        if limiter.filter(record):
            out.append(record.getMessage())

    for _ in range(500):  # an accept loop failing at the fd limit
        emit("accept failed: Too many open files")
    emit("another message")
    assert out == ["accept failed: Too many open files", "another message"]
    now[0] += 10.5
    emit("accept failed: Too many open files")
    assert out[-1] == "accept failed: Too many open files (repeated 499 times in the last 10s)"
    for fd in (7, 8):  # asyncio's accept error of two listeners: one line
        emit(f"socket.accept() out of system resource\nsocket: <TransportSocket fd={fd}>")
    assert out[-1].startswith("socket.accept() out of system resource") and len(out) == 4
    # a line between two equal ones makes the second news: a ZKFC's "nn1 is active" after
    # "nn1 is standby" within 10 s (a failover and a failback)
    out.clear()
    for msg in ("nn1 is active", "nn1 is standby", "nn1 is active", "nn1 is active"):
        emit(msg)
    assert out == ["nn1 is active", "nn1 is standby", "nn1 is active"]
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        setup_logging("test")
        assert any(isinstance(f, RateLimitFilter) for f in root.handlers[0].filters)
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)


@pytest.mark.slow
def test_at_the_fd_limit_the_node_logs_little_and_recovers(tmp_path: Path) -> None:
    rpc, http = free_address(), free_address()
    log = tmp_path / "jn.log"
    ready = tmp_path / "ready.json"

    def low_fd_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

    argv = ["journalnode", "--edits-dir", str(tmp_path / "jn"), "--rpc-address", rpc]
    argv += ["--http-address", http, "--ready-file", str(ready)]
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "qjm", *argv],
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=low_fd_limit,
        )
    held: list[socket.socket] = []
    try:
        deadline = time.monotonic() + T
        while not ready.exists():
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the JournalNode never became ready"
            time.sleep(0.02)  # poll interval of a wait bounded by the deadline
        for address in [http] * 80 + [rpc] * 20:  # more than the node has descriptors for
            host, port = address.rsplit(":", 1)
            try:
                held.append(socket.create_connection((host, int(port)), timeout=2))
            except OSError:
                break
        time.sleep(3)  # let the node sit at the limit: its log must not grow with time
        at_limit = log.read_text().count("out of system resource")
        assert at_limit <= 1, log.read_text()
        for s in held:
            s.close()
        held.clear()
        deadline = time.monotonic() + T
        while True:
            try:
                assert http_json(f"http://{http}/status")["journals"] == {}
                break
            except OSError:
                assert time.monotonic() < deadline, "the node never answered again"
                time.sleep(0.1)  # poll interval of a wait bounded by the deadline
        assert "Traceback" not in log.read_text().replace(" | Traceback", "")
    finally:
        for s in held:
            s.close()
        proc.terminate()
        proc.wait(10)


async def test_status_reports_a_busy_journal_instead_of_waiting(tmp_path: Path) -> None:
    async with node_with(tmp_path) as node:
        await format_journals(rpc_of(node), "busy", "idle")
        release = threading.Event()
        stuck = asyncio.ensure_future(node.run("busy", lambda j: release.wait(30)))
        try:
            started = time.monotonic()
            st = await asyncio.wait_for(node.node_status(), 10)
            assert time.monotonic() - started < 5.0
            by_jid = {j.jid: j for j in st.journals}
            assert by_jid["busy"].last_promised_epoch == 1
            assert any("busy" in p for p in by_jid["busy"].problems), by_jid["busy"]
            assert not by_jid["idle"].problems
        finally:
            release.set()
            await stuck


@pytest.mark.parametrize(
    ("settings", "match"),
    [
        ({"max_journals": 0}, "journalnode.max_journals must be positive, got 0"),
        ({"http_idle_timeout_ms": -1}, "journalnode.http_idle_timeout_ms must be positive"),
        ({"max_inflight_request_bytes": 1000}, "larger than journalnode.max_inflight"),
        ({"ipc_max_connections": 0}, "journalnode.ipc_max_connections must be positive"),
        ({"ipc_idle_timeout_ms": 0}, "journalnode.ipc_idle_timeout_ms must be positive"),
        (
            {"ipc_max_unfinished_bytes": 1000},
            "larger than journalnode.ipc_max_unfinished_bytes",
        ),
    ],
)
async def test_limits_that_cannot_work_are_refused_at_start(
    tmp_path: Path, settings: dict[str, int], match: str
) -> None:
    with pytest.raises(JournalNodeStartupError, match=match):
        async with node_with(tmp_path, **settings):
            pass


async def test_an_unexpected_exception_is_an_io_exception_and_a_logged_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from qjm.journalnode.journal import Journal
    from qjm.protocol.qjournal_client import QJournalClient

    def boom(self: Journal, *args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(Journal, "heartbeat", boom)
    async with node_with(tmp_path) as node:
        await format_journals(rpc_of(node), JID)
        client = QJournalClient(rpc_of(node))
        req = pb.RequestInfoProto(journal_id=journal_id(JID), epoch=1, ipc_serial=1)
        try:
            with (
                caplog.at_level(logging.ERROR, logger="qjm.journalnode.rpc"),
                pytest.raises(JournalError) as info,
            ):
                await client.call("heartbeat", pb.HeartbeatRequestProto(req=req), T)
            # the Java class a Hadoop client sees is java.io.IOException (JournalError's)
            assert type(info.value) is JournalError
            assert "internal error in JournalNode serving heartbeat: RuntimeError: boom" in str(
                info.value
            )
            logged = [r for r in caplog.records if r.name == "qjm.journalnode.rpc"]
            assert logged and logged[0].exc_info is not None
            st = await client.call(
                "getJournalState", pb.GetJournalStateRequestProto(jid=journal_id(JID)), T
            )
            assert st.last_promised_epoch == 1  # still serving
        finally:
            await client.close()


async def test_a_frame_over_ipc_maximum_data_length_closes_only_its_connection(
    tmp_path: Path,
) -> None:
    from hadoop_wire import FATAL, PREAMBLE, connection_context, wait_closed
    from test_journalnode_wire import read_response_bytes

    limit = 100_000
    async with node_with(
        tmp_path, ipc_maximum_data_length=limit, max_inflight_request_bytes=limit
    ) as node:
        await format_journals(rpc_of(node), JID)

        def oversized() -> bytes:
            with socket.create_connection(("127.0.0.1", node.rpc_port), timeout=T) as s:
                s.sendall(PREAMBLE + connection_context() + (limit + 1).to_bytes(4, "big"))
                return wait_closed(s, T)

        sent = await asyncio.to_thread(oversized)
        header, _ = read_response_bytes(sent)
        assert header[2] == FATAL
        assert f"exceeds ipc.maximum.data.length {limit}".encode() in header[5]  # type: ignore[operator]
        client = JNClient(rpc_of(node))  # the node still serves
        try:
            st = await client.call(
                "getJournalState", pb.GetJournalStateRequestProto(jid=journal_id(JID)), T
            )
            assert st.last_promised_epoch == 1
        finally:
            await client.close()
