"""The namespace's state and the helpers every part uses: resolving, traversing, statuses."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from qjm.editlog.ops import Block, Op
from qjm.namenode.errors import ParentNotDirectoryError
from qjm.namenode.inodes import (
    DIRECTORY,
    SYMLINK,
    InodeStore,
)
from qjm.namenode.namespace.block_ids import BlockIds
from qjm.namenode.namespace.paths import Resolved, split_path
from qjm.namenode.namespace.rules import FsLimits
from qjm.namenode.permissions import PermissionChecker
from qjm.namenode.types import Caller, FileStatus

ROOT = 0  # the root's slot


class NamespaceCore:
    """The inode tree's state and the helpers reads, plans and apply share."""

    superuser: str
    supergroup: str
    permissions_enabled: bool
    limits: FsLimits
    _st: InodeStore
    last_inode_id: int
    n_files: int
    n_dirs: int
    n_bytes: int
    block_ids: BlockIds
    # Told the blocks apply takes out of the namespace (a file deleted or overwritten, its
    # block list cut short): the BlockManager forgets them (design §B.10).
    on_blocks_removed: Callable[[Sequence[Block]], None] | None
    _appliers: dict[type[Op], Callable[[Any], None]]

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

    def _resolve(self, path: str) -> Resolved:
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
        return Resolved(path, comps, slots)

    def _traverse(self, pc: PermissionChecker, r: Resolved) -> None:
        """EXECUTE on every ancestor; a file among them is ParentNotDirectory (as HDFS 3)."""
        anc = r.ancestors
        if not pc.super:
            pc.check_traverse(anc)
        if anc and self._st.flags[anc[-1]] & 3 != DIRECTORY:
            raise ParentNotDirectoryError(f"{self._st.path_of(anc[-1])} (is not a directory)")

    def _parent_dir(self, r: Resolved, what: str) -> int:
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
