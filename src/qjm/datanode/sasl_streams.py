"""SASL on a data transfer connection, the I/O edge (design §S.12): the handshake of either
side on an asyncio connection, and the reader and writer every later byte then goes
through: the SASL layer's wrapped messages, or AES-CTR where the handshake chose it. The
rules and the framing are in qjm.hdfs.transfer_sasl.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from qjm.datanode import transfer_io as tio
from qjm.hdfs import datatransfer as codec
from qjm.hdfs import transfer_sasl as ts
from qjm.security.block_token import Token
from qjm.security.digest import DigestLayer


class SaslTransferError(codec.DataTransferError):
    """A handshake refused or failed, or a wrapped message that does not verify."""


class SaslStreamReader(asyncio.StreamReader):
    """The plain bytes of a wrapped connection: each wrapped message is read (its length
    bounded first) and unwrapped only when a read needs more bytes than are held."""

    def __init__(self, inner: asyncio.StreamReader, layer: DigestLayer) -> None:
        super().__init__()
        self._inner = inner
        self._layer = layer
        self._plain = bytearray()

    async def _more(self) -> None:
        try:
            prefix = await self._inner.readexactly(4)
        except asyncio.IncompleteReadError as exc:
            if exc.partial:
                raise ConnectionResetError("connection closed inside a wrapped length") from None
            raise
        try:
            length = ts.wrapped_length(prefix)
            wrapped = await self._inner.readexactly(length)
        except asyncio.IncompleteReadError:
            raise ConnectionResetError("connection closed inside a wrapped message") from None
        except ts.TransferSaslError as exc:
            raise SaslTransferError(str(exc)) from None
        try:
            self._plain += ts.unwrap(self._layer, wrapped)
        except ts.TransferSaslError as exc:
            raise SaslTransferError(str(exc)) from None

    async def readexactly(self, n: int) -> bytes:
        """n plain bytes; IncompleteReadError when the peer closes between messages."""
        while len(self._plain) < n:
            try:
                await self._more()
            except asyncio.IncompleteReadError:
                partial = bytes(self._plain)
                self._plain.clear()
                raise asyncio.IncompleteReadError(partial, n) from None
        out = bytes(self._plain[:n])
        del self._plain[:n]
        return out

    async def read(self, n: int = -1) -> bytes:
        """Up to n plain bytes (at least one unless the peer closed)."""
        if not self._plain:
            try:
                await self._more()
            except asyncio.IncompleteReadError:
                return b""
        n = len(self._plain) if n < 0 else min(n, len(self._plain))
        out = bytes(self._plain[:n])
        del self._plain[:n]
        return out


class SaslStreamWriter(asyncio.StreamWriter):
    """Writes through the layer: each write is sent as wrapped messages of at most
    WRAP_CHUNK bytes each; flow control, close and the transport are the connection's."""

    def __init__(self, inner: asyncio.StreamWriter, layer: DigestLayer) -> None:
        # the same transport and protocol; inner is kept so that it is never collected
        # (and closes the transport) while this writer is in use
        protocol: Any = getattr(inner, "_protocol")  # noqa: B009
        loop: Any = getattr(inner, "_loop")  # noqa: B009
        super().__init__(inner.transport, protocol, getattr(inner, "_reader"), loop)  # noqa: B009
        self._inner = inner
        self._layer = layer

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """data, wrapped."""
        if len(data):
            self.transport.writelines(ts.wrap_frames(self._layer, data))

    def writelines(self, data: Iterable[bytes | bytearray | memoryview]) -> None:
        """The pieces, joined and wrapped."""
        self.write(b"".join(data))


class AesStreamReader(asyncio.StreamReader):
    """The plain bytes of an AES-CTR connection: each read decrypts what arrived, in order
    (HDFS's CryptoInputStream on the same keystream)."""

    def __init__(self, inner: asyncio.StreamReader, key: bytes, iv: bytes) -> None:
        super().__init__()
        self._inner = inner
        self._decrypt = Cipher(algorithms.AES(key), modes.CTR(iv)).decryptor()

    async def readexactly(self, n: int) -> bytes:
        """n plain bytes; IncompleteReadError (its partial bytes decrypted) at a close."""
        try:
            data = await self._inner.readexactly(n)
        except asyncio.IncompleteReadError as exc:
            raise asyncio.IncompleteReadError(self._decrypt.update(exc.partial), n) from None
        return self._decrypt.update(data)

    async def read(self, n: int = -1) -> bytes:
        """Up to n plain bytes (none only when the peer closed)."""
        return self._decrypt.update(await self._inner.read(n))


