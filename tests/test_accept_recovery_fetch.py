"""accept_recovery's download: a checked URL, a size cap, a deadline, off the journal thread."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import JNFactory
from qjm.editlog.framing import HEADER
from qjm.journalnode.accept_recovery import (
    accept_recovery,
    begin_accept_recovery,
    download,
    finish_accept_recovery,
)
from qjm.journalnode.journal import Journal
from qjm.journalnode.segment_fetch import MAX_FALLBACK_BYTES, size_cap
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import (
    InvalidRequestError,
    SegmentChangedError,
    StaleEpochError,
    StorageError,
)
from raw_writer import JID, JNClient, RawWriter
from test_journal import NS, Writer, open_journal, txns, write

SEG = pb.SegmentStateProto(start_txid=1, end_txid=5, is_in_progress=True)


class Hostile:
    """A loopback HTTP server whose /getJournal answer a test chooses; counts bytes sent."""

    def __init__(self, body: Callable[[BaseHTTPRequestHandler, Hostile], None]) -> None:
        self.sent = 0
        self.stop = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body(self, owner)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, jid: str = "test", txid: int = 1) -> str:
        """A getJournal URL on this server."""
        port = self.server.server_address[1]
        return f"http://127.0.0.1:{port}/getJournal?jid={jid}&segmentTxId={txid}&inProgressOk=true"

    def send(self, handler: BaseHTTPRequestHandler, data: bytes) -> bool:
        """Write bytes; False once the client went away or the test ends."""
        if self.stop.is_set():
            return False
        try:
            handler.wfile.write(data)
            handler.wfile.flush()
        except OSError:
            return False
        self.sent += len(data)
        return True

    def close(self) -> None:
        """Stop serving."""
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()


def headers(handler: BaseHTTPRequestHandler, length: int | None = None) -> None:
    """A 200 with an optional Content-Length."""
    handler.send_response(200)
    handler.send_header("Content-Type", "application/octet-stream")
    if length is not None:
        handler.send_header("Content-Length", str(length))
    handler.end_headers()


# A server that is read to the end sends 64 MiB; one refused early, at most what the
# loopback socket buffers took before the refusal (a few MiB).
def endless_valid(handler: BaseHTTPRequestHandler, srv: Hostile) -> None:
    """A header and then ops for ever, announced as 4 GiB."""
    headers(handler, 4 << 30)
    if not srv.send(handler, HEADER):
        return
    chunk = txns(1, 2000)
    sent = 0
    while sent < (64 << 20) and srv.send(handler, chunk):
        sent += len(chunk)


def garbage(handler: BaseHTTPRequestHandler, srv: Hostile) -> None:
    """No edit-log header: megabytes of zeros, without a Content-Length."""
    headers(handler)
    sent = 0
    while sent < (64 << 20) and srv.send(handler, b"\0" * 65536):
        sent += 65536


def slow_loris(handler: BaseHTTPRequestHandler, srv: Hostile) -> None:
    """A valid start, then one byte every half second for ever."""
    data = HEADER + txns(1, 5)
    headers(handler, len(data))
    srv.send(handler, data[:9])
    for b in data[9:]:
        if srv.stop.wait(0.5) or not srv.send(handler, bytes([b])):
            return


def slow_headers(handler: BaseHTTPRequestHandler, srv: Hostile) -> None:
    """A status line, then a header one byte every half second for ever."""
    srv.send(handler, b"HTTP/1.0 200 OK\r\nX-Slow: ")
    while not srv.stop.wait(0.5) and srv.send(handler, b"z"):
        pass


@pytest.fixture
def prepared(tmp_path: Path) -> Iterator[tuple[Journal, Writer]]:
    """A journal holding 1-3 from epoch 1, promised to epoch 2 and prepared."""
    j = open_journal(tmp_path)
    j.format(NS, force=False)
    j.new_epoch(NS, 1)
    w = Writer(1)
    j.start_log_segment(w.req(), 1, -64)
    write(j, w, 1, 1, 3)
    j.new_epoch(NS, 2)
    w2 = Writer(2)
    j.prepare_recovery(w2.req(), 1)
    yield j, w2
    j.close()


def accept_in_thread(
    j: Journal, req: pb.RequestInfoProto, seg: pb.SegmentStateProto, url: str
) -> list[object]:
    """Run accept_recovery in a thread; the list gets None or the exception."""
    out: list[object] = []

    def run() -> None:
        try:
            accept_recovery(j, req, seg, url)
            out.append(None)
        except Exception as e:
            out.append(e)

    threading.Thread(target=run, daemon=True).start()
    return out


def wait_result(out: list[object], timeout: float) -> object:
    """The thread's result, or fail if it did not finish in time."""
    deadline = time.monotonic() + timeout
    while not out:
        if time.monotonic() > deadline:
            raise AssertionError(f"accept_recovery did not finish within {timeout}s")
        time.sleep(0.02)  # poll interval of a wait bounded by the deadline
    return out[0]


