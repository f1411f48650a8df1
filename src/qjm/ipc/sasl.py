"""Kerberos and delegation tokens on Hadoop IPC: the RpcSaslProto exchange on call id -33,
both sides.

After a preamble with auth protocol SASL (0xDF) the client sends NEGOTIATE; the server
answers with the mechanisms it takes (TOKEN/DIGEST-MD5 with its first challenge where it
honours delegation tokens, design §S.10; KERBEROS/GSSAPI, its principal's service and
host); the client sends INITIATE with its first token; CHALLENGE and RESPONSE carry the
rest; SUCCESS ends it. Then the connection context, and the calls (design §S.1).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import DecodeError

from qjm.ipc.framing import RPC_VERSION, SASL_CALL_ID, build_frame
from qjm.ipc.proto.RpcHeader_pb2 import (
    RPC_PROTOCOL_BUFFER,
    RpcRequestHeaderProto,
    RpcResponseHeaderProto,
    RpcSaslProto,
)
from qjm.security import digest
from qjm.security.digest import DigestClient, DigestServer
from qjm.security.gss import LAYER_AUTHENTICATION, GssapiClient, GssapiServer, SaslError
from qjm.security.principal import KerberosName, PrincipalError, short_name
from qjm.security.proxy_users import ProxyRule, authorize

KERBEROS = "KERBEROS"
GSSAPI = "GSSAPI"
TOKEN = "TOKEN"
DIGEST_MD5 = "DIGEST-MD5"
INVALID_TOKEN = "org.apache.hadoop.security.token.SecretManager$InvalidToken"
ACCESS_CONTROL = "org.apache.hadoop.security.AccessControlException"
AUTHORIZATION = "org.apache.hadoop.security.authorize.AuthorizationException"
SASL_EXCEPTION = "javax.security.sasl.SaslException"
MAX_MESSAGES = 8  # a GSSAPI exchange takes 4 client messages; more is a stranger's loop


class SaslRefused(Exception):
    """A SASL exchange or connection the server refuses: a Java class name and a message."""

    def __init__(self, java_class: str, message: str) -> None:
        super().__init__(message)
        self.java_class = java_class


# A server's delegation tokens (design §S.10): a token identifier's bytes -> (its owner, its
# password); raises to refuse it (an exception with a java_class names Hadoop's class).
TokenLookup = Callable[[bytes], tuple[str, bytes]]
Mechanism = GssapiServer | DigestServer


@dataclass(frozen=True)
class ServerSecurity:
    """How an IpcServer authenticates callers (Kerberos) and which protocols each may use."""

    principal: str  # this server's own, e.g. nn/localhost@QJM.TEST
    credentials: Any  # gssapi acceptor credentials for principal
    realm: str
    # (protocol, client principal) -> None to admit, else why not (design §S.3)
    admit: Callable[[str, str], str | None] = lambda _protocol, _principal: None
    layers: int = LAYER_AUTHENTICATION  # the security layers offered (design §S.8)
    tokens: TokenLookup | None = None  # delegation tokens honoured here (design §S.10)

    @property
    def methods(self) -> str:
        """The methods it takes as Hadoop lists them, e.g. `[TOKEN, KERBEROS]`."""
        return f"[{TOKEN}, {KERBEROS}]" if self.tokens is not None else f"[{KERBEROS}]"

    def negotiate(self, challenge: bytes | None = None) -> RpcSaslProto:
        """The server's NEGOTIATE: TOKEN first with its challenge where tokens are honoured,
        then KERBEROS with its principal's parts (Hadoop's order)."""
        name = KerberosName.parse(self.principal)
        auths = []
        if challenge is not None:
            auths.append(
                RpcSaslProto.SaslAuth(
                    method=TOKEN,
                    mechanism=DIGEST_MD5,
                    protocol=digest.PROTOCOL,
                    serverId=digest.SERVER_ID,
                    challenge=challenge,
                )
            )
        auths.append(
            RpcSaslProto.SaslAuth(
                method=KERBEROS, mechanism=GSSAPI, protocol=name.service, serverId=name.host or ""
            )
        )
        return RpcSaslProto(state=RpcSaslProto.NEGOTIATE, auths=auths)


@dataclass(frozen=True)
class ProxyPolicy:
    """The proxy users a server admits (design §S.14) and where it learns a user's groups."""

    rules: dict[str, ProxyRule]
    groups_of: Callable[[str], tuple[str, ...]]

    def refusal(self, real_name: str, real_short: str, effective: str, ip: str) -> str | None:
        """None when real_name may act as effective from ip, else HDFS's refusal text."""
        if not self.rules:  # no rule at all: nobody may, and no group lookup is needed
            return f"User: {real_name} is not allowed to impersonate {effective}"
        return authorize(
            self.rules, real_name, real_short, effective, self.groups_of(effective), ip
        )


