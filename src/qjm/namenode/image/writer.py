"""Write an fsimage (HDFS's protobuf format, layout -64) and its .md5 file."""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path
from typing import Any

from qjm.editlog.ops.types import ACL_SCOPES, ACL_TYPES, FS_ACTIONS, XATTR_NAMESPACES
from qjm.namenode.image import fsimage_pb2 as pb
from qjm.namenode.image.format import (
    CACHE_MANAGER,
    ERASURE_CODING,
    FILES_UNDERCONSTRUCTION,
    INODE,
    INODE_DIR,
    INODE_REFERENCE,
    LAYOUT_VERSION,
    MAGIC,
    NS_INFO,
    ONDISK_VERSION,
    SECRET_MANAGER,
    SNAPSHOT,
    STRING_TABLE,
    ImageError,
    delimited,
    pack_permission,
    unsigned64,
)
from qjm.namenode.image.md5 import write_md5_file
from qjm.namenode.image.model import (
    DIRECTORY,
    FILE,
    ROOT_INODE_ID,
    SYMLINK,
    ImageContents,
    Inode,
)

STORAGE_TYPE_IDS = {"DISK": 1, "SSD": 2, "ARCHIVE": 3, "RAM_DISK": 4, "PROVIDED": 5}
EC_STATE_IDS = {"DISABLED": 1, "ENABLED": 2, "REMOVED": 3}
MAX_STRING_ID = (1 << 24) - 1