def untouched(j: Journal) -> None:
    """Nothing was accepted: no paxos data, the old 1-3 in place, no download left over."""
    assert j.storage.read_paxos(1) is None
    assert j.highest_written_txid == 3
    assert [p.name for p in j.storage.current.iterdir() if "download" in p.name] == []


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("file:///etc/hostname", "only http and https"),
        ("ftp://127.0.0.1/getJournal?jid=test&segmentTxId=1", "only http and https"),
        ("http://127.0.0.1:1/getJournal?jid=other&segmentTxId=1", "names journal 'other'"),
        ("http://127.0.0.1:1/getJournal?jid=test&segmentTxId=7", "names segment '7'"),
        ("http://127.0.0.1:1/getJournal?segmentTxId=1", "names journal ''"),
    ],
)
def test_accept_recovery_refuses_untrusted_urls(
    prepared: tuple[Journal, Writer], tmp_path: Path, url: str, match: str
) -> None:
    j, w2 = prepared
    local = tmp_path / "local-edits"
    local.write_bytes(HEADER + txns(1, 5))
    url = url.replace("/etc/hostname", str(local))
    with pytest.raises(InvalidRequestError, match=match):
        accept_recovery(j, w2.req(), SEG, url)
    untouched(j)


def test_size_cap_comes_from_the_segment_state() -> None:
    assert size_cap(1, 5, 1234) == 1234
    assert size_cap(1, 1, 0) == 8 + 50 * 1024 * 1024
    assert size_cap(1, 10**6, 0) == MAX_FALLBACK_BYTES


def test_prepare_recovery_reports_the_valid_byte_length(prepared: tuple[Journal, Writer]) -> None:
    j, w2 = prepared
    prep = j.prepare_recovery(w2.req(), 1)
    assert prep.segment_state.byte_length == len(HEADER + txns(1, 3))


def test_a_stream_longer_than_the_segment_is_cut_off(prepared: tuple[Journal, Writer]) -> None:
    j, w2 = prepared
    srv = Hostile(endless_valid)
    try:
        seg = pb.SegmentStateProto()
        seg.CopyFrom(SEG)
        seg.byte_length = len(HEADER + txns(1, 5))
        with pytest.raises(StorageError, match="more than the 308 bytes|announces 4294967296"):
            accept_recovery(j, w2.req(), seg, srv.url())
        assert srv.sent < (16 << 20), f"the server sent {srv.sent} bytes before the refusal"
    finally:
        srv.close()
    untouched(j)


def test_a_source_without_an_edit_log_header_is_refused_early(
    prepared: tuple[Journal, Writer],
) -> None:
    j, w2 = prepared
    srv = Hostile(garbage)
    try:
        with pytest.raises(StorageError, match="did not send an edit log"):
            accept_recovery(j, w2.req(), SEG, srv.url())
        assert srv.sent < (16 << 20), f"the server sent {srv.sent} bytes before the refusal"
    finally:
        srv.close()
    untouched(j)


@pytest.mark.slow
@pytest.mark.parametrize("source", [slow_loris, slow_headers])
def test_a_slow_source_cannot_extend_the_transfer_deadline(
    prepared: tuple[Journal, Writer], source: Callable[[BaseHTTPRequestHandler, Hostile], None]
) -> None:
    j, w2 = prepared
    j.transfer_timeout = 2.0
    srv = Hostile(source)
    try:
        started = time.monotonic()
        out = accept_in_thread(j, w2.req(), SEG, srv.url())
        err = wait_result(out, 10.0)
        assert isinstance(err, StorageError) and "took longer than 2s" in str(err), err
        assert time.monotonic() - started < 6.0
    finally:
        srv.close()
    untouched(j)


def test_a_promise_raised_during_the_download_is_not_overridden(
    prepared: tuple[Journal, Writer], tmp_path: Path
) -> None:
    j, w2 = prepared
    source = tmp_path / "source"
    source.write_bytes(HEADER + txns(1, 5))
    j._fetch = lambda url, dest: dest.write_bytes(source.read_bytes())
    url = "http://peer.invalid/getJournal?jid=test&segmentTxId=1"
    plan = begin_accept_recovery(j, w2.req(), SEG, url)
    j.new_epoch(NS, 3)  # a newer writer while the download runs off the journal thread
    download(j, plan)
    with pytest.raises(StaleEpochError, match="epoch 2 is less than the last promised epoch 3"):
        finish_accept_recovery(j, w2.req(), SEG, plan)
    untouched(j)


