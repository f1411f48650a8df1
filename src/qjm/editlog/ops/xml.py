"""The `hdfs oev -p xml` form of ops: print records in HDFS's element layout and read them back.

Each op type has a spec: an ordered list of element handlers. Printing walks the spec; reading
collects constructor arguments from the same handlers. Elements HDFS does not print for
default values (our xattrs on OP_ADD, a non-default storage policy, MKDIR's distinct atime)
are printed only when they hold something, so HDFS's own files print identically.
"""

from __future__ import annotations

import base64
import re
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator
from typing import Any, TypeAlias

from qjm.editlog.ops import admin_ops as a
from qjm.editlog.ops import inode_ops as i
from qjm.editlog.ops import namespace_ops as n
from qjm.editlog.ops.base import OP_CLASSES, Op
from qjm.editlog.ops.opcodes import CODES, opcode_name
from qjm.editlog.ops.types import (
    ACL_SCOPES,
    ACL_TYPES,
    FS_ACTIONS,
    HDFS_DELEGATION_KIND,
    INVALID_CALL_ID,
    RENAME_OPTIONS,
    XATTR_NAMESPACES,
    AclEntry,
    Block,
    DelegationKey,
    DelegationTokenIdentifier,
    PermissionStatus,
    XAttr,
)
from qjm.errors import EditLogError

Node: TypeAlias = tuple[str, str | list["Node"]]
Kw = dict[str, Any]


class OevXmlError(EditLogError):
    """An oev XML document that does not describe valid ops."""


# --- text mangling (Hadoop XMLUtils) -------------------------------------------------------


def _must_mangle(cp: int) -> bool:
    if cp == 0x5C:
        return True
    return not (
        cp in (0x9, 0xA, 0xD)
        or 0x20 <= cp <= 0xD7FF
        or 0xE000 <= cp <= 0xFFFD
        or 0x10000 <= cp <= 0x10FFFF
    )


def mangle(s: str) -> str:
    """Escape code points XML cannot hold (and backslash) as \\XXXX; like Hadoop."""
    if s.isascii() and s.isprintable() and "\\" not in s:
        return s
    return "".join(f"\\{ord(c):04x};" if _must_mangle(ord(c)) else c for c in s)


_UNMANGLE = re.compile(r"\\([0-9a-fA-F]+);")


def unmangle(s: str) -> str:
    """Undo mangle."""
    if "\\" not in s:
        return s
    return _UNMANGLE.sub(lambda m: chr(int(m.group(1), 16)), s)


def _escape(s: str) -> str:
    s = mangle(s)
    if "&" in s or "<" in s or ">" in s or "\r" in s:
        s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        s = s.replace("\r", "&#13;")
    return s


# --- reading helpers -----------------------------------------------------------------------


def _child(el: ET.Element, tag: str) -> ET.Element | None:
    return el.find(tag)


def _text(el: ET.Element, tag: str) -> str:
    c = el.find(tag)
    if c is None:
        raise OevXmlError(f"<{el.tag}> lacks its <{tag}> element")
    return unmangle(c.text or "")


def _opt_text(el: ET.Element, tag: str) -> str | None:
    c = el.find(tag)
    return None if c is None else unmangle(c.text or "")


def _int(s: str, tag: str) -> int:
    try:
        return int(s.strip())
    except ValueError:
        raise OevXmlError(f"<{tag}> holds {s!r}, not an integer") from None


def _bool(s: str) -> bool:
    return s.strip().lower() == "true"


def _choice(s: str, names: tuple[str, ...], tag: str) -> str:
    if s not in names:
        raise OevXmlError(f"<{tag}> holds {s!r}, not one of {', '.join(names)}")
    return s


def client_id_text(b: bytes) -> str:
    """An RPC client id as HDFS prints it (a UUID, or empty)."""
    if not b:
        return ""
    if len(b) == 16:
        return str(uuid.UUID(bytes=b))
    return "0x" + b.hex()


