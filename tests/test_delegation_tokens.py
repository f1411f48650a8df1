"""Delegation tokens' pure parts (design §S.10): the identifier's bytes, the token rules, the
edit log round trip, the token storage file, and SASL DIGEST-MD5 with its layers."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from qjm.editlog.framing import RawOp
from qjm.editlog.ops import decode_op, encode_body
from qjm.editlog.ops.types import DelegationTokenIdentifier
from qjm.ipc.sasl import TokenCredential
from qjm.namenode.delegation import (
    DelegationTokens,
    InvalidTokenError,
    TokenPolicy,
    identifier_bytes,
    parse_identifier,
    token_password,
)
from qjm.namenode.errors import AccessControlError
from qjm.namenode.image import NameSystemInfo, read_image, write_image
from qjm.namenode.namespace import Namespace, load_namespace
from qjm.namenode.token_file import decode_token_file, encode_token_file, ha_service
from qjm.security.digest import (
    DigestClient,
    DigestError,
    DigestServer,
    Rc4,
    hash_a1,
    parse_directives,
    response_value,
)
from qjm.security.gss import LAYER_AUTHENTICATION, LAYER_INTEGRITY, LAYER_PRIVACY

DAY = 86_400_000
T0 = 1_700_000_000_000
POLICY = TokenPolicy()
KEY = bytes(range(64))

# What Hadoop's AbstractDelegationTokenIdentifier.write gives for these values: version 0,
# Text owner, renewer, realUser (vint length + UTF-8), vlong issue and max dates (a length
# byte 0x8a: 6 bytes follow), vint sequence number and master key id.
IDENT = DelegationTokenIdentifier("alice@QJM.TEST", "alice", "", T0, T0 + 7 * DAY, 1, 2)
IDENT_BYTES = bytes.fromhex(
    "00" + "0e" + b"alice@QJM.TEST".hex() + "05" + b"alice".hex() + "00"
    "8a018bcfe56800" + "8a018bf3f1ec00" + "01" + "02"
)


def test_the_identifier_is_hadoops_writable_both_ways() -> None:
    assert identifier_bytes(IDENT) == IDENT_BYTES
    assert parse_identifier(IDENT_BYTES) == IDENT


@pytest.mark.parametrize(
    "raw",
    [b"", b"\x01" + IDENT_BYTES[1:], IDENT_BYTES[:-1], IDENT_BYTES + b"\x00"],
    ids=["empty", "version 1", "cut", "trailing byte"],
)
def test_an_identifier_hadoop_could_not_write_is_an_invalid_token(raw: bytes) -> None:
    with pytest.raises(InvalidTokenError, match="Can't de-serialize tokenIdentifier"):
        parse_identifier(raw)


def test_the_password_is_hmac_sha1_of_the_identifier_under_the_master_key() -> None:
    import hashlib
    import hmac

    assert token_password(KEY, IDENT_BYTES) == hmac.new(KEY, IDENT_BYTES, hashlib.sha1).digest()
    assert len(token_password(KEY, IDENT_BYTES)) == 20


def issue(
    state: DelegationTokens, owner: str = "alice@R", renewer: str = "alice", now: int = T0
) -> tuple[DelegationTokenIdentifier, bytes, list[object]]:
    """Get a token and apply its ops, as the active does: (identifier, password, ops)."""
    ops, ident, password = state.plan_get(owner, renewer, "", now, POLICY, KEY)
    for op in ops:
        assert state.apply(op)
    return ident, password, list(ops)


def test_the_first_token_rolls_a_master_key_and_dates_follow_hdfs_defaults() -> None:
    state = DelegationTokens()
    ident, password, ops = issue(state)
    assert [type(op).__name__ for op in ops] == ["UpdateMasterKeyOp", "GetDelegationTokenOp"]
    assert (ident.issue_date, ident.max_date) == (T0, T0 + 7 * DAY)
    assert (ident.sequence_number, ident.master_key_id) == (1, 1)
    assert state.tokens[ident] == T0 + DAY  # renew date: the renew interval
    assert state.password_of(identifier_bytes(ident), T0 + 1) == (ident, password)
    second, _, ops = issue(state, now=T0 + 1000)
    assert [type(op).__name__ for op in ops] == ["GetDelegationTokenOp"]  # same key
    assert (second.sequence_number, second.master_key_id) == (2, 1)
    third, _, ops = issue(state, now=T0 + DAY)  # the key update interval passed
    assert [type(op).__name__ for op in ops] == ["UpdateMasterKeyOp", "GetDelegationTokenOp"]
    assert third.master_key_id == 2


def test_a_standby_that_replays_the_ops_through_the_edit_log_honours_the_token() -> None:
    active, standby = DelegationTokens(), DelegationTokens()
    ident, password, ops = issue(active)
    for op in ops:  # through the edit log's bytes, as the tailer reads them
        body = encode_body(op)  # type: ignore[arg-type]
        again = decode_op(RawOp(op.OPCODE, 7, body, 0))  # type: ignore[attr-defined]
        assert again == op
        standby.apply(again)
    assert standby.password_of(identifier_bytes(ident), T0 + 5) == (ident, password)


def test_the_image_keeps_the_keys_and_live_tokens_for_both_loaders(tmp_path: Path) -> None:
    """A NameNode started from a checkpoint honours the tokens issued before it (its
    SECRET_MANAGER section), by the fast loader and the general one alike."""
    ns = Namespace(superuser="hdfs")
    alice, alice_pw, ops = issue(ns.tokens)
    bob, bob_pw, more = issue(ns.tokens, owner="bob@R", renewer="bob", now=T0 + 1000)
    cancelled, _, last = issue(ns.tokens, owner="carol@R", renewer="carol", now=T0 + 2000)
    (op,) = ns.tokens.plan_cancel(identifier_bytes(cancelled), "carol@R", "carol")
    assert ns.tokens.apply(op)
    path = tmp_path / "fsimage_0000000000000000042"
    write_image(path, ns.to_image(42, NameSystemInfo(namespace_id=7, txid=0)))
    slow = Namespace.from_image(read_image(path), superuser="hdfs").tokens
    fast = load_namespace(path, superuser="hdfs")[0].tokens
    for loaded in (slow, fast):
        assert loaded.keys == ns.tokens.keys and loaded.tokens == ns.tokens.tokens
        assert (loaded.current_key_id, loaded.sequence_number) == (1, 3)
        assert loaded.password_of(identifier_bytes(alice), T0 + 5) == (alice, alice_pw)
        assert loaded.password_of(identifier_bytes(bob), T0 + 5) == (bob, bob_pw)
        with pytest.raises(InvalidTokenError, match="can't be found in cache"):
            loaded.password_of(identifier_bytes(cancelled), T0 + 5)
    # the next token after the restart continues the sequence, under the same key
    nxt, _, _ = issue(fast, owner="dave@R", renewer="dave", now=T0 + 4000)
    assert (nxt.sequence_number, nxt.master_key_id) == (4, 1)
    assert len(ops) == 2 and len(more) == len(last) == 1  # one key for all of them


def test_a_cancelled_an_unknown_and_an_expired_token_are_refused() -> None:
    state = DelegationTokens()
    ident, _, _ = issue(state)
    raw = identifier_bytes(ident)
    with pytest.raises(InvalidTokenError, match="has expired"):
        state.password_of(raw, T0 + DAY + 1)
    forged = identifier_bytes(
        DelegationTokenIdentifier("nn@R", "alice", "", T0, T0 + 7 * DAY, 1, 1)
    )
    with pytest.raises(InvalidTokenError, match="can't be found in cache"):
        state.password_of(forged, T0 + 1)
    for op in state.plan_cancel(raw, "alice@R", "alice"):
        state.apply(op)
    with pytest.raises(InvalidTokenError, match="Token for real user: , can't be found in cache"):
        state.password_of(raw, T0 + 1)
    with pytest.raises(InvalidTokenError, match="Token not found"):
        state.plan_cancel(raw, "alice@R", "alice")


def test_only_the_renewer_renews_with_the_right_password_up_to_the_max_date() -> None:
    state = DelegationTokens()
    ident, password, _ = issue(state, renewer="yarn")
    raw = identifier_bytes(ident)
    ops, expiry = state.plan_renew(raw, password, "yarn", T0 + 3 * DAY // 2, POLICY)
    assert expiry == T0 + 3 * DAY // 2 + DAY
    state.apply(ops[0])
    assert state.tokens[ident] == expiry
    _, expiry = state.plan_renew(raw, password, "yarn", T0 + 13 * DAY // 2, POLICY)
    assert expiry == ident.max_date  # never past the max date
    with pytest.raises(AccessControlError, match="alice tries to renew a token .* with non-"):
        state.plan_renew(raw, password, "alice", T0, POLICY)
    with pytest.raises(AccessControlError, match="with wrong password"):
        state.plan_renew(raw, b"x" * 20, "yarn", T0, POLICY)
    with pytest.raises(InvalidTokenError, match="tried to renew an expired token"):
        state.plan_renew(raw, password, "yarn", ident.max_date + 1, POLICY)
    no_renewer, pw, _ = issue(state, renewer="")
    with pytest.raises(AccessControlError, match="without a renewer"):
        state.plan_renew(identifier_bytes(no_renewer), pw, "", T0, POLICY)


@pytest.mark.parametrize(
    ("canceller", "short", "allowed"),
    [
        ("alice@R", "alice", True),  # the owner
        ("yarn/host@R", "yarn", True),  # the renewer
        ("bob@R", "bob", False),
        ("alice/admin@R", "alice", False),  # the owner's short name is not the owner
    ],
)
def test_the_owner_or_the_renewer_may_cancel(canceller: str, short: str, allowed: bool) -> None:
    state = DelegationTokens()
    ident, _, _ = issue(state, owner="alice@R", renewer="yarn")
    raw = identifier_bytes(ident)
    if allowed:
        assert len(state.plan_cancel(raw, canceller, short)) == 1
    else:
        with pytest.raises(AccessControlError, match="is not authorized to cancel the token"):
            state.plan_cancel(raw, canceller, short)


def test_a_new_token_drops_the_dead_ones() -> None:
    state = DelegationTokens()
    old, _, _ = issue(state)
    new, _, _ = issue(state, now=T0 + 2 * DAY)  # old's renew date passed
    assert old not in state.tokens and new in state.tokens


def test_the_token_storage_file_is_hadoops_writable_form() -> None:
    token = TokenCredential(b"\x01\x02", b"pw", "HDFS_DELEGATION_TOKEN", ha_service("ns1"))
    data = encode_token_file([token])
    alias = b"\x0bha-hdfs:ns1"
    assert data == (
        b"HDTS\x00\x01" + alias + b"\x02\x01\x02\x02pw\x15HDFS_DELEGATION_TOKEN" + alias + b"\x00"
    )
    assert decode_token_file(data) == [token]


# -- DIGEST-MD5 -------------------------------------------------------------------------------


def test_rfc_2831s_own_example_transcript() -> None:
    """The exchange RFC 2831 section 4 shows (an IMAP client), with qop auth."""
    ha1 = hash_a1("chris", "elwood.innosoft.com", "secret", "OA6MG9tEQGm2hh", "OA6MHXh6VqTrRk", "")
    args = ("OA6MG9tEQGm2hh", "00000001", "OA6MHXh6VqTrRk", "auth", "imap/elwood.innosoft.com")
    assert response_value(ha1, *args, initial=True) == "d388dad90d4bbd760a152321f2143af7"
    assert response_value(ha1, *args, initial=False) == "ea40f60335c427b5527b84dbabcdfffd"


def test_rc4_known_answer() -> None:
    # RFC 6229's 128-bit key 0x0102...10: the key stream at offsets 0 and 16 (zeros in)
    stream = Rc4(bytes(range(1, 17)))  # the state runs on across calls
    assert stream.process(bytes(16)).hex() == "9ac7cc9a609d1ef7b2932899cde41b97"
    assert stream.process(bytes(16)).hex() == "5248c4959014126a6e8a84f11d1a9e1c"


def test_directives_parse_quoted_and_bare_values() -> None:
    got = parse_directives(b'realm="de\\"f",nonce="a,b", qop=auth , charset=utf-8')
    assert got == {"realm": 'de"f', "nonce": "a,b", "qop": "auth", "charset": "utf-8"}
    with pytest.raises(DigestError, match="duplicate directive nonce"):
        parse_directives(b'nonce="a",nonce="b"')


def _pair(layers: int, password: bytes = b"secret") -> tuple[DigestServer, DigestClient]:
    server = DigestServer(lambda user: b"secret", layers, nonce="N0nce")
    client = DigestClient(IDENT_BYTES, password, layers, cnonce="CN0nce")
    return server, client


@pytest.mark.parametrize("layer", [LAYER_AUTHENTICATION, LAYER_INTEGRITY, LAYER_PRIVACY])
def test_the_exchange_and_its_layer_both_ways(layer: int) -> None:
    server, client = _pair(layer)
    challenge = server.challenge()
    assert challenge.startswith(b'realm="default",nonce="N0nce",qop=')
    response = client.evaluate(challenge)
    assert b'digest-uri="/default"' in response
    assert b"username=" + b'"' + client.user.encode() + b'"' in response
    rspauth = server.evaluate(response)
    assert server.complete and server.username == client.user and server.layer == layer
    assert client.evaluate(rspauth) == b"" and client.complete
    assert server.wraps == client.wraps == (layer != LAYER_AUTHENTICATION)
    if not server.wraps:
        return
    for i in range(3):  # sequence numbers and the RC4 state run on
        message = f"frame {i} /secret/path".encode()
        wrapped = client.wrap(message)
        assert (message in wrapped) == (layer == LAYER_INTEGRITY)
        assert server.unwrap(wrapped) == message
        assert client.unwrap(server.wrap(message * 2)) == message * 2


def test_3des_the_cipher_a_client_without_rc4_picks_chains_across_messages() -> None:
    server, client = _pair(LAYER_PRIVACY)
    challenge = server.challenge()
    assert b'cipher="rc4,3des"' in challenge
    # a client that has 3des only (hdfs-native's DIGEST-MD5) picks it from the offer
    response = client.evaluate(challenge.replace(b'cipher="rc4,3des"', b'cipher="3des"'))
    assert b'cipher="3des"' in response
    client.evaluate(server.evaluate(response))
    for size in (0, 1, 5, 6, 7, 8, 14, 1000):  # every padding length, 1 to 8
        message = bytes(range(256))[:size] * (1 + size // 256)
        wrapped = client.wrap(message)
        assert (len(wrapped) - 6) % 8 == 0 and (message not in wrapped or size < 2)
        assert server.unwrap(wrapped) == message
        assert client.unwrap(server.wrap(message)) == message
    # the same message twice encrypts differently: the CBC chain runs on
    assert client.wrap(b"x" * 16)[:16] != client.wrap(b"x" * 16)[:16]


def test_a_wrong_password_a_tampered_or_replayed_message_are_refused() -> None:
    server, client = _pair(LAYER_PRIVACY, password=b"guess")
    with pytest.raises(DigestError, match="Mismatched response"):
        server.evaluate(client.evaluate(server.challenge()))
    server, client = _pair(LAYER_INTEGRITY)
    client.evaluate(server.evaluate(client.evaluate(server.challenge())))
    wrapped = client.wrap(b"hello")
    tampered = b"j" + wrapped[1:]
    with pytest.raises(DigestError, match="does not verify"):
        server.unwrap(tampered)
    assert server.unwrap(wrapped) == b"hello"
    with pytest.raises(DigestError, match="Out of order sequencing"):
        server.unwrap(wrapped)  # a replay


def test_the_server_takes_only_what_it_offered() -> None:
    server, client = _pair(LAYER_PRIVACY)
    response = client.evaluate(server.challenge())
    with pytest.raises(DigestError, match="unsupported protection: auth-int"):
        server.evaluate(response.replace(b"qop=auth-conf", b"qop=auth-int"))
    server, client = _pair(LAYER_AUTHENTICATION)
    response = client.evaluate(server.challenge())
    with pytest.raises(DigestError, match="Mismatched nonce"):
        server.evaluate(response.replace(b"N0nce", b"other"))
    server, client = DigestServer(lambda u: b"x", LAYER_PRIVACY), _pair(LAYER_INTEGRITY)[1]
    with pytest.raises(DigestError, match="No common protection layer"):
        client.evaluate(server.challenge())


# A transcript made by the JDK's own DIGEST-MD5 client (javax.security.sasl, as Hadoop's
# client uses it) with qop auth-conf, for IDENT_BYTES and the password bytes 0..19: its
# response to our challenge, our rspauth it accepted, a message it wrapped, and a message of
# ours it unwrapped to "hello from qjm".
JDK_RESPONSE = (
    b'charset=utf-8,username="AA5hbGljZUBRSk0uVEVTVAVhbGljZQCKAYvP5WgAigGL8/HsAAEC",'
    b'realm="default",nonce="N0nce",nc=00000001,'
    b'cnonce="GFXNUJDayXFBa23Fo3pmdMjhOlocIsveIPjXvzOw",digest-uri="/default",maxbuf=65536,'
    b'response=4a50e0c7a42347e53f56d8106caebbdb,qop=auth-conf,cipher="rc4"'
)
JDK_ACCEPTED_RSPAUTH = b"rspauth=4e1f241c2c3c0bc5cf42f03721866514"
JDK_WRAPPED = bytes.fromhex("c093a528cdd1a98f5332f82f551594512eb3d02dbe2b0c68be000100000000")
JDK_UNWRAPPED = bytes.fromhex("26446a859f70de659b63eca246a9653b415defab2e1c250a000100000000")


def test_a_transcript_of_the_jdks_client_with_auth_conf() -> None:
    server = DigestServer(lambda user: bytes(range(20)), LAYER_PRIVACY, nonce="N0nce")
    assert server.challenge() == (
        b'realm="default",nonce="N0nce",qop="auth-conf",charset=utf-8,cipher="rc4,3des",'
        b"algorithm=md5-sess"
    )
    assert server.evaluate(JDK_RESPONSE) == JDK_ACCEPTED_RSPAUTH
    assert parse_identifier(base64.b64decode(server.username)) == IDENT
    assert server.unwrap(JDK_WRAPPED) == b"hello from java"
    assert server.wrap(b"hello from qjm") == JDK_UNWRAPPED
