"""editsStored (written by a real HDFS NameNode) against our op codec and oev XML form."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter

import pytest

from conftest import FIXTURES
from qjm.editlog import framing
from qjm.editlog.ops import (
    AddBlockOp,
    AddCachePoolOp,
    AddErasureCodingPolicyOp,
    AddOp,
    Block,
    ConcatDeleteOp,
    SetAclOp,
    SetOwnerOp,
    SetXAttrOp,
    UpdateMasterKeyOp,
    encode_ops,
    read_ops,
)
from qjm.editlog.ops.opcodes import NAMES
from qjm.editlog.ops.xml import op_nodes, ops_to_xml, parse_xml

EDITS = FIXTURES / "editsStored"
EDITS_XML = FIXTURES / "editsStored.xml"


@pytest.fixture(scope="module")
def data() -> bytes:
    return EDITS.read_bytes()


@pytest.fixture(scope="module")
def xml_text() -> str:
    return EDITS_XML.read_text(encoding="utf-8")


def test_decodes_every_op(data: bytes) -> None:
    ops = list(read_ops(data))
    assert [t for t, _ in ops] == list(range(1, 122))
    names = Counter(op.opcode_name for _, op in ops)
    assert len(names) == 45
    assert names["OP_ADD"] == 10 and names["OP_CLOSE"] == 11 and names["OP_SET_GENSTAMP_V2"] == 16


def test_binary_reencodes_byte_for_byte(data: bytes) -> None:
    assert encode_ops(list(read_ops(data))) == data


def _records(root: ET.Element) -> list[ET.Element]:
    return root.findall("RECORD")


def _flatten(el: ET.Element, prefix: str = "") -> list[tuple[str, str]]:
    """Every leaf of an element as (path, text), in document order."""
    out: list[tuple[str, str]] = []
    for c in el:
        path = f"{prefix}/{c.tag}"
        if len(c):
            out.extend(_flatten(c, path))
        else:
            out.append((path, c.text or ""))
    return out


def test_records_and_fields_match_hdfs_xml(data: bytes, xml_text: str) -> None:
    """Each decoded op prints the same elements and values as HDFS's oev did."""
    ours = ET.fromstring(ops_to_xml(read_ops(data)))
    theirs = ET.fromstring(xml_text)
    assert theirs.findtext("EDITS_VERSION") == "-64"
    assert len(_records(ours)) == len(_records(theirs)) == 121
    for a, b in zip(_records(ours), _records(theirs), strict=True):
        assert _flatten(a) == _flatten(b)


def test_xml_is_identical_to_hdfs_oev(data: bytes, xml_text: str) -> None:
    assert ops_to_xml(read_ops(data)) == xml_text


def test_hdfs_xml_to_binary_is_identical(data: bytes, xml_text: str) -> None:
    version, ops = parse_xml(xml_text.encode("utf-8"))
    assert version == -64
    assert ops == list(read_ops(data))
    assert encode_ops(ops) == data


def test_field_values(data: bytes) -> None:
    ops = dict(read_ops(data))
    add = ops[4]
    assert isinstance(add, AddOp)
    assert (add.inode_id, add.path, add.replication, add.block_size) == (
        16386,
        "/file_create",
        3,
        512,
    )
    assert add.permission_status.username == "lei" and add.permission_status.mode == 0o644
    assert add.overwrite and add.rpc_call_id == 35
    assert str(op_nodes(4, add)).count("cab1aa2d-e08a-4d2f-8216-76e167eccd94") == 1
    blk = ops[11]
    assert isinstance(blk, AddBlockOp)
    assert blk.last_block == Block(1073741825, 0, 1001) and blk.penultimate_block is None
    assert blk.rpc_client_id == b"" and blk.rpc_call_id == -2
    key = ops[2]
    assert isinstance(key, UpdateMasterKeyOp)
    assert key.delegation_key.key == bytes.fromhex("ddb3d2c37b57926a")
    owner = ops[29]
    assert isinstance(owner, SetOwnerOp)
    assert owner.username == "newOwner" and owner.groupname is None
    concat = ops[67]
    assert isinstance(concat, ConcatDeleteOp)
    assert concat.srcs == ("/file_concat_0", "/file_concat_1")
    pool = ops[87]
    assert isinstance(pool, AddCachePoolOp)
    assert pool.limit == 2**63 - 1 and pool.mode == 0o755
    acl = ops[93]
    assert isinstance(acl, SetAclOp)
    assert [(e.type, e.name, e.perm) for e in acl.acls][:2] == [
        ("USER", None, "rw-"),
        ("USER", "user", "rw-"),
    ]
    xattr = ops[94]
    assert isinstance(xattr, SetXAttrOp)
    assert xattr.xattrs[0].value == b"123"
    ec = ops[98]
    assert isinstance(ec, AddErasureCodingPolicyOp)
    assert ec.extra_options == (("dummyKey", "dummyValue"),)


def test_opcode_table_covers_the_fixture(xml_text: str) -> None:
    used = set(re.findall(r"<OPCODE>(\w+)</OPCODE>", xml_text))
    assert used <= set(NAMES.values())
    assert framing.LAYOUT_VERSION == -64