class AesStreamWriter(asyncio.StreamWriter):
    """Writes through AES-CTR (HDFS's CryptoOutputStream); the rest is the connection's."""

    def __init__(self, inner: asyncio.StreamWriter, key: bytes, iv: bytes) -> None:
        protocol: Any = getattr(inner, "_protocol")  # noqa: B009
        loop: Any = getattr(inner, "_loop")  # noqa: B009
        super().__init__(inner.transport, protocol, getattr(inner, "_reader"), loop)  # noqa: B009
        self._inner = inner  # kept, so that it never closes the transport while in use
        self._encrypt = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor()

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """data, encrypted."""
        if len(data):
            self.transport.write(self._encrypt.update(data))

    def writelines(self, data: Iterable[bytes | bytearray | memoryview]) -> None:
        """The pieces, encrypted in order."""
        for piece in data:
            self.write(piece)


def is_wrapped(writer: asyncio.StreamWriter) -> bool:
    """Whether a writer sends through a SASL layer or a cipher (so no sendfile around it)."""
    return isinstance(writer, SaslStreamWriter | AesStreamWriter)


def _streams(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    layer: DigestLayer,
    cipher: ts.CipherKeys | None,
    server: bool,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    if cipher is not None:
        (in_key, in_iv), (out_key, out_iv) = cipher.sides(server)
        return AesStreamReader(reader, in_key, in_iv), AesStreamWriter(writer, out_key, out_iv)
    if not ts.wraps(layer):
        return reader, writer
    return SaslStreamReader(reader, layer), SaslStreamWriter(writer, layer)


async def _read(reader: asyncio.StreamReader, what: str) -> ts.EncryptorMessage:
    body = await tio.read_delimited(reader, ts.MAX_HANDSHAKE_MESSAGE, what)
    return ts.decode_message(body)


async def client_handshake(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    token: Token | None,
    protection: ts.TransferProtection,
    timeout_s: float,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """The client's handshake with a block token (HDFS's SaslDataTransferClient); the
    streams every later byte goes through. SaslTransferError when it fails."""
    client = ts.TransferSaslClient(
        token or Token(b"", b""), protection.layers, aes=bool(protection.aes_key_bytes)
    )
    try:
        async with asyncio.timeout(timeout_s):
            writer.write(client.opening())
            await writer.drain()
            writer.write(ts.delimited(client.respond(await _read(reader, "SASL challenge"))))
            await writer.drain()
            layer = client.finish(await _read(reader, "SASL rspauth"))
    except ts.TransferSaslError as exc:
        raise SaslTransferError(str(exc)) from None
    return _streams(reader, writer, layer, client.cipher, server=False)


async def server_handshake(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    password_of: Callable[[bytes], bytes],
    protection: ts.TransferProtection,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """The DataNode's handshake; the streams every later byte goes through.

    A connection that does not open with the magic number gets nothing back
    (SaslTransferError, as HDFS's InvalidMagicNumberException); a refused exchange gets
    HDFS's error message first."""
    magic = await tio.read_exactly(reader, 4, "SASL magic number")
    if magic != ts.MAGIC_BYTES:
        raise SaslTransferError(
            f"Received {magic.hex()} instead of {ts.MAGIC_BYTES.hex()} from client: no SASL "
            "data transfer protection handshake (dfs.data.transfer.protection is set)"
        )
    server = ts.TransferSaslServer(password_of, protection.layers, protection.aes_key_bytes)
    try:
        writer.write(ts.delimited(server.first(await _read(reader, "SASL initial response"))))
        await writer.drain()
        writer.write(ts.delimited(server.second(await _read(reader, "SASL response"))))
        await writer.drain()
    except ts.TransferSaslError as exc:
        if exc.reply is not None:
            writer.write(ts.delimited(exc.reply))
            await writer.drain()
        raise SaslTransferError(str(exc)) from None
    return _streams(reader, writer, server.layer, server.cipher, server=True)
