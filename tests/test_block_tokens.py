"""Block access tokens' rules (design §S.9): the identifier's bytes as Hadoop writes them,
the password, the DataNode's check, the NameNode's rolling keys and the DataNode's key set."""

from __future__ import annotations

import dataclasses
import itertools
import re
import tomllib

import pytest

from qjm.cluster.hadoop_conf import hdfs_site
from qjm.config import (
    ClusterConfig,
    DataNodeSettings,
    SecuritySettings,
    config_from_dict,
    dump_config,
)
from qjm.datanode.block_keys import BlockPoolKeys
from qjm.errors import ConfigError
from qjm.hdfs import datanode_protocol as wire
from qjm.namenode.block_service import NameNodeBlocks
from qjm.namenode.block_tokens import BlockTokenSecretManager, key_id_range, next_serial
from qjm.security.block_token import (
    AccessMode,
    BlockKey,
    BlockTokenIdentifier,
    InvalidBlockTokenError,
    Token,
    check_access,
    compute_password,
    decode_identifier,
    encode_identifier,
    make_token,
)

POOL = "BP-1"
BLOCK = 1073741825
NOW = 1_700_000_000_000
IDENT = BlockTokenIdentifier(
    expiry_ms=NOW,
    key_id=5,
    user_id="alice",
    pool_id=POOL,
    block_id=BLOCK,
    modes=frozenset({AccessMode.WRITE, AccessMode.READ}),
)
# BlockTokenIdentifier.writeLegacy of IDENT, field by field (WritableUtils' formats)
HADOOP_BYTES = bytes.fromhex(
    "8a018bcfe56800"  # expiryDate: vlong, 6 bytes after the length byte -118
    "05"  # keyId: vint 5
    "00000005"
    + b"alice".hex()  # userId: writeString (4-byte length, UTF-8)
    + "00000004"
    + b"BP-1".hex()  # blockPoolId
    + "8c40000001"  # blockId: vlong, 4 bytes after -116
    "02"  # two access modes, each an enum name as Text, in ordinal order
    "04" + b"READ".hex() + "05" + b"WRITE".hex() + "00"  # no storage types
    "00"  # no storage ids
)
KEY = BlockKey(5, NOW + 3_600_000, b"k" * 64)


def test_the_identifier_is_written_as_hadoop_writes_it() -> None:
    assert encode_identifier(IDENT) == HADOOP_BYTES
    assert decode_identifier(HADOOP_BYTES) == IDENT


@pytest.mark.parametrize(
    "ident",
    [
        dataclasses.replace(IDENT, user_id=None, key_id=-7, block_id=-(1 << 62)),
        dataclasses.replace(IDENT, key_id=(1 << 31) - 1, modes=frozenset(AccessMode)),
        dataclasses.replace(IDENT, storage_types=("DISK", "SSD"), storage_ids=("DS-1", "DS-2")),
        dataclasses.replace(IDENT, modes=frozenset(), user_id="é", expiry_ms=0),
    ],
)
def test_identifiers_round_trip(ident: BlockTokenIdentifier) -> None:
    assert decode_identifier(encode_identifier(ident)) == ident


@pytest.mark.parametrize(
    "data",
    [
        b"",
        HADOOP_BYTES[:10],  # cut inside the user
        b"\x08\x01",  # a protobuf identifier (first byte a field tag): not read
        HADOOP_BYTES.replace(b"\x04READ", b"\x04NONE"),  # no such access mode
        HADOOP_BYTES.replace(b"\x02\x04READ", b"\x09\x04READ"),  # more modes than exist
    ],
)
def test_malformed_identifiers_are_refused(data: bytes) -> None:
    with pytest.raises(ValueError):
        decode_identifier(data)


def test_the_password_is_hmac_sha1_of_the_identifier_bytes() -> None:
    # RFC 2202 test case 2
    assert compute_password(b"Jefe", b"what do ya want for nothing?").hex() == (
        "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"
    )
    token = make_token(IDENT, KEY)
    assert token.identifier == HADOOP_BYTES
    assert token.password == compute_password(KEY.secret, HADOOP_BYTES)
    assert token.kind == "HDFS_BLOCK_TOKEN"


def _forged(token: Token) -> Token:
    return dataclasses.replace(token, password=bytes([token.password[0] ^ 1]) + token.password[1:])


GOOD = make_token(IDENT, KEY)


