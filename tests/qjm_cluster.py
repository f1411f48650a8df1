"""Test harness for the quorum journal client: in-process JournalNodes and fault injection.

JNCluster runs real JournalNode servers (Hadoop IPC + HTTP on 127.0.0.1) in the test's event
loop; a node can be stopped and restarted on the same ports and storage. FaultyClient
wraps a JournalNodeClient so the fault rules of qjm.testing.faults (the in-memory
transport's) apply over sockets: make a node look down, fail chosen RPCs before they reach
the node, lose their answers, or hold them; the nodes' FaultInjector crashes
accept_recovery before or after it persists paxos data.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ports import free_port
from qjm.client.admin import new_namespace_info
from qjm.client.journalnode_client import JournalNodeClient, JournalNodeUnavailable
from qjm.client.output_stream import QuorumOutputStream
from qjm.client.quorum_journal_manager import QuorumJournalManager
from qjm.config import JournalNodeSettings, QJournalSettings
from qjm.editlog.framing import OP_OPAQUE, iter_ops, read_header
from qjm.editlog.segments import list_segments
from qjm.journalnode.journal import FaultInjector
from qjm.journalnode.node import JournalNode
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.qjournal import journal_id
from qjm.testing.faults import Action, Gate, InjectedFault, NodeFaults, RpcRecord

# Short timeouts: in-process nodes answer in milliseconds, and a test waiting on a
# stopped node should fail within seconds, not HDFS's minutes.
FAST_SETTINGS = QJournalSettings(
    start_segment_timeout_ms=5_000,
    prepare_recovery_timeout_ms=5_000,
    accept_recovery_timeout_ms=5_000,
    finalize_segment_timeout_ms=5_000,
    select_input_streams_timeout_ms=5_000,
    get_journal_state_timeout_ms=5_000,
    new_epoch_timeout_ms=5_000,
    write_txns_timeout_ms=5_000,
)
_jids = itertools.count(1)


def payload(txid: int, tag: str = "") -> bytes:
    """The body a test op carries: names its txid, so every txid has a checkable value."""
    return f"tx {txid} {tag}".encode()


class FaultyClient:
    """A JournalNodeClient whose calls pass through a NodeFaults (qjm.testing.faults) first.

    The rules mean what they mean over the in-memory transport: FAIL never sends the call,
    DROP sends it and loses the answer, a gate holds it. A delayed or held call holds back
    the calls made after it, as a slow link or a stalled connection would: the node still
    receives one writer's calls in order.
    """

    def __init__(self, inner: JournalNodeClient, faults: NodeFaults) -> None:
        self.inner = inner
        self.faults = faults
        self.address = inner.address
        if not faults.address:
            faults.address = inner.address
        self._previous_send: asyncio.Future[None] | None = None

    async def call(self, method: str, request: Any, deadline: float) -> Any:
        """Judge the call by the node's faults, maybe send it, and record the outcome."""
        try:
            resp = await self._call(method, request, deadline)
        except BaseException as e:
            self._record(RpcRecord(method, request, error=e))
            raise
        self._record(RpcRecord(method, request, response=resp))
        return resp

    def _record(self, record: RpcRecord) -> None:
        self.faults.log.append(record)
        if self.faults.on_record is not None:
            self.faults.on_record(record)

    async def _call(self, method: str, request: Any, deadline: float) -> Any:
        f = self.faults
        verdict = f.decide(method, request)
        if verdict is Action.FAIL:
            raise InjectedFault.failed(self.address, method)
        gate = verdict if isinstance(verdict, Gate) and not verdict.opened else None
        previous = self._previous_send
        if gate is not None or f.delay_s or (previous is not None and not previous.done()):
            mine: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._previous_send = mine
            try:
                if previous is not None and not previous.done():
                    await asyncio.shield(previous)
                if f.delay_s:
                    await asyncio.sleep(f.delay_s)  # injected latency, not synchronization
                if gate is not None:
                    gate.held.set()
                    try:
                        async with asyncio.timeout(deadline):
                            await gate.wait_open()
                    except TimeoutError:
                        raise JournalNodeUnavailable(
                            f"{self.address}: {method} timed out"
                        ) from None
                # The task sends the call before the next held call goes on.
                sent = asyncio.ensure_future(self.inner.call(method, request, deadline))
            finally:
                if not mine.done():
                    mine.set_result(None)
            resp = await sent
        else:
            resp = await self.inner.call(method, request, deadline)
        if verdict is Action.DROP:
            raise InjectedFault.answer_lost(self.address, method)
        if f.tamper is not None:
            resp = f.tamper(method, resp)
        return resp

    async def close(self) -> None:
        """Close the real client."""
        await self.inner.close()


