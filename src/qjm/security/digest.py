"""SASL DIGEST-MD5 (RFC 2831) as Hadoop's TOKEN authentication uses it: both sides of one
exchange, and the auth-int and auth-conf security layers as the JDK's mechanism wraps
messages (design §S.10).

The server's challenge rides in its NEGOTIATE; the client answers with its digest response
(username: the base64 token identifier; password: the base64 token password; realm
`default`; digest-uri `/default`); the server checks it and answers `rspauth`. Under a
security layer every later message carries a 10-byte HMAC-MD5, a message type and a
sequence number; under auth-conf the message and HMAC are RC4-encrypted first.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable

from cryptography.hazmat.decrepit.ciphers.algorithms import ARC4, TripleDES
from cryptography.hazmat.primitives.ciphers import Cipher, modes

from qjm.security.gss import LAYER_AUTHENTICATION, LAYER_INTEGRITY, LAYER_PRIVACY, SaslError

REALM = "default"  # SaslRpcServer.SASL_DEFAULT_REALM
PROTOCOL = ""  # the TOKEN method's SASL protocol, as Hadoop's NEGOTIATE names it
SERVER_ID = "default"
DIGEST_URI = f"{PROTOCOL}/{SERVER_ID}"
MAX_BUFFER = 65536
QOP_OF_LAYER = {
    LAYER_AUTHENTICATION: "auth",
    LAYER_INTEGRITY: "auth-int",
    LAYER_PRIVACY: "auth-conf",
}
LAYER_OF_QOP = {v: k for k, v in QOP_OF_LAYER.items()}
CIPHER = "rc4"  # auth-conf's ciphers (design §S.10, §S.12): rc4, and ...
CIPHER_3DES = "3des"  # ... 3des, hdfs-native's only one (the JDK's client picks it too)
CIPHERS = (CIPHER, CIPHER_3DES)  # the ciphers built, our client's order of preference
_CLIENT_SIGN = b"Digest session key to client-to-server signing key magic constant"
_SERVER_SIGN = b"Digest session key to server-to-client signing key magic constant"
_CLIENT_SEAL = b"Digest H(A1) to client-to-server sealing key magic constant"
_SERVER_SEAL = b"Digest H(A1) to server-to-client sealing key magic constant"
_MESSAGE_TYPE = b"\x00\x01"
_EMPTY_HASH = "0" * 32
_MAX_CHALLENGE = 4096  # RFC 2831's bound on a digest response / challenge


class DigestError(SaslError):
    """A DIGEST-MD5 exchange or message that cannot go on, in the JDK's words."""


def _md5(data: bytes) -> bytes:
    return hashlib.md5(data, usedforsecurity=False).digest()


