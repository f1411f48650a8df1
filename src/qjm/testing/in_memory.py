"""JournalNodes in this process, reached without sockets (Hadoop's TestQuorumJournalManagerUnit).

InMemoryCluster holds N real JournalNodes on their own edits dirs, opened without listening.
InMemoryClient is an RpcClient (what IPCLoggerChannel needs) whose call() encodes the
request to protobuf bytes, hands them to the node's real IPC handlers (journalnode/rpc.py:
the same field checks, journal threads and error types as over the wire), and decodes
the answer from bytes; an error leaves as the Java class name and message the IPC server
would send and comes back as the error type the IPC client would raise. accept_recovery's
segment download reads the source node's file through the same lookup as its /getJournal.

Faults, per node (NodeFaults, qjm.testing.faults), all deterministic: fail the next k calls
of a method before the node sees them; drop the answer after the node applied the call;
hold calls at a gate until the test opens it (a held call holds back the later calls of its
connection, as a stalled TCP connection would); crash a node (calls fail as unreachable)
and restart it from its disk; or a seeded random schedule of failures and dropped answers.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import urllib.parse
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.protobuf.message import Message

from qjm.config import JournalNodeSettings
from qjm.editlog.framing import iter_ops, read_header
from qjm.editlog.segments import list_segments
from qjm.ipc import CallContext, Method, MethodSpec, RemoteError
from qjm.journalnode.journal import FaultInjector, Journal
from qjm.journalnode.node import JournalNode
from qjm.journalnode.rpc import JournalNodeHandlers
from qjm.journalnode.segment_fetch import FetchError, FetchLimits
from qjm.journalnode.syncer import JournalNodeSyncer
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import JournalNodeUnavailable, StorageInfoMismatchError
from qjm.protocol.qjournal import PROTOCOLS, QJOURNAL_PROTOCOL
from qjm.protocol.qjournal_client import translate_remote_error
from qjm.protocol.urls import parse_get_journal_query
from qjm.testing.faults import Action, Gate, InjectedFault, NodeFaults, RpcRecord

__all__ = [
    "Action",
    "Gate",
    "InMemoryClient",
    "InMemoryCluster",
    "InjectedFault",
    "NodeFaults",
    "RpcRecord",
]

RPC_PORT = 8485
HTTP_PORT = 8480
IO_EXCEPTION = "java.io.IOException"
FETCH_METHOD = "getJournal"  # the name a segment download has in fault rules and logs


def _method_table() -> dict[str, tuple[str, MethodSpec]]:
    table: dict[str, tuple[str, MethodSpec]] = {}
    for protocol, specs in PROTOCOLS.items():
        for name, spec in specs.items():
            if name not in table or protocol == QJOURNAL_PROTOCOL:
                table[name] = (protocol, spec)
    return table


METHODS = _method_table()


class _Node:
    """One JournalNode slot of the cluster: the running node (None while crashed)."""

    def __init__(self, index: int, edits_dir: Path) -> None:
        self.index = index
        self.edits_dir = edits_dir
        self.address = f"jn{index}.in-memory.invalid:{RPC_PORT}"
        self.http_host = f"jn{index}.in-memory.invalid"
        self.node: JournalNode | None = None
        self.methods: dict[str, Method] = {}
        self.generation = 0  # bumped at every crash: answers of an older run are lost
        self.call_ids = 0


@dataclass
class _Queued:
    method: str
    body: bytes
    gate: Gate | None
    answer: asyncio.Future[bytes]
    generation: int


class InMemoryClient:
    """One writer's connection to one in-process JournalNode (an RpcClient)."""

    def __init__(self, cluster: InMemoryCluster, slot: _Node) -> None:
        self.cluster = cluster
        self.slot = slot
        self.address = slot.address
        self.faults = cluster.faults[slot.index]
        self.client_id = random.randbytes(16)
        self._queue: deque[_Queued] = deque()  # calls held back, in call order
        self._unstarted = 0  # handler tasks created and not yet running (as the IPC server)
        self._closed = False

    def __str__(self) -> str:
        return self.address

    def _unreachable(self, method: str) -> InjectedFault:
        return InjectedFault(f"{self.address}: unreachable ({method}): the JournalNode is down")

    async def call(self, method: str, request: Any, deadline: float) -> Any:
        """Encode, maybe fault, deliver in connection order, decode; raise QjmError on failure."""
        found = METHODS.get(method)
        if found is None:
            raise RemoteError(
                "org.apache.hadoop.ipc.RpcNoSuchMethodException",
                f"unknown method {method}",
                peer=self.address,
                method=method,
            )
        protocol, spec = found
        body = request.SerializeToString()  # EncodeError on a missing required field
        try:
            resp = await self._call(protocol, spec, method, body, deadline)
        except BaseException as e:
            self._record(RpcRecord(method, request, error=e))
            raise
        self._record(RpcRecord(method, request, response=resp))
        return resp

    def _record(self, record: RpcRecord) -> None:
        self.faults.log.append(record)
        if self.faults.on_record is not None:
            self.faults.on_record(record)

    async def _call(
        self, protocol: str, spec: MethodSpec, method: str, body: bytes, deadline: float
    ) -> Message:
        slot = self.slot
        if self._closed:
            raise JournalNodeUnavailable(f"{self.address}: {method} on a closed client")
        verdict = self.faults.decide(method, spec.request.FromString(body))
        if slot.node is None:
            raise self._unreachable(method)
        if verdict is Action.FAIL:
            raise InjectedFault.failed(self.address, method)
        loop = asyncio.get_running_loop()
        gate = verdict if isinstance(verdict, Gate) and not verdict.opened else None
        if gate is None and self.faults.delay_s:
            # A slow link: the call waits at a gate of its own that opens after the delay.
            gate = Gate(f"{self.address}:delay")
            loop.call_later(self.faults.delay_s, gate.open)
        answer: asyncio.Future[bytes] = loop.create_future()
        answer.add_done_callback(lambda f: f.cancelled() or f.exception())
        queued = _Queued(method, body, gate, answer, slot.generation)
        if gate is not None or self._queue:
            self._queue.append(queued)
            if gate is not None:
                gate.held.set()
                gate.when_open(self._drain)
        else:
            self._deliver(protocol, queued)
        try:
            # asyncio.timeout, not wait_for: wait_for (3.11) swallows a cancellation that
            # arrives as the answer does, and a closing channel would wait for it forever.
            async with asyncio.timeout(deadline):
                raw = await asyncio.shield(answer)
        except TimeoutError:
            raise JournalNodeUnavailable(f"{self.address}: {method} timed out") from None
        if slot.generation != queued.generation:
            raise self._unreachable(method)  # it crashed: the answer was lost with it
        if verdict is Action.DROP:
            raise InjectedFault.answer_lost(self.address, method)
        resp = spec.response.FromString(raw)
        if self.faults.tamper is not None:
            resp = self.faults.tamper(method, resp)
        return resp

    def _drain(self) -> None:
        """Deliver the held-back calls in order, up to one at a gate still closed."""
        while self._queue:
            q = self._queue[0]
            if q.gate is not None and not q.gate.opened:
                return
            self._queue.popleft()
            if q.generation != self.slot.generation or self.slot.node is None:
                if not q.answer.done():
                    q.answer.set_exception(self._unreachable(q.method))
                continue
            self._deliver(METHODS[q.method][0], q)

    def _deliver(self, protocol: str, q: _Queued) -> None:
        """Start the node's handler now (its journal work is queued in delivery order)."""
        slot = self.slot
        handler = slot.methods[q.method]
        slot.call_ids += 1
        ctx = CallContext(
            protocol=protocol,
            method=q.method,
            user="in-memory",
            client_id=self.client_id,
            call_id=slot.call_ids,
            retry_count=0,
            peer=f"writer.in-memory.invalid:{slot.call_ids}",
        )
        request = handler.request_type.FromString(q.body)
        address = self.address

        def fail(exc: BaseException) -> None:
            # As the IPC server sends it and the IPC client raises it.
            java = getattr(exc, "java_class", None)
            name = java if isinstance(java, str) and java else IO_EXCEPTION
            remote = RemoteError(name, str(exc) or type(exc).__name__, peer=address)
            if not q.answer.done():
                q.answer.set_exception(translate_remote_error(address, remote))

        def answer(response: Message) -> None:
            try:
                raw = response.SerializeToString()
            except Exception as exc:
                fail(exc)
                return
            if not q.answer.done():
                q.answer.set_result(raw)

        if handler.start is not None and self._unstarted == 0:
            # Started at once, without a task, as the IPC server starts it.
            try:
                fut = handler.start(request, ctx)
            except Exception as exc:
                fail(exc)
                return

            def landed(f: asyncio.Future[Message]) -> None:
                if f.cancelled():
                    fail(JournalNodeUnavailable(f"{address}: {q.method} was cancelled"))
                elif (exc := f.exception()) is not None:
                    fail(exc)
                else:
                    answer(f.result())

            fut.add_done_callback(landed)
            return

        self._unstarted += 1

        async def serve() -> None:
            self._unstarted -= 1
            try:
                response = await handler.handler(request, ctx)
            except Exception as exc:
                fail(exc)
                return
            answer(response)

        task = asyncio.get_running_loop().create_task(serve(), name=f"in-memory-{q.method}")
        self.cluster._tasks.add(task)
        task.add_done_callback(self.cluster._tasks.discard)

    def fail_queued(self) -> None:
        """Fail every held-back call as unreachable (the node crashed)."""
        while self._queue:
            q = self._queue.popleft()
            if not q.answer.done():
                q.answer.set_exception(self._unreachable(q.method))

    async def close(self) -> None:
        """Drop the connection: held-back calls fail."""
        self._closed = True
        self.fail_queued()


