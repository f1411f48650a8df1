"""One JournalNode's protocols behind one call(): QJournalProtocol and the status protocol."""

from __future__ import annotations

from typing import Any

from qjm.protocol.errors import JournalNodeUnavailable
from qjm.protocol.qjournal import QJOURNAL_PROTOCOL, STATUS_METHODS, STATUS_PROTOCOL
from qjm.protocol.qjournal_client import QJournalClient

__all__ = ["JournalNodeClient", "JournalNodeUnavailable"]


class JournalNodeClient:
    """Calls a JournalNode's methods by wire name, each on its protocol's IPC connection."""

    def __init__(self, address: str, **ipc: Any) -> None:
        self.address = address
        self._ipc = ipc
        self._qjournal = QJournalClient(address, QJOURNAL_PROTOCOL, **ipc)
        self._status: QJournalClient | None = None  # connected on the first status call

    def __str__(self) -> str:
        return self.address

    def _client_for(self, method: str) -> QJournalClient:
        if method not in STATUS_METHODS:
            return self._qjournal
        if self._status is None:
            self._status = QJournalClient(self.address, STATUS_PROTOCOL, **self._ipc)
        return self._status

    async def call(self, method: str, request: Any, deadline: float) -> Any:
        """Invoke a method by its wire name with a timeout; raise QjmError on failure."""
        return await self._client_for(method).call(method, request, deadline)

    async def close(self) -> None:
        """Close every connection."""
        await self._qjournal.close()
        if self._status is not None:
            await self._status.close()
