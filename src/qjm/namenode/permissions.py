"""HDFS's permission rules (FSPermissionChecker): owner, group and other bits, sticky bit."""

from __future__ import annotations

from qjm.namenode.errors import AccessControlError
from qjm.namenode.inodes import DIRECTORY, KIND_MASK, InodeStore
from qjm.namenode.types import Caller

READ, WRITE, EXECUTE = 4, 2, 1
READ_EXECUTE = READ | EXECUTE
WRITE_EXECUTE = WRITE | EXECUTE
ALL = 7
STICKY = 0o1000
_ACTION_NAMES = {
    0: "NONE",
    1: "EXECUTE",
    2: "WRITE",
    3: "WRITE_EXECUTE",
    4: "READ",
    5: "READ_EXECUTE",
    6: "READ_WRITE",
    7: "ALL",
}


def action_name(action: int) -> str:
    """HDFS's FsAction name of an rwx bit set."""
    return _ACTION_NAMES[action & 7]


def symbolic(mode: int, is_dir: bool) -> str:
    """A mode as ls shows it, e.g. drwxr-xr-t."""
    out = ["d" if is_dir else "-"]
    for shift in (6, 3, 0):
        bits = (mode >> shift) & 7
        out.append("r" if bits & 4 else "-")
        out.append("w" if bits & 2 else "-")
        out.append("x" if bits & 1 else "-")
    if mode & STICKY:
        out[-1] = "t" if out[-1] == "x" else "T"
    return "".join(out)


class PermissionChecker:
    """The permission checks of one caller against the inode store."""

    __slots__ = ("caller", "groups", "store", "super", "user")

    def __init__(self, store: InodeStore, caller: Caller, is_super: bool) -> None:
        self.store = store
        self.caller = caller
        self.user = caller.user
        self.groups = caller.groups
        self.super = is_super

    def _describe(self, s: int) -> str:
        st = self.store
        return (
            f'"{st.path_of(s)}":{st.owner_name(s)}:{st.group_name(s)}:'
            f"{symbolic(st.mode[s], st.is_dir(s))}"
        )

    def allows(self, s: int, action: int) -> bool:
        """Whether the caller's class (owner, group or other) has the action on slot s."""
        if self.super:
            return True
        st = self.store
        mode = st.mode[s]
        everyone = action * 0o111
        if mode & everyone == everyone:
            return True  # owner, group and other all have it
        if st.owner_name(s) == self.user:
            bits = mode >> 6
        elif st.group_name(s) in self.groups:
            bits = mode >> 3
        else:
            bits = mode
        return bits & action == action

    def check(self, s: int, action: int) -> None:
        """Raise AccessControlError unless the caller has the action on slot s."""
        if not self.allows(s, action):
            raise AccessControlError(
                f"Permission denied: user={self.user}, access={action_name(action)}, "
                f"inode={self._describe(s)}"
            )

    def check_traverse(self, slots: list[int]) -> None:
        """EXECUTE on every directory in slots (the ancestors walked through; files skipped)."""
        if self.super:
            return
        flags = self.store.flags
        mode = self.store.mode
        for s in slots:
            if mode[s] & 0o111 != 0o111 and flags[s] & KIND_MASK == DIRECTORY:
                self.check(s, EXECUTE)

    def check_owner(self, s: int) -> None:
        """Raise unless the caller owns slot s (or is a superuser)."""
        if self.super or self.store.owner_name(s) == self.user:
            return
        raise AccessControlError(
            f"Permission denied. user={self.user} is not the owner of inode={self.store.path_of(s)}"
        )

    def check_sticky(self, parent: int, child: int) -> None:
        """A sticky parent lets only its owner or the child's owner remove or rename it."""
        st = self.store
        if self.super or not st.mode[parent] & STICKY:
            return
        if st.owner_name(parent) == self.user or st.owner_name(child) == self.user:
            return
        raise AccessControlError(
            f"Permission denied by sticky bit: user={self.user}, path={self._describe(child)}, "
            f"parent={self._describe(parent)}"
        )

    def check_subtree(self, s: int, action: int, ignore_empty_dir: bool) -> None:
        """The action on every directory under s (s included); empty ones skipped if asked."""
        if self.super:
            return
        st = self.store
        stack = [s]
        while stack:
            d = stack.pop()
            if not st.is_dir(d):
                continue
            k = st.kids[d]
            if not (ignore_empty_dir and not k):
                self.check(d, action)
            if k:
                stack.extend(c for c in k.values() if st.is_dir(c))
