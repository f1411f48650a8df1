"""The `hdfs oiv -p XML` form of an image (the element layout of HDFS's PBImageXmlWriter)."""

from __future__ import annotations

from collections.abc import Iterator

from qjm.namenode.image.format import SECTION_ORDER
from qjm.namenode.image.model import DIRECTORY, FILE, SYMLINK, Inode
from qjm.namenode.image.reader import FsImage
from qjm.namenode.image.views import permission_string

_ENTITIES = {"&": "&amp;", '"': "&quot;", "'": "&apos;", "<": "&lt;", ">": "&gt;"}


def _esc(s: str) -> str:
    out = []
    for c in s:
        cp = ord(c)
        if c in _ENTITIES:
            out.append(_ENTITIES[c])
        elif cp == 0x5C or not (
            cp in (0x9, 0xA, 0xD)
            or 0x20 <= cp <= 0xD7FF
            or 0xE000 <= cp <= 0xFFFD
            or 0x10000 <= cp <= 0x10FFFF
        ):
            out.append(f"\\{cp:04x};")
        else:
            out.append(c)
    return "".join(out)


def _o(tag: str, value: object) -> str:
    return f"<{tag}>{_esc(str(value))}</{tag}>"


def _perm(node: Inode) -> str:
    return f"{node.user}:{node.group}:{permission_string(node.mode)}"


def _acls_xattrs(node: Inode) -> str:
    out = ""
    if node.acls:
        out += "<acls>"
        for e in node.acls:
            scope = "default:" if e.scope == "DEFAULT" else ""
            out += _o("acl", f"{scope}{e.type.lower()}:{e.name or ''}:{e.perm}")
        out += "</acls>"
    if node.xattrs:
        out += "<xattrs>"
        for x in node.xattrs:
            out += "<xattr>" + _o("ns", x.namespace) + _o("name", x.name)
            if x.value is not None:
                out += _o("val", "0x" + x.value.hex())
            out += "</xattr>"
        out += "</xattrs>"
    return out


def inode_xml(node: Inode) -> str:
    """One <inode> element, newline-terminated."""
    s = "<inode>" + _o("id", node.id) + _o("type", node.type) + _o("name", node.name)
    if node.type == FILE:
        s += (
            _o("replication", node.replication)
            + _o("mtime", node.mtime)
            + _o("atime", node.atime)
            + _o("perferredBlockSize", node.preferred_block_size)
            + _o("permission", _perm(node))
        )
        s += _acls_xattrs(node)
        if node.blocks:
            s += "<blocks>"
            for b in node.blocks:
                s += (
                    "<block>"
                    + _o("id", b.block_id)
                    + _o("genstamp", b.genstamp)
                    + _o("numBytes", b.num_bytes)
                    + "</block>\n"
                )
            s += "</blocks>\n"
        if node.storage_policy_id:
            s += _o("storagePolicyId", node.storage_policy_id)
        if node.erasure_coding_policy_id is not None:
            s += _o("erasureCodingPolicyId", node.erasure_coding_policy_id)
        if node.client_name is not None:
            s += (
                "<file-under-construction>"
                + _o("clientName", node.client_name)
                + _o("clientMachine", node.client_machine or "")
                + "</file-under-construction>\n"
            )
    elif node.type == DIRECTORY:
        s += (
            _o("mtime", node.mtime)
            + _o("permission", _perm(node))
            + _o("nsquota", node.ns_quota)
            + _o("dsquota", node.ds_quota)
        )
        s += _acls_xattrs(node)
        if node.type_quotas:
            s += "<typeQuota>"
            for st, q in node.type_quotas:
                s += "<type>" + _o("type", st) + _o("quota", q) + "</type>"
            s += "</typeQuota>"
    elif node.type == SYMLINK:
        s += (
            _o("permission", _perm(node))
            + _o("target", node.target)
            + _o("mtime", node.mtime)
            + _o("atime", node.atime)
        )
    return s + "</inode>\n"


