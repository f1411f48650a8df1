"""SASL on data transfer (design §S.12): the handshake's messages and steps, the wrapped
stream's framing, and DataXceivers with dfs.data.transfer.protection over loopback."""

from __future__ import annotations

import asyncio
import base64
import random
from collections.abc import AsyncIterator

import pytest

from memory_replicas import MemStore
from qjm.cluster.hadoop_conf import hdfs_site
from qjm.config import ClusterConfig, SecuritySettings
from qjm.datanode import sasl_streams
from qjm.datanode import transfer_client as tc
from qjm.datanode.block_keys import BlockPoolKeys
from qjm.datanode.replica_store import ExtendedBlock
from qjm.datanode.xceiver import DataXceiverServer
from qjm.errors import ConfigError
from qjm.hdfs import datatransfer as codec
from qjm.hdfs import transfer_sasl as ts
from qjm.hdfs.proto import datatransfer_pb2 as dt
from qjm.hdfs.proto import hdfs_pb2
from qjm.namenode.block_tokens import BlockTokenSecretManager
from qjm.security.block_token import AccessMode, Token
from qjm.security.digest import (
    DigestClient,
    DigestError,
    DigestLayer,
    DigestServer,
    des_parity_key,
    hash_a1,
    parse_directives,
    response_value,
)
from qjm.security.gss import LAYER_AUTHENTICATION, LAYER_INTEGRITY, LAYER_PRIVACY
from wire_tap import WireTap

POOL = "BP-7-127.0.0.1-7"


def _manager(index: int = 0) -> BlockTokenSecretManager:
    """A NameNode's key manager; index 1 holds key ids disjoint from index 0's."""
    return BlockTokenSecretManager(
        nn_index=index, num_nns=2, key_update_interval_ms=60_000, token_lifetime_ms=60_000
    )


def _keys(nn: BlockTokenSecretManager) -> BlockPoolKeys:
    keys = BlockPoolKeys()
    keys.add(POOL, nn.export())
    return keys


# --- messages --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        ts.message(ts.SUCCESS, b""),
        ts.message(ts.SUCCESS, b'realm="0",nonce="x"'),
        ts.message(ts.ERROR, text="Block token with ... is expired."),
        ts.message(ts.ERROR, text="no such key", access_token_error=True),
        ts.message(ts.ERROR_UNKNOWN_KEY, text="unknown key"),
        ts.message(ts.SUCCESS, b"\x00" * 300),
    ],
)
def test_messages_round_trip(message: ts.EncryptorMessage) -> None:
    wire = ts.delimited(message)
    body = message.SerializeToString()
    assert wire.endswith(body) and codec.decode_varint(wire[: len(wire) - len(body)], "x")
    assert ts.decode_message(body) == message


def test_a_message_is_hdfss_proto() -> None:
    """status 1 (varint), payload 2, message 3, cipherOption 4, handshakeSecret 5,
    accessTokenError 6, as datatransfer.proto; unknown fields skipped."""
    assert ts.message(ts.SUCCESS, b"ab").SerializeToString() == b"\x08\x00\x12\x02ab"
    assert ts.message(ts.ERROR, text="m").SerializeToString() == b"\x08\x02\x1a\x01m"
    secret = b"\x0a\x01s\x12\x02bp"
    got = ts.decode_message(
        b"\x08\x00\x22\x02\x08\x02\x2a" + bytes([len(secret)]) + secret + b"\x38\x05\x45abcd"
    )
    assert ts.offers_aes(got) and got.HasField("handshakeSecret") and not got.HasField("payload")


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"", "without status"),
        (b"\x12\x00", "without status"),
        (b"\x08\x07", "without status"),  # no such status: proto2 keeps it aside
        (b"\x08\x00\x22\x00", r"without cipherOption\[0\]\.suite"),
        (b"\x08\x00\x12\x05ab", "Wire format was corrupt"),
        (b"\x08", "Wire format was corrupt"),
        (b"\x0b", "Wire format was corrupt"),
    ],
)
def test_malformed_messages_are_refused(data: bytes, error: str) -> None:
    with pytest.raises(ts.TransferSaslError, match=error):
        ts.decode_message(data)


