"""Kerberos on Hadoop IPC: the RpcSaslProto exchange on call id -33, both sides.

After a preamble with auth protocol SASL (0xDF) the client sends NEGOTIATE; the server
answers with the mechanisms it takes (KERBEROS/GSSAPI, its principal's service and host);
the client sends INITIATE with its first GSSAPI token; CHALLENGE and RESPONSE carry the
rest; SUCCESS ends it. Then the connection context, and the calls (design §S.1).
"""

from __future__ import annotations

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
from qjm.security.gss import LAYER_AUTHENTICATION, GssapiClient, GssapiServer, SaslError
from qjm.security.principal import KerberosName, PrincipalError, short_name

KERBEROS = "KERBEROS"
GSSAPI = "GSSAPI"
ACCESS_CONTROL = "org.apache.hadoop.security.AccessControlException"
AUTHORIZATION = "org.apache.hadoop.security.authorize.AuthorizationException"
SASL_EXCEPTION = "javax.security.sasl.SaslException"
MAX_MESSAGES = 8  # a GSSAPI exchange takes 4 client messages; more is a stranger's loop


class SaslRefused(Exception):
    """A SASL exchange or connection the server refuses: a Java class name and a message."""

    def __init__(self, java_class: str, message: str) -> None:
        super().__init__(message)
        self.java_class = java_class


@dataclass(frozen=True)
class ServerSecurity:
    """How an IpcServer authenticates callers (Kerberos) and which protocols each may use."""

    principal: str  # this server's own, e.g. nn/localhost@QJM.TEST
    credentials: Any  # gssapi acceptor credentials for principal
    realm: str
    # (protocol, client principal) -> None to admit, else why not (design §S.3)
    admit: Callable[[str, str], str | None] = lambda _protocol, _principal: None
    layers: int = LAYER_AUTHENTICATION  # the security layers offered (design §S.8)

    def negotiate(self) -> RpcSaslProto:
        """The server's NEGOTIATE: the one mechanism it takes, with its principal's parts."""
        name = KerberosName.parse(self.principal)
        auth = RpcSaslProto.SaslAuth(
            method=KERBEROS, mechanism=GSSAPI, protocol=name.service, serverId=name.host or ""
        )
        return RpcSaslProto(state=RpcSaslProto.NEGOTIATE, auths=[auth])


class SaslServerExchange:
    """One connection's exchange, server side: each client message in, the answer out."""

    def __init__(self, security: ServerSecurity) -> None:
        self.security = security
        self._mechanism: GssapiServer | None = None
        self.principal = ""  # the authenticated client, once complete
        self.complete = False
        self._admitted: dict[str, str | None] = {}  # protocol -> refusal (None: admitted)
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
            return self.security.negotiate()
        if state == RpcSaslProto.INITIATE and self._mechanism is None:
            if not message.auths:
                raise SaslRefused(SASL_EXCEPTION, "SASL INITIATE names no mechanism")
            auth = message.auths[0]
            if (auth.method, auth.mechanism) != (KERBEROS, GSSAPI):
                raise SaslRefused(
                    ACCESS_CONTROL,
                    f"{auth.method} authentication is not enabled.  Available:[{KERBEROS}]",
                )
            self._mechanism = GssapiServer(self.security.credentials, self.security.layers)
        elif state != RpcSaslProto.RESPONSE or self._mechanism is None:
            name = RpcSaslProto.SaslState.Name(state)
            raise SaslRefused(SASL_EXCEPTION, f"SASL message {name} out of order")
        try:
            token = self._mechanism.evaluate(message.token)
        except SaslError as e:
            raise SaslRefused(SASL_EXCEPTION, str(e)) from None
        if not self._mechanism.complete:
            return RpcSaslProto(state=RpcSaslProto.CHALLENGE, token=token or b"")
        self.principal = self._mechanism.peer
        self.complete = True
        reply = RpcSaslProto(state=RpcSaslProto.SUCCESS)
        if token:
            reply.token = token
        return reply

    @property
    def wrapper(self) -> GssapiServer | None:
        """The mechanism that wraps every later frame, None when the layer wraps nothing."""
        mechanism = self._mechanism
        if not self.complete or mechanism is None or not mechanism.wraps:
            return None
        return mechanism

    def user(self, effective_user: str, protocol: str) -> str:
        """The connection's user: the authenticated principal's short name, once admitted."""
        principal, realm = self.principal, self.security.realm
        try:
            short = short_name(principal, realm)
        except PrincipalError as e:
            raise SaslRefused(ACCESS_CONTROL, str(e)) from None
        if effective_user and effective_user not in (principal, short):
            raise SaslRefused(
                AUTHORIZATION, f"User: {principal} is not allowed to impersonate {effective_user}"
            )
        refusal = self.refusal(protocol)
        if refusal is not None:
            raise SaslRefused(AUTHORIZATION, refusal)
        return short

    def refusal(self, protocol: str) -> str | None:
        """Why the authenticated principal may not use protocol, None if it may (cached)."""
        if protocol not in self._admitted:
            reason = self.security.admit(protocol, self.principal)
            self._admitted[protocol] = (
                None
                if reason is None
                else f"User {self.principal} (auth:KERBEROS) is not authorized for protocol "
                f"interface {protocol}: {reason}"
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
class ClientSecurity:
    """How an IpcClient authenticates: its credentials and the principal each server must have."""

    credentials: Any  # gssapi initiator credentials
    principal: str  # the client's own principal (sent as the effective user)
    realm: str
    # protocol name -> the servers' principal pattern (nn/_HOST@REALM)
    server_principals: dict[str, str]
    layers: int = LAYER_AUTHENTICATION  # the security layers it accepts (design §S.8)

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

    def mechanism(self, protocol: str, negotiate: RpcSaslProto) -> tuple[Any, GssapiClient]:
        """The chosen SaslAuth of a server's NEGOTIATE and a GSSAPI client for it."""
        for auth in negotiate.auths:
            if (auth.method, auth.mechanism) == (KERBEROS, GSSAPI):
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


def set_server_security(security: ServerSecurity | None) -> None:
    """Make every IpcServer of the process take Kerberos callers only (None: simple auth)."""
    global _process_server_security
    _process_server_security = security


def server_security() -> ServerSecurity | None:
    """The process's server side of Kerberos, None where servers use simple authentication."""
    return _process_server_security


def wrapped_response(wrapper: GssapiServer, data: bytes) -> bytes:
    """A server's frame carrying data (one or more whole frames) wrapped (design §S.8)."""
    return response_frame(RpcSaslProto(state=RpcSaslProto.WRAP, token=wrapper.wrap(data)))


def wrapped_request(wrapper: GssapiClient, data: bytes) -> bytes:
    """A client's frame carrying data (one or more whole frames) wrapped (design §S.8)."""
    return request_frame(RpcSaslProto(state=RpcSaslProto.WRAP, token=wrapper.wrap(data)))


def unwrap_message(wrapper: GssapiServer | GssapiClient, message: bytes) -> bytes:
    """The frames inside a WRAP message (the RpcSaslProto after the header); SaslError."""
    try:
        sasl = RpcSaslProto.FromString(message)
    except DecodeError as e:
        raise SaslError(f"undecodable SASL WRAP message: {e}") from None
    if sasl.state != RpcSaslProto.WRAP:
        state = RpcSaslProto.SaslState.Name(sasl.state)
        raise SaslError(f"expected a SASL WRAP message, got {state}")
    return wrapper.unwrap(sasl.token)
