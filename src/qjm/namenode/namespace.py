"""The namespace: HDFS's inode tree, kept compact, changed only by applying edit-log ops.

Writes are two steps: a plan_* method validates a call against the tree (paths, permissions,
quotas) and returns the HDFS ops that carry it out, without changing anything; apply(op)
then changes the tree. Replay at start-up and the standby's tailer call the same apply, so
every NameNode that applied the same ops holds the same tree. apply reads no clock.

Kept from HDFS but not used by the checks: ACL entries and xattrs (permission checks use
owner, group and mode only), storage policies, erasure-coding policy ids. Not modelled:
snapshots (an image's snapshot-only inodes are dropped), /.reserved paths, encryption
zones, atime precision (a directory keeps no atime, as in HDFS's image).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from qjm.editlog.ops import (
    AddBlockOp,
    AddOp,
    AppendOp,
    Block,
    ClearNSQuotaOp,
    CloseOp,
    ConcatDeleteOp,
    DeleteOp,
    MkdirOp,
    Op,
    PermissionStatus,
    ReassignLeaseOp,
    RemoveXAttrOp,
    RenameOldOp,
    RenameOp,
    SetAclOp,
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
    AccessControlError,
    DSQuotaExceededError,
    FileAlreadyExistsError,
    IllegalArgumentError,
    InvalidPathError,
    LeaseError,
    NamenodeError,
    NSQuotaExceededError,
    ParentNotDirectoryError,
    PathIsNotEmptyDirectoryError,
    PathNotFoundError,
)
from qjm.namenode.image.model import QUOTA_UNSET, ROOT_INODE_ID, ROOT_NS_QUOTA
from qjm.namenode.inodes import (
    DIRECTORY,
    FILE,
    NO_SLOT,
    SYMLINK,
    UNDER_CONSTRUCTION,
    InodeStore,
)
from qjm.namenode.permissions import ALL, READ_EXECUTE, WRITE, PermissionChecker
from qjm.namenode.types import Caller, ContentSummary, FileStatus, RpcIds

if TYPE_CHECKING:
    from qjm.namenode.image import FsImage, ImageContents, NameSystemInfo

ROOT = 0  # the root's slot
QUOTA_DONT_SET = (1 << 63) - 1  # HdfsConstants.QUOTA_DONT_SET
MIN_REPLICATION, MAX_REPLICATION = 1, 512  # dfs.namenode.replication.min / .max defaults
IMPLICIT_UWX = 0o300  # parents made on the way get u+wx (FSDirMkdirOp.addImplicitUwx)
MODE_MASK = 0o7777
MAX_COMPONENT_LENGTH = 255  # dfs.namenode.fs-limits.max-component-length (bytes)
MAX_DIRECTORY_ITEMS = 1024 * 1024  # dfs.namenode.fs-limits.max-directory-items
MAX_PATH_LENGTH = 8000  # HdfsConstants.MAX_PATH_LENGTH (characters, counted as Java does)
MAX_PATH_DEPTH = 1000  # HdfsConstants.MAX_PATH_DEPTH (components)
# No path longer than this is resolved at all (design §N.4): splitting it would cost memory
# in proportion, and no path this long can exist (a path is created at most MAX_PATH_LENGTH
# characters long; only renaming an ancestor makes its descendants' paths longer).
MAX_RESOLVABLE_PATH = 1 << 20


@dataclass(frozen=True)
class FsLimits:
    """HDFS's dfs.namenode.fs-limits.* for new names (design §N.4)."""

    max_component_length: int = MAX_COMPONENT_LENGTH  # UTF-8 bytes of a new name; 0: none
    max_directory_items: int = MAX_DIRECTORY_ITEMS  # entries a directory may hold


class PathTooLongError(NamenodeError):
    """A new path over 8,000 characters or 1,000 levels (NameNodeRpcServer.checkPathLength)."""


class PathComponentTooLongError(NamenodeError):
    """A name longer than dfs.namenode.fs-limits.max-component-length (255 bytes)."""

    java_class = "org.apache.hadoop.hdfs.protocol.FSLimitException$PathComponentTooLongException"


class MaxDirectoryItemsExceededError(NamenodeError):
    """A directory at dfs.namenode.fs-limits.max-directory-items entries."""

    java_class = (
        "org.apache.hadoop.hdfs.protocol.FSLimitException$MaxDirectoryItemsExceededException"
    )


def java_length(text: str) -> int:
    """The length of text as Java's String.length() counts it (UTF-16 code units)."""
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