# --- the handshake's steps -------------------------------------------------------------


def _handshake(
    token: Token, keys: BlockPoolKeys, server_layers: int, client_layers: int
) -> tuple[ts.TransferSaslClient, ts.TransferSaslServer, DigestLayer, list[bytes]]:
    client = ts.TransferSaslClient(token, client_layers)
    server = ts.TransferSaslServer(keys.password, server_layers)
    opening = client.opening()
    assert opening[:4] == b"\xde\xad\xbe\xef"
    first = ts.decode_message(opening[5:])
    challenge = server.first(first)
    response = client.respond(challenge)
    rspauth = server.second(response)
    layer = client.finish(rspauth)
    return client, server, layer, [challenge.payload or b"", response.payload or b""]


@pytest.mark.parametrize(
    ("protection", "layer", "qop"),
    [
        ("authentication", LAYER_AUTHENTICATION, "auth"),
        ("integrity", LAYER_INTEGRITY, "auth-int"),
        ("privacy", LAYER_PRIVACY, "auth-conf"),
        ("authentication,privacy", LAYER_PRIVACY, "auth-conf"),
    ],
)
def test_the_handshake_negotiates_the_configured_qop(protection: str, layer: int, qop: str) -> None:
    nn = _manager()
    token = nn.token("alice", POOL, 5, (AccessMode.READ,))
    layers = ts.layers_of_protection(protection)
    _, server, got, (challenge, response) = _handshake(token, _keys(nn), layers, layers)
    assert got.layer == layer and server.layer.layer == layer
    c, r = parse_directives(challenge), parse_directives(response)
    assert c["realm"] == "0" and qop in c["qop"].split(",")
    assert r["digest-uri"] == "hdfs/0" and r["qop"] == qop and r["realm"] == "0"
    assert base64.b64decode(r["username"]) == token.identifier
    assert server.username == r["username"]
    assert ts.wraps(got) == (layer != LAYER_AUTHENTICATION)
    if qop == "auth-conf":  # 3des for hdfs-native and rc4; ours picks rc4
        assert c["cipher"] == "3des,rc4" and r["cipher"] == "rc4"


def test_3des_seals_as_the_jdks_digest_md5_does() -> None:
    """The JDK's DES keys (7 bytes to 8, odd parity), DES-EDE2 in CBC chained across
    messages, padding of 1..8 bytes each the count, before the 10-byte MAC."""
    assert des_parity_key(b"\0" * 7) == b"\x01" * 8
    assert des_parity_key(b"\xff" * 7) == b"\xfe" * 8
    assert des_parity_key(bytes.fromhex("80000000000001")) == bytes.fromhex("8001010101010102")
    server = DigestServer(lambda _: b"pw", LAYER_PRIVACY, ciphers=("3des",))
    client = DigestClient(b"id", b"pw", LAYER_PRIVACY)
    response = client.evaluate(server.challenge())
    assert parse_directives(response)["cipher"] == "3des"
    client.evaluate(server.evaluate(response))
    rng = random.Random(4)
    for n in (1, 5, 6, 13, 14, 100, ts.WRAP_CHUNK):
        data = rng.randbytes(n)
        wrapped = client.wrap(data)
        assert (len(wrapped) - 6) % 8 == 0 and len(wrapped) - 6 - 10 - n in range(1, 9)
        assert server.unwrap(wrapped) == data
        assert client.unwrap(server.wrap(data[::-1])) == data[::-1]
    body = bytearray(client.wrap(b"abc"))
    body[-7] ^= 0x40  # the last sealed block: the MAC (and the chain) no longer verify
    with pytest.raises(DigestError):
        server.unwrap(bytes(body))