def _write_synced(dest: Path, data: bytes) -> None:
    """Write a downloaded segment and fsync it."""
    with open(dest, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _read_prefix(path: Path, length: int) -> bytes:
    """The first length bytes of a file."""
    with open(path, "rb") as f:
        return f.read(length)


class InMemoryFetcher:
    """A JournalNode's segment downloads, read from the source node's file (no HTTP)."""

    def __init__(self, cluster: InMemoryCluster, loop: asyncio.AbstractEventLoop) -> None:
        self.cluster = cluster
        self.loop = loop
        self.cancelled = False

    def fetch(self, url: str, dest: Path, limits: FetchLimits) -> int:
        """Copy the segment url names into dest (fsynced); runs on a fetch thread."""
        if self.cancelled:
            raise FetchError(f"download of {url} cancelled: the JournalNode is stopping")
        future = asyncio.run_coroutine_threadsafe(self.cluster._serve_segment(url), self.loop)
        data = future.result(limits.deadline_seconds)
        if len(data) > limits.max_bytes:
            raise FetchError(f"{url} sent {len(data)} bytes, more than {limits.max_bytes}")
        try:
            read_header(data)
        except Exception as e:
            raise FetchError(f"{url} is not an edit log: {e}") from None
        with open(dest, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        return len(data)

    def cancel_all(self) -> None:
        """Refuse later downloads (the node is stopping)."""
        self.cancelled = True


class InMemoryCluster:
    """N JournalNodes in this process, their journals real, their transport in memory."""

    def __init__(
        self,
        root: Path,
        n: int = 3,
        settings: JournalNodeSettings | None = None,
    ) -> None:
        self.root = root
        self.n = n
        self.settings = settings or JournalNodeSettings(sync_enabled=False, max_journals=100_000)
        self.slots = [_Node(i, root / f"jn{i}") for i in range(n)]
        self.faults = [NodeFaults(s.address) for s in self.slots]
        self.injectors = [FaultInjector() for _ in range(n)]
        self.clients: list[InMemoryClient] = []
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> InMemoryCluster:
        for i in range(self.n):
            await self.start_node(i)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    # -- addresses -------------------------------------------------------------------------
    @property
    def addresses(self) -> list[str]:
        """Every node's RPC address (names that resolve nowhere: nothing listens)."""
        return [s.address for s in self.slots]

    def uri(self, jid: str) -> str:
        """The qjournal URI of every node."""
        return f"qjournal://{';'.join(self.addresses)}/{jid}"

    def index(self, address: str) -> int:
        """The node index of an RPC address."""
        for s in self.slots:
            if s.address == address:
                return s.index
        raise KeyError(f"no in-memory JournalNode at {address}")

    def client(self, address: str) -> InMemoryClient:
        """A new connection to a node: pass as a QuorumJournalManager's client_factory."""
        c = InMemoryClient(self, self.slots[self.index(address)])
        self.clients.append(c)
        return c

    def node(self, i: int) -> JournalNode:
        """Node i, which must be running."""
        node = self.slots[i].node
        assert node is not None, f"jn{i} is down"
        return node

    # -- lifecycle -------------------------------------------------------------------------
    async def start_node(self, i: int) -> None:
        """Start node i from its disk (a restart after a crash)."""
        slot = self.slots[i]
        assert slot.node is None, f"jn{i} is running"
        node = JournalNode(
            slot.edits_dir,
            (slot.http_host, RPC_PORT),
            (slot.http_host, HTTP_PORT),
            self.settings,
            faults=self.injectors[i],
        )
        fetcher = InMemoryFetcher(self, asyncio.get_running_loop())

        def use_memory(journal: Journal) -> None:
            journal.fetcher = fetcher  # type: ignore[assignment]

        node.on_journal_open = use_memory
        await node.open_storage()
        handlers = JournalNodeHandlers(node)
        slot.methods = {
            name: handlers.methods(PROTOCOLS[protocol])[name]
            for name, (protocol, _) in METHODS.items()
        }
        slot.node = node

    async def crash(self, i: int) -> None:
        """Node i goes down: calls fail as unreachable; its disk stays."""
        slot = self.slots[i]
        node = slot.node
        assert node is not None, f"jn{i} is already down"
        slot.node = None
        slot.generation += 1
        for c in self.clients:
            if c.slot is slot:
                c.fail_queued()
        await node.stop()

    async def restart(self, i: int) -> None:
        """Crash node i if it runs, then start it from its disk."""
        if self.slots[i].node is not None:
            await self.crash(i)
        await self.start_node(i)

    def is_up(self, i: int) -> bool:
        """Whether node i runs."""
        return self.slots[i].node is not None

    async def wipe(self, i: int, jid: str) -> None:
        """Node i loses a journal's storage (a new disk): it crashes and starts without it."""
        if self.slots[i].node is not None:
            await self.crash(i)
        shutil.rmtree(self.slots[i].edits_dir / jid, ignore_errors=True)
        await self.start_node(i)

    async def sync(self, i: int) -> int:
        """One round of node i's real syncer, its peers the other nodes; segments installed."""
        peers = [s.address for s in self.slots if s.index != i]
        syncer = JournalNodeSyncer(
            self.node(i), peers, 1.0, status_of=self._node_status, fetch=self._fetch
        )
        return await syncer.sync_round()

    async def _node_status(self, peer: str) -> pb.NodeStatusProto:
        """A node's status as its status protocol would answer a peer's syncer."""
        slot = self.slots[self.index(peer)]
        verdict = self.faults[slot.index].decide("getNodeStatus", pb.GetNodeStatusRequestProto())
        if slot.node is None or verdict is not None:
            raise InjectedFault(f"{peer}: unreachable (getNodeStatus)")
        return await slot.node.node_status()

    async def _fetch(self, url: str, dest: Path) -> None:
        """A syncer's download of a finalized segment, without HTTP."""
        data = await self._serve_segment(url)
        await asyncio.to_thread(_write_synced, dest, data)

    async def shutdown(self) -> None:
        """Stop every running node."""
        for c in self.clients:
            c.fail_queued()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=10)
        for i in range(self.n):
            if self.slots[i].node is not None:
                await self.crash(i)

    # -- the /getJournal of a node, without HTTP ----------------------------------------------
    async def _serve_segment(self, url: str) -> bytes:
        """The bytes a node's /getJournal would send for url; FetchError when it would not."""
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        slot = next((s for s in self.slots if s.http_host == host), None)
        if slot is None or slot.node is None:
            raise FetchError(f"cannot fetch {url}: no JournalNode answers at {host}")
        asked = parse_get_journal_query(dict(urllib.parse.parse_qsl(parts.query)))
        verdict = self.faults[slot.index].decide(FETCH_METHOD, url)
        if verdict is not None:
            raise FetchError(f"cannot fetch {url}: injected failure")
        node = slot.node
        try:
            found = await node.run(asked.jid, lambda j: j.segment_for(asked))
        except StorageInfoMismatchError as e:
            raise FetchError(f"cannot fetch {url}: 403, {e}") from None
        if found is None:
            raise FetchError(f"cannot fetch {url}: 404, no such segment")
        path, length = found
        return await asyncio.to_thread(_read_prefix, path, length)

    # -- what the nodes hold, read from disk -----------------------------------------------
    def segments(
        self, i: int, jid: str, finalized_only: bool = True
    ) -> dict[tuple[int, int | None], dict[int, bytes]]:
        """Node i's segments on disk: (start, end or None if in progress) -> {txid: body}."""
        current = self.slots[i].edits_dir / jid / "current"
        out: dict[tuple[int, int | None], dict[int, bytes]] = {}
        if not current.is_dir():
            return out
        for seg in list_segments(current):
            if finalized_only and seg.end is None:
                continue
            try:
                data = seg.path.read_bytes()
            except FileNotFoundError:
                continue  # purged (or renamed by finalize) since it was listed
            try:
                read_header(data)
            except Exception:
                continue  # an empty in-progress file
            out[(seg.start, seg.end)] = {op.txid: op.body for op in iter_ops(data)}
        return out

    def segment_names(self, i: int, jid: str) -> list[str]:
        """Node i's segment file names."""
        current = self.slots[i].edits_dir / jid / "current"
        return [s.path.name for s in list_segments(current)] if current.is_dir() else []
