"""accept_recovery on a JournalNode: Paxos phase 2b for a segment (design §J.4).

Checked twice (before the download and after it, on the journal's thread both times),
downloaded off that thread, then persisted: the paxos record first, then the log, so that
a crash between the two is rolled forward (roll_forward_half_done_accepts, which the
journal runs wherever it computes its newest segment).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from qjm.journalnode import rules
from qjm.journalnode.rules import OnDisk, Request
from qjm.journalnode.segment_fetch import FetchLimits, check_segment_url, size_cap
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import SegmentChangedError, StorageError
from qjm.protocol.urls import with_recovery_epoch

if TYPE_CHECKING:  # the journal calls roll_forward_half_done_accepts: no import back at run time
    from qjm.journalnode.journal import Journal

log = logging.getLogger("qjm.journalnode.journal")


@dataclass(frozen=True, slots=True)
class AcceptPlan:
    """What an accept_recovery needs: the range, its source, and where to download it."""

    start: int
    end: int
    url: str
    download: Path | None = None  # None: nothing to fetch
    compare: bool = False  # same end as ours: keep ours when the bytes are the same
    limits: FetchLimits | None = None


def describe_state(seg: pb.SegmentStateProto) -> str:
    """A segment state as refusals and logs name it."""
    return rules.describe_segment(seg.start_txid, seg.end_txid, seg.is_in_progress)


def accept_recovery(
    j: Journal, req: pb.RequestInfoProto, segment: pb.SegmentStateProto, from_url: str
) -> None:
    """Paxos phase 2b: take the chosen segment (downloading it if ours differs), persist."""
    plan = begin_accept_recovery(j, req, segment, from_url)
    if plan.download is not None:
        download(j, plan)
    finish_accept_recovery(j, req, segment, plan)


def begin_accept_recovery(
    j: Journal, req: pb.RequestInfoProto, segment: pb.SegmentStateProto, from_url: str
) -> AcceptPlan:
    """Check an accept_recovery and say what must be downloaded; changes nothing."""
    fetch, compare = _check_accept(j, req, segment, from_url)
    from_url = with_recovery_epoch(from_url, req.epoch)
    if not fetch:
        return AcceptPlan(segment.start_txid, segment.end_txid, from_url)
    return AcceptPlan(
        segment.start_txid,
        segment.end_txid,
        from_url,
        download=j.files.download_path(segment.start_txid, req.epoch, uuid.uuid4().hex[:12]),
        compare=compare,
        limits=FetchLimits(
            size_cap(segment.start_txid, segment.end_txid, segment.byte_length),
            j.transfer_timeout,
        ),
    )


def download(j: Journal, plan: AcceptPlan) -> None:
    """Fetch a plan's segment into its private file and check its range; any thread."""
    dest = plan.download
    assert dest is not None and plan.limits is not None
    try:
        j.fetch_segment(plan.url, dest, plan.limits)
        j.files.check_download(dest, plan.start, plan.end, plan.url)
    except OSError as e:
        dest.unlink(missing_ok=True)
        raise StorageError(f"downloading {plan.url} to {dest} failed: {e}") from None
    except BaseException:
        dest.unlink(missing_ok=True)
        raise


