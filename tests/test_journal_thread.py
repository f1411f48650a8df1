"""The JournalNode's per-journal thread: order, errors, cancellation, progress handover."""

from __future__ import annotations

import asyncio
import threading

import pytest

from qjm.journalnode.node import JournalThread


async def test_work_runs_in_submission_order_off_the_loop() -> None:
    t = JournalThread("journal-test", asyncio.get_running_loop())
    try:
        seen: list[int] = []
        loop_thread = threading.current_thread()

        def step(i: int) -> int:
            assert threading.current_thread() is not loop_thread
            seen.append(i)
            return i * 10

        futs = [t.submit(lambda i=i: step(i)) for i in range(50)]
        results = await asyncio.wait_for(asyncio.gather(*futs), 10)
        assert seen == list(range(50))
        assert results == [i * 10 for i in range(50)]
    finally:
        t.shutdown()


async def test_a_failing_call_fails_only_itself() -> None:
    t = JournalThread("journal-test", asyncio.get_running_loop())
    try:

        def boom() -> int:
            raise ValueError("bad batch")

        ok1, bad, ok2 = t.submit(lambda: 1), t.submit(boom), t.submit(lambda: 2)
        assert await asyncio.wait_for(ok1, 10) == 1
        with pytest.raises(ValueError, match="bad batch"):
            await asyncio.wait_for(bad, 10)
        assert await asyncio.wait_for(ok2, 10) == 2
    finally:
        t.shutdown()


async def test_work_cancelled_before_it_starts_is_skipped() -> None:
    t = JournalThread("journal-test", asyncio.get_running_loop())
    try:
        gate = threading.Event()
        ran: list[str] = []
        first = t.submit(lambda: gate.wait(10))
        skipped = t.submit(lambda: ran.append("skipped"))
        skipped.cancel()
        gate.set()
        assert await asyncio.wait_for(first, 10) is True
        assert await asyncio.wait_for(t.submit(lambda: ran.append("last")), 10) is None
        assert ran == ["last"]
    finally:
        t.shutdown()


async def test_progress_raised_on_the_thread_runs_on_the_loop_before_the_answer() -> None:
    loop = asyncio.get_running_loop()
    t = JournalThread("journal-test", loop)
    try:
        order: list[str] = []

        def notify() -> None:
            assert threading.current_thread() is threading.main_thread()
            order.append("progress")

        def work() -> str:
            assert t.on_thread()
            t.progress(notify)
            return "answer"

        answered: asyncio.Future[None] = loop.create_future()

        def on_answer(f: asyncio.Future[str]) -> None:
            order.append(f.result())
            answered.set_result(None)

        t.submit(work).add_done_callback(on_answer)
        await asyncio.wait_for(answered, 10)
        assert order == ["progress", "answer"]
        assert not t.on_thread()
    finally:
        t.shutdown()