def client_id_bytes(s: str) -> bytes:
    """Parse an RPC client id printed by client_id_text."""
    s = s.strip()
    if not s:
        return b""
    try:
        if s.startswith("0x"):
            return bytes.fromhex(s[2:])
        return uuid.UUID(s).bytes
    except ValueError:
        raise OevXmlError(f"<RPC_CLIENTID> holds {s!r}, not a UUID") from None


def xattr_value_text(v: bytes) -> str:
    """An xattr value in Hadoop's hex form."""
    return "0x" + v.hex()


def xattr_value_bytes(s: str) -> bytes:
    """Parse an xattr value: 0x hex, 0s base64, or a quoted string, like XAttrCodec."""
    try:
        if s[:2] in ("0x", "0X"):
            return bytes.fromhex(s[2:])
        if s[:2] in ("0s", "0S"):
            return base64.b64decode(s[2:], validate=True)
    except ValueError:
        raise OevXmlError(f"xattr value {s!r} is not valid hex or base64") from None
    if len(s) >= 2 and s[0] == s[-1] == '"':
        s = s[1:-1]
    return s.encode("utf-8")


# --- element handlers ------------------------------------------------------------------


class Field:
    """One element (or group of elements) of an op's DATA."""

    def emit(self, op: Any) -> list[Node]:
        """The nodes this handler prints for op."""
        raise NotImplementedError

    def parse(self, el: ET.Element, kw: Kw) -> None:
        """Read this handler's constructor arguments from DATA into kw."""
        raise NotImplementedError


class Scalar(Field):
    """A single int, str or bool element bound to an attribute."""

    def __init__(
        self,
        tag: str,
        attr: str,
        kind: str = "int",
        *,
        optional: bool = False,
        hide: Any = ...,
        lenient: bool = False,
    ) -> None:
        self.tag, self.attr, self.kind = tag, attr, kind
        # optional: None is not printed; hide: this value is not printed; lenient: may be
        # absent on input (the default applies). Absent optional/hidden values are lenient.
        self.optional, self.hide = optional, hide
        self.lenient = lenient or optional or hide is not ...

    def emit(self, op: Any) -> list[Node]:
        """Print the value unless it is absent or hidden."""
        v = getattr(op, self.attr)
        if v is None and self.optional:
            return []
        if self.hide is not ... and v == self.hide:
            return []
        if self.kind == "bool":
            return [(self.tag, "true" if v else "false")]
        return [(self.tag, str(v))]

    def parse(self, el: ET.Element, kw: Kw) -> None:
        """Read the value; absent optional or hidden values keep their defaults."""
        s = _opt_text(el, self.tag)
        if s is None:
            if self.lenient:
                return
            raise OevXmlError(f"<{el.tag}> lacks its <{self.tag}> element")
        if self.kind == "int":
            kw[self.attr] = _int(s, self.tag)
        elif self.kind == "bool":
            kw[self.attr] = _bool(s)
        else:
            kw[self.attr] = s


class Const(Field):
    """An element HDFS prints with a fixed value and ignores on input."""

    def __init__(self, tag: str, text: str) -> None:
        self.tag, self.text = tag, text

    def emit(self, op: Any) -> list[Node]:
        """The fixed element."""
        return [(self.tag, self.text)]

    def parse(self, el: ET.Element, kw: Kw) -> None:
        """Nothing to read."""


class Perm(Field):
    """PERMISSION_STATUS {USERNAME, GROUPNAME, MODE}."""

    def __init__(self, attr: str = "permission_status") -> None:
        self.attr = attr

    def emit(self, op: Any) -> list[Node]:
        """Print the permission status."""
        p: PermissionStatus = getattr(op, self.attr)
        return [
            (
                "PERMISSION_STATUS",
                [("USERNAME", p.username), ("GROUPNAME", p.groupname), ("MODE", str(p.mode))],
            )
        ]

    def parse(self, el: ET.Element, kw: Kw) -> None:
        """Read the permission status."""
        c = _child(el, "PERMISSION_STATUS")
        if c is None:
            raise OevXmlError(f"<{el.tag}> lacks its <PERMISSION_STATUS> element")
        kw[self.attr] = PermissionStatus(
            _text(c, "USERNAME"), _text(c, "GROUPNAME"), _int(_text(c, "MODE"), "MODE")
        )


