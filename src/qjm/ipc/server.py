"""A Hadoop IPC (RPC version 9) server on asyncio: handlers registered per protocol name."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import resource
import socket
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from google.protobuf.message import DecodeError, Message

from qjm.errors import QjmError
from qjm.ipc.errors import FrameTooLargeError, MalformedRpcError
from qjm.ipc.framing import (
    AUTH_NONE,
    AUTH_SASL,
    CONNECTION_CONTEXT_CALL_ID,
    DEFAULT_MAX_DATA_LENGTH,
    MAGIC,
    PING_CALL_ID,
    PREAMBLE_LENGTH,
    RPC_VERSION,
    SASL_CALL_ID,
    UNKNOWN_CALL_ID,
    FrameReader,
    build_frame,
    encode_varint,
    pack_length,
    parse_preamble,
    plain_call_header,
    read_delimited,
    zigzag32,
)
from qjm.ipc.proto.IpcConnectionContext_pb2 import IpcConnectionContextProto
from qjm.ipc.proto.ProtobufRpcEngine_pb2 import RequestHeaderProto
from qjm.ipc.proto.RpcHeader_pb2 import (
    RPC_PROTOCOL_BUFFER,
    RpcRequestHeaderProto,
    RpcResponseHeaderProto,
    RpcSaslProto,
)
from qjm.ipc.sasl import (
    AUTHORIZATION,
    SASL_EXCEPTION,
    Mechanism,
    ProxyPolicy,
    SaslRefused,
    SaslServerExchange,
    ServerSecurity,
    proxy_policy,
    response_frame,
    server_security,
    unwrap_message,
    wrapped_response,
)
from qjm.security.gss import SaslError

log = logging.getLogger(__name__)


def _bytes(view: memoryview) -> bytes:
    """A memoryview typed as bytes: protobuf parses either, without a copy."""
    return cast(bytes, view)


Handler = Callable[[Any, "CallContext"], Awaitable[Message]]
Starter = Callable[[Any, "CallContext"], "asyncio.Future[Message]"]

_Code = RpcResponseHeaderProto.RpcErrorCodeProto
STATUS_ERROR = RpcResponseHeaderProto.ERROR
STATUS_FATAL = RpcResponseHeaderProto.FATAL
ERROR_APPLICATION = _Code.Value("ERROR_APPLICATION")
ERROR_NO_SUCH_METHOD = _Code.Value("ERROR_NO_SUCH_METHOD")
ERROR_NO_SUCH_PROTOCOL = _Code.Value("ERROR_NO_SUCH_PROTOCOL")
ERROR_RPC_SERVER = _Code.Value("ERROR_RPC_SERVER")
ERROR_SERIALIZING_RESPONSE = _Code.Value("ERROR_SERIALIZING_RESPONSE")
FATAL_UNKNOWN = _Code.Value("FATAL_UNKNOWN")
FATAL_INVALID_RPC_HEADER = _Code.Value("FATAL_INVALID_RPC_HEADER")
FATAL_DESERIALIZING_REQUEST = _Code.Value("FATAL_DESERIALIZING_REQUEST")
FATAL_VERSION_MISMATCH = _Code.Value("FATAL_VERSION_MISMATCH")
FATAL_UNAUTHORIZED = _Code.Value("FATAL_UNAUTHORIZED")
_CLOSE_CONNECTION = RpcRequestHeaderProto.OperationProto.Value("RPC_CLOSE_CONNECTION")

IO_EXCEPTION = "java.io.IOException"
RPC_SERVER_EXCEPTION = "org.apache.hadoop.ipc.RpcServerException"
NO_SUCH_PROTOCOL = "org.apache.hadoop.ipc.RpcNoSuchProtocolException"
NO_SUCH_METHOD = "org.apache.hadoop.ipc.RpcNoSuchMethodException"
VERSION_MISMATCH = "org.apache.hadoop.ipc.RPC$VersionMismatch"
ACCESS_CONTROL = "org.apache.hadoop.security.AccessControlException"

_HTTP_ON_IPC_PORT = (
    b"HTTP/1.1 404 Not Found\r\nContent-type: text/plain\r\n\r\n"
    b"It looks like you are making an HTTP request to a Hadoop IPC port. This is not the "
    b"correct port for the web interface on this daemon.\r\n"
)
_STOP_GRACE_S = 5.0  # how long stop() waits for cancelled handlers
_COPY_LIMIT = 64 * 1024  # request bodies larger than this are parsed from a memoryview
_UINT64 = (1 << 64) - 1  # an int64 goes on the wire as its two's complement varint
_METHOD_CACHE_SIZE = 1024  # distinct RequestHeaderProto byte strings remembered

# A SUCCESS response header is built by hand (callId, status 0, serverIpcVersionNum 9,
# clientId, retryCount): byte for byte what protobuf would serialize, without a message object.
_SUCCESS_AFTER_CALL_ID = b"\x10\x00\x18" + encode_varint(RPC_VERSION) + b"\x3a"


def _missing_fields(message: Message) -> str:
    """The names of the required fields message lacks, comma-separated."""
    return ", ".join(
        f.name for f in message.DESCRIPTOR.fields if f.is_required and not message.HasField(f.name)
    )


def _success_tail(client_id: bytes, retry: int) -> bytes:
    """A SUCCESS response header after its callId: status, version, clientId, retryCount."""
    return (
        _SUCCESS_AFTER_CALL_ID
        + encode_varint(len(client_id))
        + client_id
        + b"\x40"
        + encode_varint(zigzag32(retry))
    )


EPISODE_QUIET_S = 60.0  # an episode of refusals ends after this long without one
EPISODE_REPEAT_S = 600.0  # while one goes on, at most one line per this long
FD_SHARE = 2  # connections may use at most 1/FD_SHARE of the descriptors (design §N.6)


@dataclass
class EpisodeLog:
    """One log line per episode of events instead of one per event (design §N.6).

    An episode starts with an event after quiet_s without any and logs at once; while it
    goes on, at most one more line per repeat_s. Each line says how many events it stands
    for (those since the previous line).
    """

    quiet_s: float = EPISODE_QUIET_S
    repeat_s: float = EPISODE_REPEAT_S
    last_event: float = -math.inf
    last_line: float = -math.inf
    unlogged: int = 0

    def note(self, now: float) -> int | None:
        """Count one event at now; the events a line logged now stands for, or None."""
        starts = now - self.last_event >= self.quiet_s
        self.last_event = now
        self.unlogged += 1
        if starts or now - self.last_line >= self.repeat_s:
            count, self.unlogged = self.unlogged, 0
            self.last_line = now
            return count
        return None


def ipc_limit_keys(section: str) -> dict[str, str]:
    """The config keys of an IPC server's limits in a daemon's TOML section."""
    return {
        "max_connections": f"{section}.ipc_max_connections",
        "idle_timeout": f"{section}.ipc_idle_timeout_ms",
        "max_unfinished_bytes": f"{section}.ipc_max_unfinished_bytes",
    }


def connection_cap(wanted: int, soft: int, hard: int) -> tuple[int, int]:
    """(connections allowed, descriptor soft limit to set) for a cap of wanted connections.

    Connections may take 1/FD_SHARE of the descriptors, so files, HTTP and outgoing calls
    keep the rest: the soft limit is raised toward the hard one when that allows the cap,
    else the cap is lowered to what the limit allows. A limit of -1 is no limit.
    """
    need = wanted * FD_SHARE
    if soft < 0 or soft >= need:
        return wanted, soft
    new_soft = need if hard < 0 else min(hard, need)
    return max(1, min(wanted, new_soft // FD_SHARE)), new_soft


@dataclass(frozen=True)
class Method:
    """One RPC method: the request message type and the coroutine that answers it.

    start, when given, is a cheaper way in to the same method: called at once as the call
    arrives (no task), it returns the future of the response; it must behave as handler
    does. The server calls it only when every earlier call on the connection has started,
    so calls still start in arrival order.
    """

    request_type: type[Message]
    handler: Handler
    start: Starter | None = None


@dataclass(slots=True)
class CallContext:
    """Who called and how: passed to every handler with the decoded request."""

    protocol: str
    method: str
    user: str
    client_id: bytes
    call_id: int
    retry_count: int
    peer: str  # "host:port" of the caller
    state_id: int | None = None  # the client's last seen state id (request header field 8)
    principal: str = ""  # the authenticated Kerberos principal ("" under simple auth)
    auth: str = "SIMPLE"  # how the connection authenticated: SIMPLE, KERBEROS or TOKEN
    # a proxy call's real user, the one authenticated (its principal under Kerberos), acting
    # as user; "" when the caller acts as itself (design §S.14)
    real_user: str = ""
    # Set by a handler whose answer may be sent only while a condition still holds: called
    # just before the answer (or error) goes out, it returns None to send it, or the error
    # to send instead.
    answer_check: Callable[[], BaseException | None] | None = None


def _peer_name(transport: asyncio.BaseTransport) -> str:
    peer = transport.get_extra_info("peername")
    if isinstance(peer, tuple) and len(peer) >= 2:
        host = str(peer[0])
        return f"[{host}]:{peer[1]}" if ":" in host else f"{host}:{peer[1]}"
    return str(peer)


class _Connection(asyncio.Protocol):
    """One client connection: preamble, connection context, then call frames."""

    def __init__(self, server: IpcServer) -> None:
        self.server = server
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.reader = FrameReader(server.max_data_length)
        self.preamble = b""
        self.preamble_done = False
        self.context_done = False
        self.user = ""
        self.protocol = ""
        self.client_id = b""
        self.success_tail = _success_tail(b"", 0)
        self.closing = False
        self.inflight = 0
        self.unstarted = 0  # handler tasks created but not yet at their first step
        self.last_active = 0.0
        self.idle_timer: asyncio.TimerHandle | None = None
        self.held = 0  # bytes of unfinished frames counted in the server's total
        self.sasl: SaslServerExchange | None = None  # a Kerberos server's exchange
        self.principal = ""  # its authenticated principal, once the context is set
        self.auth = "SIMPLE"  # KERBEROS or TOKEN once a SASL exchange authenticated it
        self.real_user = ""  # a proxy connection's real user (design §S.14)
        self.wrapper: Mechanism | None = None  # integrity or privacy: wraps every frame
        self.inner: FrameReader | None = None  # the frames inside WRAP messages

    # -- asyncio.Protocol ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it.
        self.transport = cast(asyncio.Transport, transport)
        self.peer = _peer_name(transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        server = self.server
        if server.max_connections is not None and len(server._conns) >= server.max_connections:
            server._refused += 1
            count = server._refused_log.note(self.loop.time())
            if count is not None:
                log.warning(
                    "%s: refusing RPC connections (the last from %s): %d open, the most %s "
                    "allows; %d refused since the last such line (all counted in "
                    "connections_refused)",
                    server.name,
                    self.peer,
                    len(server._conns),
                    server.limit_key("max_connections"),
                    count,
                )
            self.closing = True
            self.transport.close()
            return
        server._conns.add(self)
        server._connections_total += 1
        if server.idle_timeout_s is not None:
            self.last_active = self.loop.time()
            self.idle_timer = self.loop.call_later(server.idle_timeout_s, self._check_idle)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closing = True
        self.server._conns.discard(self)
        self._release()
        if self.idle_timer is not None:
            self.idle_timer.cancel()
            self.idle_timer = None

    def _release(self) -> None:
        """Drop this connection's unfinished frames and their count in the server's total."""
        if self.held:
            self.server._unfinished -= self.held
            self.held = 0
        self.reader.discard()

    def pause_writing(self) -> None:
        if self.transport is not None and not self.closing:
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.transport is not None and not self.closing:
            self.transport.resume_reading()

    def data_received(self, data: bytes) -> None:
        if self.closing:
            return
        server = self.server
        server._bytes_in += len(data)
        if self.idle_timer is not None:
            self.last_active = self.loop.time()
        if not self.preamble_done:
            self.preamble += data
            if len(self.preamble) < PREAMBLE_LENGTH:
                head = self.preamble[:4]
                if MAGIC[: len(head)] != head:  # not hrpc: no need to wait for 7 bytes
                    self._check_preamble(self.preamble)
                return
            data = self.preamble[PREAMBLE_LENGTH:]
            if not self._check_preamble(self.preamble[:PREAMBLE_LENGTH]):
                return
            self.preamble_done = True
            self.preamble = b""
            if not data:
                return
        try:
            frames = self.reader.feed(data)
        except FrameTooLargeError as e:
            self.fatal(UNKNOWN_CALL_ID, RPC_SERVER_EXCEPTION, str(e), FATAL_INVALID_RPC_HEADER)
            return
        pending = self.reader.pending()
        if pending != self.held:
            grew = pending > self.held
            server._unfinished += pending - self.held
            self.held = pending
            if grew and server._unfinished > server._unfinished_max:
                server._unfinished_max = server._unfinished
            cap = server.max_unfinished_bytes
            if grew and cap is not None and server._unfinished > cap:
                self._over_read_cap(cap)
                return
        for frame in frames:
            if self.is_closing():
                return
            try:
                if self.wrapper is not None:
                    self._handle_wrapped(frame)
                else:
                    self._handle_frame(frame)
            except Exception as e:  # a bug here must cost one connection, not the server
                log.exception("%s: internal error on a frame from %s", server.name, self.peer)
                self.fatal(
                    UNKNOWN_CALL_ID, RPC_SERVER_EXCEPTION, f"internal error: {e}", FATAL_UNKNOWN
                )

    def _over_read_cap(self, cap: int) -> None:
        """Close this connection: its bytes took the server past its unfinished-frames cap."""
        server = self.server
        total, mine = server._unfinished, self.held
        server._read_capped += 1
        self._release()
        count = server._read_capped_log.note(self.loop.time())
        if count is not None:
            log.warning(
                "%s: closing RPC connections whose half-received frames take the server past "
                "%s = %d bytes (the last from %s, holding %d of %d bytes); %d closed since the "
                "last such line (all counted in connections_read_capped)",
                server.name,
                server.limit_key("max_unfinished_bytes"),
                cap,
                self.peer,
                mine,
                total,
                count,
            )
        self.fatal(
            UNKNOWN_CALL_ID,
            RPC_SERVER_EXCEPTION,
            f"server busy: requests being received hold {total} bytes, past "
            f"{server.limit_key('max_unfinished_bytes')} = {cap}; retry",
            FATAL_UNKNOWN,
            quiet=True,
        )

    def eof_received(self) -> bool | None:
        if self.reader.pending() or (not self.preamble_done and self.preamble):
            log.info(
                "%s: %s closed the connection in the middle of a frame", self.server.name, self.peer
            )
        return None  # close our side too; calls still running find the transport closing

    # -- frames -----------------------------------------------------------------------------

    def _check_preamble(self, data: bytes) -> bool:
        if data.startswith((b"GET ", b"POST ", b"HEAD ", b"PUT ")):
            self._refuse_http()
            return False
        try:
            version, _service_class, auth = parse_preamble(data)
        except MalformedRpcError as e:
            self.fatal(
                UNKNOWN_CALL_ID,
                RPC_SERVER_EXCEPTION,
                f"{e} from {self.peer}",
                FATAL_INVALID_RPC_HEADER,
            )
            return False
        if version != RPC_VERSION:
            self.fatal(
                UNKNOWN_CALL_ID,
                VERSION_MISMATCH,
                f"Server IPC version {RPC_VERSION} cannot communicate with "
                f"client version {version}",
                FATAL_VERSION_MISMATCH,
            )
            return False
        security = self.server.security
        if security is not None:
            if auth == AUTH_SASL:
                self.sasl = SaslServerExchange(security)
                return True
            self.fatal(
                UNKNOWN_CALL_ID,
                ACCESS_CONTROL,
                f"SIMPLE authentication is not enabled.  Available:{security.methods}"
                if auth == AUTH_NONE
                else f"auth protocol {auth:#x} is not supported; this server takes SASL (0xdf)",
                FATAL_UNAUTHORIZED,
            )
            return False
        if auth != AUTH_NONE:
            self.fatal(
                UNKNOWN_CALL_ID,
                ACCESS_CONTROL,
                f"auth protocol {auth:#x} is not supported; this server accepts only "
                "simple authentication (auth protocol 0, NONE)",
                FATAL_UNAUTHORIZED,
            )
            return False
        return True

    def _refuse_http(self) -> None:
        """Answer an HTTP request on the IPC port as Hadoop does, in plain text, and close."""
        self.server._fatal += 1
        log.warning("%s: HTTP request from %s on the IPC port", self.server.name, self.peer)
        if self.transport is not None:
            self.transport.write(_HTTP_ON_IPC_PORT)
        self.close()

    def _handle_frame(self, frame: bytes) -> None:
        plain = plain_call_header(frame)
        state_id: int | None = None
        if plain is not None and self.context_done:
            call_id, client_id, retry, end = plain
        else:
            parsed = self._read_header(frame)
            if parsed is None:  # answered, ignored or fatal
                return
            call_id, client_id, retry, end, state_id = parsed
        server = self.server
        server._calls += 1
        try:
            start, end = read_delimited(frame, end)
            raw_method_header = frame[start:end]
            names = server._method_headers.get(raw_method_header)
            if names is None:
                names = server._decode_method_header(raw_method_header, self.protocol)
        except (MalformedRpcError, DecodeError) as e:
            self.error(
                call_id,
                client_id,
                retry,
                RPC_SERVER_EXCEPTION,
                f"undecodable RequestHeaderProto in call {call_id} from {self.peer}: {e}",
                ERROR_RPC_SERVER,
            )
            return
        protocol, method_name = names
        if protocol != self.protocol and self.sasl is not None:
            refusal = self.sasl.refusal(protocol)  # a call may name another protocol
            if refusal is not None:
                self.error(call_id, client_id, retry, AUTHORIZATION, refusal, ERROR_APPLICATION)
                return
        methods = server._protocols.get(protocol)
        if methods is None:
            self.error(
                call_id,
                client_id,
                retry,
                NO_SUCH_PROTOCOL,
                f"Unknown protocol: {protocol}",
                ERROR_NO_SUCH_PROTOCOL,
            )
            return
        method = methods.get(method_name)
        if method is None:
            self.error(
                call_id,
                client_id,
                retry,
                NO_SUCH_METHOD,
                f"Unknown method {method_name} called on {protocol} protocol.",
                ERROR_NO_SUCH_METHOD,
            )
            return
        try:
            start, end = read_delimited(frame, end)
            if end - start > _COPY_LIMIT:  # a large body is parsed in place, not copied
                request = method.request_type.FromString(_bytes(memoryview(frame)[start:end]))
            else:
                request = method.request_type.FromString(frame[start:end])
        except (MalformedRpcError, DecodeError) as e:
            self.error(
                call_id,
                client_id,
                retry,
                RPC_SERVER_EXCEPTION,
                f"cannot decode the {method_name} request of {protocol} as "
                f"{method.request_type.DESCRIPTOR.full_name}: {e}",
                ERROR_RPC_SERVER,
            )
            return
        ctx = CallContext(
            protocol,
            method_name,
            self.user,
            client_id,
            call_id,
            retry,
            self.peer,
            state_id,
            self.principal,
            self.auth,
            real_user=self.real_user,
        )
        self.inflight += 1
        starter = method.start
        if starter is not None and not self.unstarted:
            # Every earlier call has started: start this one now, without a task.
            try:
                fut = starter(request, ctx)
            except Exception as exc:
                self.inflight -= 1
                exc = self._vetoed(ctx) or exc
                class_name, message = server._map_error(exc, ctx)
                self.error(call_id, client_id, retry, class_name, message, ERROR_APPLICATION)
                return
            server._tasks.add(fut)
            fut.add_done_callback(lambda f: self._answer(f, ctx, call_id, client_id, retry))
            return
        self.unstarted += 1
        task = self.loop.create_task(
            self._run(method.handler, request, ctx, call_id, client_id, retry)
        )
        server._tasks.add(task)  # _run removes it: cheaper than a done callback

    def _read_header(self, frame: bytes) -> tuple[int, bytes, int, int, int | None] | None:
        """(callId, clientId, retryCount, end, stateId) of a call's RpcRequestHeaderProto; None
        after handling a connection-level frame or answering a bad header."""
        try:
            start, end = read_delimited(frame, 0)
            header = RpcRequestHeaderProto.FromString(frame[start:end])
        except (MalformedRpcError, DecodeError) as e:
            self.fatal(
                UNKNOWN_CALL_ID,
                RPC_SERVER_EXCEPTION,
                f"malformed RPC request header from {self.peer}: {e}",
                FATAL_INVALID_RPC_HEADER,
            )
            return None
        if not header.IsInitialized():  # callId and clientId are required
            self.fatal(
                UNKNOWN_CALL_ID,
                RPC_SERVER_EXCEPTION,
                f"RPC request header from {self.peer} lacks " + _missing_fields(header),
                FATAL_INVALID_RPC_HEADER,
            )
            return None
        call_id = header.callId
        if header.rpcOp == _CLOSE_CONNECTION:
            self.close()
            return None
        if call_id < 0:
            self._handle_special(call_id, header, frame, end)
            return None
        if header.rpcKind != RPC_PROTOCOL_BUFFER:
            self.fatal(
                call_id,
                RPC_SERVER_EXCEPTION,
                f"unsupported rpcKind {header.rpcKind} (only RPC_PROTOCOL_BUFFER)",
                FATAL_INVALID_RPC_HEADER,
            )
            return None
        if not self.context_done:
            self.fatal(
                call_id,
                RPC_SERVER_EXCEPTION,
                "Connection context not established",
                FATAL_INVALID_RPC_HEADER,
            )
            return None
        state_id = header.stateId if header.HasField("stateId") else None
        return call_id, header.clientId, header.retryCount, end, state_id

    def _handle_special(
        self, call_id: int, header: RpcRequestHeaderProto, frame: bytes, end: int
    ) -> None:
        if call_id == PING_CALL_ID:
            return
        if call_id == CONNECTION_CONTEXT_CALL_ID:
            if self.context_done:
                self.fatal(
                    call_id,
                    RPC_SERVER_EXCEPTION,
                    "Connection context already processed",
                    FATAL_INVALID_RPC_HEADER,
                )
                return
            try:
                start, stop = read_delimited(frame, end)
                context = IpcConnectionContextProto.FromString(frame[start:stop])
            except (MalformedRpcError, DecodeError) as e:
                self.fatal(
                    call_id,
                    RPC_SERVER_EXCEPTION,
                    f"undecodable connection context from {self.peer}: {e}",
                    FATAL_DESERIALIZING_REQUEST,
                )
                return
            user, real_user = context.userInfo.effectiveUser, ""
            ip = self.peer.rpartition(":")[0].strip("[]")
            if self.server.security is not None:
                if self.sasl is None or not self.sasl.complete:
                    self.fatal(
                        call_id,
                        ACCESS_CONTROL,
                        "SASL authentication did not complete before the connection context",
                        FATAL_UNAUTHORIZED,
                    )
                    return
                try:
                    user, real_user = self.sasl.user(
                        user, context.protocol, ip, self.server.proxies
                    )
                except SaslRefused as e:
                    self.fatal(call_id, e.java_class, str(e), FATAL_UNAUTHORIZED)
                    return
                # a proxy has no principal of its own: its real user's is real_user
                self.principal = "" if real_user else self.sasl.principal
                self.auth = self.sasl.method
            elif context.userInfo.realUser and context.userInfo.realUser != user:
                # simple auth: a claimed real user acting for another is still held to the
                # proxy rules, as HDFS's server does (design §S.14)
                real_user = context.userInfo.realUser
                refusal = self.server.proxies.refusal(real_user, real_user, user, ip)
                if refusal is not None:
                    self.fatal(call_id, AUTHORIZATION, refusal, FATAL_UNAUTHORIZED)
                    return
            self.real_user = real_user
            self.context_done = True
            self.client_id = header.clientId
            self.success_tail = _success_tail(self.client_id, 0)
            self.user = user
            self.protocol = context.protocol
            return
        if call_id == SASL_CALL_ID:
            self._handle_sasl(frame, end)
            return
        self.fatal(
            call_id, RPC_SERVER_EXCEPTION, f"invalid call id {call_id}", FATAL_INVALID_RPC_HEADER
        )

    def _handle_sasl(self, frame: bytes, end: int) -> None:
        """One SASL message of a Kerberos connection: answer it, or refuse and close."""
        sasl = self.sasl
        if sasl is None or self.context_done:
            self.fatal(
                SASL_CALL_ID,
                ACCESS_CONTROL,
                "SASL is not supported; this server accepts only simple authentication"
                if self.server.security is None
                else "SASL message after the connection context",
                FATAL_UNAUTHORIZED,
            )
            return
        try:
            start, stop = read_delimited(frame, end)
            message = RpcSaslProto.FromString(frame[start:stop])
            if not message.IsInitialized():
                raise DecodeError("state missing")
        except (MalformedRpcError, DecodeError) as e:
            self.fatal(
                SASL_CALL_ID,
                RPC_SERVER_EXCEPTION,
                f"undecodable SASL message from {self.peer}: {e}",
                FATAL_DESERIALIZING_REQUEST,
            )
            return
        try:
            reply = sasl.receive(message)
        except SaslRefused as e:
            self.server._auth_failures += 1
            self.fatal(SASL_CALL_ID, e.java_class, str(e), FATAL_UNAUTHORIZED)
            return
        if self.transport is not None and not self.transport.is_closing():
            out = response_frame(reply)
            self.server._bytes_out += len(out)
            self.transport.write(out)
        if sasl.complete:  # integrity or privacy: every later frame is wrapped (§S.8)
            self.wrapper = sasl.wrapper
            if self.wrapper is not None:
                self.inner = FrameReader(self.server.max_data_length)

    def _handle_wrapped(self, frame: bytes) -> None:
        """A SASL WRAP frame: unwrap it and handle the frames inside, or close on a bad one."""
        assert self.wrapper is not None and self.inner is not None
        try:
            start, end = read_delimited(frame, 0)
            header = RpcRequestHeaderProto.FromString(frame[start:end])
            if header.callId != SASL_CALL_ID:
                raise SaslError(f"a plain frame (call id {header.callId}) where all are wrapped")
            start, stop = read_delimited(frame, end)
            inner = self.inner.feed(unwrap_message(self.wrapper, frame[start:stop]))
        except (MalformedRpcError, DecodeError, SaslError, FrameTooLargeError) as e:
            self.server._auth_failures += 1
            self.fatal(SASL_CALL_ID, SASL_EXCEPTION, str(e), FATAL_UNAUTHORIZED)
            return
        for each in inner:
            if self.is_closing():
                return
            self._handle_frame(each)

    async def _run(
        self,
        handler: Handler,
        request: Message,
        ctx: CallContext,
        call_id: int,
        client_id: bytes,
        retry: int,
    ) -> None:
        self.unstarted -= 1
        try:
            try:
                response = await handler(request, ctx)
            except Exception as exc:
                exc = self._vetoed(ctx) or exc
                class_name, message = self.server._map_error(exc, ctx)
                self.error(call_id, client_id, retry, class_name, message, ERROR_APPLICATION)
                return
            veto = self._vetoed(ctx)
            if veto is not None:
                class_name, message = self.server._map_error(veto, ctx)
                self.error(call_id, client_id, retry, class_name, message, ERROR_APPLICATION)
                return
            self._respond(response, ctx, call_id, client_id, retry)
        finally:
            self.inflight -= 1
            self.server._tasks.discard(asyncio.current_task())  # type: ignore[arg-type,unused-ignore]

    def _answer(
        self,
        fut: asyncio.Future[Message],
        ctx: CallContext,
        call_id: int,
        client_id: bytes,
        retry: int,
    ) -> None:
        """Answer a call started without a task, once its future is done."""
        self.inflight -= 1
        self.server._tasks.discard(fut)
        if fut.cancelled():  # as a cancelled handler task: no answer
            return
        exc = fut.exception()
        veto = self._vetoed(ctx)
        if veto is not None:
            exc = veto
        elif exc is None:
            self._respond(fut.result(), ctx, call_id, client_id, retry)
            return
        if not isinstance(exc, Exception):  # the caller still gets an answer
            exc = RuntimeError(f"{type(exc).__name__}: {exc}")
        class_name, message = self.server._map_error(exc, ctx)
        self.error(call_id, client_id, retry, class_name, message, ERROR_APPLICATION)

    def _vetoed(self, ctx: CallContext) -> Exception | None:
        """What the call's answer_check says to send instead of its answer (None: send it)."""
        check = ctx.answer_check
        if check is None:
            return None
        try:
            veto = check()
        except Exception as e:  # a broken check must not let an unchecked answer out
            log.exception(
                "%s: the answer check of %s.%s failed", self.server.name, ctx.protocol, ctx.method
            )
            return e
        if veto is None or isinstance(veto, Exception):
            return veto
        return RuntimeError(f"{type(veto).__name__}: {veto}")

    def _respond(
        self, response: Message, ctx: CallContext, call_id: int, client_id: bytes, retry: int
    ) -> None:
        try:
            body = response.SerializeToString()
        except Exception as exc:
            self.error(
                call_id,
                client_id,
                retry,
                RPC_SERVER_EXCEPTION,
                f"cannot serialize the {ctx.method} response: {exc}",
                ERROR_SERIALIZING_RESPONSE,
            )
            return
        self.send_success(call_id, client_id, retry, body)

    # -- responses --------------------------------------------------------------------------

    def send_success(self, call_id: int, client_id: bytes, retry: int, body: bytes) -> None:
        """Write a SUCCESS frame carrying body."""
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        if retry == 0 and client_id == self.client_id:
            tail = self.success_tail  # the usual case: a first try from the context's client
        else:
            tail = _success_tail(client_id, retry)
        header = b"\x08" + encode_varint(call_id & 0xFFFFFFFF) + tail
        state_of = self.server.state_id
        if state_of is not None:  # stateId (field 9, int64): what this server has applied
            header += b"\x48" + encode_varint(state_of() & _UINT64)
        hlen = encode_varint(len(header))
        blen = encode_varint(len(body))
        frame = b"".join(
            (
                pack_length(len(hlen) + len(header) + len(blen) + len(body)),
                hlen,
                header,
                blen,
                body,
            )
        )
        if self.wrapper is not None:
            frame = wrapped_response(self.wrapper, frame)
        self.server._bytes_out += len(frame)
        if self.idle_timer is not None:
            self.last_active = self.loop.time()  # idle counts from the last answer too
        transport.write(frame)

    def _write_header(self, header: RpcResponseHeaderProto) -> None:
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        frame = build_frame((header.SerializeToString(),))
        if self.wrapper is not None:
            frame = wrapped_response(self.wrapper, frame)
        self.server._bytes_out += len(frame)
        if self.idle_timer is not None:
            self.last_active = self.loop.time()
        transport.write(frame)

    def _write_failure(
        self,
        status: int,
        call_id: int,
        client_id: bytes,
        retry: int,
        class_name: str,
        message: str,
        code: int,
    ) -> None:
        self._write_header(
            RpcResponseHeaderProto(
                callId=call_id & 0xFFFFFFFF,
                status=status,  # type: ignore[arg-type]
                serverIpcVersionNum=RPC_VERSION,
                exceptionClassName=class_name,
                errorMsg=message,
                errorDetail=code,  # type: ignore[arg-type]
                clientId=client_id,
                retryCount=retry,
                stateId=self._state_id_now(),
            )
        )

    def _state_id_now(self) -> int | None:
        """The state id for a response header, None when the server keeps none."""
        state_of = self.server.state_id
        return None if state_of is None else state_of()

    def error(
        self, call_id: int, client_id: bytes, retry: int, class_name: str, message: str, code: int
    ) -> None:
        """Answer one call with ERROR; the connection stays open."""
        self.server._errors += 1
        self._write_failure(STATUS_ERROR, call_id, client_id, retry, class_name, message, code)

    def fatal(
        self, call_id: int, class_name: str, message: str, code: int, *, quiet: bool = False
    ) -> None:
        """Answer with FATAL and close the connection (quiet: the caller logged it)."""
        if self.closing:
            return
        server = self.server
        server._fatal += 1
        if not quiet:
            log.warning(
                "%s: closing the connection from %s: %s: %s",
                server.name,
                self.peer,
                class_name,
                message,
            )
        self._write_failure(STATUS_FATAL, call_id, self.client_id, -1, class_name, message, code)
        self.close()

    def is_closing(self) -> bool:
        """True once this connection is being closed (no more frames are handled)."""
        return self.closing

    def close(self) -> None:
        """Close this connection after pending writes."""
        self.closing = True
        self._release()
        if self.transport is not None:
            self.transport.close()

    def _check_idle(self) -> None:
        self.idle_timer = None
        server = self.server
        timeout = server.idle_timeout_s
        if self.closing or timeout is None:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        idle = now - self.last_active
        if self.inflight == 0 and idle >= timeout:
            server._idle_closed += 1
            log.debug("%s: closing idle connection from %s", server.name, self.peer)
            count = server._idle_log.note(now)
            if count is not None:
                log.info(
                    "%s: closing RPC connections idle for %g s (%s; the last from %s); %d "
                    "closed since the last such line (all counted in connections_idle_closed)",
                    server.name,
                    timeout,
                    server.limit_key("idle_timeout"),
                    self.peer,
                    count,
                )
            self.close()
            return
        self.idle_timer = loop.call_later(max(timeout - idle, timeout / 10), self._check_idle)


