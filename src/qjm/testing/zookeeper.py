"""An in-memory ZooKeeper for the elector's state machine (no server, no sockets).

MemoryZk holds the znodes one test shares; each MemoryStore is one client session over it
(the elector's ZkStore), whose emit() drives the session events a real server would send.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from qjm.ha.elector import Node, NodeExists

__all__ = ["MemoryStore", "MemoryZk"]


class MemoryZk:
    """Znodes shared by the MemoryStores of one test (one 'ZooKeeper')."""

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}
        self.watches: dict[str, list[Callable[[], None]]] = {}
        self.sessions = 0

    def fire(self, path: str) -> None:
        """Fire (on the loop) and forget the watches set on path."""
        for watch in self.watches.pop(path, []):
            asyncio.get_running_loop().call_soon(watch)


class MemoryStore:
    """ZkStore over a MemoryZk; disconnect()/reconnect() drive the session events."""

    def __init__(self, zk: MemoryZk) -> None:
        self.zk = zk
        zk.sessions += 1
        self.session_id = zk.sessions
        self.callbacks: list[Callable[[str], None]] = []

    def on_session(self, callback: Callable[[str], None]) -> None:
        """Call callback on every session event emit() sends."""
        self.callbacks.append(callback)

    def emit(self, event: str) -> None:
        """Send a session event ("connected", "suspended", "lost") to the callbacks."""
        for cb in self.callbacks:
            cb(event)

    async def create(self, path: str, data: bytes, *, ephemeral: bool) -> None:
        """Create a znode (owned by this session if ephemeral); NodeExists."""
        if path in self.zk.nodes:
            raise NodeExists(path)
        self.zk.nodes[path] = Node(data, 0, self.session_id if ephemeral else 0)
        self.zk.fire(path)

    async def get(self, path: str, watch: Callable[[], None] | None = None) -> Node | None:
        """The znode, or None; watch (set only on an existing znode) fires once it changes."""
        if watch is not None and path in self.zk.nodes:
            self.zk.watches.setdefault(path, []).append(watch)
        return self.zk.nodes.get(path)

    async def exists(self, path: str, watch: Callable[[], None] | None = None) -> bool:
        """Whether the znode exists; watch fires once it is created, changed or deleted."""
        if watch is not None:
            self.zk.watches.setdefault(path, []).append(watch)
        return path in self.zk.nodes

    async def set(self, path: str, data: bytes, version: int) -> None:
        """Set a znode's data; its version must be version."""
        node = self.zk.nodes[path]
        assert node.version == version
        self.zk.nodes[path] = Node(data, version + 1, node.owner)
        self.zk.fire(path)

    async def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None:
        """Delete a znode."""
        del self.zk.nodes[path]
        self.zk.fire(path)

    async def ensure_path(self, path: str) -> None:
        """Create path as a persistent znode where missing."""
        self.zk.nodes.setdefault(path, Node(b"", 0, 0))

    async def children(self, path: str) -> list[str]:
        """The names of the znodes below path."""
        return [p.rsplit("/", 1)[1] for p in self.zk.nodes if p.startswith(path + "/")]

    async def close(self) -> None:
        """End the session: its ephemeral znodes go."""
        for path, node in list(self.zk.nodes.items()):
            if node.owner == self.session_id:
                await self.delete(path)
