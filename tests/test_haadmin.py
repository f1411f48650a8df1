"""Manual HA administration: FailoverController's steps and fallbacks, haadmin's CLI, and the
failing-over NameNodeClient, against fake NameNodes on real IPC servers."""

from __future__ import annotations

import getpass
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from conftest import run_qjm
from nn_fakes import FakeNameNode, ServedInThread, serve
from ports import free_address
from qjm.ha.haadmin import FailoverFailedError, HATarget, failover, transition_to_active
from qjm.ipc import IpcServer, RemoteError
from qjm.namenode.client import HAAdminClient, NameNodeClient, NoActiveNameNodeError
from qjm.namenode.types import HAState

FAST = 5.0  # per-call timeout in these tests


class Pair:
    """nn1 active and nn2 standby, served on loopback."""

    def __init__(self, nodes: list[FakeNameNode], servers: list[IpcServer]) -> None:
        self.nodes = nodes
        self.servers = servers
        self.targets = [
            HATarget(f"nn{i + 1}", f"127.0.0.1:{s.port}") for i, s in enumerate(servers)
        ]


@pytest.fixture
async def pair() -> AsyncIterator[Pair]:
    nodes = [FakeNameNode(superuser="alice"), FakeNameNode(superuser="alice", standby=True)]
    for nn in nodes:  # the operator running haadmin is in the superuser group
        nn.groups[getpass.getuser()] = (nn.settings.superuser_group,)
    servers = [await serve(nn) for nn in nodes]
    try:
        yield Pair(nodes, servers)
    finally:
        for s in servers:
            await s.stop()


async def test_failover_makes_from_standby_then_to_active(pair: Pair) -> None:
    nn1, nn2 = pair.nodes
    said: list[str] = []
    await failover(*pair.targets, call_timeout_s=FAST, report=said.append)
    assert (nn1.ha_state, nn2.ha_state) == (HAState.STANDBY, HAState.ACTIVE)
    assert nn1.transitions == [("standby", "REQUEST_BY_USER")]
    assert nn2.transitions == [("active", "REQUEST_BY_USER")]
    assert not any("fenc" in line for line in said)  # graceful: nothing to fence
    await failover(pair.targets[1], pair.targets[0], forced=True, call_timeout_s=FAST)
    assert nn1.transitions[-1] == ("active", "REQUEST_BY_USER_FORCED")


async def test_failover_refuses_an_active_unhealthy_or_same_target(pair: Pair) -> None:
    nn1, nn2 = pair.nodes
    t1, t2 = pair.targets
    with pytest.raises(FailoverFailedError, match="itself"):
        await failover(t1, t1, call_timeout_s=FAST)
    with pytest.raises(FailoverFailedError, match="active service"):
        await failover(t2, t1, call_timeout_s=FAST)
    nn2.healthy = False
    with pytest.raises(FailoverFailedError, match="not ready to become active"):
        await failover(t1, t2, call_timeout_s=FAST)
    with pytest.raises(FailoverFailedError, match="unhealthy"):
        await failover(t1, t2, force_active=True, call_timeout_s=FAST)
    assert (nn1.ha_state, nn2.ha_state) == (HAState.ACTIVE, HAState.STANDBY)
    assert nn1.transitions == nn2.transitions == []  # refused before any transition


async def test_failover_from_a_dead_active_fences_by_the_journal_and_goes_on(pair: Pair) -> None:
    _, nn2 = pair.nodes
    await pair.servers[0].stop()
    said: list[str] = []
    await failover(*pair.targets, call_timeout_s=FAST, report=said.append)
    assert nn2.ha_state is HAState.ACTIVE
    assert any("Unable to gracefully make nn1" in line for line in said), said
    assert any("new epoch" in line for line in said), said


async def test_a_failed_activation_fails_back_to_the_old_active(pair: Pair) -> None:
    nn1, nn2 = pair.nodes
    nn2.fail_activation = True
    with pytest.raises(FailoverFailedError) as failed:
        await failover(*pair.targets, call_timeout_s=FAST)
    assert "Unable to failover to nn2" in str(failed.value)
    assert "nn1" in str(failed.value) and "active again" in str(failed.value)
    assert (nn1.ha_state, nn2.ha_state) == (HAState.ACTIVE, HAState.STANDBY)
    assert nn1.transitions == [("standby", "REQUEST_BY_USER"), ("active", "REQUEST_BY_USER")]
    # with --forcefence there is no failback (HDFS: from was fenced)
    with pytest.raises(FailoverFailedError) as fenced:
        await failover(*pair.targets, force_fence=True, call_timeout_s=FAST)
    assert "active again" not in str(fenced.value)
    assert nn1.ha_state is HAState.STANDBY