class _Strings:
    """The string table: ids from 1 in order of first use, as HDFS assigns them."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def id(self, s: str) -> int:
        i = self.ids.get(s)
        if i is None:
            i = len(self.ids) + 1
            if i > MAX_STRING_ID:
                raise ImageError(
                    "more than 2^24 distinct names: the string table is full", STRING_TABLE
                )
            self.ids[s] = i
        return i


def _perm(node: Inode, strings: _Strings) -> int:
    return pack_permission(strings.id(node.user), strings.id(node.group), node.mode)


def _acl(node: Inode, strings: _Strings) -> Any:
    f = pb.INodeSection.AclFeatureProto()
    for e in node.acls:
        nid = strings.id(e.name) if e.name is not None else 0
        f.entries.append(
            (nid << 6)
            | (ACL_SCOPES.index(e.scope) << 5)
            | (ACL_TYPES.index(e.type) << 3)
            | FS_ACTIONS.index(e.perm)
        )
    return f


def _xattrs(node: Inode, strings: _Strings) -> Any:
    f = pb.INodeSection.XAttrFeatureProto()
    for x in node.xattrs:
        ns = XATTR_NAMESPACES.index(x.namespace)
        c = f.xAttrs.add()
        c.name = ((ns & 3) << 30) | (strings.id(x.name) << 6) | ((ns >> 2) << 5)
        if x.value is not None:
            c.value = x.value
    return f


def inode_proto(node: Inode, strings: _Strings) -> Any:
    """The INodeSection.INode message for an inode."""
    m = pb.INodeSection.INode(id=node.id, name=node.name.encode("utf-8", "surrogateescape"))
    if node.type == FILE:
        m.type = pb.INodeSection.INode.FILE
        f = m.file
        f.replication = node.replication
        f.modificationTime = node.mtime
        f.accessTime = node.atime
        f.preferredBlockSize = node.preferred_block_size
        f.permission = _perm(node, strings)
        for b in node.blocks:
            f.blocks.add(
                blockId=unsigned64(b.block_id),
                genStamp=unsigned64(b.genstamp),
                numBytes=unsigned64(b.num_bytes),
            )
        if node.client_name is not None:
            f.fileUC.clientName = node.client_name
            f.fileUC.clientMachine = node.client_machine or ""
        if node.acls:
            f.acl.CopyFrom(_acl(node, strings))
        if node.xattrs:
            f.xAttrs.CopyFrom(_xattrs(node, strings))
        f.storagePolicyID = node.storage_policy_id
        if node.erasure_coding_policy_id is None:
            f.blockType = pb.CONTIGUOUS
        else:
            f.blockType = pb.STRIPED
            f.erasureCodingPolicyID = node.erasure_coding_policy_id
    elif node.type == DIRECTORY:
        m.type = pb.INodeSection.INode.DIRECTORY
        d = m.directory
        d.modificationTime = node.mtime
        d.nsQuota = unsigned64(node.ns_quota)
        d.dsQuota = unsigned64(node.ds_quota)
        d.permission = _perm(node, strings)
        if node.acls:
            d.acl.CopyFrom(_acl(node, strings))
        if node.xattrs:
            d.xAttrs.CopyFrom(_xattrs(node, strings))
        for st, quota in node.type_quotas:
            d.typeQuotas.quotas.add(storageType=STORAGE_TYPE_IDS[st], quota=unsigned64(quota))
    elif node.type == SYMLINK:
        m.type = pb.INodeSection.INode.SYMLINK
        s = m.symlink
        s.permission = _perm(node, strings)
        s.target = node.target.encode("utf-8", "surrogateescape")
        s.modificationTime = node.mtime
        s.accessTime = node.atime
    else:
        raise ImageError(f"inode {node.id} has unknown type {node.type!r}", INODE)
    return m


def _check_tree(c: ImageContents) -> dict[int, Inode]:
    by_id: dict[int, Inode] = {}
    for node in c.inodes:
        if node.id in by_id:
            raise ImageError(f"inode id {node.id} appears twice", INODE)
        by_id[node.id] = node
    root = by_id.get(ROOT_INODE_ID)
    if root is None or root.type != DIRECTORY:
        raise ImageError(f"the image needs a root directory with inode id {ROOT_INODE_ID}", INODE)
    for node in c.inodes:
        if node.id == ROOT_INODE_ID:
            continue
        parent = c.parents.get(node.id)
        if parent is None or parent not in by_id or by_id[parent].type != DIRECTORY:
            raise ImageError(f"inode {node.id} ({node.name!r}) has no parent directory", INODE_DIR)
        if not node.name or "/" in node.name:
            raise ImageError(f"inode {node.id} has an invalid name {node.name!r}", INODE)
    return by_id


def encode_image(c: ImageContents) -> bytes:
    """The bytes of an image file for these contents."""
    by_id = _check_tree(c)
    strings = _Strings()
    out = bytearray(MAGIC)
    index: list[tuple[str, int, int]] = []

    def section(name: str, payload: bytes) -> None:
        index.append((name, len(out), len(payload)))
        out.extend(payload)

    ns = c.ns_info
    m = pb.NameSystemSection(
        namespaceId=ns.namespace_id,
        genstampV1=ns.genstamp_v1,
        genstampV2=ns.genstamp_v2,
        genstampV1Limit=ns.genstamp_v1_limit,
        lastAllocatedBlockId=ns.last_allocated_block_id,
        transactionId=ns.txid,
    )
    if ns.rolling_upgrade_start_time is not None:
        m.rollingUpgradeStartTime = ns.rolling_upgrade_start_time
    if ns.last_allocated_striped_block_id is not None:
        m.lastAllocatedStripedBlockId = unsigned64(ns.last_allocated_striped_block_id)
    section(NS_INFO, delimited(m))

    ec = pb.ErasureCodingSection()
    for p in c.ec_policies:
        pm = ec.policies.add(id=p.id, state=EC_STATE_IDS[p.state])
        if p.name is not None:
            pm.name = p.name
        if p.codec is not None:
            pm.schema.codecName = p.codec
            pm.schema.dataUnits = p.data_units or 0
            pm.schema.parityUnits = p.parity_units or 0
            for k, v in p.options:
                pm.schema.options.add(key=k, value=v)
        if p.cell_size is not None:
            pm.cellSize = p.cell_size
    section(ERASURE_CODING, delimited(ec))

    last = c.last_inode_id if c.last_inode_id is not None else max(by_id)
    body = bytearray(delimited(pb.INodeSection(lastInodeId=last, numInodes=len(c.inodes))))
    for node in c.inodes:
        body += delimited(inode_proto(node, strings))
    section(INODE, bytes(body))

    kids: dict[int, list[Inode]] = {}
    for node in c.inodes:
        if node.id != ROOT_INODE_ID:
            kids.setdefault(c.parents[node.id], []).append(node)
    body = bytearray()
    for node in c.inodes:
        children = kids.get(node.id)
        if children:
            children.sort(key=lambda n: n.name.encode("utf-8", "surrogateescape"))
            e = pb.INodeDirectorySection.DirEntry(parent=node.id)
            e.children.extend(ch.id for ch in children)
            body += delimited(e)
    section(INODE_DIR, bytes(body))

    body = bytearray()
    uc = [n for n in c.inodes if n.type == FILE and n.client_name is not None]
    if uc:
        paths = _paths(c, by_id)
        for node in uc:
            entry = pb.FilesUnderConstructionSection.FileUnderConstructionEntry(
                inodeId=node.id, fullPath=paths[node.id]
            )
            body += delimited(entry)
    section(FILES_UNDERCONSTRUCTION, bytes(body))

    section(
        SNAPSHOT, delimited(pb.SnapshotSection(snapshotCounter=c.snapshot_counter, numSnapshots=0))
    )
    section(INODE_REFERENCE, b"")
    body = bytearray(
        delimited(
            pb.SecretManagerSection(
                currentId=c.secret_current_id,
                tokenSequenceNumber=c.token_sequence_number,
                numKeys=len(c.delegation_keys),
                numTokens=len(c.delegation_tokens),
            )
        )
    )
    for key in c.delegation_keys:  # design §S.10: what a restarted NameNode honours
        body += delimited(
            pb.SecretManagerSection.DelegationKey(
                id=key.key_id, expiryDate=key.expiry_date, key=key.key
            )
        )
    for ident, renew_date in c.delegation_tokens:
        body += delimited(
            pb.SecretManagerSection.PersistToken(
                version=0,
                owner=ident.owner,
                renewer=ident.renewer,
                realUser=ident.realuser,
                issueDate=ident.issue_date,
                maxDate=ident.max_date,
                sequenceNumber=ident.sequence_number,
                masterKeyId=ident.master_key_id,
                expiryDate=renew_date,
            )
        )
    section(SECRET_MANAGER, bytes(body))
    section(
        CACHE_MANAGER,
        delimited(
            pb.CacheManagerSection(
                nextDirectiveId=c.next_cache_directive_id, numPools=0, numDirectives=0
            )
        ),
    )
    body = bytearray(delimited(pb.StringTableSection(numEntry=len(strings.ids))))
    for s, i in strings.ids.items():
        body += delimited(pb.StringTableSection.Entry(id=i, str=s))
    section(STRING_TABLE, bytes(body))

    summary = pb.FileSummary(
        ondiskVersion=ONDISK_VERSION, layoutVersion=LAYOUT_VERSION & 0xFFFFFFFF
    )
    for name, offset, length in index:
        summary.sections.add(name=name, offset=offset, length=length)
    tail = delimited(summary)
    out += tail
    out += struct.pack(">i", len(tail))
    return bytes(out)


def _paths(c: ImageContents, by_id: dict[int, Inode]) -> dict[int, str]:
    out: dict[int, str] = {ROOT_INODE_ID: "/"}

    def path(i: int) -> str:
        p = out.get(i)
        if p is None:
            parent = path(c.parents[i])
            p = out[i] = f"{parent.rstrip('/')}/{by_id[i].name}"
        return p

    for i in by_id:
        path(i)
    return out


def write_image(path: str | os.PathLike[str], contents: ImageContents) -> str:
    """Write an image file (temp, fsync, rename) and its .md5 file; return the MD5 digest."""
    data = encode_image(contents)
    target = Path(path)
    tmp = target.with_name(target.name + ".ckpt")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
        digest = hashlib.md5(data, usedforsecurity=False).hexdigest()
        write_md5_file(target, digest)
        dfd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError as e:
        raise ImageError(f"cannot write image {target}: {e.strerror or e}") from None
    return digest
