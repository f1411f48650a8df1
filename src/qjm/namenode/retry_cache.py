"""The NameNode's retry cache (HDFS's RetryCache): at-most-once calls answered once (design §N.3).

The answer to each at-most-once call (ClientProtocol's @AtMostOnce methods) is kept by the
call's (client id, call id) for expiry_s: a client that sends the same call again (its
answer was lost, or the NameNode it sent it to died and the other one took over) gets the
first answer instead of a second execution. A retry that arrives while the first call still
runs waits for it. Entries are also rebuilt from the RPC ids logged with each op when a
NameNode replays or tails the journal, so the standby answers a retry after a failover.

Pure but for the waiting (an asyncio.Event per entry): the clock is injected, nothing here
reads a socket or a disk.
"""

from __future__ import annotations

import asyncio
import enum
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from qjm.editlog.ops import AddBlockOp, AddOp, Op
from qjm.namenode.types import MODE_MASK, FileStatus

CLIENT_ID_LENGTH = 16  # a UUID (HDFS's ClientId.BYTE_LENGTH)
# ClientProtocol's @AtMostOnce methods (HDFS 3). qjm answers create, rename, rename2 and
# delete; the others are refused before they change anything, so they need no entry.
AT_MOST_ONCE = frozenset(
    {
        "create",
        "append",
        "rename",
        "rename2",
        "concat",
        "delete",
        "createSymlink",
        "updatePipeline",
        "createSnapshot",
        "deleteSnapshot",
        "renameSnapshot",
        "addCacheDirective",
        "modifyCacheDirective",
        "removeCacheDirective",
        "addCachePool",
        "modifyCachePool",
        "removeCachePool",
        "setXAttr",
        "removeXAttr",
        "createEncryptionZone",
        "addErasureCodingPolicies",
        "removeErasureCodingPolicy",
        "enableErasureCodingPolicy",
        "disableErasureCodingPolicy",
    }
)
SERVED_AT_MOST_ONCE = frozenset({"create", "rename", "rename2", "delete"})


class State(enum.Enum):
    """Where the call an entry stands for is (HDFS's INPROGRESS, SUCCESS, FAILED)."""

    IN_PROGRESS = 0
    SUCCESS = 1
    FAILED = 2


def tracked(client_id: bytes, call_id: int) -> bool:
    """Whether a call's ids can key the cache: a 16-byte client id and a call id >= 0.

    HDFS skips calls with a negative call id or the empty (dummy) client id, and its entries
    take only a 16-byte UUID; any other id is simply not cached.
    """
    return len(client_id) == CLIENT_ID_LENGTH and call_id >= 0


@dataclass(eq=False, slots=True)
class CacheEntry:
    """One call: its ids, when it expires (clock seconds), its state and its answer."""

    client_id: bytes
    call_id: int
    expires: float
    state: State = State.IN_PROGRESS
    payload: object = None
    _changed: asyncio.Event | None = field(default=None, repr=False)  # made by a waiter

    @property
    def succeeded(self) -> bool:
        """True once the call succeeded: a retry gets its answer."""
        return self.state is State.SUCCESS

    def finish(self, success: bool, payload: object = None) -> None:
        """Record the call's outcome and wake every retry waiting for it."""
        self.state = State.SUCCESS if success else State.FAILED
        if payload is not None:
            self.payload = payload
        changed, self._changed = self._changed, None
        if changed is not None:
            changed.set()

    def restart(self) -> None:
        """A retry runs the call again after it failed: in progress once more."""
        self.state = State.IN_PROGRESS

    async def wait_done(self) -> None:
        """Return once the call is no longer in progress."""
        while self.state is State.IN_PROGRESS:
            if self._changed is None:
                self._changed = asyncio.Event()
            await self._changed.wait()


def created_status(op: AddOp) -> FileStatus:
    """The status a create answers for the file its OP_ADD made (the entry's payload)."""
    ps = op.permission_status
    return FileStatus(
        name=op.path.rstrip("/").rsplit("/", 1)[-1],
        is_dir=False,
        length=sum(b.num_bytes for b in op.blocks),
        permission=ps.mode & MODE_MASK,
        owner=ps.username,
        group=ps.groupname,
        mtime=op.mtime,
        atime=op.atime,
        replication=op.replication,
        block_size=op.block_size,
        file_id=op.inode_id,
        children=-1,
        under_construction=True,
    )