def test_a_javas_response_naming_the_user_as_authzid_is_taken() -> None:
    """Hadoop's client passes the username as the authorization id too (SaslParticipant)."""
    nn = _manager()
    token = nn.token("alice", POOL, 5, (AccessMode.READ,))
    server = ts.TransferSaslServer(_keys(nn).password, LAYER_PRIVACY)
    challenge = parse_directives(server.first(ts.message(ts.SUCCESS, b"")).payload or b"")
    user = base64.b64encode(token.identifier).decode()
    password = base64.b64encode(token.password).decode()
    nonce, cnonce = challenge["nonce"], "Q2xpZW50Tm9uY2U="
    ha1 = hash_a1(user, "0", password, nonce, cnonce, user)
    resp = response_value(ha1, nonce, "00000001", cnonce, "auth-conf", "hdfs/0", initial=True)
    payload = (
        f'charset=utf-8,username="{user}",realm="0",nonce="{nonce}",nc=00000001,'
        f'cnonce="{cnonce}",digest-uri="hdfs/0",maxbuf=65536,response={resp},qop=auth-conf,'
        f'cipher="rc4",authzid="{user}"'
    ).encode()
    answer = server.second(ts.message(ts.SUCCESS, payload))
    expect = response_value(ha1, nonce, "00000001", cnonce, "auth-conf", "hdfs/0", initial=False)
    assert answer.payload == f"rspauth={expect}".encode()


def _forged(token: Token) -> Token:
    return Token(token.identifier, bytes(b ^ 1 for b in token.password))


@pytest.mark.parametrize(
    ("case", "error", "token_error"),
    [
        ("forged", "Mismatched response", False),
        ("unknown key", r"required block key \(keyID=\d+\) doesn't exist", True),
        ("expired", "is expired", True),
        ("not a token", "IdentifierError|identifier|ends early", False),
    ],
)
def test_a_bad_token_fails_the_handshake_with_hdfss_error(
    case: str, error: str, token_error: bool
) -> None:
    nn = _manager()
    keys = _keys(nn)
    token = nn.token("alice", POOL, 5, (AccessMode.READ,))
    if case == "forged":
        token = _forged(token)
    elif case == "unknown key":
        token = _manager(1).token("alice", POOL, 5, (AccessMode.READ,))  # another NN's key
    elif case == "expired":
        keys.clock_ms = lambda: 2**62
    else:
        token = Token(b"\x01\x02", b"pw")
    client = ts.TransferSaslClient(token, LAYER_PRIVACY)
    server = ts.TransferSaslServer(keys.password, LAYER_PRIVACY)
    client.opening()
    response = client.respond(server.first(ts.message(ts.SUCCESS, b"")))
    with pytest.raises(ts.TransferSaslError, match=error) as err:
        server.second(response)
    reply = err.value.reply
    assert reply is not None and reply.status == ts.ERROR
    assert reply.accessTokenError is token_error and not reply.HasField("payload")
    with pytest.raises(ts.TransferSaslError, match="refused the SASL handshake .ERROR."):
        client.finish(ts.decode_message(reply.SerializeToString()))


def _with_secret() -> ts.EncryptorMessage:
    m = ts.message(ts.SUCCESS, b"")
    m.handshakeSecret.secret, m.handshakeSecret.bpid = b"s", POOL
    return m


def test_out_of_order_and_unwanted_steps_are_refused() -> None:
    nn = _manager()
    server = ts.TransferSaslServer(_keys(nn).password, LAYER_PRIVACY)
    with pytest.raises(ts.TransferSaslError, match="out of order"):
        server.second(ts.message(ts.SUCCESS, b"x=y"))
    server = ts.TransferSaslServer(_keys(nn).password, LAYER_PRIVACY)
    with pytest.raises(ts.TransferSaslError, match="initial response is not expected"):
        server.first(ts.message(ts.SUCCESS, b"hello"))
    server = ts.TransferSaslServer(_keys(nn).password, LAYER_PRIVACY)
    with pytest.raises(ts.TransferSaslError, match="handshake secrets"):
        server.first(_with_secret())
    # a client that wants privacy from a DataNode offering integrity only
    token = nn.token("alice", POOL, 5, (AccessMode.READ,))
    client = ts.TransferSaslClient(token, LAYER_PRIVACY)
    server = ts.TransferSaslServer(_keys(nn).password, LAYER_INTEGRITY)
    client.opening()
    with pytest.raises(ts.TransferSaslError, match="No common protection layer"):
        client.respond(server.first(ts.message(ts.SUCCESS, b"")))


