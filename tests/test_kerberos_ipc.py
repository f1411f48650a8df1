"""Kerberos on qjm.ipc (design §S.1): the SASL GSSAPI exchange against a real MIT KDC.

Our server and client in one process, authenticating with keytabs the KDC made; the
refusals a stranger, a user without a ticket and a user calling a server protocol meet.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from google.protobuf.wrappers_pb2 import StringValue

from qjm.cluster.kdc import Kdc
from qjm.ipc import CallContext, IpcClient, IpcServer, Method, RemoteError, RpcConnectionError
from qjm.ipc.errors import RpcAuthenticationError
from qjm.ipc.framing import build_frame, preamble
from qjm.ipc.proto.IpcConnectionContext_pb2 import IpcConnectionContextProto, UserInformationProto
from qjm.ipc.proto.RpcHeader_pb2 import RpcRequestHeaderProto
from qjm.ipc.sasl import ClientSecurity, ProxyPolicy, ServerSecurity
from qjm.security.gss import (
    LAYER_AUTHENTICATION,
    LAYER_INTEGRITY,
    LAYER_PRIVACY,
    acceptor_credentials,
    initiator_credentials,
)
from qjm.security.policy import ServicePrincipals, admit, server_principals_by_protocol
from qjm.security.proxy_users import ProxyRule

REALM = "QJM.TEST"
ECHO = "org.apache.hadoop.hdfs.protocol.ClientProtocol"  # any authenticated principal
JOURNAL = "org.apache.hadoop.hdfs.qjournal.protocol.QJournalProtocol"  # NameNodes only
SERVICES = ServicePrincipals("nn/_HOST", "jn/_HOST", "dn/_HOST", REALM)


@pytest.fixture(scope="module")
def kdc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kdc]:
    """A KDC with the principals of a NameNode, a JournalNode and two users."""
    with Kdc(tmp_path_factory.mktemp("kdc"), realm=REALM) as k:
        for name in ("nn/localhost", "jn/localhost", "alice"):
            k.add_principal(name)
        saved = {key: os.environ.get(key) for key in k.env()}
        os.environ.update(k.env())
        yield k
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def keytab(kdc: Kdc, name: str) -> str:
    """The keytab the KDC wrote for name."""
    return str(kdc.keytab_dir / (name.replace("/", "_") + ".keytab"))


def client_security(
    kdc: Kdc, name: str, layers: int = LAYER_AUTHENTICATION, **expect: str
) -> ClientSecurity:
    """A client logged in as name from its keytab, taking layers (expect: protocol's server
    principals)."""
    principal = f"{name}@{REALM}"
    return ClientSecurity(
        credentials=initiator_credentials(principal, keytab(kdc, name)),
        principal=principal,
        realm=REALM,
        server_principals={**server_principals_by_protocol(SERVICES), **expect},
        layers=layers,
    )


async def whoami(_request: StringValue, ctx: CallContext) -> StringValue:
    """The caller's user, as the server sees it."""
    return StringValue(value=ctx.user)


async def start_server(kdc: Kdc, name: str = "jn/localhost") -> IpcServer:
    """A Kerberos server as name, serving whoami on ClientProtocol and QJournalProtocol."""
    principal = f"{name}@{REALM}"
    security = ServerSecurity(
        principal=principal,
        credentials=acceptor_credentials(principal, keytab(kdc, name)),
        realm=REALM,
        admit=lambda protocol, who: admit(protocol, who, SERVICES),
    )
    server = IpcServer(name="kerberos-test", security=security)
    for protocol in (ECHO, JOURNAL):
        server.register(protocol, {"whoami": Method(StringValue, whoami)})
    await server.start("127.0.0.1", 0)
    return server


async def test_a_keytab_client_is_the_principal_it_authenticated_as(kdc: Kdc) -> None:
    server = await start_server(kdc, "nn/localhost")
    try:
        client = IpcClient(
            f"127.0.0.1:{server.port}", ECHO, security=client_security(kdc, "alice"), user="root"
        )
        reply = await client.call("whoami", StringValue(), StringValue, timeout=10)
        assert reply.value == "alice"  # not the claimed "root": the principal's short name
        again = await client.call("whoami", StringValue(), StringValue, timeout=10)
        assert again.value == "alice"
        await client.close()
    finally:
        await server.stop()
    server = await start_server(kdc, "jn/localhost")
    try:
        nn = IpcClient(
            f"127.0.0.1:{server.port}", JOURNAL, security=client_security(kdc, "nn/localhost")
        )
        assert (await nn.call("whoami", StringValue(), StringValue, timeout=10)).value == "nn"
        await nn.close()
    finally:
        await server.stop()


