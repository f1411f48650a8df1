"""A Hadoop IPC connection to one JournalNode, raising the JournalNode's errors as ours."""

from __future__ import annotations

from typing import Any

from qjm.ipc import IpcClient, RemoteError, RpcConnectionError, RpcTimeoutError
from qjm.protocol.errors import ERROR_CLASSES_BY_JAVA_NAME, JournalError, JournalNodeUnavailable
from qjm.protocol.qjournal import PROTOCOLS, QJOURNAL_PROTOCOL


def translate_remote_error(address: str, e: RemoteError) -> JournalError:
    """The JournalError a JournalNode's answer names, prefixed by its address."""
    cls = ERROR_CLASSES_BY_JAVA_NAME.get(e.class_name, JournalError)
    return cls(f"{address}: {e.message}")


class QJournalClient:
    """Calls one JournalNode's methods of one protocol (QJournalProtocol by default)."""

    def __init__(self, address: str, protocol: str = QJOURNAL_PROTOCOL, **ipc: Any) -> None:
        self.address = address
        self.protocol = protocol
        self._methods = PROTOCOLS[protocol]
        self._ipc = IpcClient(address, protocol, **ipc)

    def __str__(self) -> str:
        return self.address

    async def call(self, method: str, request: Any, deadline: float) -> Any:
        """Invoke a method by its wire name with a timeout; raise QjmError on failure."""
        spec = self._methods[method]
        try:
            return await self._ipc.call(method, request, spec.response, timeout=deadline)
        except RemoteError as e:
            raise translate_remote_error(self.address, e) from None
        except RpcTimeoutError:
            raise JournalNodeUnavailable(f"{self.address}: {method} timed out") from None
        except RpcConnectionError as e:
            raise JournalNodeUnavailable(f"{self.address}: unreachable ({e})") from None

    async def close(self) -> None:
        """Close the connection."""
        await self._ipc.close()
