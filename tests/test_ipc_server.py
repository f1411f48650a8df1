"""IpcServer against hand-built bytes on raw sockets: calls, errors, bad peers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from google.protobuf.empty_pb2 import Empty
from google.protobuf.wrappers_pb2 import BytesValue, StringValue, UInt32Value

from qjm.errors import QjmError
from qjm.ipc import CallContext, IpcClient, IpcServer, Method, RemoteError
from qjm.ipc.proto.IpcConnectionContext_pb2 import IpcConnectionContextProto, UserInformationProto
from qjm.ipc.proto.ProtobufRpcEngine_pb2 import RequestHeaderProto
from qjm.ipc.proto.RpcHeader_pb2 import RpcRequestHeaderProto, RpcResponseHeaderProto

PROTOCOL = "org.example.EchoProtocol"
CLIENT_ID = b"fedcba9876543210"
SUCCESS, ERROR, FATAL = 0, 1, 2
R = RpcResponseHeaderProto


def varint(n: int) -> bytes:
    out = b""
    while True:
        low = n & 0x7F
        n >>= 7
        if not n:
            return out + bytes((low,))
        out += bytes((low | 0x80,))


def frame(*parts: bytes) -> bytes:
    payload = b"".join(varint(len(p)) + p for p in parts)
    return len(payload).to_bytes(4, "big") + payload


def context_frame(user: str = "bob", protocol: str = PROTOCOL) -> bytes:
    header = RpcRequestHeaderProto(rpcKind=2, rpcOp=0, callId=-3, clientId=CLIENT_ID, retryCount=-1)
    ctx = IpcConnectionContextProto(
        userInfo=UserInformationProto(effectiveUser=user), protocol=protocol
    )
    return frame(header.SerializeToString(), ctx.SerializeToString())


def call_frame(
    call_id: int, method: str, body: bytes, protocol: str = PROTOCOL, retry: int = 0
) -> bytes:
    header = RpcRequestHeaderProto(
        rpcKind=2, rpcOp=0, callId=call_id, clientId=CLIENT_ID, retryCount=retry
    )
    rh = RequestHeaderProto(
        methodName=method, declaringClassProtocolName=protocol, clientProtocolVersion=1
    )
    return frame(header.SerializeToString(), rh.SerializeToString(), body)


def parse_delimited(buf: bytes, pos: int) -> tuple[bytes, int]:
    n, shift, length = pos, 0, 0
    while True:
        b = buf[n]
        n += 1
        length |= (b & 0x7F) << shift
        shift += 7
        if b < 128:
            break
    assert n + length <= len(buf), "delimited message overruns the frame"
    return buf[n : n + length], n + length


class Raw:
    """A raw connection to the server speaking bytes we build by hand."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, port: int, preamble: bytes = b"hrpc\x09\x00\x00") -> Raw:
        async with asyncio.timeout(5):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(preamble)
        return cls(reader, writer)

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        async with asyncio.timeout(5):
            await self.writer.drain()

    async def response(self) -> tuple[RpcResponseHeaderProto, bytes, bytes]:
        """(header, bytes after the header, whole payload) of the next response frame."""
        async with asyncio.timeout(5):
            length = int.from_bytes(await self.reader.readexactly(4), "big")
            payload = await self.reader.readexactly(length)
        raw_header, pos = parse_delimited(payload, 0)
        return RpcResponseHeaderProto.FromString(raw_header), payload[pos:], payload

    async def closed_by_server(self) -> bool:
        async with asyncio.timeout(5):
            return await self.reader.read() == b""

    def close(self) -> None:
        self.writer.close()


class Recorder:
    def __init__(self) -> None:
        self.contexts: list[CallContext] = []
        self.started: list[str] = []
        self.gates: dict[str, asyncio.Event] = {}
        self.any_started = asyncio.Event()


