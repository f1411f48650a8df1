"""QuorumCall: majority success, fail fast on majority failure, deadline naming each node."""

from __future__ import annotations

import asyncio

import pytest

from qjm.client.quorum_call import (
    FencedError,
    QuorumCall,
    QuorumError,
    QuorumTimeout,
    call_all,
    fencing_error,
    majority_of,
)
from qjm.errors import QjmError
from qjm.namenode.edit_log import EditLogFatalError, WriterFencedError
from qjm.protocol.errors import EpochError, JournalError


def futures(n: int) -> dict[str, asyncio.Future[int]]:
    loop = asyncio.get_running_loop()
    return {f"jn{i}": loop.create_future() for i in range(1, n + 1)}


def test_majority_sizes() -> None:
    assert [majority_of(n) for n in (1, 2, 3, 4, 5)] == [1, 2, 2, 3, 3]


async def test_quorum_of_two_successes_is_enough() -> None:
    fs = futures(3)
    call = QuorumCall("journal(1-3)", fs)
    fs["jn1"].set_result(1)
    fs["jn3"].set_result(3)
    assert await call.wait_for_quorum(5.0) == {"jn1": 1, "jn3": 3}
    # a late answer is still recorded
    fs["jn2"].set_exception(JournalError("late"))
    await asyncio.sleep(0)  # one loop turn: until the done callbacks (call_soon) have run
    assert "jn2" in call.errors


async def test_fails_fast_on_majority_failure() -> None:
    fs = futures(3)
    call = QuorumCall("newEpoch(2)", fs)
    fs["jn1"].set_exception(EpochError("proposed epoch 2 <= last promise 3"))
    fs["jn2"].set_exception(JournalError("disk on fire"))
    with pytest.raises(QuorumError) as info:
        await asyncio.wait_for(call.wait_for_quorum(60.0), 5.0)  # long deadline: must not wait
    msg = str(info.value)
    assert "too many exceptions to achieve quorum size 2/3" in msg
    assert "jn1: proposed epoch 2 <= last promise 3" in msg
    assert "jn3: no answer yet" in msg
    assert isinstance(info.value.epoch_error, EpochError)


async def test_success_and_failure_mixed() -> None:
    fs = futures(3)
    call = QuorumCall("op", fs)
    fs["jn1"].set_exception(JournalError("x"))
    fs["jn2"].set_result(2)
    waiter = asyncio.ensure_future(call.wait_for_quorum(5.0))
    await asyncio.sleep(0)  # one loop turn: until the waiter has checked the answers
    assert not waiter.done()
    fs["jn3"].set_result(3)
    assert await waiter == {"jn2": 2, "jn3": 3}


async def test_timeout_names_what_each_node_answered() -> None:
    fs = futures(3)
    call = QuorumCall("startLogSegment(4)", fs)
    fs["jn1"].set_result(1)
    fs["jn2"].set_exception(JournalError("jn2: refused"))
    with pytest.raises(QuorumTimeout) as info:
        await call.wait_for_quorum(0.05)
    msg = str(info.value)
    assert "timed out after 50 ms" in msg
    assert "startLogSegment(4)" in msg
    assert (
        "jn1: ok" in msg
        and "jn2: refused" in msg
        and "jn2: jn2" not in msg
        and "jn3: no answer yet" in msg
    )


async def test_answers_before_deadline_win_over_a_slow_waiter() -> None:
    # Like Hadoop's testQuorumSucceedsWithLongPause: results present at the deadline count.
    fs = futures(3)
    call = QuorumCall("op", fs)
    fs["jn1"].set_result(1)
    fs["jn2"].set_result(2)
    assert await call.wait_for_quorum(0.0) == {"jn1": 1, "jn2": 2}


async def test_wait_for_all_fails_on_first_error() -> None:
    fs = futures(3)
    call = QuorumCall("format", fs)
    fs["jn1"].set_result(1)
    fs["jn2"].set_exception(JournalError("no"))
    with pytest.raises(QuorumError, match="needs all 3 nodes"):
        await asyncio.wait_for(call.wait_for_all(60.0), 5.0)


async def test_wait_for_thresholds() -> None:
    fs = futures(5)
    call = QuorumCall("op", fs)
    fs["jn1"].set_result(1)
    fs["jn2"].set_exception(JournalError("a"))
    await call.wait_for(2, 99, 99, 1.0)  # two responses
    await call.wait_for(99, 1, 99, 1.0)  # one success
    await call.wait_for(99, 99, 0, 1.0)  # more than zero errors
    with pytest.raises(QuorumTimeout):
        await call.wait_for(3, 2, 1, 0.01)


async def test_cancelled_future_counts_as_error() -> None:
    fs = futures(1)
    call = QuorumCall("op", fs)
    fs["jn1"].cancel()
    with pytest.raises(QuorumError, match="cancelled"):
        await call.wait_for_quorum(1.0)


async def test_call_all_sends_one_call_per_node() -> None:
    async def answer(node: str) -> str:
        if node == "jn2":
            raise JournalError("jn2: no")
        return node.upper()

    call = call_all("status()", ["jn1", "jn2", "jn3"], answer)
    assert call.keys == ["jn1", "jn2", "jn3"]
    assert await call.wait_for_every_answer(5.0) == {"jn1": "JN1", "jn3": "JN3"}
    assert list(call.errors) == ["jn2"]


STALE = EpochError("IPC's epoch 3 is less than the last promised epoch 4")


def caused_by(outer: Exception, cause: BaseException) -> Exception:
    outer.__cause__ = cause
    return outer


FENCING: dict[str, tuple[BaseException | None, BaseException | None]] = {
    "nothing": (None, None),
    "another error": (JournalError("disk full"), None),
    "a JournalNode's refusal": (STALE, STALE),
    "a quorum call one node refused": (QuorumError("q", {"a": STALE, "b": OSError()}), STALE),
    "a quorum call without a refusal": (QuorumError("q", {"a": OSError()}), None),
    "the edit log's fenced error": (
        fenced := WriterFencedError("fenced", 3, 4),
        fenced,
    ),
    "the edit log's other fatal error": (EditLogFatalError("quorum failed"), None),
    "a refusal behind another error": (caused_by(QjmError("closing failed"), STALE), STALE),
    "a marked error": (marked := FencedError("x"), marked),
}


@pytest.mark.parametrize(
    ("exc", "expected"), [pytest.param(*row, id=name) for name, row in FENCING.items()]
)
def test_fencing_error(exc: BaseException | None, expected: BaseException | None) -> None:
    assert fencing_error(exc) is expected


def test_fencing_error_ends_on_a_cause_cycle() -> None:
    a, b = QjmError("a"), QjmError("b")
    a.__cause__, b.__cause__ = b, a
    assert fencing_error(a) is None
