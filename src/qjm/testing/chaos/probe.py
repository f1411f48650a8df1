"""The deposed-active probe: during a stop of the active NameNode's host, a call sent to it
after the other NameNode took over, on a connection opened before the stop. It is answered
when the stopped NameNode wakes, and that answer must not contradict the history."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

from qjm.cluster.launcher import namenode_state
from qjm.errors import QjmError
from qjm.ipc import IpcClient, RemoteError
from qjm.namenode import protocols
from qjm.namenode.client import NameNodeClient
from qjm.namenode.proto import ClientNamenodeProtocol_pb2 as cn
from qjm.namenode.status_proto import status_from_proto
from qjm.testing.chaos.history import CallRecord, History, Outcome
from qjm.testing.chaos.model import Observed, Op, SubtreeModel
from qjm.testing.chaos.workload import stat_observed

PROBE = -1  # the owner of the probe's subtree in the history (the clients are 0, 1, ...)
ANSWER_WAIT_S = 240.0  # the stopped NameNode answers when it wakes, well within this


class DeposedProbe:
    """Makes a directory on the new active under model.root, then asks the stopped old
    active for it; the call goes to history as a read of PROBE's subtree, and how it ended
    to counts."""

    def __init__(self, history: History, model: SubtreeModel, counts: Counter[str]) -> None:
        self.history = history
        self.model = model
        self.counts = counts

    @staticmethod
    async def connect(address: str) -> IpcClient | None:
        """A connection to the active NameNode at address, opened by a first call (None
        when it does not answer)."""
        ipc = IpcClient(address, protocols.CLIENT_PROTOCOL)
        try:
            await ipc.call(
                "getFileInfo",
                cn.GetFileInfoRequestProto(src="/"),
                cn.GetFileInfoResponseProto,
                timeout=10,
            )
        except (QjmError, OSError):
            await ipc.close()
            return None
        return ipc

    async def run(
        self, ipc: IpcClient, addresses: dict[str, str], old: str, wakes: float, name: str
    ) -> None:
        """Probe the stopped old NameNode (it wakes at monotonic time wakes) on ipc; the
        directory made is model.root/name. Closes ipc."""
        try:
            await self._run(ipc, addresses, old, wakes, name)
        finally:
            await ipc.close()

    async def _run(
        self, ipc: IpcClient, addresses: dict[str, str], old: str, wakes: float, name: str
    ) -> None:
        new = next(n for n in addresses if n != old)
        while time.monotonic() < wakes - 1.0:
            if await namenode_state(addresses[new], 1.0) == "active":
                break
            await asyncio.sleep(0.1)  # a polling period, not a synchronization
        else:
            self.counts["not sent: no takeover before the old active woke"] += 1
            return
        path = f"{self.model.root}/{name}"
        seq, prediction = self.model.begin(Op("mkdirs", path), time.monotonic())
        try:
            async with NameNodeClient([addresses[new]], timeout=10, max_rounds=3) as c:
                await c.mkdirs(path, 0o777)
        except (QjmError, OSError):
            self.model.finish(seq, prediction, time.monotonic(), "indeterminate")
            self.counts["not sent: the new active did not acknowledge"] += 1
            return
        self.model.finish(seq, prediction, time.monotonic(), "ack", result=True)
        invoked = time.monotonic()
        seen: Observed | None = None
        outcome: Outcome = "ack"
        error = ""
        try:
            r = await ipc.call(
                "getFileInfo",
                cn.GetFileInfoRequestProto(src=path),
                cn.GetFileInfoResponseProto,
                timeout=ANSWER_WAIT_S,
            )
            seen = stat_observed(status_from_proto(r.fs, "") if r.HasField("fs") else None)
        except RemoteError as e:
            outcome, error = "refused", e.class_name
        except (QjmError, OSError) as e:
            outcome, error = "indeterminate", type(e).__name__
        self.counts[f"{outcome} {error.rsplit('.', 1)[-1]}".strip()] += 1
        self.history.add(
            CallRecord(
                client=PROBE,
                seq=-1,
                op=f"getFileInfo {path} sent to the stopped {old} after {new} made it",
                kind="stat",
                invoked=invoked,
                completed=time.monotonic(),
                outcome=outcome,
                namenode=old,
                error=error,
                owner=PROBE,
                path=path,
                seen=seen,
            )
        )