def test_a_newer_accept_during_the_download_wins(
    prepared: tuple[Journal, Writer], tmp_path: Path
) -> None:
    j, w2 = prepared
    source = tmp_path / "source"
    source.write_bytes(HEADER + txns(1, 5))
    j._fetch = lambda url, dest: dest.write_bytes(source.read_bytes())
    url = "http://peer.invalid/getJournal?jid=test&segmentTxId=1"
    plan = begin_accept_recovery(j, w2.req(), SEG, url)
    j.new_epoch(NS, 3)
    w3 = Writer(3)
    j.prepare_recovery(w3.req(), 1)
    four = pb.SegmentStateProto(start_txid=1, end_txid=4, is_in_progress=True)
    accept_recovery(j, w3.req(), four, url)
    download(j, plan)
    with pytest.raises(StaleEpochError):
        finish_accept_recovery(j, w2.req(), SEG, plan)
    accepted = j.storage.read_paxos(1)
    assert accepted is not None and accepted.accepted_in_epoch == 3
    assert j.highest_written_txid == 4


def test_a_download_that_went_away_is_not_installed(
    prepared: tuple[Journal, Writer], tmp_path: Path
) -> None:
    j, w2 = prepared
    source = tmp_path / "source"
    source.write_bytes(HEADER + txns(1, 5))
    j._fetch = lambda url, dest: dest.write_bytes(source.read_bytes())
    plan = begin_accept_recovery(
        j, w2.req(), SEG, "http://peer.invalid/getJournal?jid=test&segmentTxId=1"
    )
    download(j, plan)
    assert plan.download is not None
    plan.download.unlink()
    with pytest.raises(SegmentChangedError, match="went away before it was installed"):
        finish_accept_recovery(j, w2.req(), SEG, plan)
    untouched(j)


def http_json(url: str) -> dict[str, object]:
    """GET a JSON document."""
    with urllib.request.urlopen(url, timeout=5) as resp:
        data: dict[str, object] = json.loads(resp.read())
    return data


@pytest.mark.slow
async def test_a_stuck_download_blocks_neither_status_nor_shutdown(jn_factory: JNFactory) -> None:
    jn = jn_factory.start("jn0")
    w = RawWriter(jn, epoch=1)
    srv = Hostile(slow_loris)
    try:
        await w.format()
        await w.new_epoch()
        await w.start(1)
        await w.write(1, 1, 3)
        r = RawWriter(jn, epoch=2)
        await r.new_epoch()
        await r.call("prepareRecovery", pb.PrepareRecoveryRequestProto(req=r.req(), segment_txid=1))
        accept = asyncio.create_task(
            r.call(
                "acceptRecovery",
                pb.AcceptRecoveryRequestProto(
                    req=r.req(), state_to_accept=SEG, from_url=srv.url(JID)
                ),
            )
        )
        deadline = time.monotonic() + 10
        while srv.sent < 9:  # the download has begun
            assert time.monotonic() < deadline, "the node never fetched from the source"
            await asyncio.sleep(0.02)  # poll interval of a wait bounded by the deadline
        started = time.monotonic()
        client = JNClient(jn.rpc)
        try:
            st = await client.call("getNodeStatus", pb.GetNodeStatusRequestProto(), 5.0)
        finally:
            await client.close()
        assert [j.jid for j in st.journals] == [JID]  # type: ignore[attr-defined]
        doc = await asyncio.to_thread(http_json, f"http://{jn.http}/status")
        assert JID in doc["journals"]  # type: ignore[operator]
        assert time.monotonic() - started < 4.0, "status waited for the download"
        assert not accept.done()
        started = time.monotonic()
        await asyncio.to_thread(jn_factory.stop, jn)
        assert time.monotonic() - started < 8.0, "shutdown waited for the download"
        with pytest.raises(Exception):  # noqa: B017 - cancelled or unavailable, either is fine
            await asyncio.wait_for(accept, 10)
    finally:
        srv.close()
        await w.close()


@pytest.mark.slow
async def test_accepting_from_the_nodes_own_url_does_not_deadlock(jn_factory: JNFactory) -> None:
    jn = jn_factory.start("jn0")
    w = RawWriter(jn, epoch=1)
    try:
        await w.format()
        await w.new_epoch()
        await w.start(1)
        await w.write(1, 1, 5)
        r = RawWriter(jn, epoch=2)
        await r.new_epoch()
        prep = await r.call(
            "prepareRecovery", pb.PrepareRecoveryRequestProto(req=r.req(), segment_txid=1)
        )
        own = f"http://{jn.http}/getJournal?jid={JID}&segmentTxId=1&inProgressOk=true"
        started = time.monotonic()
        try:
            await r.call(
                "acceptRecovery",
                pb.AcceptRecoveryRequestProto(
                    req=r.req(),
                    state_to_accept=prep.segment_state,  # type: ignore[attr-defined]
                    from_url=own,
                ),
            )
        except Exception as e:  # failing fast with a clear message is also acceptable
            assert "getJournal" in str(e) or "segment" in str(e), e
        assert time.monotonic() - started < 5.0, "accepting from the own URL hung"
        await r.close()
    finally:
        await w.close()
