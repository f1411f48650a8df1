"""The active's lease on the journal (design §N.1): the rules, the quorum calls that renew
it, what JournalNodes report of older writers, the answer check of the IPC server, and
NameNodes that step down or wait because of it.

The SIGSTOP scenario with real ZooKeeper, JournalNodes, NameNodes and ZKFCs is the last test.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import signal
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest
from google.protobuf.wrappers_pb2 import StringValue

from conftest import JNFactory
from ha_cluster import auto_cluster, ha_states
from nn_harness import Rpc, copy_name_dir, format_cluster, make_config, start_nn
from qjm.client.lease import (
    CLOCK_RATE_MARGIN,
    lease_clock,
    lease_left,
    older_leases_end,
    renewal_due,
)
from qjm.client.quorum_journal_manager import QuorumJournalManager
from qjm.config import (
    ClusterConfig,
    NameNodeSettings,
    ZooKeeperSettings,
    config_from_dict,
)
from qjm.errors import ConfigError
from qjm.hdfs.proto import hdfs_pb2 as hdfs
from qjm.ipc import CallContext, IpcClient, IpcServer, Method, RemoteError
from qjm.journalnode.rpc import MAX_IDLE_MS, idle_ms
from qjm.namenode import protocols
from qjm.namenode.client import NameNodeClient
from qjm.namenode.errors import StandbyError
from qjm.namenode.proto import ClientNamenodeProtocol_pb2 as cn
from qjm.namenode.types import HAState
from qjm.testing.in_memory import InMemoryCluster
from qjm.testing.wait import wait_until_async
from qjm_cluster import FAST_SETTINGS
from test_nn_edit_log import NS

STANDBY = "org.apache.hadoop.ipc.StandbyException"
K = (1 + CLOCK_RATE_MARGIN) / (1 - CLOCK_RATE_MARGIN)  # a lease as a newer writer waits it out


# -- the rules ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("renewed_at", "now", "lease_s", "left"),
    [
        (None, 100.0, 5.0, -5.0),  # never renewed: lapsed
        (100.0, 100.0, 5.0, 5.0),
        (100.0, 103.0, 5.0, 2.0),
        (100.0, 105.0, 5.0, 0.0),  # exactly at the end: lapsed
        (100.0, 160.0, 5.0, -55.0),  # a pause of a minute
    ],
)
def test_lease_left(renewed_at: float | None, now: float, lease_s: float, left: float) -> None:
    assert lease_left(renewed_at, now, lease_s) == pytest.approx(left)


@pytest.mark.parametrize(
    ("renewed_at", "now", "due"),
    [(None, 0.0, True), (10.0, 10.0, False), (10.0, 10.9, False), (10.0, 11.0, True)],
)
def test_a_renewal_is_due_after_a_quarter_of_the_lease(
    renewed_at: float | None, now: float, due: bool
) -> None:
    assert renewal_due(renewed_at, now, 4.0) is due


@pytest.mark.parametrize(
    ("idle_s", "wait_s"),
    [
        (0.0, 5.0 * K),  # the older writer renewed just before the promise: a whole lease
        (2.0, 5.0 * K - 2.0),  # renewed at least 2 s before: the rest
        (5.0 * K, 0.0),
        (30.0, 0.0),  # it stopped long ago (a ZooKeeper session or more): no wait
        (math.inf, 0.0),  # it released its lease
    ],
)
def test_a_new_writer_waits_out_the_older_leases(idle_s: float, wait_s: float) -> None:
    assert older_leases_end(1000.0, idle_s, 5.0) == pytest.approx(1000.0 + wait_s)


def test_older_leases_end_refuses_a_negative_idle_time() -> None:
    with pytest.raises(ValueError, match="negative"):
        older_leases_end(0.0, -1.0, 5.0)


def test_the_lease_clock_does_not_go_back() -> None:
    a = lease_clock()
    b = lease_clock()
    assert b >= a


@pytest.mark.parametrize(
    ("idle_s", "ms"), [(0.0, 0), (1.2345, 1234), (math.inf, MAX_IDLE_MS), (1e30, MAX_IDLE_MS)]
)
def test_a_journalnode_reports_idle_time_rounded_down(idle_s: float, ms: int) -> None:
    assert idle_ms(idle_s) == ms


# -- the setting ----------------------------------------------------------------------------
def test_the_lease_defaults_to_half_the_zookeeper_session() -> None:
    assert ClusterConfig().active_lease_ms() == 5000
    cfg = ClusterConfig(zookeeper=ZooKeeperSettings(session_timeout_ms=4000))
    assert cfg.active_lease_ms() == 2000
    cfg = ClusterConfig(namenode=NameNodeSettings(active_lease_ms=1500))
    assert cfg.active_lease_ms() == 1500


@pytest.mark.parametrize(
    ("namenode", "zookeeper", "error"),
    [
        ({"active_lease_ms": 10_000}, {}, "must be below zookeeper.session_timeout_ms"),
        ({"active_lease_ms": 5000}, {"session_timeout_ms": 4000}, r"\(4000\)"),
        ({"active_lease_ms": 50}, {}, "at least 100"),
        ({"readmit_roll_interval_ms": 10}, {}, "readmit_roll_interval_ms must be at least"),
    ],
)
def test_the_lease_settings_are_validated(
    namenode: dict[str, int], zookeeper: dict[str, int], error: str
) -> None:
    with pytest.raises(ConfigError, match=error):
        config_from_dict({"namenode": namenode, "zookeeper": zookeeper})


# -- the writer's side, on JournalNodes in this process -----------------------------------------
class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def writer(mem: InMemoryCluster, clock: Clock | None = None) -> QuorumJournalManager:
    """A quorum journal manager on the in-memory cluster, its lease on clock."""
    q = QuorumJournalManager(mem.uri("nn"), None, FAST_SETTINGS, client_factory=mem.client)  # type: ignore[arg-type]
    if clock is not None:
        q.loggers.clock = clock
    return q


@pytest.fixture
async def mem(tmp_path: Path) -> AsyncIterator[InMemoryCluster]:
    async with InMemoryCluster(tmp_path / "mem") as c:
        q = writer(c)
        try:
            await q.format(NS)
        finally:
            await q.close()
        yield c


async def test_the_lease_runs_from_when_the_call_was_sent_once_a_majority_took_it(
    mem: InMemoryCluster,
) -> None:
    clock = Clock()
    q = writer(mem, clock)
    try:
        await q.recover_unfinalized_segments()
        assert q.lease_renewed_at == 1000.0  # newEpoch, sent at 1000
        gates = [mem.faults[1].hold("heartbeat"), mem.faults[2].hold("heartbeat")]
        clock.now = 1010.0
        q.renew_lease()  # sent at 1010; node 0 answers, nodes 1 and 2 are held
        await q.loggers.channels[0].wait_idle()
        await gates[0].wait_held()
        await gates[1].wait_held()
        assert q.lease_renewed_at == 1000.0  # one answer of three: no majority yet
        clock.now = 1013.0  # the majority answers later ...
        gates[0].open()
        await wait_until_async("the renewal", lambda: q.lease_renewed_at != 1000.0, 5)
        assert q.lease_renewed_at == 1010.0  # ... but the lease runs from the send
        gates[1].open()
    finally:
        await q.close()


async def test_a_fenced_writer_renews_nothing(mem: InMemoryCluster) -> None:
    clock = Clock()
    old = writer(mem, clock)
    new = writer(mem)
    try:
        await old.recover_unfinalized_segments()
        await new.recover_unfinalized_segments()
        clock.now = 2000.0
        old.renew_lease()
        await asyncio.gather(*(ch.wait_idle() for ch in old.loggers.channels))
        assert old.lease_renewed_at == 1000.0
    finally:
        await old.close()
        await new.close()


async def test_journalnodes_report_how_long_older_writers_were_idle(
    mem: InMemoryCluster,
) -> None:
    old = writer(mem)
    try:
        await old.recover_unfinalized_segments()
        old.renew_lease()
        await asyncio.gather(*(ch.wait_idle() for ch in old.loggers.channels))
        for slot in mem.slots:
            assert slot.node is not None
            for j in slot.node.journals():
                real = j.clock
                j.clock = lambda real=real: real() + 7.0  # type: ignore[misc]
        new = writer(mem)
        try:
            await new.recover_unfinalized_segments()
            assert 7.0 <= new.older_writer_idle_s < 60.0
        finally:
            await new.close()
        # The newest writer releases its lease: the next one need not wait at all.
        assert await new.release_lease(5.0) is False  # closed: nothing sent
        third = writer(mem)
        fourth = writer(mem)
        try:
            await third.recover_unfinalized_segments()
            assert await third.release_lease(5.0)
            # the NameNode's lease keeper wakes after the release: its heartbeat is not sent,
            # so it cannot make the next writer wait after all
            third.renew_lease()
            await asyncio.gather(*(ch.wait_idle() for ch in third.loggers.channels))
            await fourth.recover_unfinalized_segments()
            assert fourth.older_writer_idle_s > 1e12
            assert fourth.epoch_won_at is not None
            assert older_leases_end(fourth.epoch_won_at, fourth.older_writer_idle_s, 5.0) == (
                fourth.epoch_won_at
            )
        finally:
            await third.close()
            await fourth.close()
    finally:
        await old.close()


# -- the IPC server's answer check -----------------------------------------------------------
async def test_the_answer_check_replaces_the_answer_just_before_it_is_sent() -> None:
    veto: list[BaseException | None] = [None]
    release = asyncio.Event()
    entered = [0]

    async def echo(req: StringValue, ctx: CallContext) -> StringValue:
        ctx.answer_check = lambda: veto[0]
        entered[0] += 1
        await release.wait()  # the condition changes while the answer is computed
        if req.value == "fail":
            raise StandbyError("computed as an error")
        return StringValue(value=req.value)

    server = IpcServer(name="t")
    server.register("p", {"echo": Method(StringValue, echo)})
    await server.start("127.0.0.1", 0)
    client = IpcClient(f"127.0.0.1:{server.port}", "p", reconnect_attempts=1)
    try:

        async def call(value: str) -> str:
            resp = await client.call("echo", StringValue(value=value), StringValue, timeout=10)
            return str(resp.value)

        release.set()
        assert await call("a") == "a"
        release.clear()
        pending = asyncio.ensure_future(call("b"))
        failing = asyncio.ensure_future(call("fail"))
        await wait_until_async("both calls computing", lambda: entered[0] == 3, 10)
        veto[0] = StandbyError("lapsed")
        release.set()
        for fut in (pending, failing):
            with pytest.raises(RemoteError) as info:
                await fut
            assert info.value.class_name == STANDBY and "lapsed" in str(info.value)
    finally:
        await client.close()
        await server.stop()


# -- NameNodes in this process on JournalNode processes -----------------------------------------
def getfileinfo(path: str) -> cn.GetFileInfoRequestProto:
    """getFileInfo path."""
    return cn.GetFileInfoRequestProto(src=path)


@pytest.mark.slow
async def test_an_active_without_a_quorum_steps_down_before_it_answers(
    tmp_path: Path, jn_factory: JNFactory
) -> None:
    jns = [jn_factory.start(f"jn{i}") for i in range(3)]
    cfg = make_config(jns, tmp_path, names=("nn1",), active_lease_ms=600)
    await format_cluster(cfg, "nn1")
    nn = await start_nn(cfg, "nn1")
    rpc = Rpc(nn.rpc_address())
    try:
        await nn.transition_to_active("test")
        assert await rpc.mkdirs("/kept")
        # Idle, the active keeps its lease with heartbeats, well past its length.
        t0 = time.monotonic()
        await wait_until_async("1.5 s idle", lambda: time.monotonic() - t0 > 1.5, 5)
        assert (await rpc.stat("/kept")) is not None
        assert nn.ha_state == HAState.ACTIVE and nn.lease_lapses == 0
        jn_factory.stop(jns[0])
        jn_factory.stop(jns[1])
        await wait_until_async("the lease to lapse", lambda: (nn.lease_left_s() or 0.0) < -0.2, 10)
        # a load balancer's probe is answered as a call is: no "I am Active!" without a lease
        async with aiohttp.ClientSession() as s, s.get(f"{nn.http_url()}/isActive") as r:
            assert (r.status, await r.text()) == (405, "I am not Active!")
        assert nn.ha_state == HAState.STANDBY and nn.lease_lapses == 1
        with pytest.raises(RemoteError) as info:
            await rpc.stat("/kept")  # a read that logs nothing: never answered
        assert info.value.class_name == STANDBY, info.value
        assert nn.ha_state == HAState.STANDBY and nn.lease_lapses == 1
        assert nn.fatal_error is None  # a step down, not a stop
    finally:
        await rpc.close()
        await nn.stop()


@pytest.mark.slow
async def test_a_new_active_waits_out_the_old_lease_unless_it_was_released(
    tmp_path: Path, jn_factory: JNFactory
) -> None:
    jns = [jn_factory.start(f"jn{i}") for i in range(3)]
    cfg = make_config(jns, tmp_path, names=("nn1", "nn2"), active_lease_ms=1500)
    await format_cluster(cfg, "nn1")
    copy_name_dir(cfg, "nn1", "nn2")
    nn1 = await start_nn(cfg, "nn1")
    nn2 = await start_nn(cfg, "nn2")
    try:
        # A graceful failover: nn1 releases its lease as it goes standby; nn2 waits nothing.
        await nn1.transition_to_active("test")
        await nn1.transition_to_standby("test")
        await nn2.transition_to_active("test")
        assert nn2.last_lease_wait_s == 0.0
        # nn2 is cut off without going standby (as a paused or killed process): nn1 waits
        # out nn2's lease from its newEpoch, less the time its transition took.
        assert nn2.qjm is not None and nn2.edit_log is not None
        nn2.edit_log.abort()
        await nn2.qjm.close()
        t0 = time.monotonic()
        await nn1.transition_to_active("test")
        took = time.monotonic() - t0
        assert 0.5 < nn1.last_lease_wait_s <= 1.5 * K, nn1.last_lease_wait_s
        assert took >= nn1.last_lease_wait_s
        print(f"waited {nn1.last_lease_wait_s:.3f}s of a transition of {took:.3f}s")
    finally:
        await nn2.stop()
        await nn1.stop()


# -- design §N.1's scenario with real processes ---------------------------------------------
def mkdirs(path: str) -> cn.MkdirsRequestProto:
    """mkdirs path 0755 without its parents."""
    return cn.MkdirsRequestProto(
        src=path,
        masked=hdfs.FsPermissionProto(perm=0o755),
        createParent=False,
        unmasked=hdfs.FsPermissionProto(perm=0o777),
    )


def zkfc_pid(cluster: dict[str, object], nn: str) -> int:
    """The pid of nn's ZKFC in cluster.json."""
    for entry in cluster.values():
        if isinstance(entry, dict) and entry.get("kind") == "zkfc" and entry.get("namenode") == nn:
            return int(entry["pid"])
    raise AssertionError(f"no ZKFC of {nn}")


