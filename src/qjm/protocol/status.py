"""Plain-dict views of JournalNode status, shared by /status, the CLI and the launcher."""

from __future__ import annotations

from typing import Any

from qjm.protocol import qjournal_pb2 as pb


def journal_status_dict(st: pb.JournalStatusProto) -> dict[str, Any]:
    """One journal's status as JSON-ready values."""
    out: dict[str, Any] = {
        "jid": st.jid,
        "formatted": st.is_formatted,
        "last_promised_epoch": st.last_promised_epoch,
        "last_writer_epoch": st.last_writer_epoch,
        "committed_txid": st.committed_txid if st.HasField("committed_txid") else None,
        "highest_written_txid": st.highest_written_txid,
        "members": list(st.members),
        "current_segment": (
            st.current_segment_txid if st.HasField("current_segment_txid") else None
        ),
        "segments": [
            {"start": s.start_txid, "end": s.end_txid, "in_progress": s.is_in_progress}
            for s in st.segments
        ],
        "problems": list(st.problems),
        "member_change": None,
    }
    if st.HasField("member_change_epoch"):
        out["member_change"] = {
            "epoch": st.member_change_epoch,
            "old_members": list(st.members_before_change),
            # until a writer of the new members starts a segment here
            "pending": st.last_writer_epoch <= st.member_change_epoch,
        }
    if st.is_formatted:
        out["namespace_id"] = st.ns_info.storage_info.namespace_id
        out["cluster_id"] = st.ns_info.storage_info.cluster_id
    return out


def node_status_dict(st: pb.NodeStatusProto) -> dict[str, Any]:
    """A whole node's status as JSON-ready values."""
    return {
        "rpc_address": st.rpc_address,
        "http_address": st.http_address,
        "version": st.version,
        "journals": {j.jid: journal_status_dict(j) for j in st.journals},
        "problems": list(st.problems),
    }


def describe_segments(segments: list[dict[str, Any]], limit: int = 4) -> str:
    """Short text for a segment list: "1-10, 11-20, 21-25 (open)"."""
    parts = [f"{s['start']}-{s['end']}" + (" (open)" if s["in_progress"] else "") for s in segments]
    if len(parts) > limit:
        parts = [f"... {len(parts) - limit} more", *parts[-limit:]]
    return ", ".join(parts) or "-"


def problem_lines(nodes: list[dict[str, Any]]) -> list[str]:
    """One "node: problem" line per problem a status row reports, for tables."""
    return [f"{n['address']}: {p}" for n in nodes for p in n.get("problems", [])]


def describe_member_change(journal: dict[str, Any]) -> str:
    """The last member change of a journal status in words ("" when none)."""
    change = journal.get("member_change")
    if not change:
        return ""
    state = (
        "pending: no writer of the new members has started a segment here yet"
        if change["pending"]
        else "done"
    )
    return (
        f"members changed in epoch {change['epoch']} from {';'.join(change['old_members'])} "
        f"to {';'.join(journal.get('members', []))} ({state})"
    )
