"""JournalNodeSyncer: repair missing finalized segments (and a lost VERSION) from peers.

Every interval the syncer asks the next peer, round robin, for its journals; for each it
downloads the finalized segments this node lacks into edits.sync/, checks them, and moves
in only those at or below the committed txid. A journal whose storage was wiped gets its
VERSION back from the peer, with the peer's promised epoch, and then catches up.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

from qjm.client.rpc import JournalNodeClient
from qjm.config import parse_address
from qjm.editlog.segments import finalized_name, scan_file
from qjm.errors import QjmError
from qjm.journalnode.journal import Journal, download_segment
from qjm.journalnode.storage import NsInfo
from qjm.protocol import qjournal_pb2 as pb

if TYPE_CHECKING:
    from qjm.journalnode.node import JournalNode

log = logging.getLogger("qjm.journalnode.syncer")
RPC_TIMEOUT = 10.0


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

    async def run(self, stop: asyncio.Event) -> None:
        """Sync every interval until stop is set."""
        self.running = True
        try:
            while not stop.is_set():
                try:
                    await asyncio.wait_for(stop.wait(), self.interval)
                    break
                except TimeoutError:
                    pass
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
        client = JournalNodeClient(peer)
        try:
            status = await client.call("GetNodeStatus", pb.GetNodeStatusRequest(), RPC_TIMEOUT)
        finally:
            await client.close()
        host, _ = parse_address(peer, "peer")
        _, http_port = parse_address(status.http_address, "peer http address")
        base = f"http://{host}:{http_port}"
        installed = 0
        for journal in status.journals:
            if journal.is_formatted and journal.jid not in self.node.broken:
                installed += await self._sync_journal(journal, base)
        self.rounds += 1
        self.last_round = time.time()
        return installed

    async def _sync_journal(self, peer: pb.JournalStatus, base_url: str) -> int:
        jid = peer.jid
        ns = NsInfo.from_proto(peer.ns_info)
        restored = await self.node.run(
            jid, lambda j: j.restore_version(ns, peer.last_promised_epoch), create=True
        )
        if restored:
            log.warning("journal %s: storage was lost; VERSION re-created from %s", jid, base_url)
        finalized = [(s.start_txid, s.end_txid) for s in peer.segments if not s.is_in_progress]
        committed = peer.committed_txid if peer.HasField("committed_txid") else None
        mine: Journal = await self.node.journal(jid)
        if mine.ns_info is not None and (mine.ns_info.namespace_id, mine.ns_info.cluster_id) != (
            ns.namespace_id,
            ns.cluster_id,
        ):
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

    @staticmethod
    def _download(journal: Journal, base_url: str, start: int, end: int) -> Path:
        """Fetch one finalized segment into edits.sync/ and check it holds exactly start-end."""
        staging = journal.storage.sync_dir
        staging.mkdir(parents=True, exist_ok=True)
        tmp = staging / finalized_name(start, end)
        url = f"{base_url}/getJournal?jid={journal.jid}&segmentTxId={start}"
        download_segment(url, tmp)
        found = scan_file(tmp)
        if (found.first_txid, found.last_txid, found.end) != (start, end, "eof"):
            tmp.unlink(missing_ok=True)
            raise QjmError(
                f"segment {start}-{end} from {url} is not intact: it holds "
                f"{found.first_txid}-{found.last_txid} ({found.problem or found.end})"
            )
        return tmp
