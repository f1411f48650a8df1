"""Waiting on a condition with a deadline: the one polling loop of the tests.

wait_until (blocking) and wait_until_async (on the event loop) call check every
POLL_S until it returns a truthy value, and return that value. A check that raises an
Exception has not held yet: the last such error is shown if the deadline passes. At
the deadline they raise AssertionError naming what was awaited.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["POLL_S", "wait_until", "wait_until_async"]

T = TypeVar("T")

POLL_S = 0.02  # the poll interval of a wait bounded by its deadline
DEFAULT_TIMEOUT_S = 10.0


def _ask(check: Callable[[], T]) -> tuple[T | None, Exception | None]:
    try:
        return check(), None
    except Exception as e:  # not held yet; shown if the deadline passes
        return None, e


def _timed_out(
    what: str | Callable[[], str], timeout_s: float, last: Exception | None
) -> AssertionError:
    text = what() if callable(what) else what
    tail = f" (last error: {last!r})" if last is not None else ""
    return AssertionError(f"timed out after {timeout_s:g}s waiting for {text}{tail}")


def wait_until(
    what: str | Callable[[], str],
    check: Callable[[], T],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    poll_s: float = POLL_S,
) -> T:
    """Block until check() is truthy and return it; AssertionError naming what after timeout_s.

    what may be a callable: it is asked at the deadline, to describe the state then.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        value, last = _ask(check)
        if value:
            return value
        if time.monotonic() > deadline:
            raise _timed_out(what, timeout_s, last) from last
        time.sleep(poll_s)


async def wait_until_async(
    what: str | Callable[[], str],
    check: Callable[[], T],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    poll_s: float = POLL_S,
) -> T:
    """Wait on the loop until check() is truthy and return it; AssertionError after timeout_s.

    what may be a callable: it is asked at the deadline, to describe the state then.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        value, last = _ask(check)
        if value:
            return value
        if time.monotonic() > deadline:
            raise _timed_out(what, timeout_s, last) from last
        await asyncio.sleep(poll_s)
