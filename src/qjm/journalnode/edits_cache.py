"""Recent batches of a journal kept in memory, so readers can tail edits in milliseconds.

The journal thread stores each batch after it is synced; RPC handlers read concurrently.
Batches are contiguous: a gap or a layout change starts the cache afresh, and the oldest
batches are dropped once the total passes the capacity.
"""

from __future__ import annotations

import bisect
import threading
from collections import deque
from collections.abc import Sequence
from typing import NamedTuple

from qjm.editlog.framing import header
from qjm.protocol.errors import CacheMissError


class _Batch(NamedTuple):  # a tuple: built once per journal() call, so kept cheap
    first: int
    last: int
    data: bytes
    offsets: Sequence[int]  # where each op starts in data


class JournaledEditsCache:
    """A bounded, thread-safe window of the newest contiguous txns of one journal."""

    def __init__(self, capacity_bytes: int) -> None:
        self.capacity = capacity_bytes
        self._lock = threading.Lock()
        self._batches: deque[_Batch] = deque()
        self._firsts: deque[int] = deque()
        self._size = 0
        self._layout: int | None = None

    @property
    def enabled(self) -> bool:
        """False when the capacity is 0."""
        return self.capacity > 0

    def range(self) -> tuple[int, int] | None:
        """(lowest, highest) txid held, or None when empty."""
        with self._lock:
            if not self._batches:
                return None
            return self._batches[0].first, self._batches[-1].last

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._reset(None)

    def _reset(self, layout: int | None) -> None:
        self._batches.clear()
        self._firsts.clear()
        self._size = 0
        self._layout = layout

    def store(self, records: bytes, first_txid: int, offsets: Sequence[int], layout: int) -> None:
        """Add a synced batch of len(offsets) ops starting at first_txid.

        The cache keeps records and offsets as they are: the caller must not change them.
        """
        if not self.enabled or not offsets:
            return
        last = first_txid + len(offsets) - 1
        with self._lock:
            contiguous = self._batches and self._batches[-1].last + 1 == first_txid
            if layout != self._layout or not contiguous:
                self._reset(layout)
            if len(records) > self.capacity:
                self._reset(layout)
                return
            while self._batches and self._size + len(records) > self.capacity:
                old = self._batches.popleft()
                self._firsts.popleft()
                self._size -= len(old.data)
            self._batches.append(_Batch(first_txid, last, records, offsets))
            self._firsts.append(first_txid)
            self._size += len(records)

    def retrieve(self, since_txid: int, max_txns: int) -> tuple[int, bytes]:
        """Up to max_txns ops from since_txid, as an edit-log header plus ops.

        Raises CacheMissError when since_txid is older than what the cache holds.
        """
        with self._lock:
            if not self._batches or since_txid < self._batches[0].first:
                held = (
                    f"{self._batches[0].first}-{self._batches[-1].last}"
                    if self._batches
                    else "nothing"
                )
                raise CacheMissError(
                    f"txid {since_txid} is not in the edits cache (it holds {held})"
                )
            if since_txid > self._batches[-1].last or max_txns <= 0:
                return 0, b""
            idx = bisect.bisect_right(self._firsts, since_txid) - 1
            parts: list[bytes | memoryview] = []
            count = 0
            layout = self._layout
            while idx < len(self._batches) and count < max_txns:
                b = self._batches[idx]
                start = since_txid + count - b.first
                take = min(len(b.offsets) - start, max_txns - count)
                lo = b.offsets[start]
                end = start + take
                hi = b.offsets[end] if end < len(b.offsets) else len(b.data)
                view = memoryview(b.data)[lo:hi]
                parts.append(view if (lo, hi) != (0, len(b.data)) else b.data)
                count += take
                idx += 1
        assert layout is not None
        return count, header(layout) + b"".join(parts)
