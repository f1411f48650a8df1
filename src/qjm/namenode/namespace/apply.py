"""Apply: one edit-log op changes the tree; live writes, replay and the tailer all use it."""

from __future__ import annotations

from typing import Any

from qjm.editlog.ops import (
    AddBlockOp,
    AddOp,
    AllocateBlockIdOp,
    AppendOp,
    Block,
    ClearNSQuotaOp,
    CloseOp,
    ConcatDeleteOp,
    DeleteOp,
    MkdirOp,
    Op,
    ReassignLeaseOp,
    RemoveXAttrOp,
    RenameOldOp,
    RenameOp,
    SetAclOp,
    SetGenstampV1Op,
    SetGenstampV2Op,
    SetNSQuotaOp,
    SetOwnerOp,
    SetPermissionsOp,
    SetQuotaByStorageTypeOp,
    SetQuotaOp,
    SetReplicationOp,
    SetStoragePolicyOp,
    SetXAttrOp,
    SymlinkOp,
    TimesOp,
    TruncateOp,
    UpdateBlocksOp,
)
from qjm.editlog.ops.types import STORAGE_TYPES
from qjm.namenode.errors import (
    InvalidPathError,
    NamenodeError,
)
from qjm.namenode.image.model import QUOTA_UNSET
from qjm.namenode.inodes import (
    DIRECTORY,
    FILE,
    SYMLINK,
    UNDER_CONSTRUCTION,
)
from qjm.namenode.namespace.core import ROOT
from qjm.namenode.namespace.paths import Resolved, join_path
from qjm.namenode.namespace.quota import QUOTA_DONT_SET, QuotaMixin
from qjm.namenode.types import MODE_MASK


