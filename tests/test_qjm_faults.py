"""Fault sweeps over a 3-node journal (Hadoop's TestQJMWithFaults).

* Every pair of single-RPC failures (one on each of two nodes) across a two-segment
  workload, over the in-memory transport (real journals, no sockets): a new writer then
  recovers at least to the last acknowledged txid.
* A seeded randomized schedule over real sockets: every RPC flips its node up or down
  with p=0.1, and accept_recovery crashes before or after persisting paxos data with
  p=0.1, over many writer generations. QJM_FAULT_GENERATIONS (default 200) and QJM_FAULT_SEED choose
  how many and which; e.g. QJM_FAULT_GENERATIONS=5000 for a long run.

The invariant everywhere: recovery never ends below the last acknowledged txid, every
acknowledged txid keeps the value written, and every txid has one value on every node.
After every randomized generation a reader reads the journal (segments and the nodes'
caches): what it returns is a prefix of the one history, agrees with what was acked and
with every earlier read, and reaches at least the last txid finalized on a majority.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest

from qjm.client.admin import new_namespace_info
from qjm.client.quorum_call import QuorumError
from qjm.client.quorum_journal_manager import QuorumJournalManager
from qjm.client.reader import QuorumJournalReader
from qjm.client.recovery_comparator import RecoveryInvariantError
from qjm.client.uri import parse_qjournal_uri
from qjm.editlog.framing import OP_OPAQUE, RawOp
from qjm.errors import QjmError
from qjm.journalnode.journal import FaultInjector
from qjm.protocol.errors import (
    AcceptedStateMismatchError,
    CommittedTxidLossError,
    NewerAcceptError,
)
from qjm.testing.faults import Action, NodeFaults, RpcRecord
from qjm.testing.in_memory import InMemoryCluster
from qjm_cluster import (
    FAST_SETTINGS,
    JNCluster,
    check_one_value_per_txid,
    payload,
    settle,
    write_segment,
)

GENERATIONS = int(os.environ.get("QJM_FAULT_GENERATIONS", "200"))
SEED = int(os.environ.get("QJM_FAULT_SEED", "3077"))  # HDFS-3077, the QJM design's JIRA
TXNS_PER_SEGMENT = 4
SEGMENTS_PER_WRITER = 2

# Refusals that mean a broken invariant, never an ordinary consequence of a fault: a
# JournalNode asked to discard a committed txid, to accept below an accepted epoch, or
# holding another segment than it accepted; the client's recovery invariants.
FORBIDDEN = (
    CommittedTxidLossError,
    NewerAcceptError,
    AcceptedStateMismatchError,
    RecoveryInvariantError,
)
# Messages that mean a broken invariant (kept beside the types: a refusal of another type
# with such a message would be a broken invariant too).
FORBIDDEN_TEXT = (
    "discard committed",
    "already accepted in epoch",
    "accepted recovery is",
    "finalized copies",
    "refusing to truncate",
    "unacknowledged finalize",
)


def check_fault(e: BaseException, where: str) -> None:
    """A failure under faults must be an ordinary one, never a broken invariant."""
    assert isinstance(e, QjmError), f"{where}: unexpected {type(e).__name__}: {e}"
    causes: list[BaseException] = list(e.errors.values()) if isinstance(e, QuorumError) else []
    for cause in [e, *causes]:
        text = str(cause)
        assert not isinstance(cause, FORBIDDEN), f"{where}: {type(cause).__name__}: {text}"
        for bad in FORBIDDEN_TEXT:
            assert bad not in text, f"{where}: {text}"
        if "internal error" in text:
            assert "Injected" in text, f"{where}: {text}"


async def workload(cluster: InMemoryCluster, jid: str) -> int:
    """Become the writer and write segments 1-3 and 4-6; returns the last acked txid."""
    q = QuorumJournalManager(cluster.uri(jid), None, FAST_SETTINGS, client_factory=cluster.client)
    last_acked = 0
    try:
        await q.recover_unfinalized_segments()
        for first in (1, 4):
            stream = await q.start_log_segment(first)
            stream.write_op(OP_OPAQUE, payload(first))
            last_acked = await stream.flush()
            stream.write_op(OP_OPAQUE, payload(first + 1))
            stream.write_op(OP_OPAQUE, payload(first + 2))
            last_acked = await stream.flush()
            await stream.close()
            await q.finalize_log_segment(first, first + 2)
    except QjmError as e:
        check_fault(e, "workload")
    finally:
        await settle(q)
    return last_acked


async def formatted(cluster: InMemoryCluster, jid: str) -> None:
    """Format journal jid on every node, then start every link's call count afresh."""
    q = QuorumJournalManager(cluster.uri(jid), None, FAST_SETTINGS, client_factory=cluster.client)
    try:
        await q.format(new_namespace_info(cluster_id="CID-test", namespace_id=12345))
    finally:
        await q.close()
    for f in cluster.faults:
        f.clear()
        f.seen = 0


