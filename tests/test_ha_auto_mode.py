"""The rules of automatic failover mode outside the launcher: the NameNode's
checkHaStateChange, `qjm haadmin` with automatic failover (--forcemanual, -failover through
the ZKFCs), ZKFCProtocol's administrator check, and the Hadoop client configuration."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from conftest import JNFactory, run_qjm
from nn_fakes import FakeNameNode, ServedInThread, serve
from nn_harness import copy_name_dir, format_cluster, make_config, start_nn
from ports import free_address
from qjm.cluster.hadoop_conf import client_properties, core_site, hdfs_site
from qjm.config import ClusterConfig, config_from_dict, load_config
from qjm.ha.fencing import NodeFencer
from qjm.ha.zkfc import ZKFailoverController, ZKFCClient, ZkfcSettings
from qjm.ipc import IpcServer, RemoteError
from qjm.namenode.client import HAAdminClient
from qjm.namenode.types import HAState
from qjm.security.users import os_user
from qjm.testing.wait import wait_until

ACCESS_DENIED = "org.apache.hadoop.security.AccessControlException"
SERVICE_FAILED = "org.apache.hadoop.ha.ServiceFailedException"
MANUAL_REFUSED = (
    "Manual HA control for this NameNode is disallowed, because automatic HA is enabled."
)
FAST = 5.0  # per-call timeout in these tests


def refusal(address: str) -> str:
    """HDFS haadmin's text for a manual transition without --forcemanual."""
    return (
        f"Automatic failover is enabled for NameNode at {address}\n"
        "Refusing to manually manage HA state, since it may cause\n"
        "a split-brain scenario or other incorrect state.\n"
        "If you are very sure you know what you are doing, please \n"
        "specify the --forcemanual flag.\n"
    )


# ---- the NameNode's rule (HAServiceProtocol handlers, over real IPC) -------------------------


@pytest.fixture
async def auto_nn() -> AsyncIterator[tuple[FakeNameNode, IpcServer]]:
    nn = FakeNameNode(standby=True, automatic_failover=True)
    server = await serve(nn)
    try:
        yield nn, server
    finally:
        await server.stop()


async def test_auto_mode_refuses_a_users_transition_unless_forced(
    auto_nn: tuple[FakeNameNode, IpcServer],
) -> None:
    nn, server = auto_nn
    async with HAAdminClient(f"127.0.0.1:{server.port}", timeout=FAST) as c:
        with pytest.raises(RemoteError) as e:
            await c.transition_to_active()
        assert (e.value.class_name, e.value.message) == (ACCESS_DENIED, MANUAL_REFUSED)
        with pytest.raises(RemoteError) as e:
            await c.transition_to_standby()
        assert e.value.class_name == ACCESS_DENIED
        assert nn.transitions == []  # refused before the NameNode saw it
        await c.transition_to_active(forced=True)
        await c.transition_to_standby(by_zkfc=True)
    assert nn.transitions == [("active", "REQUEST_BY_USER_FORCED"), ("standby", "REQUEST_BY_ZKFC")]


async def test_manual_mode_refuses_a_zkfc() -> None:
    nn = FakeNameNode(standby=True)
    server = await serve(nn)
    try:
        async with HAAdminClient(f"127.0.0.1:{server.port}", timeout=FAST) as c:
            with pytest.raises(RemoteError) as e:
                await c.transition_to_active(by_zkfc=True)
            assert e.value.class_name == ACCESS_DENIED
            assert e.value.message == (
                "Request from ZK failover controller at 127.0.0.1 denied since automatic HA "
                "is not enabled"
            )
            await c.transition_to_active()  # a user's request is what manual mode takes
    finally:
        await server.stop()
    assert nn.transitions == [("active", "REQUEST_BY_USER")]


# ---- ZKFCProtocol's caller check -------------------------------------------------------------


@pytest.fixture
async def lone_zkfc() -> AsyncIterator[ZKFailoverController]:
    """A ZKFC serving ZKFCProtocol but in no election (its calls fail past the check)."""
    settings = ZkfcSettings("ns1", "nn1", "127.0.0.1", 1, zkfc_port=0, superuser_group="root")
    zkfc = ZKFailoverController(settings, NodeFencer([]))
    await zkfc.start_rpc()
    try:
        yield zkfc
    finally:
        assert zkfc.server is not None
        await zkfc.server.stop()


