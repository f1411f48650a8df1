"""A gRPC connection to one JournalNode, raising our errors instead of gRPC's."""

from __future__ import annotations

from typing import Any

import grpc

from qjm.errors import QjmError
from qjm.protocol import qjournal_pb2_grpc as pb_grpc
from qjm.protocol.errors import ERROR_CLASSES, ERROR_METADATA_KEY, JournalError

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.enable_retries", 0),
    # Reconnect to a restarted JournalNode within a second, not gRPC's default of up to
    # two minutes: a writer takes a node back at its next segment.
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
]


class JournalNodeUnavailable(QjmError):
    """The JournalNode did not answer: down, unreachable, or too slow."""


def translate_rpc_error(address: str, method: str, e: grpc.aio.AioRpcError) -> QjmError:
    """Turn a gRPC failure into the error the JournalNode meant, prefixed by its address."""
    for key, value in e.trailing_metadata() or ():
        if key == ERROR_METADATA_KEY:
            cls = ERROR_CLASSES.get(str(value), JournalError)
            return cls(f"{address}: {e.details()}")
    code = e.code()
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return JournalNodeUnavailable(f"{address}: {method} timed out")
    if code == grpc.StatusCode.UNAVAILABLE:
        details = e.details() or ""
        reason = "connection refused" if "Connection refused" in details else details
        return JournalNodeUnavailable(f"{address}: unreachable ({reason})")
    return JournalError(f"{address}: {method} failed: {code.name}: {e.details()}")


class JournalNodeClient:
    """Calls one JournalNode's QJournal RPCs."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.channel = grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS)
        self.stub = pb_grpc.QJournalServiceStub(self.channel)  # type: ignore[no-untyped-call]

    def __str__(self) -> str:
        return self.address

    async def call(self, method: str, request: Any, deadline: float) -> Any:
        """Invoke an RPC by name with a deadline; raise QjmError on failure."""
        try:
            return await getattr(self.stub, method)(request, timeout=deadline)
        except grpc.aio.AioRpcError as e:
            raise translate_rpc_error(self.address, method, e) from None

    async def close(self) -> None:
        """Close the channel."""
        await self.channel.close()
