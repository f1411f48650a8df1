"""JournalNodeSyncer: repair missing finalized segments (and a lost VERSION) from peers.

Every interval (or sooner when a journal finds it lacks txids) the syncer asks every peer
for its journals. For each journal it downloads into edits.sync/ the finalized segments
that a majority of the journal's nodes hold, that this node lacks and that overlap none
of its own segments, checks them, and moves them in with the epoch that decided them
(design §J.6). A journal whose storage was wiped gets its VERSION back, with the highest
promised epoch of a majority of the nodes (never from fewer answers), and then catches up.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from qjm.config import format_address, parse_address
from qjm.editlog.file_names import finalized_name
from qjm.editlog.segments import scan_file
from qjm.errors import QjmError
from qjm.journalnode.journal import MAX_TXID, Journal, download_segment
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.namespace import NamespaceInfo, same_namespace
from qjm.protocol.qjournal import STATUS_PROTOCOL
from qjm.protocol.qjournal_client import QJournalClient
from qjm.protocol.quorum import majority_of
from qjm.protocol.urls import get_journal_url
from qjm.security import tls

if TYPE_CHECKING:
    from qjm.journalnode.node import JournalNode

log = logging.getLogger("qjm.journalnode.syncer")
RPC_TIMEOUT = 10.0
MIN_WOKEN_INTERVAL = 1.0  # seconds between rounds that segment-start refusals ask for

StatusOf = Callable[[str], Awaitable[pb.NodeStatusProto]]
Fetch = Callable[[str, Path], Awaitable[None]]


@dataclass(frozen=True)
class PeerCopy:
    """One peer's finalized copy of a segment: its range and the epoch that decided it."""

    peer: str
    start: int
    end: int
    decided_epoch: int | None


@dataclass(frozen=True)
class SyncPlan:
    """A segment to fetch: its range, the epoch to record, and the peers to fetch it from."""

    start: int
    end: int
    decided_epoch: int | None
    sources: tuple[str, ...]


def plan_sync(
    copies: Sequence[PeerCopy],
    occupied: Sequence[tuple[int, int]],
    committed_bound: int,
    nodes: int,
    *,
    every_peer_answered: bool = False,
) -> list[SyncPlan]:
    """The finalized segments this node may install from its peers' copies (design §J.6).

    A range qualifies when it ends at or below the committed bound, overlaps none of the
    occupied ranges, and either a majority of the journal's nodes (peers only: this node
    lacks it) hold a finalized copy of exactly that range, or every peer answered and no
    copy another peer holds overlaps it otherwise (another range, or the same range
    decided in another epoch). A copy only a minority holds while other copies contradict
    it, or while some peers are silent (a deposed writer's finalize on the one node that
    never heard of its successor), is never installed. It is fetched from the copies the
    newest epoch decided.
    """
    by_range: dict[tuple[int, int], list[PeerCopy]] = {}
    for c in copies:
        by_range.setdefault((c.start, c.end), []).append(c)
    need = majority_of(nodes)
    plans = []
    for (start, end), held in sorted(by_range.items()):
        if end > committed_bound or any(not (end < a or start > b) for a, b in occupied):
            continue
        if len({c.peer for c in held}) < need:
            epochs = {c.decided_epoch for c in held}
            uncontested = (
                every_peer_answered
                and len(epochs) == 1
                and not any(
                    (c.start, c.end) != (start, end) and not (end < c.start or start > c.end)
                    for c in copies
                )
            )
            if not uncontested:
                continue
        newest = max((c.decided_epoch or 0) for c in held)
        best = [c for c in held if (c.decided_epoch or 0) == newest]
        plans.append(SyncPlan(start, end, best[0].decided_epoch, tuple(c.peer for c in best)))
    return plans


def occupied_ranges(j: Journal) -> list[tuple[int, int]]:
    """The txid ranges this node's segments hold, as the syncer must leave them (§J.6).

    A finalized segment holds its range; the newest in-progress segment holds every
    txid from its start on (its writer may still add to it); an older in-progress one,
    which a later segment start superseded and no recovery will ask for again, holds
    nothing: a finalized copy a majority agrees on may be installed over its txids.
    """
    j.check_formatted()
    segments = j.files.segments()
    out: list[tuple[int, int]] = []
    for seg in segments:
        if seg.end is not None:
            out.append((seg.start, seg.end))
        elif j.files.is_latest_inprogress(seg, segments):
            out.append((seg.start, MAX_TXID))
    return out


