"""The QJournal protocols' names and methods: one home for what is on the wire."""

from __future__ import annotations

from qjm.ipc import MethodSpec, method_table
from qjm.protocol import qjournal_pb2 as pb

QJOURNAL_PROTOCOL = "org.apache.hadoop.hdfs.qjournal.protocol.QJournalProtocol"
INTER_QJOURNAL_PROTOCOL = "org.apache.hadoop.hdfs.qjournal.protocol.InterQJournalProtocol"
STATUS_PROTOCOL = "qjm.journalnode.JournalNodeStatusProtocol"


QJOURNAL_METHODS: dict[str, MethodSpec] = method_table(
    MethodSpec("isFormatted", pb.IsFormattedRequestProto, pb.IsFormattedResponseProto),
    MethodSpec("discardSegments", pb.DiscardSegmentsRequestProto, pb.DiscardSegmentsResponseProto),
    MethodSpec("getJournalState", pb.GetJournalStateRequestProto, pb.GetJournalStateResponseProto),
    MethodSpec("newEpoch", pb.NewEpochRequestProto, pb.NewEpochResponseProto),
    MethodSpec("format", pb.FormatRequestProto, pb.FormatResponseProto),
    MethodSpec("journal", pb.JournalRequestProto, pb.JournalResponseProto),
    MethodSpec("heartbeat", pb.HeartbeatRequestProto, pb.HeartbeatResponseProto),
    MethodSpec("startLogSegment", pb.StartLogSegmentRequestProto, pb.StartLogSegmentResponseProto),
    MethodSpec(
        "finalizeLogSegment",
        pb.FinalizeLogSegmentRequestProto,
        pb.FinalizeLogSegmentResponseProto,
    ),
    MethodSpec("purgeLogs", pb.PurgeLogsRequestProto, pb.PurgeLogsResponseProto),
    MethodSpec(
        "getEditLogManifest",
        pb.GetEditLogManifestRequestProto,
        pb.GetEditLogManifestResponseProto,
    ),
    MethodSpec(
        "getJournaledEdits",
        pb.GetJournaledEditsRequestProto,
        pb.GetJournaledEditsResponseProto,
    ),
    MethodSpec("prepareRecovery", pb.PrepareRecoveryRequestProto, pb.PrepareRecoveryResponseProto),
    MethodSpec("acceptRecovery", pb.AcceptRecoveryRequestProto, pb.AcceptRecoveryResponseProto),
    # qjm only: one node's part of `qjm journal change-members` (a Hadoop JournalNode has no
    # member list and answers it as an unknown method).
    MethodSpec("changeMembers", pb.ChangeMembersRequestProto, pb.ChangeMembersResponseProto),
)

INTER_QJOURNAL_METHODS: dict[str, MethodSpec] = method_table(
    MethodSpec(
        "getEditLogManifestFromJournal",
        pb.GetEditLogManifestRequestProto,
        pb.GetEditLogManifestResponseProto,
    ),
)

STATUS_METHODS: dict[str, MethodSpec] = method_table(
    MethodSpec("getJournalStatus", pb.GetJournalStatusRequestProto, pb.JournalStatusProto),
    MethodSpec("getNodeStatus", pb.GetNodeStatusRequestProto, pb.NodeStatusProto),
)

PROTOCOLS: dict[str, dict[str, MethodSpec]] = {
    QJOURNAL_PROTOCOL: QJOURNAL_METHODS,
    INTER_QJOURNAL_PROTOCOL: INTER_QJOURNAL_METHODS,
    STATUS_PROTOCOL: STATUS_METHODS,
}

# The protocol of each method name (no name is in two protocols).
PROTOCOL_OF_METHOD: dict[str, str] = {
    name: protocol for protocol, methods in PROTOCOLS.items() for name in methods
}


def journal_id(jid: str) -> pb.JournalIdProto:
    """The wire form of a journal id."""
    return pb.JournalIdProto(identifier=jid)
