"""SPNEGO on the daemons' HTTP ports (design §S.5), as HDFS's Kerberos authentication filter.

A request carries `Authorization: Negotiate <token>`; the server accepts it with its
`HTTP/<host>` key and knows the caller's principal, or answers 401 with `WWW-Authenticate:
Negotiate` (no token) or 403 (a bad token, or a principal the path does not admit). Our
HTTP clients (image transfer, edit reads) add a fresh token to every request.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import gssapi
from aiohttp import ClientHandlerType, ClientRequest, ClientResponse, web
from gssapi.raw.misc import GSSError

from qjm.security.gss import SaslError
from qjm.security.principal import PrincipalError, canonical_host, short_name, with_host

SPNEGO = gssapi.OID.from_int_seq("1.3.6.1.5.5.2")
NEGOTIATE = "Negotiate"
_MAX_HEADER = 64 * 1024  # a Kerberos token with a big PAC is a few KiB


@dataclass(frozen=True)
class AdminAcl:
    """Hadoop's AccessControlList as dfs.cluster.administrators writes it: "users groups",
    each comma-separated; "*" admits everyone (design §N.11)."""

    users: frozenset[str]
    groups: frozenset[str]
    everyone: bool = False

    @classmethod
    def parse(cls, text: str) -> AdminAcl:
        """The ACL of a "user1,user2 group1,group2" string ("" admits no one)."""
        if text.strip() == "*":
            return cls(frozenset(), frozenset(), True)
        users, _, groups = text.partition(" ")

        def names(part: str) -> frozenset[str]:
            return frozenset(n.strip() for n in part.split(",") if n.strip())

        return cls(names(users), names(groups))

    def admits(self, user: str, groups: Callable[[str], tuple[str, ...]]) -> bool:
        """Whether user (short name) is an administrator, by name or by one of its groups."""
        if self.everyone or user in self.users:
            return True
        return bool(self.groups) and any(g in self.groups for g in groups(user))


@dataclass(frozen=True)
class HttpSecurity:
    """A server's SPNEGO side: its HTTP principal's key and whom each path admits."""

    principal: str  # HTTP/<host>@REALM
    credentials: Any  # gssapi acceptor credentials
    realm: str
    # (path, client principal) -> None to admit, else why not
    admit: Callable[[str, str], str | None] = lambda _path, _principal: None
    # who may read /logs/ (and /jmx, /conf when instrumentation_requires_admin), by user
    administrator: Callable[[str], bool] = lambda _user: False
    instrumentation_requires_admin: bool = False


def accept(credentials: Any, header: str) -> tuple[str, bytes | None]:
    """The client principal of an `Authorization: Negotiate` header, and the reply token."""
    scheme, _, encoded = header.partition(" ")
    if scheme != NEGOTIATE or not encoded.strip():
        raise SaslError(f"not a Negotiate authorization (scheme {scheme[:20]!r})")
    try:
        token = base64.b64decode(encoded.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise SaslError("the Negotiate token is not base64") from None
    try:
        ctx = gssapi.SecurityContext(creds=credentials, usage="accept")
        out = ctx.step(token)
    except GSSError as e:
        raise SaslError(f"GSSException: {str(e).strip()}") from None
    if not ctx.complete:
        raise SaslError("the Negotiate exchange needs more than one round, which HTTP lacks")
    return str(ctx.initiator_name), bytes(out) if out else None


def middleware(security: HttpSecurity) -> Any:
    """An aiohttp middleware that lets only SPNEGO-authenticated, admitted callers in."""

    @web.middleware
    async def spnego(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        header = request.headers.get("Authorization", "")
        if not header.startswith(NEGOTIATE):
            return web.Response(
                status=401,
                text="Authentication required: Kerberos (SPNEGO), e.g. curl --negotiate -u :\n",
                headers={"WWW-Authenticate": NEGOTIATE},
            )
        if len(header) > _MAX_HEADER:
            return web.Response(status=403, text="Negotiate token too large\n")
        try:
            principal, out = accept(security.credentials, header)
            user = short_name(principal, security.realm)
        except (SaslError, PrincipalError) as e:
            return web.Response(status=403, text=f"Authentication failed: {e}\n")
        refusal = security.admit(request.path, principal)
        if refusal is not None:
            return web.Response(
                status=403, text=f"{principal} may not use {request.path}: {refusal}\n"
            )
        request["principal"] = principal
        request["user"] = user
        response = await handler(request)
        if out is not None and not response.prepared:
            response.headers["WWW-Authenticate"] = f"{NEGOTIATE} {base64.b64encode(out).decode()}"
        return response

    return spnego


@dataclass(frozen=True)
class HttpLogin:
    """A client's SPNEGO side: its credentials and the servers' HTTP principal pattern."""

    credentials: Any  # gssapi initiator credentials
    server_principal: str  # HTTP/_HOST@REALM

    def header(self, host: str) -> str:
        """A fresh `Negotiate` value for the server on host (may ask the KDC: blocking)."""
        target = with_host(self.server_principal, canonical_host(host))
        try:
            name = gssapi.Name(target, gssapi.NameType.kerberos_principal)
            ctx = gssapi.SecurityContext(
                name=name, creds=self.credentials, usage="initiate", mech=SPNEGO
            )
            token = ctx.step()
        except GSSError as e:
            raise SaslError(f"GSS initiate to {target} failed: {str(e).strip()}") from None
        return f"{NEGOTIATE} {base64.b64encode(token).decode()}"


_server: HttpSecurity | None = None
_client: HttpLogin | None = None


def set_http_security(server: HttpSecurity | None, client: HttpLogin | None) -> None:
    """Make the process's HTTP servers take SPNEGO only, and its HTTP clients send it."""
    global _server, _client
    _server, _client = server, client


def http_security() -> tuple[HttpSecurity | None, HttpLogin | None]:
    """The process's HTTP server and client sides of Kerberos (None, None without it)."""
    return _server, _client


def negotiate_headers(host: str) -> dict[str, str]:
    """The headers a blocking HTTP request to host needs ({} without Kerberos); SaslError."""
    login = _client
    return {} if login is None else {"Authorization": login.header(host)}


def server_middlewares() -> list[Any]:
    """The middlewares an aiohttp application of this process needs ([] without Kerberos)."""
    return [] if _server is None else [middleware(_server)]


def client_middlewares() -> tuple[Any, ...]:
    """The middlewares an aiohttp ClientSession of this process needs (() without Kerberos)."""
    login = _client
    if login is None:
        return ()

    async def negotiate(request: ClientRequest, handler: ClientHandlerType) -> ClientResponse:
        host = request.url.host or "localhost"
        request.headers["Authorization"] = await asyncio.to_thread(login.header, host)
        return await handler(request)

    return (negotiate,)