def one_value_per_txid(cluster: InMemoryCluster, jid: str) -> dict[int, bytes]:
    """Every finalized segment is whole and every txid has one value across the nodes."""
    seen: dict[int, tuple[int, bytes]] = {}
    for i in range(cluster.n):
        for (start, end), ops in cluster.segments(i, jid).items():
            assert end is not None and sorted(ops) == list(range(start, end + 1)), (i, start, end)
            for txid, body in ops.items():
                other = seen.setdefault(txid, (i, body))
                assert other[1] == body, f"txid {txid}: jn{other[0]} {other[1]!r}, jn{i} {body!r}"
    return {t: v for t, (_, v) in seen.items()}


@pytest.mark.slow
async def test_recover_after_every_pair_of_single_rpc_failures(tmp_path: Path) -> None:
    """Every pair of single-RPC failures, one on jn0 and one on jn1, over the in-memory transport.

    One clean run numbers the calls; a node that got no committed-txid report at the end
    (its channel still had a call queued) has a call fewer, so the sweep goes to the most
    calls any node got: a number past a node's last call fails nothing on that node.
    """
    async with InMemoryCluster(tmp_path) as cluster:
        await formatted(cluster, "clean")
        assert await workload(cluster, "clean") == 6
        max_rpc = max(f.seen for f in cluster.faults)
        assert min(f.seen for f in cluster.faults) >= 10, [r.method for r in cluster.faults[0].log]
        pairs = 0
        for fail_a in range(1, max_rpc + 1):
            for fail_b in range(1, max_rpc + 1):
                where = f"failing RPC #{fail_a} on jn0 and #{fail_b} on jn1"
                jid = f"pair-{fail_a}-{fail_b}"
                await formatted(cluster, jid)
                cluster.faults[0].fail_call(fail_a)
                cluster.faults[1].fail_call(fail_b)
                last_acked = await workload(cluster, jid)
                for f in cluster.faults:
                    f.clear()
                q = QuorumJournalManager(
                    cluster.uri(jid), None, FAST_SETTINGS, client_factory=cluster.client
                )
                try:
                    recovered = await q.recover_unfinalized_segments()
                    assert recovered >= last_acked, f"{where}: {recovered} < {last_acked}"
                    await write_segment(q, recovered + 1, 3)
                finally:
                    await settle(q)
                values = one_value_per_txid(cluster, jid)
                for txid in range(1, last_acked + 1):
                    assert values.get(txid) == payload(txid), f"{where}: txid {txid}"
                pairs += 1
        assert pairs == max_rpc * max_rpc


class RandomNode(NodeFaults):
    """A node that flips up or down on every RPC with p=0.1 and crashes accepts."""

    def __init__(self, seed: int, injector: FaultInjector) -> None:
        super().__init__()
        self.random = random.Random(seed)
        self.injector = injector
        self.up = True
        self.failed: set[int] = set()  # ids of the requests this node failed unsent
        self.rules.append(self._judge)
        self.on_record = self._after

    def _judge(self, method: str, request: Any) -> Action | None:
        if self.random.random() < 0.1:
            self.up = not self.up
        if not self.up:
            self.failed.add(id(request))
            return Action.FAIL
        if method == "acceptRecovery":
            if self.random.random() < 0.1:
                self.injector.before_persist_paxos_data = _crash("before")
            elif self.random.random() < 0.1:
                self.injector.after_persist_paxos_data = _crash("after")
        return None

    def _after(self, record: RpcRecord) -> None:
        if id(record.request) in self.failed:
            self.failed.discard(id(record.request))
            return  # never sent: the crash set up for a call in flight stays
        self.injector.before_persist_paxos_data = _nothing
        self.injector.after_persist_paxos_data = _nothing


def _nothing() -> None:
    return None


def _crash(when: str) -> Any:
    def crash() -> None:
        raise OSError(f"Injected - faking fault {when} persisting paxos data")

    return crash


