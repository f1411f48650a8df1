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


class SocksTap:
    """A SOCKS5 proxy on loopback (no authentication, CONNECT only) that keeps every byte
    both ways and each destination asked for: Hadoop's SocksSocketFactory
    (`hadoop.socks.server`) sends a client's RPC and data transfer connections through it."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._seen = bytearray()
        self.destinations: list[tuple[str, int]] = []
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._closed = False
        accept = threading.Thread(target=self._accept, daemon=True)
        accept.start()
        self._threads.append(accept)

    def seen(self) -> bytes:
        """Every byte forwarded so far, both directions (not the SOCKS requests)."""
        with self._lock:
            return bytes(self._seen)

    @staticmethod
    def _exactly(s: socket.socket, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = s.recv(n - len(out))
            if not chunk:
                raise OSError("SOCKS client closed")
            out += chunk
        return out

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            t = threading.Thread(target=self._open, args=(client,), daemon=True)
            t.start()
            self._threads.append(t)

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
            server = socket.create_connection((host, port), timeout=10)
            server.settimeout(None)
            self._sockets.append(server)
            with self._lock:
                self.destinations.append((host, port))
            client.sendall(b"\x05\x00\x00\x01" + socket.inet_aton("127.0.0.1") + b"\x00\x00")
            t = threading.Thread(target=self._pump, args=(server, client), daemon=True)
            t.start()
            self._threads.append(t)
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
                s.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                s.close()
        for t in list(self._threads):
            t.join(timeout=5)

    def __enter__(self) -> SocksTap:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
