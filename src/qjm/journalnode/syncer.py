"""JournalNodeSyncer: repair missing finalized segments (and a lost VERSION) from peers.

Every interval the syncer asks the next peer, round robin, for its journals; for each it
downloads the finalized segments this node lacks into edits.sync/, checks them, and moves
in only those at or below the committed txid. A journal whose storage was wiped gets its
VERSION back, with the highest promised epoch of a majority of the nodes (never from
fewer answers), and then catches up.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

from qjm.config import parse_address
from qjm.editlog.segments import finalized_name, scan_file
from qjm.errors import QjmError
from qjm.journalnode.journal import Journal, download_segment
from qjm.journalnode.storage import NsInfo, atomic_write
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.namespace import same_namespace
from qjm.protocol.qjournal import STATUS_PROTOCOL
from qjm.protocol.qjournal_client import QJournalClient
from qjm.protocol.urls import get_journal_url

if TYPE_CHECKING:
    from qjm.journalnode.node import JournalNode

log = logging.getLogger("qjm.journalnode.syncer")
RPC_TIMEOUT = 10.0
MIN_WOKEN_INTERVAL = 1.0  # seconds between rounds that segment-start refusals ask for
MEMBERS_FILE = "members"


class JournalSyncer:
    """Background repair of one JournalNode's journals from its peers."""

    def __init__(self, node: JournalNode, peers: list[str], interval: float) -> None:
        self.node = node
        self.peers = peers
        self.interval = interval
        self.running = False
        self.rounds = 0
        self.last_round = 0.0
        self._next = 0
        self._woken = asyncio.Event()

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

    async def sync_round(self) -> int:
        """Sync from the next peer; return the number of segments installed."""
        if not self.peers:
            return 0
        peer = self.peers[self._next % len(self.peers)]
        self._next += 1
        status = await _node_status(peer)
        host, _ = parse_address(peer, "peer")
        _, http_port = parse_address(status.http_address, "peer http address")
        base = f"http://{host}:{http_port}"
        installed = 0
        for journal in status.journals:
            if not journal.is_formatted or journal.jid in self.node.broken:
                continue
            try:
                installed += await self._sync_journal(journal, base)
            except (QjmError, OSError) as e:  # one bad journal must not stop the others
                log.warning("journal %s: sync from %s failed: %s", journal.jid, peer, e)
        self.rounds += 1
        self.last_round = time.time()
        return installed

    async def _sync_journal(self, peer: pb.JournalStatusProto, base_url: str) -> int:
        jid = peer.jid
        ns = NsInfo.from_proto(peer.ns_info)
        if not await self.node.is_formatted(jid) and not await self._restore(jid):
            return 0
        finalized = [(s.start_txid, s.end_txid) for s in peer.segments if not s.is_in_progress]
        committed = peer.committed_txid if peer.HasField("committed_txid") else None
        mine: Journal = await self.node.journal(jid)
        if mine.ns_info is not None and not same_namespace(mine.ns_info, ns):
            log.warning(
                "journal %s: peer %s is formatted for %s, this node for %s; not syncing",
                jid,
                base_url,
                ns.describe(),
                mine.ns_info.describe(),
            )
            return 0
        missing = await self.node.run(jid, lambda j: j.missing_segments(finalized, committed))
        installed = 0
        for start, end in missing:
            tmp = await asyncio.get_running_loop().run_in_executor(
                None, self._download, mine, base_url, start, end
            )
            install = functools.partial(
                Journal.install_synced_segment, tmp=tmp, start=start, end=end
            )
            if await self.node.run(jid, install):
                installed += 1
        return installed

    async def _restore(self, jid: str) -> bool:
        """Re-create a lost VERSION with the highest promise a majority reports; True if done.

        The peers plus this node are the journal's members. Any writer's epoch was promised
        by a majority of them, and this node's own promise is lost, so a majority of *peers*
        must answer for their maximum to meet that writer's promise; from fewer answers we
        restore nothing (issue 8, A4). HDFS's syncer never restores a promise at all (a wiped
        node waits to be formatted); we restore it and the node then still waits for a
        new_epoch (its awaiting-new-epoch marker) before it takes writes or votes.
        """
        nodes = len(self.peers) + 1
        need = nodes // 2 + 1
        answers = await asyncio.gather(*(self._peer_journal(p, jid) for p in self.peers))
        found = [(p, a) for p, a in zip(self.peers, answers, strict=True) if a is not None]
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
        names = {NsInfo.from_proto(a.ns_info).describe() for _, a in found}
        if len(names) > 1:
            log.warning(
                "journal %s: storage was lost, but peers are formatted for different "
                "namespaces (%s); not restoring VERSION or the promise",
                jid,
                "; ".join(f"{p}: {NsInfo.from_proto(a.ns_info).describe()}" for p, a in found),
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
        ns = NsInfo.from_proto(found[0][1].ns_info)
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

    @staticmethod
    async def _peer_journal(peer: str, jid: str) -> pb.JournalStatusProto | None:
        """A peer's status of one formatted journal, or None if it does not answer with one."""
        try:
            status = await _node_status(peer)
        except (QjmError, OSError) as e:
            log.info("journal %s: peer %s did not answer: %s", jid, peer, e)
            return None
        for journal in status.journals:
            if journal.jid == jid and journal.is_formatted:
                return journal
        return None

    @staticmethod
    def _download(journal: Journal, base_url: str, start: int, end: int) -> Path:
        """Fetch one finalized segment into edits.sync/ and check it holds exactly start-end."""
        staging = journal.storage.sync_dir
        staging.mkdir(parents=True, exist_ok=True)
        tmp = staging / finalized_name(start, end)
        ns = journal.ns_info.to_proto() if journal.ns_info is not None else None
        url = get_journal_url(base_url, journal.jid, start, ns_info=ns)
        download_segment(url, tmp)
        found = scan_file(tmp)
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


def _restore_journal(journal: Journal, ns: NsInfo, promise: int, members: list[str]) -> bool:
    """Re-create VERSION, the promise and the member list the peers agree on (journal thread)."""
    if journal.ns_info is not None:
        return False
    if members:  # current/members as format writes it: sorted host:port, one per line
        journal.storage.current.mkdir(parents=True, exist_ok=True)
        text = "".join(f"{m}\n" for m in sorted(members))
        atomic_write(journal.storage.current / MEMBERS_FILE, text.encode())
    return journal.restore_version(ns, promise)
