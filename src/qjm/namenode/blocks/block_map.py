"""The block map as columns: one open-addressing table keyed by block id (design §B.5).

No Python object per block: a block is one slot across `array` columns (id, length,
genstamp, replication, state, three replica locations as storage indexes). A block with
more than three replicas keeps the others in a small dict. Slots move when the table
grows, so a slot is valid only until the next insert.

Bulk operations (`find_many`, `insert_many`, `location_columns`) work on numpy views of
the same columns, so a block report or an image load costs no Python step per block
(design §B.5).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

EMPTY = -(1 << 63)
TOMBSTONE = EMPTY + 1
NO_STORAGE = -1
_GOLDEN = 0x9E3779B97F4A7C15
_MASK64 = (1 << 64) - 1
_MAX_LOAD = 0.75
MIN_CAPACITY = 16

I64 = npt.NDArray[np.int64]


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

    def _grow(self, more: int = 0) -> None:
        """Rebuild the table (tombstones dropped) with room for `more` blocks beyond count."""
        cap = MIN_CAPACITY
        if more:
            while (self.count + more) > cap * _MAX_LOAD:
                cap *= 2
        else:
            while self.count * 2 >= cap:
                cap *= 2
        old: list[npt.NDArray[Any]] = list(self.columns())
        live = np.flatnonzero((old[0] != EMPTY) & (old[0] != TOMBSTONE))
        kept = [c[live] for c in old]  # copies: the old arrays go with _alloc
        del old
        self._alloc(cap)
        slots = self._place_many(kept[0])
        cols: list[npt.NDArray[Any]] = list(self.columns())
        for col, values in zip(cols[1:], kept[1:], strict=True):
            col[slots] = values

    # -- bulk operations on numpy views of the columns -----------------------------------

    def columns(
        self,
    ) -> tuple[
        I64,
        I64,
        I64,
        npt.NDArray[np.uint16],
        npt.NDArray[np.uint8],
        npt.NDArray[np.int32],
        npt.NDArray[np.int32],
        npt.NDArray[np.int32],
    ]:
        """Writable numpy views of id, length, genstamp, replication, state, loc0-2."""
        return (
            np.frombuffer(self.ids, dtype=np.int64),
            np.frombuffer(self.nbytes, dtype=np.int64),
            np.frombuffer(self.gs, dtype=np.int64),
            np.frombuffer(self.repl, dtype=np.uint16),
            np.frombuffer(self.state, dtype=np.uint8),
            np.frombuffer(self.loc0, dtype=np.int32),
            np.frombuffer(self.loc1, dtype=np.int32),
            np.frombuffer(self.loc2, dtype=np.int32),
        )

    def _homes(self, keys: I64) -> I64:
        h = keys.view(np.uint64) * np.uint64(_GOLDEN)
        return (h >> np.uint64(64 - self._bits)).astype(np.int64)

    def find_many(self, keys: I64) -> I64:
        """The slot of each block id (-1 where the map lacks it), as find does one."""
        ids = np.frombuffer(self.ids, dtype=np.int64)
        mask = len(ids) - 1
        cand = self._homes(keys)
        out = np.full(len(keys), -1, dtype=np.int64)
        pend = np.arange(len(keys))
        while len(pend):
            c = cand[pend]
            k = ids[c]
            hit = k == keys[pend]
            out[pend[hit]] = c[hit]
            go = ~hit & (k != EMPTY)
            pend = pend[go]
            cand[pend] = (c[go] + 1) & mask
        return out

    def _place_many(self, keys: I64) -> I64:
        """Claim a slot for each key (none is in the map, no two equal); returns the slots.

        Linear probing as insert: a key takes the first free slot from its home on; of keys
        wanting the same free slot one takes it and the others probe on, so every slot on a
        key's way from its home to its own is taken, which is all find needs.
        """
        ids = np.frombuffer(self.ids, dtype=np.int64)
        mask = len(ids) - 1
        cand = self._homes(keys)
        out = np.empty(len(keys), dtype=np.int64)
        pend = np.arange(len(keys))
        while len(pend):
            c = cand[pend]
            cur = ids[c]
            free = np.flatnonzero((cur == EMPTY) | (cur == TOMBSTONE))
            won_slots, first = np.unique(c[free], return_index=True)
            winners = pend[free[first]]
            self.used += int(np.count_nonzero(cur[free[first]] == EMPTY))
            ids[won_slots] = keys[winners]
            out[winners] = won_slots
            lost = np.ones(len(pend), dtype=bool)
            lost[free[first]] = False
            pend = pend[lost]
            cand[pend] = (c[lost] + 1) & mask
        self.count += len(keys)
        return out

    def insert_many(
        self,
        keys: I64,
        nbytes: I64,
        gs: I64,
        repl: npt.NDArray[np.integer],
        state: npt.NDArray[np.integer],
    ) -> I64:
        """Add blocks none of which is in the map, as insert does each; returns their slots."""
        keys = np.ascontiguousarray(keys, dtype=np.int64)
        if not len(keys):
            return np.empty(0, dtype=np.int64)
        if np.any((keys == EMPTY) | (keys == TOMBSTONE)):
            raise ValueError("a reserved block id is among the blocks to insert")
        srt = np.sort(keys)
        dup = srt[1:][srt[1:] == srt[:-1]]
        if len(dup):
            raise KeyError(f"block {int(dup[0])} is listed twice")
        there = self.find_many(keys)
        if np.any(there >= 0):
            raise KeyError(f"block {int(keys[there >= 0][0])} is already in the map")
        if self.used + len(keys) > len(self.ids) * _MAX_LOAD:
            self._grow(len(keys))
        slots = self._place_many(keys)
        _, nb, g, r, st, l0, l1, l2 = self.columns()
        nb[slots], g[slots], r[slots], st[slots] = nbytes, gs, repl, state
        l0[slots] = l1[slots] = l2[slots] = NO_STORAGE
        return slots

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
        """Every slot with a replica on storage, in slot order."""
        return self.storage_slots(storage).tolist()  # type: ignore[no-any-return]

    def storage_slots(self, storage: int) -> I64:
        """Every slot with a replica on storage, sorted (a vector scan of the columns)."""
        *_, l0, l1, l2 = self.columns()
        found = np.flatnonzero((l0 == storage) | (l1 == storage) | (l2 == storage))
        more = [self.find(bid) for bid, locs in self.extra.items() if storage in locs]
        if more:
            found = np.union1d(found, np.array(more, dtype=np.int64))
        return found.astype(np.int64)