@pytest.mark.parametrize("call", ["cede", "graceful"])
async def test_zkfc_protocol_is_for_administrators(
    lone_zkfc: ZKFailoverController, call: str
) -> None:
    assert lone_zkfc.server is not None
    address = f"127.0.0.1:{lone_zkfc.server.port}"

    async def ask(user: str) -> RemoteError:
        client = ZKFCClient(address, user=user, timeout=FAST)
        try:
            if call == "cede":
                await client.cede_active(1000)
            else:
                await client.graceful_failover()
        except RemoteError as e:
            return e
        finally:
            await client.close()
        raise AssertionError(f"{call} as {user} was not refused")

    hostile = await ask("mallory")
    assert hostile.class_name == ACCESS_DENIED
    assert "mallory" in hostile.message and "superuser" in hostile.message
    # the ZKFC's own user, and a member of the superuser group, pass the check (and then
    # fail because this ZKFC is in no election)
    for user in {os_user(), "root"}:
        allowed = await ask(user)
        assert allowed.class_name == SERVICE_FAILED, allowed
        assert "not in an election" in allowed.message


# ---- hadoop conf -----------------------------------------------------------------------------


def _cfg(auto: bool) -> ClusterConfig:
    return config_from_dict(
        {
            "namenode": {"automatic_failover": auto},
            "zookeeper": {"quorum": "127.0.0.1:2181,127.0.0.1:2182"},
            "namenodes": {
                "nn1": {
                    "rpc_address": "127.0.0.1:8020",
                    "http_address": "127.0.0.1:9870",
                    "name_dir": "/tmp/x1",
                },
                "nn2": {
                    "rpc_address": "127.0.0.1:8030",
                    "http_address": "127.0.0.1:9880",
                    "name_dir": "/tmp/x2",
                },
            },
        },
        "test",
    )


def test_hadoop_conf_says_automatic_failover_and_the_quorum() -> None:
    auto, manual = _cfg(True), _cfg(False)
    assert hdfs_site(auto)["dfs.ha.automatic-failover.enabled"] == "true"
    assert core_site(auto)["ha.zookeeper.quorum"] == "127.0.0.1:2181,127.0.0.1:2182"
    assert client_properties(auto)["ha.zookeeper.quorum"]
    assert hdfs_site(manual)["dfs.ha.automatic-failover.enabled"] == "false"
    assert "ha.zookeeper.quorum" not in client_properties(manual)


# ---- qjm haadmin with automatic failover, against fakes --------------------------------------


def auto_config(
    path: Path,
    addresses: list[str],
    zkfc_addresses: list[str],
    quorum: str = "127.0.0.1:1",
) -> Path:
    """A config with automatic failover: NameNodes at addresses, their ZKFCs at zkfc_addresses."""
    lines = [f'[cluster]\nnameservice = "ns{uuid.uuid4().hex[:8]}"\n']
    lines.append("[namenode]\nautomatic_failover = true\n")
    for i, (addr, zkfc) in enumerate(zip(addresses, zkfc_addresses, strict=True), 1):
        lines.append(
            f'[namenodes.nn{i}]\nrpc_address = "{addr}"\nhttp_address = "127.0.0.1:0"\n'
            f'name_dir = "{path.parent / f"nn{i}"}"\nzkfc_address = "{zkfc}"\n'
        )
    lines.append(f'[zookeeper]\nquorum = "{quorum}"\nsession_timeout_ms = 4000\n')
    lines.append(
        '[zkfc]\nfencing_methods = "shell(true)"\n'
        "health_check_interval_ms = 100\nhealth_rpc_timeout_ms = 2000\n"
        "graceful_fence_timeout_ms = 2000\n"
    )
    path.write_text("\n".join(lines))
    assert load_config(path).namenode.automatic_failover
    return path