def _block_node(b: Block) -> Node:
    return (
        "BLOCK",
        [
            ("BLOCK_ID", str(b.block_id)),
            ("NUM_BYTES", str(b.num_bytes)),
            ("GENSTAMP", str(b.genstamp)),
        ],
    )


def _block_from(el: ET.Element) -> Block:
    return Block(
        _int(_text(el, "BLOCK_ID"), "BLOCK_ID"),
        _int(_text(el, "NUM_BYTES"), "NUM_BYTES"),
        _int(_text(el, "GENSTAMP"), "GENSTAMP"),
    )


class Blocks(Field):
    """Repeated BLOCK elements (a tuple, or one optional block)."""

    def __init__(self, attr: str = "blocks", single: bool = False) -> None:
        self.attr, self.single = attr, single

    def emit(self, op: Any) -> list[Node]:
        """Print each block."""
        v = getattr(op, self.attr)
        if self.single:
            return [] if v is None else [_block_node(v)]
        return [_block_node(b) for b in v]

    def parse(self, el: ET.Element, kw: Kw) -> None:
        """Read the blocks."""
        blocks = [_block_from(c) for c in el.findall("BLOCK")]
        if self.single:
            if len(blocks) > 1:
                raise OevXmlError(f"<{el.tag}> holds {len(blocks)} blocks, at most 1")
            kw[self.attr] = blocks[0] if blocks else None
        else:
            kw[self.attr] = tuple(blocks)


class AddBlockBlocks(Field):
    """OP_ADD_BLOCK's one or two BLOCK elements."""

    def emit(self, op: Any) -> list[Node]:
        """Penultimate (if any) then last block."""
        out = [] if op.penultimate_block is None else [_block_node(op.penultimate_block)]
        return [*out, _block_node(op.last_block)]

    def parse(self, el: ET.Element, kw: Kw) -> None:
        """Read one or two blocks."""
        blocks = [_block_from(c) for c in el.findall("BLOCK")]
        if len(blocks) not in (1, 2):
            raise OevXmlError(f"OP_ADD_BLOCK holds {len(blocks)} blocks, not 1 or 2")
        kw["penultimate_block"] = blocks[0] if len(blocks) == 2 else None
        kw["last_block"] = blocks[-1]


class Rpc(Field):
    """RPC_CLIENTID and RPC_CALLID."""

    def emit(self, op: Any) -> list[Node]:
        """Print both ids."""
        return [
            ("RPC_CLIENTID", client_id_text(op.rpc_client_id)),
            ("RPC_CALLID", str(op.rpc_call_id)),
        ]

    def parse(self, el: ET.Element, kw: Kw) -> None:
        """Read both ids (absent: none)."""
        cid = _opt_text(el, "RPC_CLIENTID")
        call = _opt_text(el, "RPC_CALLID")
        kw["rpc_client_id"] = client_id_bytes(cid) if cid is not None else b""
        kw["rpc_call_id"] = _int(call, "RPC_CALLID") if call is not None else INVALID_CALL_ID


class Acls(Field):
    """Repeated ENTRY {SCOPE, TYPE, NAME?, PERM}."""

    def emit(self, op: Any) -> list[Node]:
        """Print each entry."""
        out: list[Node] = []
        for e in op.acls:
            kids: list[Node] = [("SCOPE", e.scope), ("TYPE", e.type)]
            if e.name is not None:
                kids.append(("NAME", e.name))
            kids.append(("PERM", e.perm))
            out.append(("ENTRY", kids))
        return out

    def parse(self, el: ET.Element, kw: Kw) -> None:
        """Read the entries."""
        kw["acls"] = tuple(
            AclEntry(
                _choice(_text(c, "SCOPE"), ACL_SCOPES, "SCOPE"),
                _choice(_text(c, "TYPE"), ACL_TYPES, "TYPE"),
                _opt_text(c, "NAME"),
                _choice(_text(c, "PERM"), FS_ACTIONS, "PERM"),
            )
            for c in el.findall("ENTRY")
        )


