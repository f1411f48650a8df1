"""A Hadoop IPC (RPC version 9) client on asyncio: one connection, many calls in flight."""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import heapq
import logging
import os
import socket
from typing import TypeVar, cast

from google.protobuf.message import DecodeError, Message

from qjm.ipc.errors import (
    FrameTooLargeError,
    MalformedRpcError,
    RemoteError,
    RpcAuthenticationError,
    RpcConnectionError,
    RpcError,
    RpcTimeoutError,
)
from qjm.ipc.framing import (
    AUTH_SASL,
    CONNECTION_CONTEXT_CALL_ID,
    DEFAULT_MAX_DATA_LENGTH,
    PREAMBLE,
    SASL_CALL_ID,
    FrameReader,
    build_frame,
    decode_varint,
    encode_varint,
    pack_length,
    preamble,
    read_delimited,
    zigzag32,
)
from qjm.ipc.proto.IpcConnectionContext_pb2 import IpcConnectionContextProto, UserInformationProto
from qjm.ipc.proto.ProtobufRpcEngine_pb2 import RequestHeaderProto
from qjm.ipc.proto.RpcHeader_pb2 import (
    RPC_PROTOCOL_BUFFER,
    RpcRequestHeaderProto,
    RpcResponseHeaderProto,
    RpcSaslProto,
)
from qjm.ipc.sasl import (
    ClientSecurity,
    client_security,
    request_frame,
    unwrap_message,
    wrapped_request,
)
from qjm.security.digest import DigestClient
from qjm.security.gss import GssapiClient, SaslError

log = logging.getLogger(__name__)

M = TypeVar("M", bound=Message)

CLIENT_PROTOCOL_VERSION = 1
_STATUS_SUCCESS = RpcResponseHeaderProto.RpcStatusProto.Value("SUCCESS")
_STATUS_FATAL = RpcResponseHeaderProto.RpcStatusProto.Value("FATAL")
# Request header fields before the call id: rpcKind=RPC_PROTOCOL_BUFFER, rpcOp=RPC_FINAL_PACKET,
# then the tag of callId (field 3, varint). Matches protobuf's serialization byte for byte.
_REQUEST_HEADER_START = b"\x08\x02\x10\x00\x18"

_COPY_LIMIT = 64 * 1024  # responses larger than this are parsed from a memoryview
# (header or None for a plain SUCCESS, response frame, offset of the delimited response)
_Pending = tuple[RpcResponseHeaderProto | None, bytes, int]
_SASL_PREAMBLE = preamble(auth=AUTH_SASL)
_SASL_MAX_MESSAGES = 8  # GSSAPI needs 3 server messages after NEGOTIATE; more is a bad peer


