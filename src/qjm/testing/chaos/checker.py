"""The chaos run's checks: what the active holds against the history, reads against the
history, the standby against the active, the JournalNodes' finalized segments against each
other, and no write acknowledged while a quorum of JournalNodes was down.

The comparisons are pure functions; reading the JournalNodes' segment files is the only I/O.
"""

from __future__ import annotations

import bisect
import hashlib
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from qjm.editlog.framing import HEADER_LEN, iter_ops
from qjm.editlog.segments import list_segments
from qjm.errors import QjmError
from qjm.namenode.types import FileStatus
from qjm.testing.chaos.history import CallRecord
from qjm.testing.chaos.model import Entry, SubtreeModel, is_under

MAX_SHOWN = 5  # differences shown per violation


@dataclass
class Violation:
    """A broken promise: its kind, what was found, and the evidence (calls, files, logs)."""

    kind: str
    message: str
    evidence: list[str] = field(default_factory=list)
    action: int = -1  # the nemesis action it was found during (-1: none)
    when: str = ""  # where in the run, when not during an action

    def text(self, seed: int) -> str:
        """The violation as lines for the report."""
        where = f"action {self.action + 1}" if self.action >= 0 else self.when or "the run"
        lines = [f"VIOLATION [{self.kind}] seed {seed}, {where}: {self.message}"]
        lines += [f"    {e}" for e in self.evidence]
        return "\n".join(lines)


# ---- the namespace


def entries_below(tree: Mapping[str, FileStatus], root: str) -> dict[str, Entry]:
    """path -> Entry of the statuses at or below root."""
    return {
        p: ("d" if s.is_dir else "f", s.permission & 0o7777)
        for p, s in tree.items()
        if is_under(p, root)
    }


def check_namespace(
    models: Sequence[SubtreeModel], tree: Mapping[str, FileStatus], top: str
) -> list[Violation]:
    """What the active holds below top (every path -> status, as a walk gives it) against
    every client's model: nothing lost, nothing never attempted."""
    out: list[Violation] = []
    roots = {m.root for m in models}
    strays = [p for p in tree if is_under(p, top) and p != top and _owner(p, roots) is None]
    for p in sorted(strays)[:MAX_SHOWN]:
        out.append(Violation("never attempted", f"{p} exists outside every client's subtree"))
    for m in models:
        for v in m.check_holds(entries_below(tree, m.root)):
            out.append(Violation(v.kind, v.message))
    return out


def _owner(path: str, roots: Iterable[str]) -> str | None:
    return next((r for r in roots if is_under(path, r)), None)


def check_reads(reads: Iterable[CallRecord], models: Mapping[int, SubtreeModel]) -> list[Violation]:
    """Every answered read against its owner's history: the answer must be one the path
    had at some moment between the call and its answer."""
    out: list[Violation] = []
    for r in reads:
        if r.seen is None or r.owner is None:
            continue
        model = models[r.owner]
        if not model.may_see(r.path, r.invoked, r.completed, r.seen):
            window = [
                model.ops[v].describe()
                for v in range(
                    max(0, model.versions(r.invoked, r.completed).start - 2),
                    min(len(model.ops), model.versions(r.invoked, r.completed).stop + 1),
                )
            ]
            out.append(
                Violation(
                    "stale read",
                    f"{r.op} answered {r.seen.describe()} (by "
                    f"{r.namenode or '?'}), which the path never was while the call was open",
                    [r.line(), f"the calls around it on {model.root}: " + "; ".join(window)],
                )
            )
    return out


def compare_trees(active: Mapping[str, FileStatus], standby: Mapping[str, FileStatus]) -> list[str]:
    """The differences between two full listings (path -> status), at most MAX_SHOWN."""
    diffs: list[str] = []
    for p in sorted(active.keys() | standby.keys()):
        a, s = active.get(p), standby.get(p)
        if a == s:
            continue
        if a is None or s is None:
            diffs.append(f"{p}: {'only on the standby' if a is None else 'only on the active'}")
        else:
            fields = [
                f"{f} {getattr(a, f)!r} vs {getattr(s, f)!r}"
                for f in a.__dataclass_fields__
                if getattr(a, f) != getattr(s, f)
            ]
            diffs.append(f"{p}: " + ", ".join(fields))
        if len(diffs) >= MAX_SHOWN:
            break
    return diffs


def without_quorum(
    records: Iterable[CallRecord], windows: Iterable[tuple[float, float, int]]
) -> list[tuple[CallRecord, tuple[float, float, int]]]:
    """Writes that change the namespace, made and answered inside a window (start, end,
    action) in which a quorum of JournalNodes was down, each with its window."""
    spans = list(windows)
    return [
        (r, w)
        for r in records
        if r.logs
        for w in spans
        if r.invoked >= w[0] and r.completed <= w[1]
    ]


