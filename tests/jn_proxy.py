"""A TCP proxy in front of a JournalNode's RPC port that can hold back the node's answers.

Requests always go through at once; a held proxy keeps back (buffers) the answers on every
connection that sends a `journal` call while it is held, so a NameNode's edits reach the
JournalNode while the NameNode never learns that they did: the quorum flush is in flight.
release() sends what was kept back and stops holding. The proxy parses only what it needs
of the Hadoop IPC request stream: the 7-byte preamble, then frames (a 4-byte length, the
varint-delimited RpcRequestHeaderProto, then RequestHeaderProto whose field 1 is the
method name).

    proxy = JournalProxy("127.0.0.1:8485")
    await proxy.start()        # proxy.address: give it to the NameNodes as the JournalNode
    proxy.hold()
    ...                        # a NameNode's journal() is written but never answered
    proxy.release()
"""

from __future__ import annotations

import asyncio
import contextlib
import struct

from hadoop_wire import LEN, read_varint

PREAMBLE_LENGTH = 7  # "hrpc", version, service class, auth protocol


def method_of(frame: bytes) -> str | None:
    """The method a call frame's body names (None for the connection context frame)."""
    try:
        n, pos = read_varint(frame, 0)
        pos += n  # skip RpcRequestHeaderProto
        n, pos = read_varint(frame, pos)
        header = frame[pos : pos + n]
        key, at = read_varint(header, 0)
        if key != (1 << 3 | LEN):
            return None
        size, at = read_varint(header, at)
        return header[at : at + size].decode("utf-8", "replace")
    except IndexError:
        return None


class _Link:
    """One client connection and its connection to the JournalNode."""

    def __init__(self, proxy: JournalProxy, client: asyncio.StreamWriter) -> None:
        self.proxy = proxy
        self.client = client
        self.held = False  # answers kept back: this connection sent journal() while held
        self.kept: list[bytes] = []

    def answer(self, data: bytes) -> None:
        """Pass an answer's bytes to the client, or keep them while held."""
        if self.held:
            self.kept.append(data)
            self.proxy.kept_bytes += len(data)
        else:
            self.client.write(data)

    def release(self) -> None:
        """Send what was kept back and stop holding."""
        self.held = False
        for data in self.kept:
            self.client.write(data)
        self.kept.clear()


class JournalProxy:
    """A proxy listening on 127.0.0.1 (a free port) for the JournalNode at target."""

    def __init__(self, target: str) -> None:
        host, port = target.rsplit(":", 1)
        self.target = (host, int(port))
        self.server: asyncio.Server | None = None
        self.holding = False
        self.links: set[_Link] = set()
        self.kept_bytes = 0  # answers kept back so far
        self.held_journal_calls = 0  # journal() calls sent while held

    @property
    def address(self) -> str:
        """host:port the proxy listens on."""
        assert self.server is not None
        return f"127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def start(self) -> JournalProxy:
        """Listen on a free loopback port."""
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def stop(self) -> None:
        """Stop listening and close every connection."""
        if self.server is not None:
            self.server.close()
            self.server = None
        for link in list(self.links):
            link.client.close()

    def hold(self) -> None:
        """Keep back the answers of each connection that sends journal() from now on."""
        self.holding = True

    def release(self) -> None:
        """Stop holding: send every answer kept back."""
        self.holding = False
        for link in self.links:
            link.release()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        link = _Link(self, writer)
        self.links.add(link)
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            self.links.discard(link)
            return
        down = asyncio.ensure_future(self._answers(link, up_reader))
        try:
            preamble = await reader.readexactly(PREAMBLE_LENGTH)
            up_writer.write(preamble)
            while True:
                head = await reader.readexactly(4)
                (length,) = struct.unpack(">I", head)
                body = await reader.readexactly(length)
                if self.holding and method_of(body) == "journal":
                    link.held = True
                    self.held_journal_calls += 1
                up_writer.write(head + body)
                await up_writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        finally:
            down.cancel()
            with contextlib.suppress(BaseException):
                await down
            up_writer.close()
            writer.close()
            self.links.discard(link)

    async def _answers(self, link: _Link, up_reader: asyncio.StreamReader) -> None:
        try:
            while data := await up_reader.read(65536):
                link.answer(data)
        except (ConnectionError, OSError):
            pass
        finally:
            link.client.close()