@pytest.mark.slow
@pytest.mark.timeout(max(120, GENERATIONS))
async def test_randomized_writer_generations(tmp_path: Path) -> None:
    r = random.Random(SEED)
    acked: dict[int, bytes] = {}
    last_acked = 0
    successes = recoveries = 0
    purged_below = 0
    durable = 0  # every txid up to here is finalized on a majority: a read must return it
    seen = ReadLog()
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        await cluster.format(jid)
        reader = QuorumJournalReader(parse_qjournal_uri(cluster.uri(jid)), FAST_SETTINGS)
        for gen in range(GENERATIONS):
            where = f"seed {SEED} generation {gen}"
            faults: list[NodeFaults] = [
                RandomNode(r.getrandbits(64), cluster.injectors[i]) for i in range(3)
            ]
            q = cluster.qjm(jid, faults)
            try:
                try:
                    recovered = await q.recover_unfinalized_segments()
                except QjmError as e:
                    check_fault(e, f"{where}: recovery")
                    continue
                recoveries += 1
                assert recovered >= last_acked, (
                    f"{where}: recovered only to {recovered}, but {last_acked} was acked"
                )
                durable = max(durable, recovered)
                txid = recovered + 1
                if txid > 100 and gen % 10 == 1:
                    await q.purge_logs_older_than(txid - 100)
                    purged_below = max(purged_below, txid - 100)
                for _ in range(SEGMENTS_PER_WRITER):
                    first = txid
                    try:
                        stream = await q.start_log_segment(first)
                        for _ in range(TXNS_PER_SEGMENT):
                            body = payload(txid, f"g{gen}")
                            stream.write_op(OP_OPAQUE, body)
                            await stream.flush()
                            acked[txid] = body
                            last_acked = txid
                            txid += 1
                        await stream.close()
                        await q.finalize_log_segment(first, txid - 1)
                        durable = max(durable, txid - 1)
                        successes += 1
                    except QjmError as e:
                        check_fault(e, f"{where}: writing")
                        break
            finally:
                await q.close()  # the writer crashes: calls in flight are abandoned
            await seen.check(reader, max(purged_below, 1), durable, acked, where)
            if gen % 50 == 49:
                check_acked(cluster, jid, acked, where)
        # A last writer without faults recovers everything acknowledged.
        for i in range(3):
            cluster.injectors[i].before_persist_paxos_data = _nothing
            cluster.injectors[i].after_persist_paxos_data = _nothing
        q = cluster.qjm(jid)
        try:
            final = await q.recover_unfinalized_segments()
        finally:
            await settle(q)
        assert final >= last_acked
        await seen.check(reader, max(purged_below, 1), final, acked, f"seed {SEED} at the end")
        await reader.close()
        values = check_acked(cluster, jid, acked, f"seed {SEED} at the end")
        # Below the highest purge asked for, a node that got the purge may hold nothing.
        missing = [t for t in acked if t >= purged_below and t not in values]
        assert not missing, f"seed {SEED}: acknowledged txids lost: {missing[:10]}"
    # The schedule must have exercised both success and failure.
    # (About 40% of recoveries and 20% of segments get through at these fault rates.)
    assert recoveries > GENERATIONS // 5 and successes > GENERATIONS // 10, (recoveries, successes)
    assert last_acked > GENERATIONS // 2, last_acked


def check_acked(
    cluster: JNCluster, jid: str, acked: dict[int, bytes], where: str
) -> dict[int, bytes]:
    """One value per txid on every node, and each acknowledged txid holds what was written."""
    values = check_one_value_per_txid(cluster, jid)
    for txid, value in values.items():
        if txid in acked:
            assert value == acked[txid], f"{where}: txid {txid} is {value!r}, acked {acked[txid]!r}"
    return values


class ReadLog:
    """What readers returned so far: a value read once is the txid's value for ever."""

    def __init__(self) -> None:
        self.values: dict[int, bytes] = {}
        self.reads = 0

    def record(self, ops: list[RawOp], acked: dict[int, bytes], where: str) -> None:
        """Check each op against the acknowledged value and every earlier read."""
        for op in ops:
            if op.txid in acked:
                assert op.body == acked[op.txid], (
                    f"{where}: read txid {op.txid} as {op.body!r}, acked {acked[op.txid]!r}"
                )
            before = self.values.setdefault(op.txid, op.body)
            assert before == op.body, f"{where}: txid {op.txid} read as {before!r}, now {op.body!r}"

    async def check(
        self,
        reader: QuorumJournalReader,
        start: int,
        durable: int,
        acked: dict[int, bytes],
        where: str,
    ) -> None:
        """Read the journal (segments and the nodes' caches) between writer generations."""
        ops = [op async for op in reader.read(start, in_progress_ok=True)]
        where = f"{where}: reading from txid {start}"
        assert [op.txid for op in ops] == list(range(start, start + len(ops))), where
        assert start + len(ops) - 1 >= durable, (
            f"{where}: read ended at {start + len(ops) - 1}, but {durable} is finalized"
        )
        self.record(ops, acked, where)
        if ops:
            try:
                cached = await reader.read_journaled(ops[-1].txid)
            except QuorumError:
                cached = []  # a cache miss (a node restarted its segment): no answer
            self.record(cached, acked, f"{where} (cached)")
        self.reads += 1
