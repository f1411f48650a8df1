"""Hadoop IPC wire format: golden bytes built by hand from the protocol description."""

from __future__ import annotations

import asyncio

import pytest
from google.protobuf.wrappers_pb2 import StringValue
from hypothesis import given, settings
from hypothesis import strategies as st

from qjm.ipc import IpcClient
from qjm.ipc.errors import FrameTooLargeError, MalformedRpcError
from qjm.ipc.framing import (
    PREAMBLE,
    FrameReader,
    build_frame,
    decode_varint,
    encode_varint,
    parse_preamble,
    plain_call_header,
    read_delimited,
    zigzag32,
)
from qjm.ipc.proto.ProtobufRpcEngine_pb2 import RequestHeaderProto
from qjm.ipc.proto.RpcHeader_pb2 import RpcRequestHeaderProto, RpcResponseHeaderProto

CLIENT_ID = b"0123456789abcdef"
PROTOCOL = "org.example.EchoProtocol"


def hand_varint(n: int) -> bytes:
    """Base-128 varint, written independently of the code under test."""
    out = b""
    while True:
        low = n & 0x7F
        n >>= 7
        if n:
            out += bytes((low | 0x80,))
        else:
            return out + bytes((low,))


def hand_delimited(b: bytes) -> bytes:
    return hand_varint(len(b)) + b


def hand_frame(*parts: bytes) -> bytes:
    payload = b"".join(hand_delimited(p) for p in parts)
    return len(payload).to_bytes(4, "big") + payload


def hand_string(field: int, s: bytes) -> bytes:
    return bytes(((field << 3) | 2,)) + hand_varint(len(s)) + s


# RpcRequestHeaderProto of the connection context: rpcKind(1)=2, rpcOp(2)=0,
# callId(3) sint32 -3 -> zigzag 5, clientId(4) 16 bytes, retryCount(5) sint32 -1 -> zigzag 1.
CONTEXT_HEADER = b"\x08\x02" + b"\x10\x00" + b"\x18\x05" + b"\x22\x10" + CLIENT_ID + b"\x28\x01"
# IpcConnectionContextProto: userInfo(2){effectiveUser(1)="alice"}, protocol(3).
CONTEXT = hand_string(2, hand_string(1, b"alice")) + hand_string(3, PROTOCOL.encode())
# A first call: callId 0 (zigzag 0), retryCount 0.
CALL_HEADER = b"\x08\x02\x10\x00\x18\x00\x22\x10" + CLIENT_ID + b"\x28\x00"
# RequestHeaderProto: methodName(1), declaringClassProtocolName(2), clientProtocolVersion(3)=1.
METHOD_HEADER = hand_string(1, b"echo") + hand_string(2, PROTOCOL.encode()) + b"\x18\x01"
BODY = hand_string(1, b"hi")  # StringValue{value="hi"}


def test_preamble_is_hrpc_version_9_class_0_auth_none() -> None:
    assert PREAMBLE == b"hrpc\x09\x00\x00"
    assert parse_preamble(b"hrpc\x09\x00\x00") == (9, 0, 0)
    with pytest.raises(MalformedRpcError, match="hrpc"):
        parse_preamble(b"GET / HTTP/1.1")
    with pytest.raises(MalformedRpcError, match="hrpX"):
        parse_preamble(b"hrpX")
    with pytest.raises(MalformedRpcError, match="4 bytes, expected 7"):
        parse_preamble(b"hrpc")


def test_varints_and_zigzag() -> None:
    for n in (0, 1, 127, 128, 300, 2**31 - 1, 2**32 - 3, 2**63):
        assert encode_varint(n) == hand_varint(n)
        assert decode_varint(hand_varint(n) + b"tail", 0) == (n, len(hand_varint(n)))
    assert [zigzag32(v) for v in (0, -1, 1, -2, -3, -4, -33, 2**31 - 1)] == [
        0,
        1,
        2,
        3,
        5,
        7,
        65,
        2**32 - 2,
    ]
    with pytest.raises(MalformedRpcError):
        decode_varint(b"\x80\x80", 0)
    with pytest.raises(MalformedRpcError):
        decode_varint(b"\xff" * 11, 0)
    with pytest.raises(MalformedRpcError, match="overruns"):
        read_delimited(b"\x05ab", 0)


def test_request_header_callid_is_sint32_response_callid_is_uint32() -> None:
    req = RpcRequestHeaderProto(
        rpcKind=2, rpcOp=0, callId=-3, clientId=CLIENT_ID, retryCount=-1
    ).SerializeToString()
    assert req == CONTEXT_HEADER
    resp = RpcResponseHeaderProto(callId=2**32 - 3, status=0).SerializeToString()
    assert resp == b"\x08\xfd\xff\xff\xff\x0f\x10\x00"


def test_build_frame_and_reader_round_trip_byte_by_byte() -> None:
    frame = build_frame((b"abc", b"", b"x" * 300))
    assert frame == hand_frame(b"abc", b"", b"x" * 300)
    reader = FrameReader(1000)
    got: list[bytes] = []
    for i in range(len(frame) * 2):
        got += reader.feed((frame + frame)[i : i + 1])
    assert got == [frame[4:], frame[4:]]
    assert reader.pending() == 0
    assert FrameReader(1000).feed(frame + frame + frame[:5]) == [frame[4:], frame[4:]]


