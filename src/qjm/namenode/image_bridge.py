"""Between the namespace and the fsimage model: to_image for checkpoints; inode stores
from images (store_from_image, load_store) at start-up."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from google.protobuf.message import DecodeError

from qjm.editlog.ops.types import Block
from qjm.namenode.delegation import DelegationTokens
from qjm.namenode.errors import NamenodeError
from qjm.namenode.image import fsimage_pb2 as pb
from qjm.namenode.image import sections as sec
from qjm.namenode.image.format import (
    INODE,
    INODE_DIR,
    INODE_REFERENCE,
    LAYOUT_VERSION,
    NS_INFO,
    SECRET_MANAGER,
    STRING_TABLE,
    ImageError,
    iter_delimited,
    read_summary,
    section_bytes,
    signed64,
)
from qjm.namenode.image.md5 import verify_md5
from qjm.namenode.image.model import (
    DIRECTORY,
    FILE,
    QUOTA_UNSET,
    ROOT_INODE_ID,
    SYMLINK,
    ImageContents,
    Inode,
    NameSystemInfo,
    SecretManagerImage,
)
from qjm.namenode.image.reader import OLDEST_PROTOBUF_LAYOUT, load_image
from qjm.namenode.inodes import DIRECTORY as K_DIR
from qjm.namenode.inodes import FILE as K_FILE
from qjm.namenode.inodes import NO_SLOT, UNDER_CONSTRUCTION, InodeColumns, InodeStore, StringTable
from qjm.namenode.inodes import SYMLINK as K_SYMLINK
from qjm.namenode.types import MODE_MASK

if TYPE_CHECKING:
    from qjm.namenode.image import FsImage
    from qjm.namenode.namespace import Namespace

_KIND_NAMES = {K_FILE: FILE, K_DIR: DIRECTORY, K_SYMLINK: SYMLINK}
_KINDS = {FILE: K_FILE, DIRECTORY: K_DIR, SYMLINK: K_SYMLINK}


def to_image(ns: Namespace, txid: int, ns_info: NameSystemInfo) -> ImageContents:
    """Image contents of every inode in the tree: NS_INFO is ns_info at txid with the
    namespace's block id and generation stamp counters (design §B.9)."""
    st = ns.store
    inodes: list[Inode] = []
    parents: dict[int, int] = {}
    ids, flags, names, parent = st.ids, st.flags, st.names, st.parent
    mode, owner, group, strings = st.mode, st.owner, st.group, st.strings.names
    mtime, atime, repl, bsize = st.mtime, st.atime, st.replication, st.block_size
    blocks, quota, lease, extra = st.blocks, st.quota, st.lease, st.extra
    no_extra: dict[str, Any] = {}
    append = inodes.append
    for s in st.subtree(0):
        kind = flags[s] & 3
        i = ids[s]
        if kind == K_DIR:
            q = quota.get(s)
            ex = extra.get(s, no_extra)
            append(
                Inode(
                    id=i,
                    type=DIRECTORY,
                    name=names[s],
                    user=strings[owner[s]],
                    group=strings[group[s]],
                    mode=mode[s],
                    mtime=mtime[s],
                    ns_quota=q[0] if q else QUOTA_UNSET,
                    ds_quota=q[1] if q else QUOTA_UNSET,
                    acls=ex.get("acls", ()),
                    xattrs=ex.get("xattrs", ()),
                    type_quotas=ex.get("type_quotas", ()),
                )
            )
        elif kind == K_FILE and s not in extra and s not in lease:
            append(
                Inode(
                    id=i,
                    type=FILE,
                    name=names[s],
                    user=strings[owner[s]],
                    group=strings[group[s]],
                    mode=mode[s],
                    mtime=mtime[s],
                    atime=atime[s],
                    replication=repl[s],
                    preferred_block_size=bsize[s],
                    blocks=blocks.get(s, ()),
                )
            )
        else:
            append(_inode(st, s))
        p = parent[s]
        if p != NO_SLOT:
            parents[i] = ids[p]
    tokens = ns.tokens
    return ImageContents(
        ns_info=ns.block_ids.into(dataclasses.replace(ns_info, txid=txid)),
        inodes=inodes,
        parents=parents,
        last_inode_id=ns.last_inode_id,
        secret_current_id=tokens.current_key_id,
        token_sequence_number=tokens.sequence_number,
        delegation_keys=sorted(tokens.keys.values(), key=lambda k: k.key_id),
        delegation_tokens=sorted(tokens.tokens.items(), key=lambda t: t[0].sequence_number),
    )


def tokens_of(secrets: SecretManagerImage | None) -> DelegationTokens:
    """The delegation token state an image's SECRET_MANAGER holds (design §S.10)."""
    if secrets is None:
        return DelegationTokens()
    return DelegationTokens(
        keys={k.key_id: k for k in secrets.keys},
        tokens=dict(secrets.tokens),
        current_key_id=secrets.current_id,
        sequence_number=secrets.sequence_number,
    )