class ApplyMixin(QuotaMixin):
    """apply(op) and one applier per op type; reads no clock."""

    def apply(self, op: Op) -> None:
        """Change the tree by one op; ops that do not touch the tree are ignored.

        Raises NamenodeError naming the op and path when the op contradicts the tree.
        """
        f = self._appliers.get(type(op))
        if f is not None:
            f(op)

    def _bad(self, op: Op, path: str, why: str) -> NamenodeError:
        return NamenodeError(f"cannot apply {op.opcode_name} {path}: {why}")

    def _op_resolve(self, op: Op, path: str) -> Resolved:
        try:
            return self._resolve(path)
        except InvalidPathError as e:
            raise self._bad(op, path, str(e)) from None

    def _op_target(self, op: Op, path: str) -> Resolved:
        r = self._op_resolve(op, path)
        if not r.found:
            raise self._bad(op, path, "no such file or directory")
        return r

    def _op_parent(self, op: Op, path: str) -> tuple[Resolved, int]:
        """The parent directory slot for a new entry at path, which must not exist."""
        r = self._op_resolve(op, path)
        if not r.comps:
            raise self._bad(op, path, "the root exists already")
        if len(r.slots) != len(r.comps) + (1 if r.found else 0):
            raise self._bad(op, path, "the parent directory does not exist")
        parent = r.slots[-2] if r.found else r.last
        if not self._st.is_dir(parent):
            raise self._bad(op, path, "the parent is not a directory")
        return r, parent

    def _touch_parent(self, parent: int, mtime: int) -> None:
        mt = self._st.mtime
        if mtime > mt[parent]:
            mt[parent] = mtime

    def _extra(self, s: int, key: str, value: Any) -> None:
        if value:
            self._st.extra.setdefault(s, {})[key] = value

    def _apply_mkdir(self, op: MkdirOp) -> None:
        r, parent = self._op_parent(op, op.path)
        if r.found:
            raise self._bad(op, op.path, "it exists already")
        st = self._st
        ps = op.permission_status
        s = st.alloc(
            op.inode_id,
            parent,
            DIRECTORY,
            r.comps[-1],
            ps.mode & MODE_MASK,
            ps.username,
            ps.groupname,
            op.timestamp,
            0,
        )
        st.link(parent, s)
        self._extra(s, "acls", op.acls)
        self._extra(s, "xattrs", op.xattrs)
        self._touch_parent(parent, op.timestamp)
        self.n_dirs += 1
        self._charge(parent, 1, 0)
        if op.inode_id > self.last_inode_id:
            self.last_inode_id = op.inode_id

    def _apply_add(self, op: AddOp) -> None:
        r, parent = self._op_parent(op, op.path)
        st = self._st
        if r.found:
            old = r.last
            if st.kind(old) != FILE:
                raise self._bad(op, op.path, "it exists and is not a file")
            if op.overwrite:
                self._remove(old, op.mtime)
            else:  # reopen (HDFS's pre-OP_APPEND append): open it for writing again
                st.flags[old] = FILE | UNDER_CONSTRUCTION
                st.lease[old] = (op.client_name, op.client_machine)
                self._set_blocks(old, op.blocks)
                return
        ps = op.permission_status
        s = st.alloc(
            op.inode_id,
            parent,
            FILE | UNDER_CONSTRUCTION,
            r.comps[-1],
            ps.mode & MODE_MASK,
            ps.username,
            ps.groupname,
            op.mtime,
            op.atime,
            op.replication,
            op.block_size,
        )
        st.link(parent, s)
        st.lease[s] = (op.client_name, op.client_machine)
        self._extra(s, "acls", op.acls)
        self._extra(s, "xattrs", op.xattrs)
        self._extra(s, "storage_policy_id", op.storage_policy_id)
        self._extra(s, "ec_policy_id", op.erasure_coding_policy_id)
        self._touch_parent(parent, op.mtime)
        self.n_files += 1
        self._charge(parent, 1, 0)
        self._set_blocks(s, op.blocks)
        if op.inode_id > self.last_inode_id:
            self.last_inode_id = op.inode_id

    def _set_blocks(self, s: int, blocks: tuple[Any, ...], drops: bool = True) -> None:
        """Set a file's blocks; drops: report blocks no longer in the list as removed."""
        st = self._st
        if drops and self.on_blocks_removed is not None:
            kept = {b.block_id for b in blocks}
            gone = [b for b in st.blocks.get(s, ()) if b.block_id not in kept]
            if gone:
                self.on_blocks_removed(gone)
        old = st.length[s]
        new = sum(b.num_bytes for b in blocks)
        if blocks:
            st.blocks[s] = tuple(blocks)
        else:
            st.blocks.pop(s, None)
        if new != old:
            st.length[s] = new
            self.n_bytes += new - old
            self._charge(st.parent[s], 0, (new - old) * st.replication[s])

    def _apply_close(self, op: CloseOp) -> None:
        r = self._op_target(op, op.path)
        st = self._st
        s = r.last
        if st.kind(s) != FILE:
            raise self._bad(op, op.path, "it is not a file")
        if op.inode_id and op.inode_id != st.ids[s]:
            raise self._bad(op, op.path, f"the file there is inode {st.ids[s]}, not {op.inode_id}")
        if not st.is_uc(s):
            raise self._bad(op, op.path, "the file is not under construction")
        st.flags[s] = FILE
        st.lease.pop(s, None)
        st.truncating.pop(s, None)
        st.mtime[s] = op.mtime
        st.atime[s] = op.atime
        self._set_blocks(s, op.blocks)

    def _remove(self, s: int, mtime: int) -> None:
        """Unlink and free a subtree, updating counts, quotas and the parent's mtime."""
        st = self._st
        parent = st.parent[s]
        ns, ds, files, dirs, nbytes = self.subtree_usage(s)
        slots = st.subtree(s)
        if self.on_blocks_removed is not None:
            gone = [b for x in slots for b in st.blocks.get(x, ())]
            if gone:
                self.on_blocks_removed(gone)
        st.unlink(s)
        for x in slots:
            st.release(x)
        self.n_files -= files
        self.n_dirs -= dirs
        self.n_bytes -= nbytes
        self._charge(parent, -ns, -ds)
        self._touch_parent(parent, mtime)

    def _apply_delete(self, op: DeleteOp) -> None:
        r = self._op_target(op, op.path)
        if not r.comps:
            raise self._bad(op, op.path, "the root cannot be deleted")
        self._remove(r.last, op.timestamp)

    def _move(self, op: Op, rs: Resolved, dst: str, timestamp: int, overwrite: bool) -> None:
        st = self._st
        rd, dst_parent = self._op_parent(op, dst)
        s = rs.last
        if rd.comps[: len(rs.comps)] == rs.comps:
            raise self._bad(op, f"{rs.path} -> {dst}", "the destination is under the source")
        if rd.found:
            if not overwrite:
                raise self._bad(op, f"{rs.path} -> {dst}", "the destination exists")
            self._remove(rd.last, timestamp)
        src_parent = st.parent[s]
        if len(st.quota) > 1:
            ns, ds, _, _, _ = self.subtree_usage(s)
        else:
            ns = ds = 0
        st.unlink(s)
        self._charge(src_parent, -ns, -ds)
        st.names[s] = rd.comps[-1]
        st.link(dst_parent, s)
        self._charge(dst_parent, ns, ds)
        self._touch_parent(src_parent, timestamp)
        self._touch_parent(dst_parent, timestamp)

    def _apply_rename_old(self, op: RenameOldOp) -> None:
        rs = self._op_target(op, op.src)
        if not rs.comps:
            raise self._bad(op, op.src, "the root cannot be renamed")
        dst = op.dst
        rd = self._op_resolve(op, dst)
        if rd.comps == rs.comps:
            return
        if rd.found and self._st.is_dir(rd.last):
            dst = join_path([*rd.comps, rs.comps[-1]])
        self._move(op, rs, dst, op.timestamp, False)

    def _apply_rename(self, op: RenameOp) -> None:
        rs = self._op_target(op, op.src)
        if not rs.comps:
            raise self._bad(op, op.src, "the root cannot be renamed")
        self._move(op, rs, op.dst, op.timestamp, "OVERWRITE" in op.options)

    def _apply_set_permissions(self, op: SetPermissionsOp) -> None:
        s = self._op_target(op, op.src).last
        self._st.mode[s] = op.mode & MODE_MASK

    def _apply_set_owner(self, op: SetOwnerOp) -> None:
        s = self._op_target(op, op.src).last
        st = self._st
        if op.username:
            st.owner[s] = st.strings.id(op.username)
        if op.groupname:
            st.group[s] = st.strings.id(op.groupname)

    def _apply_set_replication(self, op: SetReplicationOp) -> None:
        s = self._op_target(op, op.path).last
        st = self._st
        if st.kind(s) != FILE:
            return
        delta = st.length[s] * (op.replication - st.replication[s])
        st.replication[s] = op.replication
        if delta:
            self._charge(st.parent[s], 0, delta)

    def _apply_times(self, op: TimesOp) -> None:
        s = self._op_target(op, op.path).last
        st = self._st
        if op.mtime != -1:
            st.mtime[s] = op.mtime
        if op.atime != -1 and not st.is_dir(s):
            st.atime[s] = op.atime

    def _set_quota(self, op: Op, path: str, ns_quota: int, ds_quota: int) -> None:
        r = self._op_target(op, path)
        s = r.last
        st = self._st
        if not st.is_dir(s):
            raise self._bad(op, path, "quotas are set on directories only")
        q = st.quota.get(s)
        if q is None:
            ns, ds, _, _, _ = self.subtree_usage(s)
            q = [QUOTA_UNSET, QUOTA_UNSET, ns, ds]
        if ns_quota != QUOTA_DONT_SET:
            q[0] = ns_quota
        if ds_quota != QUOTA_DONT_SET:
            q[1] = ds_quota
        if s != ROOT and q[0] == QUOTA_UNSET and q[1] == QUOTA_UNSET:
            st.quota.pop(s, None)
        else:
            st.quota[s] = q

    def _apply_set_quota(self, op: SetQuotaOp) -> None:
        self._set_quota(op, op.src, op.ns_quota, op.ds_quota)

    def _apply_set_ns_quota(self, op: SetNSQuotaOp) -> None:
        self._set_quota(op, op.src, op.ns_quota, QUOTA_DONT_SET)

    def _apply_clear_ns_quota(self, op: ClearNSQuotaOp) -> None:
        self._set_quota(op, op.src, QUOTA_UNSET, QUOTA_DONT_SET)

    def _op_file(self, op: Op, path: str, open_: bool | None) -> int:
        """The slot of a file at path; open_ True/False: it must be (not) under construction."""
        s = self._op_target(op, path).last
        st = self._st
        if st.kind(s) != FILE:
            raise self._bad(op, path, "it is not a file")
        if open_ is not None and st.is_uc(s) != open_:
            raise self._bad(
                op, path, "the file is not under construction" if open_ else "the file is open"
            )
        return s

    def _apply_append(self, op: AppendOp) -> None:
        s = self._op_file(op, op.path, False)
        self._st.flags[s] = FILE | UNDER_CONSTRUCTION
        self._st.lease[s] = (op.client_name, op.client_machine)

    def _apply_add_block(self, op: AddBlockOp) -> None:
        s = self._op_file(op, op.path, True)
        old = self._st.blocks.get(s, ())
        if op.penultimate_block is None:
            if old:
                raise self._bad(op, op.path, f"a first block, but the file has {len(old)}")
            new: tuple[Block, ...] = (op.last_block,)
        else:
            if not old or old[-1].block_id != op.penultimate_block.block_id:
                raise self._bad(op, op.path, "its penultimate block is not the file's last")
            new = (*old[:-1], op.penultimate_block, op.last_block)
        self._set_blocks(s, new, drops=False)

    def _apply_update_blocks(self, op: UpdateBlocksOp) -> None:
        s = self._op_file(op, op.path, True)
        self._set_blocks(s, op.blocks)

    def _apply_truncate(self, op: TruncateOp) -> None:
        s = self._op_file(op, op.src, False)
        st = self._st
        kept: list[Block] = []
        size = 0
        for b in st.blocks.get(s, ()):
            if size >= op.new_length:
                break
            kept.append(b)
            size += b.num_bytes
        if size > op.new_length:  # inside the last kept block: it is recovered to the length
            # As HDFS's in-place truncate: the block keeps its length and stamp (what its
            # replicas hold) until recovery cuts it; the truncate block names the cut length
            # and the recovery's stamp (design §B.16).
            last = kept[-1]
            cut = last.num_bytes - (size - op.new_length)
            t = op.truncate_block
            st.truncating[s] = Block(last.block_id, cut, last.genstamp if t is None else t.genstamp)
            st.flags[s] = FILE | UNDER_CONSTRUCTION
            st.lease[s] = (op.client_name, op.client_machine)
        st.mtime[s] = op.timestamp
        self._set_blocks(s, tuple(kept))

    def _apply_concat_delete(self, op: ConcatDeleteOp) -> None:
        st = self._st
        t = self._op_file(op, op.trg, False)
        srcs = [self._op_file(op, p, False) for p in op.srcs]
        if len(set(srcs)) != len(srcs) or t in srcs:
            raise self._bad(op, op.trg, "a source is repeated or is the target")
        blocks = list(st.blocks.get(t, ()))
        for s in srcs:
            blocks.extend(st.blocks.get(s, ()))
            st.blocks.pop(s, None)
            n = st.length[s]
            st.length[s] = 0
            self.n_bytes -= n
            self._charge(st.parent[s], 0, -n * st.replication[s])
            self._remove(s, op.timestamp)
        st.mtime[t] = op.timestamp
        self._touch_parent(st.parent[t], op.timestamp)
        self._set_blocks(t, tuple(blocks))

    def _apply_allocate_block_id(self, op: AllocateBlockIdOp) -> None:
        """Set the last allocated block id, as HDFS's loader does (design §B.9)."""
        if op.block_id < 0:  # striped block groups take negative ids
            self.block_ids.last_striped_block_id = op.block_id
        else:
            self.block_ids.last_block_id = op.block_id

    def _apply_set_genstamp_v2(self, op: SetGenstampV2Op) -> None:
        self.block_ids.genstamp_v2 = op.genstamp_v2

    def _apply_set_genstamp_v1(self, op: SetGenstampV1Op) -> None:
        self.block_ids.genstamp_v1 = op.genstamp

    def _apply_symlink(self, op: SymlinkOp) -> None:
        r, parent = self._op_parent(op, op.path)
        if r.found:
            raise self._bad(op, op.path, "it exists already")
        st = self._st
        ps = op.permission_status
        s = st.alloc(
            op.inode_id,
            parent,
            SYMLINK,
            r.comps[-1],
            ps.mode & MODE_MASK,
            ps.username,
            ps.groupname,
            op.mtime,
            op.atime,
        )
        st.link(parent, s)
        st.extra[s] = {"target": op.value}
        self._touch_parent(parent, op.mtime)
        self.n_files += 1
        self._charge(parent, 1, 0)
        if op.inode_id > self.last_inode_id:
            self.last_inode_id = op.inode_id

    def _apply_reassign_lease(self, op: ReassignLeaseOp) -> None:
        s = self._op_file(op, op.path, True)
        machine = self._st.lease.get(s, ("", ""))[1]
        self._st.lease[s] = (op.new_holder, machine)

    def _set_extra(self, s: int, key: str, value: Any) -> None:
        st = self._st
        if value:
            st.extra.setdefault(s, {})[key] = value
        else:
            ex = st.extra.get(s)
            if ex is not None:
                ex.pop(key, None)
                if not ex:
                    del st.extra[s]

    def _apply_set_storage_policy(self, op: SetStoragePolicyOp) -> None:
        s = self._op_target(op, op.path).last
        self._set_extra(s, "storage_policy_id", op.policy_id)

    def _apply_set_type_quota(self, op: SetQuotaByStorageTypeOp) -> None:
        s = self._op_target(op, op.src).last
        if not self._st.is_dir(s):
            raise self._bad(op, op.src, "quotas are set on directories only")
        name = STORAGE_TYPES[op.storage_type]
        quotas = dict(self._st.extra.get(s, {}).get("type_quotas", ()))
        if op.ds_quota == QUOTA_UNSET:
            quotas.pop(name, None)
        else:
            quotas[name] = op.ds_quota
        self._set_extra(s, "type_quotas", tuple(sorted(quotas.items())))

    def _apply_set_acl(self, op: SetAclOp) -> None:
        s = self._op_target(op, op.src).last
        self._set_extra(s, "acls", tuple(op.acls))

    def _apply_set_xattr(self, op: SetXAttrOp) -> None:
        s = self._op_target(op, op.src).last
        new = {(x.namespace, x.name): x for x in op.xattrs}
        kept = [
            x
            for x in self._st.extra.get(s, {}).get("xattrs", ())
            if (x.namespace, x.name) not in new
        ]
        self._set_extra(s, "xattrs", (*kept, *new.values()))

    def _apply_remove_xattr(self, op: RemoveXAttrOp) -> None:
        s = self._op_target(op, op.src).last
        gone = {(x.namespace, x.name) for x in op.xattrs}
        kept = tuple(
            x
            for x in self._st.extra.get(s, {}).get("xattrs", ())
            if (x.namespace, x.name) not in gone
        )
        self._set_extra(s, "xattrs", kept)