@pytest.mark.parametrize(
    ("server_aes", "client_aes", "layers", "chosen"),
    [
        (16, True, LAYER_PRIVACY, True),
        (32, True, LAYER_PRIVACY, True),
        (16, False, LAYER_PRIVACY, False),  # hdfs-native: no offer, the SASL layer's 3des
        (0, True, LAYER_PRIVACY, False),  # a DataNode without the suite
        (16, True, LAYER_INTEGRITY, False),  # AES only under privacy
    ],
)
def test_aes_is_chosen_only_under_privacy_where_both_sides_take_it(
    server_aes: int, client_aes: bool, layers: int, chosen: bool
) -> None:
    nn = _manager()
    token = nn.token("alice", POOL, 5, (AccessMode.READ,))
    client = ts.TransferSaslClient(token, layers, aes=client_aes)
    server = ts.TransferSaslServer(_keys(nn).password, layers, server_aes)
    client.opening()
    response = client.respond(server.first(ts.message(ts.SUCCESS, b"")))
    assert ts.offers_aes(response) is (client_aes and layers == LAYER_PRIVACY)
    rspauth = server.second(response)
    client.finish(rspauth)
    assert (server.cipher is not None) is chosen and client.cipher == server.cipher
    if server.cipher is not None:
        option = rspauth.cipherOption[0]
        assert len(server.cipher.in_key) == server_aes and len(server.cipher.in_iv) == 16
        assert option.inIv == server.cipher.in_iv  # IVs in clear, keys sealed
        assert server.cipher.in_key not in option.inKey
        assert server.cipher.out_key not in option.outKey
        # the client's out stream is the server's in stream, and the other way round
        assert client.cipher is not None
        assert client.cipher.sides(False)[1] == server.cipher.sides(True)[0]


def test_a_cipher_option_the_client_did_not_ask_for_or_tampered_is_refused() -> None:
    nn = _manager()
    token = nn.token("alice", POOL, 5, (AccessMode.READ,))
    for case in ("unasked", "tampered", "two", "short iv"):
        client = ts.TransferSaslClient(token, LAYER_PRIVACY, aes=case != "unasked")
        server = ts.TransferSaslServer(_keys(nn).password, LAYER_PRIVACY, 16)
        client.opening()
        response = client.respond(server.first(ts.message(ts.SUCCESS, b"")))
        response.cipherOption.add(suite=hdfs_pb2.AES_CTR_NOPADDING)  # the server chooses
        rspauth = server.second(response)
        option = rspauth.cipherOption[0]
        if case == "tampered":
            option.inKey = option.inKey[:3] + bytes([option.inKey[3] ^ 1]) + option.inKey[4:]
        elif case == "two":
            rspauth.cipherOption.add().CopyFrom(option)
        elif case == "short iv":
            option.outIv = option.outIv[:8]
        with pytest.raises(ts.TransferSaslError) as err:
            client.finish(rspauth)
        assert client.cipher is None, case
        want = {"unasked": "did not offer", "tampered": "MAC", "two": "did not offer"}
        assert want.get(case, "IV") in str(err.value), (case, err.value)


# --- the wrapped stream ----------------------------------------------------------------