class XAttrs(Field):
    """Repeated XATTR {NAMESPACE, NAME, VALUE?}."""

    def emit(self, op: Any) -> list[Node]:
        """Print each xattr."""
        out: list[Node] = []
        for x in op.xattrs:
            kids: list[Node] = [("NAMESPACE", x.namespace), ("NAME", x.name)]
            if x.value is not None:
                kids.append(("VALUE", xattr_value_text(x.value)))
            out.append(("XATTR", kids))
        return out

    def parse(self, el: ET.Element, kw: Kw) -> None:
        """Read the xattrs."""
        out = []
        for c in el.findall("XATTR"):
            v = _opt_text(c, "VALUE")
            out.append(
                XAttr(
                    _choice(_text(c, "NAMESPACE"), XATTR_NAMESPACES, "NAMESPACE"),
                    _text(c, "NAME"),
                    None if v is None else xattr_value_bytes(v),
                )
            )
        kw["xattrs"] = tuple(out)


class Sources(Field):
    """OP_CONCAT_DELETE's SOURCES {SOURCE1, SOURCE2, ...}."""

    def emit(self, op: Any) -> list[Node]:
        """Print the numbered sources."""
        return [("SOURCES", [(f"SOURCE{k + 1}", s) for k, s in enumerate(op.srcs)])]

    def parse(self, el: ET.Element, kw: Kw) -> None:
        """Read SOURCE1.. until one is missing."""
        c = _child(el, "SOURCES")
        srcs: list[str] = []
        while c is not None:
            s = _opt_text(c, f"SOURCE{len(srcs) + 1}")
            if s is None:
                break
            srcs.append(s)
        kw["srcs"] = tuple(srcs)


class RenameOptions(Field):
    """OP_RENAME's OPTIONS, joined by |."""

    def emit(self, op: Any) -> list[Node]:
        """Print the options."""
        return [("OPTIONS", "|".join(op.options))]

    def parse(self, el: ET.Element, kw: Kw) -> None:
        """Read the options."""
        s = _text(el, "OPTIONS")
        kw["options"] = tuple(
            _choice(o, RENAME_OPTIONS, "OPTIONS") for o in s.split("|") if o != ""
        )


class MasterKey(Field):
    """DELEGATION_KEY {KEY_ID, EXPIRY_DATE, KEY?}."""

    def emit(self, op: Any) -> list[Node]:
        """Print the key."""
        k: DelegationKey = op.delegation_key
        kids: list[Node] = [("KEY_ID", str(k.key_id)), ("EXPIRY_DATE", str(k.expiry_date))]
        if k.key is not None:
            kids.append(("KEY", k.key.hex()))
        return [("DELEGATION_KEY", kids)]

    def parse(self, el: ET.Element, kw: Kw) -> None:
        """Read the key."""
        c = _child(el, "DELEGATION_KEY")
        if c is None:
            raise OevXmlError(f"<{el.tag}> lacks its <DELEGATION_KEY> element")
        key = _opt_text(c, "KEY")
        try:
            raw = None if key is None else bytes.fromhex(key)
        except ValueError:
            raise OevXmlError(f"<KEY> holds {key!r}, not hex") from None
        kw["delegation_key"] = DelegationKey(
            _int(_text(c, "KEY_ID"), "KEY_ID"), _int(_text(c, "EXPIRY_DATE"), "EXPIRY_DATE"), raw
        )


