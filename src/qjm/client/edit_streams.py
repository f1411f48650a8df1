"""Reading segments over HTTP from any JournalNode that holds them (redundant streams).

A segment is streamed from one node; if that node fails mid-stream (connection lost, a
corrupt op, a short file) the read goes on from the next node at the next txid, so no txid
is repeated or skipped.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp

from qjm.editlog.framing import HEADER_LEN, RawOp, parse_available, read_header
from qjm.errors import EditLogError, QjmError

CHUNK = 256 * 1024


class ReadError(QjmError):
    """Edits could not be read from any JournalNode that should hold them."""


@dataclass(frozen=True)
class SegmentSource:
    """A segment of the journal and the JournalNodes it can be fetched from."""

    start: int
    end: int
    in_progress: bool
    urls: tuple[str, ...]  # /getJournal URLs, one per node holding it

    def describe(self) -> str:
        """ "1-100" or "101-120 (in progress)"."""
        return f"{self.start}-{self.end}" + (" (in progress)" if self.in_progress else "")


async def stream_ops(session: aiohttp.ClientSession, url: str) -> AsyncIterator[RawOp]:
    """The ops of one segment file served at url, as they arrive."""
    async with session.get(url) as resp:
        if resp.status != 200:
            text = (await resp.text())[:300]
            raise ReadError(f"HTTP {resp.status}: {text}")
        buf = bytearray()
        pos = 0
        header_seen = False
        async for chunk in resp.content.iter_chunked(CHUNK):
            buf += chunk
            if not header_seen:
                if len(buf) < HEADER_LEN:
                    continue
                read_header(buf)
                header_seen = True
                pos = HEADER_LEN
            ops, pos, padded, problem = parse_available(buf, pos)
            for op in ops:
                yield op
            if problem is not None:
                raise problem
            if padded:
                return
            if pos > CHUNK:
                del buf[:pos]
                pos = 0
        if not header_seen:
            raise ReadError(f"the segment is shorter than its header ({len(buf)} bytes)")
        if pos < len(buf):
            raise ReadError(f"the segment ends inside an op ({len(buf) - pos} bytes left over)")


async def read_segment(
    session: aiohttp.ClientSession, seg: SegmentSource, from_txid: int, to_txid: int | None = None
) -> AsyncIterator[RawOp]:
    """Ops from_txid..min(seg.end, to_txid) of a segment, switching node on any failure."""
    next_txid = max(from_txid, seg.start)
    last = seg.end if to_txid is None else min(seg.end, to_txid)
    if next_txid > last:
        return
    failures: list[str] = []
    for url in seg.urls:
        try:
            async for op in stream_ops(session, url):
                if op.txid < next_txid:
                    continue
                if op.txid != next_txid:
                    raise ReadError(f"expected txid {next_txid}, the node sent {op.txid}")
                yield op
                next_txid += 1
                if next_txid > last:
                    return
            raise ReadError(f"the segment ended at txid {next_txid - 1}")
        except (TimeoutError, aiohttp.ClientError, EditLogError, ReadError) as e:
            failures.append(f"{url}: {str(e) or type(e).__name__}")
    raise ReadError(
        f"could not read txids {next_txid}-{last} of segment {seg.describe()} from any "
        f"JournalNode: " + "; ".join(failures)
    )