def parse_directives(data: bytes) -> dict[str, str]:
    """The directives of a challenge or response: `k=v` or `k="quoted"`, comma-separated."""
    if len(data) > _MAX_CHALLENGE:
        raise DigestError(f"DIGEST-MD5: a message of {len(data)} bytes, over {_MAX_CHALLENGE}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise DigestError("DIGEST-MD5: a message that is not UTF-8") from None
    out: dict[str, str] = {}
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " \t,":
            i += 1
        if i >= n:
            break
        eq = text.find("=", i)
        if eq < 0:
            raise DigestError(f"DIGEST-MD5: directive without a value at offset {i}")
        key = text[i:eq].strip().lower()
        i = eq + 1
        if i < n and text[i] == '"':
            i += 1
            value = []
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n:
                    i += 1
                value.append(text[i])
                i += 1
            if i >= n:
                raise DigestError(f"DIGEST-MD5: unterminated quoted value of {key}")
            i += 1
            parsed = "".join(value)
        else:
            end = text.find(",", i)
            end = n if end < 0 else end
            parsed = text[i:end].strip()
            i = end
        if key in out and key != "realm":
            raise DigestError(f"DIGEST-MD5: duplicate directive {key}")
        out.setdefault(key, parsed)
    return out


def _quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def encode_credential(raw: bytes) -> str:
    """A token identifier or password as DIGEST-MD5 carries it: base64 (SaslRpcServer)."""
    return base64.b64encode(raw).decode("ascii")


def hash_a1(user: str, realm: str, password: str, nonce: str, cnonce: str, authzid: str) -> bytes:
    """H(A1) of RFC 2831 (md5-sess), binary: the key every later value derives from."""
    inner = _md5(f"{user}:{realm}:{password}".encode())
    a1 = inner + f":{nonce}:{cnonce}".encode() + (f":{authzid}".encode() if authzid else b"")
    return _md5(a1)


def response_value(
    ha1: bytes, nonce: str, nc: str, cnonce: str, qop: str, digest_uri: str, *, initial: bool
) -> str:
    """The response (initial) or rspauth value: KD(HEX(H(A1)), nonce:nc:cnonce:qop:HEX(H(A2)))."""
    a2 = ("AUTHENTICATE:" if initial else ":") + digest_uri
    if qop != "auth":
        a2 += ":" + _EMPTY_HASH
    a2_hex = _md5(a2.encode()).hex()
    return _md5(f"{ha1.hex()}:{nonce}:{nc}:{cnonce}:{qop}:{a2_hex}".encode()).hex()


class Rc4:
    """The RC4 stream cipher, one direction; its state runs on across messages (as the JDK's).

    The cipher is the `cryptography` package's (OpenSSL's): a frame's bytes are never looped
    over in Python. RC4 is broken as a cipher; it is here because it is what the genuine
    client's DIGEST-MD5 picks (design §S.10)."""

    def __init__(self, key: bytes) -> None:
        self._stream = Cipher(ARC4(key), mode=None).encryptor()

    def process(self, data: bytes) -> bytes:
        """data XORed with the next len(data) bytes of the key stream."""
        return self._stream.update(data)


def des_parity_key(seven: bytes) -> bytes:
    """A DES key from 7 bytes as the JDK's DIGEST-MD5 makes one: the 56 bits, 7 to a byte
    from the top, each byte's low bit set for odd parity."""
    bits = int.from_bytes(seven, "big")
    out = bytearray()
    for i in range(8):
        b = ((bits >> (7 * (7 - i))) & 0x7F) << 1
        out.append(b | ((b.bit_count() & 1) ^ 1))
    return bytes(out)


class TripleDesCbc:
    """DIGEST-MD5's 3des, one direction: DES-EDE2 in CBC, the chain running on across
    messages (as the JDK's Cipher.update), keys and IV from the 16-byte sealing key."""

    def __init__(self, key: bytes, *, encrypt: bool) -> None:
        k1, k2 = des_parity_key(key[:7]), des_parity_key(key[7:14])
        cipher = Cipher(TripleDES(k1 + k2 + k1), modes.CBC(key[8:16]))
        self._stream = cipher.encryptor() if encrypt else cipher.decryptor()

    def process(self, data: bytes) -> bytes:
        """data (a whole number of 8-byte blocks) through the cipher."""
        return self._stream.update(data)


class DigestLayer:
    """The security layer of a completed exchange: wraps what one side sends, unwraps what
    the other sent (sequence numbers from 0 each way)."""

    def __init__(self, layer: int, ha1: bytes, *, client: bool, cipher: str = CIPHER) -> None:
        self.layer = layer
        self.cipher = cipher
        send_sign, recv_sign = (
            (_CLIENT_SIGN, _SERVER_SIGN) if client else (_SERVER_SIGN, _CLIENT_SIGN)
        )
        self._send_key = _md5(ha1 + send_sign)
        self._recv_key = _md5(ha1 + recv_sign)
        self._send_seq = 0
        self._recv_seq = 0
        self._enc: Rc4 | TripleDesCbc | None = None
        self._dec: Rc4 | TripleDesCbc | None = None
        self._block = 1
        if layer == LAYER_PRIVACY:
            send_seal, recv_seal = (
                (_CLIENT_SEAL, _SERVER_SEAL) if client else (_SERVER_SEAL, _CLIENT_SEAL)
            )
            send_key, recv_key = _md5(ha1[:16] + send_seal), _md5(ha1[:16] + recv_seal)
            if cipher == CIPHER_3DES:
                self._enc = TripleDesCbc(send_key, encrypt=True)
                self._dec = TripleDesCbc(recv_key, encrypt=False)
                self._block = 8
            elif cipher == CIPHER:
                self._enc, self._dec = Rc4(send_key), Rc4(recv_key)
            else:
                raise DigestError(f"DIGEST-MD5: cipher {cipher} is not built")

    @property
    def wraps(self) -> bool:
        """Whether messages are wrapped (auth-int or auth-conf)."""
        return self.layer in (LAYER_INTEGRITY, LAYER_PRIVACY)

    @staticmethod
    def _mac(key: bytes, seq: bytes, data: bytes) -> bytes:
        return hmac.new(key, seq + data, "md5").digest()[:10]

    def wrap(self, data: bytes) -> bytes:
        """data with its MAC, message type and sequence number; encrypted under auth-conf."""
        seq = self._send_seq.to_bytes(4, "big")
        mac = self._mac(self._send_key, seq, data)
        self._send_seq = (self._send_seq + 1) & 0xFFFFFFFF
        if self._block > 1:  # 1..8 bytes, each the count, so the body fills whole blocks
            pad = self._block - (len(data) + 10) % self._block
            body = data + bytes([pad]) * pad + mac
        else:
            body = data + mac
        if self._enc is not None:
            body = self._enc.process(body)
        return body + _MESSAGE_TYPE + seq

    def unwrap(self, data: bytes) -> bytes:
        """The message inside a peer's wrapped data, its MAC and sequence number checked."""
        if len(data) < 16:
            raise DigestError(f"DIGEST-MD5: a wrapped message of {len(data)} bytes, under 16")
        body, kind, seq = data[:-6], data[-6:-4], data[-4:]
        if kind != _MESSAGE_TYPE:
            raise DigestError(f"DIGEST-MD5: message type {kind.hex()}, not 0001")
        if int.from_bytes(seq, "big") != self._recv_seq:
            raise DigestError(
                f"DIGEST-MD5: Out of order sequencing of messages. Got: "
                f"{int.from_bytes(seq, 'big')} Expected: {self._recv_seq}"
            )
        if self._dec is not None:
            if len(body) % self._block:
                raise DigestError(f"DIGEST-MD5: a sealed body of {len(body)} bytes")
            body = self._dec.process(body)
        message, mac = body[:-10], body[-10:]
        if self._block > 1:
            pad = message[-1] if message else 0
            if not 1 <= pad <= self._block or message[-pad:] != bytes([pad]) * pad:
                raise DigestError("DIGEST-MD5: a sealed message's padding does not verify")
            message = message[:-pad]
        if not hmac.compare_digest(mac, self._mac(self._recv_key, seq, message)):
            raise DigestError("DIGEST-MD5: the MAC of a wrapped message does not verify")
        self._recv_seq = (self._recv_seq + 1) & 0xFFFFFFFF
        return message


class _Exchange:
    """What both sides of an exchange share once it is complete: its layer."""

    _security: DigestLayer | None = None

    @property
    def security(self) -> DigestLayer:
        """The completed exchange's layer."""
        assert self._security is not None
        return self._security

    @property
    def wraps(self) -> bool:
        """Whether every later message is wrapped (auth-int or auth-conf)."""
        return self._security is not None and self._security.wraps

    def wrap(self, data: bytes) -> bytes:
        """data wrapped for the peer."""
        return self.security.wrap(data)

    def unwrap(self, data: bytes) -> bytes:
        """The peer's wrapped data, checked."""
        return self.security.unwrap(data)


class DigestServer(_Exchange):
    """The server's side of one exchange: challenge(), then evaluate(the client's response).

    password_of(username) returns the raw token password of a username (the base64
    identifier), or raises to refuse it (a SaslError, or any exception the caller maps).
    """

    def __init__(
        self,
        password_of: Callable[[str], bytes],
        layers: int,
        nonce: str | None = None,
        *,
        realm: str = REALM,
        digest_uri: str = DIGEST_URI,
        ciphers: tuple[str, ...] = CIPHERS,
    ) -> None:
        self._password_of = password_of
        self.ciphers = ciphers  # offered under auth-conf
        self.realm = realm  # HDFS's data transfer uses "0" and "hdfs/0" (design §S.12)
        self.digest_uri = digest_uri
        self.layers = layers
        self.nonce = nonce or base64.b64encode(secrets.token_bytes(30)).decode("ascii")
        self.complete = False
        self.username = ""  # the authenticated username (base64 identifier), once complete
        self.layer = 0
        self._security: DigestLayer | None = None
        self._challenged = False

    def _qops(self) -> list[str]:
        return [
            QOP_OF_LAYER[b]
            for b in (LAYER_AUTHENTICATION, LAYER_INTEGRITY, LAYER_PRIVACY)
            if b & self.layers
        ]

    def challenge(self) -> bytes:
        """The server's challenge (the JDK's form and order of directives)."""
        self._challenged = True
        qops = self._qops()
        parts = [
            f'realm="{self.realm}"',
            f'nonce="{self.nonce}"',
            f'qop="{",".join(qops)}"',
            "charset=utf-8",
        ]
        if "auth-conf" in qops:
            parts.append(f'cipher="{",".join(self.ciphers)}"')
        parts.append("algorithm=md5-sess")
        return ",".join(parts).encode()

    def evaluate(self, response: bytes) -> bytes:
        """The rspauth answer to the client's digest response; DigestError refuses it."""
        if self.complete or not self._challenged:
            raise DigestError("DIGEST-MD5: a response out of order")
        d = parse_directives(response)
        charset = d.get("charset")
        if charset is not None and charset.lower() != "utf-8":
            raise DigestError(
                f"DIGEST-MD5: digest response format violation. Unknown charset {charset}"
            )
        user = d.get("username")
        if not user:
            raise DigestError("DIGEST-MD5: digest response format violation. Missing username.")
        realm = d.get("realm", "")
        if realm not in (self.realm, ""):
            raise DigestError(
                f"DIGEST-MD5: digest response format violation. Nonexistent realm: {realm}"
            )
        if d.get("nonce") != self.nonce:
            raise DigestError("DIGEST-MD5: digest response format violation. Mismatched nonce.")
        cnonce = d.get("cnonce")
        if not cnonce:
            raise DigestError("DIGEST-MD5: digest response format violation. Missing cnonce.")
        nc = d.get("nc", "")
        if nc != "00000001":
            raise DigestError(f"DIGEST-MD5: Nonce count does not match: {nc}")
        qop = d.get("qop", "auth")
        if qop not in self._qops():
            raise DigestError(f"DIGEST-MD5: Client selected unsupported protection: {qop}")
        cipher = d.get("cipher", "") if qop == "auth-conf" else CIPHER
        if cipher not in self.ciphers:
            raise DigestError(
                f"DIGEST-MD5: Client selected unsupported cipher: {d.get('cipher')} "
                f"(offered {','.join(self.ciphers)})"
            )
        uri = d.get("digest-uri", "")
        if uri != self.digest_uri:
            raise DigestError(
                "DIGEST-MD5: digest response format violation. Mismatched URI: "
                f"{uri}; expecting: {self.digest_uri}"
            )
        authzid = d.get("authzid", "")
        password = encode_credential(self._password_of(user))
        ha1 = hash_a1(user, realm, password, self.nonce, cnonce, authzid)
        want = response_value(ha1, self.nonce, nc, cnonce, qop, uri, initial=True)
        if not hmac.compare_digest(want, d.get("response", "").lower()):
            raise DigestError("DIGEST-MD5: digest response format violation. Mismatched response.")
        if authzid and authzid != user:
            raise DigestError(f"DIGEST-MD5: {user} is not authorized to act as {authzid}")
        self.username = user
        self.layer = LAYER_OF_QOP[qop]
        self._security = DigestLayer(self.layer, ha1, client=False, cipher=cipher)
        self.complete = True
        rspauth = response_value(ha1, self.nonce, nc, cnonce, qop, uri, initial=False)
        return f"rspauth={rspauth}".encode()


class DigestClient(_Exchange):
    """The client's side of one exchange with a token: evaluate(challenge), then the rspauth."""

    def __init__(
        self,
        identifier: bytes,
        password: bytes,
        layers: int,
        cnonce: str | None = None,
        *,
        digest_uri: str = DIGEST_URI,
    ) -> None:
        self.digest_uri = digest_uri
        self.user = encode_credential(identifier)
        self._password = encode_credential(password)
        self.layers = layers
        self.cnonce = cnonce or base64.b64encode(secrets.token_bytes(30)).decode("ascii")
        self.complete = False
        self.layer = 0
        self.cipher = CIPHER
        self._expect = ""
        self._ha1 = b""
        self._security: DigestLayer | None = None

    def evaluate(self, challenge: bytes) -> bytes:
        """The digest response to the server's challenge, or (second call) check its rspauth."""
        if self._expect:
            return self._check_rspauth(challenge)
        d = parse_directives(challenge)
        nonce = d.get("nonce")
        if not nonce:
            raise DigestError("DIGEST-MD5: the challenge has no nonce")
        if d.get("algorithm", "").lower() != "md5-sess":
            raise DigestError("DIGEST-MD5: the challenge's algorithm is not md5-sess")
        offered = [q.strip() for q in d.get("qop", "auth").split(",")]
        layer = next(
            (
                b
                for b in (LAYER_PRIVACY, LAYER_INTEGRITY, LAYER_AUTHENTICATION)
                if b & self.layers and QOP_OF_LAYER[b] in offered
            ),
            0,
        )
        if not layer:
            raise DigestError(
                "No common protection layer between client and server "
                f"(offered {','.join(offered)})"
            )
        qop = QOP_OF_LAYER[layer]
        offered_ciphers = [c.strip() for c in d.get("cipher", "").split(",")]
        cipher = next((c for c in CIPHERS if c in offered_ciphers), "")
        if layer == LAYER_PRIVACY and not cipher:
            raise DigestError(
                f"DIGEST-MD5: the server offers no cipher qjm has ({','.join(CIPHERS)})"
            )
        self.cipher = cipher or CIPHER
        realm = d.get("realm", REALM)
        self._ha1 = hash_a1(self.user, realm, self._password, nonce, self.cnonce, "")
        nc = "00000001"
        uri = self.digest_uri
        response = response_value(self._ha1, nonce, nc, self.cnonce, qop, uri, initial=True)
        self._expect = response_value(self._ha1, nonce, nc, self.cnonce, qop, uri, initial=False)
        self.layer = layer
        parts = [
            "charset=utf-8",
            f'username="{_quote(self.user)}"',
            f'realm="{_quote(realm)}"',
            f'nonce="{_quote(nonce)}"',
            f"nc={nc}",
            f'cnonce="{_quote(self.cnonce)}"',
            f'digest-uri="{uri}"',
            f"maxbuf={MAX_BUFFER}",
            f"response={response}",
            f"qop={qop}",
        ]
        if layer == LAYER_PRIVACY:
            parts.append(f'cipher="{self.cipher}"')
        return ",".join(parts).encode()

    def _check_rspauth(self, message: bytes) -> bytes:
        if self.complete:
            raise DigestError("DIGEST-MD5: the exchange is already complete")
        got = parse_directives(message).get("rspauth", "")
        if not hmac.compare_digest(got.lower(), self._expect):
            raise DigestError("DIGEST-MD5: the server's rspauth does not match")
        self._security = DigestLayer(self.layer, self._ha1, client=True, cipher=self.cipher)
        self.complete = True
        return b""
