"""Reading a quorum journal: manifests merged from a majority, redundant segment streams,
and millisecond tailing of committed in-progress edits from the JournalNodes' memory.

Only durable edits are returned: a txid is read only when a majority of JournalNodes hold
it and the writer has reported it committed, so a reader never sees a tail that a later
recovery could discard.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import aiohttp

from qjm.client.decisions import (
    CachedEdits,
    NodeManifest,
    Segment,
    current_writers,
    durable_cached_run,
    merge_manifests,
)
from qjm.client.edit_streams import ReadError, SegmentSource, read_segment
from qjm.client.journalnode_client import JournalNodeClient
from qjm.client.quorum_call import QuorumCall, QuorumError, call_all, majority_of
from qjm.client.uri import QJournalUri
from qjm.config import QJournalSettings, parse_address
from qjm.editlog.framing import RawOp, iter_ops, read_header
from qjm.editlog.segments import txid_run
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.qjournal import journal_id
from qjm.protocol.urls import get_journal_url
from qjm.security import tls
from qjm.security.http import client_middlewares

log = logging.getLogger("qjm.client.reader")
MAX_TXNS_PER_RPC = 5000  # HDFS's dfs.ha.tail-edits.qjm.rpc.max-txns
MANIFEST_RETRY_S = 0.5  # pause before asking for the manifest again
MANIFEST_MIN_WAIT_S = 1.0  # the least time an attempt gives the nodes to answer
T = TypeVar("T")
__all__ = ["IncompleteReadError", "Manifest", "QuorumJournalReader", "current_writers"]


@dataclass(frozen=True)
class Manifest:
    """The segments a majority of JournalNodes reported, merged, and the committed txid."""

    segments: list[SegmentSource]
    committed_txid: int | None

    def last_txid(self) -> int:
        """The last readable txid (0 when there is none)."""
        return self.segments[-1].end if self.segments else 0


class IncompleteReadError(ReadError):
    """Committed txids that no majority of the answering JournalNodes holds."""


def _node_manifest(a: pb.GetEditLogManifestResponseProto) -> NodeManifest:
    """A manifest answer as the plain record the merge decision takes."""
    logs = a.manifest.logs
    return NodeManifest(
        tuple(Segment(s.start_txid, s.end_txid, s.is_in_progress) for s in logs),
        a.manifest.committed_txid if a.manifest.HasField("committed_txid") else None,
        a.last_writer_epoch,
        a.last_promised_epoch,
        {s.start_txid: s.decided_epoch for s in logs if s.HasField("decided_epoch")},
        a.restored,
    )


def _cached_edits(a: pb.GetJournaledEditsResponseProto) -> CachedEdits:
    """A getJournaledEdits answer as the plain record the read decision takes."""
    return CachedEdits(
        a.txn_count,
        a.committed_txid if a.HasField("committed_txid") else None,
        a.last_writer_epoch,
        a.last_promised_epoch,
        a.restored,
    )


class QuorumJournalReader:
    """Reads the edits of one journal from its JournalNodes."""

    def __init__(
        self,
        uri: QJournalUri,
        settings: QJournalSettings | None = None,
        *,
        client_factory: Callable[[str], Any] = JournalNodeClient,
        ns_info: pb.NamespaceInfoProto | None = None,
    ) -> None:
        self.uri = uri
        self.settings = settings or QJournalSettings()
        # Named in every segment URL when known: a node formatted for another namespace
        # then refuses to serve it (HDFS's storageInfo).
        self.ns_info = ns_info
        self.clients: list[JournalNodeClient] = [client_factory(a) for a in uri.addresses]
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
                timeout=aiohttp.ClientTimeout(total=None, connect=t, sock_read=t),
                middlewares=client_middlewares(),  # SPNEGO under Kerberos (design §S.5)
                connector=tls.connector(),  # https verified against ssl_ca (design §S.13)
            )
        return self._session

    def _base_url(self, client: JournalNodeClient, http_port: int, from_url: str = "") -> str:
        """The node's RPC host and reported HTTP port, in the scheme of its fromURL (https
        under HTTPS_ONLY, design §S.13), as HDFS's IPCLoggerChannel."""
        host, _ = parse_address(client.address, "JournalNode address")
        host = f"[{host}]" if ":" in host else host
        scheme = "https" if from_url.startswith("https://") else "http"
        return f"{scheme}://{host}:{http_port}"

    # -- manifests and streams ----------------------------------------------------------------
    async def _ask_all(
        self, call: QuorumCall[JournalNodeClient, T], wait_s: float
    ) -> dict[JournalNodeClient, T]:
        """Every answer that arrives within wait_s (not only the first majority's).

        Deciding on the first majority lets a lagging node cut the read short; waiting for
        every node within the deadline sees the longest copies. Fails without a majority.
        """
        n = len(self.clients)
        answers = await call.wait_for_every_answer(wait_s)
        if len(answers) < self.majority:
            raise QuorumError(
                f"{call.operation}: only {len(answers)} of {n} JournalNodes answered, "
                f"short of quorum size {self.majority}/{n}: {call.describe()}",
                {str(k): e for k, e in call.errors.items()},
            )
        return answers

    async def manifest(
        self,
        since_txid: int = 1,
        in_progress_ok: bool = False,
        wait_s: float | None = None,
        until_txid: int | None = None,
    ) -> Manifest:
        """Merge the segment lists of every node that answers; in-progress ends are cut to
        what a majority of the writer's nodes holds and the writer reported committed."""
        req = pb.GetEditLogManifestRequestProto(
            jid=journal_id(self.uri.jid), since_txid=since_txid, in_progress_ok=in_progress_ok
        )
        wait = self.settings.select_input_streams_timeout_ms / 1000 if wait_s is None else wait_s
        call = call_all(
            "getEditLogManifest()", self.clients, lambda c: c.call("getEditLogManifest", req, wait)
        )
        answers: dict[JournalNodeClient, pb.GetEditLogManifestResponseProto] = await self._ask_all(
            call, wait
        )
        merged = merge_manifests(
            {c: _node_manifest(a) for c, a in answers.items()}, len(self.clients)
        )
        for note in merged.notes:
            log.warning("%s", note)
        current, committed = merged.current, merged.committed_txid
        segments = [
            SegmentSource(
                seg.start,
                seg.end,
                seg.in_progress,
                tuple(
                    get_journal_url(
                        self._base_url(c, answers[c].http_port, answers[c].from_url),
                        self.uri.jid,
                        seg.start,
                        in_progress_ok=seg.in_progress,
                        ns_info=self.ns_info,
                    )
                    for c in seg.holders
                ),
            )
            for seg in merged.segments
        ]
        chain = self._chain(segments, since_txid)
        manifest = Manifest(chain, committed)
        # A committed txid above what the answers can return is missing, also when fewer
        # than a majority is at the writer's epoch (a node away, another stale, or a new
        # writer taking over): never a silent prefix. The caller asks again until its
        # deadline, by which a take-over has finalized the segment holding them.
        if in_progress_ok and committed is not None and manifest.last_txid() < committed:
            first = max(manifest.last_txid() + 1, since_txid)
            wanted = committed if until_txid is None else min(committed, until_txid)
            if first <= wanted:
                raise IncompleteReadError(
                    f"txids {first}-{wanted} of journal {self.uri.jid!r} are committed but "
                    f"fewer than {self.majority} of the writer's JournalNodes that answered "
                    f"hold them ({len(current)} of {len(answers)} answering nodes are at the "
                    f"writer's epoch): {call.describe()}"
                )
        return manifest

    @staticmethod
    def _chain(segments: list[SegmentSource], since_txid: int) -> list[SegmentSource]:
        """The contiguous run of segments from the one holding since_txid."""
        run = txid_run(segments, since_txid)
        if run.gaps:
            first, last = run.gaps[0]
            if first == since_txid:
                raise ReadError(
                    f"no JournalNode of a majority holds txid {since_txid} (the first segment "
                    f"after it starts at {last + 1})"
                )
            raise ReadError(f"no JournalNode of a majority holds txids {first}-{last}")
        return run.segments

    async def _complete_manifest(
        self, from_txid: int, in_progress_ok: bool, to_txid: int | None
    ) -> Manifest:
        """manifest(), asked again until the deadline while committed txids are missing.

        Answers taken while a writer writes may race it, and a node that holds them may
        be briefly unreachable; only at the deadline does the read fail, naming them.
        """
        wait = self.settings.select_input_streams_timeout_ms / 1000
        deadline = time.monotonic() + wait
        incomplete: IncompleteReadError | None = None
        while True:
            try:
                left = max(deadline - time.monotonic(), min(wait, MANIFEST_MIN_WAIT_S))
                return await self.manifest(from_txid, in_progress_ok, left, to_txid)
            except IncompleteReadError as e:
                incomplete = e
            except QuorumError:
                if incomplete is None:
                    raise
                raise incomplete from None  # what is missing says more than who is slow
            left = deadline - time.monotonic()
            if left <= 0:
                raise incomplete
            log.info("reading from txid %d: %s; asking again", from_txid, incomplete)
            await asyncio.sleep(min(MANIFEST_RETRY_S, left))

    async def read(
        self, from_txid: int = 1, in_progress_ok: bool = False, to_txid: int | None = None
    ) -> AsyncIterator[RawOp]:
        """Every durable op from from_txid on, in txid order, from any node holding it.

        With in_progress_ok, it is everything up to the committed txid, or an error naming
        the committed txids no majority of the answering nodes holds.
        """
        if from_txid < 1:
            raise ReadError(f"the first txid to read must be at least 1, got {from_txid}")
        if to_txid is not None and to_txid < from_txid:
            raise ReadError(f"nothing to read: --to {to_txid} is before --from {from_txid}")
        manifest = await self._complete_manifest(from_txid, in_progress_ok, to_txid)
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

        Raises QuorumError when a majority cannot answer from memory (a cache miss), or
        nothing usable came back although committed edits may be on disk, so the caller
        falls back to streaming segments.
        """
        req = pb.GetJournaledEditsRequestProto(
            jid=journal_id(self.uri.jid), since_txid=since_txid, max_txns=max_txns, wait_ms=wait_ms
        )
        wait = self.settings.select_input_streams_timeout_ms / 1000 + wait_ms / 1000
        call = call_all(
            "getJournaledEdits()", self.clients, lambda c: c.call("getJournaledEdits", req, wait)
        )
        deadline = time.monotonic() + wait
        answers: dict[
            JournalNodeClient, pb.GetJournaledEditsResponseProto
        ] = await call.wait_for_quorum(wait)
        count, source = self._cached_run(answers, since_txid, max_txns)
        if len(current_writers(answers)) < self.majority < len(self.clients):
            # The first majority holds a node of an older writer: hear the others too.
            answers = await call.wait_for_every_answer(max(deadline - time.monotonic(), 0))
            count, source = self._cached_run(answers, since_txid, max_txns)
        if count <= 0 or source is None:
            self._check_nothing_cached(call, answers, since_txid)
            return []
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

    def _check_nothing_cached(
        self,
        call: QuorumCall[JournalNodeClient, pb.GetJournaledEditsResponseProto],
        answers: dict[JournalNodeClient, pb.GetJournaledEditsResponseProto],
        since_txid: int,
    ) -> None:
        """Raise QuorumError when no cached op came back but the nodes may hold some on disk.

        Fewer than a majority of current nodes answering from memory (a restarted node's
        empty cache, a stale node), or a current node reporting a committed txid from
        since_txid on: the caller streams segments rather than wait for edits forever.
        """
        current = current_writers(answers)
        committed = max(
            (
                a.committed_txid
                for c, a in answers.items()
                if c in current and a.HasField("committed_txid")
            ),
            default=0,
        )
        if len(current) >= self.majority and committed < since_txid:
            return  # nothing committed from since_txid yet: an empty answer is the answer
        raise QuorumError(
            f"getJournaledEdits(): no cached edits from txid {since_txid} on a majority of "
            f"the writer's JournalNodes ({len(current)} of {len(answers)} answering nodes "
            f"at the writer's epoch, committed txid {committed or 'unknown'}): "
            f"{call.describe()}",
            {str(k): e for k, e in call.errors.items()},
        )

    def _cached_run(
        self,
        answers: dict[JournalNodeClient, pb.GetJournaledEditsResponseProto],
        since_txid: int,
        max_txns: int,
    ) -> tuple[int, pb.GetJournaledEditsResponseProto | None]:
        """How many cached ops from since_txid are durable, and a node to take them from."""
        count, key = durable_cached_run(
            {c: _cached_edits(a) for c, a in answers.items()},
            since_txid,
            max_txns,
            len(self.clients),
        )
        return count, (None if key is None else answers[key])

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
                try:
                    last = next_txid + max_txns - 1
                    batch = [op async for op in self.read(next_txid, True, last)]
                except IncompleteReadError as e:  # a lagging node while another is away
                    log.warning("tailing from txid %d: %s", next_txid, e)
                    batch = []
                if not batch:
                    await asyncio.sleep(wait_ms / 1000)
            if batch:
                yield batch
                next_txid = batch[-1].txid + 1