async def test_transition_to_active_checks_the_other_namenodes(pair: Pair) -> None:
    _, nn2 = pair.nodes
    t1, t2 = pair.targets
    with pytest.raises(FailoverFailedError, match="nn1 .* is already active"):
        await transition_to_active(t2, [t1], call_timeout_s=FAST)
    assert nn2.ha_state is HAState.STANDBY
    await transition_to_active(t2, [t1], force_active=True, call_timeout_s=FAST)
    assert nn2.ha_state is HAState.ACTIVE  # both active: the journal's epoch fences nn1
    nn2.standby = True
    await pair.servers[0].stop()  # nn1 killed: nn2 may take over without --forceactive
    said: list[str] = []
    await transition_to_active(t2, [t1], call_timeout_s=FAST, report=said.append)
    assert nn2.ha_state is HAState.ACTIVE
    assert any("unreachable" in line and "epoch" in line for line in said), said
    nn2.healthy = False
    nn2.standby = True
    with pytest.raises(FailoverFailedError, match="transitionToActive of nn2"):
        await transition_to_active(t2, [t1], call_timeout_s=FAST)


async def test_ha_admin_client_reports_state_and_health(pair: Pair) -> None:
    nn1, _ = pair.nodes
    async with HAAdminClient(pair.targets[0].address, timeout=FAST) as c:
        assert await c.get_service_state() is HAState.ACTIVE
        await c.monitor_health()
        nn1.healthy = False
        with pytest.raises(RemoteError) as sick:
            await c.monitor_health()
        assert sick.value.class_name == "org.apache.hadoop.ha.HealthCheckFailedException"
        assert await c.get_service_status() == (HAState.ACTIVE, False, "not healthy: test")


async def test_a_caller_who_is_no_superuser_cannot_drive_ha(pair: Pair) -> None:
    """A hostile user reaching the RPC port cannot demote the active, promote the standby,
    or even ask for health and status: HDFS refuses every HA call without superuser rights."""
    nn1, nn2 = pair.nodes
    for target in pair.targets:
        async with HAAdminClient(target.address, user="mallory", timeout=FAST) as c:
            for call in (
                c.transition_to_standby,
                c.transition_to_active,
                c.monitor_health,
                c.get_service_status,
            ):
                with pytest.raises(RemoteError) as refused:
                    await call()
                assert refused.value.class_name == (
                    "org.apache.hadoop.security.AccessControlException"
                )
                assert "mallory" in refused.value.message
    assert not nn1.standby and nn2.standby
    assert nn1.transitions == [] and nn2.transitions == []


# -- NameNodeClient: HDFS's client failover -------------------------------------------------


async def test_client_fails_over_from_a_standby_and_follows_the_active(pair: Pair) -> None:
    nn1, nn2 = pair.nodes
    t1, t2 = pair.targets
    async with NameNodeClient([t2.address, t1.address], user="alice", timeout=FAST) as c:
        assert await c.mkdirs("/a/b")
        assert c.current == t1.address and c.failovers == 1
        await failover(t1, t2, call_timeout_s=FAST)
        nn2.ns = nn1.ns  # the new active has every edit (as after catching up)
        status = await c.touch("/a/f")
        assert c.current == t2.address and c.failovers == 2
        assert not status.is_dir and status.permission == 0o644  # 0o666 & ~umask 022
        listing = await c.listing("/a")
        assert [s.name for s in listing or []] == ["b", "f"]


async def test_client_skips_an_unreachable_namenode(pair: Pair) -> None:
    dead = free_address()
    async with NameNodeClient([dead, pair.targets[0].address], timeout=FAST) as c:
        assert await c.stat("/") is not None
        assert c.current == pair.targets[0].address


async def test_client_gives_up_after_bounded_rounds_when_none_is_active(pair: Pair) -> None:
    pair.nodes[0].standby = True
    addresses = [t.address for t in pair.targets]
    async with NameNodeClient(addresses, timeout=FAST, max_rounds=3, backoff_s=0.01) as c:
        with pytest.raises(NoActiveNameNodeError) as none:
            await c.stat("/")
    assert "no active NameNode" in str(none.value) and "StandbyException" in str(none.value)
    assert pair.nodes[0].calls.count("getFileInfo") == 3  # one per round


