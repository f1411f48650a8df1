"""SASL on DataTransferProtocol (HDFS's dfs.data.transfer.protection), the pure part:
the handshake's messages and steps, and the wrapped stream's framing (design §S.12).

A client opens with the magic number 0xDEADBEEF, then DataTransferEncryptorMessageProto
messages, each varint-delimited, carry a DIGEST-MD5 exchange: the client's empty initial
response, the DataNode's challenge, the client's digest response, the DataNode's rspauth.
The username is the base64 block token identifier, the password the base64 token password
(the DataNode recomputes it from its block keys); protocol `hdfs`, server id and realm `0`
(HDFS's SaslParticipant). Under auth-int or auth-conf every later byte goes through the
layer as HDFS's SaslOutputStream writes it: a 4-byte length, then the wrapped message.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass

from qjm.security.block_token import InvalidBlockTokenError, Token
from qjm.security.digest import (
    CIPHER,
    CIPHER_3DES,
    DigestClient,
    DigestError,
    DigestLayer,
    DigestServer,
)
from qjm.security.gss import LAYER_AUTHENTICATION, SaslError, layers_of

MAGIC = 0xDEADBEEF  # DataTransferSaslUtil.SASL_TRANSFER_MAGIC_NUMBER
MAGIC_BYTES = MAGIC.to_bytes(4, "big")
PROTOCOL = "hdfs"
SERVER_ID = "0"
REALM = SERVER_ID  # the JDK's DIGEST-MD5 server offers its server name as the realm
DIGEST_URI = f"{PROTOCOL}/{SERVER_ID}"
# DataTransferEncryptorStatus
SUCCESS = 0
ERROR_UNKNOWN_KEY = 1
ERROR = 2
CIPHERS = (CIPHER_3DES, CIPHER)  # offered under auth-conf (design §S.12)
MAX_HANDSHAKE_MESSAGE = 64 * 1024  # a handshake message's bound (directives are < 4 KiB)
# a wrapped message carries at most this many bytes of the stream: DIGEST-MD5's maxbuf
# (65536) less the 16 bytes the layer adds, as the JDK's rawSendSize
WRAP_CHUNK = 65536 - 16
# the largest wrapped message taken: HDFS wraps each write whole, and a packet may carry
# up to 16 MiB (the DataNode's bound on a packet) plus its header and sums
MAX_WRAPPED = 17 * 1024 * 1024
_LENGTH = 4


class TransferSaslError(SaslError):
    """A handshake that cannot go on. reply, when not None, is the error message the
    DataNode sends before it closes (HDFS's sendGenericSaslErrorMessage and
    sendInvalidTokenSaslErrorMessage)."""

    def __init__(self, message: str, reply: EncryptorMessage | None = None) -> None:
        super().__init__(message)
        self.reply = reply


@dataclass(frozen=True)
class EncryptorMessage:
    """A DataTransferEncryptorMessageProto: status (1), payload (2), message (3),
    cipherOption (4, only counted: qjm negotiates no cipher), handshakeSecret (5, only
    noted), accessTokenError (6)."""

    status: int = SUCCESS
    payload: bytes | None = None
    message: str = ""
    access_token_error: bool = False
    cipher_options: int = 0
    handshake_secret: bool = False


def _varint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _read_varint(data: bytes, i: int) -> tuple[int, int]:
    v = shift = 0
    while True:
        if i >= len(data):
            raise TransferSaslError("SASL handshake message: a varint runs past its end")
        b = data[i]
        i += 1
        v |= (b & 0x7F) << shift
        if not b & 0x80:
            return v, i
        shift += 7
        if shift > 63:
            raise TransferSaslError("SASL handshake message: a varint over 64 bits")


def encode_message(m: EncryptorMessage) -> bytes:
    """The message's proto bytes (fields in number order)."""
    out = bytearray(b"\x08" + _varint(m.status))
    if m.payload is not None:
        out += b"\x12" + _varint(len(m.payload)) + m.payload
    if m.message:
        text = m.message.encode()
        out += b"\x1a" + _varint(len(text)) + text
    if m.access_token_error:
        out += b"\x30\x01"
    return bytes(out)


