"""Which edits `qjm namenode recover` applies after the image, and which it drops (design §N.5).

The quorum journal is the authority for every txid it holds: the local edits are written
while the quorum flush is in flight, so they can hold ops no quorum took (a sync that
failed), and after a failover another NameNode's ops hold those txids in the journal. A
local op the journal contradicts is dropped. Local ops beyond the journal's end were never
acknowledged by a quorum, unless the journal went backwards; they are applied only when
the operator asks for it. Every dropped op is reported with its txid, opcode and path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from qjm.editlog.ops import Op

__all__ = ["DroppedOp", "RecoveryPlan", "op_path", "plan_recovery"]

LOCAL_FLAG = "--local-edits-beyond-journal"


def op_path(op: Op) -> str | None:
    """The path an op acts on ("src -> dst" for a rename), or None."""
    path = getattr(op, "path", None)
    src = getattr(op, "src", None)
    dst = getattr(op, "dst", None)
    if isinstance(src, str) and isinstance(dst, str):
        return f"{src} -> {dst}"
    for p in (path, src):
        if isinstance(p, str):
            return p
    return None


@dataclass(frozen=True)
class DroppedOp:
    """One op recover did not apply, and why."""

    txid: int
    opcode: str
    path: str | None
    source: str  # "local" or "shared"
    why: str

    def line(self) -> str:
        """One line for an operator."""
        where = f" {self.path}" if self.path else ""
        return f"txid {self.txid} {self.opcode}{where} ({self.source} edits): {self.why}"


@dataclass
class RecoveryPlan:
    """The ops to apply in txid order, how many from each source, and what is dropped."""

    run: list[tuple[int, Op]] = field(default_factory=list)
    from_shared: int = 0
    from_local: int = 0
    dropped: list[DroppedOp] = field(default_factory=list)


def _drop(txid: int, op: Op, source: str, why: str) -> DroppedOp:
    return DroppedOp(txid, op.opcode_name, op_path(op), source, why)


def plan_recovery(
    image_txid: int,
    shared: Sequence[tuple[int, Op]],
    local: Sequence[tuple[int, Op]],
    *,
    journal_read: bool,
    local_beyond_journal: bool = False,
) -> RecoveryPlan:
    """Decide the edits after image_txid: the shared journal's where it holds them, the
    local ones after its end only when local_beyond_journal.

    shared and local are contiguous runs from image_txid + 1 (ops at or below it are
    ignored). journal_read: the shared journal answered; its end is then where shared ends.
    """
    plan = RecoveryPlan()
    expected = image_txid + 1
    for txid, op in shared:
        if txid < expected:
            continue
        if txid > expected:
            break  # a gap: the journal's readable run ends here
        plan.run.append((txid, op))
        plan.from_shared += 1
        expected += 1
    journal_end = expected - 1
    if journal_read:
        beyond = (
            f"beyond the shared journal's end at txid {journal_end}: no quorum acknowledged "
            f"it (pass {LOCAL_FLAG} if the journal lost acknowledged edits)"
        )
    else:
        beyond = (
            "the shared journal could not be read, so nothing shows a quorum acknowledged "
            f"it (pass {LOCAL_FLAG} to apply the local edits anyway)"
        )
    shared_at = dict(plan.run)
    for txid, op in local:
        if txid <= image_txid:
            continue
        if txid <= journal_end:
            theirs = shared_at[txid]
            if theirs != op:
                why = (
                    f"the shared journal holds {theirs.opcode_name}"
                    f"{' ' + p if (p := op_path(theirs)) else ''} at this txid; the local "
                    "op was never committed"
                )
                plan.dropped.append(_drop(txid, op, "local", why))
            continue
        if not local_beyond_journal:
            plan.dropped.append(_drop(txid, op, "local", beyond))
            continue
        if txid != expected:  # a gap: nothing after it follows the ops applied
            plan.dropped.append(_drop(txid, op, "local", f"txid {expected} is missing before it"))
            continue
        plan.run.append((txid, op))
        plan.from_local += 1
        expected += 1
    return plan