class Token(Field):
    """DELEGATION_TOKEN_IDENTIFIER {KIND, SEQUENCE_NUMBER, OWNER, ...}."""

    def emit(self, op: Any) -> list[Node]:
        """Print the token identifier."""
        t: DelegationTokenIdentifier = op.token
        return [
            (
                "DELEGATION_TOKEN_IDENTIFIER",
                [
                    ("KIND", HDFS_DELEGATION_KIND),
                    ("SEQUENCE_NUMBER", str(t.sequence_number)),
                    ("OWNER", t.owner),
                    ("RENEWER", t.renewer),
                    ("REALUSER", t.realuser),
                    ("ISSUE_DATE", str(t.issue_date)),
                    ("MAX_DATE", str(t.max_date)),
                    ("MASTER_KEY_ID", str(t.master_key_id)),
                ],
            )
        ]

    def parse(self, el: ET.Element, kw: Kw) -> None:
        """Read the token identifier."""
        c = _child(el, "DELEGATION_TOKEN_IDENTIFIER")
        if c is None:
            raise OevXmlError(f"<{el.tag}> lacks its <DELEGATION_TOKEN_IDENTIFIER> element")
        kind = _text(c, "KIND")
        if kind != HDFS_DELEGATION_KIND:
            raise OevXmlError(f"delegation token KIND {kind!r} is not {HDFS_DELEGATION_KIND}")
        kw["token"] = DelegationTokenIdentifier(
            owner=_text(c, "OWNER"),
            renewer=_text(c, "RENEWER"),
            realuser=_text(c, "REALUSER"),
            issue_date=_int(_text(c, "ISSUE_DATE"), "ISSUE_DATE"),
            max_date=_int(_text(c, "MAX_DATE"), "MAX_DATE"),
            sequence_number=_int(_text(c, "SEQUENCE_NUMBER"), "SEQUENCE_NUMBER"),
            master_key_id=_int(_text(c, "MASTER_KEY_ID"), "MASTER_KEY_ID"),
        )


class ExtraOptions(Field):
    """EXTRAOPTIONS count then EXTRAOPTION {KEY, VALUE} per option."""

    def emit(self, op: Any) -> list[Node]:
        """Print the count and options."""
        out: list[Node] = [("EXTRAOPTIONS", str(len(op.extra_options)))]
        out += [("EXTRAOPTION", [("KEY", k), ("VALUE", v)]) for k, v in op.extra_options]
        return out

    def parse(self, el: ET.Element, kw: Kw) -> None:
        """Read the options."""
        kw["extra_options"] = tuple(
            (_text(c, "KEY"), _text(c, "VALUE")) for c in el.findall("EXTRAOPTION")
        )


class Payload(Field):
    """OpaqueOp's payload as hex."""

    def emit(self, op: Any) -> list[Node]:
        """Print the payload."""
        return [("PAYLOAD", op.payload.hex())]

    def parse(self, el: ET.Element, kw: Kw) -> None:
        """Read the payload."""
        s = _text(el, "PAYLOAD")
        try:
            kw["payload"] = bytes.fromhex(s)
        except ValueError:
            raise OevXmlError(f"<PAYLOAD> holds {s[:40]!r}, not hex") from None


def Str(tag: str, attr: str, **kw: Any) -> Scalar:
    """A string element."""
    return Scalar(tag, attr, "str", **kw)


def Int(tag: str, attr: str, **kw: Any) -> Scalar:
    """An integer element."""
    return Scalar(tag, attr, "int", **kw)


