"""A compact inode store: one `array` column per attribute, indexed by slot.

No Python object exists per inode: names live in one list, a directory's entries in a
dict of name -> slot (made on its first entry), owners and groups in a string table, and
the rare attributes (blocks, quotas, leases, ACLs, ...) in dicts keyed by slot.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Any

from qjm.editlog.ops.types import Block

FREE, FILE, DIRECTORY, SYMLINK = 0, 1, 2, 3
KIND_MASK = 3
UNDER_CONSTRUCTION = 4  # flag bit on a file
NO_SLOT = -1
ARRAYS = (
    "ids",
    "parent",
    "flags",
    "mode",
    "owner",
    "group",
    "mtime",
    "atime",
    "replication",
    "block_size",
    "length",
    "free_slots",
)
SORT_CACHE_MIN = 1000  # directories with more entries keep their sorted names for listing
SORT_CACHE_DIRS = 16  # ... at most this many of them


class StringTable:
    """Owner and group names, each held once and referred to by index."""

    __slots__ = ("ids", "names")

    def __init__(self) -> None:
        self.names: list[str] = []
        self.ids: dict[str, int] = {}

    def id(self, s: str) -> int:
        """The index of s, adding it on first use."""
        i = self.ids.get(s)
        if i is None:
            i = self.ids[s] = len(self.names)
            self.names.append(s)
        return i


@dataclass
class InodeColumns:
    """A whole tree as a loader builds it: one list per column, the slot is the position.

    Slot 0 is the root directory; kids holds each directory's name -> slot entries; owners
    and groups index strings; the sparse maps are keyed by slot (quotas: the (name, space)
    limits; the namespace counts their usage).
    """

    ids: list[int]
    parents: list[int]
    flags: list[int]
    modes: list[int]
    owners: list[int]
    groups: list[int]
    mtimes: list[int]
    atimes: list[int]
    repls: list[int]
    bsizes: list[int]
    lengths: list[int]
    names: list[str]
    kids: list[dict[str, int] | None]
    strings: StringTable
    blocks: dict[int, tuple[Block, ...]]
    quotas: dict[int, tuple[int, int]]
    leases: dict[int, tuple[str, str]]
    extra: dict[int, dict[str, Any]]


class InodeStore:
    """Struct-of-arrays inode storage; a freed slot is reused by the next allocation."""

    def __init__(self) -> None:
        self.ids = array("q")
        self.parent = array("i")
        self.flags = array("B")
        self.mode = array("H")
        self.owner = array("I")
        self.group = array("I")
        self.mtime = array("q")
        self.atime = array("q")
        self.replication = array("H")
        self.block_size = array("q")
        self.length = array("q")
        self.names: list[str] = []
        self.kids: list[dict[str, int] | None] = []
        self.strings = StringTable()
        self.free_slots = array("i")
        self.count = 0
        # sparse attributes
        self.blocks: dict[int, tuple[Block, ...]] = {}
        self.quota: dict[int, list[int]] = {}  # slot -> [ns_quota, ds_quota, ns_used, ds_used]
        self.lease: dict[int, tuple[str, str]] = {}  # slot -> (client name, client machine)
        # slot -> the truncate block (id, cut length, recovery stamp) of a truncate inside
        # its last block, until block recovery closes the file (design §B.16)
        self.truncating: dict[int, Block] = {}
        self.extra: dict[int, dict[str, Any]] = {}  # acls, xattrs, symlink target, policies
        self.sorted_names: dict[int, list[str]] = {}  # big directories' names, for listing

    @classmethod
    def from_columns(cls, cols: InodeColumns) -> InodeStore:
        """A store holding a loaded tree, each column made an exactly sized array at once."""
        n = len(cols.ids)
        columns = (
            cols.parents,
            cols.flags,
            cols.modes,
            cols.owners,
            cols.groups,
            cols.mtimes,
            cols.atimes,
            cols.repls,
            cols.bsizes,
            cols.lengths,
            cols.names,
            cols.kids,
        )
        if any(len(c) != n for c in columns):
            raise ValueError(f"inode columns of different lengths (ids: {n})")
        st = cls()
        st.ids = array("q", cols.ids)
        st.parent = array("i", cols.parents)
        st.flags = array("B", cols.flags)
        st.mode = array("H", cols.modes)
        st.owner = array("I", cols.owners)
        st.group = array("I", cols.groups)
        st.mtime = array("q", cols.mtimes)
        st.atime = array("q", cols.atimes)
        st.replication = array("H", cols.repls)
        st.block_size = array("q", cols.bsizes)
        st.length = array("q", cols.lengths)
        st.names = cols.names
        st.kids = cols.kids
        st.strings = cols.strings
        st.count = n
        st.blocks = cols.blocks
        st.quota = {s: [ns, ds, 0, 0] for s, (ns, ds) in cols.quotas.items()}
        st.lease = cols.leases
        st.extra = cols.extra
        return st

    def copy(self) -> InodeStore:
        """An independent copy (arrays and dicts copied; their values are immutable)."""
        c = InodeStore.__new__(InodeStore)
        for name in ARRAYS:
            setattr(c, name, array(getattr(self, name).typecode, getattr(self, name)))
        c.names = list(self.names)
        c.kids = [None if k is None else k.copy() for k in self.kids]
        c.strings = StringTable()
        c.strings.names = list(self.strings.names)
        c.strings.ids = dict(self.strings.ids)
        c.count = self.count
        c.blocks = dict(self.blocks)
        c.quota = {s: list(q) for s, q in self.quota.items()}
        c.lease = dict(self.lease)
        c.truncating = dict(self.truncating)
        c.extra = {s: dict(e) for s, e in self.extra.items()}
        c.sorted_names = {}
        return c

    def alloc(
        self,
        inode_id: int,
        parent: int,
        kind: int,
        name: str,
        mode: int,
        owner: str,
        group: str,
        mtime: int,
        atime: int,
        replication: int = 0,
        block_size: int = 0,
    ) -> int:
        """A slot holding a new inode (not yet linked into its parent)."""
        o = self.strings.id(owner)
        g = self.strings.id(group)
        self.count += 1
        if self.free_slots:
            s = self.free_slots.pop()
            self.ids[s] = inode_id
            self.parent[s] = parent
            self.flags[s] = kind
            self.mode[s] = mode
            self.owner[s] = o
            self.group[s] = g
            self.mtime[s] = mtime
            self.atime[s] = atime
            self.replication[s] = replication
            self.block_size[s] = block_size
            self.length[s] = 0
            self.names[s] = name
            self.kids[s] = None
            return s
        s = len(self.ids)
        self.ids.append(inode_id)
        self.parent.append(parent)
        self.flags.append(kind)
        self.mode.append(mode)
        self.owner.append(o)
        self.group.append(g)
        self.mtime.append(mtime)
        self.atime.append(atime)
        self.replication.append(replication)
        self.block_size.append(block_size)
        self.length.append(0)
        self.names.append(name)
        self.kids.append(None)
        return s

    def release(self, s: int) -> None:
        """Free a slot (already unlinked from its parent)."""
        self.flags[s] = FREE
        self.names[s] = ""
        self.kids[s] = None
        self.parent[s] = NO_SLOT
        self.blocks.pop(s, None)
        self.quota.pop(s, None)
        self.lease.pop(s, None)
        self.truncating.pop(s, None)
        self.extra.pop(s, None)
        self.sorted_names.pop(s, None)
        self.free_slots.append(s)
        self.count -= 1

    def kind(self, s: int) -> int:
        """FILE, DIRECTORY or SYMLINK."""
        return self.flags[s] & KIND_MASK

    def is_dir(self, s: int) -> bool:
        """True for a directory."""
        return self.flags[s] & KIND_MASK == DIRECTORY

    def is_uc(self, s: int) -> bool:
        """True for a file under construction (open for writing)."""
        return bool(self.flags[s] & UNDER_CONSTRUCTION)

    def owner_name(self, s: int) -> str:
        """The owner's user name."""
        return self.strings.names[self.owner[s]]

    def group_name(self, s: int) -> str:
        """The group name."""
        return self.strings.names[self.group[s]]

    def child(self, s: int, name: str) -> int:
        """The slot of a directory's entry, or NO_SLOT."""
        k = self.kids[s]
        if k is None:
            return NO_SLOT
        return k.get(name, NO_SLOT)

    def n_children(self, s: int) -> int:
        """How many entries a directory has."""
        k = self.kids[s]
        return 0 if k is None else len(k)

    def link(self, parent: int, s: int) -> None:
        """Make slot s an entry of directory parent under its name."""
        k = self.kids[parent]
        if k is None:
            k = self.kids[parent] = {}
        k[self.names[s]] = s
        self.parent[s] = parent
        if self.sorted_names:
            self.sorted_names.pop(parent, None)

    def unlink(self, s: int) -> None:
        """Remove slot s from its parent's entries."""
        p = self.parent[s]
        k = self.kids[p]
        if k is not None:
            del k[self.names[s]]
            if not k:
                self.kids[p] = None
        self.parent[s] = NO_SLOT
        if self.sorted_names:
            self.sorted_names.pop(p, None)

    def names_sorted(self, s: int) -> list[str]:
        """A directory's entry names in HDFS's order (kept for big directories until changed)."""
        k = self.kids[s]
        if not k:
            return []
        if len(k) <= SORT_CACHE_MIN:
            return sorted(k)
        names = self.sorted_names.get(s)
        if names is None:
            if len(self.sorted_names) >= SORT_CACHE_DIRS:
                self.sorted_names.pop(next(iter(self.sorted_names)))
            names = self.sorted_names[s] = sorted(k)
        return names

    def subtree(self, s: int) -> list[int]:
        """Slots of s and everything under it (s first, parents before children)."""
        out = [s]
        i = 0
        while i < len(out):
            k = self.kids[out[i]]
            if k is not None:
                out.extend(k.values())
            i += 1
        return out

    def path_of(self, s: int) -> str:
        """The full path of a linked slot."""
        parts: list[str] = []
        while self.parent[s] != NO_SLOT:
            parts.append(self.names[s])
            s = self.parent[s]
        return "/" + "/".join(reversed(parts))
