"""Raw QJournal calls to one JournalNode over Hadoop IPC, for the server tests.

No QuorumJournalManager: each call is exactly the request the test builds, so a test can
send what a correct writer never would (stale epochs, gaps, hostile values).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conftest import JNProcess
from qjm.client.journalnode_client import JournalNodeClient
from qjm.editlog.framing import OP_OPAQUE, encode_op
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.namespace import NamespaceInfo
from qjm.protocol.qjournal import journal_id

JID = "ns1"
T = 10.0


def ns_info(namespace_id: int, cluster_id: str) -> pb.NamespaceInfoProto:
    """A namespace's wire form, every required field set."""
    return NamespaceInfo(namespace_id, cluster_id).to_proto()


NS = ns_info(4242, "CID-server-test")


def txns(first: int, n: int) -> bytes:
    """n opaque ops of 200 bytes numbered from first."""
    return b"".join(encode_op(OP_OPAQUE, t, b"x" * 200) for t in range(first, first + n))


class JNClient(JournalNodeClient):
    """JournalNodeClient with the tests' default deadline."""

    async def call(self, method: str, request: Any, deadline: float = T) -> Any:
        """One call by its wire name; JournalNode errors raise as our JournalErrors."""
        return await super().call(method, request, deadline)


class RawWriter:
    """Speaks one writer's calls to one JournalNode, one call at a time."""

    def __init__(
        self,
        jn: JNProcess | str,
        epoch: int,
        *,
        jid: str = JID,
        ns: pb.NamespaceInfoProto = NS,
        make_txns: Callable[[int, int], bytes] = txns,
    ) -> None:
        self.client = JNClient(jn if isinstance(jn, str) else jn.rpc)
        self.epoch = epoch
        self.jid = jid
        self.ns = ns
        self.txns = make_txns
        self.serial = 0

    def req(self, committed: int | None = None, epoch: int | None = None) -> pb.RequestInfoProto:
        """The next RequestInfo."""
        self.serial += 1
        r = pb.RequestInfoProto(
            journal_id=journal_id(self.jid), epoch=epoch or self.epoch, ipc_serial=self.serial
        )
        if committed is not None:
            r.committed_txid = committed
        return r

    async def call(self, method: str, request: Any) -> Any:
        """One call."""
        return await self.client.call(method, request, T)

    async def format(self, force: bool = False, members: list[str] | None = None) -> None:
        """Format the journal for this writer's namespace."""
        await self.call(
            "format",
            pb.FormatRequestProto(
                jid=journal_id(self.jid), ns_info=self.ns, force=force, members=members
            ),
        )

    async def new_epoch(self, members: list[str] | None = None) -> pb.NewEpochResponseProto:
        """Win this writer's epoch."""
        resp: pb.NewEpochResponseProto = await self.call(
            "newEpoch",
            pb.NewEpochRequestProto(
                jid=journal_id(self.jid), ns_info=self.ns, epoch=self.epoch, members=members
            ),
        )
        return resp

    async def start(self, txid: int) -> None:
        """Open a segment."""
        await self.call(
            "startLogSegment", pb.StartLogSegmentRequestProto(req=self.req(), txid=txid)
        )

    def batch(
        self, seg: int, first: int, n: int, committed: int | None = None
    ) -> pb.JournalRequestProto:
        """The journal() request of n txns from first."""
        return pb.JournalRequestProto(
            req=self.req(committed),
            segment_txid=seg,
            first_txid=first,
            num_txns=n,
            records=self.txns(first, n),
        )

    async def write(self, seg: int, first: int, n: int, committed: int | None = None) -> None:
        """Journal n txns."""
        await self.call("journal", self.batch(seg, first, n, committed))

    async def finalize(self, start: int, end: int, committed: int | None = None) -> None:
        """Finalize a segment, reporting its end committed as an honest writer does."""
        req = self.req(end if committed is None else committed)
        await self.call(
            "finalizeLogSegment",
            pb.FinalizeLogSegmentRequestProto(req=req, start_txid=start, end_txid=end),
        )

    async def status(self) -> pb.JournalStatusProto:
        """The journal's status."""
        st: pb.JournalStatusProto = await self.call(
            "getJournalStatus", pb.GetJournalStatusRequestProto(jid=journal_id(self.jid))
        )
        return st

    async def close(self) -> None:
        """Close the connections."""
        await self.client.close()
