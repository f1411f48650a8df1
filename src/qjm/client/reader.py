"""Reading a quorum journal: manifests merged from a majority, redundant segment streams,
and millisecond tailing of committed in-progress edits from the JournalNodes' memory.

Only durable edits are returned: a txid is read only when a majority of JournalNodes hold
it and the writer has reported it committed, so a reader never sees a tail that a later
recovery could discard.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp

from qjm.client.edit_streams import ReadError, SegmentSource, read_segment
from qjm.client.quorum_call import QuorumCall, QuorumError, majority_of
from qjm.client.rpc import JournalNodeClient
from qjm.client.uri import QJournalUri
from qjm.config import QJournalSettings, parse_address
from qjm.editlog.framing import RawOp, iter_ops, read_header
from qjm.protocol import qjournal_pb2 as pb

log = logging.getLogger("qjm.client.reader")
MAX_TXNS_PER_RPC = 5000  # HDFS's dfs.ha.tail-edits.qjm.rpc.max-txns


@dataclass(frozen=True)
class Manifest:
    """The segments a majority of JournalNodes reported, merged, and the committed txid."""

    segments: list[SegmentSource]
    committed_txid: int | None
    responders: int

    def last_txid(self) -> int:
        """The last readable txid (0 when there is none)."""
        return self.segments[-1].end if self.segments else 0


class QuorumJournalReader:
    """Reads the edits of one journal from its JournalNodes."""

    def __init__(self, uri: QJournalUri, settings: QJournalSettings | None = None) -> None:
        self.uri = uri
        self.settings = settings or QJournalSettings()
        self.clients = [JournalNodeClient(a) for a in uri.addresses]
        self._session: aiohttp.ClientSession | None = None
        self.majority = majority_of(len(self.clients))

    async def __aenter__(self) -> QuorumJournalReader:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close every connection."""
        if self._session is not None:
            await self._session.close()
            self._session = None
        await asyncio.gather(*(c.close() for c in self.clients))

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            t = self.settings.http_timeout_ms / 1000
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=None, connect=t, sock_read=t)
            )
        return self._session

    def _base_url(self, client: JournalNodeClient, http_port: int) -> str:
        host, _ = parse_address(client.address, "JournalNode address")
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{http_port}"

    # -- manifests and streams ----------------------------------------------------------------
    async def manifest(self, since_txid: int = 1, in_progress_ok: bool = False) -> Manifest:
        """Merge the segment lists of a majority; in-progress ends are cut to what is durable."""
        req = pb.GetEditLogManifestRequest(
            jid=self.uri.jid, since_txid=since_txid, in_progress_ok=in_progress_ok
        )
        wait = self.settings.select_input_streams_timeout_ms / 1000
        call = QuorumCall(
            "getEditLogManifest()",
            {c: c.call("GetEditLogManifest", req, wait) for c in self.clients},
        )
        answers: dict[
            JournalNodeClient, pb.GetEditLogManifestResponse
        ] = await call.wait_for_quorum(wait)
        committed_values = [
            a.committed_txid for a in answers.values() if a.HasField("committed_txid")
        ]
        committed = max(committed_values) if committed_values else None
        finalized: dict[int, dict[int, list[str]]] = {}
        open_ends: dict[int, dict[JournalNodeClient, int]] = {}
        for client, answer in answers.items():
            base = self._base_url(client, answer.http_port)
            for seg in answer.logs:
                if seg.is_in_progress:
                    open_ends.setdefault(seg.start_txid, {})[client] = seg.end_txid
                else:
                    url = f"{base}/getJournal?jid={self.uri.jid}&segmentTxId={seg.start_txid}"
                    finalized.setdefault(seg.start_txid, {}).setdefault(seg.end_txid, []).append(
                        url
                    )
        segments: dict[int, SegmentSource] = {}
        for start, by_end in finalized.items():
            if len(by_end) > 1:
                raise ReadError(
                    f"JournalNodes disagree on where finalized segment {start} ends: "
                    + "; ".join(f"{e} on {len(u)} node(s)" for e, u in sorted(by_end.items()))
                )
            ((end, urls),) = by_end.items()
            segments[start] = SegmentSource(start, end, False, tuple(urls))
        for start, ends in open_ends.items():
            if start in segments:
                continue  # finalized on some node: that copy wins
            absent = [start - 1] * (len(answers) - len(ends))
            durable = sorted([*ends.values(), *absent], reverse=True)[self.majority - 1]
            # Nothing of an open segment is durable before the writer reports a commit.
            durable = min(durable, committed) if committed is not None else start - 1
            if durable < start:
                continue
            open_urls = tuple(
                f"{self._base_url(c, answers[c].http_port)}/getJournal?jid={self.uri.jid}"
                f"&segmentTxId={start}&inProgressOk=true"
                for c, end in ends.items()
                if end >= durable
            )
            segments[start] = SegmentSource(start, durable, True, open_urls)
        chain = self._chain(sorted(segments.values(), key=lambda s: s.start), since_txid)
        return Manifest(chain, committed, len(answers))

    @staticmethod
    def _chain(segments: list[SegmentSource], since_txid: int) -> list[SegmentSource]:
        """The contiguous run of segments from the one holding since_txid."""
        out: list[SegmentSource] = []
        for seg in segments:
            if seg.end < since_txid:
                continue
            if out and seg.start != out[-1].end + 1:
                if seg.start <= out[-1].end:
                    continue  # a stale overlapping in-progress segment
                raise ReadError(
                    f"no JournalNode of a majority holds txids {out[-1].end + 1}-{seg.start - 1}"
                )
            if not out and seg.start > since_txid:
                raise ReadError(
                    f"no JournalNode of a majority holds txid {since_txid} (the first segment "
                    f"after it starts at {seg.start})"
                )
            out.append(seg)
        return out

    async def read(
        self, from_txid: int = 1, in_progress_ok: bool = False, to_txid: int | None = None
    ) -> AsyncIterator[RawOp]:
        """Every durable op from from_txid on, in txid order, from any node holding it."""
        manifest = await self.manifest(from_txid, in_progress_ok)
        for seg in manifest.segments:
            async for op in read_segment(self._http(), seg, from_txid, to_txid):
                yield op
            if to_txid is not None and seg.end >= to_txid:
                return

    # -- tailing -----------------------------------------------------------------------------------
    async def read_journaled(
        self, since_txid: int, max_txns: int = MAX_TXNS_PER_RPC, wait_ms: int = 0
    ) -> list[RawOp]:
        """Committed ops from the nodes' memory: as many as a majority holds (maybe none).

        Raises QuorumError when a majority cannot answer from memory (a cache miss), so the
        caller falls back to streaming segments.
        """
        req = pb.GetJournaledEditsRequest(
            jid=self.uri.jid, since_txid=since_txid, max_txns=max_txns, wait_ms=wait_ms
        )
        wait = self.settings.select_input_streams_timeout_ms / 1000 + wait_ms / 1000
        call = QuorumCall(
            "getJournaledEdits()",
            {c: c.call("GetJournaledEdits", req, wait) for c in self.clients},
        )
        answers: dict[JournalNodeClient, pb.GetJournaledEditsResponse] = await call.wait_for_quorum(
            wait
        )
        counts = sorted((a.txn_count for a in answers.values()), reverse=True)
        count = counts[self.majority - 1]
        committed = max(
            (a.committed_txid for a in answers.values() if a.HasField("committed_txid")),
            default=since_txid - 1,
        )
        count = min(count, committed - since_txid + 1)
        if count <= 0:
            return []
        source = next(a for a in answers.values() if a.txn_count >= count)
        read_header(source.edit_log)
        ops = []
        for op in iter_ops(source.edit_log):
            ops.append(op)
            if len(ops) == count:
                break
        if len(ops) != count or ops[0].txid != since_txid:
            raise ReadError(
                f"a JournalNode's cached edits from txid {since_txid} are not what it reported"
            )
        return ops

    async def tail(
        self, from_txid: int, wait_ms: int = 1000, max_txns: int = MAX_TXNS_PER_RPC
    ) -> AsyncIterator[list[RawOp]]:
        """Follow committed edits from from_txid as they arrive, one batch at a time."""
        next_txid = from_txid
        while True:
            try:
                batch = await self.read_journaled(next_txid, max_txns, wait_ms)
            except QuorumError as e:
                log.debug("tailing from txid %d falls back to streaming: %s", next_txid, e)
                batch = [op async for op in self.read(next_txid, True, next_txid + max_txns - 1)]
                if not batch:
                    await asyncio.sleep(wait_ms / 1000)
            if batch:
                yield batch
                next_txid = batch[-1].txid + 1
