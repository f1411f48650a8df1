"""Round trips of 200 bytes on loopback: plain asyncio TCP (4-byte length + bytes) vs qjm.ipc.

The echo server runs in its own process (`python -m benchmarks.echo tcp|ipc` prints its port
and serves until stdin closes). The client keeps `writers` calls in flight on one connection,
each waiting for its own answer.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

from benchmarks.common import RECORD, Sample

PROTOCOL = "qjm.bench.EchoProtocol"


def ipc_available() -> str | None:
    """None if qjm.ipc can be imported, else why not."""
    try:
        import qjm.ipc  # noqa: F401
    except ImportError as e:
        return str(e)
    return None


async def _serve_tcp() -> int:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                (n,) = struct.unpack(">I", await reader.readexactly(4))
                writer.write(struct.pack(">I", n) + await reader.readexactly(n))

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return int(server.sockets[0].getsockname()[1])


async def _serve_ipc() -> int:
    from google.protobuf.wrappers_pb2 import BytesValue

    from qjm.ipc import IpcServer, Method

    async def echo(req: Any, ctx: Any) -> Any:
        return BytesValue(value=req.value)

    server = IpcServer(name="bench-echo")
    server.register(PROTOCOL, {"echo": Method(BytesValue, echo)})
    await server.start("127.0.0.1", 0)
    server_ref.append(server)
    return int(server.port)


server_ref: list[Any] = []


async def _serve(kind: str) -> None:
    port = await (_serve_tcp() if kind == "tcp" else _serve_ipc())
    print(port, flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # until the benchmark closes our stdin


@contextlib.contextmanager
def server(kind: str, pids: list[int] | None = None) -> Iterator[int]:
    """An echo server process of kind tcp or ipc; yields its port (pids, if given, filled)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.echo", kind],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if not line.isdigit():
            raise RuntimeError(f"echo server {kind} did not start (said {line!r})")
        if pids is not None:
            pids.append(proc.pid)
        yield int(line)
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


async def _tcp(port: int, writers: int, seconds: float) -> Sample:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    waiting: collections.deque[asyncio.Future[bytes]] = collections.deque()

    async def read_answers() -> None:
        while True:
            (n,) = struct.unpack(">I", await reader.readexactly(4))
            body = await reader.readexactly(n)
            waiting.popleft().set_result(body)

    reading = asyncio.create_task(read_answers())
    payload = struct.pack(">I", RECORD) + b"x" * RECORD
    latencies: list[float] = []
    stop = time.perf_counter() + seconds

    async def one() -> None:
        loop = asyncio.get_running_loop()
        while time.perf_counter() < stop:
            t0 = time.perf_counter()
            fut: asyncio.Future[bytes] = loop.create_future()
            waiting.append(fut)
            writer.write(payload)
            await asyncio.wait_for(fut, 10)
            latencies.append(time.perf_counter() - t0)

    start = time.perf_counter()
    try:
        await asyncio.gather(*(one() for _ in range(writers)))
    finally:
        elapsed = time.perf_counter() - start
        reading.cancel()
        writer.close()
    return Sample.of(latencies, elapsed)


async def _ipc(port: int, writers: int, seconds: float) -> Sample:
    from google.protobuf.wrappers_pb2 import BytesValue

    from qjm.ipc import IpcClient

    client = IpcClient(f"127.0.0.1:{port}", PROTOCOL)
    request = BytesValue(value=b"x" * RECORD)
    latencies: list[float] = []
    try:
        await client.call("echo", request, BytesValue, timeout=10)  # connect
        stop = time.perf_counter() + seconds

        async def one() -> None:
            while time.perf_counter() < stop:
                t0 = time.perf_counter()
                await client.call("echo", request, BytesValue, timeout=10)
                latencies.append(time.perf_counter() - t0)

        start = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(writers)))
        elapsed = time.perf_counter() - start
    finally:
        await client.close()
    return Sample.of(latencies, elapsed)


def measure(kind: str, port: int, writers: int, seconds: float) -> Sample:
    """writers concurrent 200-byte round trips to the echo server of kind for seconds."""
    run = _tcp if kind == "tcp" else _ipc
    return asyncio.run(run(port, writers, seconds))


if __name__ == "__main__":
    asyncio.run(_serve(sys.argv[1]))
