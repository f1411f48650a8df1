"""The journal audit: every JournalNode's copy of each finalized segment, compared record
by record (pure; the qjm-journal-audit source runs one segment per Spark task).

A copy is `ok` when it holds the same records (opcode, txid, body) as the reference copy,
the one most nodes agree on; otherwise `differs` (naming the first differing txid),
`corrupt` (it does not parse: bad checksum, torn op), `unreadable` (the node did not
serve it) or `missing` (the node lists no such finalized segment although it answered).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import aiohttp

from qjm.client.edit_streams import ReadError, stream_ops
from qjm.client.journalnode_client import JournalNodeClient
from qjm.client.uri import parse_qjournal_uri
from qjm.config import QJournalSettings, parse_address
from qjm.errors import EditLogError, QjmError
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.qjournal import journal_id
from qjm.protocol.urls import get_journal_url
from qjm.security import tls

OK, DIFFERS, CORRUPT, UNREADABLE, MISSING = "ok", "differs", "corrupt", "unreadable", "missing"


@dataclass(frozen=True)
class SegmentCopies:
    """One finalized segment (start, end) and the URL of each node's copy (None: missing)."""

    jid: str
    start: int
    end: int
    copies: tuple[tuple[str, str | None], ...]  # (node address, /getJournal URL or None)
    http_timeout_s: float = 60.0


@dataclass(frozen=True)
class CopyResult:
    """What one node's copy of a segment holds."""

    node: str
    status: str
    ops: int = 0
    digest: str | None = None
    first_difference: int | None = None
    detail: str = ""


def _base_url(address: str, http_port: int, from_url: str = "") -> str:
    """The node's RPC host and HTTP port in its fromURL's scheme (https under HTTPS_ONLY)."""
    host, _ = parse_address(address, "JournalNode address")
    host = f"[{host}]" if ":" in host else host
    scheme = "https" if from_url.startswith("https://") else "http"
    return f"{scheme}://{host}:{http_port}"


async def _node_manifests(
    location: str, settings: QJournalSettings
) -> tuple[str, dict[str, pb.GetEditLogManifestResponseProto | BaseException]]:
    uri = parse_qjournal_uri(location)
    req = pb.GetEditLogManifestRequestProto(
        jid=journal_id(uri.jid), since_txid=1, in_progress_ok=False
    )
    wait = settings.select_input_streams_timeout_ms / 1000
    clients = [JournalNodeClient(a) for a in uri.addresses]
    try:
        answers = await asyncio.gather(
            *(c.call("getEditLogManifest", req, wait) for c in clients), return_exceptions=True
        )
    finally:
        await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)
    return uri.jid, dict(zip(uri.addresses, answers, strict=True))


def plan_audit(
    location: str, settings: QJournalSettings | None = None
) -> tuple[list[SegmentCopies], dict[str, str]]:
    """The finalized segments any node lists, each with every answering node's copy, and
    the nodes that did not answer (address -> error)."""
    cfg = settings or QJournalSettings()
    jid, answers = asyncio.run(_node_manifests(location, cfg))
    down = {
        a: f"{type(r).__name__}: {r}" for a, r in answers.items() if isinstance(r, BaseException)
    }
    up = {a: r for a, r in answers.items() if not isinstance(r, BaseException)}
    if not up:
        raise QjmError(
            f"no JournalNode of {location} answered: "
            + "; ".join(f"{a}: {e}" for a, e in down.items())
        )
    held: dict[tuple[int, int], dict[str, str]] = {}
    for address, a in up.items():
        base = _base_url(address, a.http_port, a.from_url)
        for log in a.manifest.logs:
            if log.is_in_progress:
                continue
            url = get_journal_url(base, jid, log.start_txid)
            held.setdefault((log.start_txid, log.end_txid), {})[address] = url
    plans = [
        SegmentCopies(
            jid,
            start,
            end,
            tuple((a, held[(start, end)].get(a)) for a in up),
            cfg.http_timeout_ms / 1000,
        )
        for start, end in sorted(held)
    ]
    return plans, down


async def _read_copy(session: aiohttp.ClientSession, url: str, start: int, end: int) -> list[bytes]:
    """Each record of a copy as opcode+txid+body bytes; raises on anything unreadable."""
    records = []
    async for op in stream_ops(session, url):
        records.append(op.opcode.to_bytes(1, "big") + op.txid.to_bytes(8, "big") + op.body)
        if op.txid >= end:
            break
    return records


def _digest(records: list[bytes]) -> str:
    h = hashlib.sha256()
    for r in records:
        h.update(len(r).to_bytes(4, "big"))
        h.update(r)
    return h.hexdigest()[:16]


def audit_segment(plan: SegmentCopies) -> list[CopyResult]:
    """Fetch every node's copy of the segment and compare their records."""

    async def fetch() -> dict[str, list[bytes] | CopyResult]:
        t = plan.http_timeout_s
        timeout = aiohttp.ClientTimeout(total=None, connect=t, sock_read=t)
        out: dict[str, list[bytes] | CopyResult] = {}
        async with aiohttp.ClientSession(timeout=timeout, connector=tls.connector()) as session:
            for node, url in plan.copies:
                if url is None:
                    out[node] = CopyResult(node, MISSING, detail="no such finalized segment")
                    continue
                try:
                    out[node] = await _read_copy(session, url, plan.start, plan.end)
                except (EditLogError, ReadError) as e:
                    out[node] = CopyResult(node, CORRUPT, detail=str(e))
                except (TimeoutError, aiohttp.ClientError) as e:
                    out[node] = CopyResult(node, UNREADABLE, detail=str(e) or type(e).__name__)
        return out

    fetched = asyncio.run(fetch())
    copies = {n: r for n, r in fetched.items() if isinstance(r, list)}
    digests = {n: _digest(r) for n, r in copies.items()}
    reference: list[bytes] = []
    if digests:
        best, _ = Counter(digests.values()).most_common(1)[0]
        reference = next(copies[n] for n, d in digests.items() if d == best)
    results = []
    for node, _ in plan.copies:
        got = fetched[node]
        if isinstance(got, CopyResult):
            results.append(got)
            continue
        expected_txids = plan.end - plan.start + 1
        problem = _compare(got, reference, plan.start, expected_txids)
        if problem is None:
            results.append(CopyResult(node, OK, len(got), digests[node]))
        else:
            txid, detail = problem
            results.append(CopyResult(node, DIFFERS, len(got), digests[node], txid, detail))
    return results


def _compare(
    got: list[bytes], reference: list[bytes], start: int, expected: int
) -> tuple[int | None, str] | None:
    """(first differing txid, what differs), or None when got is the reference and whole."""
    for i, (a, b) in enumerate(zip(got, reference, strict=False)):
        if a != b:
            what = "opcode" if a[0] != b[0] else "body"
            return start + i, f"txid {start + i}: its {what} differs from the other copies"
    if len(got) != len(reference):
        n = min(len(got), len(reference))
        return start + n, f"{len(got)} records, the other copies have {len(reference)}"
    if len(got) != expected:
        return start + len(got), f"{len(got)} records for txids {start}-{start + expected - 1}"
    return None


def audit_rows(plan: SegmentCopies) -> Iterator[dict[str, Any]]:
    """One AUDIT row per node copy of a segment."""
    for r in audit_segment(plan):
        yield {
            "segment_start": plan.start,
            "segment_end": plan.end,
            "node": r.node,
            "status": r.status,
            "ops": r.ops,
            "digest": r.digest,
            "first_difference_txid": r.first_difference,
            "detail": r.detail,
        }
