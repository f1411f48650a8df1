"""A real JournalNode answers Hadoop IPC bytes built by hand from the protocol's description."""

from __future__ import annotations

import socket

import pytest

from conftest import JNFactory, JNProcess, snapshot
from hadoop_wire import (
    ERROR,
    FATAL,
    PREAMBLE,
    SUCCESS,
    call,
    connection_context,
    field,
    journal_id,
    parse,
    read_response,
    wait_closed,
)
from raw_writer import JID, RawWriter

T = 10.0


def connect(jn: JNProcess) -> socket.socket:
    """A connection to the node's RPC port."""
    host, port = jn.rpc.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=T)


async def formatted(jn: JNProcess, epoch: int) -> None:
    """Format JID on the node and promise epoch."""
    w = RawWriter(jn, epoch=epoch)
    try:
        await w.format()
        await w.new_epoch()
    finally:
        await w.close()


def get_journal_state(call_id: int, jid: str = JID) -> bytes:
    """A getJournalState call frame: GetJournalStateRequestProto{jid(1)}."""
    return call(call_id, "getJournalState", field(1, journal_id(jid)))


@pytest.mark.slow
async def test_a_hand_built_get_journal_state_call_is_answered(jn_factory: JNFactory) -> None:
    jn = jn_factory.start("jn1")
    await formatted(jn, epoch=3)
    with connect(jn) as s:
        s.sendall(PREAMBLE + connection_context() + get_journal_state(0))
        header, body = read_response(s)
        assert header[1] == 0  # callId
        assert header[2] == SUCCESS
        assert header[3] == 9  # serverIpcVersionNum
        assert body is not None
        state = parse(body)  # GetJournalStateResponseProto
        assert state[1] == 3  # lastPromisedEpoch
        assert state[2] == int(jn.http.rsplit(":", 1)[1])  # httpPort
        assert state[3] == f"http://{jn.http}".encode()  # fromURL
        # a second call on the same connection, another call id
        s.sendall(get_journal_state(7))
        header, body = read_response(s)
        assert (header[1], header[2]) == (7, SUCCESS)
        assert body is not None and parse(body)[1] == 3


@pytest.mark.slow
async def test_unknown_method_is_an_error_and_the_connection_keeps_serving(
    jn_factory: JNFactory,
) -> None:
    jn = jn_factory.start("jn1")
    await formatted(jn, epoch=1)
    with connect(jn) as s:
        s.sendall(PREAMBLE + connection_context() + call(1, "noSuchMethod", b""))
        header, body = read_response(s)
        assert (header[1], header[2]) == (1, ERROR)
        assert header[4] == b"org.apache.hadoop.ipc.RpcNoSuchMethodException"
        assert header[6] == 2  # ERROR_NO_SUCH_METHOD
        assert b"noSuchMethod" in header[5]  # type: ignore[operator]
        assert body is None
        s.sendall(get_journal_state(2))
        header, body = read_response(s)
        assert (header[1], header[2]) == (2, SUCCESS)
        assert body is not None and parse(body)[1] == 1


@pytest.mark.slow
async def test_unknown_journal_is_a_journal_not_formatted_error(jn_factory: JNFactory) -> None:
    jn = jn_factory.start("jn1")
    with connect(jn) as s:
        s.sendall(PREAMBLE + connection_context() + get_journal_state(4, "nosuch"))
        header, _ = read_response(s)
        assert (header[1], header[2]) == (4, ERROR)
        assert header[4] == b"org.apache.hadoop.hdfs.qjournal.protocol.JournalNotFormattedException"
        assert b"journal 'nosuch' is not formatted" in header[5]  # type: ignore[operator]


@pytest.mark.slow
async def test_garbage_after_the_preamble_closes_that_connection_only(
    jn_factory: JNFactory,
) -> None:
    jn = jn_factory.start("jn1")
    await formatted(jn, epoch=2)
    with connect(jn) as bad, connect(jn) as good:
        good.sendall(PREAMBLE + connection_context())
        bad.sendall(PREAMBLE + b"\x00\x00\x00\x10" + b"\xff" * 16)
        sent = wait_closed(bad, T)
        if sent:  # a FATAL answer may come first
            header, _ = read_response_bytes(sent)
            assert header[2] == FATAL
        good.sendall(get_journal_state(0))
        header, body = read_response(good)
        assert header[2] == SUCCESS and body is not None and parse(body)[1] == 2
    with connect(jn) as again:
        again.sendall(PREAMBLE + connection_context() + get_journal_state(0))
        header, _ = read_response(again)
        assert header[2] == SUCCESS


@pytest.mark.slow
async def test_garbage_request_body_is_an_error_naming_the_method(jn_factory: JNFactory) -> None:
    jn = jn_factory.start("jn1")
    await formatted(jn, epoch=1)
    before = snapshot(jn.edits_dir)
    with connect(jn) as s:
        s.sendall(
            PREAMBLE
            + connection_context()
            + call(1, "journal", b"\xff\xff\xff\xff not a protobuf")
            + call(2, "journal", b"")  # parses, but lacks every required field
        )
        for call_id, words in ((1, b"journal"), (2, b"missing required fields: req")):
            header, body = read_response(s)
            assert (header[1], header[2]) == (call_id, ERROR), header
            assert words in header[5], header  # type: ignore[operator]
            assert body is None
        assert snapshot(jn.edits_dir) == before
        s.sendall(get_journal_state(3))  # still serving, on the same connection
        header, body = read_response(s)
        assert header[2] == SUCCESS and body is not None and parse(body)[1] == 1


def read_response_bytes(data: bytes) -> tuple[dict[int, int | bytes], bytes | None]:
    """read_response over bytes already received."""
    a, b = socket.socketpair()
    with a, b:
        a.sendall(data)
        a.shutdown(socket.SHUT_WR)
        return read_response(b)
