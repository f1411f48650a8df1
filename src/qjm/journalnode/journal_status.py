"""What a journal shows an operator: its status, from its state and its disk."""

from __future__ import annotations

import dataclasses

from qjm.journalnode.health import disk_facts, journal_problems
from qjm.journalnode.journal import Journal, remote_edit_log
from qjm.protocol import qjournal_pb2 as pb


def status_of(j: Journal) -> pb.JournalStatusProto:
    """Everything an operator wants to see of this journal."""
    st = _base_status(j)
    st.members.extend(j.members or [])
    if j.member_change is not None:
        st.member_change_epoch = j.member_change.epoch
        st.members_before_change.extend(j.member_change.old)
    if j.ns_info is not None:
        for seg in j.get_edit_log_manifest(0, True, all_in_progress=True):
            st.segments.append(remote_edit_log(seg))
    if j.cur_segment_txid is not None:
        st.current_segment_txid = j.cur_segment_txid
    facts = disk_facts(j.storage.current)
    corrupt = j.files.corrupt_latest
    if corrupt is not None and corrupt[0].exists():
        facts = dataclasses.replace(facts, corrupt=[corrupt[1]])
    st.problems.extend(journal_problems(st, facts))
    return st


def status_snapshot(j: Journal, problem: str) -> pb.JournalStatusProto:
    """Status from plain attributes, for when the journal's thread is busy; any thread."""
    st = _base_status(j)
    st.problems.append(problem)
    return st


def _base_status(j: Journal) -> pb.JournalStatusProto:
    """The status fields that plain attributes hold; reads no disk."""
    st = pb.JournalStatusProto(
        jid=j.jid,
        is_formatted=j.ns_info is not None,
        last_promised_epoch=j.last_promised_epoch,
        last_writer_epoch=j.last_writer_epoch,
        highest_written_txid=j.highest_written_txid,
    )
    if j.ns_info is not None:
        st.ns_info.CopyFrom(j.ns_info.to_proto())
    if j.committed_txid is not None:
        st.committed_txid = j.committed_txid
    if j.amnesiac is not None:
        st.restored = True
    return st