class JNCluster:
    """N real JournalNodes in this process, each restartable on its ports and storage."""

    def __init__(self, root: Path, n: int = 3) -> None:
        self.root = root
        self.n = n
        self.nodes: list[JournalNode | None] = [None] * n
        self.injectors = [FaultInjector() for _ in range(n)]
        # Ports below the ephemeral range, so a restart finds its port free.
        self.rpc_ports = [free_port() for _ in range(n)]
        self.http_ports = [free_port() for _ in range(n)]

    async def __aenter__(self) -> JNCluster:
        for i in range(self.n):
            await self.start_node(i)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    def edits_dir(self, i: int) -> Path:
        """Node i's edits dir."""
        return self.root / f"jn{i}"

    def current_dir(self, i: int, jid: str) -> Path:
        """Node i's current/ of a journal."""
        return self.edits_dir(i) / jid / "current"

    async def start_node(self, i: int) -> None:
        """Start (or restart) node i on its ports."""
        assert self.nodes[i] is None, f"jn{i} is running"
        node = JournalNode(
            self.edits_dir(i),
            ("127.0.0.1", self.rpc_ports[i]),
            ("127.0.0.1", self.http_ports[i]),
            # Fault schedules use a new journal per scenario: more than max_journals' default.
            JournalNodeSettings(max_journals=100_000),
            faults=self.injectors[i],
        )
        await node.start()
        self.rpc_ports[i] = node.rpc_port
        self.http_ports[i] = node.http_port
        self.nodes[i] = node

    async def stop_node(self, i: int) -> None:
        """Stop node i (its storage stays)."""
        node = self.nodes[i]
        assert node is not None, f"jn{i} is not running"
        self.nodes[i] = None
        await node.stop()

    async def restart_node(self, i: int) -> None:
        """Stop node i if it runs, then start it again."""
        if self.nodes[i] is not None:
            await self.stop_node(i)
        await self.start_node(i)

    async def shutdown(self) -> None:
        """Stop every running node."""
        for i in range(self.n):
            if self.nodes[i] is not None:
                await self.stop_node(i)

    def address(self, i: int) -> str:
        """Node i's RPC address."""
        return f"127.0.0.1:{self.rpc_ports[i]}"

    def uri(self, jid: str) -> str:
        """The qjournal URI of all nodes."""
        return f"qjournal://{';'.join(self.address(i) for i in range(self.n))}/{jid}"

    def new_jid(self) -> str:
        """A fresh journal id (a new journal on the same running nodes)."""
        return f"j{next(_jids)}"

    def qjm(
        self,
        jid: str,
        faults: list[NodeFaults] | None = None,
        ns_info: pb.NamespaceInfoProto | None = None,
        settings: QJournalSettings = FAST_SETTINGS,
        **kw: Any,
    ) -> QuorumJournalManager:
        """A QJM on this cluster whose RPCs pass through per-node faults."""
        plans = faults if faults is not None else [NodeFaults() for _ in range(self.n)]
        by_addr = {self.address(i): plans[i] for i in range(self.n)}

        def factory(addr: str) -> FaultyClient:
            return FaultyClient(JournalNodeClient(addr), by_addr[addr])

        return QuorumJournalManager(self.uri(jid), ns_info, settings, client_factory=factory, **kw)

    async def format(
        self, jid: str, ns: pb.NamespaceInfoProto | None = None
    ) -> pb.NamespaceInfoProto:
        """Format a journal on every node."""
        ns = ns or new_namespace_info(cluster_id="CID-test", namespace_id=12345)
        q = self.qjm(jid)
        try:
            await q.format(ns)
        finally:
            await q.close()
        return ns

    # -- reading what the nodes hold, straight from disk -------------------------------------
    def segment_files(self, i: int, jid: str) -> list[str]:
        """Names of node i's segment files."""
        return [s.path.name for s in list_segments(self.current_dir(i, jid))]

    def read_segments(
        self, i: int, jid: str, finalized_only: bool = True
    ) -> dict[tuple[int, int | None], dict[int, bytes]]:
        """Node i's segments: (start, end or None) -> {txid: body}."""
        return read_dir_segments(self.current_dir(i, jid), finalized_only)

    def finalized_txids(self, i: int, jid: str) -> dict[int, bytes]:
        """Every txid in node i's finalized segments with its body."""
        merged: dict[int, bytes] = {}
        for ops in self.read_segments(i, jid).values():
            merged.update(ops)
        return merged