def test_frame_reader_refuses_a_frame_over_the_limit() -> None:
    reader = FrameReader(100)
    assert reader.feed((100).to_bytes(4, "big")) == []
    with pytest.raises(FrameTooLargeError, match="RPC frame of 101 bytes exceeds"):
        FrameReader(100).feed((101).to_bytes(4, "big"))
    with pytest.raises(FrameTooLargeError, match="negative"):
        FrameReader(100).feed(b"\xff\xff\xff\xff")


def test_client_call_frame_equals_protobuf_serialization() -> None:
    client = IpcClient("127.0.0.1:1", PROTOCOL, user="alice", client_id=CLIENT_ID)
    for call_id in (0, 1, 63, 64, 1000, 2**31 - 1):
        frame = client.call_frame(call_id, "echo", StringValue(value="hi"))
        header = RpcRequestHeaderProto(
            rpcKind=2, rpcOp=0, callId=call_id, clientId=CLIENT_ID, retryCount=0
        ).SerializeToString()
        method = RequestHeaderProto(
            methodName="echo", declaringClassProtocolName=PROTOCOL, clientProtocolVersion=1
        ).SerializeToString()
        assert frame == hand_frame(header, method, BODY)


async def _read_exactly(reader: asyncio.StreamReader, n: int) -> bytes:
    async with asyncio.timeout(5):
        return await reader.readexactly(n)


async def test_golden_bytes_of_preamble_context_and_call_from_our_client() -> None:
    """A raw server captures what IpcClient sends and answers with a hand-built response."""
    expected = (
        b"hrpc\x09\x00\x00"
        + hand_frame(CONTEXT_HEADER, CONTEXT)
        + hand_frame(CALL_HEADER, METHOD_HEADER, BODY)
    )
    captured: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

    async def raw(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            data = await _read_exactly(reader, len(expected))
            captured.set_result(data)
            # SUCCESS header: callId(1)=0, status(2)=0, serverIpcVersionNum(3)=9, clientId(7),
            # retryCount(8)=0; then StringValue{"hi back"}.
            header = b"\x08\x00\x10\x00\x18\x09\x3a\x10" + CLIENT_ID + b"\x40\x00"
            writer.write(hand_frame(header, hand_string(1, b"hi back")))
            await writer.drain()
            await reader.read()  # until the client closes
        except Exception as e:
            if not captured.done():
                captured.set_exception(e)
        finally:
            writer.close()

    server = await asyncio.start_server(raw, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = IpcClient(f"127.0.0.1:{port}", PROTOCOL, user="alice", client_id=CLIENT_ID)
    try:
        reply = await client.call("echo", StringValue(value="hi"), StringValue, timeout=5)
        assert reply.value == "hi back"
        async with asyncio.timeout(5):
            assert await captured == expected
    finally:
        await client.close()
        server.close()
        await server.wait_closed()


def _protobuf_view(header_bytes: bytes) -> tuple[int, bytes, int] | None:
    header = RpcRequestHeaderProto.FromString(header_bytes)
    if not header.IsInitialized():
        return None
    return header.callId, header.clientId, header.retryCount


@settings(max_examples=200, deadline=None)
@given(
    call_id=st.integers(-(2**31), 2**31 - 1),
    retry=st.integers(-(2**31), 2**31 - 1),
    client_id=st.binary(max_size=20),
    kind=st.sampled_from([0, 1, 2]),
    op=st.sampled_from([0, 1, 2]),
    caller=st.none() | st.text(max_size=5),
    state_id=st.none() | st.integers(0, 2**40),
)
@pytest.mark.slow
def test_plain_header_fast_path_agrees_with_protobuf(
    call_id: int,
    retry: int,
    client_id: bytes,
    kind: int,
    op: int,
    caller: str | None,
    state_id: int | None,
) -> None:
    header = RpcRequestHeaderProto(
        rpcKind=kind, rpcOp=op, callId=call_id, clientId=client_id, retryCount=retry
    )
    if caller is not None:
        header.callerContext.context = caller
    if state_id is not None:
        header.stateId = state_id
    raw = header.SerializeToString()
    frame = hand_delimited(raw) + hand_delimited(b"method header")
    fast = plain_call_header(frame)
    plain = kind == 2 and op == 0 and call_id >= 0 and caller is None and state_id is None
    if plain:
        assert fast == (call_id, client_id, retry, len(hand_delimited(raw)))
    else:
        assert fast is None


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=60), st.integers(0, 200), st.integers(0, 255))
def test_plain_header_fast_path_never_accepts_what_protobuf_reads_otherwise(
    blob: bytes, at: int, byte: int
) -> None:
    client = IpcClient("127.0.0.1:1", PROTOCOL, client_id=CLIENT_ID)
    base = client.call_frame(5, "m", StringValue(value="hi"))[4:]
    flipped = bytearray(base)
    flipped[at % len(base)] = byte
    for frame in (
        blob,
        base[: len(blob) % len(base)] + blob,
        bytes([len(blob)]) + blob,
        bytes(flipped),
    ):
        fast = plain_call_header(frame)
        if fast is None:
            continue
        start, end = read_delimited(frame, 0)
        assert end == fast[3]
        assert _protobuf_view(frame[start:end]) == fast[:3]
