"""SASL on DataTransferProtocol (HDFS's dfs.data.transfer.protection), the pure part:
the handshake's messages and steps, the cipher it may switch to, and the wrapped stream's
framing (design §S.12).

A client opens with the magic number 0xDEADBEEF, then DataTransferEncryptorMessageProto
messages, each varint-delimited, carry a DIGEST-MD5 exchange: the client's empty initial
response, the DataNode's challenge, the client's digest response, the DataNode's rspauth.
The username is the base64 block token identifier, the password the base64 token password
(the DataNode recomputes it from its block keys); protocol `hdfs`, server id and realm `0`
(HDFS's SaslParticipant). Under auth-int or auth-conf every later byte goes through the
layer as HDFS's SaslOutputStream writes it: a 4-byte length, then the wrapped message.

Under auth-conf, where both sides are configured for AES/CTR/NoPadding
(dfs.encrypt.data.transfer.cipher.suites), the client offers it with its digest response,
the DataNode answers with fresh keys and IVs (the keys wrapped by the SASL layer), and the
stream is AES-CTR from then on instead of the SASL layer's 3des or rc4.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Callable
from dataclasses import dataclass

from google.protobuf.message import DecodeError

from qjm.hdfs.datatransfer import encode_varint
from qjm.hdfs.proto import datatransfer_pb2 as dt
from qjm.hdfs.proto import hdfs_pb2
from qjm.security.block_token import InvalidBlockTokenError, Token
from qjm.security.digest import (
    CIPHER,
    CIPHER_3DES,
    DigestClient,
    DigestError,
    DigestLayer,
    DigestServer,
)
from qjm.security.gss import LAYER_AUTHENTICATION, LAYER_PRIVACY, SaslError, layers_of

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
AES_CTR = "AES/CTR/NoPadding"  # the one suite of dfs.encrypt.data.transfer.cipher.suites
AES_BLOCK = 16  # the IV's length
AES_KEY_BYTES = (16, 24, 32)  # dfs.encrypt.data.transfer.cipher.key.bitlength 128, 192, 256
EncryptorMessage = dt.DataTransferEncryptorMessageProto


class TransferSaslError(SaslError):
    """A handshake that cannot go on. reply, when not None, is the error message the
    DataNode sends before it closes (HDFS's sendGenericSaslErrorMessage and
    sendInvalidTokenSaslErrorMessage)."""

    def __init__(self, message: str, reply: EncryptorMessage | None = None) -> None:
        super().__init__(message)
        self.reply = reply


def message(
    status: int = SUCCESS,
    payload: bytes | None = None,
    text: str = "",
    access_token_error: bool = False,
) -> EncryptorMessage:
    """A DataTransferEncryptorMessageProto with the fields given (the others unset)."""
    m = EncryptorMessage(status=status)  # type: ignore[arg-type]
    if payload is not None:
        m.payload = payload
    if text:
        m.message = text
    if access_token_error:
        m.accessTokenError = True
    return m


def delimited(m: EncryptorMessage) -> bytes:
    """The message as it goes on the wire: a varint length, then its bytes."""
    body = m.SerializeToString()
    return encode_varint(len(body)) + body


def decode_message(data: bytes) -> EncryptorMessage:
    """A message from its proto bytes; TransferSaslError for bytes that are no such message
    (a missing or unknown status included)."""
    try:
        m = EncryptorMessage.FromString(data)
    except DecodeError as e:
        raise TransferSaslError(f"SASL handshake message: {e}") from None
    if not m.IsInitialized():  # proto2's required fields: the status, a suite, a secret's
        missing = ", ".join(m.FindInitializationErrors())  # type: ignore[attr-defined]
        raise TransferSaslError(f"SASL handshake message without {missing}")
    return m


@dataclass(frozen=True)
class CipherKeys:
    """The AES-CTR keys and IVs a handshake chose (HDFS's CipherOption): in is what the
    DataNode reads (the client writes), out what it writes."""

    in_key: bytes
    in_iv: bytes
    out_key: bytes
    out_iv: bytes

    def sides(self, server: bool) -> tuple[tuple[bytes, bytes], tuple[bytes, bytes]]:
        """((key, iv) to decrypt what arrives, (key, iv) to encrypt what is sent) of a side."""
        inbound, outbound = (self.in_key, self.in_iv), (self.out_key, self.out_iv)
        return (inbound, outbound) if server else (outbound, inbound)


def new_cipher_keys(key_bytes: int) -> CipherKeys:
    """Fresh random keys of key_bytes and 16-byte IVs (the DataNode's choice)."""
    return CipherKeys(
        os.urandom(key_bytes), os.urandom(AES_BLOCK), os.urandom(key_bytes), os.urandom(AES_BLOCK)
    )


def offers_aes(m: EncryptorMessage) -> bool:
    """Whether a client's digest response offers AES/CTR/NoPadding."""
    return any(o.suite == hdfs_pb2.AES_CTR_NOPADDING for o in m.cipherOption)


def _key_length_ok(n: int) -> bool:
    return n in AES_KEY_BYTES


def layers_of_protection(protection: str) -> int:
    """The layer mask of a dfs.data.transfer.protection value ("" is none: 0)."""
    return layers_of(protection) if protection.strip() else 0


@dataclass(frozen=True)
class TransferProtection:
    """How data transfer connections are protected: the SASL layers (0: none, no
    handshake) and the AES key length a privacy stream switches to (0: no AES)."""

    layers: int = 0
    aes_key_bytes: int = 0

    def __bool__(self) -> bool:
        """Whether connections open with the SASL handshake."""
        return bool(self.layers)

    @classmethod
    def of(
        cls, protection: str, cipher_suites: str = "", key_bits: int = 128
    ) -> TransferProtection:
        """From dfs.data.transfer.protection, dfs.encrypt.data.transfer.cipher.suites and
        its key bit length (as the config holds them, already checked)."""
        aes = key_bits // 8 if cipher_suites.strip() == AES_CTR else 0
        return cls(layers_of_protection(protection), aes)


NO_PROTECTION = TransferProtection()


class TransferSaslServer:
    """The DataNode's side of one handshake (HDFS's SaslDataTransferServer, general path),
    after the magic number: first(message) answers the challenge, second(message) the
    rspauth; then layer is the negotiated one, and cipher the AES keys where the stream
    switches to AES-CTR. aes_key_bytes > 0: AES/CTR/NoPadding with keys of that many bytes
    is taken where a client offers it under auth-conf. A refusal raises TransferSaslError
    with the error reply to send."""

    def __init__(
        self, password_of: Callable[[bytes], bytes], layers: int, aes_key_bytes: int = 0
    ) -> None:
        if aes_key_bytes and not _key_length_ok(aes_key_bytes):
            raise ValueError(f"an AES key of {aes_key_bytes} bytes (16, 24 or 32 taken)")
        self._password_of = password_of
        # 3des too: hdfs-native's auth-conf takes only it; the JDK then also picks it
        self._digest = DigestServer(
            self._password, layers, realm=REALM, digest_uri=DIGEST_URI, ciphers=CIPHERS
        )
        self._aes_key_bytes = aes_key_bytes
        self._step = 0
        self.cipher: CipherKeys | None = None

    def _password(self, username: str) -> bytes:
        try:
            identifier = base64.b64decode(username, validate=True)
        except (binascii.Error, ValueError):
            raise DigestError(f"SASL username {username[:40]!r} is not base64") from None
        return self._password_of(identifier)

    @staticmethod
    def _refuse(exc: Exception) -> TransferSaslError:
        if isinstance(exc, InvalidBlockTokenError):  # sendInvalidTokenSaslErrorMessage
            reply = message(ERROR, text=str(exc), access_token_error=True)
        else:
            reply = message(ERROR, text=str(exc))
        return TransferSaslError(str(exc), reply)

    def first(self, msg: EncryptorMessage) -> EncryptorMessage:
        """The challenge, answering the client's initial (empty) response."""
        if self._step != 0:
            raise self._refuse(DigestError("SASL handshake: a first message out of order"))
        self._step = 1
        if msg.status != SUCCESS:
            raise TransferSaslError(f"the client ended the SASL handshake: {msg.message}")
        if msg.HasField("handshakeSecret"):  # only a token signed with a QOP carries one
            raise self._refuse(DigestError("SASL handshake secrets are not taken by qjm"))
        if msg.payload:
            raise self._refuse(DigestError("DIGEST-MD5: an initial response is not expected"))
        return message(SUCCESS, self._digest.challenge())

    def second(self, msg: EncryptorMessage) -> EncryptorMessage:
        """The rspauth, answering the client's digest response, with the chosen cipher
        where the client offered AES and the layer is auth-conf (HDFS's
        negotiateCipherOption: the keys wrapped by the layer, the IVs not)."""
        if self._step != 1:
            raise self._refuse(DigestError("SASL handshake: a second message out of order"))
        self._step = 2
        if msg.status != SUCCESS:
            raise TransferSaslError(f"the client ended the SASL handshake: {msg.message}")
        try:
            rspauth = self._digest.evaluate(msg.payload or b"")
        except (SaslError, InvalidBlockTokenError, ValueError) as exc:
            raise self._refuse(exc) from None
        reply = message(SUCCESS, rspauth)
        layer = self._digest.security
        if self._aes_key_bytes and layer.layer == LAYER_PRIVACY and offers_aes(msg):
            keys = new_cipher_keys(self._aes_key_bytes)
            reply.cipherOption.add(
                suite=hdfs_pb2.AES_CTR_NOPADDING,
                inKey=layer.wrap(keys.in_key),
                inIv=keys.in_iv,
                outKey=layer.wrap(keys.out_key),
                outIv=keys.out_iv,
            )
            self.cipher = keys
        return reply

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
    the magic number and first(), then respond(challenge), then finish(rspauth). aes: offer
    AES/CTR/NoPadding with the digest response where the client asks for privacy."""

    def __init__(
        self, token: Token, layers: int, cnonce: str | None = None, aes: bool = False
    ) -> None:
        self._digest = DigestClient(
            token.identifier, token.password, layers, cnonce, digest_uri=DIGEST_URI
        )
        self._aes = aes and bool(layers & LAYER_PRIVACY)
        self._step = 0
        self.cipher: CipherKeys | None = None

    def opening(self) -> bytes:
        """The magic number and the empty initial response, as sent at once."""
        self._step = 1
        return MAGIC_BYTES + delimited(message(SUCCESS, b""))

    @staticmethod
    def _check(msg: EncryptorMessage) -> bytes:
        if msg.status != SUCCESS:
            name = "ERROR_UNKNOWN_KEY" if msg.status == ERROR_UNKNOWN_KEY else "ERROR"
            raise TransferSaslError(f"DataNode refused the SASL handshake ({name}): {msg.message}")
        return msg.payload

    def respond(self, msg: EncryptorMessage) -> EncryptorMessage:
        """The digest response to the DataNode's challenge (offering AES where asked to)."""
        if self._step != 1:
            raise TransferSaslError("SASL handshake: a challenge out of order")
        self._step = 2
        try:
            reply = message(SUCCESS, self._digest.evaluate(self._check(msg)))
        except SaslError as exc:
            raise TransferSaslError(str(exc)) from None
        if self._aes:
            reply.cipherOption.add(suite=hdfs_pb2.AES_CTR_NOPADDING)
        return reply

    def finish(self, msg: EncryptorMessage) -> DigestLayer:
        """The negotiated layer, once the DataNode's rspauth checks; cipher is then the AES
        keys the DataNode chose, where it chose any."""
        if self._step != 2:
            raise TransferSaslError("SASL handshake: an rspauth out of order")
        self._step = 3
        payload = self._check(msg)
        try:
            self._digest.evaluate(payload)
        except SaslError as exc:
            raise TransferSaslError(str(exc)) from None
        layer = self._digest.security
        options = list(msg.cipherOption)
        if not options:
            return layer
        if len(options) > 1 or not self._aes or layer.layer != LAYER_PRIVACY:
            raise TransferSaslError("the DataNode chose a cipher option this client did not offer")
        option = options[0]
        if option.suite != hdfs_pb2.AES_CTR_NOPADDING:
            raise TransferSaslError(f"the DataNode chose cipher suite {option.suite}, not AES")
        keys = CipherKeys(
            unwrap(layer, option.inKey), option.inIv, unwrap(layer, option.outKey), option.outIv
        )
        if not (_key_length_ok(len(keys.in_key)) and len(keys.in_key) == len(keys.out_key)):
            raise TransferSaslError(f"the DataNode chose an AES key of {len(keys.in_key)} bytes")
        if len(keys.in_iv) != AES_BLOCK or len(keys.out_iv) != AES_BLOCK:
            raise TransferSaslError("the DataNode chose an AES IV that is not 16 bytes")
        self.cipher = keys
        return layer


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