@pytest.mark.parametrize("size", [1, ts.WRAP_CHUNK, ts.WRAP_CHUNK + 1, 200_000])
def test_writes_are_wrapped_in_chunks_and_unwrap_in_order(size: int) -> None:
    nn = _manager()
    token = nn.token("alice", POOL, 5, (AccessMode.READ,))
    _, server, layer, _ = _handshake(token, _keys(nn), LAYER_PRIVACY, LAYER_PRIVACY)
    data = random.Random(size).randbytes(size)
    frames = ts.wrap_frames(layer, memoryview(data))
    assert len(frames) == 2 * -(-size // ts.WRAP_CHUNK)
    out = b""
    for prefix, wrapped in zip(frames[::2], frames[1::2], strict=True):
        assert ts.wrapped_length(prefix) == len(wrapped) <= ts.WRAP_CHUNK + 16
        assert size < 16 or data[:64] not in wrapped  # sealed (a byte or two may recur by chance)
        out += ts.unwrap(server.layer, wrapped)
    assert out == data


def test_a_tampered_replayed_or_oversized_message_is_refused() -> None:
    nn = _manager()
    token = nn.token("alice", POOL, 5, (AccessMode.READ,))
    _, server, layer, _ = _handshake(token, _keys(nn), LAYER_INTEGRITY, LAYER_INTEGRITY)
    first, second = ts.wrap_frames(layer, b"a" * 100)[1], ts.wrap_frames(layer, b"b" * 100)[1]
    tampered = bytearray(first)
    tampered[3] ^= 1
    with pytest.raises(ts.TransferSaslError, match="MAC"):
        ts.unwrap(server.layer, bytes(tampered))
    with pytest.raises(ts.TransferSaslError, match="Out of order"):
        ts.unwrap(server.layer, second)  # the first was never taken
    for n in (0, 15, ts.MAX_WRAPPED + 1):
        with pytest.raises(ts.TransferSaslError, match="wrapped message of"):
            ts.wrapped_length(n.to_bytes(4, "big"))


def test_protection_needs_kerberos_and_block_tokens_and_reaches_hadoop_conf() -> None:
    base = {"authentication": "kerberos", "realm": "R"}
    sec = SecuritySettings(**base, data_transfer_protection="privacy")
    assert sec.block_tokens
    assert hdfs_site(ClusterConfig(security=sec))["dfs.data.transfer.protection"] == "privacy"
    plain = hdfs_site(ClusterConfig(security=SecuritySettings(**base)))
    assert "dfs.data.transfer.protection" not in plain
    with pytest.raises(ConfigError, match="needs authentication = kerberos"):
        SecuritySettings(data_transfer_protection="privacy")
    with pytest.raises(ConfigError, match="block access tokens"):
        SecuritySettings(**base, data_transfer_protection="privacy", block_access_token=False)
    with pytest.raises(ConfigError, match="is not a list"):
        SecuritySettings(**base, data_transfer_protection="secret")


# --- DataXceivers with protection over loopback ----------------------------------------


class _Node:
    def __init__(self, name: str, keys: BlockPoolKeys, protection: ts.TransferProtection) -> None:
        self.store = MemStore()
        self.server = DataXceiverServer(self.store, name=name, keys=keys, protection=protection)

    def info(self, port: int | None = None) -> hdfs_pb2.DatanodeInfoProto:
        return hdfs_pb2.DatanodeInfoProto(
            id=hdfs_pb2.DatanodeIDProto(
                ipAddr="127.0.0.1",
                hostName="localhost",
                datanodeUuid=self.server.name,
                xferPort=port or self.server.port,
                infoPort=0,
                ipcPort=0,
            )
        )


SEALED = ts.TransferProtection(LAYER_PRIVACY)  # the SASL layer's 3des or rc4
AES = ts.TransferProtection(LAYER_PRIVACY, 16)  # AES-CTR after the handshake


@pytest.fixture(params=[SEALED, AES], ids=["sasl-layer", "aes-ctr"])
async def secured(
    request: pytest.FixtureRequest,
) -> AsyncIterator[tuple[BlockTokenSecretManager, list[_Node]]]:
    nn = _manager()
    nodes = [_Node(f"dn{i}", _keys(nn), request.param) for i in range(3)]
    for node in nodes:
        await node.server.start()
    yield nn, nodes
    for node in nodes:
        await node.server.stop()


async def test_every_op_and_copy_runs_sealed_and_no_block_byte_crosses_in_clear(
    secured: tuple[BlockTokenSecretManager, list[_Node]],
) -> None:
    """A pipeline write through three nodes (each mirror's handshake with the client's
    token), a read, a checksum and a TRANSFER_BLOCK (with the node's own token), all under
    privacy; a tap in front of the first node sees none of the block's bytes."""
    nn, (a, b, c) = secured
    data = random.Random(9).randbytes(300_000)
    with WireTap(("127.0.0.1", a.server.port)) as tap:
        tapped = a.info(tap.port)
        write = nn.token("alice", POOL, 61, (AccessMode.WRITE,))
        block = await tc.write_block(
            [tapped, b.info()],
            ExtendedBlock(POOL, 61, 1001),
            data,
            token=write,
            protection=a.server.protection,
        )
        read = nn.token("alice", POOL, 61, (AccessMode.READ,))
        got = await tc.read_block(
            tapped, block, 0, len(data), token=read, protection=a.server.protection
        )
        assert got == data
        checksum = await tc.block_checksum(
            tapped, block, token=read, protection=a.server.protection
        )
        assert checksum.crcPerBlock > 0
        copy = nn.token("alice", POOL, 61, (AccessMode.COPY,))
        await tc.transfer_block(
            tapped, block, [c.info()], token=copy, protection=a.server.protection
        )
        seen = tap.seen()
    assert bytes(b.store.replicas[61].data) == data and bytes(c.store.replicas[61].data) == data
    assert len(seen) > 2 * len(data)  # the write and the read went through the tap
    for at in range(0, len(data) - 16, 4099):
        assert data[at : at + 16] not in seen
    assert a.server.metrics.sasl_refusals == 0
    # AES-CTR where both sides take it: the client's write, read, checksum and transfer
    # at a, and a's own connections to its mirror b and to c
    aes = bool(a.server.protection.aes_key_bytes)
    assert (a.server.metrics.aes_connections >= 4) is aes
    assert (b.server.metrics.aes_connections >= 1) is aes
    assert (c.server.metrics.aes_connections >= 1) is aes


async def test_a_connection_without_the_handshake_is_refused_and_nothing_is_written(
    secured: tuple[BlockTokenSecretManager, list[_Node]],
) -> None:
    nn, (a, _, _) = secured
    block = ExtendedBlock(POOL, 62, 1001)
    read = nn.token("alice", POOL, 62, (AccessMode.READ,))
    with pytest.raises(codec.DataTransferError):  # our client without protection
        await tc.read_block(a.info(), block, 0, 10, token=read)
    reader, writer = await asyncio.open_connection("127.0.0.1", a.server.port)
    op = dt.OpReadBlockProto(header=tc.client_header(block, "raw", read), offset=0, len=10)
    writer.write(codec.encode_op(codec.Op.READ_BLOCK, op))
    await writer.drain()
    assert await asyncio.wait_for(reader.read(), 10) == b""  # closed, not a byte back
    writer.close()
    assert a.server.metrics.sasl_refusals == 2
    assert a.server.metrics.ops == {}  # no op was read


async def test_a_forged_token_fails_the_handshake_and_the_client_says_why(
    secured: tuple[BlockTokenSecretManager, list[_Node]],
) -> None:
    nn, (a, b, _) = secured
    data = b"x" * 1000
    token = _forged(nn.token("alice", POOL, 63, (AccessMode.WRITE,)))
    with pytest.raises(tc.BlockWriteError, match="Mismatched response") as err:
        await tc.write_block(
            [a.info(), b.info()],
            ExtendedBlock(POOL, 63, 1001),
            data,
            token=token,
            protection=a.server.protection,
        )
    assert err.value.bad_node_index == 0
    with pytest.raises(sasl_streams.SaslTransferError, match="keyID=.*doesn't exist"):
        await tc.read_block(
            a.info(),
            ExtendedBlock(POOL, 63, 1001),
            0,
            10,
            token=_manager(1).token("alice", POOL, 63, (AccessMode.READ,)),
            protection=a.server.protection,
        )
    assert 63 not in a.store.replicas and a.server.metrics.sasl_refusals == 2