def split_address(address: str) -> tuple[str, int]:
    """(host, port) of "host:port" or "[v6]:port"; ValueError naming the address otherwise."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"IPC address {address!r} is not host:port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)


def _oversized_reason(address: str, data: bytes, error: FrameTooLargeError) -> str:
    """Why a response's frame was refused: an HTTP server's answer says so by name."""
    if data.startswith(b"HTTP/") or b"\r\nHTTP/" in data[:64]:
        return (
            f"{address} answered in HTTP, not Hadoop RPC: it is an HTTP port; give the "
            "daemon's RPC address (a NameNode's rpc_address, HDFS's port 8020 by default)"
        )
    return f"{address}: response {error}"


def _default_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid()) if hasattr(os, "getuid") else "unknown"


class _ClientConnection(asyncio.Protocol):
    """The socket side of an IpcClient: matches response frames to waiting futures by call id."""

    def __init__(self, client: IpcClient) -> None:
        self.client = client
        self.transport: asyncio.Transport | None = None
        self.pending: dict[int, asyncio.Future[_Pending]] = {}
        self.reader = FrameReader(client.max_data_length)
        self.closed = False
        self.lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        # integrity or privacy: wraps every frame
        self.wrapper: GssapiClient | DigestClient | None = None
        self.inner: FrameReader | None = None  # the frames inside WRAP messages

    def send(self, data: bytes) -> None:
        """Write whole frames, wrapped where the security layer says so (design §S.8)."""
        assert self.transport is not None
        if self.wrapper is not None:
            data = wrapped_request(self.wrapper, data)
        self.transport.write(data)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it.
        self.transport = cast(asyncio.Transport, transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        try:
            frames = self.reader.feed(data)
        except FrameTooLargeError as e:
            self.fail(RpcConnectionError(_oversized_reason(self.client.address, data, e)))
            return
        if self.wrapper is not None:
            frames = self._unwrapped(frames)
        pending = self.pending
        for frame in frames:
            try:
                start, end = read_delimited(frame, 0)
                # fast path: callId (field 1) first, then status (field 2) SUCCESS
                if end > start and frame[start] == 0x08:
                    call_id, pos = decode_varint(frame, start + 1)
                    if pos + 2 <= end and frame[pos] == 0x10 and frame[pos + 1] == 0:
                        if call_id >= 0x80000000:
                            call_id -= 0x100000000
                        fut = pending.pop(call_id, None)
                        if fut is not None and not fut.done():
                            fut.set_result((None, frame, end))
                        continue
                header = RpcResponseHeaderProto.FromString(frame[start:end])
                if not header.IsInitialized():
                    raise DecodeError("callId or status missing")
            except (MalformedRpcError, DecodeError, IndexError) as e:
                self.fail(
                    RpcConnectionError(f"{self.client.address}: malformed RPC response header: {e}")
                )
                return
            call_id = header.callId
            if call_id >= 0x80000000:
                call_id -= 0x100000000
            fut = pending.pop(call_id, None)
            if fut is not None and not fut.done():
                fut.set_result((header, frame, end))
            if header.status == _STATUS_FATAL:
                self.fail(
                    RpcConnectionError(
                        f"{self.client.address}: server closed the connection: "
                        f"{header.exceptionClassName}: {header.errorMsg}"
                    )
                )
                return

    def _unwrapped(self, frames: list[bytes]) -> list[bytes]:
        """The frames inside WRAP frames; a plain frame is kept (a FATAL sent in the clear)."""
        assert self.wrapper is not None and self.inner is not None
        out: list[bytes] = []
        for frame in frames:
            try:
                start, end = read_delimited(frame, 0)
                header = RpcResponseHeaderProto.FromString(frame[start:end])
                if header.callId != SASL_CALL_ID & 0xFFFFFFFF:
                    out.append(frame)
                    continue
                start, stop = read_delimited(frame, end)
                out += self.inner.feed(unwrap_message(self.wrapper, frame[start:stop]))
            except (MalformedRpcError, DecodeError, SaslError, FrameTooLargeError) as e:
                self.fail(RpcConnectionError(f"{self.client.address}: bad wrapped response: {e}"))
                return []
        return out

    def connection_lost(self, exc: Exception | None) -> None:
        reason = f"connection to {self.client.address} lost: {exc}" if exc else None
        self.fail(RpcConnectionError(reason or f"connection to {self.client.address} closed"))
        if not self.lost.done():
            self.lost.set_result(None)

    def fail(self, error: Exception) -> None:
        """Fail every waiting call with error and close the socket."""
        self.closed = True
        self.client._connection_closed(self)
        pending = self.pending
        self.pending = {}
        for fut in pending.values():
            if not fut.done():
                fut.set_exception(error)
        if self.transport is not None:
            self.transport.close()


class CallIds:
    """The call ids of one client id: 0, 1, ... (wrapping at 2^31), one counter however many
    connections (IpcClients) carry them, as Hadoop's Client has."""

    def __init__(self, start: int = 0) -> None:
        self._next = start & 0x7FFFFFFF

    def next(self) -> int:
        """The next call id."""
        call_id = self._next
        self._next = (call_id + 1) & 0x7FFFFFFF
        return call_id


