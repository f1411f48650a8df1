"""The chaos workload: HA clients, each writing its own subtree one call at a time (mkdirs,
create+complete, rename, delete, setPermission) and reading its own and the others' paths,
every call recorded in the history and checked against its client's model.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from google.protobuf.message import Message

from qjm.errors import QjmError
from qjm.ipc import IpcClient, RemoteError
from qjm.namenode.client import NameNodeClient
from qjm.namenode.types import FileStatus
from qjm.testing.chaos.history import (
    Attempt,
    CallRecord,
    History,
    attempt_kind,
    classify,
)
from qjm.testing.chaos.model import (
    DIR_MODE,
    Observed,
    Op,
    SubtreeModel,
    Verdict,
    is_under,
    parent,
)

ROOT = "/chaos"
MODES = (0o700, 0o711, 0o750, 0o755, 0o770, 0o775, 0o777)
MAX_DEPTH = 3  # levels of directories below a client's root
LIVE_LIMIT = 40  # entries a client keeps; above it, it deletes more often
INVALID_P = 0.1  # share of writes made to be refused (or to change nothing)
BLOCK_SIZE = 128 * 1024 * 1024
REPLICATION = 3
# kind -> weight of the next call a client makes
WEIGHTS = {
    "mkdirs": 18,
    "create": 22,
    "rename": 14,
    "delete": 10,
    "chmod": 12,
    "stat": 8,
    "list": 6,
    "cross": 10,
}


class _AttemptRecorder:
    """Stands in for one NameNode's IpcClient inside a NameNodeClient: passes each call on
    and notes how it ended."""

    def __init__(self, inner: IpcClient, attempts: list[Attempt]) -> None:
        self.inner = inner
        self.attempts = attempts

    async def call(
        self,
        method: str,
        request: Message,
        response_type: type[Message],
        timeout: float | None = None,  # noqa: ASYNC109
        call_id: int | None = None,
    ) -> Message:
        try:
            response = await self.inner.call(
                method, request, response_type, timeout=timeout, call_id=call_id
            )
        except BaseException as e:
            self.attempts.append(Attempt(self.inner.address, attempt_kind(e), str(e)[:200]))
            raise
        self.attempts.append(Attempt(self.inner.address, "answer"))
        return response

    async def close(self) -> None:
        await self.inner.close()


class RecordingClient(NameNodeClient):
    """The product's HA client (its own failover and retries), noting every attempt of each
    call in attempts (cleared by the caller before a call)."""

    def __init__(self, addresses: list[str], **kwargs: Any) -> None:
        super().__init__(addresses, **kwargs)
        self.attempts: list[Attempt] = []
        self._recorders: dict[str, _AttemptRecorder] = {}

    def _client(self, address: str) -> IpcClient:
        inner = super()._client(address)
        rec = self._recorders.get(address)
        if rec is None or rec.inner is not inner:
            rec = self._recorders[address] = _AttemptRecorder(inner, self.attempts)
        return cast(IpcClient, rec)


@dataclass
class Gate:
    """Lets the clients run, or holds them between calls (while the checks look)."""

    running: asyncio.Event = field(default_factory=asyncio.Event)
    busy: set[int] = field(default_factory=set)
    idle: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def enter(self, client: int) -> None:
        """Wait until calls may be made; then count client as busy."""
        await self.running.wait()
        self.busy.add(client)

    async def leave(self, client: int) -> None:
        """client made its call."""
        self.busy.discard(client)
        async with self.idle:
            self.idle.notify_all()

    async def pause(self, within_s: float) -> bool:
        """Hold every client after its call in flight; False if one is still busy after
        within_s."""
        self.running.clear()
        async with self.idle:
            try:
                await asyncio.wait_for(self.idle.wait_for(lambda: not self.busy), within_s)
            except TimeoutError:
                return False
        return True

    def resume(self) -> None:
        """Let the clients go on."""
        self.running.set()


def depth(model: SubtreeModel, path: str) -> int:
    """Levels of path below the client's root (the root is 0)."""
    return 0 if path == model.root else path[len(model.root) :].count("/")