def _inode(st: InodeStore, s: int) -> Inode:
    """Any inode, with every attribute the store keeps for it."""
    kind = st.kind(s)
    ex: dict[str, Any] = st.extra.get(s, {})
    q = st.quota.get(s)
    lease = st.lease.get(s)
    is_file = kind == K_FILE
    ec = ex.get("ec_policy_id")
    return Inode(
        id=st.ids[s],
        type=_KIND_NAMES[kind],
        name=st.names[s],
        user=st.owner_name(s),
        group=st.group_name(s),
        mode=st.mode[s],
        mtime=st.mtime[s],
        atime=st.atime[s] if kind != K_DIR else 0,
        replication=st.replication[s] if is_file else 0,
        preferred_block_size=st.block_size[s] if is_file else 0,
        blocks=st.blocks.get(s, ()),
        ns_quota=q[0] if q else QUOTA_UNSET,
        ds_quota=q[1] if q else QUOTA_UNSET,
        target=ex.get("target", ""),
        client_name=lease[0] if lease else None,
        client_machine=lease[1] if lease else None,
        storage_policy_id=ex.get("storage_policy_id", 0),
        erasure_coding_policy_id=ec if ec else None,
        acls=ex.get("acls", ()),
        xattrs=ex.get("xattrs", ()),
        type_quotas=ex.get("type_quotas", ()),
    )


def store_from_image(image: FsImage) -> tuple[InodeStore, int]:
    """The inode store of a decoded image's tree (inodes outside the tree are skipped) and
    the image's last inode id."""
    root = image.inodes.get(ROOT_INODE_ID)
    if root is None or not root.is_dir:
        raise NamenodeError(f"the image has no root directory (inode {ROOT_INODE_ID})")
    table = StringTable()
    sid = table.id
    blocks: dict[int, tuple[Block, ...]] = {}
    quotas = {0: (root.ns_quota, root.ds_quota)}
    leases: dict[int, tuple[str, str]] = {}
    extra: dict[int, dict[str, Any]] = {}
    _set_extra(extra, 0, root)

    kids: dict[int, list[int]] = {}
    for child, parent in image.parents.items():
        kids.setdefault(parent, []).append(child)
    # Columns are built as lists in breadth-first order (slot = position), then turned
    # into the store's arrays at once: much faster than growing each array per inode.
    ids = [ROOT_INODE_ID]
    parents = [NO_SLOT]
    flags = [K_DIR]
    modes = [root.mode & MODE_MASK]
    owners = [sid(root.user)]
    groups = [sid(root.group)]
    mtimes = [root.mtime]
    atimes = [0]
    repls = [0]
    bsizes = [0]
    lengths = [0]
    names = [""]
    dirs: list[dict[str, int] | None] = [None]
    inodes = image.inodes
    seen = {ROOT_INODE_ID}
    i = 0
    while i < len(ids):
        children = kids.pop(ids[i], None)
        if children:
            entries: dict[str, int] = {}
            for cid in children:
                node = inodes.get(cid)
                if node is None or cid in seen:
                    continue
                seen.add(cid)
                kind = _KINDS.get(node.type)
                if kind is None:
                    raise NamenodeError(f"image inode {cid} has unknown type {node.type!r}")
                s = len(ids)
                entries[node.name] = s
                ids.append(cid)
                parents.append(i)
                names.append(node.name)
                dirs.append(None)
                modes.append(node.mode & MODE_MASK)
                owners.append(sid(node.user))
                groups.append(sid(node.group))
                mtimes.append(node.mtime)
                if kind == K_DIR:
                    flags.append(K_DIR)
                    atimes.append(0)
                    repls.append(0)
                    bsizes.append(0)
                    lengths.append(0)
                    if node.ns_quota != QUOTA_UNSET or node.ds_quota != QUOTA_UNSET:
                        quotas[s] = (node.ns_quota, node.ds_quota)
                else:
                    uc = node.client_name is not None and kind == K_FILE
                    flags.append(kind | (UNDER_CONSTRUCTION if uc else 0))
                    atimes.append(node.atime)
                    repls.append(node.replication if kind == K_FILE else 0)
                    bsizes.append(node.preferred_block_size if kind == K_FILE else 0)
                    n = 0
                    if node.blocks:
                        blocks[s] = node.blocks
                        n = node.size
                    lengths.append(n)
                    if uc:
                        leases[s] = (node.client_name or "", node.client_machine or "")
                if (
                    node.acls
                    or node.xattrs
                    or node.type_quotas
                    or kind == K_SYMLINK
                    or (node.storage_policy_id or node.erasure_coding_policy_id)
                ):
                    _set_extra(extra, s, node)
            if entries:
                dirs[i] = entries
        i += 1
    store = InodeStore.from_columns(
        InodeColumns(
            ids=ids,
            parents=parents,
            flags=flags,
            modes=modes,
            owners=owners,
            groups=groups,
            mtimes=mtimes,
            atimes=atimes,
            repls=repls,
            bsizes=bsizes,
            lengths=lengths,
            names=names,
            kids=dirs,
            strings=table,
            blocks=blocks,
            quotas=quotas,
            leases=leases,
            extra=extra,
        )
    )
    return store, image.last_inode_id