_LEN = Int("LENGTH", "length")
_RPC = Rpc()
_SNAP = [Str("SNAPSHOTROOT", "snapshot_root"), Str("SNAPSHOTNAME", "snapshot_name")]
_CACHE_DIRECTIVE = [
    Int("ID", "id"),
    Str("PATH", "path", optional=True),
    Int("REPLICATION", "replication", optional=True),
    Str("POOL", "pool", optional=True),
    Int("EXPIRATION", "expiration", optional=True),
    _RPC,
]
_CACHE_POOL = [
    Str("POOLNAME", "pool_name"),
    Str("OWNERNAME", "owner_name", optional=True),
    Str("GROUPNAME", "group_name", optional=True),
    Int("MODE", "mode", optional=True),
    Int("LIMIT", "limit", optional=True),
    Int("MAXRELATIVEEXPIRY", "max_relative_expiry", optional=True),
    Int("DEFAULTREPLICATION", "default_replication", optional=True),
    _RPC,
]
_FILE_HEAD = [
    _LEN,
    Int("INODEID", "inode_id"),
    Str("PATH", "path"),
    Int("REPLICATION", "replication"),
    Int("MTIME", "mtime"),
    Int("ATIME", "atime"),
    Int("BLOCKSIZE", "block_size"),
]