def path_depth(path: str) -> int:
    """The components of a path as Hadoop's Path.depth() counts them (empty ones ignored)."""
    return sum(1 for c in path.split("/") if c)


def check_path_length(method: str, path: str) -> None:
    """Refuse a new path over HDFS's 8,000 characters or 1,000 levels, as its RPC server does."""
    if len(path) > MAX_PATH_LENGTH or (
        java_length(path) > MAX_PATH_LENGTH or path_depth(path) > MAX_PATH_DEPTH
    ):
        raise PathTooLongError(
            f"{method}: Pathname too long.  Limit {MAX_PATH_LENGTH} characters, "
            f"{MAX_PATH_DEPTH} levels."
        )


def split_path(path: str) -> list[str]:
    """The components of an absolute path; InvalidPathError as HDFS's DFSUtil.isValidName."""
    if not isinstance(path, str) or not path.startswith("/"):
        raise InvalidPathError(f"Invalid path name {path!r}: not an absolute path")
    if len(path) > MAX_RESOLVABLE_PATH:
        raise InvalidPathError(
            f"Invalid path name {path[:64]}... ({len(path)} characters): no path longer than "
            f"{MAX_RESOLVABLE_PATH} characters is served"
        )
    if path == "/":
        return []
    comps = path[1:].split("/")
    if comps[-1] == "":
        comps.pop()  # one trailing slash is allowed
    if "//" in path or "/." in path or ":" in path or "\x00" in path or not comps:
        for c in comps or [""]:
            if c in ("", ".", "..") or ":" in c or "\x00" in c:
                raise InvalidPathError(f"Invalid path name {path}: bad component {c!r}")
    return comps


def join_path(comps: list[str]) -> str:
    """The normalized absolute path of components."""
    return "/" + "/".join(comps)


class _Resolved:
    """A path resolved as far as it exists: slots[0] is the root, slots[i] is comps[i-1]."""

    __slots__ = ("comps", "found", "path", "slots")

    def __init__(self, path: str, comps: list[str], slots: list[int]) -> None:
        self.path = path
        self.comps = comps
        self.slots = slots
        self.found = len(slots) == len(comps) + 1  # the whole path exists

    @property
    def last(self) -> int:
        """The deepest existing slot."""
        return self.slots[-1]

    @property
    def ancestors(self) -> list[int]:
        """Existing slots above the last component (HDFS's traverse set)."""
        return self.slots[:-1] if self.found else self.slots