NO_PROXIES = ProxyPolicy({}, lambda _user: ())


class SaslServerExchange:
    """One connection's exchange, server side: each client message in, the answer out."""

    def __init__(self, security: ServerSecurity) -> None:
        self.security = security
        self._mechanism: Mechanism | None = None
        self._digest: DigestServer | None = None  # made with the NEGOTIATE's challenge
        self.principal = ""  # the authenticated client (a token's owner), once complete
        self.method = ""  # KERBEROS or TOKEN, once complete
        self.complete = False
        self._admitted: dict[str, str | None] = {}  # protocol -> refusal (None: admitted)
        self._acting = ""  # the effective user a proxy connection acts as (design §S.14)
        self._messages = 0

    def receive(self, message: RpcSaslProto) -> RpcSaslProto:
        """The answer to one client message; SaslRefused ends the connection."""
        state = message.state
        self._messages += 1
        if self._messages > MAX_MESSAGES:
            raise SaslRefused(SASL_EXCEPTION, f"more than {MAX_MESSAGES} SASL messages")
        if self.complete:
            raise SaslRefused(SASL_EXCEPTION, "SASL message after the exchange completed")
        if state == RpcSaslProto.NEGOTIATE and self._mechanism is None:
            challenge = None
            if self.security.tokens is not None and self._digest is None:
                self._digest = DigestServer(self._token_password, self.security.layers)
                challenge = self._digest.challenge()
            return self.security.negotiate(challenge)
        if state == RpcSaslProto.INITIATE and self._mechanism is None:
            if not message.auths:
                raise SaslRefused(SASL_EXCEPTION, "SASL INITIATE names no mechanism")
            auth = message.auths[0]
            if (auth.method, auth.mechanism) == (TOKEN, DIGEST_MD5) and self.security.tokens:
                if self._digest is None:  # no NEGOTIATE before: challenge now
                    self._digest = DigestServer(self._token_password, self.security.layers)
                    self._mechanism = self._digest
                    self.method = TOKEN
                    return RpcSaslProto(
                        state=RpcSaslProto.CHALLENGE, token=self._digest.challenge()
                    )
                self._mechanism = self._digest
                self.method = TOKEN
            elif (auth.method, auth.mechanism) == (KERBEROS, GSSAPI):
                self._mechanism = GssapiServer(self.security.credentials, self.security.layers)
                self.method = KERBEROS
            else:
                raise SaslRefused(
                    ACCESS_CONTROL,
                    f"{auth.method} authentication is not enabled.  "
                    f"Available:{self.security.methods}",
                )
        elif state != RpcSaslProto.RESPONSE or self._mechanism is None:
            name = RpcSaslProto.SaslState.Name(state)
            raise SaslRefused(SASL_EXCEPTION, f"SASL message {name} out of order")
        mechanism = self._mechanism
        try:
            if isinstance(mechanism, DigestServer):
                token: bytes | None = mechanism.evaluate(message.token)
            else:
                token = mechanism.evaluate(message.token)
        except SaslRefused:
            raise
        except SaslError as e:
            raise SaslRefused(SASL_EXCEPTION, str(e)) from None
        except Exception as e:  # the token lookup's refusal, in Hadoop's class
            java_class = getattr(e, "java_class", None)
            if not isinstance(java_class, str):
                raise
            raise SaslRefused(java_class, str(e)) from None
        if not mechanism.complete:
            return RpcSaslProto(state=RpcSaslProto.CHALLENGE, token=token or b"")
        if isinstance(mechanism, GssapiServer):
            self.principal = mechanism.peer
        self.complete = True
        reply = RpcSaslProto(state=RpcSaslProto.SUCCESS)
        if token:
            reply.token = token
        return reply

    def _token_password(self, username: str) -> bytes:
        """DIGEST-MD5's password of a username (a base64 token identifier); notes its owner."""
        lookup = self.security.tokens
        assert lookup is not None
        try:
            identifier = base64.b64decode(username, validate=True)
        except (binascii.Error, ValueError):
            raise SaslRefused(INVALID_TOKEN, "Can't de-serialize tokenIdentifier") from None
        owner, password = lookup(identifier)
        self.principal = owner
        return password

    @property
    def wrapper(self) -> Mechanism | None:
        """The mechanism that wraps every later frame, None when the layer wraps nothing."""
        mechanism = self._mechanism
        if not self.complete or mechanism is None or not mechanism.wraps:
            return None
        return mechanism

    def user(
        self, effective_user: str, protocol: str, ip: str, proxies: ProxyPolicy = NO_PROXIES
    ) -> tuple[str, str]:
        """The connection's user and, for a proxy, its real user, once admitted: the
        authenticated principal's (or token owner's) short name, or the effective user the
        context names where a proxy rule lets the principal act for it (design §S.14)."""
        principal, realm = self.principal, self.security.realm
        try:
            short = short_name(principal, realm)
        except PrincipalError as e:
            raise SaslRefused(ACCESS_CONTROL, str(e)) from None
        user, real_user = short, ""
        if effective_user and effective_user not in (principal, short):
            if self.method == TOKEN:  # a token names its user: no acting for another
                raise SaslRefused(
                    ACCESS_CONTROL,
                    f"Authenticated user ({principal} (auth:TOKEN)) doesn't match what the "
                    f"client claims to be ({effective_user} (auth:SIMPLE))",
                )
            try:  # the proxied user by its short name, as Hadoop's rules read it
                effective = short_name(effective_user, realm)
            except PrincipalError as e:
                raise SaslRefused(ACCESS_CONTROL, str(e)) from None
            refusal = proxies.refusal(principal, short, effective, ip)
            if refusal is not None:
                raise SaslRefused(AUTHORIZATION, refusal)
            user, real_user = effective, principal
            self._acting = effective  # the protocol rules judge the proxied user
        refusal = self.refusal(protocol)
        if refusal is not None:
            raise SaslRefused(AUTHORIZATION, refusal)
        return user, real_user

    def refusal(self, protocol: str) -> str | None:
        """Why the authenticated principal may not use protocol, None if it may (cached)."""
        if protocol not in self._admitted:
            acting = self._acting or self.principal
            reason = self.security.admit(protocol, acting)
            self._admitted[protocol] = (
                None
                if reason is None
                else f"User {acting} (auth:{'PROXY' if self._acting else self.method or KERBEROS})"
                f" is not authorized for protocol interface {protocol}: {reason}"
            )
        return self._admitted[protocol]


