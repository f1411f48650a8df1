"""The SASL GSSAPI mechanism (RFC 4752) on MIT Kerberos: both sides of one exchange.

Hadoop's RPC carries it (design §S.1): the client's first token, the server's answer, then
the security-layer handshake, a wrapped 4-byte offer (layer bit mask and largest message)
that the client answers with its choice. The stages follow the JDK's GSSAPI mechanism, which
the genuine Hadoop client and server use, so either side of ours meets either of theirs.
"""

from __future__ import annotations

import os
from typing import Any

import gssapi
from gssapi.raw.misc import GSSError

# Security layers (RFC 4752 section 3.3), which hadoop.rpc.protection names.
LAYER_AUTHENTICATION = 1
LAYER_INTEGRITY = 2
LAYER_PRIVACY = 4
_MAX_BUFFER = 65536


class SaslError(Exception):
    """A SASL GSSAPI exchange that cannot go on: the reason names what failed."""


def _gss(error: BaseException, doing: str) -> SaslError:
    text = str(error).strip() or type(error).__name__
    return SaslError(f"GSS {doing} failed: {text}")


def acceptor_credentials(principal: str, keytab: str) -> Any:
    """Credentials a server accepts with: principal's key from keytab."""
    try:
        name = gssapi.Name(principal, gssapi.NameType.kerberos_principal)
        return gssapi.Credentials(name=name, usage="accept", store={"keytab": keytab})
    except GSSError as e:
        raise _gss(e, f"acceptor login as {principal} from {keytab}") from None


def initiator_credentials(
    principal: str | None = None, keytab: str | None = None, ccache: str | None = None
) -> Any:
    """Credentials a client starts with: from keytab (a daemon) or a ticket cache (a user:
    ccache, else the default one KRB5CCNAME names)."""
    try:
        if ccache and not keytab:
            creds = gssapi.Credentials(usage="initiate", store={"ccache": ccache})
            creds.lifetime  # noqa: B018 - raises now when the cache holds no ticket
            return creds
        if keytab:
            name = gssapi.Name(principal, gssapi.NameType.kerberos_principal) if principal else None
            cache = f"MEMORY:qjm-{os.getpid()}-{principal or 'keytab'}"
            return gssapi.Credentials(
                name=name, usage="initiate", store={"client_keytab": keytab, "ccache": cache}
            )
        creds = gssapi.Credentials(usage="initiate")
        creds.lifetime  # noqa: B018 - raises now, not at the first call, when there is no ticket
        return creds
    except GSSError as e:
        who = principal or "the ticket cache's principal"
        raise _gss(e, f"initiator login as {who}") from None


def _layer_message(layers: int, max_buffer: int, authzid: bytes = b"") -> bytes:
    return bytes([layers]) + max_buffer.to_bytes(3, "big") + authzid


# hadoop.rpc.protection's names of the layers
PROTECTIONS = {
    "authentication": LAYER_AUTHENTICATION,
    "integrity": LAYER_INTEGRITY,
    "privacy": LAYER_PRIVACY,
}


def layers_of(protection: str) -> int:
    """The layer bit mask of a hadoop.rpc.protection value (a comma-separated list)."""
    mask = 0
    for name in (p.strip().lower() for p in protection.split(",")):
        if name not in PROTECTIONS:
            known = ", ".join(PROTECTIONS)
            raise ValueError(f"unknown RPC protection {name!r} (known: {known})")
        mask |= PROTECTIONS[name]
    if not mask:
        raise ValueError("no RPC protection named")
    return mask


class _Layer:
    """Wrapping and unwrapping of messages under the negotiated security layer."""

    _ctx: Any
    layer: int

    @property
    def wraps(self) -> bool:
        """Whether every message after the exchange is wrapped (integrity or privacy)."""
        return self.layer in (LAYER_INTEGRITY, LAYER_PRIVACY)

    def wrap(self, data: bytes) -> bytes:
        """data signed (integrity) or sealed (privacy) for the peer."""
        try:
            return bytes(self._ctx.wrap(data, self.layer == LAYER_PRIVACY).message)
        except GSSError as e:
            raise _gss(e, "wrap") from None

    def unwrap(self, data: bytes) -> bytes:
        """The peer's wrapped data, checked; a sealed layer refuses what was not sealed."""
        try:
            result = self._ctx.unwrap(data)
        except GSSError as e:
            raise _gss(e, "unwrap") from None
        if self.layer == LAYER_PRIVACY and not result.encrypted:
            raise SaslError("a message arrived unencrypted where privacy was negotiated")
        return bytes(result.message)