async def test_a_user_may_not_call_a_protocol_only_namenodes_may_call(kdc: Kdc) -> None:
    server = await start_server(kdc)
    try:
        client = IpcClient(
            f"127.0.0.1:{server.port}", JOURNAL, security=client_security(kdc, "alice")
        )
        # Refused at the connection context: FATAL, and the connection closed.
        with pytest.raises(RpcConnectionError) as refused:
            await client.call("whoami", StringValue(), StringValue, timeout=10)
        text = str(refused.value)
        assert "org.apache.hadoop.security.authorize.AuthorizationException" in text
        assert "alice@QJM.TEST" in text and "nn/_HOST@QJM.TEST" in text
        await client.close()
        # Admitted for ClientProtocol, the connection's calls may not name QJournalProtocol.
        alice = client_security(kdc, "alice", **{ECHO: "jn/_HOST"})
        sneaky = IpcClient(f"127.0.0.1:{server.port}", ECHO, security=alice)
        assert (
            await sneaky.call("whoami", StringValue(), StringValue, timeout=10)
        ).value == "alice"
        sneaky.protocol = JOURNAL
        sneaky._method_headers.clear()
        with pytest.raises(RemoteError) as e:
            await sneaky.call("whoami", StringValue(), StringValue, timeout=10)
        assert e.value.class_name.endswith("AuthorizationException") and not e.value.fatal
        await sneaky.close()
    finally:
        await server.stop()


async def test_a_client_refuses_a_server_with_another_principal(kdc: Kdc) -> None:
    server = await start_server(kdc, "nn/localhost")  # a NameNode where a JournalNode should be
    try:
        client = IpcClient(
            f"127.0.0.1:{server.port}", JOURNAL, security=client_security(kdc, "nn/localhost")
        )
        with pytest.raises(RpcAuthenticationError, match="Server has invalid Kerberos principal"):
            await client.call("whoami", StringValue(), StringValue, timeout=10)
        await client.close()
    finally:
        await server.stop()


def raw_exchange(port: int, data: bytes) -> bytes:
    """Send data to the server and read what it answers until it closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def simple_call_bytes(user: str) -> bytes:
    """A simple-auth preamble and connection context claiming user, as a stranger sends."""
    header = RpcRequestHeaderProto(rpcKind=2, rpcOp=0, callId=-3, clientId=b"x" * 16, retryCount=-1)
    context = IpcConnectionContextProto(
        userInfo=UserInformationProto(effectiveUser=user), protocol=JOURNAL
    )
    return preamble() + build_frame((header.SerializeToString(), context.SerializeToString()))


async def test_a_stranger_without_sasl_is_refused_and_the_connection_closed(kdc: Kdc) -> None:
    server = await start_server(kdc)
    try:
        answer = await asyncio.to_thread(raw_exchange, server.port, simple_call_bytes("nn"))
        assert b"SIMPLE authentication is not enabled.  Available:[KERBEROS]" in answer
        assert b"org.apache.hadoop.security.AccessControlException" in answer
    finally:
        await server.stop()


async def test_a_client_without_a_ticket_fails_with_a_clear_error(kdc: Kdc, tmp_path: Path) -> None:
    os.environ["KRB5CCNAME"] = f"FILE:{tmp_path / 'empty-cache'}"
    try:
        with pytest.raises(Exception, match="initiator login"):
            initiator_credentials()
    finally:
        del os.environ["KRB5CCNAME"]


def sasl_frame(state: int, token: bytes = b"") -> bytes:
    """A client's SASL message frame (call id -33)."""
    from qjm.ipc.proto.RpcHeader_pb2 import RpcSaslProto
    from qjm.ipc.sasl import request_frame

    return request_frame(RpcSaslProto(state=state, token=token))  # type: ignore[arg-type]