def _set_extra(extra: dict[int, dict[str, Any]], s: int, node: Inode) -> None:
    d: dict[str, Any] = {}
    if node.acls:
        d["acls"] = node.acls
    if node.xattrs:
        d["xattrs"] = node.xattrs
    if node.type == SYMLINK:
        d["target"] = node.target
    if node.storage_policy_id:
        d["storage_policy_id"] = node.storage_policy_id
    if node.erasure_coding_policy_id:
        d["ec_policy_id"] = node.erasure_coding_policy_id
    if node.type_quotas:
        d["type_quotas"] = node.type_quotas
    if d:
        extra[s] = d


def load_store(
    path: str | os.PathLike[str], *, check_md5: bool = True
) -> tuple[InodeStore, int, NameSystemInfo, SecretManagerImage | None]:
    """Start-up: the inode store, last inode id, NS_INFO and SECRET_MANAGER of an image
    file, decoded straight into columns.

    The same result as store_from_image(read_image(path)) without making an Inode object per
    inode (about twice as fast at 1 M inodes). Images with snapshot references take the
    general path.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ImageError(f"cannot read image {path}: {e.strerror or e}") from None
    if check_md5:
        verify_md5(path)
    summary = read_summary(data)
    if not OLDEST_PROTOBUF_LAYOUT >= summary.layout_version >= LAYOUT_VERSION:
        return _general(data)

    def body(name: str) -> bytes | None:
        info = summary.section(name)
        return None if info is None else section_bytes(data, info, summary.codec)

    raw_ns, raw_strings, raw_inodes = body(NS_INFO), body(STRING_TABLE), body(INODE)
    raw_refs = body(INODE_REFERENCE)
    if raw_ns is None or raw_inodes is None or raw_refs:
        return _general(data)
    ns_info = sec.decode_ns_info(raw_ns)
    strings = sec.decode_string_table(raw_strings) if raw_strings is not None else {}
    filled = _fill(raw_inodes, body(INODE_DIR) or b"", strings)
    if filled is None:
        return _general(data)
    store, last_id = filled
    raw_secrets = body(SECRET_MANAGER)
    secrets = sec.decode_secret_manager(raw_secrets) if raw_secrets is not None else None
    return store, last_id, ns_info, secrets


def _general(data: bytes) -> tuple[InodeStore, int, NameSystemInfo, SecretManagerImage | None]:
    image = load_image(data)
    store, last_id = store_from_image(image)
    return store, last_id, image.ns_info, image.secret_manager


def _fill(
    raw_inodes: bytes, raw_dirs: bytes, strings: dict[int, str]
) -> tuple[InodeStore, int] | None:
    """The INODE and INODE_DIR sections as a store and the last inode id; None if not every
    inode is linked."""
    table = StringTable()
    blocks: dict[int, tuple[Block, ...]] = {}
    quotas: dict[int, tuple[int, int]] = {}
    leases: dict[int, tuple[str, str]] = {}
    extra: dict[int, dict[str, Any]] = {}
    last_id, count = sec.inode_header(raw_inodes)
    ids: list[int] = [ROOT_INODE_ID]
    flags = [K_DIR]
    modes = [0o755]
    owners = [0]
    groups = [0]
    mtimes = [0]
    atimes = [0]
    repls = [0]
    bsizes = [0]
    lengths = [0]
    names = [""]
    slot_of: dict[int, int] = {}
    sid = table.id
    user_of: dict[int, int] = {}  # string table id -> our string index
    parse = pb.INodeSection.INode.FromString
    t_file, t_dir = pb.INodeSection.INode.FILE, pb.INodeSection.INode.DIRECTORY
    it = iter_delimited(raw_inodes, INODE)
    next(it, None)  # the header
    seen = 0
    for raw in it:
        seen += 1
        try:
            m = parse(raw)
        except DecodeError as err:
            raise ImageError(
                f"section {INODE} is corrupt: bad inode #{seen}: {err}", INODE
            ) from None
        i = m.id
        if i == ROOT_INODE_ID:
            s = 0
        else:
            s = len(ids)
            ids.append(i)
            flags.append(0)
            modes.append(0)
            owners.append(0)
            groups.append(0)
            mtimes.append(0)
            atimes.append(0)
            repls.append(0)
            bsizes.append(0)
            lengths.append(0)
            names.append("")
        slot_of[i] = s
        t = m.type
        f: Any
        if t == t_file:
            f = m.file
            plain = not (
                f.HasField("fileUC")
                or f.HasField("acl")
                or f.HasField("xAttrs")
                or f.storagePolicyID
                or (f.HasField("blockType") and f.blockType == pb.STRIPED)
            )
        elif t == t_dir:
            f = m.directory
            plain = not (f.HasField("acl") or f.HasField("xAttrs") or f.HasField("typeQuotas"))
        else:
            plain = False
        if not plain:  # the rare kinds and features: through the general decoder
            node = sec.inode_from_proto(m, strings)
            kind = _KINDS[node.type]
            uc = node.client_name is not None and kind == K_FILE
            flags[s] = kind | (UNDER_CONSTRUCTION if uc else 0)
            modes[s] = node.mode & MODE_MASK
            owners[s] = sid(node.user)
            groups[s] = sid(node.group)
            mtimes[s] = node.mtime
            names[s] = node.name
            if kind == K_DIR:
                if node.ns_quota != QUOTA_UNSET or node.ds_quota != QUOTA_UNSET:
                    quotas[s] = (node.ns_quota, node.ds_quota)
            else:
                atimes[s] = node.atime
                if kind == K_FILE:
                    repls[s] = node.replication
                    bsizes[s] = node.preferred_block_size
                if node.blocks:
                    blocks[s] = node.blocks
                    lengths[s] = node.size
                if uc:
                    leases[s] = (node.client_name or "", node.client_machine or "")
            _set_extra(extra, s, node)
            continue
        p = f.permission
        uid, gid = (p >> 40) & 0xFFFFFF, (p >> 16) & 0xFFFFFF
        o = user_of.get(uid)
        if o is None:
            o = user_of[uid] = sid(_string(strings, uid))
        g = user_of.get(gid)
        if g is None:
            g = user_of[gid] = sid(_string(strings, gid))
        owners[s] = o
        groups[s] = g
        modes[s] = p & MODE_MASK
        mtimes[s] = f.modificationTime
        names[s] = m.name.decode("utf-8", "surrogateescape")
        if t == t_dir:
            flags[s] = K_DIR
            nsq, dsq = signed64(f.nsQuota), signed64(f.dsQuota)
            if nsq != QUOTA_UNSET or dsq != QUOTA_UNSET:
                quotas[s] = (nsq, dsq)
        else:
            flags[s] = K_FILE
            atimes[s] = f.accessTime
            repls[s] = f.replication
            bsizes[s] = f.preferredBlockSize
            if f.blocks:
                file_blocks = tuple(
                    Block(signed64(b.blockId), signed64(b.numBytes), signed64(b.genStamp))
                    for b in f.blocks
                )
                blocks[s] = file_blocks
                lengths[s] = sum(b.num_bytes for b in file_blocks)
    if seen != count:
        raise ImageError(f"section {INODE} holds {seen} inodes but its header says {count}", INODE)
    if 0 not in slot_of.values() or flags[0] != K_DIR:
        raise NamenodeError(f"the image has no root directory (inode {ROOT_INODE_ID})")
    parents = [NO_SLOT] * len(ids)
    dirs: list[dict[str, int] | None] = [None] * len(ids)
    linked = 0
    for e in sec.iter_dir_entries(raw_dirs):
        ps = slot_of.get(e.parent)
        if ps is None or flags[ps] != K_DIR or e.ref_children:
            return None
        entries: dict[str, int] = {}
        for c in e.children:
            cs = slot_of.get(c)
            if cs is None or parents[cs] != NO_SLOT or cs == 0:
                return None
            parents[cs] = ps
            entries[names[cs]] = cs
        linked += len(entries)
        if entries:
            dirs[ps] = entries
    if linked != len(ids) - 1:
        return None  # inodes outside the tree (snapshots): the general path skips them
    store = InodeStore.from_columns(
        InodeColumns(
            ids=ids,
            parents=parents,
            flags=flags,
            modes=modes,
            owners=owners,
            groups=groups,
            mtimes=mtimes,
            atimes=atimes,
            repls=repls,
            bsizes=bsizes,
            lengths=lengths,
            names=names,
            kids=dirs,
            strings=table,
            blocks=blocks,
            quotas=quotas,
            leases=leases,
            extra=extra,
        )
    )
    return store, last_id


def _string(strings: dict[int, str], i: int) -> str:
    s = strings.get(i)
    if s is None:
        raise ImageError(
            f"section {INODE} refers to string id {i} missing from {STRING_TABLE}", INODE
        )
    return s