def choose_op(rng: random.Random, model: SubtreeModel, fresh: int) -> tuple[str, Op]:
    """The next call a client makes on its subtree (fresh names end in fresh): ("write", op),
    ("read", op), or ("cross", Op("stat")) for a read of another client's path.

    Every write touches only paths the model knows exactly (model.may_write holds).
    """
    state = model.ns.state
    live = [p for p in state if p != model.root and not model.blocked(p)]
    dirs = [model.root] + [p for p in live if state[p][0] == "d" and depth(model, p) < MAX_DEPTH]
    files = [p for p in live if state[p][0] == "f"]
    weights = dict(WEIGHTS)
    if len(state) > LIVE_LIMIT:
        weights["delete"] *= 4
        weights["create"] //= 2
        weights["mkdirs"] //= 2
    kind = rng.choices(list(weights), list(weights.values()))[0]
    invalid = rng.random() < INVALID_P
    new_dir = f"{rng.choice(dirs)}/d{fresh}"
    new_file = f"{rng.choice(dirs)}/f{fresh}"
    op: Op | None = None
    if kind == "mkdirs":
        # an existing file is refused; an existing directory is nothing to do
        op = Op("mkdirs", rng.choice(live)) if invalid and live else Op("mkdirs", new_dir)
    elif kind == "create":
        if invalid and live:
            op = Op("create", rng.choice(live))  # exists: refused
        elif invalid and files:
            op = Op("create", f"{rng.choice(files)}/f{fresh}")  # under a file: refused
        else:
            op = Op("create", new_file)
    elif kind == "rename":
        movable = [p for p in live if not model.blocked(p, subtree_too=True)]
        if invalid or not movable:
            op = Op("rename", new_dir, f"{model.root}/d{fresh}x")  # no source: refused
        else:
            src = rng.choice(movable)
            letter = "d" if state[src][0] == "d" else "f"
            targets = [d for d in dirs if not is_under(d, src)]
            taken = [
                p
                for p in movable
                if state[p][0] == state[src][0] and p != src and not is_under(p, src)
            ]
            if rng.random() < INVALID_P and taken:
                op = Op("rename", src, rng.choice(taken))  # the destination exists: refused
            elif targets:
                op = Op("rename", src, f"{rng.choice(targets)}/{letter}{fresh}")
    elif kind == "delete":
        deletable = [p for p in live if not model.blocked(p, subtree_too=True)]
        if invalid or not deletable:
            op = Op("delete", new_file)  # no such path: false
        else:
            op = Op("delete", rng.choice(deletable))
    elif kind == "chmod":
        if invalid or not live:
            op = Op("chmod", new_file, mode=rng.choice(MODES))  # no such path: refused
        else:
            op = Op("chmod", rng.choice(live), mode=rng.choice(MODES))
    elif kind in ("stat", "list"):
        known = list(model.changes)
        target = rng.choice(known) if known and rng.random() < 0.7 else rng.choice(dirs)
        if kind == "list" and target in state and state[target][0] == "f":
            target = parent(target) if target != model.root else target
        return "read", Op(kind, target)
    else:
        return "cross", Op("stat" if rng.random() < 0.6 else "list", "")
    if op is None or not model.may_write(op):
        return "read", Op("stat", model.root)
    return "write", op


def _short(value: Any) -> str:
    return str(value) if isinstance(value, bool) else ""


def observed(entries: Sequence[FileStatus] | None) -> Observed:
    """What a getListing answer shows (a file lists itself under the name "")."""
    if entries is None:
        return Observed("absent")
    if len(entries) == 1 and entries[0].name == "":
        return Observed("file", entries[0].permission)
    return Observed(
        "listing",
        entries=tuple(
            sorted((e.name, "d" if e.is_dir else "f", e.permission & 0o7777) for e in entries)
        ),
    )


def stat_observed(status: FileStatus | None) -> Observed:
    """What a getFileInfo answer shows."""
    if status is None:
        return Observed("absent")
    return Observed("dir" if status.is_dir else "file", status.permission & 0o7777)


@dataclass
class ClientSettings:
    """How a workload client calls: its per-attempt timeout and failover rounds."""

    timeout_s: float = 2.5
    max_rounds: int = 60
    backoff_s: float = 0.05
    max_backoff_s: float = 1.0


