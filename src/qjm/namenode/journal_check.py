"""A NameNode and a shared journal that ends before what it knows was committed (design §N.5).

A NameNode knows a floor: a txid the shared journal once held committed. It is the
highest of what it applied from the journal (or had a quorum acknowledge as the writer),
its name dir's newest image (images are made of committed edits), seen_txid - 1 (a writer
records seen_txid once a quorum started that segment, so everything before it was
committed) and what its local edits prove (a local segment is finalized only after the
quorum finalized it, or at a txid a recovery had settled; an in-progress one holding ops
was opened after the quorum started that segment). Committed txids never go back: a
journal whose JournalNodes hold less than the floor was formatted or restored from an old
copy, and a NameNode that followed it would lose every edit after its end.

The rules as pure functions: journal_floor picks the floor, journal_behind tells from each
JournalNode's highest written txid whether the journal is behind it, behind_message says
what happened and what to run. JournalEndProbe asks the JournalNodes (the I/O edge).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from qjm.client.journalnode_client import JournalNodeClient
from qjm.client.uri import QJournalUri
from qjm.editlog.framing import HEADER_LEN
from qjm.editlog.segments import list_segments
from qjm.errors import QjmError
from qjm.namenode.errors import NamenodeError
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.qjournal import journal_id
from qjm.protocol.quorum import majority_of

__all__ = [
    "Floor",
    "JournalEndProbe",
    "LocalEditsAheadError",
    "LocalSegment",
    "NodeEnd",
    "behind_message",
    "decided",
    "ends_text",
    "journal_behind",
    "journal_floor",
    "local_floor",
    "read_local_segments",
]

PROBE_TIMEOUT_S = 3.0


class LocalEditsAheadError(NamenodeError):
    """The local edits hold txids the shared journal once committed but no longer holds."""


@dataclass(frozen=True)
class Floor:
    """A txid the shared journal once held committed, and how this NameNode knows it."""

    txid: int
    reason: str


@dataclass(frozen=True)
class LocalSegment:
    """One local edits file as the floor needs it: its range and whether it holds any op."""

    start: int
    end: int | None  # None: in progress
    name: str
    has_ops: bool = True


def local_floor(segments: Iterable[LocalSegment]) -> Floor | None:
    """The highest txid the local edits prove the shared journal committed, if any.

    A finalized local segment ends where the quorum finalized it (or where a recovery had
    settled the log): the journal held its end. An in-progress one holding ops was opened
    after a quorum started that segment: the journal held the txid before its start.
    """
    best: Floor | None = None
    for seg in segments:
        if seg.end is not None:
            txid, why = seg.end, f"its local edits file {seg.name} ends at txid {seg.end}"
        elif seg.has_ops:
            txid = seg.start - 1
            why = f"its local edits file {seg.name} was started after txid {txid} was committed"
        else:
            continue
        if best is None or txid > best.txid:
            best = Floor(txid, why)
    return best


def journal_floor(
    *,
    committed: int,
    image_txid: int,
    seen_txid: int = 0,
    local: Floor | None = None,
) -> Floor:
    """The highest txid this NameNode knows the shared journal committed (first reason on ties)."""
    candidates = [
        Floor(committed, f"this NameNode applied txid {committed} from it"),
        Floor(image_txid, f"its name dir holds an image at txid {image_txid}"),
        Floor(seen_txid - 1, f"its name dir's seen_txid is {seen_txid}"),
    ]
    if local is not None:
        candidates.append(local)
    best = candidates[0]
    for c in candidates[1:]:
        if c.txid > best.txid:
            best = c
    return best


@dataclass(frozen=True)
class NodeEnd:
    """What one JournalNode says of the journal's end; highest None when not known."""

    address: str
    highest: int | None
    note: str = ""  # why unknown (no answer, not formatted, restored)

    def describe(self) -> str:
        """ "host:port ends at txid N" or "host:port: unknown (why)"."""
        if self.highest is None:
            return f"{self.address}: unknown ({self.note})"
        return f"{self.address} ends at txid {self.highest}"


def journal_behind(ends: Sequence[NodeEnd], floor: Floor) -> list[NodeEnd] | None:
    """The JournalNodes holding nothing at or after the floor when they are a majority of
    all members (the journal is behind it); None when it is not, or that is not known.

    A committed txid is on a majority, and recovery keeps it, so any majority holds a node
    whose highest written txid reaches it. Nodes that lost their storage (restored, not
    formatted) or did not answer say nothing either way.
    """
    if floor.txid <= 0 or not ends:
        return None
    short = [e for e in ends if e.highest is not None and e.highest < floor.txid]
    return short if len(short) >= majority_of(len(ends)) else None