def delimited(m: EncryptorMessage) -> bytes:
    """The message as it goes on the wire: a varint length, then its bytes."""
    body = encode_message(m)
    return _varint(len(body)) + body


def decode_message(data: bytes) -> EncryptorMessage:
    """A message from its proto bytes; TransferSaslError for malformed bytes or a missing
    status. Unknown fields are skipped, as protobuf does."""
    status: int | None = None
    payload: bytes | None = None
    message = ""
    token_error = False
    options = 0
    secret = False
    i = 0
    while i < len(data):
        key, i = _read_varint(data, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _read_varint(data, i)
            if field == 1:
                status = value
            elif field == 6:
                token_error = bool(value)
        elif wire == 2:
            n, i = _read_varint(data, i)
            if i + n > len(data):
                raise TransferSaslError("SASL handshake message: a field runs past its end")
            chunk = data[i : i + n]
            i += n
            if field == 2:
                payload = chunk
            elif field == 3:
                try:
                    message = chunk.decode()
                except UnicodeDecodeError:
                    raise TransferSaslError("SASL handshake message: text not UTF-8") from None
            elif field == 4:
                options += 1
            elif field == 5:
                secret = True
        elif wire in (1, 5):
            i += 8 if wire == 1 else 4
            if i > len(data):
                raise TransferSaslError("SASL handshake message: a field runs past its end")
        else:
            raise TransferSaslError(f"SASL handshake message: wire type {wire}")
    if status is None:
        raise TransferSaslError("SASL handshake message without a status")
    if status not in (SUCCESS, ERROR_UNKNOWN_KEY, ERROR):
        raise TransferSaslError(f"SASL handshake message with status {status}")
    return EncryptorMessage(status, payload, message, token_error, options, secret)


def layers_of_protection(protection: str) -> int:
    """The layer mask of a dfs.data.transfer.protection value ("" is none: 0)."""
    return layers_of(protection) if protection.strip() else 0


class TransferSaslServer:
    """The DataNode's side of one handshake (HDFS's SaslDataTransferServer, general path),
    after the magic number: first(message) answers the challenge, second(message) the
    rspauth; then layer is the negotiated one. A refusal raises TransferSaslError with the
    error reply to send."""

    def __init__(self, password_of: Callable[[bytes], bytes], layers: int) -> None:
        self._password_of = password_of
        # 3des too: hdfs-native's auth-conf takes only it; the JDK then also picks it
        self._digest = DigestServer(
            self._password, layers, realm=REALM, digest_uri=DIGEST_URI, ciphers=CIPHERS
        )
        self._step = 0

    def _password(self, username: str) -> bytes:
        try:
            identifier = base64.b64decode(username, validate=True)
        except (binascii.Error, ValueError):
            raise DigestError(f"SASL username {username[:40]!r} is not base64") from None
        return self._password_of(identifier)

    @staticmethod
    def _refuse(exc: Exception) -> TransferSaslError:
        if isinstance(exc, InvalidBlockTokenError):  # sendInvalidTokenSaslErrorMessage
            reply = EncryptorMessage(ERROR, message=str(exc), access_token_error=True)
        else:
            reply = EncryptorMessage(ERROR, message=str(exc))
        return TransferSaslError(str(exc), reply)

    def first(self, msg: EncryptorMessage) -> EncryptorMessage:
        """The challenge, answering the client's initial (empty) response."""
        if self._step != 0:
            raise self._refuse(DigestError("SASL handshake: a first message out of order"))
        self._step = 1
        if msg.status != SUCCESS:
            raise TransferSaslError(f"the client ended the SASL handshake: {msg.message}")
        if msg.handshake_secret:  # only a token a NameNode signed with a QOP carries one
            raise self._refuse(DigestError("SASL handshake secrets are not taken by qjm"))
        if msg.payload:
            raise self._refuse(DigestError("DIGEST-MD5: an initial response is not expected"))
        return EncryptorMessage(SUCCESS, self._digest.challenge())

    def second(self, msg: EncryptorMessage) -> EncryptorMessage:
        """The rspauth, answering the client's digest response (no cipher option: the
        stream is wrapped by the SASL layer itself)."""
        if self._step != 1:
            raise self._refuse(DigestError("SASL handshake: a second message out of order"))
        self._step = 2
        if msg.status != SUCCESS:
            raise TransferSaslError(f"the client ended the SASL handshake: {msg.message}")
        try:
            rspauth = self._digest.evaluate(msg.payload or b"")
        except (SaslError, InvalidBlockTokenError, ValueError) as exc:
            raise self._refuse(exc) from None
        return EncryptorMessage(SUCCESS, rspauth)

    @property
    def layer(self) -> DigestLayer:
        """The negotiated layer (once second() answered)."""
        return self._digest.security

    @property
    def username(self) -> str:
        """The authenticated username (the base64 identifier)."""
        return self._digest.username


class TransferSaslClient:
    """The client's side of one handshake with a block token (HDFS's SaslDataTransferClient):
    the magic number and first(), then respond(challenge), then finish(rspauth)."""

    def __init__(self, token: Token, layers: int, cnonce: str | None = None) -> None:
        self._digest = DigestClient(
            token.identifier, token.password, layers, cnonce, digest_uri=DIGEST_URI
        )
        self._step = 0

    def opening(self) -> bytes:
        """The magic number and the empty initial response, as sent at once."""
        self._step = 1
        return MAGIC_BYTES + delimited(EncryptorMessage(SUCCESS, b""))

    @staticmethod
    def _check(msg: EncryptorMessage) -> bytes:
        if msg.status != SUCCESS:
            name = "ERROR_UNKNOWN_KEY" if msg.status == ERROR_UNKNOWN_KEY else "ERROR"
            raise TransferSaslError(f"DataNode refused the SASL handshake ({name}): {msg.message}")
        return msg.payload or b""

    def respond(self, msg: EncryptorMessage) -> EncryptorMessage:
        """The digest response to the DataNode's challenge."""
        if self._step != 1:
            raise TransferSaslError("SASL handshake: a challenge out of order")
        self._step = 2
        try:
            return EncryptorMessage(SUCCESS, self._digest.evaluate(self._check(msg)))
        except SaslError as exc:
            raise TransferSaslError(str(exc)) from None

    def finish(self, msg: EncryptorMessage) -> DigestLayer:
        """The negotiated layer, once the DataNode's rspauth checks."""
        if self._step != 2:
            raise TransferSaslError("SASL handshake: an rspauth out of order")
        self._step = 3
        payload = self._check(msg)
        if msg.cipher_options:
            raise TransferSaslError("the DataNode negotiated a cipher option qjm does not take")
        try:
            self._digest.evaluate(payload)
        except SaslError as exc:
            raise TransferSaslError(str(exc)) from None
        return self._digest.security


def wraps(layer: DigestLayer) -> bool:
    """Whether the stream goes through the layer (auth-int or auth-conf; auth: in clear)."""
    return layer.layer != LAYER_AUTHENTICATION


def wrap_frames(layer: DigestLayer, data: bytes | bytearray | memoryview) -> list[bytes]:
    """data as wrapped messages, each a 4-byte length and the wrapped bytes of at most
    WRAP_CHUNK bytes of data (HDFS's SaslOutputStream framing)."""
    view = memoryview(data).cast("B")
    out: list[bytes] = []
    for off in range(0, len(view), WRAP_CHUNK):
        wrapped = layer.wrap(bytes(view[off : off + WRAP_CHUNK]))
        out.append(len(wrapped).to_bytes(_LENGTH, "big"))
        out.append(wrapped)
    return out


def wrapped_length(prefix: bytes) -> int:
    """The length a wrapped message's 4-byte prefix gives, bounded (TransferSaslError)."""
    n = int.from_bytes(prefix, "big")
    if n < 16 or n > MAX_WRAPPED:
        raise TransferSaslError(f"a wrapped message of {n} bytes (16..{MAX_WRAPPED} taken)")
    return n


def unwrap(layer: DigestLayer, wrapped: bytes) -> bytes:
    """The data of one wrapped message; TransferSaslError when it does not verify."""
    try:
        return layer.unwrap(wrapped)
    except SaslError as exc:
        raise TransferSaslError(str(exc)) from None