def response_frame(message: RpcSaslProto) -> bytes:
    """A server's frame carrying one SASL message."""
    header = RpcResponseHeaderProto(
        callId=SASL_CALL_ID & 0xFFFFFFFF,
        status=RpcResponseHeaderProto.SUCCESS,
        serverIpcVersionNum=RPC_VERSION,
    )
    return build_frame((header.SerializeToString(), message.SerializeToString()))


def request_frame(message: RpcSaslProto) -> bytes:
    """A client's frame carrying one SASL message."""
    header = RpcRequestHeaderProto(
        rpcKind=RPC_PROTOCOL_BUFFER,
        rpcOp=RpcRequestHeaderProto.RPC_FINAL_PACKET,
        callId=SASL_CALL_ID,
        clientId=b"",
        retryCount=-1,
    )
    return build_frame((header.SerializeToString(), message.SerializeToString()))


@dataclass(frozen=True)
class TokenCredential:
    """A delegation token a client authenticates with (Hadoop's Token: design §S.10)."""

    identifier: bytes
    password: bytes
    kind: str
    service: str


@dataclass(frozen=True)
class ClientSecurity:
    """How an IpcClient authenticates: its credentials and the principal each server must have."""

    credentials: Any  # gssapi initiator credentials (None: a token only)
    principal: str  # the client's own principal, or its token's owner (the effective user)
    realm: str
    # protocol name -> the servers' principal pattern (nn/_HOST@REALM)
    server_principals: dict[str, str]
    layers: int = LAYER_AUTHENTICATION  # the security layers it accepts (design §S.8)
    # a delegation token, used first where the server takes TOKEN, as Hadoop's client does
    token: TokenCredential | None = None
    # the user it acts for as a proxy (HADOOP_PROXY_USER, design §S.14); "" acts as itself
    proxy_user: str = ""

    @property
    def effective_user(self) -> str:
        """The user its connection contexts name: the proxied user, else its principal."""
        return self.proxy_user or self.principal

    @property
    def user(self) -> str:
        """The process's user: its principal's short name (a NameNode's is the superuser)."""
        return short_name(self.principal, self.realm)

    def server_principal(self, protocol: str, offered: RpcSaslProto.SaslAuth) -> str:
        """The principal to authenticate the server as: the offered one if config expects it."""
        pattern = self.server_principals.get(protocol)
        if pattern is None:
            raise SaslError(f"Failed to specify server's Kerberos principal name for {protocol}")
        offered_name = str(KerberosName(offered.protocol, offered.serverId or None, self.realm))
        want = KerberosName.parse(pattern).in_realm(self.realm)
        host_ok = want.host in ("_HOST", offered.serverId)
        if not (host_ok and (want.service, want.realm) == (offered.protocol, self.realm)):
            raise SaslError(
                f"Server has invalid Kerberos principal: {offered_name}, expecting: {want}"
            )
        return offered_name

    def mechanism(
        self, protocol: str, negotiate: RpcSaslProto
    ) -> tuple[Any, GssapiClient | DigestClient]:
        """The chosen SaslAuth of a server's NEGOTIATE and a client mechanism for it: the
        first offered it can use (TOKEN with a token, KERBEROS with credentials)."""
        for auth in negotiate.auths:
            if (auth.method, auth.mechanism) == (TOKEN, DIGEST_MD5) and self.token is not None:
                token = self.token
                return auth, DigestClient(token.identifier, token.password, self.layers)
            if (auth.method, auth.mechanism) == (KERBEROS, GSSAPI) and self.credentials:
                principal = self.server_principal(protocol, auth)
                return auth, GssapiClient(self.credentials, principal, self.layers)
        offered = ", ".join(a.method for a in negotiate.auths) or "none"
        raise SaslError(f"Client cannot authenticate via:[{offered}]")


