"""Hadoop's IPC wire protocol (RPC version 9) on asyncio: per-protocol server, client."""

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
    "RemoteError",
    "RpcConnectionError",
    "RpcError",
    "RpcTimeoutError",
]
