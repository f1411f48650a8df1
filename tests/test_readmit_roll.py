"""Rolling to readmit a JournalNode (design §N.2): a node that answers again after missing
part of the open segment is back in the quorum within seconds, and a flapping node cannot
make the writer roll more often than readmit_roll_interval_ms.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from conftest import JNFactory, JNProcess
from nn_harness import JID, NNProcess, Rpc, format_cluster, make_config, write_config
from qjm.config import NameNodeSettings
from qjm.namenode.edit_log import FSEditLog, readmit_roll_at
from qjm.testing.in_memory import InMemoryCluster
from qjm.testing.wait import wait_until_async
from test_nn_edit_log import NS, Fatal, mem_qjm, mkdir, name_dir, writer

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize(
    ("last", "now", "at"),
    [
        (None, 50.0, 50.0),  # never rolled for a node: at once
        (40.0, 50.0, 50.0),  # the interval (10 s) is over: at once
        (45.0, 50.0, 55.0),  # 5 s ago: when the interval ends
        (50.0, 50.0, 60.0),
    ],
)
def test_readmit_roll_at(last: float | None, now: float, at: float) -> None:
    assert readmit_roll_at(last, now, 10.0) == at


@pytest.fixture
async def mem(tmp_path: Path) -> AsyncIterator[InMemoryCluster]:
    """Three JournalNodes in this process, the journal of mem_qjm formatted."""
    async with InMemoryCluster(tmp_path / "mem") as c:
        q = mem_qjm(c)
        try:
            await q.format(NS)
        finally:
            await q.close()
        yield c


@pytest.mark.slow
async def test_a_flapping_node_makes_the_log_roll_at_most_once_an_interval(
    tmp_path: Path, mem: InMemoryCluster
) -> None:
    interval_s = 0.4
    settings = replace(NameNodeSettings(), readmit_roll_interval_ms=int(interval_s * 1000))
    q = mem_qjm(mem)
    el = FSEditLog(name_dir(tmp_path), q, settings, Fatal())
    await el.open_for_write(await writer(q))
    node = q.loggers.channels[2]
    flaps = 0
    t0 = time.monotonic()
    try:
        i = 0
        while time.monotonic() - t0 < 2.0:  # a node that dies and comes back, again and again
            await mem.crash(2)
            i += 1
            await el.log_sync(mkdir(i))  # it misses this one: out of sync
            await mem.restart(2)
            flaps += 1
            q.renew_lease()  # what the active sends when idle: node 2 answers again
            await node.wait_idle()
        elapsed = time.monotonic() - t0
        # Once it stays up, the next roll (within the interval) takes it back.
        await wait_until_async("node 2 back in the quorum", lambda: not node.out_of_sync, 10)
        rolls = el.stats.readmit_rolls
        assert 1 <= rolls <= elapsed / interval_s + 2, (rolls, flaps, elapsed)
        assert flaps > 2 * rolls, f"{flaps} flaps made {rolls} rolls: the bound held nothing"
        print(f"{flaps} flaps in {elapsed:.2f}s made {rolls} readmitting rolls")
    finally:
        await el.close()
        await q.close()


# -- real processes -------------------------------------------------------------------------
def http_json(address: str, path: str) -> dict[str, Any]:
    """GET http://address/path as JSON."""
    with urllib.request.urlopen(f"http://{address}{path}", timeout=5) as r:
        data: dict[str, Any] = json.loads(r.read())
        return data


async def journal_status(jn: JNProcess) -> dict[str, Any]:
    """The JournalNode's /status of the journal."""
    st = await asyncio.to_thread(http_json, jn.http, "/status")
    journal: dict[str, Any] = st["journals"][JID]
    return journal


def kill9(factory: JNFactory, jn: JNProcess) -> None:
    """SIGKILL a JournalNode process and reap it."""
    os.kill(jn.pid, signal.SIGKILL)
    jn.daemon.process.wait(timeout=10)
    factory.running.remove(jn)


@pytest.mark.slow
async def test_a_journalnode_back_rejoins_so_one_more_failure_does_not_stop_the_active(
    tmp_path: Path, jn_factory: JNFactory
) -> None:
    jns = [jn_factory.start(f"jn{i}") for i in (1, 2, 3)]
    cfg = make_config(
        jns, tmp_path, names=("nn1",), readmit_roll_interval_ms=1000, active_lease_ms=2000
    )
    await format_cluster(cfg, "nn1")
    proc = NNProcess(write_config(cfg, tmp_path / "cluster.toml"), "nn1", tmp_path)
    proc.start()
    try:
        info = await proc.wait_ready()
        rpc = Rpc(info["rpc"])
        try:
            await rpc.transition_to_active()
            assert await rpc.mkdirs("/before")
            jn1, jn2, jn3 = jns
            open_segment = (await journal_status(jn3))["current_segment"]
            kill9(jn_factory, jn1)
            assert await rpc.mkdirs("/while-jn1-is-down")  # jn1 misses it: out of sync
            jn1 = jn_factory.start("jn1", jn1.rpc, jn1.http)
            back = time.monotonic()

            async def rejoined() -> bool:
                mine, peer = await journal_status(jn1), await journal_status(jn3)
                return (
                    mine["current_segment"] is not None
                    and mine["current_segment"] == peer["current_segment"]
                    and mine["current_segment"] != open_segment
                )

            done = False
            while not done:  # bounded: rejoined within the bound, or the assert below
                done = await rejoined()
                took = time.monotonic() - back
                assert done or took < 10, f"jn1 not back in the quorum {took:.1f}s after it was"
                if not done:
                    await asyncio.sleep(0.1)  # poll interval of a bounded wait
            print(f"jn1 back in the quorum {took:.2f}s after it answered again")
            kill9(jn_factory, jn2)  # one more failure: jn1 and jn3 are a majority
            for i in range(5):
                assert await rpc.mkdirs(f"/after-jn2-died/{i}")
            assert proc.proc is not None and proc.proc.poll() is None, "the NameNode exited"
            st = await asyncio.to_thread(http_json, info["http"], "/status")
            assert st["ha_state"] == "active" and st["fatal_error"] is None, st
            assert st["readmit_rolls"] >= 1, st
            assert (await journal_status(jn1))["highest_written_txid"] == (
                await journal_status(jn3)
            )["highest_written_txid"]
        finally:
            await rpc.close()
    finally:
        proc.stop()