async def test_a_stranger_cannot_loop_or_skip_the_sasl_exchange(kdc: Kdc) -> None:
    from qjm.ipc.framing import AUTH_SASL
    from qjm.ipc.proto.RpcHeader_pb2 import RpcSaslProto

    server = await start_server(kdc)
    try:
        endless = preamble(auth=AUTH_SASL) + sasl_frame(RpcSaslProto.NEGOTIATE) * 50
        answer = await asyncio.to_thread(raw_exchange, server.port, endless)
        assert b"more than 8 SASL messages" in answer
        # a connection context straight after the preamble, claiming a NameNode
        skip = preamble(auth=AUTH_SASL) + simple_call_bytes("nn")[len(preamble()) :]
        answer = await asyncio.to_thread(raw_exchange, server.port, skip)
        assert b"SASL authentication did not complete" in answer
        # a forged token in INITIATE
        forged = preamble(auth=AUTH_SASL) + sasl_frame(RpcSaslProto.NEGOTIATE)
        forged += request_initiate(b"\x60\x82garbage")
        answer = await asyncio.to_thread(raw_exchange, server.port, forged)
        assert b"javax.security.sasl.SaslException" in answer and b"GSS accept failed" in answer
    finally:
        await server.stop()


def request_initiate(token: bytes) -> bytes:
    """A client's INITIATE for KERBEROS/GSSAPI carrying token."""
    from qjm.ipc.proto.RpcHeader_pb2 import RpcSaslProto
    from qjm.ipc.sasl import request_frame

    auth = RpcSaslProto.SaslAuth(
        method="KERBEROS", mechanism="GSSAPI", protocol="jn", serverId="localhost"
    )
    return request_frame(RpcSaslProto(state=RpcSaslProto.INITIATE, token=token, auths=[auth]))


async def echo(request: StringValue, _ctx: CallContext) -> StringValue:
    """The request's value back."""
    return StringValue(value=request.value)


async def start_echo_server(kdc: Kdc, layers: int) -> IpcServer:
    """A Kerberos server as nn/localhost offering layers, serving echo on ClientProtocol."""
    principal = f"nn/localhost@{REALM}"
    security = ServerSecurity(
        principal=principal,
        credentials=acceptor_credentials(principal, keytab(kdc, "nn/localhost")),
        realm=REALM,
        layers=layers,
    )
    server = IpcServer(name="layers", security=security)
    server.register(ECHO, {"echo": Method(StringValue, echo)})
    await server.start("127.0.0.1", 0)
    return server


@pytest.mark.parametrize(
    ("offered", "chosen", "in_clear"),
    [
        (LAYER_AUTHENTICATION, LAYER_AUTHENTICATION, True),
        (LAYER_INTEGRITY, LAYER_INTEGRITY, True),  # signed, not sealed
        (LAYER_PRIVACY, LAYER_PRIVACY, False),
        (LAYER_AUTHENTICATION | LAYER_PRIVACY, LAYER_PRIVACY, False),  # the strongest shared
    ],
)
async def test_the_negotiated_layer_decides_what_crosses_the_wire_in_clear(
    kdc: Kdc, offered: int, chosen: int, in_clear: bool
) -> None:
    from wire_tap import WireTap

    server = await start_echo_server(kdc, offered)
    client_side = client_security(
        kdc, "alice", LAYER_AUTHENTICATION | LAYER_INTEGRITY | LAYER_PRIVACY
    )
    secret = "edit-op-payload-" + "z" * 40
    try:
        with WireTap(("127.0.0.1", server.port)) as tap:
            client = IpcClient(f"127.0.0.1:{tap.port}", ECHO, security=client_side)
            for i in range(3):  # several frames each way under the layer
                reply = await client.call(
                    "echo", StringValue(value=f"{secret}{i}"), StringValue, timeout=10
                )
                assert reply.value == f"{secret}{i}"
            conn = client._conn
            assert conn is not None
            assert (conn.wrapper.layer if conn.wrapper else LAYER_AUTHENTICATION) == chosen
            await client.close()
            assert (secret.encode() in tap.seen()) is in_clear
    finally:
        await server.stop()


async def test_a_client_that_wants_privacy_refuses_a_server_that_offers_less(kdc: Kdc) -> None:
    server = await start_echo_server(kdc, LAYER_AUTHENTICATION)
    wants_privacy = client_security(kdc, "alice", LAYER_PRIVACY)
    try:
        client = IpcClient(f"127.0.0.1:{server.port}", ECHO, security=wants_privacy)
        with pytest.raises(RpcAuthenticationError, match="No common protection layer"):
            await client.call("echo", StringValue(value="x"), StringValue, timeout=10)
        await client.close()
    finally:
        await server.stop()


