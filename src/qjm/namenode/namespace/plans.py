"""Plans: a call validated against the tree (paths, permissions, quotas, limits) into the HDFS
ops that carry it out, without changing anything."""

from __future__ import annotations

from qjm.editlog.ops import (
    AddOp,
    CloseOp,
    DeleteOp,
    MkdirOp,
    Op,
    PermissionStatus,
    RenameOldOp,
    RenameOp,
    SetOwnerOp,
    SetPermissionsOp,
    SetQuotaOp,
    SetReplicationOp,
    TimesOp,
)
from qjm.namenode.errors import (
    AccessControlError,
    FileAlreadyExistsError,
    IllegalArgumentError,
    LeaseError,
    NamenodeError,
    ParentNotDirectoryError,
    PathIsNotEmptyDirectoryError,
    PathNotFoundError,
)
from qjm.namenode.image.model import QUOTA_UNSET
from qjm.namenode.inodes import (
    FILE,
    NO_SLOT,
)
from qjm.namenode.namespace.paths import Resolved, check_path_length, join_path
from qjm.namenode.namespace.quota import QUOTA_DONT_SET, QuotaMixin
from qjm.namenode.namespace.rules import (
    IMPLICIT_UWX,
    MaxDirectoryItemsExceededError,
    PathComponentTooLongError,
    check_replication,
)
from qjm.namenode.permissions import ALL, WRITE, PermissionChecker
from qjm.namenode.types import MODE_MASK, Caller, RpcIds


