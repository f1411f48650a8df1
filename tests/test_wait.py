"""The tests' one polling loop (qjm.testing.wait): returns the value, or fails naming the wait."""

from __future__ import annotations

import itertools

import pytest

from qjm.testing.wait import wait_until, wait_until_async


def test_returns_the_first_truthy_value() -> None:
    calls = itertools.count(1)
    assert wait_until("the third call", lambda: (n := next(calls)) >= 3 and n, 5) == 3


async def test_async_returns_the_first_truthy_value() -> None:
    calls = itertools.count(1)
    assert await wait_until_async("the third call", lambda: (n := next(calls)) >= 3 and n, 5) == 3


def test_a_raising_check_has_not_held_yet() -> None:
    calls = itertools.count(1)

    def check() -> str:
        if next(calls) < 3:
            raise FileNotFoundError("not yet")
        return "there"

    assert wait_until("the file", check, 5) == "there"


def test_the_deadline_names_the_wait_and_the_last_error() -> None:
    def check() -> bool:
        raise KeyError("nn9")

    with pytest.raises(AssertionError, match=r"after 0.1s waiting for nn9 active.*KeyError"):
        wait_until("nn9 active", check, 0.1)


async def test_async_deadline_asks_a_callable_what_at_the_end() -> None:
    state = ["starting"]

    def check() -> bool:
        state[0] = "still starting"
        return False

    with pytest.raises(AssertionError, match="waiting for the node, now still starting"):
        await wait_until_async(lambda: f"the node, now {state[0]}", check, 0.1)
