"""One JournalNode's protocols behind one call(): each method on its protocol's connection."""

from __future__ import annotations

from typing import Any

from qjm.protocol.errors import JournalNodeUnavailable
from qjm.protocol.qjournal import PROTOCOL_OF_METHOD
from qjm.protocol.qjournal_client import QJournalClient

__all__ = ["JournalNodeClient", "JournalNodeUnavailable"]


class JournalNodeClient:
    """Calls a JournalNode's methods by wire name, each on its protocol's IPC connection."""

    def __init__(self, address: str, **ipc: Any) -> None:
        self.address = address
        self._ipc = ipc
        self._clients: dict[str, QJournalClient] = {}  # by protocol, opened on first use

    def __str__(self) -> str:
        return self.address

    def _client_for(self, method: str) -> QJournalClient:
        protocol = PROTOCOL_OF_METHOD[method]
        found = self._clients.get(protocol)
        if found is None:
            found = self._clients[protocol] = QJournalClient(self.address, protocol, **self._ipc)
        return found

    async def call(self, method: str, request: Any, deadline: float) -> Any:
        """Invoke a method by its wire name with a timeout; raise QjmError on failure."""
        return await self._client_for(method).call(method, request, deadline)

    async def close(self) -> None:
        """Close every connection."""
        for client in self._clients.values():
            await client.close()
        self._clients.clear()
