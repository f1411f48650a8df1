"""Errors of the Hadoop IPC layer; each message names the peer and, where known, the method."""

from __future__ import annotations

from qjm.errors import QjmError


class RpcError(QjmError):
    """Base class of every failure raised by qjm.ipc."""


class RemoteError(RpcError):
    """The server answered a call with ERROR or FATAL, naming a Java exception class."""

    def __init__(
        self,
        class_name: str,
        message: str,
        *,
        error_code: int | None = None,
        fatal: bool = False,
        peer: str = "",
        method: str = "",
    ) -> None:
        where = f"{peer} {method}: " if method else (f"{peer}: " if peer else "")
        kind = "FATAL " if fatal else ""
        super().__init__(f"{where}{kind}{class_name}: {message}")
        self.class_name = class_name
        self.message = message
        self.error_code = error_code
        self.fatal = fatal
        self.peer = peer
        self.method = method

    @property
    def brief(self) -> str:
        """The Java class and message, without the peer and method."""
        return f"{'FATAL ' if self.fatal else ''}{self.class_name}: {self.message}"


class RpcTimeoutError(RpcError):
    """A call got no answer within its timeout."""


class RpcConnectionError(RpcError):
    """The connection was refused, reset or closed, or reconnecting gave up."""


class RpcAuthenticationError(RpcConnectionError):
    """Kerberos authentication to the server failed (no ticket, wrong principal, refused)."""


class FrameTooLargeError(RpcError):
    """A frame's declared length exceeds ipc.maximum.data.length."""


class MalformedRpcError(RpcError):
    """Bytes that are not a valid preamble, frame, header or message."""