_process_security: ClientSecurity | None = None


def set_client_security(security: ClientSecurity | None) -> None:
    """Make security the process's Kerberos login for every IpcClient (None: simple auth)."""
    global _process_security
    _process_security = security


def client_security() -> ClientSecurity | None:
    """The process's Kerberos login, None where it uses simple authentication."""
    return _process_security


_process_server_security: ServerSecurity | None = None
_process_proxies: ProxyPolicy = NO_PROXIES


def set_proxy_policy(policy: ProxyPolicy) -> None:
    """Make policy the proxy users every IpcServer of the process admits (design §S.14)."""
    global _process_proxies
    _process_proxies = policy


def proxy_policy() -> ProxyPolicy:
    """The proxy users this process's IpcServers admit (none unless configured)."""
    return _process_proxies


def set_server_security(security: ServerSecurity | None) -> None:
    """Make every IpcServer of the process take Kerberos callers only (None: simple auth)."""
    global _process_server_security
    _process_server_security = security


def server_security() -> ServerSecurity | None:
    """The process's server side of Kerberos, None where servers use simple authentication."""
    return _process_server_security


def wrapped_response(wrapper: Mechanism, data: bytes) -> bytes:
    """A server's frame carrying data (one or more whole frames) wrapped (design §S.8)."""
    return response_frame(RpcSaslProto(state=RpcSaslProto.WRAP, token=wrapper.wrap(data)))


def wrapped_request(wrapper: GssapiClient | DigestClient, data: bytes) -> bytes:
    """A client's frame carrying data (one or more whole frames) wrapped (design §S.8)."""
    return request_frame(RpcSaslProto(state=RpcSaslProto.WRAP, token=wrapper.wrap(data)))


def unwrap_message(
    wrapper: GssapiServer | GssapiClient | DigestServer | DigestClient, message: bytes
) -> bytes:
    """The frames inside a WRAP message (the RpcSaslProto after the header); SaslError."""
    try:
        sasl = RpcSaslProto.FromString(message)
    except DecodeError as e:
        raise SaslError(f"undecodable SASL WRAP message: {e}") from None
    if sasl.state != RpcSaslProto.WRAP:
        state = RpcSaslProto.SaslState.Name(sasl.state)
        raise SaslError(f"expected a SASL WRAP message, got {state}")
    return wrapper.unwrap(sasl.token)
