"""Between the namespace and the fsimage model: to_image for checkpoints, from_image at start-up."""

from __future__ import annotations

import dataclasses
from array import array
from typing import TYPE_CHECKING, Any

from qjm.namenode.errors import NamenodeError
from qjm.namenode.image.model import (
    DIRECTORY,
    FILE,
    QUOTA_UNSET,
    ROOT_INODE_ID,
    SYMLINK,
    ImageContents,
    Inode,
    NsInfo,
)
from qjm.namenode.inodes import DIRECTORY as K_DIR
from qjm.namenode.inodes import FILE as K_FILE
from qjm.namenode.inodes import NO_SLOT, UNDER_CONSTRUCTION, InodeStore
from qjm.namenode.inodes import SYMLINK as K_SYMLINK

if TYPE_CHECKING:
    from qjm.namenode.image import FsImage
    from qjm.namenode.namespace import Namespace

_KIND_NAMES = {K_FILE: FILE, K_DIR: DIRECTORY, K_SYMLINK: SYMLINK}
_KINDS = {FILE: K_FILE, DIRECTORY: K_DIR, SYMLINK: K_SYMLINK}


def to_image(ns: Namespace, txid: int, ns_info: NsInfo) -> ImageContents:
    """Image contents of every inode in the tree, with ns_info's txid set to txid."""
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
    return ImageContents(
        ns_info=dataclasses.replace(ns_info, txid=txid),
        inodes=inodes,
        parents=parents,
        last_inode_id=ns.last_inode_id,
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


def from_image(
    image: FsImage,
    *,
    superuser: str,
    supergroup: str = "supergroup",
    permissions_enabled: bool = True,
) -> Namespace:
    """A namespace holding the tree of a decoded image (inodes outside the tree are skipped)."""
    from qjm.namenode.namespace import Namespace

    root = image.inodes.get(ROOT_INODE_ID)
    if root is None or not root.is_dir:
        raise NamenodeError(f"the image has no root directory (inode {ROOT_INODE_ID})")
    ns = Namespace(
        superuser=superuser, supergroup=supergroup, permissions_enabled=permissions_enabled
    )
    st = ns.store
    st.mode[0] = root.mode & 0o7777
    st.owner[0] = st.strings.id(root.user)
    st.group[0] = st.strings.id(root.group)
    st.mtime[0] = root.mtime
    rq = st.quota[0]
    rq[0], rq[1] = root.ns_quota, root.ds_quota
    _set_extra(st.extra, 0, root)

    kids: dict[int, list[int]] = {}
    for child, parent in image.parents.items():
        kids.setdefault(parent, []).append(child)
    # Columns are built as lists in breadth-first order (slot = position), then turned
    # into the store's arrays at once: much faster than growing each array per inode.
    ids = [ROOT_INODE_ID]
    parents = [NO_SLOT]
    flags = [K_DIR]
    modes = [st.mode[0]]
    owners = [st.owner[0]]
    groups = [st.group[0]]
    mtimes = [root.mtime]
    atimes = [0]
    repls = [0]
    bsizes = [0]
    lengths = [0]
    names = [""]
    dirs: list[dict[str, int] | None] = [None]
    sid = st.strings.id
    inodes = image.inodes
    seen = {ROOT_INODE_ID}
    n_files = n_dirs = n_bytes = 0
    quota_dirs: list[int] = []
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
                modes.append(node.mode & 0o7777)
                owners.append(sid(node.user))
                groups.append(sid(node.group))
                mtimes.append(node.mtime)
                if kind == K_DIR:
                    n_dirs += 1
                    flags.append(K_DIR)
                    atimes.append(0)
                    repls.append(0)
                    bsizes.append(0)
                    lengths.append(0)
                    if node.ns_quota != QUOTA_UNSET or node.ds_quota != QUOTA_UNSET:
                        st.quota[s] = [node.ns_quota, node.ds_quota, 0, 0]
                        quota_dirs.append(s)
                else:
                    n_files += 1
                    uc = node.client_name is not None and kind == K_FILE
                    flags.append(kind | (UNDER_CONSTRUCTION if uc else 0))
                    atimes.append(node.atime)
                    repls.append(node.replication if kind == K_FILE else 0)
                    bsizes.append(node.preferred_block_size if kind == K_FILE else 0)
                    n = 0
                    if node.blocks:
                        st.blocks[s] = node.blocks
                        n = node.size
                        n_bytes += n
                    lengths.append(n)
                    if uc:
                        st.lease[s] = (node.client_name or "", node.client_machine or "")
                if (
                    node.acls
                    or node.xattrs
                    or node.type_quotas
                    or kind == K_SYMLINK
                    or (node.storage_policy_id or node.erasure_coding_policy_id)
                ):
                    _set_extra(st.extra, s, node)
            if entries:
                dirs[i] = entries
        i += 1
    st.ids = array("q", ids)
    st.parent = array("i", parents)
    st.flags = array("B", flags)
    st.mode = array("H", modes)
    st.owner = array("I", owners)
    st.group = array("I", groups)
    st.mtime = array("q", mtimes)
    st.atime = array("q", atimes)
    st.replication = array("H", repls)
    st.block_size = array("q", bsizes)
    st.length = array("q", lengths)
    st.names = names
    st.kids = dirs
    st.count = len(ids)
    ns.n_files, ns.n_dirs, ns.n_bytes = n_files, n_dirs + 1, n_bytes
    ns.last_inode_id = max(image.last_inode_id, max(ids))
    rq[2] = st.count
    rq[3] = sum(st.length[s] * st.replication[s] for s in st.blocks)
    for s in quota_dirs:
        q = st.quota[s]
        q[2], q[3] = ns_usage(ns, s)
    return ns


def ns_usage(ns: Namespace, s: int) -> tuple[int, int]:
    """(names, space consumed) of the subtree at slot s."""
    u = ns.subtree_usage(s)
    return u[0], u[1]


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
