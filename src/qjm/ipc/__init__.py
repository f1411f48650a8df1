"""Hadoop's IPC wire protocol (RPC version 9) on asyncio: per-protocol server, client.

    server = IpcServer(name="journalnode")
    server.register("org.example.EchoProtocol", {"echo": Method(StringValue, echo_handler)})
    await server.start("127.0.0.1", 0)          # server.port: the port bound
    client = IpcClient(f"127.0.0.1:{server.port}", "org.example.EchoProtocol")
    reply = await client.call("echo", StringValue(value="hi"), StringValue, timeout=5)

A handler is `async def handler(request, ctx: CallContext) -> Message`; an exception with a
`java_class` attribute reaches the caller as RemoteError(class_name=java_class, message=str(e)).
"""

from qjm.ipc.client import IpcClient
from qjm.ipc.errors import (
    FrameTooLargeError,
    MalformedRpcError,
    RemoteError,
    RpcConnectionError,
    RpcError,
    RpcTimeoutError,
)
from qjm.ipc.framing import CONNECTION_CONTEXT_CALL_ID, PING_CALL_ID, RPC_VERSION
from qjm.ipc.methods import MethodSpec, method_table
from qjm.ipc.server import CallContext, Handler, IpcServer, Method

__all__ = [
    "CONNECTION_CONTEXT_CALL_ID",
    "PING_CALL_ID",
    "RPC_VERSION",
    "CallContext",
    "FrameTooLargeError",
    "Handler",
    "IpcClient",
    "IpcServer",
    "MalformedRpcError",
    "Method",
    "MethodSpec",
    "RemoteError",
    "RpcConnectionError",
    "RpcError",
    "RpcTimeoutError",
    "method_table",
]