def _section_xml(image: FsImage, name: str) -> Iterator[str]:
    if name == "NS_INFO":
        ns = image.ns_info
        yield (
            "<NameSection>\n"
            + _o("genstampV1", ns.genstamp_v1)
            + _o("genstampV2", ns.genstamp_v2)
            + _o("genstampV1Limit", ns.genstamp_v1_limit)
            + _o("lastAllocatedBlockId", ns.last_allocated_block_id)
            + _o("txid", ns.txid)
            + "</NameSection>\n"
        )
    elif name == "ERASURE_CODING":
        yield "<ErasureCodingSection>\n"
        for p in image.ec_policies:
            s = "<erasureCodingPolicy>" + _o("policyId", p.id)
            if p.name is not None:
                s += _o("policyName", p.name)
            if p.cell_size is not None:
                s += _o("cellSize", p.cell_size)
            s += _o("policyState", p.state)
            if p.codec is not None:
                s += (
                    "<ecSchema>"
                    + _o("codecName", p.codec)
                    + _o("dataUnits", p.data_units)
                    + _o("parityUnits", p.parity_units)
                    + "</ecSchema>"
                )
            yield s + "</erasureCodingPolicy>\n"
        yield "</ErasureCodingSection>\n"
    elif name == "INODE":
        yield "<INodeSection>" + _o("lastInodeId", image.last_inode_id)
        for node in image.inodes.values():
            yield inode_xml(node)
        yield "</INodeSection>\n"
    elif name == "INODE_REFERENCE":
        yield "<INodeReferenceSection>"
        for r in image.references:
            yield (
                "<ref>"
                + _o("referredId", r.referredId)
                + _o("name", bytes(r.name).decode("utf-8", "surrogateescape"))
                + _o("dstSnapshotId", r.dstSnapshotId)
                + _o("lastSnapshotId", r.lastSnapshotId)
                + "</ref>\n"
            )
        yield "</INodeReferenceSection>"
    elif name == "SNAPSHOT":
        snap = image.snapshots
        if snap is None:
            return
        s = "<SnapshotSection>" + _o("snapshotCounter", snap.counter)
        if snap.snapshottable_dirs:
            s += "<snapshottableDir>"
            s += "".join(_o("dir", d) for d in snap.snapshottable_dirs)
            s += "</snapshottableDir>\n"
        for sid, root in snap.snapshots:
            s += "<snapshot>" + _o("id", sid) + "<root>" + _o("id", root) + "</root></snapshot>\n"
        yield s + "</SnapshotSection>\n"
    elif name == "INODE_DIR":
        yield "<INodeDirectorySection>"
        for e in image.dir_entries:
            s = "<directory>" + _o("parent", e.parent)
            s += "".join(_o("inode", c) for c in e.children)
            s += "".join(_o("inodereference-index", r) for r in e.ref_children)
            yield s + "</directory>\n"
        yield "</INodeDirectorySection>\n"
    elif name == "FILES_UNDERCONSTRUCTION":
        yield "<FileUnderConstructionSection>"
        for inode_id, path in image.files_under_construction:
            yield "<inode>" + _o("id", inode_id) + _o("path", path) + "</inode>\n"
        yield "</FileUnderConstructionSection>\n"
    elif name == "SNAPSHOT_DIFF":
        yield "<SnapshotDiffSection>"
        for d in image.snapshot_diffs:
            s = "<diff>" + _o("inodeid", d.inode_id)
            tag = "filediff" if d.type == "FILEDIFF" else "dirdiff"
            s += "".join(f"<{tag}>" + _o("snapshotId", i) + f"</{tag}>" for i in d.snapshot_ids)
            yield s + "</diff>"
        yield "</SnapshotDiffSection>\n"
    elif name == "SECRET_MANAGER" and image.secret_manager is not None:
        cur, seq = image.secret_manager.current_id, image.secret_manager.sequence_number
        yield (
            "<SecretManagerSection>"
            + _o("currentId", cur)
            + _o("tokenSequenceNumber", seq)
            + "</SecretManagerSection>"
        )
    elif name == "CACHE_MANAGER" and image.cache_manager is not None:
        yield (
            "<CacheManagerSection>"
            + _o("nextDirectiveId", image.cache_manager[0])
            + "</CacheManagerSection>\n"
        )


def iter_xml(image: FsImage) -> Iterator[str]:
    """The XML document in chunks; sections in HDFS's SectionName order."""
    yield '<?xml version="1.0"?>\n<fsimage>'
    present = {s.name for s in image.summary.sections}
    for name in SECTION_ORDER:
        if name in present:
            yield from _section_xml(image, name)
    yield "</fsimage>\n"


def image_to_xml(image: FsImage) -> str:
    """The whole XML document as one string."""
    return "".join(iter_xml(image))