SPECS: dict[type[Op], list[Field]] = {
    i.AddOp: [
        *_FILE_HEAD,
        Str("CLIENT_NAME", "client_name"),
        Str("CLIENT_MACHINE", "client_machine"),
        Scalar("OVERWRITE", "overwrite", "bool", lenient=True),
        Blocks(),
        Perm(),
        Acls(),
        XAttrs(),
        Int("STORAGE_POLICY_ID", "storage_policy_id", hide=0),
        Int("ERASURE_CODING_POLICY_ID", "erasure_coding_policy_id", lenient=True),
        _RPC,
    ],
    i.CloseOp: [
        *_FILE_HEAD,
        Const("CLIENT_NAME", ""),
        Const("CLIENT_MACHINE", ""),
        Const("OVERWRITE", "false"),
        Blocks(),
        Perm(),
    ],
    i.AppendOp: [
        Str("PATH", "path"),
        Str("CLIENT_NAME", "client_name"),
        Str("CLIENT_MACHINE", "client_machine"),
        Scalar("NEWBLOCK", "new_block", "bool"),
        _RPC,
    ],
    i.AddBlockOp: [Str("PATH", "path"), AddBlockBlocks(), _RPC],
    i.UpdateBlocksOp: [Str("PATH", "path"), Blocks(), _RPC],
    i.TruncateOp: [
        Str("SRC", "src"),
        Str("CLIENTNAME", "client_name"),
        Str("CLIENTMACHINE", "client_machine"),
        Int("NEWLENGTH", "new_length"),
        Int("TIMESTAMP", "timestamp"),
        Blocks("truncate_block", single=True),
    ],
    i.ReassignLeaseOp: [
        Str("LEASEHOLDER", "lease_holder"),
        Str("PATH", "path"),
        Str("NEWHOLDER", "new_holder"),
    ],
    i.SetGenstampV1Op: [Int("GENSTAMP", "genstamp")],
    i.SetGenstampV2Op: [Int("GENSTAMPV2", "genstamp_v2")],
    i.AllocateBlockIdOp: [Int("BLOCK_ID", "block_id")],
    n.MkdirOp: [
        _LEN,
        Int("INODEID", "inode_id"),
        Str("PATH", "path"),
        Int("TIMESTAMP", "timestamp"),
        Perm(),
        Acls(),
        XAttrs(),
        Int("ATIME", "atime", optional=True),
    ],
    n.DeleteOp: [_LEN, Str("PATH", "path"), Int("TIMESTAMP", "timestamp"), _RPC],
    n.RenameOldOp: [
        _LEN,
        Str("SRC", "src"),
        Str("DST", "dst"),
        Int("TIMESTAMP", "timestamp"),
        _RPC,
    ],
    n.RenameOp: [
        _LEN,
        Str("SRC", "src"),
        Str("DST", "dst"),
        Int("TIMESTAMP", "timestamp"),
        RenameOptions(),
        _RPC,
    ],
    n.ConcatDeleteOp: [_LEN, Str("TRG", "trg"), Int("TIMESTAMP", "timestamp"), Sources(), _RPC],
    n.SetReplicationOp: [Str("PATH", "path"), Int("REPLICATION", "replication")],
    n.SetPermissionsOp: [Str("SRC", "src"), Int("MODE", "mode")],
    n.SetOwnerOp: [
        Str("SRC", "src"),
        Str("USERNAME", "username", optional=True),
        Str("GROUPNAME", "groupname", optional=True),
    ],
    n.SetNSQuotaOp: [Str("SRC", "src"), Int("NSQUOTA", "ns_quota")],
    n.ClearNSQuotaOp: [Str("SRC", "src")],
    n.SetQuotaOp: [Str("SRC", "src"), Int("NSQUOTA", "ns_quota"), Int("DSQUOTA", "ds_quota")],
    n.SetQuotaByStorageTypeOp: [
        Str("SRC", "src"),
        Int("STORAGETYPE", "storage_type"),
        Int("DSQUOTA", "ds_quota"),
    ],
    n.TimesOp: [_LEN, Str("PATH", "path"), Int("MTIME", "mtime"), Int("ATIME", "atime")],
    n.SymlinkOp: [
        _LEN,
        Int("INODEID", "inode_id"),
        Str("PATH", "path"),
        Str("VALUE", "value"),
        Int("MTIME", "mtime"),
        Int("ATIME", "atime"),
        Perm(),
        _RPC,
    ],
    n.SetStoragePolicyOp: [Str("PATH", "path"), Int("POLICYID", "policy_id")],
    n.SetAclOp: [Str("SRC", "src"), Acls()],
    n.SetXAttrOp: [Str("SRC", "src"), XAttrs(), _RPC],
    n.RemoveXAttrOp: [Str("SRC", "src"), XAttrs(), _RPC],
    a.StartLogSegmentOp: [],
    a.EndLogSegmentOp: [],
    a.GetDelegationTokenOp: [Token(), Int("EXPIRY_TIME", "expiry_time")],
    a.RenewDelegationTokenOp: [Token(), Int("EXPIRY_TIME", "expiry_time")],
    a.CancelDelegationTokenOp: [Token()],
    a.UpdateMasterKeyOp: [MasterKey()],
    a.CreateSnapshotOp: [*_SNAP, Int("MTIME", "mtime"), _RPC],
    a.DeleteSnapshotOp: [*_SNAP, Int("MTIME", "mtime"), _RPC],
    a.RenameSnapshotOp: [
        Str("SNAPSHOTROOT", "snapshot_root"),
        Str("SNAPSHOTOLDNAME", "snapshot_old_name"),
        Str("SNAPSHOTNEWNAME", "snapshot_new_name"),
        Int("MTIME", "mtime"),
        _RPC,
    ],
    a.AllowSnapshotOp: [Str("SNAPSHOTROOT", "snapshot_root")],
    a.DisallowSnapshotOp: [Str("SNAPSHOTROOT", "snapshot_root")],
    a.AddCacheDirectiveOp: _CACHE_DIRECTIVE,
    a.ModifyCacheDirectiveOp: _CACHE_DIRECTIVE,
    a.RemoveCacheDirectiveOp: [Int("ID", "id"), _RPC],
    a.AddCachePoolOp: _CACHE_POOL,
    a.ModifyCachePoolOp: _CACHE_POOL,
    a.RemoveCachePoolOp: [Str("POOLNAME", "pool_name"), _RPC],
    a.AddErasureCodingPolicyOp: [
        Str("CODEC", "codec"),
        Int("DATAUNITS", "data_units"),
        Int("PARITYUNITS", "parity_units"),
        Int("CELLSIZE", "cell_size"),
        ExtraOptions(),
        _RPC,
    ],
    a.EnableErasureCodingPolicyOp: [Str("POLICYNAME", "policy_name"), _RPC],
    a.DisableErasureCodingPolicyOp: [Str("POLICYNAME", "policy_name"), _RPC],
    a.RemoveErasureCodingPolicyOp: [Str("POLICYNAME", "policy_name"), _RPC],
    a.RollingUpgradeStartOp: [Int("STARTTIME", "time")],
    a.RollingUpgradeFinalizeOp: [Int("FINALIZETIME", "time")],
    a.OpaqueOp: [Payload()],
}