@pytest.fixture
async def served() -> AsyncIterator[tuple[IpcServer, Recorder]]:
    rec = Recorder()

    async def echo(req: Any, ctx: CallContext) -> StringValue:
        rec.contexts.append(ctx)
        return StringValue(value=req.value)

    async def gated(req: Any, ctx: CallContext) -> StringValue:
        rec.started.append(req.value)  # the synchronous part: runs in arrival order
        rec.any_started.set()
        gate = rec.gates.setdefault(req.value, asyncio.Event())
        await gate.wait()
        return StringValue(value=req.value)

    class NotFound(QjmError):
        java_class = "java.io.FileNotFoundException"

    async def fail(req: Any, ctx: CallContext) -> StringValue:
        if req.value == "java":
            raise NotFound("no such file /x")
        if req.value == "mapped":
            raise KeyError("k")
        if req.value == "qjm":
            raise QjmError("plain qjm failure")
        raise ValueError("unexpected bug")

    def mapper(exc: BaseException) -> tuple[str, str]:
        if isinstance(exc, KeyError):
            return "org.apache.hadoop.ipc.StandbyException", "mapped: " + str(exc)
        raise exc

    async def size(req: Any, ctx: CallContext) -> UInt32Value:
        return UInt32Value(value=len(req.value))

    server = IpcServer(name="test", max_data_length=4096, error_mapper=mapper)
    server.register(
        PROTOCOL,
        {
            "echo": Method(StringValue, echo),
            "gated": Method(StringValue, gated),
            "fail": Method(StringValue, fail),
            "size": Method(BytesValue, size),
        },
    )
    await server.start("127.0.0.1", 0)
    try:
        yield server, rec
    finally:
        await server.stop()


async def good_call_works(server: IpcServer) -> None:
    """A fresh connection is served: the server survived whatever came before."""
    client = IpcClient(f"127.0.0.1:{server.port}", PROTOCOL, user="carol")
    try:
        reply = await client.call("echo", StringValue(value="still here"), StringValue, timeout=5)
        assert reply.value == "still here"
    finally:
        await client.close()


async def test_hand_built_call_gets_a_hand_parsed_response(
    served: tuple[IpcServer, Recorder],
) -> None:
    server, rec = served
    raw = await Raw.open(server.port)
    try:
        await raw.send(context_frame() + call_frame(7, "echo", b"\x0a\x03abc", retry=2))
        header, rest, payload = await raw.response()
        # Parse the header bytes by hand: callId(1)=7, status(2)=0, serverIpcVersionNum(3)=9,
        # clientId(7), retryCount(8) zigzag(2)=4.
        raw_header, _ = parse_delimited(payload, 0)
        assert raw_header == b"\x08\x07\x10\x00\x18\x09\x3a\x10" + CLIENT_ID + b"\x40\x04"
        body, end = parse_delimited(rest, 0)
        assert body == b"\x0a\x03abc" and end == len(rest)
        assert header.callId == 7 and header.status == SUCCESS
        ctx = rec.contexts[0]
        assert (
            ctx.protocol,
            ctx.method,
            ctx.user,
            ctx.client_id,
            ctx.call_id,
            ctx.retry_count,
        ) == (
            PROTOCOL,
            "echo",
            "bob",
            CLIENT_ID,
            7,
            2,
        )
        assert ctx.peer.startswith("127.0.0.1:")
    finally:
        raw.close()


async def test_ping_is_ignored_and_the_next_call_answered(
    served: tuple[IpcServer, Recorder],
) -> None:
    server, _ = served
    raw = await Raw.open(server.port)
    try:
        ping = RpcRequestHeaderProto(
            rpcKind=2, rpcOp=0, callId=-4, clientId=CLIENT_ID, retryCount=-1
        )
        await raw.send(
            context_frame() + frame(ping.SerializeToString()) + call_frame(1, "echo", b"")
        )
        header, _, _ = await raw.response()
        assert (header.callId, header.status) == (1, SUCCESS)
    finally:
        raw.close()