def decided(ends: Sequence[NodeEnd], members: int, floor: int) -> bool:
    """True when these answers settle whether the journal is behind floor, whatever the
    other members of the journal would say."""
    need = majority_of(members)
    short = sum(1 for e in ends if e.highest is not None and e.highest < floor)
    reaching = sum(1 for e in ends if e.highest is not None and e.highest >= floor)
    return floor <= 0 or short >= need or reaching > members - need


def ends_text(short: Sequence[NodeEnd]) -> str:
    """The journal's end as the JournalNodes behind the floor report it."""
    end = max((e.highest or 0) for e in short) if short else 0
    return (
        f"its JournalNodes hold nothing after txid {end} ({', '.join(e.describe() for e in short)})"
    )


def behind_message(
    nn_name: str,
    uri: str,
    floor: Floor,
    journal_end: str,
    config: str,
    *,
    saved_image: int | None = None,
) -> str:
    """What happened and what to run, for the log, /status and a refused transition."""
    saved = (
        f" It saved its namespace as an image at txid {saved_image} in its name dir."
        if saved_image is not None
        else ""
    )
    return (
        f"the shared journal {uri} is behind NameNode {nn_name}: {journal_end}, but it "
        f"committed txid {floor.txid} ({floor.reason}). The journal went backwards (it was "
        "formatted, or its storage was restored from an older copy); following it would "
        f"lose every edit after its end. NameNode {nn_name} keeps its namespace and its "
        "name dir as they are, applies nothing from this journal and will not become "
        f"active on it.{saved} To go on, restore the JournalNodes' storage (this NameNode "
        f"goes on by itself once they hold txid {floor.txid}), or stop the NameNodes and "
        "re-initialize the shared journal from the name dir of the one that committed the "
        f"most: `qjm namenode initialize-shared-edits --config {config} --id {nn_name} "
        "--force`, then `qjm namenode bootstrap-standby --force` for the other one"
    )


def read_local_segments(current: Path) -> list[LocalSegment]:
    """The name dir's local edits files (blocking: call it off the event loop)."""
    if not current.is_dir():
        return []
    out = []
    for seg in list_segments(current):
        has_ops = True
        if seg.end is None:
            try:
                has_ops = seg.path.stat().st_size > HEADER_LEN
            except OSError:
                has_ops = False
        out.append(LocalSegment(seg.start, seg.end, seg.path.name, has_ops))
    return out


class JournalEndProbe:
    """Asks every JournalNode of the shared journal for its highest written txid."""

    def __init__(self, uri: QJournalUri, timeout_s: float = PROBE_TIMEOUT_S) -> None:
        self.uri = uri
        self.timeout_s = timeout_s
        self.clients = [JournalNodeClient(a) for a in uri.addresses]

    async def ends(self, floor: int | None = None) -> list[NodeEnd]:
        """Each JournalNode's end, in URI order (unknown where it did not say).

        With floor, it returns as soon as the answers decide whether the journal is behind
        it (decided()), so a node that hangs does not hold up a failover.
        """
        req = pb.GetJournalStatusRequestProto(jid=journal_id(self.uri.jid))

        async def one(client: JournalNodeClient) -> NodeEnd:
            try:
                st = await client.call("getJournalStatus", req, self.timeout_s)
            except (QjmError, OSError, TimeoutError) as e:
                return NodeEnd(client.address, None, f"no answer: {e}")
            if not st.is_formatted:
                return NodeEnd(client.address, None, "not formatted")
            if st.restored:
                return NodeEnd(client.address, None, "restored after losing its storage")
            return NodeEnd(client.address, int(st.highest_written_txid))

        tasks = {asyncio.ensure_future(one(c)): c for c in self.clients}
        got: dict[JournalNodeClient, NodeEnd] = {}
        pending = set(tasks)
        try:
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for t in done:
                    got[tasks[t]] = t.result()
                if floor is not None and decided(list(got.values()), len(self.clients), floor):
                    break
        finally:
            for t in pending:
                t.cancel()
        return [got.get(c) or NodeEnd(c.address, None, "no answer yet") for c in self.clients]

    async def close(self) -> None:
        """Close every connection."""
        await asyncio.gather(*(c.close() for c in self.clients), return_exceptions=True)