async def test_a_plain_frame_on_a_sealed_connection_is_refused(kdc: Kdc) -> None:
    """After privacy was negotiated a frame must come wrapped: a plain one closes the link."""
    server = await start_echo_server(kdc, LAYER_PRIVACY)
    sealed = client_security(kdc, "alice", LAYER_PRIVACY)
    try:
        client = IpcClient(f"127.0.0.1:{server.port}", ECHO, security=sealed)
        assert (
            await client.call("echo", StringValue(value="a"), StringValue, timeout=10)
        ).value == "a"
        conn = client._conn
        assert conn is not None and conn.wrapper is not None
        conn.wrapper = None  # the next call goes out plain, as an injected frame would
        with pytest.raises(RpcConnectionError):  # the server's refusal is itself sealed
            await client.call("echo", StringValue(value="b"), StringValue, timeout=10)
        assert server.stats()["auth_failures"] == 1
        await client.close()
    finally:
        await server.stop()


async def whoami_via(_request: StringValue, ctx: CallContext) -> StringValue:
    """The caller's user and, for a proxy, its real user."""
    return StringValue(value=f"{ctx.user} via {ctx.real_user}" if ctx.real_user else ctx.user)


async def call_as(port: int, protocol: str, security: ClientSecurity) -> str:
    """whoami over a fresh connection: the answer, or the refusal's text."""
    client = IpcClient(f"127.0.0.1:{port}", protocol, security=security)
    try:
        return (await client.call("whoami", StringValue(), StringValue, timeout=10)).value
    except (RpcConnectionError, RemoteError) as e:
        return f"refused: {e}"
    finally:
        await client.close()


async def test_a_proxy_acts_only_for_whom_and_from_where_its_rule_allows(kdc: Kdc) -> None:
    server = await start_server(kdc, "nn/localhost")
    server.register(ECHO, {"whoami": Method(StringValue, whoami_via)})
    groups = {"dave": ("analysts",)}
    rules = {"alice": ProxyRule.parse("bob", "analysts", "127.0.0.1")}
    server.proxies = ProxyPolicy(rules, lambda user: groups.get(user, ()))
    port = server.port
    alice = client_security(kdc, "alice")
    try:
        as_bob = await call_as(port, ECHO, replace(alice, proxy_user="bob"))
        assert as_bob == "bob via alice@QJM.TEST"
        as_dave = await call_as(port, ECHO, replace(alice, proxy_user="dave"))  # by his group
        assert as_dave == "dave via alice@QJM.TEST"
        as_carol = await call_as(port, ECHO, replace(alice, proxy_user="carol"))
        assert "AuthorizationException" in as_carol
        assert "User: alice@QJM.TEST is not allowed to impersonate carol" in as_carol
        # a principal with no rule acts for nobody, a NameNode's included
        nn = client_security(kdc, "nn/localhost")
        as_bob_by_nn = await call_as(port, ECHO, replace(nn, proxy_user="bob"))
        assert "User: nn/localhost@QJM.TEST is not allowed to impersonate bob" in as_bob_by_nn
        # a proxied user is held to the protocol rules as itself: no server protocol
        to_nn = client_security(kdc, "alice", **{JOURNAL: "nn/_HOST"})
        on_journal = await call_as(port, JOURNAL, replace(to_nn, proxy_user="bob"))
        assert "bob (auth:PROXY) is not authorized for protocol interface" in on_journal
        # the same rule from another host refuses the connection from here
        server.proxies = ProxyPolicy(
            {"alice": ProxyRule.parse("bob", "", "10.9.9.0/24")}, lambda user: ()
        )
        elsewhere = await call_as(port, ECHO, replace(alice, proxy_user="bob"))
        assert "Unauthorized connection for super-user: alice@QJM.TEST from IP 127.0.0.1" in (
            elsewhere
        )
        # a proxied principal counts by its short name; one of another realm maps to no one
        server.proxies = ProxyPolicy({"alice": ProxyRule.parse("*", "", "*")}, lambda user: ())
        as_bob_at = await call_as(port, ECHO, replace(alice, proxy_user="bob@QJM.TEST"))
        assert as_bob_at == "bob via alice@QJM.TEST"
        foreign = await call_as(port, ECHO, replace(alice, proxy_user="bob@ELSEWHERE"))
        assert "No rules applied to bob@ELSEWHERE" in foreign
        # without a proxy user, alice is still herself
        assert await call_as(port, ECHO, alice) == "alice"
    finally:
        await server.stop()