async def test_client_raises_namespace_errors_without_failing_over(pair: Pair) -> None:
    async with NameNodeClient([pair.targets[0].address], timeout=FAST, user="alice") as c:
        await c.mkdirs("/d")
        await c.touch("/d/x")
        with pytest.raises(RemoteError) as not_empty:
            await c.delete("/d")
        assert not_empty.value.class_name.endswith("PathIsNotEmptyDirectoryException")
        assert c.failovers == 0
        await c.chmod("/d/x", 0o600)
        await c.chown("/d/x", "bob", None)
        assert await c.setrep("/d/x", 2)
        await c.set_times("/d/x", 1000, -1)
        st = await c.stat("/d/x")
        assert st is not None
        assert (st.permission, st.owner, st.replication, st.mtime) == (0o600, "bob", 2, 1000)
        summary = await c.content_summary("/d")
        assert (summary.file_count, summary.directory_count, summary.ns_quota) == (1, 1, -1)
        await c.rename2("/d/x", "/d/y")
        assert await c.rename("/d/nope", "/d/z") is False
        assert await c.delete("/d", recursive=True)
        await c.msync()


async def test_listing_follows_pages(pair: Pair) -> None:
    pair.nodes[0].settings = type(pair.nodes[0].settings)(listing_limit=2)
    async with NameNodeClient([pair.targets[0].address], timeout=FAST, user="alice") as c:
        for i in range(5):
            await c.mkdirs(f"/p/d{i}")
        listing = await c.listing("/p")
        assert [s.name for s in listing or []] == [f"d{i}" for i in range(5)]
        assert pair.nodes[0].calls.count("getListing") == 3
        assert await c.listing("/nope") is None


# -- qjm haadmin ----------------------------------------------------------------------------


@pytest.fixture
def threaded() -> Iterator[ServedInThread]:
    nodes = [FakeNameNode(superuser="alice"), FakeNameNode(superuser="alice", standby=True)]
    for nn in nodes:  # the operator running haadmin is in the superuser group
        nn.groups[getpass.getuser()] = (nn.settings.superuser_group,)
    with ServedInThread(*nodes) as served:
        yield served


def write_config(tmp_path: Path, addresses: list[str]) -> str:
    lines = []
    for i, address in enumerate(addresses, 1):
        lines += [
            f"[namenodes.nn{i}]",
            f'rpc_address = "{address}"',
            f'http_address = "{free_address()}"',
            f'name_dir = "{tmp_path / f"nn{i}"}"',
        ]
    path = tmp_path / "cluster.toml"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.mark.slow
def test_haadmin_cli(tmp_path: Path, threaded: ServedInThread) -> None:
    cfg = write_config(tmp_path, threaded.addresses)
    nn1, nn2 = threaded.nodes

    def haadmin(*args: str) -> tuple[int, str, str]:
        r = run_qjm("haadmin", "--config", cfg, "--timeout", "5", *args)
        assert "Traceback" not in r.stderr
        return r.returncode, r.stdout, r.stderr

    assert haadmin("-getServiceState", "nn1") == (0, "active\n", "")
    assert haadmin("-getServiceState", "nn2")[:2] == (0, "standby\n")
    rc, out, _ = haadmin("-getAllServiceState")
    assert rc == 0
    assert [line.split() for line in out.splitlines()] == [
        [threaded.addresses[0], "active"],
        [threaded.addresses[1], "standby"],
    ]
    rc, _, err = haadmin("-transitionToActive", "nn2")
    assert rc == 1 and "nn1" in err and "already active" in err and len(err.splitlines()) == 1
    rc, out, err = haadmin("-failover", "nn1", "nn2")
    assert (rc, out) == (0, "Failover to nn2 successful\n"), err
    assert (nn1.ha_state, nn2.ha_state) == (HAState.STANDBY, HAState.ACTIVE)
    assert haadmin("-checkHealth", "nn1")[0] == 0
    nn1.healthy = False
    rc, _, err = haadmin("-checkHealth", "nn1")
    assert rc == 1 and "Health check of nn1" in err and len(err.splitlines()) == 1
    rc, _, err = haadmin("-failover", "nn2", "nn1")
    assert rc == 1 and err.startswith("qjm haadmin: Failover failed: ")
    assert haadmin("-transitionToStandby", "nn2")[0] == 0
    assert nn2.transitions[-1] == ("standby", "REQUEST_BY_USER")
    assert haadmin("--forcemanual", "-transitionToActive", "nn2")[0] == 0
    assert nn2.transitions[-1] == ("active", "REQUEST_BY_USER_FORCED")
    rc, _, err = haadmin("-getServiceState", "nn9")
    assert rc == 1 and "nn9" in err and "nn1, nn2" in err
    threaded.stop(0)
    rc, out, _ = haadmin("-getAllServiceState")
    assert rc == 0 and "Failed to connect" in out.splitlines()[0]
    rc, _, err = haadmin("-getServiceState", "nn1")
    assert rc == 1 and len(err.splitlines()) == 1