class IpcServer:
    """Serves registered protocols over Hadoop IPC; a bad connection is closed, never the server."""

    def __init__(
        self,
        *,
        name: str = "ipc",
        max_data_length: int = DEFAULT_MAX_DATA_LENGTH,
        error_mapper: Callable[[BaseException], tuple[str, str]] | None = None,
        max_connections: int | None = None,
        idle_timeout_s: float | None = None,
        max_unfinished_bytes: int | None = None,
        limit_keys: Mapping[str, str] | None = None,
        state_id: Callable[[], int] | None = None,
        security: ServerSecurity | None = None,
    ) -> None:
        """A server; the limits (design §N.6), None for none, are named in logs and errors by
        limit_keys (max_connections, idle_timeout, max_unfinished_bytes: config keys)."""
        self.name = name
        self.state_id = state_id  # when given, every response header carries its value
        # Kerberos: callers authenticate over SASL (design §S.1); the process's login if unset
        self.security = security if security is not None else server_security()
        self.proxies: ProxyPolicy = proxy_policy()  # the proxy users it admits (design §S.14)
        self._auth_failures = 0
        self.max_data_length = max_data_length
        self.error_mapper = error_mapper
        self.max_connections = max_connections
        self.idle_timeout_s = idle_timeout_s
        self.max_unfinished_bytes = max_unfinished_bytes
        self._limit_keys = dict(limit_keys or {})
        self._unfinished = 0  # bytes of frames received but not yet whole, all connections
        self._unfinished_max = 0
        self._idle_closed = 0
        self._read_capped = 0
        self._refused_log = EpisodeLog()
        self._idle_log = EpisodeLog()
        self._read_capped_log = EpisodeLog()
        self._protocols: dict[str, dict[str, Method]] = {}
        # RequestHeaderProto bytes -> (protocol, method): a client repeats the same few headers
        self._method_headers: dict[bytes, tuple[str, str]] = {}
        self._server: asyncio.Server | None = None
        self._port = 0
        self._conns: set[_Connection] = set()
        self._tasks: set[asyncio.Future[Any]] = set()  # handler tasks and started calls
        self._connections_total = 0
        self._refused = 0
        self._calls = 0
        self._errors = 0
        self._fatal = 0
        self._bytes_in = 0
        self._bytes_out = 0

    def limit_key(self, limit: str) -> str:
        """The config key of a limit, for messages (the limit's own name when none is set)."""
        return self._limit_keys.get(limit, limit)

    def _fit_descriptor_limit(self) -> None:
        """Raise the descriptor soft limit for max_connections, else lower the cap (§N.6)."""
        wanted = self.max_connections
        if wanted is None:
            return
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        allowed, new_soft = connection_cap(wanted, soft, hard)
        if new_soft != soft:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (new_soft, hard))
            except (ValueError, OSError) as e:
                log.warning(
                    "%s: cannot raise the descriptor limit to %d: %s", self.name, new_soft, e
                )
                allowed = max(1, min(wanted, soft // FD_SHARE))
        if allowed < wanted:
            log.warning(
                "%s: serving at most %d RPC connections, not %s = %d: the descriptor limit "
                "(ulimit -n, hard %s) allows no more",
                self.name,
                allowed,
                self.limit_key("max_connections"),
                wanted,
                "unlimited" if hard < 0 else hard,
            )
        self.max_connections = allowed

    def register(self, protocol: str, methods: Mapping[str, Method]) -> None:
        """Serve methods under a protocol name (the Java interface name); adds to earlier ones."""
        self._protocols.setdefault(protocol, {}).update(methods)

    async def start(self, host: str, port: int) -> None:
        """Listen on host:port (port 0: any free port, see .port)."""
        if self._server is not None:
            raise RuntimeError(f"{self.name}: IPC server already started on port {self._port}")
        self._fit_descriptor_limit()
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _Connection(self), host, port, reuse_address=True
        )
        self._port = self._server.sockets[0].getsockname()[1]

    @property
    def port(self) -> int:
        """The port listened on (after start)."""
        return self._port

    async def stop(self) -> None:
        """Close the listener and every connection; cancel running handlers."""
        server = self._server
        self._server = None
        if server is not None:
            server.close()
        for conn in list(self._conns):
            conn.closing = True
            if conn.transport is not None:
                conn.transport.abort()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            _done, stuck = await asyncio.wait(tasks, timeout=_STOP_GRACE_S)
            if stuck:
                log.warning(
                    "%s: %d handler(s) still running %.0f s after being cancelled at stop",
                    self.name,
                    len(stuck),
                    _STOP_GRACE_S,
                )
            self._tasks.difference_update(tasks)  # those cancelled before their first step
        if server is not None:
            await server.wait_closed()

    def stats(self) -> dict[str, int]:
        """Counters: connections (refused and closed by the limits), calls, errors, bytes."""
        return {
            "connections": len(self._conns),
            "connections_total": self._connections_total,
            "connections_refused": self._refused,
            "connections_idle_closed": self._idle_closed,
            "connections_read_capped": self._read_capped,
            "unfinished_bytes": self._unfinished,
            "unfinished_bytes_peak": self._unfinished_max,
            "max_connections": self.max_connections or 0,
            "max_unfinished_bytes": self.max_unfinished_bytes or 0,
            "calls": self._calls,
            "calls_running": len(self._tasks),
            "errors": self._errors,
            "fatal": self._fatal,
            "auth_failures": self._auth_failures,  # refused SASL exchanges and frames
            "bytes_in": self._bytes_in,
            "bytes_out": self._bytes_out,
        }

    def _decode_method_header(self, raw: bytes, connection_protocol: str) -> tuple[str, str]:
        """(protocol, method) named by a RequestHeaderProto; DecodeError if it is not one."""
        header = RequestHeaderProto.FromString(raw)
        if not header.IsInitialized():
            raise DecodeError(f"missing required fields: {_missing_fields(header)}")
        names = (header.declaringClassProtocolName or connection_protocol, header.methodName)
        if header.declaringClassProtocolName:  # only then independent of the connection
            if len(self._method_headers) >= _METHOD_CACHE_SIZE:
                self._method_headers.clear()
            self._method_headers[raw] = names
        return names

    def _map_error(self, exc: Exception, ctx: CallContext) -> tuple[str, str]:
        java_class = getattr(exc, "java_class", None)
        message = str(exc) or type(exc).__name__
        if isinstance(java_class, str) and java_class:
            return java_class, message
        if self.error_mapper is not None:
            try:
                return self.error_mapper(exc)
            except Exception:
                log.exception("%s: error_mapper failed on %r", self.name, exc)
        if not isinstance(exc, QjmError):
            log.error(
                "%s: %s.%s from %s failed",
                self.name,
                ctx.protocol,
                ctx.method,
                ctx.peer,
                exc_info=exc,
            )
        return IO_EXCEPTION, message
