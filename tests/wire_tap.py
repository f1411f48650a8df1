"""Recording proxies on loopback: every byte that crosses them, both ways, is kept.

WireTap forwards each connection to one server; SocksTap is a SOCKS5 proxy, so a client
that takes one (Hadoop's `hadoop.socks.server`) sends all its connections through it.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Self


class _Recorder:
    """What both proxies share: the listener, the recorded bytes, the pumps and close."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._seen = bytearray()
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._closed = False
        self._spawn(self._accept)

    def seen(self) -> bytes:
        """Every byte forwarded so far, both directions."""
        with self._lock:
            return bytes(self._seen)

    def _spawn(self, target: Callable[..., None], *args: object) -> None:
        t = threading.Thread(target=target, args=args, daemon=True)
        t.start()
        self._threads.append(t)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self._spawn(self._open, client)

    def _open(self, client: socket.socket) -> None:
        raise NotImplementedError

    def _connect(self, target: tuple[str, int]) -> socket.socket:
        server = socket.create_connection(target, timeout=10)
        server.settimeout(None)
        self._sockets.append(server)
        return server

    def _relay(self, client: socket.socket, server: socket.socket) -> None:
        """Forward both ways until both sides close (the way back on a thread of its own)."""
        self._spawn(self._pump, server, client)
        self._pump(client, server)

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
        for t in list(self._threads):
            t.join(timeout=5)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class WireTap(_Recorder):
    """Listens on 127.0.0.1:port; each connection is forwarded to target and recorded."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        super().__init__()

    def _open(self, client: socket.socket) -> None:
        self._sockets.append(client)
        with contextlib.suppress(OSError):
            self._relay(client, self._connect(self.target))


class SocksTap(_Recorder):
    """A SOCKS5 proxy on loopback (no authentication, CONNECT only) that keeps every byte
    both ways and each destination asked for: Hadoop's SocksSocketFactory
    (`hadoop.socks.server`) sends a client's RPC and data transfer connections through it."""

    def __init__(self) -> None:
        self.destinations: list[tuple[str, int]] = []
        super().__init__()

    @staticmethod
    def _exactly(s: socket.socket, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = s.recv(n - len(out))
            if not chunk:
                raise OSError("SOCKS client closed")
            out += chunk
        return out

    def _open(self, client: socket.socket) -> None:
        self._sockets.append(client)
        with contextlib.suppress(OSError):
            version, n = self._exactly(client, 2)
            self._exactly(client, n)
            if version != 5:
                raise OSError(f"SOCKS version {version}")
            client.sendall(b"\x05\x00")  # no authentication
            _, command, _, kind = self._exactly(client, 4)
            if kind == 1:
                host = socket.inet_ntoa(self._exactly(client, 4))
            elif kind == 3:
                host = self._exactly(client, self._exactly(client, 1)[0]).decode()
            else:
                raise OSError(f"SOCKS address type {kind}")
            port = int.from_bytes(self._exactly(client, 2), "big")
            if command != 1:
                raise OSError(f"SOCKS command {command}")
            server = self._connect((host, port))
            with self._lock:
                self.destinations.append((host, port))
            client.sendall(b"\x05\x00\x00\x01" + socket.inet_aton("127.0.0.1") + b"\x00\x00")
            self._relay(client, server)