def install_synced_segment(
    j: Journal, tmp: Path, start: int, end: int, decided_epoch: int | None = None
) -> bool:
    """Move a downloaded, checked segment into current/; False if it now overlaps ours.

    The epoch that decided it on its source is recorded with it (design §J.6).
    """
    j.check_formatted()
    if any(not (end < a or start > b) for a, b in occupied_ranges(j)):
        tmp.unlink(missing_ok=True)
        return False
    if decided_epoch is not None:
        # Before the file: a crash between the two leaves a record of a segment this
        # node lacks, which prepare_recovery refuses to answer about, not a segment
        # without its epoch.
        j.record_decision(start, end, decided_epoch, tmp.stat().st_size)
    final = j.files.install_finalized(tmp, start, end)
    if final is None:
        return False
    j.highest_written_txid = max(j.highest_written_txid, end)
    j.counters.segments_synced += 1
    j.counters.last_sync_timestamp = time.time()
    log.info("journal %s: synced segment %s from a peer", j.jid, final.name)
    return True


async def _download_over_http(url: str, dest: Path) -> None:
    await asyncio.get_running_loop().run_in_executor(None, download_segment, url, dest)


class JournalNodeSyncer:
    """Background repair of one JournalNode's journals from its peers."""

    def __init__(
        self,
        node: JournalNode,
        peers: list[str],
        interval: float,
        *,
        status_of: StatusOf | None = None,
        fetch: Fetch = _download_over_http,
    ) -> None:
        self.node = node
        self.peers = peers
        self.interval = interval
        self.running = False
        self.rounds = 0
        self.last_round = 0.0
        self._woken = asyncio.Event()
        self._status_of: StatusOf = status_of or _node_status
        self._fetch = fetch

    @property
    def nodes(self) -> int:
        """The journal's nodes: the peers and this one (quorums are majorities of these)."""
        return len(self.peers) + 1

    def wake(self) -> None:
        """Start the next round now (at most one a second): a journal lacks txids."""
        self._woken.set()

    async def _wait(self, stop: asyncio.Event) -> bool:
        """Wait for the interval, a wake-up or stop; True when stopped."""
        stopped = asyncio.ensure_future(stop.wait())
        woken = asyncio.ensure_future(self._woken.wait())
        try:
            await asyncio.wait(
                {stopped, woken}, timeout=self.interval, return_when="FIRST_COMPLETED"
            )
        finally:
            stopped.cancel()
            woken.cancel()
        if stop.is_set():
            return True
        if self._woken.is_set():
            self._woken.clear()
            wait = self.last_round + MIN_WOKEN_INTERVAL - time.time()
            if wait > 0:
                try:
                    async with asyncio.timeout(wait):
                        await stop.wait()
                    return True
                except TimeoutError:
                    pass
        return False

    async def run(self, stop: asyncio.Event) -> None:
        """Sync every interval, or sooner when woken, until stop is set."""
        self.running = True
        try:
            while not stop.is_set():
                if await self._wait(stop):
                    break
                try:
                    await self.sync_round()
                except (QjmError, OSError) as e:
                    log.warning("sync round failed: %s", e)
        finally:
            self.running = False

    async def _peer_status(self, peer: str) -> pb.NodeStatusProto | None:
        try:
            return await self._status_of(peer)
        except (QjmError, OSError) as e:
            log.info("peer %s did not answer: %s", peer, e)
            return None

    async def sync_round(self) -> int:
        """Ask every peer for its journals and sync each; return the segments installed."""
        if not self.peers:
            return 0
        answers = await asyncio.gather(*(self._peer_status(p) for p in self.peers))
        statuses = {p: st for p, st in zip(self.peers, answers, strict=True) if st is not None}
        by_jid: dict[str, dict[str, tuple[pb.JournalStatusProto, str]]] = {}
        # a peer reports the HTTP address clients use; its scheme follows the policy (§S.13)
        scheme = tls.http_scheme(self.node.security.http_policy)
        for peer, status in statuses.items():
            host, _ = parse_address(peer, "peer")
            _, http_port = parse_address(status.http_address, "peer http address")
            for journal in status.journals:
                if journal.is_formatted:
                    by_jid.setdefault(journal.jid, {})[peer] = (
                        journal,
                        f"{scheme}://{format_address(host, http_port)}",
                    )
        installed = 0
        for jid, peers in sorted(by_jid.items()):
            if jid in self.node.broken:
                continue
            try:
                installed += await self._sync_journal(jid, peers)
            except (QjmError, OSError) as e:  # one bad journal must not stop the others
                log.warning("journal %s: sync failed: %s", jid, e)
        self.rounds += 1
        self.last_round = time.time()
        return installed

    async def _sync_journal(
        self, jid: str, peers: Mapping[str, tuple[pb.JournalStatusProto, str]]
    ) -> int:
        if not await self.node.is_formatted(jid) and not await self._restore(jid, peers):
            return 0
        mine: Journal = await self.node.journal(jid)
        assert mine.ns_info is not None
        copies: list[PeerCopy] = []
        committed = [mine.committed_txid or 0]
        answered = 0
        for peer, (journal, base_url) in peers.items():
            ns = NamespaceInfo.from_proto(journal.ns_info)
            if not same_namespace(mine.ns_info, ns):
                log.warning(
                    "journal %s: peer %s is formatted for %s, this node for %s; not syncing "
                    "from it",
                    jid,
                    base_url,
                    ns.describe(),
                    mine.ns_info.describe(),
                )
                continue
            answered += 1
            if journal.HasField("committed_txid"):
                committed.append(journal.committed_txid)
            for s in journal.segments:
                if not s.is_in_progress:
                    epoch = s.decided_epoch if s.HasField("decided_epoch") else None
                    copies.append(PeerCopy(peer, s.start_txid, s.end_txid, epoch))
        occupied = await self.node.run(jid, occupied_ranges)
        plans = plan_sync(
            copies,
            occupied,
            max(committed),
            self.nodes,
            every_peer_answered=answered == len(self.peers),
        )
        installed = 0
        for plan in plans:
            tmp = await self._download(mine, peers[plan.sources[0]][1], plan.start, plan.end)
            install = functools.partial(
                install_synced_segment,
                tmp=tmp,
                start=plan.start,
                end=plan.end,
                decided_epoch=plan.decided_epoch,
            )
            if await self.node.run(jid, install):
                installed += 1
        return installed

    async def _restore(
        self, jid: str, peers: Mapping[str, tuple[pb.JournalStatusProto, str]]
    ) -> bool:
        """Re-create a lost VERSION with the highest promise a majority reports; True if done.

        The peers plus this node are the journal's members. Any writer's epoch was promised
        by a majority of them, and this node's own promise is lost, so a majority of *peers*
        must answer for their maximum to meet that writer's promise; from fewer answers we
        restore nothing. HDFS's syncer never restores a promise at all (a wiped node waits
        to be formatted); we restore it and the node then still waits for a new_epoch (its
        awaiting-new-epoch marker) before it takes writes, and does not vote in recovery
        until a writer starts a segment on it (design §J.5).
        """
        nodes = self.nodes
        need = majority_of(nodes)
        found = [(p, journal) for p, (journal, _) in peers.items()]
        if len(found) < need:
            log.warning(
                "journal %s: storage was lost, but only %d of the %d peer answers a majority "
                "of the %d nodes needs arrived; not restoring VERSION or the promise",
                jid,
                len(found),
                need,
                nodes,
            )
            return False
        names = {NamespaceInfo.from_proto(a.ns_info).describe() for _, a in found}
        if len(names) > 1:
            log.warning(
                "journal %s: storage was lost, but peers are formatted for different "
                "namespaces (%s); not restoring VERSION or the promise",
                jid,
                "; ".join(
                    f"{p}: {NamespaceInfo.from_proto(a.ns_info).describe()}" for p, a in found
                ),
            )
            return False
        member_sets = {tuple(sorted(a.members)) for _, a in found}
        if len(member_sets) > 1:
            log.warning(
                "journal %s: storage was lost, but peers name different members (%s); not "
                "restoring VERSION or the promise",
                jid,
                "; ".join(f"{p}: {sorted(a.members)}" for p, a in found),
            )
            return False
        ns = NamespaceInfo.from_proto(found[0][1].ns_info)
        promise = max(a.last_promised_epoch for _, a in found)
        agreed = list(member_sets.pop())
        restored = await self.node.run(
            jid, lambda j: _restore_journal(j, ns, promise, agreed), create=True
        )
        if restored:
            log.warning(
                "journal %s: storage was lost; VERSION re-created with promised epoch %d, the "
                "highest of %s",
                jid,
                promise,
                ", ".join(f"{p}: {a.last_promised_epoch}" for p, a in found),
            )
        return True

    async def _download(self, journal: Journal, base_url: str, start: int, end: int) -> Path:
        """Fetch one finalized segment into edits.sync/ and check it holds exactly start-end."""
        staging = journal.storage.sync_dir
        staging.mkdir(parents=True, exist_ok=True)
        tmp = staging / finalized_name(start, end)
        ns = journal.ns_info.to_proto() if journal.ns_info is not None else None
        url = get_journal_url(base_url, journal.jid, start, ns_info=ns)
        await self._fetch(url, tmp)
        found = await asyncio.get_running_loop().run_in_executor(None, scan_file, tmp)
        if (found.first_txid, found.last_txid, found.end) != (start, end, "eof"):
            tmp.unlink(missing_ok=True)
            raise QjmError(
                f"segment {start}-{end} from {url} is not intact: it holds "
                f"{found.first_txid}-{found.last_txid} ({found.problem or found.end})"
            )
        return tmp


async def _node_status(peer: str) -> pb.NodeStatusProto:
    """A peer JournalNode's status, over its status protocol."""
    client = QJournalClient(peer, STATUS_PROTOCOL)
    try:
        status: pb.NodeStatusProto = await client.call(
            "getNodeStatus", pb.GetNodeStatusRequestProto(), RPC_TIMEOUT
        )
        return status
    finally:
        await client.close()


def _restore_journal(journal: Journal, ns: NamespaceInfo, promise: int, members: list[str]) -> bool:
    """Re-create VERSION, the promise and the member list the peers agree on (journal thread)."""
    return journal.restore_version(ns, promise, members)