@pytest.mark.slow
def test_haadmin_refuses_manual_transitions_without_forcemanual(tmp_path: Path) -> None:
    nns = [
        FakeNameNode(automatic_failover=True),
        FakeNameNode(standby=True, automatic_failover=True),
    ]
    with ServedInThread(*nns) as served:
        cfg = str(auto_config(tmp_path / "c.toml", served.addresses, [free_address()] * 2))
        a1, a2 = served.addresses
        r = run_qjm("haadmin", "--config", cfg, "-transitionToStandby", "nn1")
        assert (r.returncode, r.stderr, r.stdout) == (255, refusal(a1), "")
        r = run_qjm("haadmin", "--config", cfg, "-transitionToActive", "nn2")
        assert (r.returncode, r.stderr) == (255, refusal(a2))
        assert nns[0].transitions == nns[1].transitions == []
        r = run_qjm("haadmin", "--config", cfg, "--forcefence", "-failover", "nn1", "nn2")
        assert r.returncode == 255
        assert r.stderr == (
            "forcefence and forceactive flags not supported with auto-failover enabled.\n"
        )
        r = run_qjm("haadmin", "--config", cfg, "--forceactive", "-failover", "nn1", "nn2")
        assert r.returncode == 255 and "not supported with auto-failover" in r.stderr
        # HDFS's own placement of the flags, after the action
        r = run_qjm("haadmin", "--config", cfg, "-failover", "--forcefence", "nn1", "nn2")
        assert r.returncode == 255 and "not supported with auto-failover" in r.stderr
        # --forcemanual goes through as REQUEST_BY_USER_FORCED, with a warning
        r = run_qjm("haadmin", "--config", cfg, "--forcemanual", "-transitionToStandby", "nn1")
        assert r.returncode == 0, r.stderr
        assert "Proceeding with manual HA state management" in r.stderr
        r = run_qjm("haadmin", "--config", cfg, "-transitionToActive", "--forcemanual", "nn2")
        assert r.returncode == 0, r.stderr
        assert nns[0].transitions == [("standby", "REQUEST_BY_USER_FORCED")]
        assert nns[1].transitions == [("active", "REQUEST_BY_USER_FORCED")]
        # the queries are as in manual mode
        r = run_qjm("haadmin", "--config", cfg, "-getServiceState", "nn2")
        assert (r.returncode, r.stdout) == (0, "active\n")
        r = run_qjm("haadmin", "--config", cfg, "-getAllServiceState")
        assert r.returncode == 0 and "standby" in r.stdout and "active" in r.stdout
        r = run_qjm("haadmin", "--config", cfg, "-checkHealth", "nn1")
        assert r.returncode == 0, r.stderr


@pytest.mark.slow
def test_haadmin_failover_without_a_zkfc_says_which_failed(tmp_path: Path) -> None:
    nowhere = free_address()  # nothing listens there
    cfg = str(auto_config(tmp_path / "c.toml", [free_address()] * 2, [free_address(), nowhere]))
    r = run_qjm("haadmin", "--config", cfg, "-failover", "nn1", "nn2")
    assert r.returncode == 255
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "Failover failed" in lines[0] and "ZKFC of nn2" in lines[0] and nowhere in lines[0]
    assert r.stdout == ""


# ---- real processes: ZooKeeper, two `qjm zkfc`, `qjm haadmin -failover` ------------------


def start_zkfc(cfg: Path, name: str, workdir: Path) -> subprocess.Popen[bytes]:
    """`qjm zkfc --config cfg --id name` as a child process logging to workdir."""
    with open(workdir / f"zkfc-{name}.log", "wb") as log:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "qjm",
                "zkfc",
                "--config",
                str(cfg),
                "--id",
                name,
                "--ready-file",
                str(workdir / f"zkfc-{name}.json"),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM each process; SIGKILL one that does not exit within 30 s."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=30)