def finish_accept_recovery(
    j: Journal, req: pb.RequestInfoProto, segment: pb.SegmentStateProto, plan: AcceptPlan
) -> None:
    """Re-check the request after the download, then persist and install what it chose."""
    synced = plan.download
    try:
        # The download ran off this thread: anything may have happened meanwhile. The
        # same checks again refuse a raised promise, a newer accept (epoch or serial) and
        # a local segment that changed so that the plan no longer fits.
        fetch, _ = _check_accept(j, req, segment, plan.url)
        if fetch != (synced is not None):
            raise SegmentChangedError(
                f"segment {plan.start} of journal {j.jid!r} changed while "
                f"{describe_state(segment)} was downloaded from {plan.url}; retry the recovery"
            )
        if synced is not None and not synced.exists():
            raise SegmentChangedError(
                f"the download of {describe_state(segment)} from {plan.url} to {synced} went "
                f"away before it was installed (journal {j.jid!r} reformatted?); retry "
                "the recovery"
            )
    except BaseException:
        if synced is not None:
            synced.unlink(missing_ok=True)
        raise
    j.record_request(Request.of(req), j.state())
    j.abort_open_segment()
    j.cache.clear()
    start = plan.start
    if synced is not None and plan.compare:
        if j.files.same_log(synced, start):
            synced.unlink()
            synced = None
        else:
            log.warning(
                "journal %s: segment %s here differs from the accepted one at %s although "
                "it ends at the same txid; replacing it",
                j.jid,
                describe_state(segment),
                plan.url,
            )
    staged: Path | None = None
    if synced is not None:
        # Under the name a crash after the paxos write rolls forward
        # (roll_forward_half_done_accepts).
        staged = j.files.stage(synced, start, req.epoch)
        # A finalized copy this recovery replaces goes first: after the paxos write it
        # would supersede the staged file and be reported as decided in this epoch.
        old = j.files.find_segment(start)
        if old is not None and old.end is not None:
            aside = j.files.retire(old)
            log.warning(
                "journal %s: finalized segment %s (decided in epoch %s) differs from the "
                "log the recovery of epoch %d chose; kept as %s (design §J.4)",
                j.jid,
                old.path.name,
                j.decided_epoch(old.start, old.end),
                req.epoch,
                aside.name,
            )
    j.faults.before_persist_paxos_data()
    accepted = pb.SegmentStateProto()
    accepted.CopyFrom(segment)
    accepted.ClearField("decided_epoch")  # the record's own epoch decides from now on
    j.storage.write_paxos(
        start,
        pb.PersistedRecoveryPaxosData(segment_state=accepted, accepted_in_epoch=req.epoch),
    )
    j.faults.after_persist_paxos_data()
    if staged is not None:
        j.files.install_staged(staged, start)
        j.refresh_highest_written_txid()
    log.info(
        "journal %s: accepted recovery of %s in epoch %d",
        j.jid,
        describe_state(segment),
        req.epoch,
    )


def _check_accept(
    j: Journal, req: pb.RequestInfoProto, segment: pb.SegmentStateProto, from_url: str
) -> tuple[bool, bool]:
    """Check an accept_recovery; (download needed, compare the download with ours)."""
    state = j.state()
    plain = j.check_writer_call(req, state)
    start, end = segment.start_txid, segment.end_txid
    record = j.storage.read_paxos(start)
    # A corrupt copy of ours is "different": fetch the chosen one and replace it.
    current = j.files.segment_info(start, corrupt_ok=True)
    ours = None
    if current is not None:
        decided = None
        if not current.is_in_progress:
            decided = j.decided_epoch(start, current.end_txid)
        ours = OnDisk(
            current.start_txid,
            current.end_txid,
            current.is_in_progress,
            corrupt=current.corrupt is not None,
            decided_epoch=decided,
        )
    action = rules.accept_action(
        state,
        plain,
        start,
        end,
        segment.is_in_progress,
        segment.decided_epoch if segment.HasField("decided_epoch") else None,
        record.accepted_in_epoch if record is not None else None,
        ours,
        bool(from_url),
    )
    if action.fetch:
        check_segment_url(from_url, j.jid, start)
    return action.fetch, action.compare


def roll_forward_half_done_accepts(j: Journal) -> None:
    """Finish each accept_recovery that persisted its paxos data but not its log.

    finish_accept_recovery persists the decision, then moves the download (staged
    under files.staged_path) into place; a crash between the two leaves a node
    that voted for a log it does not hold. HDFS completes it only in prepareRecovery
    of that segment, which is wrong: until then newEpoch reports an older newest
    segment than the one this node accepted, so a writer may skip recovering it, and
    the node's highest written txid is stale, so it refuses the next segment's start
    as a gap (the seed-3 fault schedule). Here it is completed wherever the newest
    segment is computed: at load, in new_epoch and in prepare_recovery. A staged file
    the paxos data does not name (a crash before the persist, or a decision replaced
    or purged by a later start since) was never accepted and is deleted, and so is one
    a finalized segment superseded.
    """

    def accepted_in(start: int, epoch: int) -> bool:
        accepted = j.storage.read_paxos(start)
        return accepted is not None and accepted.accepted_in_epoch == epoch

    if j.files.roll_forward_staged(accepted_in):
        j.refresh_highest_written_txid()
