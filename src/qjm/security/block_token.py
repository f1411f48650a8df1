"""Block access tokens' rules (design §S.9): HDFS's BlockTokenIdentifier, its password, and
the DataNode's check, as pure functions.

The identifier is Hadoop's legacy Writable form (BlockTokenIdentifier.writeLegacy): the
expiry (vlong, ms since the epoch), the key id (vint), the user and the block pool
(WritableUtils.writeString: a 4-byte length, -1 for null, then UTF-8), the block id
(vlong), the access modes (a vint count, each an enum name as a Text), then the storage
types (the same way) and the storage ids (a vint count of writeStrings). The password is
HMAC-SHA1 of those bytes under the key the id names.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum

from qjm.errors import QjmError

KIND = "HDFS_BLOCK_TOKEN"
MAX_IDENTIFIER_BYTES = 64 * 1024  # far above any identifier a NameNode makes
_I32 = struct.Struct(">i")


class AccessMode(IntEnum):
    """BlockTokenIdentifier.AccessMode, in its ordinal order."""

    READ = 0
    WRITE = 1
    COPY = 2
    REPLACE = 3


class InvalidBlockTokenError(QjmError):
    """A token that does not grant the access asked (Hadoop's SecretManager.InvalidToken)."""


@dataclass(frozen=True)
class BlockKey:
    """One block key: its id, when it expires (ms since the epoch) and its secret."""

    key_id: int
    expiry_ms: int
    secret: bytes


@dataclass(frozen=True)
class ExportedKeys:
    """What a NameNode gives DataNodes (ExportedBlockKeys): the key it signs with now and
    every key it still accepts."""

    enabled: bool
    key_update_interval_ms: int
    token_lifetime_ms: int
    current: BlockKey
    all_keys: tuple[BlockKey, ...]


@dataclass(frozen=True)
class BlockTokenIdentifier:
    """What a block token grants: modes on one block of one pool, until expiry_ms."""

    expiry_ms: int
    key_id: int
    user_id: str | None
    pool_id: str | None
    block_id: int
    modes: frozenset[AccessMode]
    storage_types: tuple[str, ...] = ()
    storage_ids: tuple[str, ...] = ()

    def __str__(self) -> str:
        """Hadoop's toString, which its error messages quote."""
        modes = ", ".join(m.name for m in sorted(self.modes))
        return (
            f"block_token_identifier (expiryDate={self.expiry_ms}, keyId={self.key_id}, "
            f"userId={self.user_id}, blockPoolId={self.pool_id}, blockId={self.block_id}, "
            f"access modes=[{modes}], storageTypes= [{', '.join(self.storage_types)}], "
            f"storageIds= [{', '.join(self.storage_ids)}])"
        )


@dataclass(frozen=True)
class Token:
    """A token as it travels (TokenProto): identifier bytes, password, kind, service."""

    identifier: bytes
    password: bytes
    kind: str = KIND
    service: str = ""


def wall_ms() -> int:
    """The wall clock in ms since the epoch (tokens' and keys' expiry dates)."""
    return time.time_ns() // 1_000_000


# ---- Hadoop's WritableUtils ------------------------------------------------------------


def _vlong(v: int) -> bytes:
    """WritableUtils.writeVLong."""
    if -112 <= v <= 127:
        return bytes((v & 0xFF,))
    first = -112
    if v < 0:
        v = ~v
        first = -120
    n = (v.bit_length() + 7) // 8
    return bytes(((first - n) & 0xFF,)) + v.to_bytes(n, "big")


def _string(s: str | None) -> bytes:
    """WritableUtils.writeString: a 4-byte length (-1 for null), then UTF-8."""
    if s is None:
        return _I32.pack(-1)
    b = s.encode("utf-8")
    return _I32.pack(len(b)) + b


def _text(s: str) -> bytes:
    """Text.writeString (WritableUtils.writeEnum writes the name so)."""
    b = s.encode("utf-8")
    return _vlong(len(b)) + b


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("identifier ends early")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def vlong(self) -> int:
        first = self.take(1)[0]
        first = first - 256 if first > 127 else first
        if first >= -112:
            return first
        n = -119 - first if first < -120 else -111 - first
        v = int.from_bytes(self.take(n - 1), "big")
        return ~v if first < -120 else v

    def vint(self) -> int:
        v = self.vlong()
        if not -(1 << 31) <= v < 1 << 31:
            raise ValueError(f"vint {v} does not fit 32 bits")
        return v

    def count(self, limit: int) -> int:
        n = self.vint()
        if not 0 <= n <= limit:
            raise ValueError(f"count {n} outside 0..{limit}")
        return n

    def string(self) -> str | None:
        n = _I32.unpack(self.take(4))[0]
        return None if n == -1 else self.take(n).decode("utf-8")

    def text(self) -> str:
        return self.take(self.count(len(self.data))).decode("utf-8")


def encode_identifier(ident: BlockTokenIdentifier) -> bytes:
    """The identifier's bytes, as BlockTokenIdentifier.writeLegacy writes them."""
    parts = [
        _vlong(ident.expiry_ms),
        _vlong(ident.key_id),
        _string(ident.user_id),
        _string(ident.pool_id),
        _vlong(ident.block_id),
        _vlong(len(ident.modes)),
        *(_text(m.name) for m in sorted(ident.modes)),  # an EnumSet iterates by ordinal
        _vlong(len(ident.storage_types)),
        *(_text(t) for t in ident.storage_types),
        _vlong(len(ident.storage_ids)),
        *(_string(s) for s in ident.storage_ids),
    ]
    return b"".join(parts)


def decode_identifier(data: bytes) -> BlockTokenIdentifier:
    """The identifier of a token's bytes (legacy form); ValueError when malformed."""
    if not data or len(data) > MAX_IDENTIFIER_BYTES:
        raise ValueError(f"identifier of {len(data)} bytes")
    if data[0] != 0 and data[0] < 0x80:  # Hadoop reads a first byte > 0 as protobuf
        raise ValueError("a protobuf block token identifier is not read by qjm")
    r = _Reader(data)
    try:
        expiry, key_id = r.vlong(), r.vint()
        user, pool, block_id = r.string(), r.string(), r.vlong()
        modes = frozenset(AccessMode[r.text()] for _ in range(r.count(len(AccessMode))))
        types = tuple(r.text() for _ in range(r.count(len(data))))
        ids = tuple(r.string() or "" for _ in range(r.count(len(data))))
    except (KeyError, UnicodeDecodeError, struct.error) as exc:
        raise ValueError(f"malformed identifier: {exc}") from None
    return BlockTokenIdentifier(expiry, key_id, user, pool, block_id, modes, types, ids)


def compute_password(secret: bytes, identifier: bytes) -> bytes:
    """A token's password: HMAC-SHA1 of the identifier's bytes under the key's secret."""
    return hmac.new(secret, identifier, hashlib.sha1).digest()


def make_token(ident: BlockTokenIdentifier, key: BlockKey) -> Token:
    """A token for ident signed with key (ident must name key's id)."""
    if ident.key_id != key.key_id:
        raise ValueError(f"identifier names key {ident.key_id}, signed with {key.key_id}")
    data = encode_identifier(ident)
    return Token(data, compute_password(key.secret, data))


def issue_token(
    key: BlockKey,
    expiry_ms: int,
    *,
    user_id: str | None,
    pool_id: str,
    block_id: int,
    modes: Iterable[AccessMode],
) -> Token:
    """A token granting modes on the block to user_id until expiry_ms, signed with key."""
    ident = BlockTokenIdentifier(
        expiry_ms=expiry_ms,
        key_id=key.key_id,
        user_id=user_id,
        pool_id=pool_id,
        block_id=block_id,
        modes=frozenset(modes),
    )
    return make_token(ident, key)


def check_access(
    token: Token,
    keys: Mapping[int, BlockKey],
    *,
    pool_id: str,
    block_id: int,
    block_name: str,
    mode: AccessMode,
    now_ms: int,
) -> BlockTokenIdentifier:
    """The identifier of a token that grants mode on the block; InvalidBlockTokenError with
    HDFS's message otherwise (BlockTokenSecretManager.checkAccess and retrievePassword)."""
    try:
        ident = decode_identifier(token.identifier)
    except ValueError:
        raise InvalidBlockTokenError(
            "Unable to de-serialize block token identifier for user=null, "
            f"block={block_name}, access mode={mode.name}"
        ) from None
    if ident.pool_id != pool_id or ident.block_id != block_id:
        raise InvalidBlockTokenError(
            f"Block token with {ident} doesn't apply to block {block_name}"
        )
    if now_ms > ident.expiry_ms:
        raise InvalidBlockTokenError(f"Block token with {ident} is expired.")
    if mode not in ident.modes:
        raise InvalidBlockTokenError(
            f"Block token with {ident} doesn't have {mode.name} permission"
        )
    key = keys.get(ident.key_id)
    if key is None:
        raise InvalidBlockTokenError(
            f"Can't re-compute password for {ident}, since the required block key "
            f"(keyID={ident.key_id}) doesn't exist."
        )
    if not hmac.compare_digest(compute_password(key.secret, token.identifier), token.password):
        raise InvalidBlockTokenError(
            f"Block token with {ident} doesn't have the correct token password"
        )
    return ident


def retrieve_password(
    identifier: bytes, keys_of_pool: Callable[[str], Mapping[int, BlockKey]], now_ms: int
) -> bytes:
    """The password of a token identifier, recomputed from the key it names, as HDFS's
    BlockTokenSecretManager.retrievePassword (the SASL handshake on data transfer, design
    §S.12); InvalidBlockTokenError with HDFS's message for an expired token or unknown key,
    ValueError for an identifier that does not parse."""
    ident = decode_identifier(identifier)
    if now_ms > ident.expiry_ms:
        raise InvalidBlockTokenError(f"Block token with {ident} is expired.")
    key = keys_of_pool(ident.pool_id or "").get(ident.key_id)
    if key is None:
        raise InvalidBlockTokenError(
            f"Can't re-compute password for {ident}, since the required block key "
            f"(keyID={ident.key_id}) doesn't exist."
        )
    return compute_password(key.secret, identifier)


def unexpired(keys: Iterable[BlockKey], now_ms: int) -> dict[int, BlockKey]:
    """The keys not yet expired, by id (HDFS drops a key once its expiry has passed)."""
    return {k.key_id: k for k in keys if k.expiry_ms >= now_ms}
