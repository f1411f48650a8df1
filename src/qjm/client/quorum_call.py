"""A call sent to every JournalNode whose outcome is decided by a majority.

The futures keep running after the quorum is decided; late answers are still recorded
(and their errors retrieved, so asyncio never warns about them).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Generic, TypeVar

from qjm.errors import QjmError, describe_error
from qjm.protocol.errors import EpochError
from qjm.protocol.quorum import majority_of

__all__ = [
    "FencedError",
    "QuorumCall",
    "QuorumError",
    "QuorumTimeout",
    "call_all",
    "fencing_error",
    "majority_of",
]

K = TypeVar("K")
T = TypeVar("T")


class QuorumError(QjmError):
    """A quorum call failed: too many nodes refused, or not enough answered in time."""

    def __init__(self, message: str, errors: Mapping[str, BaseException]) -> None:
        super().__init__(message)
        self.errors = dict(errors)

    @property
    def epoch_error(self) -> EpochError | None:
        """The first refusal because of a newer epoch: this writer has been fenced."""
        for e in self.errors.values():
            if isinstance(e, EpochError):
                return e
        return None


class QuorumTimeout(QuorumError):
    """Not enough nodes answered before the deadline."""


class FencedError(QjmError):
    """Marks an error that says a newer writer took over the journal (the edit log's)."""


def fencing_error(exc: BaseException | None) -> BaseException | None:
    """The error in exc or its causes saying a newer writer fenced this one; None if none.

    The one test of fencing: a JournalNode's EpochError, a quorum call that one refused
    (QuorumError.epoch_error, which is returned), or an error marked FencedError.
    """
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, (EpochError, FencedError)):
            return exc
        if isinstance(exc, QuorumError) and exc.epoch_error is not None:
            return exc.epoch_error
        exc = exc.__cause__ or exc.__context__
    return None


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class QuorumCall(Generic[K, T]):
    """The answers of one call to many nodes, keyed by node, as they arrive."""

    def __init__(self, operation: str, calls: Mapping[K, Awaitable[T]]) -> None:
        self.operation = operation
        self.keys = list(calls)
        self.successes: dict[K, T] = {}
        self.errors: dict[K, BaseException] = {}
        self._waiters: list[asyncio.Future[None]] = []
        self._on_majority: list[Callable[[], None]] = []
        self.futures: dict[K, asyncio.Future[T]] = {}
        for key, aw in calls.items():
            fut = asyncio.ensure_future(aw)
            self.futures[key] = fut
            fut.add_done_callback(lambda f, k=key: self._on_done(k, f))  # type: ignore[misc]

    def _on_done(self, key: K, fut: asyncio.Future[T]) -> None:
        if key in self.successes or key in self.errors:
            return
        if fut.cancelled():
            self.errors[key] = QjmError(f"{key}: {self.operation} was cancelled")
        elif (exc := fut.exception()) is not None:
            self.errors[key] = exc
        else:
            self.successes[key] = fut.result()
            if self._on_majority and len(self.successes) == majority_of(len(self.keys)):
                callbacks, self._on_majority = self._on_majority, []
                for callback in callbacks:
                    callback()
        waiters, self._waiters = self._waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)

    def on_majority(self, callback: Callable[[], None]) -> None:
        """Call callback once, when a majority of the nodes have succeeded (now if they have)."""
        if len(self.successes) >= majority_of(len(self.keys)):
            callback()
        else:
            self._on_majority.append(callback)

    @property
    def responses(self) -> int:
        """How many nodes answered, either way."""
        return len(self.successes) + len(self.errors)

    def describe(self) -> str:
        """What every node answered so far, in node order."""
        parts = []
        for key in self.keys:
            if key in self.successes:
                parts.append(f"{key}: ok")
            elif key in self.errors:
                parts.append(
                    f"{key}: {describe_error(self.errors[key], brief=True, drop_prefix=f'{key}: ')}"
                )
            else:
                parts.append(f"{key}: no answer yet")
        return "; ".join(parts)

    def _error_map(self) -> dict[str, BaseException]:
        return {str(k): e for k, e in self.errors.items()}

    async def wait_for(
        self, min_responses: int, min_successes: int, max_errors: int, wait_s: float
    ) -> None:
        """Wait until enough nodes answered, enough succeeded, or too many failed.

        Returns when responses >= min_responses, successes >= min_successes or
        errors > max_errors (whichever comes first); raises QuorumTimeout otherwise.
        """
        await self._wait_until(
            lambda: (
                self.responses >= min_responses
                or len(self.successes) >= min_successes
                or len(self.errors) > max_errors
            ),
            wait_s,
            f"{min_successes}/{len(self.keys)}",
        )

    async def _wait_until(self, settled: Callable[[], bool], wait_s: float, quorum: str) -> None:
        """Wait until settled() holds after an answer; QuorumTimeout after wait_s."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        while True:
            for key, fut in self.futures.items():
                if fut.done():  # done callbacks may not have run yet
                    self._on_done(key, fut)
            if settled():
                return
            left = deadline - loop.time()
            if left <= 0:
                raise QuorumTimeout(
                    f"timed out after {wait_s * 1000:.0f} ms waiting for a quorum of "
                    f"{quorum} nodes to answer {self.operation}: {self.describe()}",
                    self._error_map(),
                )
            # Woken by the next answer or at the deadline; either way, look again.
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.append(waiter)
            timer = loop.call_later(left, _wake, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                if waiter in self._waiters:
                    self._waiters.remove(waiter)

    async def wait_for_successes_where(
        self, counts: Callable[[T], bool], need: int, wait_s: float
    ) -> dict[K, T]:
        """The successes once `need` of them count; the successes so far once that cannot be.

        Waits for more answers while they could still make up the number, at most wait_s
        (QuorumTimeout). The caller decides what too few counting answers mean.
        """
        n = len(self.keys)

        def settled() -> bool:
            good = sum(1 for v in self.successes.values() if counts(v))
            return good >= need or good + (n - self.responses) < need

        await self._wait_until(settled, wait_s, f"{need}/{n}")
        return dict(self.successes)

    async def wait_for_quorum(self, wait_s: float) -> dict[K, T]:
        """The successes once a majority succeeded; fail as soon as a majority cannot."""
        n = len(self.keys)
        need = majority_of(n)
        await self.wait_for(n, need, n - need, wait_s)
        if len(self.successes) < need:
            raise QuorumError(
                f"{self.operation}: got too many exceptions to achieve quorum size "
                f"{need}/{n}: {self.describe()}",
                self._error_map(),
            )
        return dict(self.successes)

    async def wait_for_every_answer(self, wait_s: float) -> dict[K, T]:
        """The successes once every node answered or wait_s passed, whichever is first."""
        n = len(self.keys)
        with contextlib.suppress(QuorumTimeout):
            await self.wait_for(n, n, n, wait_s)
        return dict(self.successes)

    async def wait_for_all(self, wait_s: float) -> dict[K, T]:
        """The successes once every node answered; fail if any node failed or was late."""
        n = len(self.keys)
        await self.wait_for(n, n, 0, wait_s)
        if self.errors or len(self.successes) < n:
            raise QuorumError(
                f"{self.operation}: needs all {n} nodes to succeed: {self.describe()}",
                self._error_map(),
            )
        return dict(self.successes)


def call_all(
    operation: str, nodes: Iterable[K], fn: Callable[[K], Awaitable[T]]
) -> QuorumCall[K, T]:
    """Send one call to every node; its answers arrive in the returned QuorumCall."""
    return QuorumCall(operation, {node: fn(node) for node in nodes})