@pytest.fixture
def stopped_later() -> Iterator[list[int]]:
    """Pids to SIGCONT at the end whatever happens."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_calls_queued_on_a_deposed_active_get_standby_exception(
    tmp_path: Path, stopped_later: list[int]
) -> None:
    with auto_cluster(tmp_path / "c", session_timeout_ms=3000) as cluster:
        rpc = {n: str(cluster[n]["rpc"]) for n in ("nn1", "nn2")}

        def single_active() -> str:
            states = ha_states(cluster)
            return next((n for n, s in states.items() if s == "active"), "")

        async def scenario() -> dict[str, object]:
            await wait_until_async("an active NameNode", lambda: bool(single_active()), 60)
            old = single_active()
            new = "nn2" if old == "nn1" else "nn1"
            async with NameNodeClient(list(rpc.values()), timeout=10, max_rounds=30) as c:
                await c.mkdirs("/sig/exists")
            raw = IpcClient(rpc[old], protocols.CLIENT_PROTOCOL, reconnect_attempts=1)
            info = protocols.CLIENT_METHODS["getFileInfo"].response
            made = protocols.CLIENT_METHODS["mkdirs"].response
            try:
                found = await raw.call("getFileInfo", getfileinfo("/sig/exists"), info, timeout=10)
                assert found.HasField("fs"), "the connection works and the directory exists"
                pids = [int(cluster[old]["pid"]), zkfc_pid(cluster, old)]
                for pid in pids:
                    os.kill(pid, signal.SIGSTOP)
                    stopped_later.append(pid)
                queued = [
                    asyncio.ensure_future(
                        raw.call("mkdirs", mkdirs("/sig/exists"), made, timeout=120)
                    ),
                    asyncio.ensure_future(
                        raw.call("getFileInfo", getfileinfo("/sig/exists"), info, timeout=120)
                    ),
                ]
                await wait_until_async(f"{new} active", lambda: single_active() == new, 60)
                async with NameNodeClient([rpc[new]], timeout=10, max_rounds=10) as c:
                    assert await c.delete("/sig/exists", recursive=True)
                for pid in pids:
                    os.kill(pid, signal.SIGCONT)
                answers: dict[str, object] = {}
                for name, fut in zip(("mkdirs", "getFileInfo"), queued, strict=True):
                    try:
                        answers[name] = await fut
                    except RemoteError as e:
                        answers[name] = e.class_name
                    except Exception as e:  # the connection dropped: no answer at all
                        answers[name] = f"no answer: {type(e).__name__}"
                return answers
            finally:
                await raw.close()

        answers = asyncio.run(scenario())
        print(f"answers of the deposed active to the calls queued on it: {answers}")
        for name, answer in answers.items():
            assert isinstance(answer, str), (
                f"the deposed active answered the queued {name}: {answer}"
            )
            assert answer == STANDBY or answer.startswith("no answer"), answers