async def test_unknown_protocol_and_method_are_errors_and_the_connection_is_kept(
    served: tuple[IpcServer, Recorder],
) -> None:
    server, _ = served
    raw = await Raw.open(server.port)
    try:
        await raw.send(context_frame() + call_frame(1, "echo", b"", protocol="org.example.Nope"))
        header, _, _ = await raw.response()
        assert header.status == ERROR and header.callId == 1
        assert header.exceptionClassName == "org.apache.hadoop.ipc.RpcNoSuchProtocolException"
        assert header.errorDetail == R.ERROR_NO_SUCH_PROTOCOL
        assert "org.example.Nope" in header.errorMsg
        assert header.serverIpcVersionNum == 9 and header.clientId == CLIENT_ID

        await raw.send(call_frame(2, "noSuchMethod", b""))
        header, _, _ = await raw.response()
        assert header.status == ERROR and header.callId == 2
        assert header.exceptionClassName == "org.apache.hadoop.ipc.RpcNoSuchMethodException"
        assert header.errorDetail == R.ERROR_NO_SUCH_METHOD
        assert "noSuchMethod" in header.errorMsg

        await raw.send(call_frame(3, "echo", b"\x0a\x02ok"))
        header, rest, _ = await raw.response()
        assert (header.callId, header.status) == (3, SUCCESS)
        assert StringValue.FromString(parse_delimited(rest, 0)[0]).value == "ok"
    finally:
        raw.close()
    assert server.stats()["errors"] == 2


async def test_undecodable_request_body_is_an_error_naming_the_method(
    served: tuple[IpcServer, Recorder],
) -> None:
    server, _ = served
    raw = await Raw.open(server.port)
    try:
        await raw.send(context_frame() + call_frame(5, "echo", b"\x0a\x50short"))
        header, _, _ = await raw.response()
        assert header.status == ERROR and header.callId == 5
        assert header.errorDetail == R.ERROR_RPC_SERVER
        assert "echo" in header.errorMsg and "StringValue" in header.errorMsg
        await raw.send(call_frame(6, "echo", b""))
        header, _, _ = await raw.response()
        assert (header.callId, header.status) == (6, SUCCESS)
    finally:
        raw.close()


async def test_frame_over_the_limit_is_fatal_and_closes_only_that_connection(
    served: tuple[IpcServer, Recorder],
) -> None:
    server, _ = served
    bystander = await Raw.open(server.port)
    await bystander.send(context_frame())
    raw = await Raw.open(server.port)
    try:
        await raw.send(context_frame() + (4097).to_bytes(4, "big") + b"x" * 100)
        header, _, _ = await raw.response()
        assert header.status == FATAL
        assert header.callId == 2**32 - 1  # -1: no call id known
        assert "RPC frame of 4097 bytes exceeds ipc.maximum.data.length 4096" in header.errorMsg
        assert header.errorDetail == R.FATAL_INVALID_RPC_HEADER
        assert await raw.closed_by_server()
        # the other connection is untouched
        await bystander.send(call_frame(1, "echo", b""))
        reply, _, _ = await bystander.response()
        assert reply.status == SUCCESS
    finally:
        raw.close()
        bystander.close()
    await good_call_works(server)
    assert server.stats()["fatal"] == 1


async def test_frame_at_the_limit_is_served(served: tuple[IpcServer, Recorder]) -> None:
    server, _ = served
    raw = await Raw.open(server.port)
    try:
        size = 4096
        while (
            len(big := call_frame(1, "size", BytesValue(value=b"y" * size).SerializeToString()))
            > 4100
        ):
            size -= 1
        assert len(big) == 4 + 4096  # exactly ipc.maximum.data.length
        await raw.send(context_frame() + big)
        header, rest, _ = await raw.response()
        assert header.status == SUCCESS
        assert UInt32Value.FromString(parse_delimited(rest, 0)[0]).value == size
    finally:
        raw.close()