class GssapiServer(_Layer):
    """The acceptor's side of one exchange: feed each client token, send back what it returns."""

    def __init__(self, credentials: Any, layers: int = LAYER_AUTHENTICATION) -> None:
        self.layers = layers
        self._ctx = gssapi.SecurityContext(creds=credentials, usage="accept")
        self._stage = 0
        self.complete = False
        self.peer = ""  # the authenticated client principal, once the context is set up
        self.layer = 0  # the security layer the client chose

    def evaluate(self, response: bytes) -> bytes | None:
        """The token to send for the client's response (None when complete with nothing)."""
        try:
            if self._stage == 0:
                out = self._ctx.step(response)
                if not self._ctx.complete:
                    return out or b""
                self.peer = str(self._ctx.initiator_name)
                self._stage = 1
                if out:  # mutual authentication: the client answers this with an empty token
                    return bytes(out)
                return self._offer()
            if self._stage == 1:
                if response:
                    raise SaslError("GSSAPI: the response before the layer offer is not empty")
                return self._offer()
            if self._stage == 2:
                self._choice(response)
                return None
        except GSSError as e:
            raise _gss(e, "accept") from None
        raise SaslError("GSSAPI: the exchange is already complete")

    def _offer(self) -> bytes:
        self._stage = 2
        return bytes(self._ctx.wrap(_layer_message(self.layers, _MAX_BUFFER), False).message)

    def _choice(self, response: bytes) -> None:
        """Take the client's wrapped layer choice; the exchange is then complete."""
        data = bytes(self._ctx.unwrap(response).message)
        if len(data) < 4:
            raise SaslError(f"GSSAPI: the layer choice has {len(data)} bytes, not 4 or more")
        chosen = data[0]
        if chosen not in (LAYER_AUTHENTICATION, LAYER_INTEGRITY, LAYER_PRIVACY) or not (
            chosen & self.layers
        ):
            raise SaslError(
                f"GSSAPI: the client chose security layer {chosen:#x}, not one of those "
                f"offered ({self.layers:#x})"
            )
        authzid = data[4:].decode("utf-8", "replace")
        if authzid and authzid != self.peer:
            raise SaslError(
                f"GSSAPI: {self.peer} asked to act as {authzid}; a connection acts as the "
                "principal that authenticated it"
            )
        self.layer = chosen
        self.complete = True
        self._stage = 3


class GssapiClient(_Layer):
    """The initiator's side of one exchange with the server whose principal is given."""

    def __init__(
        self, credentials: Any, server_principal: str, layers: int = LAYER_AUTHENTICATION
    ) -> None:
        self.layers = layers
        self.server_principal = server_principal
        target = gssapi.Name(server_principal, gssapi.NameType.kerberos_principal)
        flags = (
            gssapi.RequirementFlag.mutual_authentication
            | gssapi.RequirementFlag.out_of_sequence_detection
        )
        self._ctx = gssapi.SecurityContext(
            name=target, creds=credentials, usage="initiate", flags=flags
        )
        self._final = False
        self.complete = False
        self.layer = 0

    def evaluate(self, challenge: bytes | None) -> bytes:
        """The token to send for the server's challenge (None for the first token)."""
        try:
            if not self._final:
                out = self._ctx.step(challenge or None)
                if self._ctx.complete:
                    self._final = True
                return bytes(out or b"")
            return self._choose(challenge or b"")
        except GSSError as e:
            raise _gss(e, f"initiate to {self.server_principal}") from None

    def _choose(self, challenge: bytes) -> bytes:
        if self.complete:
            raise SaslError("GSSAPI: the exchange is already complete")
        data = bytes(self._ctx.unwrap(challenge).message)
        if len(data) != 4:
            raise SaslError(f"GSSAPI: the server's layer offer has {len(data)} bytes, not 4")
        common = data[0] & self.layers
        for layer in (LAYER_PRIVACY, LAYER_INTEGRITY, LAYER_AUTHENTICATION):
            if common & layer:
                break
        else:
            raise SaslError(
                f"No common protection layer between client and server (offered "
                f"{data[0]:#x}, wanted {self.layers:#x})"
            )
        self.layer = layer
        self.complete = True
        size = 0 if layer == LAYER_AUTHENTICATION else _MAX_BUFFER
        return bytes(self._ctx.wrap(_layer_message(layer, size), False).message)