class IpcClient:
    """One connection per (address, protocol, user); many calls in flight; bounded reconnect.

    The connection opens on the first call and after a loss on the next call: up to
    reconnect_attempts tries (at least one), each bounded by connect_timeout_s, with
    reconnect_backoff_s doubling between them; calls made meanwhile wait in order and fail
    with RpcConnectionError if every try fails. Call ids count up from 0 per client.
    """

    def __init__(
        self,
        address: str,
        protocol: str,
        *,
        user: str | None = None,
        client_id: bytes | None = None,
        max_data_length: int = DEFAULT_MAX_DATA_LENGTH,
        connect_timeout_s: float = 5.0,
        reconnect_attempts: int = 3,
        reconnect_backoff_s: float = 0.1,
        call_ids: CallIds | None = None,
        security: ClientSecurity | None = None,
        real_user: str = "",
    ) -> None:
        self.address = address
        self.protocol = protocol
        self._host, self._port = split_address(address)
        # Kerberos (design §S.1): the process's login unless given; the user is the principal
        self.security = security if security is not None else client_security()
        if self.security is not None:
            user = self.security.effective_user
        self.user = user if user is not None else _default_user()
        # simple auth: the real user a proxy call claims besides user (design §S.14)
        self.real_user = real_user if self.security is None else ""
        self.client_id = client_id if client_id is not None else os.urandom(16)
        self.max_data_length = max_data_length
        self.connect_timeout_s = connect_timeout_s
        self.reconnect_attempts = reconnect_attempts
        self.reconnect_backoff_s = reconnect_backoff_s
        self._conn: _ClientConnection | None = None
        self._queue: list[tuple[int, bytes, asyncio.Future[_Pending]]] = []
        self._connect_task: asyncio.Task[None] | None = None
        self._closed = False
        # shared by the IpcClients of one client id (a NameNode's retry cache keys on the
        # pair: no two calls of one client may carry the same call id, design §N.3)
        self.call_ids = call_ids if call_ids is not None else CallIds()
        self._header_end = (
            b"\x22" + encode_varint(len(self.client_id)) + self.client_id + b"\x28\x00"
        )  # clientId (field 4), retryCount (field 5) = 0
        self._method_headers: dict[str, bytes] = {}
        # (deadline, sequence, future, method, timeout) of calls with a timeout
        self._deadlines: list[tuple[float, int, asyncio.Future[_Pending], str, float]] = []
        self._deadline_seq = 0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self._timer_loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return f"IpcClient({self.address!r}, {self.protocol!r})"

    def connection_context_frame(self) -> bytes:
        """The frame sent once per connection after the preamble (call id -3)."""
        header = RpcRequestHeaderProto(
            rpcKind=RPC_PROTOCOL_BUFFER,
            rpcOp=RpcRequestHeaderProto.RPC_FINAL_PACKET,
            callId=CONNECTION_CONTEXT_CALL_ID,
            clientId=self.client_id,
            retryCount=-1,
        )
        context = IpcConnectionContextProto(
            userInfo=UserInformationProto(effectiveUser=self.user, realUser=self.real_user or None),
            protocol=self.protocol,
        )
        return build_frame((header.SerializeToString(), context.SerializeToString()))

    def _method_header(self, method: str) -> bytes:
        header = RequestHeaderProto(
            methodName=method,
            declaringClassProtocolName=self.protocol,
            clientProtocolVersion=CLIENT_PROTOCOL_VERSION,
        ).SerializeToString()
        delimited = encode_varint(len(header)) + header
        self._method_headers[method] = delimited
        return delimited

    def call_frame(self, call_id: int, method: str, request: Message) -> bytes:
        """The frame of one call: RpcRequestHeaderProto, RequestHeaderProto, request."""
        method_header = self._method_headers.get(method) or self._method_header(method)
        body = request.SerializeToString()
        rpc_header = _REQUEST_HEADER_START + encode_varint(zigzag32(call_id)) + self._header_end
        rlen = encode_varint(len(rpc_header))
        blen = encode_varint(len(body))
        length = len(rlen) + len(rpc_header) + len(method_header) + len(blen) + len(body)
        if length > self.max_data_length:
            raise FrameTooLargeError(
                f"{self.address} {method}: request frame of {length} bytes exceeds "
                f"ipc.maximum.data.length {self.max_data_length}"
            )
        return b"".join((pack_length(length), rlen, rpc_header, method_header, blen, body))

    async def call(
        self,
        method: str,
        request: Message,
        response_type: type[M],
        timeout: float | None = None,  # noqa: ASYNC109
        call_id: int | None = None,
    ) -> M:
        """Invoke method with request; the decoded response, or RemoteError/RpcTimeoutError/...

        call_id: resend an earlier call under its id (a retry, as Hadoop's
        RetryInvocationHandler does); None takes the next id of call_ids.
        """
        if self._closed:
            raise RpcConnectionError(f"{self.address} {method}: the IPC client is closed")
        if call_id is None:
            call_id = self.call_ids.next()
        elif self._in_flight(call_id):
            raise ValueError(f"{self.address} {method}: call id {call_id} is already in flight")
        frame = self.call_frame(call_id, method, request)
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[_Pending] = loop.create_future()
        conn = self._conn
        if conn is not None:
            conn.pending[call_id] = fut
            conn.send(frame)
        else:
            self._queue.append((call_id, frame, fut))
            if self._connect_task is None:
                self._connect_task = loop.create_task(self._connect())
        if timeout is not None:
            self._add_deadline(loop, loop.time() + timeout, fut, method, timeout)
        try:
            header, frame, pos = await fut
        except RpcConnectionError as e:  # shared by every call on the connection: name ours
            self._forget(call_id, fut)
            raise type(e)(f"{method}: {e}") from None
        except BaseException:
            self._forget(call_id, fut)
            raise
        if header is None or header.status == _STATUS_SUCCESS:
            if pos >= len(frame):
                return response_type()
            try:
                start, end = read_delimited(frame, pos)
                if end - start > _COPY_LIMIT:  # a large response is parsed in place
                    return response_type.FromString(cast(bytes, memoryview(frame)[start:end]))
                return response_type.FromString(frame[start:end])
            except (MalformedRpcError, DecodeError) as e:
                raise MalformedRpcError(
                    f"{self.address} {method}: cannot decode the response as "
                    f"{response_type.DESCRIPTOR.full_name}: {e}"
                ) from None
        raise RemoteError(
            header.exceptionClassName or "java.io.IOException",
            header.errorMsg,
            error_code=header.errorDetail if header.HasField("errorDetail") else None,
            fatal=header.status == _STATUS_FATAL,
            peer=self.address,
            method=method,
        )

    def _in_flight(self, call_id: int) -> bool:
        conn = self._conn
        if conn is not None and call_id in conn.pending:
            return True
        return any(queued_id == call_id for queued_id, _, _ in self._queue)

    def _add_deadline(
        self,
        loop: asyncio.AbstractEventLoop,
        deadline: float,
        fut: asyncio.Future[_Pending],
        method: str,
        timeout: float,
    ) -> None:
        """Fail fut with RpcTimeoutError at deadline unless answered before.

        One timer per client, set for the earliest deadline, instead of one per call: a
        heap of deadlines whose answered entries leave it as they reach its top.
        """
        heap = self._deadlines
        while heap and heap[0][2].done():
            heapq.heappop(heap)
        self._deadline_seq += 1
        heapq.heappush(heap, (deadline, self._deadline_seq, fut, method, timeout))
        if self._timer is None or deadline < self._timer_at or self._timer_loop is not loop:
            if self._timer is not None:
                self._timer.cancel()
            self._timer_at = deadline
            self._timer_loop = loop
            self._timer = loop.call_at(deadline, self._expire_due, loop)

    def _expire_due(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        heap = self._deadlines
        now = loop.time()
        while heap and (heap[0][0] <= now or heap[0][2].done()):
            _deadline, _seq, fut, method, timeout = heapq.heappop(heap)
            if not fut.done():
                fut.set_exception(
                    RpcTimeoutError(f"{self.address} {method}: no answer within {timeout:g} s")
                )
        if heap:
            self._timer_at = heap[0][0]
            self._timer = loop.call_at(self._timer_at, self._expire_due, loop)

    def _forget(self, call_id: int, fut: asyncio.Future[_Pending]) -> None:
        conn = self._conn
        if conn is not None and conn.pending.get(call_id) is fut:
            del conn.pending[call_id]
        for i, (queued_id, _frame, queued_fut) in enumerate(self._queue):
            if queued_id == call_id and queued_fut is fut:
                del self._queue[i]
                break

    def _connection_closed(self, conn: _ClientConnection) -> None:
        if self._conn is conn:
            self._conn = None

    async def _connect(self) -> None:
        loop = asyncio.get_running_loop()
        attempts = max(1, self.reconnect_attempts)
        last_error: BaseException | None = None
        try:
            for attempt in range(attempts):
                if attempt:
                    await asyncio.sleep(self.reconnect_backoff_s * (2 ** (attempt - 1)))
                if self._closed:
                    last_error = None
                    break
                if not self._queue:  # every waiting call timed out or was cancelled
                    return
                try:
                    async with asyncio.timeout(self.connect_timeout_s):
                        _transport, conn = await loop.create_connection(
                            lambda: _ClientConnection(self), self._host, self._port
                        )
                except (OSError, TimeoutError) as e:
                    last_error = e
                    log.debug(
                        "connecting to %s failed (attempt %d): %s", self.address, attempt + 1, e
                    )
                    continue
                if self.is_closed():  # closed while connecting
                    conn.fail(RpcConnectionError(f"{self.address}: the IPC client is closed"))
                    break
                if self.security is not None:
                    try:
                        async with asyncio.timeout(self.connect_timeout_s):
                            await self._authenticate(conn, self.security)
                    except (SaslError, RemoteError, RpcConnectionError, TimeoutError) as e:
                        conn.fail(RpcConnectionError(f"{self.address}: authentication failed"))
                        self._fail_queue(self._authentication_error(e))
                        return
                    parts = [self.connection_context_frame()]
                else:
                    parts = [PREAMBLE, self.connection_context_frame()]
                for call_id, frame, fut in self._queue:
                    if not fut.done():
                        conn.pending[call_id] = fut
                        parts.append(frame)
                self._queue.clear()
                self._conn = conn
                conn.send(b"".join(parts))
                return
            if self._closed:
                error = RpcConnectionError(f"{self.address}: the IPC client is closed")
            else:
                error = RpcConnectionError(
                    f"cannot connect to {self.address} after {attempts} attempt(s): "
                    f"{last_error or 'timed out'}"
                )
            self._fail_queue(error)
        except BaseException as e:
            if self.is_closed():
                self._fail_queue(RpcConnectionError(f"{self.address}: the IPC client was closed"))
            else:
                self._fail_queue(RpcConnectionError(f"connecting to {self.address} failed: {e!r}"))
            raise
        finally:
            self._connect_task = None

    async def _authenticate(self, conn: _ClientConnection, security: ClientSecurity) -> None:
        """The SASL exchange of a new connection (design §S.1); raises why it failed."""
        assert conn.transport is not None
        conn.transport.write(
            _SASL_PREAMBLE + request_frame(RpcSaslProto(state=RpcSaslProto.NEGOTIATE))
        )
        negotiate = await self._sasl_reply(conn)
        if negotiate.state != RpcSaslProto.NEGOTIATE:
            state = RpcSaslProto.SaslState.Name(negotiate.state)
            raise SaslError(f"the server answered NEGOTIATE with {state}")
        auth, mechanism = security.mechanism(self.protocol, negotiate)
        if isinstance(mechanism, DigestClient):  # the challenge came with NEGOTIATE (§S.10)
            token = mechanism.evaluate(auth.challenge)
            auth = RpcSaslProto.SaslAuth(
                method=auth.method,
                mechanism=auth.mechanism,
                protocol=auth.protocol,
                serverId=auth.serverId,
            )
        else:  # the first token may ask the KDC for a service ticket: off the event loop
            token = await asyncio.to_thread(mechanism.evaluate, None)
        message = RpcSaslProto(state=RpcSaslProto.INITIATE, token=token, auths=[auth])
        for _ in range(_SASL_MAX_MESSAGES):
            conn.transport.write(request_frame(message))
            reply = await self._sasl_reply(conn)
            if reply.state == RpcSaslProto.SUCCESS:
                if reply.HasField("token") and not mechanism.complete:
                    mechanism.evaluate(reply.token)
                if not mechanism.complete:
                    raise SaslError("the server said SUCCESS before the mechanism completed")
                if mechanism.wraps:  # integrity or privacy from now on (design §S.8)
                    conn.wrapper = mechanism
                    conn.inner = FrameReader(self.max_data_length)
                return
            if reply.state != RpcSaslProto.CHALLENGE:
                state = RpcSaslProto.SaslState.Name(reply.state)
                raise SaslError(f"SASL message {state} out of order from the server")
            message = RpcSaslProto(
                state=RpcSaslProto.RESPONSE, token=mechanism.evaluate(reply.token)
            )
        raise SaslError(f"the server sent more than {_SASL_MAX_MESSAGES} SASL messages")

    async def _sasl_reply(self, conn: _ClientConnection) -> RpcSaslProto:
        """The server's next SASL message on conn (a FATAL answer raises RemoteError)."""
        fut: asyncio.Future[_Pending] = asyncio.get_running_loop().create_future()
        conn.pending[SASL_CALL_ID] = fut
        header, frame, pos = await fut
        if header is not None and header.status != _STATUS_SUCCESS:
            raise RemoteError(
                header.exceptionClassName or "java.io.IOException",
                header.errorMsg,
                fatal=header.status == _STATUS_FATAL,
                peer=self.address,
            )
        try:
            start, end = read_delimited(frame, pos)
            reply = RpcSaslProto.FromString(frame[start:end])
            if not reply.IsInitialized():
                raise DecodeError("state missing")
        except (MalformedRpcError, DecodeError) as e:
            raise SaslError(f"undecodable SASL message: {e}") from None
        return reply

    def _authentication_error(self, error: BaseException) -> RpcError:
        """What the waiting calls fail with when authentication failed."""
        if isinstance(error, RemoteError):
            return error  # the server's own refusal, with its Java class
        if isinstance(error, TimeoutError):
            why = f"no answer within {self.connect_timeout_s} s"
        else:
            why = str(error)
        return RpcAuthenticationError(
            f"{self.address}: Kerberos authentication for {self.protocol} failed: {why}"
        )

    def _fail_queue(self, error: Exception) -> None:
        queue = self._queue
        self._queue = []
        for _call_id, _frame, fut in queue:
            if not fut.done():
                fut.set_exception(error)

    def is_closed(self) -> bool:
        """True once close() was called."""
        return self._closed

    async def close(self) -> None:
        """Close the connection; waiting and later calls fail with RpcConnectionError."""
        self._closed = True
        error = RpcConnectionError(f"{self.address}: the IPC client was closed")
        task = self._connect_task
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self._fail_queue(error)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._deadlines.clear()
        conn = self._conn
        self._conn = None
        if conn is not None:
            conn.fail(error)
            try:
                async with asyncio.timeout(1.0):
                    await asyncio.shield(conn.lost)
            except TimeoutError:
                if conn.transport is not None:
                    conn.transport.abort()
