"""Methods started without a task (Method.start): answers, errors, arrival order, stop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from google.protobuf.wrappers_pb2 import StringValue

from qjm.ipc import CallContext, IpcClient, IpcServer, Method, RemoteError, RpcConnectionError

PROTOCOL = "org.example.StartProtocol"


class Refused(Exception):
    java_class = "org.example.RefusedException"


class Env:
    def __init__(self) -> None:
        self.order: list[str] = []
        self.held: list[asyncio.Future[Any]] = []
        self.holding = asyncio.Event()
        self.server = IpcServer(name="start-test")
        loop = asyncio.get_running_loop()

        def start(req: Any, ctx: CallContext) -> asyncio.Future[Any]:
            self.order.append(req.value)
            if req.value == "refuse-now":
                raise Refused("refused at once")
            fut: asyncio.Future[Any] = loop.create_future()
            if req.value == "refuse-later":
                loop.call_soon(fut.set_exception, Refused("refused later"))
            elif req.value == "hold":
                self.held.append(fut)
                self.holding.set()
            else:
                loop.call_soon(fut.set_result, StringValue(value=req.value.upper()))
            return fut

        async def started(req: Any, ctx: CallContext) -> Any:
            return await start(req, ctx)

        async def task(req: Any, ctx: CallContext) -> Any:
            self.order.append(req.value)  # the handler's first step
            return StringValue(value=req.value)

        self.server.register(
            PROTOCOL,
            {"fast": Method(StringValue, started, start), "slow": Method(StringValue, task)},
        )


@pytest.fixture
async def env() -> AsyncIterator[tuple[Env, IpcClient]]:
    e = Env()
    await e.server.start("127.0.0.1", 0)
    client = IpcClient(f"127.0.0.1:{e.server.port}", PROTOCOL, user="dana")
    try:
        yield e, client
    finally:
        await client.close()
        await e.server.stop()


async def call(client: IpcClient, method: str, value: str) -> str:
    reply = await client.call(method, StringValue(value=value), StringValue, timeout=5)
    return reply.value


async def test_a_started_call_is_answered_and_its_errors_keep_their_java_class(
    env: tuple[Env, IpcClient],
) -> None:
    e, client = env
    assert await call(client, "fast", "abc") == "ABC"
    for value, message in (("refuse-now", "refused at once"), ("refuse-later", "refused later")):
        with pytest.raises(RemoteError) as info:
            await call(client, "fast", value)
        assert info.value.class_name == "org.example.RefusedException"
        assert message in str(info.value)
    assert await call(client, "fast", "after") == "AFTER"  # the connection stays usable
    assert e.server.stats()["calls_running"] == 0


async def test_calls_start_in_arrival_order_across_started_and_task_methods(
    env: tuple[Env, IpcClient],
) -> None:
    e, client = env
    await call(client, "fast", "connect")
    e.order.clear()
    # Pipelined on one connection, so frames often arrive in one read: a started call must
    # not overtake a task call that arrived before it and has not run its first step yet.
    sent = [f"{'slow' if i % 2 == 0 else 'fast'}{i}" for i in range(40)]
    calls = [asyncio.ensure_future(call(client, v[:4], v)) for v in sent]
    await asyncio.wait_for(asyncio.gather(*calls), 10)
    assert e.order == sent


async def test_stop_cancels_a_started_call_without_answering_it(
    env: tuple[Env, IpcClient],
) -> None:
    e, client = env
    pending = asyncio.ensure_future(call(client, "fast", "hold"))
    await asyncio.wait_for(e.holding.wait(), 5)
    assert e.server.stats()["calls_running"] == 1
    await e.server.stop()
    assert e.held[0].cancelled()
    with pytest.raises(RpcConnectionError):
        await asyncio.wait_for(pending, 5)
