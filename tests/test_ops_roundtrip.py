"""Property tests: encode -> decode (binary and XML) is the identity for every op type."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qjm.editlog import framing
from qjm.editlog.ops import (
    OP_CLASSES,
    AddBlockOp,
    MkdirOp,
    Op,
    SetOwnerOp,
    decode_op,
    encode_op,
    iter_decoded,
)
from qjm.editlog.ops import types as t
from qjm.editlog.ops.xml import SPECS, mangle, ops_to_xml, parse_xml, unmangle

I8 = st.integers(-128, 127)
I16 = st.integers(-(2**15), 2**15 - 1)
I32 = st.integers(-(2**31), 2**31 - 1)
I64 = st.integers(-(2**63), 2**63 - 1)
U63 = st.integers(0, 2**63 - 1)
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=24)
NAME = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=12)
CLIENT_ID = st.one_of(st.just(b""), st.binary(min_size=16, max_size=16))

BLOCK = st.builds(t.Block, U63, U63, U63)
PERM = st.builds(t.PermissionStatus, TEXT, TEXT, I16)
ACL = st.builds(
    t.AclEntry,
    st.sampled_from(t.ACL_SCOPES),
    st.sampled_from(t.ACL_TYPES),
    st.none() | TEXT,
    st.sampled_from(t.FS_ACTIONS),
)
XATTR = st.builds(
    t.XAttr, st.sampled_from(t.XATTR_NAMESPACES), TEXT, st.none() | st.binary(max_size=20)
)
TOKEN = st.builds(t.DelegationTokenIdentifier, TEXT, TEXT, TEXT, I64, I64, I32, I32)
KEY = st.builds(t.DelegationKey, I32, I64, st.none() | st.binary(max_size=32))

BY_NAME: dict[str, st.SearchStrategy[Any]] = {
    "length": st.just(0),
    "replication": I16,
    "mode": I16,
    "default_replication": I16,
    "storage_policy_id": I8,
    "erasure_coding_policy_id": I8,
    "policy_id": I8,
    "rpc_call_id": I32,
    "rpc_client_id": CLIENT_ID,
    "storage_type": st.integers(0, len(t.STORAGE_TYPES) - 1),
    "data_units": I32,
    "parity_units": I32,
    "cell_size": I32,
    "blocks": st.lists(BLOCK, max_size=4).map(tuple),
    "last_block": BLOCK,
    "penultimate_block": st.none() | BLOCK,
    "truncate_block": st.none() | BLOCK,
    "permission_status": PERM,
    "acls": st.lists(ACL, max_size=4).map(tuple),
    "xattrs": st.lists(XATTR, max_size=3).map(tuple),
    "srcs": st.lists(TEXT, max_size=4).map(tuple),
    "options": st.lists(st.sampled_from(t.RENAME_OPTIONS), max_size=3).map(tuple),
    "extra_options": st.lists(st.tuples(TEXT, TEXT), max_size=3).map(tuple),
    "token": TOKEN,
    "delegation_key": KEY,
    "payload": st.binary(max_size=64),
    "username": st.none() | NAME,
    "groupname": st.none() | NAME,
    "overwrite": st.booleans(),
    "new_block": st.booleans(),
}


def _field_strategy(cls: type[Op], f: dataclasses.Field[Any]) -> st.SearchStrategy[Any]:
    if f.name in BY_NAME:
        return BY_NAME[f.name]
    ann = str(f.type)
    base = st.integers(-(2**15), 2**15 - 1) if f.name == "mode" else I64
    if ann == "int":
        return base
    if ann == "int | None":
        return st.none() | base
    if ann == "str":
        return TEXT
    if ann == "str | None":
        return st.none() | TEXT
    raise AssertionError(f"no strategy for {cls.__name__}.{f.name}: {ann}")


def op_strategy(cls: type[Op]) -> st.SearchStrategy[Op]:
    fields = {f.name: _field_strategy(cls, f) for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    strat = st.fixed_dictionaries(fields).map(lambda kw: cls(**kw))
    if cls is MkdirOp:  # an atime equal to the timestamp is stored as None
        strat = strat.filter(lambda op: op.atime != op.timestamp)  # type: ignore[attr-defined]
    return strat


ALL = sorted(OP_CLASSES.values(), key=lambda c: c.OPCODE)


def test_every_defined_opcode_has_a_class_and_xml_spec() -> None:
    hdfs = set(range(0, 53)) - {5, 6}
    assert hdfs | {framing.OP_OPAQUE} == set(OP_CLASSES)
    assert set(SPECS) == set(OP_CLASSES.values())


@pytest.mark.slow
@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
@settings(max_examples=60, deadline=None)
@given(data=st.data(), txid=st.integers(1, 2**63 - 1))
def test_binary_roundtrip(cls: type[Op], data: st.DataObject, txid: int) -> None:
    op = data.draw(op_strategy(cls))
    frame = encode_op(op, txid)
    raws = list(framing.iter_ops(frame, 0))
    assert len(raws) == 1 and raws[0].txid == txid and raws[0].opcode == cls.OPCODE
    assert decode_op(raws[0]) == op
    assert encode_op(decode_op(raws[0]), txid) == frame


@pytest.mark.slow
@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
@settings(max_examples=40, deadline=None)
@given(data=st.data(), txid=st.integers(1, 2**63 - 1))
def test_xml_roundtrip(cls: type[Op], data: st.DataObject, txid: int) -> None:
    op = data.draw(op_strategy(cls))
    version, back = parse_xml(ops_to_xml([(txid, op)]))
    assert version == -64
    assert back == [(txid, op)]


@given(st.text(max_size=40))
def test_mangle_roundtrip(s: str) -> None:
    assert unmangle(mangle(s)) == s


def test_sequence_of_ops_roundtrips() -> None:
    ops: list[tuple[int, Op]] = [
        (5, SetOwnerOp(src="/a", username="u")),
        (6, AddBlockOp(path="/a", last_block=t.Block(1, 2, 3), penultimate_block=t.Block(0, 9, 2))),
    ]
    blob = b"".join(encode_op(op, txid) for txid, op in ops)
    assert list(iter_decoded(blob)) == ops
