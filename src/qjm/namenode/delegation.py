"""Delegation tokens (design §S.10): HDFS's secret manager as state the edit log carries.

The master keys and the issued tokens change only by applying OP_UPDATE_MASTER_KEY and
OP_{GET,RENEW,CANCEL}_DELEGATION_TOKEN, on the active as it logs them and on a standby as
it tails them, so a standby that becomes active honours every token the old active issued.
The rules (who may get, renew and cancel, and the dates) are pure functions of the state,
the caller and the time, returning the ops to log.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field
from datetime import UTC, datetime

from qjm.editlog.ops import (
    CancelDelegationTokenOp,
    GetDelegationTokenOp,
    Op,
    RenewDelegationTokenOp,
    UpdateMasterKeyOp,
)
from qjm.editlog.ops.codec import BodyError, Reader, Writer
from qjm.editlog.ops.types import (
    HDFS_DELEGATION_KIND,
    DelegationKey,
    DelegationTokenIdentifier,
    read_token_identifier,
    write_token_identifier,
)
from qjm.namenode.errors import AccessControlError, NamenodeError

TOKEN_KIND = HDFS_DELEGATION_KIND
DAY_MS = 86_400_000


class InvalidTokenError(NamenodeError):
    """A token the secret manager does not honour (Hadoop's SecretManager.InvalidToken)."""

    java_class = "org.apache.hadoop.security.token.SecretManager$InvalidToken"


@dataclass(frozen=True)
class TokenPolicy:
    """HDFS's dfs.namenode.delegation.* lifetimes, in milliseconds."""

    max_lifetime_ms: int = 7 * DAY_MS  # dfs.namenode.delegation.token.max-lifetime
    renew_interval_ms: int = DAY_MS  # dfs.namenode.delegation.token.renew-interval
    key_update_interval_ms: int = DAY_MS  # dfs.namenode.delegation.key.update-interval


def identifier_bytes(ident: DelegationTokenIdentifier) -> bytes:
    """The identifier as Hadoop's Writable writes it (what a token carries)."""
    w = Writer()
    write_token_identifier(w, ident)
    return w.getvalue()


def parse_identifier(raw: bytes) -> DelegationTokenIdentifier:
    """A token's identifier bytes decoded; InvalidTokenError for bytes Hadoop could not write."""
    r = Reader(raw)
    try:
        ident = read_token_identifier(r)
    except BodyError:
        raise InvalidTokenError("Can't de-serialize tokenIdentifier") from None
    if r.remaining():
        raise InvalidTokenError("Can't de-serialize tokenIdentifier: bytes after its end")
    return ident


def token_password(key: bytes, identifier: bytes) -> bytes:
    """A token's password: HMAC-SHA1 of its identifier bytes under the master key."""
    return hmac.new(key, identifier, hashlib.sha1).digest()


def describe(ident: DelegationTokenIdentifier) -> str:
    """The identifier as Hadoop's formatTokenId prints it."""
    return (
        f"({TOKEN_KIND} token {ident.sequence_number} for {ident.owner.split('@')[0].split('/')[0]}"
        f" with renewer {ident.renewer})"
    )


def _time(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3] + "+0000"


@dataclass
class DelegationTokens:
    """The master keys and the live tokens with their renew dates; changed only by apply."""

    keys: dict[int, DelegationKey] = field(default_factory=dict)
    tokens: dict[DelegationTokenIdentifier, int] = field(default_factory=dict)
    current_key_id: int = 0  # the newest key's id (0: none yet)
    sequence_number: int = 0  # the newest token's sequence number

    def copy(self) -> DelegationTokens:
        """An independent copy (the values are immutable)."""
        return DelegationTokens(
            dict(self.keys), dict(self.tokens), self.current_key_id, self.sequence_number
        )

    # -- apply: the one way the state changes ------------------------------------------------

    def apply(self, op: Op) -> bool:
        """Apply a token or key op; False for any other op. Reads no clock."""
        if isinstance(op, UpdateMasterKeyOp):
            key = op.delegation_key
            self.keys[key.key_id] = key
            self.current_key_id = max(self.current_key_id, key.key_id)
            return True
        if isinstance(op, GetDelegationTokenOp):
            ident = op.token
            # Tokens and keys dead by the new token's issue date go (HDFS's remover thread,
            # here at a point every NameNode applies alike).
            now = ident.issue_date
            self.tokens = {t: d for t, d in self.tokens.items() if d >= now}
            self.keys = {
                i: k
                for i, k in self.keys.items()
                if k.expiry_date >= now or i == self.current_key_id
            }
            self.tokens[ident] = op.expiry_time
            self.sequence_number = max(self.sequence_number, ident.sequence_number)
            return True
        if isinstance(op, RenewDelegationTokenOp):
            self.tokens[op.token] = op.expiry_time
            return True
        if isinstance(op, CancelDelegationTokenOp):
            self.tokens.pop(op.token, None)
            return True
        return False

    # -- SASL: the password of a token, for DIGEST-MD5 ----------------------------------------

    def password_of(self, raw: bytes, now_ms: int) -> tuple[DelegationTokenIdentifier, bytes]:
        """The identifier and password of a live token (HDFS's retrievePassword)."""
        ident = parse_identifier(raw)
        renew_date = self.tokens.get(ident)
        if renew_date is None:
            raise InvalidTokenError(
                f"Token for real user: {ident.realuser}, can't be found in cache"
            )
        if renew_date < now_ms:
            raise InvalidTokenError(
                f"Token {ident.realuser} has expired, current time: {_time(now_ms)} "
                f"expected renewal time: {_time(renew_date)}"
            )
        key = self.keys.get(ident.master_key_id)
        if key is None or key.key is None:
            raise InvalidTokenError(
                f"Unknown master key id {ident.master_key_id} of {describe(ident)}"
            )
        return ident, token_password(key.key, identifier_bytes(ident))

    # -- the rules: ops to log for each call ---------------------------------------------------

    def plan_get(
        self,
        owner: str,
        renewer: str,
        real_user: str,
        now_ms: int,
        policy: TokenPolicy,
        new_key: bytes,
    ) -> tuple[list[Op], DelegationTokenIdentifier, bytes]:
        """getDelegationToken: (ops, identifier, password). A new master key first when there
        is none or the current one is older than the key update interval (new_key's bytes)."""
        ops: list[Op] = []
        key = self.keys.get(self.current_key_id)
        if key is None or key.key is None or key.expiry_date - policy.max_lifetime_ms <= now_ms:
            key = DelegationKey(
                key_id=self.current_key_id + 1,
                expiry_date=now_ms + policy.key_update_interval_ms + policy.max_lifetime_ms,
                key=new_key,
            )
            ops.append(UpdateMasterKeyOp(delegation_key=key))
        ident = DelegationTokenIdentifier(
            owner=owner,
            renewer=renewer,
            realuser=real_user,
            issue_date=now_ms,
            max_date=now_ms + policy.max_lifetime_ms,
            sequence_number=self.sequence_number + 1,
            master_key_id=key.key_id,
        )
        ops.append(GetDelegationTokenOp(token=ident, expiry_time=now_ms + policy.renew_interval_ms))
        assert key.key is not None
        return ops, ident, token_password(key.key, identifier_bytes(ident))

    def plan_renew(
        self, raw: bytes, password: bytes, renewer: str, now_ms: int, policy: TokenPolicy
    ) -> tuple[list[Op], int]:
        """renewDelegationToken by renewer (a short name): (ops, the new expiry time)."""
        ident = parse_identifier(raw)
        if ident.max_date < now_ms:
            raise InvalidTokenError(
                f"{renewer} tried to renew an expired token {describe(ident)} max expiration "
                f"date: {_time(ident.max_date)} currentTime: {_time(now_ms)}"
            )
        if not ident.renewer:
            raise AccessControlError(
                f"{renewer} tried to renew a token {describe(ident)} without a renewer"
            )
        if ident.renewer != renewer:
            raise AccessControlError(
                f"{renewer} tries to renew a token {describe(ident)} with non-matching "
                f"renewer {ident.renewer}"
            )
        key = self.keys.get(ident.master_key_id)
        if key is None or key.key is None:
            raise InvalidTokenError(
                f"Unable to find master key for keyId={ident.master_key_id} from cache. "
                f"Failed to renew an unexpired token {describe(ident)} with "
                f"sequenceNumber={ident.sequence_number}"
            )
        if not hmac.compare_digest(token_password(key.key, identifier_bytes(ident)), password):
            raise AccessControlError(
                f"{renewer} is trying to renew a token {describe(ident)} with wrong password"
            )
        if ident not in self.tokens:
            raise InvalidTokenError(f"Renewal request for unknown token {describe(ident)}")
        expiry = min(ident.max_date, now_ms + policy.renew_interval_ms)
        return [RenewDelegationTokenOp(token=ident, expiry_time=expiry)], expiry

    def plan_cancel(self, raw: bytes, canceller: str, canceller_short: str) -> list[Op]:
        """cancelDelegationToken by canceller (full name; its short name for the renewer)."""
        ident = parse_identifier(raw)
        if not ident.owner:
            raise InvalidTokenError(f"Token with no owner {describe(ident)}")
        if canceller != ident.owner and (not ident.renewer or canceller_short != ident.renewer):
            raise AccessControlError(
                f"{canceller} is not authorized to cancel the token {describe(ident)}"
            )
        if ident not in self.tokens:
            raise InvalidTokenError(f"Token not found {describe(ident)}")
        return [CancelDelegationTokenOp(token=ident)]


def renewer_short_name(renewer: str) -> str:
    """The renewer a token names: the short name of what the caller asked for, as Hadoop's
    AbstractDelegationTokenIdentifier.setRenewer (`yarn/host@R` is `yarn`)."""
    return renewer.split("@", 1)[0].split("/", 1)[0]


__all__ = [
    "TOKEN_KIND",
    "DelegationTokens",
    "InvalidTokenError",
    "TokenPolicy",
    "describe",
    "identifier_bytes",
    "parse_identifier",
    "renewer_short_name",
    "token_password",
]