def read_dir_segments(
    current: Path, finalized_only: bool = True
) -> dict[tuple[int, int | None], dict[int, bytes]]:
    """The segments in a JournalNode's current/ dir: (start, end or None) -> {txid: body}."""
    out: dict[tuple[int, int | None], dict[int, bytes]] = {}
    for seg in list_segments(current):
        if finalized_only and seg.end is None:
            continue
        data = seg.path.read_bytes()
        try:
            read_header(data)
        except Exception:
            continue  # an empty or padding-only in-progress file
        out[(seg.start, seg.end)] = {op.txid: op.body for op in iter_ops(data)}
    return out


def check_one_value_per_txid(cluster: JNCluster, jid: str) -> dict[int, bytes]:
    """Every txid has one value on every node holding it in a finalized segment."""
    return check_dirs_agree([cluster.current_dir(i, jid) for i in range(cluster.n)])


def check_dirs_agree(currents: list[Path]) -> dict[int, bytes]:
    """Every finalized segment is whole, and each txid has one value across these dirs."""
    seen: dict[int, tuple[int, bytes]] = {}
    for i, current in enumerate(currents):
        for (start, end), ops in read_dir_segments(current).items():
            assert end is not None
            assert sorted(ops) == list(range(start, end + 1)), (
                f"jn{i} finalized segment {start}-{end} holds txids {min(ops, default=None)}-"
                f"{max(ops, default=None)}"
            )
            for txid, body in ops.items():
                if txid in seen:
                    other, value = seen[txid]
                    assert value == body, (
                        f"txid {txid} differs: jn{other} has {value!r}, jn{i} has {body!r}"
                    )
                else:
                    seen[txid] = (i, body)
    return {t: v for t, (_, v) in seen.items()}


def check_finalized_on_quorum(cluster: JNCluster, jid: str, start: int, end: int) -> None:
    """A majority of nodes hold edits_<start>-<end>."""
    holders = [i for i in range(cluster.n) if (start, end) in cluster.read_segments(i, jid)]
    assert len(holders) > cluster.n // 2, (
        f"segment {start}-{end} finalized only on {holders}: "
        + "; ".join(f"jn{i}: {cluster.segment_files(i, jid)}" for i in range(cluster.n))
    )


async def write_txns(stream: QuorumOutputStream, first: int, n: int, tag: str = "") -> int:
    """Write n opaque ops from txid first and sync them as one batch; returns the last."""
    for txid in range(first, first + n):
        got = stream.write_op(OP_OPAQUE, payload(txid, tag))
        assert got == txid, f"stream gave txid {got}, expected {txid}"
    return await stream.flush()


async def write_segment(
    q: QuorumJournalManager, first: int, n: int, finalize: bool = True, tag: str = ""
) -> QuorumOutputStream:
    """Start a segment at first, write n txns in one batch, optionally finalize it."""
    stream = await q.start_log_segment(first)
    await write_txns(stream, first, n, tag)
    if finalize:
        await stream.close()
        await q.finalize_log_segment(first, first + n - 1)
    return stream


async def journal_with_segments(
    cluster: JNCluster, segments: Sequence[tuple[int, int] | tuple[int, int, bool]]
) -> str:
    """A new formatted journal holding segments (first txid, txns[, finalized: True]),
    written by one writer that is closed after; its jid."""
    jid = cluster.new_jid()
    await cluster.format(jid)
    q = cluster.qjm(jid)
    try:
        await q.recover_unfinalized_segments()
        for first, n, *finalized in segments:
            await write_segment(q, first, n, finalize=finalized[0] if finalized else True)
    finally:
        await settle(q)
    return jid


async def settle(q: QuorumJournalManager, wait_s: float = 10.0) -> None:
    """Let every call already sent reach its node, then close the writer.

    A quorum call returns after a majority answered; closing right away would cancel
    the calls still on their way to the other nodes and make their state depend on
    timing. Scenario tests settle; the randomized test also crashes writers mid-call.
    """
    try:
        await asyncio.wait_for(q.loggers.wait_idle(), wait_s)
    finally:
        await q.close()


async def wait_reachable(q: QuorumJournalManager, node: int, wait_s: float = 10.0) -> None:
    """Wait until the writer's connection to a (re)started node answers."""
    ch = q.loggers.channels[node]
    deadline = asyncio.get_running_loop().time() + wait_s
    while True:
        try:
            await ch.client.call(
                "isFormatted", pb.IsFormattedRequestProto(jid=journal_id(ch.jid)), 1.0
            )
            return
        except JournalNodeUnavailable:
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.05)  # poll interval of a wait bounded by the deadline


async def recover(cluster: JNCluster, jid: str, faults: list[NodeFaults] | None = None) -> int:
    """A new writer fences and recovers, and settles; returns the recovered last txid."""
    q = cluster.qjm(jid, faults)
    try:
        return await q.recover_unfinalized_segments()
    finally:
        await settle(q)


def rng(seed: int) -> random.Random:
    """A seeded random generator."""
    return random.Random(seed)
