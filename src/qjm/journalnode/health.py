"""Impossible or suspicious journal states, in words an operator can act on.

`journal_problems` is pure: it reads a JournalStatus and the few facts about the files
that the status does not carry (DiskFacts). An empty list means nothing looks wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

from qjm.editlog.segments import list_segments
from qjm.protocol import qjournal_pb2 as pb

LAST_PROMISED_EPOCH = "last-promised-epoch"
AWAITING_NEW_EPOCH = "awaiting-new-epoch"
AMNESIAC = "amnesiac"


@dataclass(frozen=True)
class DiskFacts:
    """What current/ holds beyond the status: marker files and every segment file."""

    has_promise_file: bool = True
    awaiting_new_epoch: bool = False
    amnesiac: str | None = None  # the reason in the amnesiac marker, if present
    # (start, end) per segment file on disk; end is None for an in-progress one.
    segments: list[tuple[int, int | None]] = field(default_factory=list)
    # Why the newest in-progress file is corrupt, as the journal's scan found (not read here).
    corrupt: list[str] = field(default_factory=list)


def disk_facts(current: Path) -> DiskFacts:
    """Read the DiskFacts of a journal's current/ directory."""
    if not current.is_dir():
        return DiskFacts()
    return DiskFacts(
        has_promise_file=(current / LAST_PROMISED_EPOCH).is_file(),
        awaiting_new_epoch=(current / AWAITING_NEW_EPOCH).exists(),
        amnesiac=_marker_reason(current / AMNESIAC),
        segments=[(s.start, s.end) for s in list_segments(current)],
    )


def _marker_reason(path: Path) -> str | None:
    """A marker file's reason text, or None when there is no such file."""
    try:
        text = path.read_bytes().decode("utf-8", errors="replace").strip()
    except FileNotFoundError:
        return None
    return text or "lost its storage"


def journal_problems(st: pb.JournalStatusProto, disk: DiskFacts) -> list[str]:
    """Every impossible or suspicious state of one journal, one sentence each."""
    out: list[str] = []
    finalized = sorted((a, b) for a, b in disk.segments if b is not None)
    open_starts = sorted(a for a, b in disk.segments if b is None)
    if not st.is_formatted:
        if disk.segments:
            out.append(
                f"{len(disk.segments)} segment file(s) but no VERSION: the journal's storage "
                "was partly lost; the syncer restores VERSION from a majority of peers"
            )
        return out
    if st.last_promised_epoch < st.last_writer_epoch:
        out.append(
            f"promised epoch {st.last_promised_epoch} is below writer epoch "
            f"{st.last_writer_epoch}: a writer cannot write without a promise, so "
            f"{LAST_PROMISED_EPOCH} was lost or rolled back"
        )
    if not disk.has_promise_file and (disk.segments or st.last_writer_epoch > 0):
        out.append(
            f"{LAST_PROMISED_EPOCH} is missing while the journal holds segments or a writer "
            "epoch: the promise was lost, so an older writer could be accepted"
        )
    if st.HasField("committed_txid") and st.committed_txid > st.highest_written_txid:
        out.append(
            f"committed txid {st.committed_txid} is above the highest written txid "
            f"{st.highest_written_txid}: this node lacks committed edits"
        )
    for start in open_starts:
        newer = [(a, b) for a, b in finalized if b >= start]
        if newer:
            a, b = newer[-1]
            out.append(
                f"in-progress segment {start} is older than finalized segment {a}-{b}: "
                "it should have been finalized or removed by recovery"
            )
    for (a1, b1), (a2, b2) in pairwise(finalized):
        if a2 <= b1:
            out.append(f"finalized segments {a1}-{b1} and {a2}-{b2} overlap")
    if finalized:
        a, b = max(finalized, key=lambda s: s[1])
        if st.highest_written_txid < b:
            out.append(
                f"highest written txid {st.highest_written_txid} is below the end of "
                f"finalized segment {a}-{b}"
            )
    for why in disk.corrupt:
        out.append(
            f"{why}; this node fails prepare_recovery and reads of that segment until a "
            "recovery replaces it with the chosen copy"
        )
    if disk.awaiting_new_epoch:
        out.append(
            "awaiting a new writer's new_epoch (the journal was restored or reformatted): "
            "it refuses writes and recovery votes until then"
        )
    if disk.amnesiac is not None:
        out.append(
            f"the journal {disk.amnesiac}: it refuses to vote in recovery "
            "(prepare_recovery) until a writer starts a segment on it"
        )
    return out