def no_quorum_acks(
    records: Iterable[CallRecord], windows: Iterable[tuple[float, float, int]]
) -> list[Violation]:
    """The writes of without_quorum that were acknowledged."""
    return [
        Violation(
            "acknowledged without a quorum",
            f"{r.op} was acknowledged while two JournalNodes were down",
            [r.line(), f"the JournalNodes were down from {start:.3f} to {end:.3f}"],
            action,
        )
        for r, (start, end, action) in without_quorum(records, windows)
        if r.outcome == "ack"
    ]


# ---- the JournalNodes' segments

DIGEST = 8  # bytes of an op's digest


@dataclass(frozen=True)
class SegmentOps:
    """The ops of one finalized segment: a digest of each op's bytes, txid start first (a
    readable segment holds exactly start..end), or the problem found reading it."""

    name: str
    start: int
    end: int
    digests: bytes
    problem: str = ""

    def digest(self, txid: int) -> bytes:
        """The digest of txid's op."""
        i = (txid - self.start) * DIGEST
        return self.digests[i : i + DIGEST]


class SegmentReader:
    """Reads the finalized segments of JournalNodes' journals, each file once (a finalized
    segment does not change; one replaced under the same name has another size)."""

    def __init__(self) -> None:
        self._seen: set[tuple[str, int]] = set()

    def read(self, current: Path) -> list[SegmentOps]:
        """The finalized segments in a journal's current/ directory not read before."""
        try:
            segments = [s for s in list_segments(current) if not s.in_progress]
        except FileNotFoundError:
            return []
        out = []
        for seg in segments:
            assert seg.end is not None
            try:
                key = (str(seg.path), seg.path.stat().st_size)
                if key in self._seen:
                    continue
                ops = _segment_ops(seg.path, seg.start, seg.end)
            except FileNotFoundError:
                continue  # purged or replaced meanwhile
            self._seen.add(key)
            out.append(ops)
        return out


def _segment_ops(path: Path, start: int, end: int) -> SegmentOps:
    data = path.read_bytes()
    digests: list[bytes] = []
    txids: list[int] = []
    problem = ""
    try:
        for op in iter_ops(data, HEADER_LEN):
            raw = data[op.offset : op.offset + op.size]
            digests.append(hashlib.blake2b(raw, digest_size=DIGEST).digest())
            txids.append(op.txid)
    except QjmError as e:
        problem = f"unreadable: {e}"
    if not problem and txids != list(range(start, end + 1)):
        have = f"{txids[0]}..{txids[-1]}" if txids else "none"
        problem = f"holds txids {have} ({len(txids)} ops), not {start}..{end}"
    return SegmentOps(path.name, start, end, b"" if problem else b"".join(digests), problem)


class JournalIndex:
    """Every txid of the finalized segments seen so far, once (the first node's op), to
    compare each newly finalized segment of every node with."""

    def __init__(self) -> None:
        # disjoint txid ranges, by start: (first, last, node, the segment holding them)
        self._refs: list[tuple[int, int, str, SegmentOps]] = []

    def add(self, node: str, seg: SegmentOps) -> list[Violation]:
        """Compare a segment with what earlier ones hold; keep the txids none held. The
        violations found (at most MAX_SHOWN)."""
        if seg.problem:
            return [Violation("journal", f"{node}'s finalized {seg.name} {seg.problem}")]
        out: list[Violation] = []
        gaps: list[tuple[int, int]] = []
        at = seg.start  # the first txid of seg not yet compared or found missing
        i = bisect.bisect_left(self._refs, seg.start, key=lambda r: r[1])
        for first, last, ref_node, ref in self._refs[i:]:
            if first > seg.end:
                break
            lo, hi = max(first, seg.start), min(last, seg.end)
            if lo > at:
                gaps.append((at, lo - 1))
            at = hi + 1
            bad = next((t for t in range(lo, hi + 1) if ref.digest(t) != seg.digest(t)), None)
            if bad is not None and len(out) < MAX_SHOWN:
                out.append(
                    Violation(
                        "journal",
                        f"txid {bad} differs between {ref_node}'s {ref.name} and {node}'s "
                        f"{seg.name}",
                    )
                )
        if at <= seg.end:
            gaps.append((at, seg.end))
        for lo, hi in gaps:
            bisect.insort(self._refs, (lo, hi, node, seg), key=lambda r: r[0])
        return out


def compare_journals(journals: Mapping[str, Sequence[SegmentOps]]) -> list[Violation]:
    """Every txid held in finalized segments of several JournalNodes must be the same op on
    each; each finalized segment must hold exactly its txids."""
    index = JournalIndex()
    out: list[Violation] = []
    for node in sorted(journals):
        for seg in journals[node]:
            out += index.add(node, seg)
    return out[:MAX_SHOWN]


# ---- numbers


def spread(values: Sequence[float]) -> dict[str, float | int | None]:
    """count, median and max of some durations (seconds)."""
    if not values:
        return {"count": 0, "median": None, "max": None}
    return {
        "count": len(values),
        "median": round(statistics.median(values), 2),
        "max": round(max(values), 2),
    }
