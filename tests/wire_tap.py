"""A TCP proxy on loopback that forwards to a server and keeps every byte both ways."""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType


class WireTap:
    """Listens on 127.0.0.1:port; each connection is forwarded to target and recorded."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._seen = bytearray()
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._closed = False
        accept = threading.Thread(target=self._accept, daemon=True)
        accept.start()
        self._threads.append(accept)

    def seen(self) -> bytes:
        """Every byte that crossed the tap so far, both directions."""
        with self._lock:
            return bytes(self._seen)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target, timeout=10)
            server.settimeout(None)
            self._sockets += [client, server]
            for a, b in ((client, server), (server, client)):
                t = threading.Thread(target=self._pump, args=(a, b), daemon=True)
                t.start()
                self._threads.append(t)

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while chunk := source.recv(65536):
                with self._lock:
                    self._seen += chunk
                sink.sendall(chunk)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        """Stop listening and cut every forwarded connection."""
        self._closed = True
        for s in (self._listener, *self._sockets):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked in accept or recv
            with contextlib.suppress(OSError):
                s.close()
        for t in self._threads:
            t.join(timeout=5)

    def __enter__(self) -> WireTap:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
