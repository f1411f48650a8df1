"""The ZooKeeper launcher with the real server from Debian's zookeeper package."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient, KazooState

from ports import free_port_block
from qjm.cluster import zookeeper
from qjm.cluster.process import pid_alive, port_is_free
from qjm.cluster.zookeeper import ZooKeeperError, server_mode, start_zookeeper
from qjm.ha.elector import reconnect_policy

logging.getLogger("kazoo").setLevel(logging.WARNING)


@pytest.fixture
def clients() -> Iterator[list[KazooClient]]:
    """Kazoo clients a test opened; closed at its end."""
    opened: list[KazooClient] = []
    yield opened
    for c in opened:
        c.stop()
        c.close()


def connect(clients: list[KazooClient], hosts: str, timeout: float = 10.0) -> KazooClient:
    """A started kazoo client on hosts, closed when the test ends."""
    zk = KazooClient(hosts=hosts, timeout=timeout, connection_retry=reconnect_policy(timeout))
    clients.append(zk)
    zk.start(timeout=10)
    return zk


@pytest.mark.slow
def test_standalone_serves_kazoo_and_stop_frees_the_port(
    tmp_path: Path, clients: list[KazooClient]
) -> None:
    ens = start_zookeeper(tmp_path / "zk")
    try:
        [m] = ens.members
        assert ens.connect_string == m.address == f"127.0.0.1:{m.client_port}"
        assert server_mode(m.address) == "standalone"
        assert (m.data_dir / "myid").read_text().strip() == "1"
        assert "admin.enableServer=false" in m.config.read_text()
        [pid] = ens.pids
        assert pid_alive(pid)
        zk = connect(clients, ens.connect_string)
        zk.create("/qjm-test/a", b"hello", makepath=True)
        assert zk.get("/qjm-test/a")[0] == b"hello"
        assert "standalone" in m.log.read_text()  # the server's own log reaches the file
        assert ens.describe() == {
            "zk1": {
                "pid": pid,
                "client": m.address,
                "config": str(m.config),
                "data": str(m.data_dir),
                "log": str(m.log),
            }
        }
    finally:
        ens.stop()
    assert ens.pids == []
    assert not pid_alive(pid)
    assert port_is_free("127.0.0.1", m.client_port)
    assert server_mode(m.address) == ""


@pytest.mark.slow
def test_ensemble_elects_one_leader_and_survives_one_member_stopped(
    tmp_path: Path, clients: list[KazooClient]
) -> None:
    base = free_port_block(9)
    with start_zookeeper(tmp_path / "zk", members=3, base_port=base) as ens:
        assert ens.connect_string == ",".join(f"127.0.0.1:{base + i}" for i in range(3))
        assert len(ens.pids) == 3
        modes = ens.modes()
        assert sorted(modes.values()) == ["follower", "follower", "leader"]
        leader = ens.leader()
        assert leader is not None and modes[leader] == "leader"
        cfg = ens.member(1).config.read_text()
        assert all(
            f"server.{i + 1}=127.0.0.1:{base + 3 + i}:{base + 6 + i}" in cfg for i in range(3)
        )

        zk = connect(clients, ens.connect_string)
        zk.create("/before", b"1")
        ens.stop_member(leader)
        assert ens.member(leader).pid is None and len(ens.pids) == 2
        ens.wait_serving()
        after = ens.modes()
        assert sorted(after.values()) == ["follower", "leader"] and leader not in after
        assert ens.leader() not in (None, leader)

        survivors = ",".join(m.address for m in ens.members if m.myid != leader)
        zk2 = connect(clients, survivors)
        assert zk2.get("/before")[0] == b"1"
        zk2.create("/while-down", b"2")

        ens.start_member(leader)  # it rejoins as a follower and catches up
        assert ens.modes()[leader] == "follower"
        zk3 = connect(clients, ens.member(leader).address)
        zk3.sync("/")
        assert zk3.get("/while-down")[0] == b"2"
    assert ens.pids == []
    assert all(port_is_free("127.0.0.1", p) for p in range(base, base + 9))


@pytest.mark.slow
@pytest.mark.parametrize("kill", [False, True], ids=["sigterm", "sigkill"])
def test_restart_keeps_data_and_sessions(
    tmp_path: Path, clients: list[KazooClient], kill: bool
) -> None:
    # A session survives a restart that ends within its timeout; a JVM restart on a loaded
    # 2-core host has taken more than 10 s, so the session here is long and the restart's
    # length is checked against it.
    session_s = 30.0
    with start_zookeeper(tmp_path / "zk") as ens:
        # kazoo waits for a connect answer for the session timeout divided by the number of
        # hosts, and a JVM starting up can take a connection and answer nothing, so one
        # attempt that lands mid-start outlives the session; the one server named three times
        # bounds each attempt to a third of it
        zk = connect(clients, ",".join([ens.connect_string] * 3), timeout=session_s)
        session = zk.client_id
        zk.create("/kept", b"data")
        zk.create("/mine", b"", ephemeral=True)
        reconnected = threading.Event()
        lost = threading.Event()

        def watch(state: str) -> None:
            if state == KazooState.CONNECTED:
                reconnected.set()
            elif state == KazooState.LOST:
                lost.set()

        zk.add_listener(watch)
        [old_pid] = ens.pids
        port = ens.member(1).client_port
        down = time.monotonic()
        ens.restart(1, kill=kill)
        outage = time.monotonic() - down
        assert outage < session_s / 2, f"the restart took {outage:.1f} s of a {session_s} s session"
        [new_pid] = ens.pids
        assert new_pid != old_pid and not pid_alive(old_pid)
        assert ens.member(1).client_port == port

        assert reconnected.wait(session_s), "kazoo did not reconnect after the restart"
        assert not lost.is_set()
        assert zk.client_id == session  # the same session: its ephemeral node is still there
        assert zk.get("/kept")[0] == b"data"
        assert zk.exists("/mine") is not None
        fresh = connect(clients, ens.connect_string)
        assert fresh.get("/kept")[0] == b"data"


def test_a_taken_port_is_named(tmp_path: Path) -> None:
    base = free_port_block(1)
    with socket.socket() as s:
        s.bind(("127.0.0.1", base))
        s.listen()
        with pytest.raises(ZooKeeperError, match=rf"port {base} on 127.0.0.1 is taken"):
            start_zookeeper(tmp_path / "zk", base_port=base)
    assert not (tmp_path / "zk" / "logs" / "zk1.log").exists()  # nothing was started


def test_bad_base_port_and_member_counts_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ZooKeeperError, match=r"base port 65530: 3 member\(s\) need ports"):
        start_zookeeper(tmp_path / "zk", members=3, base_port=65530)
    with pytest.raises(ZooKeeperError, match="base port 0"):
        start_zookeeper(tmp_path / "zk", base_port=0)
    with pytest.raises(ZooKeeperError, match=r"2 members: run 1 \(standalone\) or an odd number"):
        start_zookeeper(tmp_path / "zk", members=2)


def test_missing_java_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(ZooKeeperError, match="no `java` is on PATH.*apt-get install"):
        start_zookeeper(tmp_path / "zk")
    with pytest.raises(ZooKeeperError, match=r"/nowhere/java is not an executable file"):
        start_zookeeper(tmp_path / "zk", java="/nowhere/java")


def test_missing_package_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(zookeeper, "ZOOKEEPER_JAR", tmp_path / "zookeeper.jar")
    with pytest.raises(ZooKeeperError, match=r"apt-get install zookeeper` \(or `make install`\)"):
        start_zookeeper(tmp_path / "zk")


@pytest.mark.slow
def test_a_server_that_exits_early_shows_its_log(tmp_path: Path) -> None:
    with pytest.raises(ZooKeeperError) as err:
        start_zookeeper(tmp_path / "zk", settings={"tickTime": "soon"})
    message = str(err.value)
    assert "zk1" in message and "exited with code" in message and "before it served" in message
    assert 'For input string: "soon"' in message  # the server's own words, from its log
