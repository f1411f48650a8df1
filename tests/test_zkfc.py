"""ZKFailoverController on a real ZooKeeper with two fake NameNodes served on real IpcServers."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from nn_fakes import FakeNameNode, serve
from qjm.config import FailoverControllerSettings
from qjm.errors import ConfigError
from qjm.ha.elector import ElectorState, KazooStore, node_info
from qjm.ha.fencing import NodeFencer
from qjm.ha.health_monitor import HealthMonitorSettings
from qjm.ha.zkfc import (
    CedeRefusedError,
    ZKFailoverController,
    ZKFCClient,
    ZkfcSettings,
    cede_seconds,
)
from qjm.ipc import IpcServer, RemoteError
from qjm.testing.wait import wait_until_async

FAST = HealthMonitorSettings(
    check_interval_s=0.05,
    connect_retry_interval_s=0.05,
    rpc_timeout_s=2.0,
    sleep_after_disconnect_s=0.05,
)
PARENT = "/qjm-ha-test"


@dataclass
class Pair:
    """Two fake NameNodes, their servers and their ZKFCs; a sampler of dual actives."""

    nns: list[FakeNameNode]
    servers: list[IpcServer]
    zkfcs: list[ZKFailoverController] = field(default_factory=list)
    samples: int = 0
    both_active: int = 0

    def active(self) -> list[int]:
        """The indexes of the fakes that are active now."""
        return [i for i, nn in enumerate(self.nns) if not nn.standby]

    async def sample(self) -> None:
        while True:
            self.samples += 1
            if len(self.active()) > 1:
                self.both_active += 1
            await asyncio.sleep(0.001)


async def start_zkfc(
    zk: str, ns: str, nn_id: str, server: IpcServer, fencing: str
) -> ZKFailoverController:
    store = KazooStore(zk, session_timeout_s=4.0)
    await store.start()
    settings = ZkfcSettings(
        nameservice=ns,
        namenode_id=nn_id,
        nn_host="127.0.0.1",
        nn_port=server.port,
        zkfc_port=0,
        health=FAST,
        graceful_fence_timeout_s=1.0,
        new_active_timeout_s=5.0,
    )
    return await ZKFailoverController.start(
        settings, NodeFencer.from_config(fencing, shell_timeout_s=5.0), store, parent=PARENT
    )


@pytest.fixture
def fencing() -> str:
    return "shell(true)"


@pytest.fixture
async def pair(zookeeper: str, fencing: str) -> AsyncIterator[Pair]:
    ns = f"ns-{uuid.uuid4().hex[:8]}"
    nns = [
        FakeNameNode(standby=True, automatic_failover=True),
        FakeNameNode(standby=True, automatic_failover=True),
    ]
    servers = [await serve(nn) for nn in nns]
    p = Pair(nns, servers)
    sampler = asyncio.get_running_loop().create_task(p.sample())
    try:
        p.zkfcs.append(await start_zkfc(zookeeper, ns, "nn1", servers[0], fencing))
        assert p.zkfcs[0].elector is not None
        await p.zkfcs[0].elector.format_zk(force=False)
        await p.zkfcs[0].recheck()  # the parent znode exists now
        p.zkfcs.append(await start_zkfc(zookeeper, ns, "nn2", servers[1], fencing))
        yield p
        # the sampler must have looked at a number of instants, however loaded the machine
        await wait_until_async("the sampler ran", lambda: p.samples > 10, timeout_s=30.0)
    finally:
        for z in p.zkfcs:
            await z.stop()
        sampler.cancel()
        for s in servers:
            await s.stop()
    assert p.samples > 10
    assert p.both_active == 0, "both NameNodes were active at a sampled instant"


def elector_state(z: ZKFailoverController) -> ElectorState:
    assert z.elector is not None
    return z.elector.state


@pytest.mark.slow
async def test_one_active_unhealthy_fails_over_and_graceful_failover_moves_it(pair: Pair) -> None:
    await wait_until_async("one active", lambda: len(pair.active()) == 1, timeout_s=20.0)
    first = pair.active()[0]
    other = 1 - first
    await wait_until_async(
        "the other standby",
        lambda: elector_state(pair.zkfcs[other]).name == "STANDBY",
        timeout_s=20.0,
    )
    assert pair.nns[first].transitions == [("active", "REQUEST_BY_ZKFC")]
    # the elector is STANDBY before its ZKFC's transitionToStandby call is answered
    await wait_until_async(
        "the other made standby",
        lambda: ("standby", "REQUEST_BY_ZKFC") in pair.nns[other].transitions,
        timeout_s=20.0,
    )

    pair.nns[first].healthy = False  # monitorHealth fails: its ZKFC quits the election
    await wait_until_async("the other active", lambda: pair.active() == [other], timeout_s=20.0)
    assert pair.nns[first].transitions[-1] == ("standby", "REQUEST_BY_ZKFC")  # fenced
    assert pair.zkfcs[other].fenced == [f"nn{first + 1}"]
    assert pair.nns[other].transitions[-1] == ("active", "REQUEST_BY_ZKFC")

    pair.nns[first].healthy = True  # back: it rejoins as standby
    await wait_until_async(
        "the first rejoins as standby",
        lambda: elector_state(pair.zkfcs[first]) is ElectorState.STANDBY,
        timeout_s=20.0,
    )
    assert pair.active() == [other]

    # gracefulFailover over ZKFCProtocol, sent to the standby's ZKFC, moves the role back
    server = pair.zkfcs[first].server
    assert server is not None
    client = ZKFCClient(f"127.0.0.1:{server.port}", timeout=30)
    try:
        await client.graceful_failover()
    finally:
        await client.close()
    assert pair.active() == [first]
    assert elector_state(pair.zkfcs[first]) is ElectorState.ACTIVE
    assert pair.nns[other].transitions[-1] == ("standby", "REQUEST_BY_ZKFC")
    assert pair.zkfcs[first].fenced == []  # the old active ceded: nothing to fence


@pytest.mark.slow
async def test_graceful_failover_refused_by_an_unhealthy_node(pair: Pair) -> None:
    await wait_until_async("one active", lambda: len(pair.active()) == 1, timeout_s=20.0)
    standby = 1 - pair.active()[0]
    await wait_until_async(
        "standby elected",
        lambda: elector_state(pair.zkfcs[standby]) is ElectorState.STANDBY,
        timeout_s=20.0,
    )
    pair.nns[standby].healthy = False
    await wait_until_async(
        "standby out of the election",
        lambda: elector_state(pair.zkfcs[standby]) is ElectorState.INIT,
        timeout_s=20.0,
    )
    server = pair.zkfcs[standby].server
    assert server is not None
    client = ZKFCClient(f"127.0.0.1:{server.port}", timeout=30)
    try:
        with pytest.raises(RemoteError, match="ServiceFailedException.*not healthy"):
            await client.graceful_failover()
    finally:
        await client.close()
    assert len(pair.active()) == 1 and pair.active()[0] != standby


@pytest.mark.parametrize("fencing", ["shell(exit 1)\nsshfence"])
async def test_never_active_when_all_fencing_fails(pair: Pair) -> None:
    await wait_until_async("one active", lambda: len(pair.active()) == 1, timeout_s=20.0)
    first = pair.active()[0]
    other = 1 - first
    await wait_until_async(
        "other standby",
        lambda: elector_state(pair.zkfcs[other]) is ElectorState.STANDBY,
        timeout_s=20.0,
    )
    await pair.servers[first].stop()  # not responding: no graceful fence possible either
    elector = pair.zkfcs[other].elector
    assert elector is not None
    await wait_until_async(
        "a failed fencing attempt", lambda: "unable to fence" in elector.last_error, timeout_s=20.0
    )
    assert "dfs.ha.fencing.ssh.private-key-files" in elector.last_error
    assert all(t[0] != "active" for t in pair.nns[other].transitions)
    assert pair.nns[other].standby
    assert elector.state is not ElectorState.ACTIVE


@pytest.mark.parametrize("fencing", ['shell(exit 1)\nshell(test -n "$target_namenodeid")'])
async def test_a_fencing_method_lets_the_other_become_active(pair: Pair) -> None:
    await wait_until_async("one active", lambda: len(pair.active()) == 1, timeout_s=20.0)
    first = pair.active()[0]
    other = 1 - first
    await wait_until_async(
        "other standby",
        lambda: elector_state(pair.zkfcs[other]) is ElectorState.STANDBY,
        timeout_s=20.0,
    )
    await pair.servers[first].stop()
    pair.nns[first].standby = True  # what the shell method would have done to a real node
    await wait_until_async("the other active", lambda: pair.active() == [other], timeout_s=20.0)
    assert pair.zkfcs[other].fenced == [f"nn{first + 1}"]
    assert "exited 1" in pair.zkfcs[other].fencer.last_errors[0]


async def test_an_active_namenode_found_standby_is_made_active_again_or_replaced(
    pair: Pair,
) -> None:
    await wait_until_async("one active", lambda: len(pair.active()) == 1, timeout_s=20.0)
    first = pair.active()[0]
    other = 1 - first
    await wait_until_async(
        "other standby",
        lambda: elector_state(pair.zkfcs[other]) is ElectorState.STANDBY,
        timeout_s=20.0,
    )
    before = [len(nn.transitions) for nn in pair.nns]
    pair.nns[first].standby = True  # as a NameNode restarted under its ZKFC comes back
    await wait_until_async(
        "an active NameNode again, made so by a ZKFC",
        lambda: (
            len(pair.active()) == 1 and sum(len(nn.transitions) for nn in pair.nns) > sum(before)
        ),
        timeout_s=20.0,
    )
    now = pair.active()[0]
    assert pair.nns[now].transitions[-1] == ("active", "REQUEST_BY_ZKFC")
    await wait_until_async(
        "the elector agrees",
        lambda: elector_state(pair.zkfcs[now]) is ElectorState.ACTIVE,
        timeout_s=20.0,
    )
    await wait_until_async(
        "the other is standby",
        lambda: elector_state(pair.zkfcs[1 - now]) is ElectorState.STANDBY,
        timeout_s=20.0,
    )


async def test_a_graceful_fence_without_answer_is_logged_with_its_reason(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # a stopped NameNode: the connection is taken, nothing answers
        writer.close()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    settings = ZkfcSettings(
        nameservice="ns",
        namenode_id="nn2",
        nn_host="127.0.0.1",
        nn_port=1,
        zkfc_port=0,
        graceful_fence_timeout_s=0.5,
    )
    zkfc = ZKFailoverController(settings, NodeFencer.from_config("shell(true)"))
    old = node_info("ns", "nn1", "127.0.0.1", port, 0)
    try:
        with caplog.at_level(logging.WARNING, logger="qjm.ha.zkfc"):
            await zkfc.fence_old_active(old)
    finally:
        server.close()
    assert zkfc.fenced == ["nn1"]  # by shell(true), after the graceful attempt
    line = next(r.getMessage() for r in caplog.records if "graceful fencing" in r.getMessage())
    assert line.endswith("failed: no answer within 0.5 s"), line


# ---- how long a ZKFC cedes (design §N.7) ------------------------------------------------------


@pytest.mark.parametrize(
    ("millis", "seconds"),
    [(0, 0.0), (1, 0.001), (10_000, 10.0), (30_000, 30.0), (30_001, None), (2**32 - 1, None)],
)
def test_cede_is_bounded(millis: int, seconds: float | None) -> None:
    if seconds is not None:
        assert cede_seconds(millis, 30.0) == seconds
        return
    with pytest.raises(CedeRefusedError) as e:
        cede_seconds(millis, 30.0)
    assert str(e.value).startswith(f"cedeActive for {millis} ms refused")
    assert "at most 30000 ms (zkfc.max_cede_ms" in str(e.value)
    assert e.value.java_class == "org.apache.hadoop.HadoopIllegalArgumentException"


@pytest.mark.parametrize(
    ("settings", "session_ms", "bound"),
    [
        ({}, 10_000, 30_000),  # 3 session timeouts
        ({}, 1_000, 10_000),  # never below what a graceful failover asks (2 x 5 s)
        ({"graceful_fence_timeout_ms": 20_000}, 10_000, 40_000),
        ({"max_cede_ms": 15_000}, 10_000, 15_000),
    ],
)
def test_the_cede_bound_from_the_config(
    settings: dict[str, int], session_ms: int, bound: int
) -> None:
    assert FailoverControllerSettings(**settings).cede_bound_ms(session_ms) == bound


def test_a_cede_bound_below_a_graceful_failover_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"zkfc.max_cede_ms \(9999\) is below the 10000 ms"):
        FailoverControllerSettings(max_cede_ms=9_999)


@pytest.mark.parametrize(
    ("key", "value"), [("ipc_max_connections", 0), ("ipc_max_unfinished_bytes", 0)]
)
def test_zkfc_ipc_limits_must_be_positive(key: str, value: int) -> None:
    with pytest.raises(ConfigError, match=f"zkfc.{key} must be at least 1"):
        FailoverControllerSettings(**{key: value})


async def test_the_zkfc_serves_within_its_ipc_limits() -> None:
    """The ZKFC's IPC server takes its limits (design §N.6): a frame as large as the byte cap
    closes the connection; a connection past the cap on connections is refused."""
    settings = ZkfcSettings(
        "ns1",
        "nn1",
        "127.0.0.1",
        1,
        zkfc_port=0,
        ipc_max_connections=1,
        ipc_idle_timeout_s=30.0,
        ipc_max_unfinished_bytes=4096,
    )
    zkfc = ZKFailoverController(settings, NodeFencer([]))
    await zkfc.start_rpc()
    assert zkfc.server is not None
    port = zkfc.server.port
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"hrpc\x09\x00\x00" + (1 << 20).to_bytes(4, "big"))  # a 1 MiB frame
        async with asyncio.timeout(5):
            answer = await reader.read()  # a FATAL answer, then the close
        assert b"ipc.maximum.data.length 4096" in answer
        writer.close()
        first = ZKFCClient(f"127.0.0.1:{port}", timeout=5.0)
        with pytest.raises(RemoteError):  # reaches the ZKFC: it is in no election
            await first.cede_active(1000)
        second = ZKFCClient(f"127.0.0.1:{port}", timeout=5.0)
        try:
            with pytest.raises(Exception) as refused:
                await second.cede_active(1000)
            assert not isinstance(refused.value, RemoteError)  # closed before any answer
        finally:
            await second.close()
            await first.close()
        stats = zkfc.server.stats()
        assert stats["connections_refused"] >= 1 and stats["max_connections"] == 1
    finally:
        await zkfc.server.stop()