async def test_truncated_frame_then_close_leaves_the_server_fine(
    served: tuple[IpcServer, Recorder],
) -> None:
    server, _ = served
    raw = await Raw.open(server.port)
    whole = call_frame(1, "echo", b"\x0a\x05hello")
    await raw.send(context_frame() + whole[: len(whole) // 2])
    raw.writer.close()
    async with asyncio.timeout(5):
        await raw.writer.wait_closed()
    await good_call_works(server)


async def test_garbage_after_the_preamble_is_fatal_and_closed(
    served: tuple[IpcServer, Recorder],
) -> None:
    server, _ = served
    raw = await Raw.open(server.port)
    try:
        await raw.send(frame(b"\xff\xff\xff garbage that is no header"))
        header, _, _ = await raw.response()
        assert header.status == FATAL and header.callId == 2**32 - 1
        assert header.errorDetail == R.FATAL_INVALID_RPC_HEADER
        assert "malformed RPC request header" in header.errorMsg
        assert await raw.closed_by_server()
    finally:
        raw.close()
    # unframed garbage: its first 4 bytes read as a huge length
    raw = await Raw.open(server.port)
    try:
        await raw.send(b"GARBAGE GARBAGE GARBAGE")
        header, _, _ = await raw.response()
        assert header.status == FATAL
        assert await raw.closed_by_server()
    finally:
        raw.close()
    await good_call_works(server)


@pytest.mark.parametrize(
    ("preamble", "class_name"),
    [
        (b"hello!!!", "org.apache.hadoop.ipc.RpcServerException"),
        (b"hrpX", "org.apache.hadoop.ipc.RpcServerException"),  # refused before 7 bytes
        (b"hrpc\x08\x00\x00", "org.apache.hadoop.ipc.RPC$VersionMismatch"),
        (b"hrpc\x09\x00\xdf", "org.apache.hadoop.security.AccessControlException"),
    ],
)
async def test_bad_preamble_is_fatal_and_closed(
    served: tuple[IpcServer, Recorder], preamble: bytes, class_name: str
) -> None:
    server, _ = served
    raw = await Raw.open(server.port, preamble=preamble)
    try:
        header, _, _ = await raw.response()
        assert header.status == FATAL and header.exceptionClassName == class_name
        assert await raw.closed_by_server()
    finally:
        raw.close()
    await good_call_works(server)


async def test_a_call_before_the_connection_context_is_fatal(
    served: tuple[IpcServer, Recorder],
) -> None:
    server, _ = served
    raw = await Raw.open(server.port)
    try:
        await raw.send(call_frame(0, "echo", b""))
        header, _, _ = await raw.response()
        assert header.status == FATAL and "Connection context not established" in header.errorMsg
        assert await raw.closed_by_server()
    finally:
        raw.close()


async def test_sasl_call_id_is_fatal_unauthorized(served: tuple[IpcServer, Recorder]) -> None:
    server, _ = served
    raw = await Raw.open(server.port)
    try:
        sasl = RpcRequestHeaderProto(rpcKind=2, rpcOp=0, callId=-33, clientId=b"", retryCount=-1)
        await raw.send(frame(sasl.SerializeToString(), b""))
        header, _, _ = await raw.response()
        assert header.status == FATAL and header.errorDetail == R.FATAL_UNAUTHORIZED
        assert await raw.closed_by_server()
    finally:
        raw.close()


async def test_responses_leave_out_of_order_and_handlers_start_in_arrival_order(
    served: tuple[IpcServer, Recorder],
) -> None:
    server, rec = served
    raw = await Raw.open(server.port)
    try:
        names = [f"c{i}" for i in range(20)]
        for name in names:
            rec.gates[name] = asyncio.Event()
        await raw.send(
            context_frame()
            + b"".join(
                call_frame(i, "gated", StringValue(value=n).SerializeToString())
                for i, n in enumerate(names)
            )
        )
        for expected in reversed(range(20)):
            rec.gates[names[expected]].set()
            header, rest, _ = await raw.response()
            assert header.callId == expected
            assert StringValue.FromString(parse_delimited(rest, 0)[0]).value == names[expected]
        assert rec.started == names
    finally:
        raw.close()


async def test_handler_exceptions_become_error_responses(
    served: tuple[IpcServer, Recorder],
) -> None:
    server, _ = served
    client = IpcClient(f"127.0.0.1:{server.port}", PROTOCOL)
    try:
        cases = {
            "java": ("java.io.FileNotFoundException", "no such file /x"),
            "mapped": ("org.apache.hadoop.ipc.StandbyException", "mapped: 'k'"),
            "qjm": ("java.io.IOException", "plain qjm failure"),
            "bug": ("java.io.IOException", "unexpected bug"),
        }
        for value, (class_name, message) in cases.items():
            with pytest.raises(RemoteError) as info:
                await client.call("fail", StringValue(value=value), StringValue, timeout=5)
            assert info.value.class_name == class_name
            assert info.value.message == message
            assert info.value.error_code == R.ERROR_APPLICATION
            assert not info.value.fatal
            assert "fail" in str(info.value) and client.address in str(info.value)
        # the connection is still good
        reply = await client.call("echo", StringValue(value="x"), StringValue, timeout=5)
        assert reply.value == "x"
    finally:
        await client.close()


async def test_max_connections_refuses_the_extra_connection() -> None:
    server = IpcServer(max_connections=1)

    async def echo(req: Any, ctx: CallContext) -> StringValue:
        return StringValue(value=req.value)

    server.register(PROTOCOL, {"echo": Method(StringValue, echo)})
    await server.start("127.0.0.1", 0)
    try:
        first = await Raw.open(server.port)
        await first.send(context_frame() + call_frame(1, "echo", b""))
        assert (await first.response())[0].status == SUCCESS
        second = await Raw.open(server.port)
        assert await second.closed_by_server()
        second.close()
        assert server.stats()["connections_refused"] == 1
        first.close()
    finally:
        await server.stop()


async def test_idle_connection_is_closed() -> None:
    server = IpcServer(idle_timeout_s=0.05)
    await server.start("127.0.0.1", 0)
    try:
        raw = await Raw.open(server.port)
        await raw.send(context_frame())
        assert await raw.closed_by_server()
        raw.close()
    finally:
        await server.stop()


async def test_stats_count_traffic(served: tuple[IpcServer, Recorder]) -> None:
    server, _ = served
    await good_call_works(server)
    stats = server.stats()
    assert stats["calls"] == 1 and stats["errors"] == 0 and stats["fatal"] == 0
    assert stats["bytes_in"] > 0 and stats["bytes_out"] > 0
    assert stats["connections_total"] == 1


async def test_stop_closes_connections_and_cancels_handlers(
    served: tuple[IpcServer, Recorder],
) -> None:
    server, rec = served
    raw = await Raw.open(server.port)
    await raw.send(context_frame() + call_frame(1, "gated", b"\x0a\x01z"))
    async with asyncio.timeout(5):
        await rec.any_started.wait()
    assert server.stats()["calls_running"] == 1
    await server.stop()
    assert await raw.closed_by_server()
    assert server.stats()["calls_running"] == 0
    raw.close()


async def test_close_connection_operation_closes_quietly(
    served: tuple[IpcServer, Recorder],
) -> None:
    server, _ = served
    raw = await Raw.open(server.port)
    try:
        bye = RpcRequestHeaderProto(rpcKind=2, rpcOp=2, callId=9, clientId=CLIENT_ID, retryCount=0)
        await raw.send(context_frame() + frame(bye.SerializeToString()))
        assert await raw.closed_by_server()  # no response frame, just the close
    finally:
        raw.close()
    assert server.stats()["fatal"] == 0
    await good_call_works(server)


async def test_retry_count_and_other_client_id_are_echoed(
    served: tuple[IpcServer, Recorder],
) -> None:
    server, _ = served
    raw = await Raw.open(server.port)
    try:
        other = RpcRequestHeaderProto(
            rpcKind=2, rpcOp=0, callId=300, clientId=b"another-client-1", retryCount=3
        )
        rh = RequestHeaderProto(
            methodName="echo", declaringClassProtocolName=PROTOCOL, clientProtocolVersion=1
        )
        await raw.send(
            context_frame() + frame(other.SerializeToString(), rh.SerializeToString(), b"")
        )
        header, _, _ = await raw.response()
        assert (header.callId, header.retryCount, header.clientId) == (300, 3, b"another-client-1")
    finally:
        raw.close()


async def test_request_header_without_required_fields_is_fatal(
    served: tuple[IpcServer, Recorder],
) -> None:
    server, _ = served
    raw = await Raw.open(server.port)
    try:
        no_call_id = b"\x08\x02\x10\x00\x22\x10" + CLIENT_ID  # rpcKind, rpcOp, clientId only
        await raw.send(context_frame() + frame(no_call_id, b"", b""))
        header, _, _ = await raw.response()
        assert header.status == FATAL and "callId" in header.errorMsg
        assert await raw.closed_by_server()
    finally:
        raw.close()


async def test_method_header_without_required_fields_is_an_error(
    served: tuple[IpcServer, Recorder],
) -> None:
    server, _ = served
    raw = await Raw.open(server.port)
    try:
        header = RpcRequestHeaderProto(
            rpcKind=2, rpcOp=0, callId=4, clientId=CLIENT_ID, retryCount=0
        )
        only_name = RequestHeaderProto(methodName="echo").SerializePartialToString()
        await raw.send(context_frame() + frame(header.SerializeToString(), only_name, b""))
        reply, _, _ = await raw.response()
        assert reply.status == ERROR and reply.callId == 4
        assert "declaringClassProtocolName" in reply.errorMsg
        await raw.send(call_frame(5, "echo", b""))
        reply, _, _ = await raw.response()
        assert (reply.callId, reply.status) == (5, SUCCESS)
    finally:
        raw.close()


async def test_random_bytes_never_hurt_the_server(
    served: tuple[IpcServer, Recorder], caplog: pytest.LogCaptureFixture
) -> None:
    """Seeded garbage in many shapes: each connection ends cleanly, the server keeps serving."""
    import random

    server, _ = served
    rng = random.Random(9)

    def garbage() -> bytes:
        kind = rng.randrange(5)
        blob = rng.randbytes(rng.randrange(0, 300))
        if kind == 0:  # unframed bytes right after the preamble
            return blob
        if kind == 1:  # a well-framed payload of random bytes
            return frame(blob)
        if kind == 2:  # a valid header, then random method header and body
            header = RpcRequestHeaderProto(
                rpcKind=2, rpcOp=0, callId=rng.randrange(0, 1000), clientId=CLIENT_ID
            ).SerializeToString()
            return frame(header, blob[:50], blob[50:])
        if kind == 3:  # a valid call with a random body
            return call_frame(rng.randrange(0, 1000), rng.choice(["echo", "size"]), blob)
        whole = call_frame(1, "echo", b"\x0a\x01a")  # a valid call, cut anywhere
        return whole[: rng.randrange(0, len(whole))]

    async def one() -> None:
        raw = await Raw.open(server.port)
        try:
            raw.writer.write(context_frame() + garbage())
            raw.writer.write_eof()
            async with asyncio.timeout(5):
                while await raw.reader.read(65536):
                    pass  # until the server has handled everything and closed
        finally:
            raw.close()

    for _ in range(10):
        await asyncio.gather(*(one() for _ in range(20)))
    await good_call_works(server)
    assert not [r for r in caplog.records if "internal error" in r.getMessage()]
    for _ in range(1000):  # the last client's close reaches the server a few loop turns later
        if server.stats()["connections"] == 0:
            break
        await asyncio.sleep(0)
    assert server.stats()["connections"] == 0


async def test_empty_declaring_protocol_means_the_connection_protocol(
    served: tuple[IpcServer, Recorder],
) -> None:
    server, _ = served
    header = RpcRequestHeaderProto(rpcKind=2, rpcOp=0, callId=1, clientId=CLIENT_ID, retryCount=0)
    rh = RequestHeaderProto(
        methodName="echo", declaringClassProtocolName="", clientProtocolVersion=1
    )
    call = frame(header.SerializeToString(), rh.SerializeToString(), b"\x0a\x01q")
    for protocol, status in (
        (PROTOCOL, SUCCESS),
        ("org.example.Other", ERROR),
        (PROTOCOL, SUCCESS),
    ):
        raw = await Raw.open(server.port)
        try:
            await raw.send(context_frame(protocol=protocol) + call)
            reply, _, _ = await raw.response()
            assert reply.status == status, protocol
        finally:
            raw.close()


async def test_http_request_on_the_ipc_port_gets_a_plain_text_answer(
    served: tuple[IpcServer, Recorder],
) -> None:
    server, _ = served
    raw = await Raw.open(server.port, preamble=b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    try:
        async with asyncio.timeout(5):
            answer = await raw.reader.read()
        assert answer.startswith(b"HTTP/1.1 404 Not Found")
        assert b"HTTP request to a Hadoop IPC port" in answer
    finally:
        raw.close()
    await good_call_works(server)


# What Hadoop 3.4.1's FsShell (`hadoop fs -ls hdfs://host:port/tmp`) sent to a listening socket:
# preamble, connection context (user root, callerContext "CLI"), getFileInfo{src="/tmp"}.
GENUINE_CLIENT_ID = bytes.fromhex("c5f56b05a41d4d82b1430ccca17eb633")
GENUINE_HADOOP_CLIENT_BYTES = bytes.fromhex(
    "68727063090000"  # hrpc, version 9, service class 0, auth NONE
    # context frame
    "0000005b210802100018052210c5f56b05a41d4d82b1430ccca17eb63328013a050a03434c493812060a0472"
    "6f6f741a2e6f72672e6170616368652e6861646f6f702e686466732e70726f746f636f6c2e436c69656e7450"
    "726f746f636f6c"
    # call frame
    "00000069210802100018002210c5f56b05a41d4d82b1430ccca17eb63328003a050a03434c493f0a0b676574"
    "46696c65496e666f122e6f72672e6170616368652e6861646f6f702e686466732e70726f746f636f6c2e436c"
    "69656e7450726f746f636f6c1801060a042f746d70"
)


async def test_genuine_hadoop_client_bytes_are_served() -> None:
    seen: list[tuple[str, CallContext]] = []

    async def get_file_info(req: Any, ctx: CallContext) -> Empty:
        seen.append((req.value, ctx))
        return Empty()  # GetFileInfoResponseProto without fs: "No such file or directory"

    server = IpcServer()
    client_protocol = "org.apache.hadoop.hdfs.protocol.ClientProtocol"
    server.register(client_protocol, {"getFileInfo": Method(StringValue, get_file_info)})
    await server.start("127.0.0.1", 0)
    raw = await Raw.open(server.port, preamble=b"")
    try:
        await raw.send(GENUINE_HADOOP_CLIENT_BYTES)
        header, rest, _ = await raw.response()
        assert (header.callId, header.status, header.clientId) == (0, SUCCESS, GENUINE_CLIENT_ID)
        assert parse_delimited(rest, 0) == (b"", 1)
        (src, ctx), *_ = seen
        assert (src, ctx.user, ctx.protocol, ctx.method, ctx.client_id, ctx.retry_count) == (
            "/tmp",
            "root",
            client_protocol,
            "getFileInfo",
            GENUINE_CLIENT_ID,
            0,
        )
    finally:
        raw.close()
        await server.stop()


# ---- connections and memory (design §N.6) ----------------------------------------------------


@pytest.mark.parametrize(
    ("events", "lines"),
    [
        # (time of each event), (count a line logged then stands for, or None)
        ([0.0], [1]),
        ([0.0, 1.0, 2.0], [1, None, None]),
        ([0.0, 1.0, 61.0], [1, None, 2]),  # 60 s apart: a new episode, naming the held one
        ([0.0, 1.0, 59.0, 118.0], [1, None, None, None]),  # one episode, under 600 s
        ([0.0, *range(30, 630, 30)], [1, *[None] * 19, 20]),  # a line per 600 s it goes on
        ([0.0, 1.0, 2.0, 100.0], [1, None, None, 3]),  # the line names the held ones
    ],
)
def test_episode_log_says_one_line_per_episode(
    events: list[float], lines: list[int | None]
) -> None:
    from qjm.ipc.server import EpisodeLog

    ep = EpisodeLog()
    assert [ep.note(t) for t in events] == lines


@pytest.mark.parametrize(
    ("wanted", "soft", "hard", "cap"),
    [
        (100, 1024, 4096, (100, 1024)),  # room already
        (1024, 1024, 4096, (1024, 2048)),  # the soft limit is raised
        (1024, 1024, 1024, (512, 1024)),  # no room: half the descriptors
        (8192, 1024, -1, (8192, 16384)),  # no hard limit
        (8192, -1, -1, (8192, -1)),
        (10, 1, 1, (1, 1)),
    ],
)
def test_connection_cap_leaves_half_the_descriptors(
    wanted: int, soft: int, hard: int, cap: tuple[int, int]
) -> None:
    from qjm.ipc.server import connection_cap

    assert connection_cap(wanted, soft, hard) == cap


async def wait_stat(server: IpcServer, key: str, value: int, within: float = 10.0) -> None:
    """Wait until server.stats()[key] reaches value."""
    deadline = asyncio.get_running_loop().time() + within
    while server.stats()[key] < value:
        assert asyncio.get_running_loop().time() < deadline, (key, server.stats())
        await asyncio.sleep(0.01)  # poll interval of a bounded wait


def limited_server(**limits: Any) -> IpcServer:
    async def echo(req: Any, ctx: CallContext) -> StringValue:
        return StringValue(value=req.value)

    server = IpcServer(
        name="limited",
        limit_keys={
            "max_connections": "test.ipc_max_connections",
            "idle_timeout": "test.ipc_idle_timeout_ms",
            "max_unfinished_bytes": "test.ipc_max_unfinished_bytes",
        },
        **limits,
    )
    server.register(PROTOCOL, {"echo": Method(StringValue, echo)})
    return server


async def test_idle_connections_at_the_cap_give_way_to_honest_calls(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Idle connections fill the cap: newcomers are refused (one log line for them all) until
    the idle ones are closed; then an honest call goes through."""
    server = limited_server(max_connections=4, idle_timeout_s=0.5)
    await server.start("127.0.0.1", 0)
    caplog.set_level("INFO", logger="qjm.ipc.server")
    idle = [await Raw.open(server.port) for _ in range(4)]
    try:
        await wait_stat(server, "connections_total", 4)
        extra = [await Raw.open(server.port) for _ in range(10)]
        for raw in extra:
            assert await raw.closed_by_server()
            raw.close()
        assert server.stats()["connections_refused"] == 10
        refusals = [r for r in caplog.records if "refusing RPC connections" in r.message]
        assert len(refusals) == 1, [r.message for r in refusals]
        assert "test.ipc_max_connections" in refusals[0].message
        await wait_stat(server, "connections_idle_closed", 4)
        for raw in idle:
            assert await raw.closed_by_server()
        closes = [r for r in caplog.records if "closing RPC connections idle" in r.message]
        assert len(closes) == 1 and "test.ipc_idle_timeout_ms" in closes[0].message
        client = IpcClient(f"127.0.0.1:{server.port}", PROTOCOL)
        try:
            reply = await client.call("echo", StringValue(value="hi"), StringValue, timeout=5)
            assert reply.value == "hi"
        finally:
            await client.close()
        assert server.stats()["connections_refused"] == 10
    finally:
        for raw in idle:
            raw.close()
        await server.stop()


async def test_half_sent_frames_past_the_byte_cap_close_the_connection_that_crosses_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Several connections each send part of a large frame: the one whose bytes take the
    server past the cap is closed with a FATAL answer naming the key; the others, and small
    calls meanwhile, go on."""
    cap = 300_000
    server = limited_server(max_unfinished_bytes=cap)
    await server.start("127.0.0.1", 0)
    caplog.set_level("INFO", logger="qjm.ipc.server")
    big = call_frame(1, "echo", StringValue(value="x" * 250_000).SerializeToString())
    conns = [await Raw.open(server.port) for _ in range(4)]
    try:
        for raw in conns:
            await raw.send(context_frame())
        await conns[0].send(big[:120_000])
        await wait_stat(server, "unfinished_bytes", 120_000)
        await conns[1].send(big[:120_000])
        await wait_stat(server, "unfinished_bytes", 240_000)
        # a small call is whole at once: it holds nothing and goes through
        client = IpcClient(f"127.0.0.1:{server.port}", PROTOCOL)
        try:
            reply = await client.call("echo", StringValue(value="small"), StringValue, timeout=5)
            assert reply.value == "small"
        finally:
            await client.close()
        await conns[2].send(big[:120_000])  # 360,000 > 300,000
        header, _, _ = await conns[2].response()
        assert header.status == FATAL
        assert "test.ipc_max_unfinished_bytes = 300000" in header.errorMsg
        assert await conns[2].closed_by_server()
        await conns[3].send(big[:120_000])  # the fourth crosses it again
        assert (await conns[3].response())[0].status == FATAL
        stats = server.stats()
        assert stats["connections_read_capped"] == 2
        assert stats["unfinished_bytes"] == 240_000 and stats["unfinished_bytes_peak"] >= 240_000
        lines = [r for r in caplog.records if "past test.ipc_max_unfinished_bytes" in r.message]
        assert len(lines) == 1, [r.message for r in lines]
        # the first two finish their frames and are answered
        for raw in conns[:2]:
            await raw.send(big[120_000:])
            header, _, _ = await raw.response()
            assert header.status == SUCCESS
        assert server.stats()["unfinished_bytes"] == 0
    finally:
        for raw in conns:
            raw.close()
        await server.stop()