class ChaosClient:
    """One workload client: its subtree's model, its HA client, and its loop of calls."""

    def __init__(
        self,
        index: int,
        seed: int,
        namenodes: dict[str, str],
        history: History,
        gate: Gate,
        settings: ClientSettings,
    ) -> None:
        self.index = index
        self.model = SubtreeModel(f"{ROOT}/c{index}")
        self.rng = random.Random(f"{seed}:client:{index}")
        self.names = {address: name for name, address in namenodes.items()}
        self.history = history
        self.gate = gate
        self.settings = settings
        self.peers: list[ChaosClient] = []
        self.verdicts: list[tuple[Verdict, CallRecord]] = []
        self.fresh = 0
        self.stopping = False
        self._file_ids: dict[str, int] = {}  # created, not completed yet: path -> inode id
        self.client = RecordingClient(
            list(namenodes.values()),
            timeout=settings.timeout_s,
            max_rounds=settings.max_rounds,
            backoff_s=settings.backoff_s,
            max_backoff_s=settings.max_backoff_s,
        )

    async def setup(self, within_s: float) -> None:
        """Make the client's root (retried until acknowledged: mkdirs does nothing twice)."""
        op = Op("mkdirs", self.model.root)
        invoked = time.monotonic()
        seq, prediction = self.model.begin(op, invoked)
        deadline = invoked + within_s
        while True:
            rec, _ = await self._call(op, seq, prediction.logs)
            if rec.outcome == "ack":
                self.model.finish(seq, prediction, rec.completed, "ack", result=True)
                return
            if time.monotonic() > deadline:
                raise QjmError(f"client {self.index}: mkdirs {op.path} not acknowledged: {rec}")

    async def run(self) -> None:
        """Make calls until stopped."""
        while True:
            await self.gate.enter(self.index)
            try:
                if self.stopping:  # set while it waited at the gate
                    return
                await self.step()
            finally:
                await self.gate.leave(self.index)

    async def step(self) -> None:
        """Make one call (create is followed by its complete)."""
        self.fresh += 1
        what, op = choose_op(self.rng, self.model, self.fresh)
        if what == "write":
            rec = await self.write(op)
            if op.kind == "create" and rec.outcome == "ack":
                await self.write(Op("complete", op.path))
        elif what == "read":
            await self.read(op, self)
        elif self.peers:
            owner = self.rng.choice(self.peers)
            known = list(owner.model.changes)
            if known:
                await self.read(Op(op.kind, self.rng.choice(known)), owner)

    async def write(self, op: Op) -> CallRecord:
        """Make a write, record it and check its answer against the model."""
        invoked = time.monotonic()
        seq, prediction = self.model.begin(op, invoked)
        rec, value = await self._call(op, seq, prediction.logs, invoked)
        result = bool(value) if rec.outcome == "ack" and op.kind in ("mkdirs", "delete") else None
        retried = any(a.kind == "maybe" for a in self.client.attempts[:-1])
        verdicts = self.model.finish(
            seq, prediction, rec.completed, rec.outcome, rec.error, result, retried
        )
        self.verdicts += [(v, rec) for v in verdicts]
        return rec

    async def read(self, op: Op, owner: ChaosClient) -> None:
        """Make a read of owner's path; the answer is checked later (once owner's calls made
        meanwhile have been answered)."""
        rec, _ = await self._call(op, -1, False)
        rec.owner = owner.index
        rec.path = op.path

    async def _call(
        self, op: Op, seq: int, logs: bool, invoked: float | None = None
    ) -> tuple[CallRecord, Any]:
        c = self.client
        c.attempts.clear()
        invoked = time.monotonic() if invoked is None else invoked
        error: BaseException | None = None
        value: Any = None
        try:
            value = await self._send(op)
        except (QjmError, OSError) as e:
            error = e
        completed = time.monotonic()
        outcome, error_class = classify(c.attempts, error)
        last = c.attempts[-1].address if c.attempts else ""
        rec = CallRecord(
            client=self.index,
            seq=seq,
            op=op.describe(),
            kind=op.kind,
            invoked=invoked,
            completed=completed,
            outcome=outcome,
            namenode=self.names.get(last, last),
            error=error_class,
            detail=str(error)[:300] if error is not None else _short(value),
            logs=logs,
            attempts=len(c.attempts),
            tries=", ".join(f"{self.names.get(a.address, a.address)} {a.kind}" for a in c.attempts),
            path=op.path,
        )
        if op.kind in ("stat", "list"):
            if error is None:
                rec.seen = value
            elif isinstance(error, RemoteError) and outcome == "refused":
                rec.seen = Observed("error", error=error.class_name)
        self.history.add(rec)
        return rec, value

    async def _send(self, op: Op) -> Any:
        c = self.client
        if op.kind == "mkdirs":
            return await c.mkdirs(op.path, 0o777, create_parent=True)
        if op.kind == "create":
            status = await c.create(op.path, replication=REPLICATION, block_size=BLOCK_SIZE)
            self._file_ids[op.path] = status.file_id
            return True
        if op.kind == "complete":
            return await c.complete(op.path, self._file_ids.pop(op.path, 0))
        if op.kind == "rename":
            await c.rename2(op.path, op.dst)
            return True
        if op.kind == "delete":
            return await c.delete(op.path, recursive=True)
        if op.kind == "chmod":
            await c.chmod(op.path, op.mode)
            return True
        if op.kind == "stat":
            return stat_observed(await c.stat(op.path))
        if op.kind == "list":
            return observed(await c.listing(op.path))
        raise ValueError(f"unknown call {op.kind}")

    async def close(self) -> None:
        """Close the client's connections."""
        await self.client.close()


__all__ = ["DIR_MODE", "ROOT", "ChaosClient", "ClientSettings", "Gate", "choose_op"]