def logged_call(op: Op) -> tuple[bytes, int, object] | None:
    """(client id, call id, payload) of the call a journal op records, or None.

    Every op carrying valid RPC ids records an at-most-once call, as HDFS's edit-log loader
    reads them (OP_ADD_BLOCK excepted: addBlock is not at-most-once there). OP_ADD's payload
    is the created file's status; every other entry records success only.
    """
    if isinstance(op, AddBlockOp):
        return None
    client_id = getattr(op, "rpc_client_id", None)
    call_id = getattr(op, "rpc_call_id", None)
    if not isinstance(client_id, bytes) or not isinstance(call_id, int):
        return None
    if not tracked(client_id, call_id):
        return None
    payload = created_status(op) if isinstance(op, AddOp) else None
    return client_id, call_id, payload


class RetryCache:
    """Entries by (client id, call id), each kept expiry_s, at most max_entries (oldest go).

    Counters as HDFS's RetryCache.NameNodeRetryCache metrics: hits (CacheHit: a call found
    its entry), updated (CacheUpdated: an entry added) and cleared (CacheCleared).
    """

    def __init__(
        self,
        expiry_s: float,
        max_entries: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if expiry_s <= 0 or max_entries < 1:
            raise ValueError(
                f"a retry cache needs expiry_s > 0 and max_entries >= 1, got {expiry_s} "
                f"and {max_entries}"
            )
        self.expiry_s = expiry_s
        self.max_entries = max_entries
        self.clock = clock
        # by expiry: every entry lives expiry_s from when it was put, so insertion order is
        # expiry order and the oldest entry is first
        self._entries: OrderedDict[tuple[bytes, int], CacheEntry] = OrderedDict()
        self.hits = 0
        self.updated = 0
        self.cleared = 0
        self.evicted = 0  # entries dropped for room before they expired

    def __len__(self) -> int:
        """Entries held (expired ones not yet dropped included)."""
        return len(self._entries)

    def get(self, client_id: bytes, call_id: int) -> CacheEntry | None:
        """The live entry of a call, if any (no counter changes)."""
        self._expire()
        return self._entries.get((client_id, call_id))

    def _expire(self) -> None:
        now = self.clock()
        entries = self._entries
        while entries:
            key, first = next(iter(entries.items()))
            if first.expires > now:
                return
            del entries[key]

    def _put(self, entry: CacheEntry) -> None:
        key = (entry.client_id, entry.call_id)
        self._entries[key] = entry
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
            self.evicted += 1
        self.updated += 1

    def lookup_or_add(self, client_id: bytes, call_id: int) -> tuple[CacheEntry, bool]:
        """The call's entry and False (a hit), or a new in-progress entry and True."""
        self._expire()
        found = self._entries.get((client_id, call_id))
        if found is not None:
            self.hits += 1
            return found, False
        entry = CacheEntry(client_id, call_id, self.clock() + self.expiry_s)
        self._put(entry)
        return entry, True

    async def wait_for_completion(self, client_id: bytes, call_id: int) -> CacheEntry | None:
        """HDFS's RetryCache.waitForCompletion: the entry the caller goes on with.

        None: the call is not tracked (run it, record nothing). A new entry, or one whose
        earlier run failed (it is in progress again): run the call, then set_state. An
        entry that succeeded: answer from it without running the call. A call in progress
        is waited for first.
        """
        if not tracked(client_id, call_id):
            return None
        entry, new = self.lookup_or_add(client_id, call_id)
        if new:
            return entry
        await entry.wait_done()
        if entry.state is State.FAILED:
            entry.restart()
        return entry

    @staticmethod
    def set_state(entry: CacheEntry | None, success: bool, payload: object = None) -> None:
        """Record how the call of entry (None: untracked) ended, with its answer."""
        if entry is not None:
            entry.finish(success, payload)

    def add_logged(self, client_id: bytes, call_id: int, payload: object = None) -> None:
        """A succeeded call read from the journal (replay, tailing): it replaces any entry."""
        if not tracked(client_id, call_id):
            return
        self._expire()
        entry = CacheEntry(client_id, call_id, self.clock() + self.expiry_s)
        entry.finish(True, payload)
        self._put(entry)

    def add_op(self, op: Op) -> bool:
        """add_logged for the call op records, if any; True when it recorded one."""
        call = logged_call(op)
        if call is None:
            return False
        self.add_logged(*call)
        return True

    def clear(self) -> None:
        """Drop every entry (the namespace they answered for was dropped)."""
        self._entries.clear()
        self.cleared += 1

    def stats(self) -> dict[str, int]:
        """HDFS's metric names (CacheHit, CacheCleared, CacheUpdated) and the entry count."""
        return {
            "CacheHit": self.hits,
            "CacheCleared": self.cleared,
            "CacheUpdated": self.updated,
            "entries": len(self._entries),
            "evicted": self.evicted,
        }
