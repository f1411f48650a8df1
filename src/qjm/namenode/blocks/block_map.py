"""The block map as columns: one open-addressing table keyed by block id (design §B.5).

No Python object per block: a block is one slot across `array` columns (id, length,
genstamp, replication, state, three replica locations as storage indexes). A block with
more than three replicas keeps the others in a small dict. Slots move when the table
grows, so a slot is valid only until the next insert.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterator

EMPTY = -(1 << 63)
TOMBSTONE = EMPTY + 1
NO_STORAGE = -1
_GOLDEN = 0x9E3779B97F4A7C15
_MASK64 = (1 << 64) - 1
_MAX_LOAD = 0.75
MIN_CAPACITY = 16


class BlockMap:
    """Block id -> slot, with the per-block columns (design §B.5)."""

    __slots__ = (
        "_bits",
        "count",
        "extra",
        "gs",
        "ids",
        "loc0",
        "loc1",
        "loc2",
        "nbytes",
        "repl",
        "state",
        "used",
    )

    def __init__(self, capacity: int = MIN_CAPACITY) -> None:
        self._alloc(max(MIN_CAPACITY, 1 << (capacity - 1).bit_length()))
        self.extra: dict[int, list[int]] = {}  # block id -> storages beyond the third

    def _alloc(self, cap: int) -> None:
        self._bits = cap.bit_length() - 1
        self.ids = array("q", [EMPTY]) * cap
        self.nbytes = array("q", [0]) * cap
        self.gs = array("q", [0]) * cap
        self.repl = array("H", [0]) * cap
        self.state = array("B", [0]) * cap
        self.loc0 = array("i", [NO_STORAGE]) * cap
        self.loc1 = array("i", [NO_STORAGE]) * cap
        self.loc2 = array("i", [NO_STORAGE]) * cap
        self.count = 0
        self.used = 0  # live slots and tombstones

    def __len__(self) -> int:
        return self.count

    @property
    def capacity(self) -> int:
        """Slots in the table."""
        return len(self.ids)

    def _home(self, key: int) -> int:
        return ((key * _GOLDEN) & _MASK64) >> (64 - self._bits)

    def find(self, block_id: int) -> int:
        """The slot of block_id, or -1."""
        ids, mask = self.ids, len(self.ids) - 1
        i = self._home(block_id)
        while True:
            k = ids[i]
            if k == block_id:
                return i
            if k == EMPTY:
                return -1
            i = (i + 1) & mask

    def insert(self, block_id: int, nbytes: int, gs: int, repl: int, state: int) -> int:
        """Add a block that is not in the map; returns its slot."""
        if block_id in (EMPTY, TOMBSTONE):
            raise ValueError(f"block id {block_id} is reserved")
        if (self.used + 1) > len(self.ids) * _MAX_LOAD:
            self._grow()
        ids, mask = self.ids, len(self.ids) - 1
        i = self._home(block_id)
        free = -1
        while True:
            k = ids[i]
            if k == block_id:
                raise KeyError(f"block {block_id} is already in the map")
            if k == EMPTY:
                break
            if k == TOMBSTONE and free < 0:
                free = i
            i = (i + 1) & mask
        if free >= 0:
            i = free
        else:
            self.used += 1
        ids[i] = block_id
        self.nbytes[i], self.gs[i], self.repl[i], self.state[i] = nbytes, gs, repl, state
        self.loc0[i] = self.loc1[i] = self.loc2[i] = NO_STORAGE
        self.count += 1
        return i

    def delete(self, slot: int) -> None:
        """Remove the block at slot (its locations go with it)."""
        self.extra.pop(self.ids[slot], None)
        self.ids[slot] = TOMBSTONE
        self.loc0[slot] = self.loc1[slot] = self.loc2[slot] = NO_STORAGE
        self.count -= 1

    def _grow(self) -> None:
        old = (self.ids, self.nbytes, self.gs, self.repl, self.state)
        locs = (self.loc0, self.loc1, self.loc2)
        cap = MIN_CAPACITY
        while self.count * 2 >= cap:
            cap *= 2
        self._alloc(cap)
        ids, nbytes, gs, repl, state = old
        for s in range(len(ids)):
            k = ids[s]
            if k in (EMPTY, TOMBSTONE):
                continue
            n = self.insert(k, nbytes[s], gs[s], repl[s], state[s])
            self.loc0[n], self.loc1[n], self.loc2[n] = locs[0][s], locs[1][s], locs[2][s]

    def slots(self) -> Iterator[int]:
        """Every occupied slot (do not insert while iterating)."""
        ids = self.ids
        for s in range(len(ids)):
            k = ids[s]
            if k not in (EMPTY, TOMBSTONE):
                yield s

    # -- replica locations -------------------------------------------------------------

    def locations(self, slot: int) -> list[int]:
        """The storage indexes holding the block at slot."""
        out = [x for x in (self.loc0[slot], self.loc1[slot], self.loc2[slot]) if x >= 0]
        more = self.extra.get(self.ids[slot])
        if more:
            out.extend(more)
        return out

    def has_location(self, slot: int, storage: int) -> bool:
        """Whether the storage holds the block at slot."""
        if storage in (self.loc0[slot], self.loc1[slot], self.loc2[slot]):
            return True
        more = self.extra.get(self.ids[slot])
        return bool(more) and storage in more  # type: ignore[operator]

    def add_location(self, slot: int, storage: int) -> bool:
        """Record a replica on storage; False if it was there already."""
        if self.has_location(slot, storage):
            return False
        for col in (self.loc0, self.loc1, self.loc2):
            if col[slot] == NO_STORAGE:
                col[slot] = storage
                return True
        self.extra.setdefault(self.ids[slot], []).append(storage)
        return True

    def remove_location(self, slot: int, storage: int) -> bool:
        """Forget the replica on storage; False if there was none."""
        for col in (self.loc0, self.loc1, self.loc2):
            if col[slot] == storage:
                col[slot] = NO_STORAGE
                return True
        bid = self.ids[slot]
        more = self.extra.get(bid)
        if more and storage in more:
            more.remove(storage)
            if not more:
                del self.extra[bid]
            return True
        return False

    def slots_on_storage(self, storage: int) -> list[int]:
        """Every slot with a replica on storage (a byte scan of the location columns)."""
        pat = storage.to_bytes(4, sys.byteorder, signed=True)
        found: set[int] = set()
        for col in (self.loc0, self.loc1, self.loc2):
            raw = col.tobytes()
            i = raw.find(pat)
            while i >= 0:
                if i % 4 == 0:
                    found.add(i // 4)
                    i = raw.find(pat, i + 4)
                else:
                    i = raw.find(pat, i + 1)
        for bid, more in self.extra.items():
            if storage in more:
                found.add(self.find(bid))
        return sorted(found)