@pytest.mark.slow
def test_haadmin_failover_through_real_zkfcs(zookeeper: str, tmp_path: Path) -> None:
    nns = [
        FakeNameNode(standby=True, automatic_failover=True),
        FakeNameNode(standby=True, automatic_failover=True),
    ]
    with ServedInThread(*nns) as served:
        zkfcs = [free_address(), free_address()]
        cfg = auto_config(tmp_path / "c.toml", served.addresses, zkfcs, quorum=zookeeper)
        r = run_qjm("zkfc", "format-zk", "--config", str(cfg))
        assert r.returncode == 0, r.stderr
        procs = [start_zkfc(cfg, "nn1", tmp_path), start_zkfc(cfg, "nn2", tmp_path)]
        try:
            for name in ("nn1", "nn2"):
                ready = tmp_path / f"zkfc-{name}.json"
                wait_until(f"zkfc of {name} ready", ready.exists, timeout_s=30.0)
            wait_until(
                "one NameNode active, made so by its ZKFC",
                lambda: sorted(nn.standby for nn in nns) == [False, True],
                timeout_s=30.0,
            )
            active = next(i for i, nn in enumerate(nns) if not nn.standby)
            other = 1 - active
            a, b = f"nn{active + 1}", f"nn{other + 1}"

            # a manual transition is refused client-side ...
            r = run_qjm("haadmin", "--config", str(cfg), "-transitionToActive", b)
            assert (r.returncode, r.stderr) == (255, refusal(served.addresses[other]))
            assert nns[other].standby

            # ... and a hostile caller is refused by the ZKFCs themselves
            async def hostile(address: str) -> list[RemoteError]:
                errors = []
                client = ZKFCClient(address, user="mallory", timeout=FAST)
                try:
                    for call in (client.graceful_failover(), client.cede_active(10_000)):
                        try:
                            await call
                        except RemoteError as e:
                            errors.append(e)
                finally:
                    await client.close()
                return errors

            for address in zkfcs:
                errors = asyncio.run(hostile(address))
                assert [e.class_name for e in errors] == [ACCESS_DENIED] * 2
                assert all("mallory" in e.message for e in errors)
            assert not nns[active].standby and nns[other].standby  # nothing moved

            # an administrator's cede past the bound (3 session timeouts of 4 s) is refused
            # naming it, and changes nothing (design §N.7)
            async def cede_forever(address: str) -> RemoteError:
                client = ZKFCClient(address, timeout=FAST)
                try:
                    with pytest.raises(RemoteError) as e:
                        await client.cede_active(2**32 - 1)
                    return e.value
                finally:
                    await client.close()

            refused = asyncio.run(cede_forever(zkfcs[active]))
            assert refused.class_name == "org.apache.hadoop.HadoopIllegalArgumentException"
            assert refused.message.startswith(
                "cedeActive for 4294967295 ms refused: this ZKFC cedes at most 12000 ms"
            ), refused.message
            assert not nns[active].standby and nns[other].standby
            assert nns[active].transitions[-1][0] == "active"

            # the graceful failover goes through the target's ZKFC
            r = run_qjm("haadmin", "--config", str(cfg), "-failover", a, b, timeout=120)
            assert r.returncode == 0, r.stderr
            assert r.stdout == f"Failover to NameNode at {served.addresses[other]} successful\n"
            assert not nns[other].standby and nns[active].standby
            assert nns[other].transitions[-1] == ("active", "REQUEST_BY_ZKFC")
            assert nns[active].transitions[-1] == ("standby", "REQUEST_BY_ZKFC")
            r = run_qjm("haadmin", "--config", str(cfg), "-getServiceState", b)
            assert r.stdout == "active\n"
            # and back, once the ceded ZKFC has rejoined the election
            r = run_qjm("haadmin", "--config", str(cfg), "-failover", b, a, timeout=120)
            assert r.returncode == 0, r.stderr
            assert r.stdout == f"Failover to NameNode at {served.addresses[active]} successful\n"
            assert not nns[active].standby and nns[other].standby
        finally:
            stop(procs)
        assert [p.returncode for p in procs] == [0, 0]


# ---- a real NameNode ------------------------------------------------------------------------


@pytest.mark.slow
async def test_real_namenodes_apply_the_rule(tmp_path: Path, jn_factory: JNFactory) -> None:
    jns = [jn_factory.start(f"jn{i}") for i in range(3)]
    auto = make_config(jns, tmp_path, names=("nn1", "nn2"), automatic_failover=True)
    await format_cluster(auto, "nn1")
    copy_name_dir(auto, "nn1", "nn2")
    manual = make_config(jns, tmp_path, names=("nn1", "nn2"))
    nn1 = await start_nn(auto, "nn1")
    nn2 = await start_nn(manual, "nn2")
    try:
        async with HAAdminClient(nn1.rpc_address(), timeout=30) as c:
            with pytest.raises(RemoteError) as e:
                await c.transition_to_active()
            assert (e.value.class_name, e.value.message) == (ACCESS_DENIED, MANUAL_REFUSED)
        async with HAAdminClient(nn1.rpc_address(), user="mallory", timeout=30) as c:
            for forced in (False, True):
                with pytest.raises(RemoteError) as e:
                    await c.transition_to_active(forced=forced)
                assert e.value.class_name == ACCESS_DENIED and "mallory" in e.value.message
            with pytest.raises(RemoteError) as e:
                await c.transition_to_active(by_zkfc=True)
            assert e.value.class_name == ACCESS_DENIED and "mallory" in e.value.message
        assert nn1.ha_state is HAState.STANDBY
        async with HAAdminClient(nn1.rpc_address(), timeout=30) as c:
            await c.transition_to_active(by_zkfc=True)
            assert nn1.ha_state is HAState.ACTIVE
            await c.transition_to_standby(forced=True)
            assert nn1.ha_state is HAState.STANDBY
        async with HAAdminClient(nn2.rpc_address(), timeout=30) as c:
            with pytest.raises(RemoteError) as e:
                await c.transition_to_active(by_zkfc=True)
            assert e.value.class_name == ACCESS_DENIED
            assert "denied since automatic HA is not enabled" in e.value.message
            assert nn2.ha_state is HAState.STANDBY
            await c.transition_to_active()
            assert nn2.ha_state is HAState.ACTIVE
    finally:
        await nn2.stop()
        await nn1.stop()