@pytest.mark.parametrize(
    ("token", "block_id", "mode", "now", "keys", "refusal"),
    [
        (GOOD, BLOCK, AccessMode.READ, NOW, {5: KEY}, None),
        (GOOD, BLOCK, AccessMode.WRITE, NOW - 1, {5: KEY}, None),
        (Token(b"", b"", "", ""), BLOCK, AccessMode.READ, NOW, {5: KEY}, "Unable to de-serialize"),
        (_forged(GOOD), BLOCK, AccessMode.READ, NOW, {5: KEY}, "correct token password"),
        (GOOD, BLOCK + 1, AccessMode.READ, NOW, {5: KEY}, "doesn't apply to block"),
        (GOOD, BLOCK, AccessMode.READ, NOW + 1, {5: KEY}, "is expired."),
        (GOOD, BLOCK, AccessMode.COPY, NOW, {5: KEY}, "doesn't have COPY permission"),
        (GOOD, BLOCK, AccessMode.READ, NOW, {6: KEY}, "required block key (keyID=5)"),
        # the right key id with another secret is a forgery too
        (
            GOOD,
            BLOCK,
            AccessMode.READ,
            NOW,
            {5: dataclasses.replace(KEY, secret=b"x" * 64)},
            "correct token password",
        ),
    ],
)
def test_check_access(
    token: Token,
    block_id: int,
    mode: AccessMode,
    now: int,
    keys: dict[int, BlockKey],
    refusal: str | None,
) -> None:
    def check() -> BlockTokenIdentifier:
        return check_access(
            token,
            keys,
            pool_id=POOL,
            block_id=block_id,
            block_name=f"{POOL}:blk_{block_id}_1001",
            mode=mode,
            now_ms=now,
        )

    if refusal is None:
        assert check() == IDENT
    else:
        with pytest.raises(InvalidBlockTokenError, match=re.escape(refusal)) as err:
            check()
        said = str(err.value)  # HDFS's text names the identifier, or the block
        assert "block_token_identifier (" in said or f"block={POOL}:blk_" in said


def test_another_pool_is_refused() -> None:
    with pytest.raises(InvalidBlockTokenError, match="doesn't apply to block BP-2:blk"):
        check_access(
            GOOD,
            {5: KEY},
            pool_id="BP-2",
            block_id=BLOCK,
            block_name=f"BP-2:blk_{BLOCK}_1",
            mode=AccessMode.READ,
            now_ms=NOW,
        )


# ---- the NameNode's keys ----------------------------------------------------------------


@pytest.mark.parametrize("num_nns", [1, 2, 3])
def test_each_namenode_has_its_own_key_id_range(num_nns: int) -> None:
    ranges = [key_id_range(i, num_nns) for i in range(num_nns)]
    for (start, size), (next_start, _) in itertools.pairwise(ranges):
        assert start + size <= next_start
    start, size = ranges[-1]
    assert ranges[0][0] >= 0 and start + size <= (1 << 31) - 1
    # serials wrap inside the range
    assert next_serial(start + size - 1, num_nns - 1, num_nns) == start
    assert next_serial(start, num_nns - 1, num_nns) == start + 1


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> int:
        return self.now


def _manager(index: int, clock: Clock) -> BlockTokenSecretManager:
    return BlockTokenSecretManager(
        nn_index=index,
        num_nns=2,
        key_update_interval_ms=600 * 60_000,
        token_lifetime_ms=600 * 60_000,
        clock_ms=clock,
    )


def test_keys_roll_and_tokens_of_a_retired_key_stay_valid() -> None:
    clock = Clock()
    nn = _manager(0, clock)
    start, size = key_id_range(0, 2)
    assert all(start <= k < start + size for k in nn.keys)
    before = nn.token("alice", POOL, BLOCK, [AccessMode.READ])
    old_key = nn.current.key_id
    assert not nn.roll_if_due()
    clock.now += 600 * 60_000
    assert nn.roll_if_due() and nn.generation == 1
    assert nn.current.key_id != old_key and old_key in nn.keys
    exported = nn.export()
    assert exported.current == nn.current and old_key in {k.key_id for k in exported.all_keys}
    dn = BlockPoolKeys(clock)
    dn.add(POOL, exported)
    block_name = f"{POOL}:blk_{BLOCK}_1"
    assert dn.check(before, POOL, BLOCK, block_name, AccessMode.READ).key_id == old_key
    after = nn.token("alice", POOL, BLOCK, [AccessMode.READ])
    assert decode_identifier(after.identifier).key_id == nn.current.key_id
    # past the token's lifetime the old token is refused, the retired key dropped later
    clock.now += 600 * 60_000 + 1
    with pytest.raises(InvalidBlockTokenError, match="is expired"):
        dn.check(before, POOL, BLOCK, block_name, AccessMode.READ)