class PlansMixin(QuotaMixin):
    """The plan_* calls: each returns the ops for apply, or raises HDFS's refusal."""

    def _check_limits(self, r: Resolved, parent: int, moved: Resolved | None = None) -> None:
        """HDFS's fs-limits for new names under parent: component length, directory items."""
        limits = self.limits
        most = limits.max_component_length
        first_new = len(r.slots) - 1
        if most:
            for i in range(first_new, len(r.comps)):
                c = r.comps[i]
                n = len(c.encode("utf-8", "surrogateescape"))
                if n > most:
                    where = self._st.path_of(parent) if i == first_new else join_path(r.comps[:i])
                    raise PathComponentTooLongError(
                        f"The maximum path component name limit of {c} in directory "
                        f"{where} is exceeded: limit={most} length={n}"
                    )
        if moved is not None and moved.slots[-2] == parent:
            return  # a rename within one directory adds no entry
        items = self._st.n_children(parent)
        if items >= limits.max_directory_items:
            raise MaxDirectoryItemsExceededError(
                f"The directory item limit of {self._st.path_of(parent)} is exceeded: "
                f"limit={limits.max_directory_items} items={items}"
            )

    def _new_dir_ops(
        self,
        r: Resolved,
        first_missing: int,
        count: int,
        mode: int,
        owner: str,
        group: str,
        now_ms: int,
        last_mode: int,
    ) -> list[Op]:
        ops: list[Op] = []
        for i in range(count):
            end = first_missing + i + 1
            ops.append(
                MkdirOp(
                    inode_id=self.last_inode_id + 1 + i,
                    path=join_path(r.comps[:end]),
                    timestamp=now_ms,
                    permission_status=PermissionStatus(
                        owner, group, last_mode if i == count - 1 else mode
                    ),
                )
            )
        return ops

    def plan_mkdirs(
        self, path: str, caller: Caller, permission: int, create_parent: bool, now_ms: int
    ) -> list[Op]:
        """MkdirOps for the path (and its missing parents); [] when it is a directory already."""
        check_path_length("mkdirs", path)
        r = self._resolve(path)
        pc = self._pc(caller)
        self._traverse(pc, r)
        st = self._st
        if r.found:
            if st.is_dir(r.last):
                return []
            raise FileAlreadyExistsError(f"Path is not a directory: {path}")
        parent = self._parent_dir(r, f"mkdirs {path}")
        pc.check(parent, WRITE)  # HDFS: ancestor access before the parent must exist
        missing = len(r.comps) - (len(r.slots) - 1)
        if missing > 1 and not create_parent:
            raise PathNotFoundError(f"Parent directory doesn't exist: {join_path(r.comps[:-1])}")
        self._check_limits(r, parent)
        self._check_quota(parent, missing, 0)
        mode = permission & MODE_MASK
        return self._new_dir_ops(
            r,
            len(r.slots) - 1,
            missing,
            mode | IMPLICIT_UWX,
            caller.user,
            st.group_name(parent),
            now_ms,
            mode,
        )

    def plan_create(
        self,
        path: str,
        caller: Caller,
        permission: int,
        overwrite: bool,
        create_parent: bool,
        replication: int,
        block_size: int,
        client_name: str,
        client_machine: str,
        now_ms: int,
        rpc: RpcIds,
    ) -> list[Op]:
        """Ops creating an open file: parents' MkdirOps, DeleteOp when overwriting, AddOp."""
        check_path_length("create", path)
        r = self._resolve(path)
        pc = self._pc(caller)
        self._traverse(pc, r)
        st = self._st
        check_replication(replication, path, client_machine)
        if block_size <= 0:
            raise IllegalArgumentError(f"Invalid block size {block_size} for {path}")
        mode = permission & MODE_MASK
        ops: list[Op] = []
        if r.found:
            s = r.last
            if not r.comps:
                raise FileAlreadyExistsError(f"{path} already exists as a directory")
            parent = r.slots[-2]
            if overwrite:
                pc.check(s, WRITE)
            pc.check(parent, WRITE)
            if st.is_dir(s):
                raise FileAlreadyExistsError(f"{path} already exists as a directory")
            if not overwrite:
                raise FileAlreadyExistsError(
                    f"failed to create file {path} for {client_name} for client {client_machine} "
                    f"because the file exists"
                )
            ops.append(
                DeleteOp(
                    path=join_path(r.comps),
                    timestamp=now_ms,
                    rpc_client_id=rpc.client_id,
                    rpc_call_id=rpc.call_id,
                )
            )
            group = st.group_name(parent)
            new_id = self.last_inode_id + 1
        else:
            parent = self._parent_dir(r, f"create {path}")
            pc.check(parent, WRITE)
            missing = len(r.comps) - (len(r.slots) - 1)
            if missing > 1 and not create_parent:
                raise PathNotFoundError(
                    f"Parent directory doesn't exist: {join_path(r.comps[:-1])}"
                )
            self._check_limits(r, parent)
            self._check_quota(parent, missing, 0)
            group = st.group_name(parent)
            if missing > 1:
                ops.extend(
                    self._new_dir_ops(
                        r,
                        len(r.slots) - 1,
                        missing - 1,
                        mode | IMPLICIT_UWX,
                        caller.user,
                        group,
                        now_ms,
                        mode | IMPLICIT_UWX,
                    )
                )
            new_id = self.last_inode_id + missing
        ops.append(
            AddOp(
                inode_id=new_id,
                path=join_path(r.comps),
                replication=replication,
                mtime=now_ms,
                atime=now_ms,
                block_size=block_size,
                permission_status=PermissionStatus(caller.user, group, mode),
                client_name=client_name,
                client_machine=client_machine,
                overwrite=overwrite,
                rpc_client_id=rpc.client_id,
                rpc_call_id=rpc.call_id,
            )
        )
        return ops

    def plan_complete(
        self, path: str, caller: Caller, client_name: str, file_id: int, now_ms: int
    ) -> list[Op]:
        """A CloseOp for a file this client has open; [] when it is closed already."""
        r = self._resolve(path)
        self._traverse(self._pc(caller), r)
        st = self._st
        if not r.found:
            raise PathNotFoundError(f"File does not exist: {path}")
        s = r.last
        if st.kind(s) != FILE:
            raise PathNotFoundError(f"Path is not a file: {path}")
        if file_id and file_id != st.ids[s]:
            raise PathNotFoundError(
                f"File does not exist: {path} (inode {file_id}; the file there is inode "
                f"{st.ids[s]})"
            )
        if not st.is_uc(s):
            return []
        holder = st.lease.get(s, ("", ""))[0]
        if holder != client_name:
            raise LeaseError(
                f"No lease on {path} (inode {st.ids[s]}): client {client_name} is not the "
                f"lease owner ({holder})"
            )
        return [
            CloseOp(  # HDFS's logCloseFile leaves the inode id 0
                path=join_path(r.comps),
                replication=st.replication[s],
                mtime=now_ms,
                atime=st.atime[s],
                block_size=st.block_size[s],
                blocks=st.blocks.get(s, ()),
                permission_status=PermissionStatus(st.owner_name(s), st.group_name(s), st.mode[s]),
            )
        ]

    def _rename_checks(self, pc: PermissionChecker, rs: Resolved, rd: Resolved) -> None:
        """A rename's permissions, as HDFS checks them before anything else.

        Traverse both paths; WRITE on the source's parent (and its sticky bit); WRITE on
        the destination's deepest existing ancestor.
        """
        st = self._st
        self._traverse(pc, rs)
        self._traverse(pc, rd)
        if rs.comps and len(rs.slots) >= len(rs.comps):
            src_parent = rs.slots[len(rs.comps) - 1]
            pc.check(src_parent, WRITE)
            if rs.found:
                pc.check_sticky(src_parent, rs.last)
        if rd.comps:
            anc = rd.slots[min(len(rd.slots), len(rd.comps)) - 1]
            if st.is_dir(anc):
                pc.check(anc, WRITE)

    def _rename_quota(self, src: int, dst_parent: int, replaced: int = NO_SLOT) -> None:
        """Refuse a move that would exceed a quota above dst and not above src."""
        if len(self._st.quota) == 1:
            return
        ns, ds, _, _, _ = self.subtree_usage(src)
        if replaced != NO_SLOT:
            rns, rds, _, _, _ = self.subtree_usage(replaced)
            ns -= rns
            ds -= rds
        self._check_quota(dst_parent, ns, ds, stop=self._ancestors_of(self._st.parent[src]))

    def plan_rename(self, src: str, dst: str, caller: Caller, now_ms: int, rpc: RpcIds) -> list[Op]:
        """The old rename (RenameOldOp): into dst if it is a directory; [] is HDFS's false."""
        check_path_length("rename", dst)
        rs = self._resolve(src)
        rd = self._resolve(dst)
        pc = self._pc(caller)
        st = self._st
        if rd.found and st.is_dir(rd.last) and rs.comps:
            rd = self._resolve(join_path([*rd.comps, rs.comps[-1]]))  # move into dst
        self._rename_checks(pc, rs, rd)
        if not rs.found or not rs.comps:
            return []  # no such source, or the root
        if rd.comps == rs.comps:
            return [_rename_old(join_path(rs.comps), join_path(rd.comps), now_ms, rpc)]
        if rd.comps[: len(rs.comps)] == rs.comps:
            return []  # into its own subtree
        if rd.found or len(rd.slots) != len(rd.comps) or not st.is_dir(rd.last):
            return []  # dst exists, or its parent is missing or a file
        self._check_limits(rd, rd.last, rs)
        self._rename_quota(rs.last, rd.last)
        return [_rename_old(join_path(rs.comps), join_path(rd.comps), now_ms, rpc)]

    def plan_rename2(
        self, src: str, dst: str, caller: Caller, overwrite: bool, now_ms: int, rpc: RpcIds
    ) -> list[Op]:
        """The rename with options (RenameOp); every failure raises."""
        check_path_length("rename", dst)
        rs = self._resolve(src)
        rd = self._resolve(dst)
        pc = self._pc(caller)
        st = self._st
        self._rename_checks(pc, rs, rd)
        src, dst = join_path(rs.comps), join_path(rd.comps)
        if not rs.found:
            raise PathNotFoundError(f"rename source {src} is not found.")
        if not rs.comps:
            raise NamenodeError("rename source cannot be the root")
        if rd.comps == rs.comps:
            raise FileAlreadyExistsError(f"The source {src} and destination {dst} are the same")
        if rd.comps[: len(rs.comps)] == rs.comps:
            raise NamenodeError(
                f"Rename destination {dst} is a directory or file under source {src}"
            )
        if not rd.comps:
            raise NamenodeError("rename destination cannot be the root")
        replaced = NO_SLOT
        if rd.found:
            d = rd.last
            if st.is_dir(rs.last) != st.is_dir(d):
                raise NamenodeError(f"Source {src} and destination {dst} must both be directories")
            if not overwrite:
                raise FileAlreadyExistsError(f"rename destination {dst} already exists")
            if st.is_dir(d) and st.n_children(d):
                raise NamenodeError(f"rename destination directory is not empty: {dst}")
            pc.check_sticky(rd.slots[-2], d)
            replaced = d
            dst_parent = rd.slots[-2]
        else:
            if len(rd.slots) != len(rd.comps):
                raise PathNotFoundError(f"rename destination parent {dst} not found.")
            dst_parent = rd.last
            if not st.is_dir(dst_parent):
                raise ParentNotDirectoryError(f"rename destination parent {dst} is a file.")
        if replaced == NO_SLOT:
            self._check_limits(rd, dst_parent, rs)
        self._rename_quota(rs.last, dst_parent, replaced)
        return [
            RenameOp(
                src=src,
                dst=dst,
                timestamp=now_ms,
                options=("OVERWRITE",) if overwrite else ("NONE",),
                rpc_client_id=rpc.client_id,
                rpc_call_id=rpc.call_id,
            )
        ]

    def plan_delete(
        self, path: str, caller: Caller, recursive: bool, now_ms: int, rpc: RpcIds
    ) -> list[Op]:
        """A DeleteOp; [] when there is no such path (HDFS's false) or it is the root."""
        r = self._resolve(path)
        pc = self._pc(caller)
        self._traverse(pc, r)
        st = self._st
        if not r.found:
            return []
        s = r.last
        if not recursive and st.is_dir(s) and st.n_children(s):
            raise PathIsNotEmptyDirectoryError(f"{path} is non empty")
        if not r.comps:
            return []  # HDFS: the root is not allowed to be deleted
        parent = r.slots[-2]
        pc.check(parent, WRITE)
        pc.check_sticky(parent, s)
        pc.check_subtree(s, ALL, True)
        return [
            DeleteOp(
                path=join_path(r.comps),
                timestamp=now_ms,
                rpc_client_id=rpc.client_id,
                rpc_call_id=rpc.call_id,
            )
        ]

    def _existing(self, path: str, caller: Caller) -> tuple[Resolved, PermissionChecker]:
        r = self._resolve(path)
        pc = self._pc(caller)
        self._traverse(pc, r)
        if not r.found:
            raise PathNotFoundError(f"File does not exist: {path}")
        return r, pc

    def plan_set_permission(self, path: str, caller: Caller, permission: int) -> list[Op]:
        """A SetPermissionsOp; only the owner or a superuser may."""
        r, pc = self._existing(path, caller)
        pc.check_owner(r.last)
        return [SetPermissionsOp(src=join_path(r.comps), mode=permission & MODE_MASK)]

    def plan_set_owner(
        self, path: str, caller: Caller, owner: str | None, group: str | None
    ) -> list[Op]:
        """A SetOwnerOp; the owner may only change the group (to one of theirs)."""
        r, pc = self._existing(path, caller)
        pc.check_owner(r.last)
        owner = owner or None
        group = group or None
        if not pc.super:
            if owner is not None and owner != caller.user:
                raise AccessControlError(
                    f"User {caller.user} is not a super user (non-super user cannot change owner)."
                )
            if group is not None and group not in caller.groups:
                raise AccessControlError(f"User {caller.user} does not belong to {group}")
        if owner is None and group is None:
            return []
        return [SetOwnerOp(src=join_path(r.comps), username=owner, groupname=group)]

    def plan_set_replication(self, path: str, caller: Caller, replication: int) -> list[Op]:
        """A SetReplicationOp; [] for a directory (HDFS's false). Needs WRITE."""
        check_replication(replication, path)  # first, as HDFS's FSDirAttrOp.setReplication
        r, pc = self._existing(path, caller)
        s = r.last
        st = self._st
        pc.check(s, WRITE)
        if st.kind(s) != FILE:
            return []
        delta = st.length[s] * (replication - st.replication[s])
        self._check_quota(st.parent[s], 0, delta)
        return [SetReplicationOp(path=join_path(r.comps), replication=replication)]

    def plan_set_times(self, path: str, caller: Caller, mtime: int, atime: int) -> list[Op]:
        """A TimesOp (-1 leaves a time as is); WRITE on the path, as HDFS's setTimes."""
        r = self._resolve(path)
        pc = self._pc(caller)
        self._traverse(pc, r)
        if not r.found:
            raise PathNotFoundError(f"File/Directory {path} does not exist.")
        pc.check(r.last, WRITE)
        if mtime == -1 and atime == -1:
            return []
        return [TimesOp(path=join_path(r.comps), mtime=mtime, atime=atime)]

    def plan_set_quota(self, path: str, caller: Caller, ns_quota: int, ds_quota: int) -> list[Op]:
        """A SetQuotaOp (-1 clears, 2^63-1 leaves as is); superusers only, directories only."""
        if self.permissions_enabled and not self.is_superuser(caller):
            raise AccessControlError(
                f"Access denied for user {caller.user}. Superuser privilege is required"
            )
        for v in (ns_quota, ds_quota):
            if v < 0 and v not in (QUOTA_UNSET, QUOTA_DONT_SET):
                raise IllegalArgumentError(
                    f"Illegal value for nsQuota or ssQuota : {ns_quota} and {ds_quota}"
                )
        r = self._resolve(path)
        if not r.found or not self._st.is_dir(r.last):
            raise PathNotFoundError(f"Directory does not exist: {path}")
        if not r.comps and ns_quota == QUOTA_UNSET:
            raise IllegalArgumentError("Cannot clear namespace quota on root.")
        q = self._st.quota.get(r.last)
        old_ns, old_ds = (q[0], q[1]) if q else (QUOTA_UNSET, QUOTA_UNSET)
        return [
            SetQuotaOp(
                src=join_path(r.comps),
                ns_quota=old_ns if ns_quota == QUOTA_DONT_SET else ns_quota,
                ds_quota=old_ds if ds_quota == QUOTA_DONT_SET else ds_quota,
            )
        ]


def _rename_old(src: str, dst: str, now_ms: int, rpc: RpcIds) -> RenameOldOp:
    return RenameOldOp(
        src=src, dst=dst, timestamp=now_ms, rpc_client_id=rpc.client_id, rpc_call_id=rpc.call_id
    )
