"""IpcClient against IpcServer and raw servers: ordering, timeouts, reconnect, failures."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from google.protobuf.wrappers_pb2 import StringValue

from ports import free_port
from qjm.ipc import (
    CallContext,
    IpcClient,
    IpcServer,
    Method,
    RemoteError,
    RpcConnectionError,
    RpcTimeoutError,
)
from qjm.ipc.proto.RpcHeader_pb2 import RpcRequestHeaderProto, RpcResponseHeaderProto

PROTOCOL = "org.example.EchoProtocol"


class Gates:
    def __init__(self) -> None:
        self.events: dict[str, asyncio.Event] = {}
        self.seen: dict[str, asyncio.Event] = {}
        self.arrived: list[str] = []

    def gate(self, name: str) -> asyncio.Event:
        return self.events.setdefault(name, asyncio.Event())

    def arrive(self, name: str) -> None:
        self.arrived.append(name)
        self.seen.setdefault(name, asyncio.Event()).set()

    async def wait_arrived(self, name: str) -> None:
        async with asyncio.timeout(5):
            await self.seen.setdefault(name, asyncio.Event()).wait()


def make_server(gates: Gates, **kw: Any) -> IpcServer:
    async def echo(req: Any, ctx: CallContext) -> StringValue:
        gates.arrive(req.value)
        return StringValue(value=req.value)

    async def wait(req: Any, ctx: CallContext) -> StringValue:
        gates.arrive(req.value)
        await gates.gate(req.value).wait()
        return StringValue(value=req.value)

    async def whoami(req: Any, ctx: CallContext) -> StringValue:
        return StringValue(
            value=f"{ctx.user}|{ctx.protocol}|{ctx.client_id.hex()}|{ctx.retry_count}"
        )

    class Standby(Exception):
        java_class = "org.apache.hadoop.ipc.StandbyException"

    async def standby(req: Any, ctx: CallContext) -> StringValue:
        raise Standby("Operation category WRITE is not supported in state standby")

    server = IpcServer(**kw)
    server.register(
        PROTOCOL,
        {
            "echo": Method(StringValue, echo),
            "wait": Method(StringValue, wait),
            "whoami": Method(StringValue, whoami),
            "standby": Method(StringValue, standby),
        },
    )
    return server


@pytest.fixture
async def env() -> AsyncIterator[tuple[IpcServer, IpcClient, Gates]]:
    gates = Gates()
    server = make_server(gates)
    await server.start("127.0.0.1", 0)
    client = IpcClient(f"127.0.0.1:{server.port}", PROTOCOL, user="dana")
    try:
        yield server, client, gates
    finally:
        await client.close()
        await server.stop()


async def echo(client: IpcClient, value: str) -> str:
    reply = await client.call("echo", StringValue(value=value), StringValue, timeout=5)
    return reply.value


async def test_simple_calls_and_connection_context(
    env: tuple[IpcServer, IpcClient, Gates],
) -> None:
    server, client, _ = env
    assert await echo(client, "a") == "a"
    assert await echo(client, "") == ""
    who = await client.call("whoami", StringValue(), StringValue, timeout=5)
    assert who.value == f"dana|{PROTOCOL}|{client.client_id.hex()}|0"
    assert len(client.client_id) == 16
    assert server.stats()["connections_total"] == 1  # one connection for every call


async def test_out_of_order_responses_are_matched_by_call_id(
    env: tuple[IpcServer, IpcClient, Gates],
) -> None:
    _, client, gates = env
    slow = asyncio.create_task(
        client.call("wait", StringValue(value="slow"), StringValue, timeout=5)
    )
    await gates.wait_arrived("slow")
    assert await echo(client, "fast") == "fast"
    assert not slow.done()
    gates.gate("slow").set()
    async with asyncio.timeout(5):
        assert (await slow).value == "slow"


async def test_frames_reach_the_server_in_call_order_even_while_connecting(
    env: tuple[IpcServer, IpcClient, Gates],
) -> None:
    _, client, gates = env
    values = [str(i) for i in range(200)]
    replies = await asyncio.gather(*(echo(client, v) for v in values))  # all queued on connect
    assert replies == values
    assert gates.arrived == values
    more = [str(i) for i in range(200, 400)]
    assert await asyncio.gather(*(echo(client, v) for v in more)) == more
    assert gates.arrived == values + more


@pytest.mark.slow
async def test_many_concurrent_calls(env: tuple[IpcServer, IpcClient, Gates]) -> None:
    server, client, _ = env
    values = [f"v{i}" * (i % 50) for i in range(3000)]
    assert await asyncio.gather(*(echo(client, v) for v in values)) == values
    assert server.stats()["calls"] == 3000


async def test_remote_error_carries_the_java_class(
    env: tuple[IpcServer, IpcClient, Gates],
) -> None:
    _, client, _ = env
    with pytest.raises(RemoteError) as info:
        await client.call("standby", StringValue(), StringValue, timeout=5)
    err = info.value
    assert err.class_name == "org.apache.hadoop.ipc.StandbyException"
    assert err.message == "Operation category WRITE is not supported in state standby"
    assert err.error_code == RpcResponseHeaderProto.ERROR_APPLICATION and not err.fatal
    with pytest.raises(RemoteError) as info:
        await client.call("nope", StringValue(), StringValue, timeout=5)
    assert info.value.class_name == "org.apache.hadoop.ipc.RpcNoSuchMethodException"
    assert info.value.error_code == RpcResponseHeaderProto.ERROR_NO_SUCH_METHOD
    assert await echo(client, "after errors") == "after errors"


async def test_timeout_then_late_answer_is_dropped(
    env: tuple[IpcServer, IpcClient, Gates],
) -> None:
    _, client, gates = env
    with pytest.raises(RpcTimeoutError, match="wait"):
        await client.call("wait", StringValue(value="late"), StringValue, timeout=0.05)
    gates.gate("late").set()  # the server answers now; nobody waits for it
    assert await echo(client, "next") == "next"
    assert await echo(client, "next2") == "next2"


async def test_cancelled_call_is_forgotten(env: tuple[IpcServer, IpcClient, Gates]) -> None:
    _, client, gates = env
    task = asyncio.create_task(client.call("wait", StringValue(value="c"), StringValue))
    await gates.wait_arrived("c")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    gates.gate("c").set()
    assert await echo(client, "ok") == "ok"


async def test_reconnect_after_the_server_restarts_on_the_same_port() -> None:
    port = free_port()
    gates = Gates()
    server = make_server(gates)
    await server.start("127.0.0.1", port)
    client = IpcClient(f"127.0.0.1:{port}", PROTOCOL, reconnect_backoff_s=0.01)
    try:
        assert await echo(client, "before") == "before"
        waiting = asyncio.create_task(
            client.call("wait", StringValue(value="w"), StringValue, timeout=5)
        )
        await gates.wait_arrived("w")
        await server.stop()
        with pytest.raises(RpcConnectionError):
            async with asyncio.timeout(5):
                await waiting
        server = make_server(gates)
        await server.start("127.0.0.1", port)
        assert await echo(client, "after") == "after"
        assert server.stats()["connections_total"] == 1
    finally:
        await client.close()
        await server.stop()


async def test_refused_connection_fails_after_bounded_attempts() -> None:
    port = free_port()  # nothing listens there
    client = IpcClient(
        f"127.0.0.1:{port}", PROTOCOL, reconnect_attempts=3, reconnect_backoff_s=0.001
    )
    try:
        with pytest.raises(RpcConnectionError, match=r"after 3 attempt"):
            async with asyncio.timeout(5):
                await echo(client, "x")
        gates = Gates()
        server = make_server(gates)
        await server.start("127.0.0.1", port)
        try:
            assert await echo(client, "now") == "now"  # the next call connects afresh
        finally:
            await server.stop()
    finally:
        await client.close()


async def test_close_fails_waiting_calls(env: tuple[IpcServer, IpcClient, Gates]) -> None:
    _, client, gates = env
    task = asyncio.create_task(client.call("wait", StringValue(value="z"), StringValue, timeout=5))
    await gates.wait_arrived("z")
    await client.close()
    with pytest.raises(RpcConnectionError, match="closed"):
        async with asyncio.timeout(5):
            await task
    with pytest.raises(RpcConnectionError, match="closed"):
        await echo(client, "after close")


async def test_fatal_response_fails_in_flight_calls_and_the_next_call_reconnects() -> None:
    """A raw server answers the first call with FATAL and closes; a second server behaves."""
    fatal_header = RpcResponseHeaderProto(
        callId=0,  # replaced by the call id of the call read
        status=RpcResponseHeaderProto.FATAL,
        serverIpcVersionNum=9,
        exceptionClassName="org.apache.hadoop.ipc.RpcServerException",
        errorMsg="go away",
        errorDetail=RpcResponseHeaderProto.FATAL_UNKNOWN,
    ).SerializeToString()
    connections = 0

    async def raw(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        try:
            await reader.readexactly(7)
            for _ in range(2):  # the context, the first call
                n = int.from_bytes(await reader.readexactly(4), "big")
                call = await reader.readexactly(n)
            request_header = RpcRequestHeaderProto.FromString(call[1 : 1 + call[0]])
            header = RpcResponseHeaderProto.FromString(fatal_header)
            header.callId = request_header.callId
            answer = header.SerializeToString()
            payload = bytes((len(answer),)) + answer
            writer.write(len(payload).to_bytes(4, "big") + payload)
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(raw, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = IpcClient(f"127.0.0.1:{port}", PROTOCOL)
    try:
        first = asyncio.create_task(echo(client, "one"))
        second = asyncio.create_task(echo(client, "two"))
        with pytest.raises(RemoteError) as info:
            async with asyncio.timeout(5):
                await first
        assert info.value.fatal and info.value.message == "go away"
        assert info.value.error_code == RpcResponseHeaderProto.FATAL_UNKNOWN
        with pytest.raises(RpcConnectionError, match="go away"):
            async with asyncio.timeout(5):
                await second
        third = asyncio.create_task(echo(client, "three"))
        with pytest.raises(RemoteError, match="go away"):
            async with asyncio.timeout(5):
                await third
        assert connections == 2  # the third call opened a new connection
    finally:
        await client.close()
        server.close()
        await server.wait_closed()


async def test_server_closing_mid_call_is_a_connection_error() -> None:
    async def raw(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readexactly(7)
        writer.close()

    server = await asyncio.start_server(raw, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = IpcClient(f"127.0.0.1:{port}", PROTOCOL)
    try:
        with pytest.raises(RpcConnectionError, match=f"^echo: connection to 127.0.0.1:{port} "):
            await echo(client, "x")
    finally:
        await client.close()
        server.close()
        await server.wait_closed()


def test_bad_address_is_refused_with_a_clear_error() -> None:
    with pytest.raises(ValueError, match="not host:port"):
        IpcClient("localhost", PROTOCOL)
    assert IpcClient("[::1]:8485", PROTOCOL).address == "[::1]:8485"


async def test_request_over_the_limit_is_refused_before_sending(
    env: tuple[IpcServer, IpcClient, Gates],
) -> None:
    server, _, _ = env
    small = IpcClient(f"127.0.0.1:{server.port}", PROTOCOL, max_data_length=100)
    try:
        with pytest.raises(Exception, match="exceeds ipc.maximum.data.length 100"):
            await echo(small, "x" * 200)
        assert await echo(small, "fits") == "fits"
    finally:
        await small.close()


async def test_close_while_connecting_fails_the_queued_call() -> None:
    port = free_port()  # nothing listens: the client backs off between attempts
    client = IpcClient(f"127.0.0.1:{port}", PROTOCOL, reconnect_attempts=5, reconnect_backoff_s=30)
    task = asyncio.create_task(echo(client, "never"))
    for _ in range(100):  # let the first attempt fail and the backoff start
        await asyncio.sleep(0)
        if client._connect_task is not None and client._queue:
            break
    await client.close()
    with pytest.raises(RpcConnectionError, match="closed"):
        async with asyncio.timeout(5):
            await task


async def test_large_request_and_response(env: tuple[IpcServer, IpcClient, Gates]) -> None:
    _, client, _ = env
    big = "".join(chr(65 + i % 26) for i in range(300_000))  # parsed in place on the server
    assert await echo(client, big) == big


async def test_response_header_fields_in_any_order_and_unknown_fields() -> None:
    """A SUCCESS header written status-first, with stateId, still answers the call."""

    async def raw(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readexactly(7)
            for _ in range(2):
                n = int.from_bytes(await reader.readexactly(4), "big")
                await reader.readexactly(n)
            # status(2)=0, callId(1)=0, serverIpcVersionNum(3)=9, stateId(9)=77
            header = b"\x10\x00\x08\x00\x18\x09\x48\x4d"
            body = b"\x0a\x02ok"
            payload = bytes((len(header),)) + header + bytes((len(body),)) + body
            writer.write(len(payload).to_bytes(4, "big") + payload)
            await writer.drain()
            await reader.read()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(raw, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = IpcClient(f"127.0.0.1:{port}", PROTOCOL)
    try:
        assert await echo(client, "x") == "ok"
    finally:
        await client.close()
        server.close()
        await server.wait_closed()


async def test_timeouts_of_different_lengths_each_fire_on_time(
    env: tuple[IpcServer, IpcClient, Gates],
) -> None:
    _, client, gates = env
    loop = asyncio.get_running_loop()
    long = asyncio.create_task(client.call("wait", StringValue(value="a"), StringValue, timeout=5))
    await gates.wait_arrived("a")
    started = loop.time()
    short = [
        asyncio.create_task(client.call("wait", StringValue(value=v), StringValue, timeout=t))
        for v, t in (("c", 0.2), ("b", 0.05), ("d", 0.1))
    ]
    for task, expected in zip(short, (0.2, 0.05, 0.1), strict=True):
        with pytest.raises(RpcTimeoutError, match=f"within {expected:g} s"):
            async with asyncio.timeout(5):
                await task
    assert loop.time() - started < 2
    assert not long.done()
    gates.gate("a").set()
    async with asyncio.timeout(5):
        assert (await long).value == "a"
    for _ in range(3):  # answered calls leave no timers behind that fail later calls
        assert await echo(client, "after") == "after"


async def test_empty_success_header_does_not_read_the_body_as_header() -> None:
    """A response whose header is empty (length 0) is malformed: the body is not a header."""

    async def raw(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readexactly(7)
            for _ in range(2):
                n = int.from_bytes(await reader.readexactly(4), "big")
                await reader.readexactly(n)
            payload = b"\x00" + b"\x06\x08\x00\x10\x00\x18\x09"  # empty header, header-like body
            writer.write(len(payload).to_bytes(4, "big") + payload)
            await writer.drain()
            await reader.read()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(raw, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = IpcClient(f"127.0.0.1:{port}", PROTOCOL)
    try:
        with pytest.raises(RpcConnectionError, match="malformed RPC response header"):
            await echo(client, "x")
    finally:
        await client.close()
        server.close()
        await server.wait_closed()


async def test_many_clients_at_once(env: tuple[IpcServer, IpcClient, Gates]) -> None:
    server, _, _ = env
    clients = [IpcClient(f"127.0.0.1:{server.port}", PROTOCOL, user=f"u{i}") for i in range(20)]
    try:

        async def run(client: IpcClient, n: int) -> list[str]:
            return [await echo(client, f"{client.user}-{k}") for k in range(n)]

        results = await asyncio.gather(*(run(c, 50) for c in clients))
        for client, got in zip(clients, results, strict=True):
            assert got == [f"{client.user}-{k}" for k in range(50)]
        assert server.stats()["connections_total"] == 20
        assert server.stats()["calls"] == 1000
    finally:
        await asyncio.gather(*(c.close() for c in clients))


async def test_a_client_pointed_at_an_http_port_says_so() -> None:
    """An HTTP server answers the RPC preamble with an HTTP error: the client names the
    mistake instead of a frame length made of the letters "HTTP"."""
    from aiohttp import web

    runner = web.AppRunner(web.Application())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    client = IpcClient(f"127.0.0.1:{port}", "org.apache.hadoop.hdfs.protocol.ClientProtocol")
    try:
        with pytest.raises(RpcConnectionError) as err:
            await client.call("getFileInfo", StringValue(value="/"), StringValue, timeout=10)
        text = str(err.value)
        assert "answered in HTTP, not Hadoop RPC" in text and "1213486160" not in text, text
    finally:
        await client.close()
        await runner.cleanup()