# --- printing ------------------------------------------------------------------------------


def op_nodes(txid: int, op: Op) -> Node:
    """The RECORD node of one op."""
    data: list[Node] = [("TXID", str(txid))]
    for f in SPECS[type(op)]:
        data.extend(f.emit(op))
    return ("RECORD", [("OPCODE", op.opcode_name), ("DATA", data)])


def _write_node(out: list[str], node: Node, depth: int) -> None:
    tag, body = node
    pad = "  " * depth
    if isinstance(body, str):
        if body == "":
            out.append(f"{pad}<{tag}/>\n")
        else:
            out.append(f"{pad}<{tag}>{_escape(body)}</{tag}>\n")
        return
    if not body:
        out.append(f"{pad}<{tag}/>\n")
        return
    out.append(f"{pad}<{tag}>\n")
    for child in body:
        _write_node(out, child, depth + 1)
    out.append(f"{pad}</{tag}>\n")


XML_HEAD = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'


def xml_head(layout_version: int = -64) -> str:
    """The start of an oev XML document, up to the first record."""
    return f"{XML_HEAD}<EDITS>\n  <EDITS_VERSION>{layout_version}</EDITS_VERSION>\n"


def record_xml(txid: int, op: Op) -> str:
    """One <RECORD> element, indented as in an oev document, ending in a newline."""
    out: list[str] = []
    _write_node(out, op_nodes(txid, op), 1)
    return "".join(out)


def iter_xml(ops: Iterable[tuple[int, Op]], layout_version: int = -64) -> Iterator[str]:
    """The oev XML document, in chunks (one per record)."""
    yield xml_head(layout_version)
    for txid, op in ops:
        yield record_xml(txid, op)
    yield "</EDITS>\n"


def ops_to_xml(ops: Iterable[tuple[int, Op]], layout_version: int = -64) -> str:
    """The whole oev XML document as one string."""
    return "".join(iter_xml(ops, layout_version))


# --- reading -------------------------------------------------------------------------------


def op_from_record(rec: ET.Element) -> tuple[int, Op]:
    """(txid, op) from one RECORD element."""
    name = _text(rec, "OPCODE").strip()
    code = CODES.get(name)
    cls = OP_CLASSES.get(code) if code is not None else None
    if cls is None:
        raise OevXmlError(f"record has unknown opcode {name!r}")
    data = _child(rec, "DATA")
    if data is None:
        raise OevXmlError(f"{name} record lacks its <DATA> element")
    txid = _int(_text(data, "TXID"), "TXID")
    kw: Kw = {}
    try:
        for f in SPECS[cls]:
            f.parse(data, kw)
        op = cls(**kw)
    except OevXmlError as e:
        raise OevXmlError(f"{name} txid {txid}: {e}") from None
    except TypeError as e:
        raise OevXmlError(f"{name} txid {txid}: {e}") from None
    return txid, op


def parse_xml(source: str | bytes) -> tuple[int, list[tuple[int, Op]]]:
    """(layout version, [(txid, op)]) from an oev XML document."""
    try:
        root = ET.fromstring(source)
    except ET.ParseError as e:
        raise OevXmlError(f"not well-formed XML: {e}") from None
    if root.tag != "EDITS":
        raise OevXmlError(f"root element is <{root.tag}>, not <EDITS>")
    version = _int(_text(root, "EDITS_VERSION"), "EDITS_VERSION")
    ops = []
    for k, rec in enumerate(root.findall("RECORD")):
        try:
            ops.append(op_from_record(rec))
        except OevXmlError as e:
            raise OevXmlError(f"record {k + 1}: {e}") from None
    return version, ops


__all__ = [
    "SPECS",
    "OevXmlError",
    "iter_xml",
    "mangle",
    "op_from_record",
    "op_nodes",
    "opcode_name",
    "ops_to_xml",
    "parse_xml",
    "unmangle",
]