def test_a_datanode_keeps_both_namenodes_keys_and_signs_with_the_current_one() -> None:
    clock = Clock()
    nn0, nn1 = _manager(0, clock), _manager(1, clock)
    assert not set(nn0.keys) & set(nn1.keys)
    dn = BlockPoolKeys(clock)
    dn.add(POOL, nn0.export())
    dn.add(POOL, nn1.export())
    name = f"{POOL}:blk_{BLOCK}_1"
    for nn in (nn0, nn1):
        token = nn.token("alice", POOL, BLOCK, [AccessMode.READ])
        assert dn.check(token, POOL, BLOCK, name, AccessMode.READ).user_id == "alice"
    own = dn.token(POOL, BLOCK, [AccessMode.WRITE])
    assert decode_identifier(own.identifier).key_id == nn1.current.key_id
    assert dn.check(own, POOL, BLOCK, name, AccessMode.WRITE).modes == {AccessMode.WRITE}
    with pytest.raises(InvalidBlockTokenError, match="READ permission"):
        dn.check(own, POOL, BLOCK, name, AccessMode.READ)
    # a pool it holds no keys for: nothing verifies, and it signs only an empty token
    with pytest.raises(InvalidBlockTokenError):
        dn.check(own, "BP-other", BLOCK, name, AccessMode.WRITE)
    assert dn.token("BP-other", BLOCK, [AccessMode.WRITE]).identifier == b""


def test_expired_keys_leave_the_datanode_at_the_next_update() -> None:
    clock = Clock()
    nn = _manager(0, clock)
    dn = BlockPoolKeys(clock)
    dn.add(POOL, nn.export())
    first = set(dn.key_ids(POOL))
    for _ in range(5):  # five rolls, an interval apart: the first keys expired
        clock.now += 600 * 60_000
        nn.roll_if_due()
        dn.add(POOL, nn.export())
    assert not first & set(dn.key_ids(POOL))
    assert set(dn.key_ids(POOL)) == set(nn.keys)


def test_keys_cross_the_datanode_protocol() -> None:
    nn = _manager(1, Clock())
    keys = nn.export()
    command = wire.command_from_proto(wire.command_to_proto(wire.KeyUpdateCommand(keys)))
    assert command == wire.KeyUpdateCommand(keys)
    assert wire.keys_from_proto(wire.keys_to_proto(None)) is None
    # a key id with the high bit set (HDFS 2's second NameNode) reads back as the Java int
    high = dataclasses.replace(keys, current=BlockKey((1 << 31) + 3 - (1 << 32), 1, b"s"))
    assert wire.keys_from_proto(wire.keys_to_proto(high)) == high


# ---- config ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("security", "on"),
    [
        ({}, False),
        ({"authentication": "kerberos", "realm": "R"}, True),
        ({"authentication": "kerberos", "realm": "R", "block_access_token": False}, False),
        ({"block_access_token": True}, True),
    ],
)
def test_block_tokens_follow_kerberos_unless_set(security: dict[str, object], on: bool) -> None:
    cfg = config_from_dict({"security": security})
    assert cfg.security.block_tokens is on
    assert hdfs_site(cfg)["dfs.block.access.token.enable"] == str(on).lower()
    again = config_from_dict(tomllib.loads(dump_config(cfg)))
    assert again.security == cfg.security


def test_key_intervals_must_be_positive() -> None:
    with pytest.raises(ConfigError, match="block_token_lifetime_min"):
        SecuritySettings(block_token_lifetime_min=0)
    assert ClusterConfig().security.block_key_update_interval_min == 600


# ---- the NameNode hands its keys out ----------------------------------------------------


async def test_keys_go_out_at_registration_and_after_each_roll_once() -> None:
    clock = Clock()
    nn = _manager(0, clock)
    ns = wire.NamespaceInfo(POOL, wire.StorageInfo(-66, 4242, "CID-1", 0))
    blocks = NameNodeBlocks(lambda: ns, lambda: None, DataNodeSettings(), block_size=1 << 20)
    blocks.tokens = nn
    reg = wire.DatanodeRegistration(
        wire.DatanodeId("127.0.0.1", "localhost", "dn-uuid-1", 9866, 9864, 9867), ns.storage
    )
    taken = await blocks.register_datanode(reg)
    assert taken.keys == nn.export()
    facts = wire.HeartbeatFacts(())

    async def key_updates() -> list[wire.DatanodeCommand]:
        commands = await blocks.handle_heartbeat(reg, facts)
        return [c for c in commands if isinstance(c, wire.KeyUpdateCommand)]

    assert await key_updates() == []
    clock.now += 600 * 60_000
    assert await key_updates() == [wire.KeyUpdateCommand(nn.export())]
    assert nn.generation == 1
    assert await key_updates() == []  # the DataNode has them now
