"""The fault vocabulary of the test transports: what a test does to one JournalNode's link.

NodeFaults holds a node's fault rules, all deterministic: fail the next k calls of a method
before the node sees them; drop the answer after the node applied the call; hold calls at a
gate until the test opens it; or a seeded random schedule of failures and dropped answers.
The in-memory transport (qjm.testing.in_memory) and the socket wrapper of the tests read
the same rules, so one scenario runs over either.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from google.protobuf.message import Message

from qjm.protocol.errors import JournalNodeUnavailable

__all__ = ["Action", "Gate", "InjectedFault", "NodeFaults", "RpcRecord", "Rule"]


class InjectedFault(JournalNodeUnavailable):
    """A failure the test made up (the node may or may not have applied the call)."""

    @classmethod
    def failed(cls, address: str, method: str) -> InjectedFault:
        """The error of a call failed before the node saw it (Action.FAIL)."""
        return cls(f"{address}: Injected failure of {method}")

    @classmethod
    def answer_lost(cls, address: str, method: str) -> InjectedFault:
        """The error of a call the node applied and whose answer was lost (Action.DROP)."""
        return cls(f"{address}: Injected loss of the answer to {method}")


class Action(Enum):
    """What a fault rule does to one call."""

    FAIL = "fail"  # the node never sees the call; the caller gets InjectedFault
    DROP = "drop"  # the node applies the call; the caller gets InjectedFault
    HOLD = "hold"  # the call waits at a gate (see NodeFaults.hold)


class Gate:
    """Holds the calls a hold rule matched until opened; reports when it first held one."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.opened = False
        self.held = asyncio.Event()
        self._on_open: list[Callable[[], None]] = []

    def open(self) -> None:
        """Let the held calls (and those queued behind them) go, in order."""
        self.opened = True
        callbacks, self._on_open = self._on_open, []
        for cb in callbacks:
            cb()

    def when_open(self, callback: Callable[[], None]) -> None:
        """Call back once the gate opens (at once if it is open)."""
        if self.opened:
            callback()
        else:
            self._on_open.append(callback)

    async def wait_open(self) -> None:
        """Return once the gate is open."""
        if self.opened:
            return
        opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def done() -> None:
            if not opened.done():
                opened.set_result(None)

        self.when_open(done)
        await opened

    async def wait_held(self, timeout_s: float = 10.0) -> None:
        """Return once a call is held here; fail after timeout_s."""
        async with asyncio.timeout(timeout_s):
            await self.held.wait()


@dataclass(frozen=True)
class RpcRecord:
    """One call a node's client saw: method, request, and the answer or error."""

    method: str
    request: Any
    response: Any = None
    error: BaseException | None = None


Rule = Callable[[str, Any], "Action | Gate | None"]


@dataclass
class NodeFaults:
    """The faults of one node's link; shared by every client connected to that node."""

    address: str = ""
    rules: list[Rule] = field(default_factory=list)
    log: list[RpcRecord] = field(default_factory=list)
    # Rewrites an answer before the caller decodes it (a buggy node, like Hadoop's spies).
    tamper: Callable[[str, Message], Message] | None = None
    # Told of every call once its answer or error is in (after it is logged).
    on_record: Callable[[RpcRecord], None] | None = None
    # Told of every call before the rules judge it (sees the calls a rule then fails).
    before: Callable[[str, Any], None] | None = None
    # The link is down: every call fails before the node sees it, whatever the rules say.
    down: bool = False
    # Every call reaches the node this much later, and holds back the calls behind it (a
    # slow node or link); injected latency, never a way to synchronize a test.
    delay_s: float = 0.0
    # Calls judged so far; the first call is number 1 (see fail_call).
    seen: int = 0

    def calls(self, method: str | None = None) -> list[RpcRecord]:
        """The recorded calls, of one method or all."""
        return [r for r in self.log if method is None or r.method == method]

    def _add(
        self,
        action: Action | Gate,
        method: str | None,
        times: int | None,
        when: Callable[[Any], bool],
    ) -> None:
        left = [times]

        def rule(m: str, request: Any) -> Action | Gate | None:
            if (method is not None and m != method) or left[0] == 0 or not when(request):
                return None
            if left[0] is not None:
                left[0] -= 1
            return action

        self.rules.append(rule)

    def fail(
        self,
        method: str | None = None,
        times: int | None = None,
        when: Callable[[Any], bool] = lambda r: True,
    ) -> None:
        """Fail matching calls before the node sees them (the next `times`, or all)."""
        self._add(Action.FAIL, method, times, when)

    def drop_answer(
        self,
        method: str | None = None,
        times: int | None = None,
        when: Callable[[Any], bool] = lambda r: True,
    ) -> None:
        """Let the node apply matching calls, then fail them for the caller."""
        self._add(Action.DROP, method, times, when)

    def hold(
        self,
        method: str | None = None,
        times: int | None = None,
        when: Callable[[Any], bool] = lambda r: True,
    ) -> Gate:
        """Hold matching calls, and the later calls of their connection, until the gate opens."""
        gate = Gate(f"{self.address}:{method or '*'}")
        self._add(gate, method, times, when)
        return gate

    def fail_from_txn(self, txid: int) -> None:
        """Fail every journal() holding txid or later (Hadoop's failLoggerAtTxn)."""
        self.fail(
            "journal", when=lambda r: r.num_txns > 0 and r.first_txid + r.num_txns - 1 >= txid
        )

    def fail_call(self, number: int) -> None:
        """Fail the call with this number on the link (1 is the first), whatever its method."""

        def rule(m: str, request: Any) -> Action | None:
            return Action.FAIL if self.seen == number else None

        self.rules.append(rule)

    def randomly(self, rng: random.Random, p_fail: float, p_drop: float) -> None:
        """Fail (before) or drop the answer of (after) each call with these probabilities."""

        def rule(m: str, request: Any) -> Action | None:
            x = rng.random()
            if x < p_fail:
                return Action.FAIL
            if x < p_fail + p_drop:
                return Action.DROP
            return None

        self.rules.append(rule)

    def clear(self) -> None:
        """Remove every rule and hook, and bring the link up (the log and count stay)."""
        self.rules.clear()
        self.tamper = None
        self.on_record = None
        self.before = None
        self.down = False
        self.delay_s = 0.0

    def decide(self, method: str, request: Any) -> Action | Gate | None:
        """Count the call, tell `before`, and return the first rule's verdict on it."""
        self.seen += 1
        if self.before is not None:
            self.before(method, request)
        if self.down:
            return Action.FAIL
        for rule in list(self.rules):
            verdict = rule(method, request)
            if verdict is not None:
                return verdict
        return None