class Namespace:
    """The inode tree with HDFS's semantics."""

    def __init__(
        self,
        *,
        superuser: str,
        supergroup: str = "supergroup",
        permissions_enabled: bool = True,
        root_mtime: int = 0,
    ) -> None:
        """An empty namespace: the root directory only, owned by superuser:supergroup 0755."""
        self.superuser = superuser
        self.supergroup = supergroup
        self.permissions_enabled = permissions_enabled
        self.limits = FsLimits()  # the NameNode sets its configured limits (design §N.4)
        self._st = InodeStore()
        root = self._st.alloc(
            ROOT_INODE_ID, NO_SLOT, DIRECTORY, "", 0o755, superuser, supergroup, root_mtime, 0
        )
        assert root == ROOT
        self._st.quota[ROOT] = [ROOT_NS_QUOTA, QUOTA_UNSET, 1, 0]
        self.last_inode_id = ROOT_INODE_ID
        self.n_files = 0
        self.n_dirs = 1
        self.n_bytes = 0
        self._appliers: dict[type[Op], Callable[[Any], None]] = {
            MkdirOp: self._apply_mkdir,
            AddOp: self._apply_add,
            CloseOp: self._apply_close,
            DeleteOp: self._apply_delete,
            RenameOldOp: self._apply_rename_old,
            RenameOp: self._apply_rename,
            SetPermissionsOp: self._apply_set_permissions,
            SetOwnerOp: self._apply_set_owner,
            SetReplicationOp: self._apply_set_replication,
            TimesOp: self._apply_times,
            SetQuotaOp: self._apply_set_quota,
            SetNSQuotaOp: self._apply_set_ns_quota,
            ClearNSQuotaOp: self._apply_clear_ns_quota,
            # what HDFS writes and our plans do not (an HDFS edit log replays whole)
            AppendOp: self._apply_append,
            AddBlockOp: self._apply_add_block,
            UpdateBlocksOp: self._apply_update_blocks,
            TruncateOp: self._apply_truncate,
            ConcatDeleteOp: self._apply_concat_delete,
            SymlinkOp: self._apply_symlink,
            ReassignLeaseOp: self._apply_reassign_lease,
            SetStoragePolicyOp: self._apply_set_storage_policy,
            SetQuotaByStorageTypeOp: self._apply_set_type_quota,
            SetAclOp: self._apply_set_acl,
            SetXAttrOp: self._apply_set_xattr,
            RemoveXAttrOp: self._apply_remove_xattr,
        }

    def __len__(self) -> int:
        """Inodes in the tree, the root included."""
        return self._st.count

    @property
    def store(self) -> InodeStore:
        """The inode store (for the image writer and for tests)."""
        return self._st

    # --- helpers ---------------------------------------------------------------------

    def is_superuser(self, caller: Caller) -> bool:
        """Whether the caller is a superuser here (flag, the NameNode's user or supergroup)."""
        return caller.superuser or caller.user == self.superuser or self.supergroup in caller.groups

    def _pc(self, caller: Caller) -> PermissionChecker:
        return PermissionChecker(
            self._st, caller, not self.permissions_enabled or self.is_superuser(caller)
        )

    def _resolve(self, path: str) -> _Resolved:
        comps = split_path(path)
        kids = self._st.kids
        flags = self._st.flags
        s = ROOT
        slots = [ROOT]
        for c in comps:
            if flags[s] & 3 != DIRECTORY:
                break
            k = kids[s]
            if k is None:
                break
            n = k.get(c)
            if n is None:
                break
            slots.append(n)
            s = n
        return _Resolved(path, comps, slots)

    def _traverse(self, pc: PermissionChecker, r: _Resolved) -> None:
        """EXECUTE on every ancestor; a file among them is ParentNotDirectory (as HDFS 3)."""
        anc = r.ancestors
        if not pc.super:
            pc.check_traverse(anc)
        if anc and self._st.flags[anc[-1]] & 3 != DIRECTORY:
            raise ParentNotDirectoryError(f"{self._st.path_of(anc[-1])} (is not a directory)")

    def _parent_dir(self, r: _Resolved, what: str) -> int:
        """The existing parent directory of a missing path, or the HDFS refusal."""
        last = r.last
        if not self._st.is_dir(last):
            raise ParentNotDirectoryError(
                f"{what}: parent path {self._st.path_of(last)} is not a directory"
            )
        return last

    def _status(self, s: int, name: str | None = None) -> FileStatus:
        st = self._st
        kind = st.kind(s)
        is_dir = kind == DIRECTORY
        target = None
        if kind == SYMLINK:
            target = str(st.extra.get(s, {}).get("target", ""))
        return FileStatus(
            name=st.names[s] if name is None else name,
            is_dir=is_dir,
            length=st.length[s],
            permission=st.mode[s],
            owner=st.owner_name(s),
            group=st.group_name(s),
            mtime=st.mtime[s],
            atime=st.atime[s],
            replication=0 if is_dir else st.replication[s],
            block_size=0 if is_dir else st.block_size[s],
            file_id=st.ids[s],
            children=st.n_children(s) if is_dir else -1,
            under_construction=st.is_uc(s),
            symlink=target,
        )

    def subtree_usage(self, s: int) -> tuple[int, int, int, int, int]:
        """(namespace count, space consumed, files, directories, bytes) of a subtree."""
        st = self._st
        ns = ds = files = dirs = nbytes = 0
        for x in st.subtree(s):
            ns += 1
            if st.flags[x] & 3 == DIRECTORY:
                dirs += 1
            else:
                files += 1
                n = st.length[x]
                nbytes += n
                ds += n * st.replication[x]
        return ns, ds, files, dirs, nbytes

    def _charge(self, s: int, dns: int, dds: int) -> None:
        """Add to the cached usage of every quota directory from s up to the root."""
        q = self._st.quota
        if len(q) == 1:
            root = q.get(ROOT)
            if root is not None:
                root[2] += dns
                root[3] += dds
                return
        parent = self._st.parent
        while s != NO_SLOT:
            e = q.get(s)
            if e is not None:
                e[2] += dns
                e[3] += dds
            s = parent[s]

    def _ancestors_of(self, s: int) -> set[int]:
        out = set()
        parent = self._st.parent
        while s != NO_SLOT:
            out.add(s)
            s = parent[s]
        return out

    def _check_quota(self, s: int, dns: int, dds: int, stop: set[int] | None = None) -> None:
        """Refuse adding dns names and dds bytes under directory s (stop: shared ancestors)."""
        st = self._st
        if dns <= 0 and dds <= 0:
            return
        while s != NO_SLOT:
            if stop is not None and s in stop:
                return
            e = st.quota.get(s)
            if e is not None:
                if dns > 0 and e[0] >= 0 and e[2] + dns > e[0]:
                    raise NSQuotaExceededError(
                        f"The NameSpace quota (directories and files) of directory "
                        f"{st.path_of(s)} is exceeded: quota={e[0]} file count={e[2] + dns}"
                    )
                if dds > 0 and e[1] >= 0 and e[3] + dds > e[1]:
                    raise DSQuotaExceededError(
                        f"The DiskSpace quota of {st.path_of(s)} is exceeded: quota = {e[1]} B "
                        f"but diskspace consumed = {e[3] + dds} B"
                    )
            s = st.parent[s]

    def _check_limits(self, r: _Resolved, parent: int, moved: _Resolved | None = None) -> None:
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

    # --- reads -----------------------------------------------------------------------

    def stat(self, path: str, caller: Caller) -> FileStatus | None:
        """The status of a path (its own name; "" for the root), or None if it does not exist."""
        r = self._resolve(path)
        self._traverse(self._pc(caller), r)
        if not r.found:
            return None
        return self._status(r.last)

    def listing(
        self, path: str, caller: Caller, start_after: str = "", limit: int = 1000
    ) -> tuple[list[FileStatus], int] | None:
        """A directory's entries after start_after, sorted by name, and how many remain.

        None if the path does not exist; a file lists itself (with the empty name, as
        HDFS answers it). Needs READ_EXECUTE on a directory.
        """
        r = self._resolve(path)
        pc = self._pc(caller)
        self._traverse(pc, r)
        if not r.found:
            return None
        s = r.last
        st = self._st
        if not st.is_dir(s):
            return [self._status(s, "")], 0
        pc.check(s, READ_EXECUTE)
        k = st.kids[s]
        if not k:
            return [], 0
        names = st.names_sorted(s)
        i = bisect.bisect_right(names, start_after) if start_after else 0
        take = names[i : i + max(limit, 0)]
        return [self._status(k[n]) for n in take], len(names) - i - len(take)

    def content_summary(self, path: str, caller: Caller) -> ContentSummary:
        """Totals under a path (READ_EXECUTE needed on every directory under it)."""
        r = self._resolve(path)
        pc = self._pc(caller)
        self._traverse(pc, r)
        if not r.found:
            raise PathNotFoundError(f"File does not exist: {path}")
        s = r.last
        q = self._st.quota.get(s)
        if s == ROOT and pc.super and q is not None:  # the whole tree: kept counts
            return ContentSummary(
                length=self.n_bytes,
                file_count=self.n_files,
                directory_count=self.n_dirs,
                ns_quota=q[0],
                space_consumed=q[3],
                space_quota=q[1],
            )
        pc.check_subtree(s, READ_EXECUTE, False)
        _, ds, files, dirs, nbytes = self.subtree_usage(s)
        return ContentSummary(
            length=nbytes,
            file_count=files,
            directory_count=dirs,
            ns_quota=q[0] if q else QUOTA_UNSET,
            space_consumed=ds,
            space_quota=q[1] if q else QUOTA_UNSET,
        )

    def totals(self) -> tuple[int, int, int]:
        """(files, directories, bytes) in the whole tree."""
        return self.n_files, self.n_dirs, self.n_bytes

    def dump(self) -> list[tuple[Any, ...]]:
        """Every inode as a tuple (path first), sorted by path: for comparing two namespaces."""
        st = self._st
        out = []
        for s in st.subtree(ROOT):
            q = st.quota.get(s)
            out.append(
                (
                    st.path_of(s),
                    st.ids[s],
                    st.flags[s],
                    st.mode[s],
                    st.owner_name(s),
                    st.group_name(s),
                    st.mtime[s],
                    st.atime[s],
                    st.replication[s],
                    st.block_size[s],
                    st.length[s],
                    st.blocks.get(s, ()),
                    None if q is None else tuple(q),
                    st.lease.get(s),
                    tuple(sorted(st.extra.get(s, {}).items())),
                )
            )
        out.sort(key=lambda t: t[0])
        return out

    def iter_paths(self) -> Iterator[tuple[str, FileStatus]]:
        """(path, status) of every inode, parents before children."""
        st = self._st
        for s in st.subtree(ROOT):
            yield st.path_of(s), self._status(s)

    # --- plans -----------------------------------------------------------------------

    def _new_dir_ops(
        self,
        r: _Resolved,
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
        _check_replication(replication, path)
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

    def _rename_checks(self, pc: PermissionChecker, rs: _Resolved, rd: _Resolved) -> None:
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

    def _existing(self, path: str, caller: Caller) -> tuple[_Resolved, PermissionChecker]:
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
        r, pc = self._existing(path, caller)
        s = r.last
        st = self._st
        pc.check(s, WRITE)
        if st.kind(s) != FILE:
            return []
        _check_replication(replication, path)
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

    # --- apply -----------------------------------------------------------------------

    def apply(self, op: Op) -> None:
        """Change the tree by one op; ops that do not touch the tree are ignored.

        Raises NamenodeError naming the op and path when the op contradicts the tree.
        """
        f = self._appliers.get(type(op))
        if f is not None:
            f(op)

    def _bad(self, op: Op, path: str, why: str) -> NamenodeError:
        return NamenodeError(f"cannot apply {op.opcode_name} {path}: {why}")

    def _op_resolve(self, op: Op, path: str) -> _Resolved:
        try:
            return self._resolve(path)
        except InvalidPathError as e:
            raise self._bad(op, path, str(e)) from None

    def _op_target(self, op: Op, path: str) -> _Resolved:
        r = self._op_resolve(op, path)
        if not r.found:
            raise self._bad(op, path, "no such file or directory")
        return r

    def _op_parent(self, op: Op, path: str) -> tuple[_Resolved, int]:
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

    def _set_blocks(self, s: int, blocks: tuple[Any, ...]) -> None:
        st = self._st
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
        st.mtime[s] = op.mtime
        st.atime[s] = op.atime
        self._set_blocks(s, op.blocks)

    def _remove(self, s: int, mtime: int) -> None:
        """Unlink and free a subtree, updating counts, quotas and the parent's mtime."""
        st = self._st
        parent = st.parent[s]
        ns, ds, files, dirs, nbytes = self.subtree_usage(s)
        slots = st.subtree(s)
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

    def _move(self, op: Op, rs: _Resolved, dst: str, timestamp: int, overwrite: bool) -> None:
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
        self._set_blocks(s, new)

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
            last = kept[-1]
            cut = last.num_bytes - (size - op.new_length)
            t = op.truncate_block
            kept[-1] = Block(last.block_id, cut, last.genstamp) if t is None else t
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

    # --- checkpoints -----------------------------------------------------------------

    def copy(self) -> Namespace:
        """An independent copy of the tree (fast: columns are copied whole).

        For a checkpoint without holding up apply: copy on the applying thread, then
        to_image and write_image the copy on another.
        """
        c = Namespace(
            superuser=self.superuser,
            supergroup=self.supergroup,
            permissions_enabled=self.permissions_enabled,
        )
        c._st = self._st.copy()
        c.limits = self.limits
        c.last_inode_id = self.last_inode_id
        c.n_files, c.n_dirs, c.n_bytes = self.n_files, self.n_dirs, self.n_bytes
        return c

    def to_image(self, txid: int, ns_info: NameSystemInfo) -> ImageContents:
        """The namespace as image contents for qjm.namenode.image.write_image.

        It reads the live tree, so no op may be applied while it runs (call it on the
        thread that applies); what it returns shares nothing mutable with the namespace,
        so write_image can then run on another thread while ops are applied.
        """
        from qjm.namenode.image_bridge import to_image

        return to_image(self, txid, ns_info)

    @classmethod
    def from_image(
        cls,
        image: FsImage,
        *,
        superuser: str,
        supergroup: str = "supergroup",
        permissions_enabled: bool = True,
    ) -> Namespace:
        """A namespace holding a decoded image's tree."""
        from qjm.namenode.image_bridge import from_image

        return from_image(
            image,
            superuser=superuser,
            supergroup=supergroup,
            permissions_enabled=permissions_enabled,
        )


def _check_replication(replication: int, path: str) -> None:
    if replication < MIN_REPLICATION:
        raise NamenodeError(
            f"Requested replication factor of {replication} is less than the required "
            f"minimum of {MIN_REPLICATION} for {path}"
        )
    if replication > MAX_REPLICATION:
        raise NamenodeError(
            f"Requested replication factor of {replication} exceeds maximum of "
            f"{MAX_REPLICATION} for {path}"
        )


def _rename_old(src: str, dst: str, now_ms: int, rpc: RpcIds) -> RenameOldOp:
    return RenameOldOp(
        src=src, dst=dst, timestamp=now_ms, rpc_client_id=rpc.client_id, rpc_call_id=rpc.call_id
    )
