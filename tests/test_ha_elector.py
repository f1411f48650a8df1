"""ActiveStandbyElector against a real ZooKeeper server (Debian's zookeeper) on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from qjm.cluster.zookeeper import ZooKeeperEnsemble, start_zookeeper
from qjm.ha.elector import (
    ActiveNodeInfo,
    ActiveStandbyElector,
    ElectorError,
    ElectorState,
    KazooStore,
    Node,
    ParentZNodeMissingError,
    connect,
    node_info,
    parse_acl,
    parse_auth,
    reconnect_policy,
)
from qjm.testing.wait import wait_until_async
from qjm.testing.zookeeper import MemoryStore, MemoryZk

SESSION_S = 4.0


@pytest.fixture
def own_zookeeper() -> Iterator[ZooKeeperEnsemble]:
    """A ZooKeeper of the test's own, which the test may stop and restart."""
    with tempfile.TemporaryDirectory(prefix="qjm-test-zk-") as tmp:
        ensemble = start_zookeeper(Path(tmp))
        try:
            yield ensemble
        finally:
            ensemble.stop()


class App:
    """Elector callbacks that record what they were asked, in order."""

    def __init__(self, name: str, *, fence_ok: bool = True) -> None:
        self.name = name
        self.fence_ok = fence_ok
        self.events: list[str] = []
        self.fenced: list[ActiveNodeInfo] = []

    async def become_active(self) -> None:
        self.events.append("active")

    async def become_standby(self) -> None:
        self.events.append("standby")

    async def enter_neutral_mode(self) -> None:
        self.events.append("neutral")

    async def fence_old_active(self, old: ActiveNodeInfo) -> None:
        self.events.append(f"fence:{old.namenodeId}")
        self.fenced.append(old)
        if not self.fence_ok:
            raise RuntimeError("no fencing method succeeded")


_ns_counter = 0


def fresh_ns() -> str:
    global _ns_counter
    _ns_counter += 1
    return f"ns{_ns_counter}"


async def make(
    hosts: str,
    ns: str,
    nn: str,
    app: App,
    session_timeout_s: float = SESSION_S,
    **kwargs: object,
) -> ActiveStandbyElector:
    info = node_info(ns, nn, "127.0.0.1", 8020 + int(nn[-1]), 8019)
    return await connect(
        hosts,
        info,
        app,
        session_timeout_s=session_timeout_s,
        sleep_after_failure_s=0.1,
        **kwargs,  # type: ignore[arg-type]
    )


@contextlib.asynccontextmanager
async def two_electors(
    hosts: str, b: App | None = None, session_timeout_s: float = SESSION_S
) -> AsyncIterator[tuple[str, App, App, ActiveStandbyElector, ActiveStandbyElector]]:
    """nn1's and nn2's electors on hosts in a fresh nameservice (not joined); both closed at
    the end. Yields (nameservice, nn1's app, nn2's app, nn1's elector, nn2's elector)."""
    ns = fresh_ns()
    a, b = App("nn1"), b or App("nn2")
    ea = await make(hosts, ns, "nn1", a, session_timeout_s)
    try:
        eb = await make(hosts, ns, "nn2", b, session_timeout_s)
        try:
            yield ns, a, b, ea, eb
        finally:
            await eb.close()
    finally:
        await ea.close()


@pytest.mark.slow
async def test_one_wins_the_other_waits_then_takes_over_fencing_the_first(
    zookeeper: str,
) -> None:
    async with two_electors(zookeeper) as (ns, a, b, ea, eb):
        with pytest.raises(ParentZNodeMissingError, match="format-zk"):
            await ea.join_election()
        assert a.events == []
        await ea.format_zk(force=False)
        with pytest.raises(ElectorError, match="--force"):
            await eb.format_zk(force=False)
        await ea.join_election()
        await eb.join_election()
        assert (ea.state, eb.state) == (ElectorState.ACTIVE, ElectorState.STANDBY)
        assert a.events == ["active"]  # no breadcrumb yet: nothing to fence
        assert b.events == ["standby"]
        lock = await eb.store.get(eb.lock_path)
        assert lock is not None
        assert ActiveNodeInfo.FromString(lock.data).namenodeId == "nn1"

        await ea.close()  # nn1's ZKFC dies: its session closes, its breadcrumb stays
        await wait_until_async(
            "nn2 active", lambda: eb.state is ElectorState.ACTIVE, timeout_s=15.0
        )
        assert b.events == ["standby", "fence:nn1", "active"]  # fenced before active
        old = b.fenced[0]
        assert (old.nameserviceId, old.hostname, old.port) == (ns, "127.0.0.1", 8021)
        crumb = await eb.store.get(eb.breadcrumb_path)
        assert crumb is not None
        assert ActiveNodeInfo.FromString(crumb.data).namenodeId == "nn2"


@pytest.mark.slow
async def test_fence_failure_never_becomes_active(zookeeper: str) -> None:
    async with two_electors(zookeeper, App("nn2", fence_ok=False)) as (_ns, _a, b, ea, eb):
        await ea.format_zk(force=False)
        await ea.join_election()
        await eb.join_election()
        assert eb.state is ElectorState.STANDBY
        await ea.close()
        # it keeps trying (releasing the lock between tries) and never goes active
        await wait_until_async(
            "three fence attempts", lambda: b.events.count("fence:nn1") >= 3, timeout_s=15.0
        )
        assert "active" not in b.events
        assert eb.state is not ElectorState.ACTIVE
        assert "could not fence the old active nn1" in eb.last_error
        crumb = await eb.store.get(eb.breadcrumb_path)
        assert crumb is not None
        assert ActiveNodeInfo.FromString(crumb.data).namenodeId == "nn1"  # untouched
        # once fencing works, it becomes active
        b.fence_ok = True
        await wait_until_async(
            "nn2 active", lambda: eb.state is ElectorState.ACTIVE, timeout_s=15.0
        )
        assert b.events[-2:] == ["fence:nn1", "active"]


@pytest.mark.slow
async def test_quit_election_releases_and_the_next_need_not_fence(zookeeper: str) -> None:
    async with two_electors(zookeeper) as (_ns, a, b, ea, eb):
        await ea.format_zk(force=False)
        await ea.join_election()
        await eb.join_election()
        await ea.quit_election(need_fence=False)
        assert ea.state is ElectorState.INIT
        await wait_until_async(
            "nn2 active", lambda: eb.state is ElectorState.ACTIVE, timeout_s=15.0
        )
        assert b.events == ["standby", "active"]  # breadcrumb deleted: no fencing
        # a quit that needs fencing leaves the breadcrumb: nn1 fences nn2 when it wins
        await ea.join_election()
        assert ea.state is ElectorState.STANDBY
        await eb.quit_election(need_fence=True)
        await wait_until_async(
            "nn1 active", lambda: ea.state is ElectorState.ACTIVE, timeout_s=15.0
        )
        assert a.events[-3:] == ["standby", "fence:nn2", "active"]


@pytest.mark.slow
async def test_format_zk_force_clears_the_parent(zookeeper: str) -> None:
    ns = fresh_ns()
    a = App("nn1")
    ea = await make(zookeeper, ns, "nn1", a)
    try:
        await ea.format_zk(force=False)
        await ea.join_election()
        await ea.quit_election(need_fence=True)  # breadcrumb left behind
        assert await ea.store.exists(ea.breadcrumb_path)
        await ea.format_zk(force=True)
        assert await ea.parent_exists()
        assert not await ea.store.exists(ea.breadcrumb_path)
    finally:
        await ea.close()


@pytest.mark.slow
async def test_digest_acl_refuses_an_unauthenticated_client(zookeeper: str) -> None:
    from kazoo.client import KazooClient
    from kazoo.exceptions import NoAuthError
    from kazoo.security import make_digest_acl_credential

    ns = fresh_ns()
    cred = make_digest_acl_credential("zkfc", "s3cret")  # "zkfc:<base64 sha1>"
    acl = parse_acl(f"digest:{cred}:rwcda")
    auth = parse_auth("digest:zkfc:s3cret")
    a = App("nn1")
    ea = await make(zookeeper, ns, "nn1", a, auth=auth, acl=acl, parent="/qjm-ha-acl")
    try:
        await ea.format_zk(force=False)
        await ea.join_election()
        assert ea.state is ElectorState.ACTIVE

        def outsider() -> list[str]:
            refused = []
            zk = KazooClient(hosts=zookeeper, timeout=SESSION_S)
            zk.start(timeout=15)
            try:
                for path in (ea.lock_path, ea.breadcrumb_path):
                    try:
                        zk.get(path)
                    except NoAuthError:
                        refused.append(path)
                try:
                    zk.create(f"{ea.parent_znode}/intruder", b"")
                except NoAuthError:
                    refused.append("create")
                try:
                    zk.delete(ea.breadcrumb_path)
                except NoAuthError:
                    refused.append("delete")
            finally:
                zk.stop()
                zk.close()
            return refused

        refused = await asyncio.to_thread(outsider)
        assert refused == [ea.lock_path, ea.breadcrumb_path, "create", "delete"]
    finally:
        await ea.close()


def test_acl_and_auth_specs_are_checked() -> None:
    acl = parse_acl("world:anyone:rwcda, digest:u:abc=:r")
    assert [(x.id.scheme, x.id.id, x.perms) for x in acl] == [
        ("world", "anyone", 31),
        ("digest", "u:abc=", 1),
    ]
    assert parse_auth("digest:u:p") == [("digest", "u:p")]
    with pytest.raises(ElectorError, match="unknown permission"):
        parse_acl("world:anyone:rwx")
    with pytest.raises(ElectorError, match="scheme:id:perms"):
        parse_acl("world")
    with pytest.raises(ElectorError, match="scheme:auth"):
        parse_auth("digest")


@pytest.mark.slow
async def test_session_expiry_fails_over_and_the_expired_one_rejoins(zookeeper: str) -> None:
    from kazoo.client import KazooClient

    async with two_electors(zookeeper) as (_ns, a, b, ea, eb):
        await ea.format_zk(force=False)
        await ea.join_election()
        await eb.join_election()
        assert ea.state is ElectorState.ACTIVE
        old_session = ea.store.session_id

        def expire() -> None:  # a second client on nn1's session closes it: it expires
            sid, passwd = ea.store._zk.client_id  # type: ignore[attr-defined]
            zk = KazooClient(hosts=zookeeper, timeout=SESSION_S, client_id=(sid, passwd))
            zk.start(timeout=15)
            zk.stop()
            zk.close()

        await asyncio.to_thread(expire)
        await wait_until_async(
            "nn2 active", lambda: eb.state is ElectorState.ACTIVE, timeout_s=15.0
        )
        assert b.events == ["standby", "fence:nn1", "active"]
        await wait_until_async(
            "nn1 rejoined as standby", lambda: ea.state is ElectorState.STANDBY, timeout_s=15.0
        )
        assert a.events == ["active", "neutral", "standby"]
        assert ea.store.session_id not in (0, old_session)  # a new session


@pytest.mark.slow
async def test_zookeeper_restart_means_neutral_then_the_same_roles(
    own_zookeeper: ZooKeeperEnsemble,
) -> None:
    # The claim holds for an outage shorter than the session. A JVM restart on a loaded
    # 2-core host has taken more than 4 s, so this test's sessions are long, and the
    # outage it made is checked against them rather than assumed.
    session_s = 30.0
    hosts = own_zookeeper.connect_string
    async with two_electors(hosts, session_timeout_s=session_s) as (_ns, a, b, ea, eb):
        await ea.format_zk(force=False)
        await ea.join_election()
        await eb.join_election()
        down = time.monotonic()
        await asyncio.to_thread(own_zookeeper.stop)
        await wait_until_async(
            "both neutral",
            lambda: ea.state is ElectorState.NEUTRAL and eb.state is ElectorState.NEUTRAL,
            timeout_s=15.0,
        )
        await asyncio.to_thread(own_zookeeper.start)
        outage = time.monotonic() - down
        assert outage < session_s / 2, (
            f"ZooKeeper was down {outage:.1f} s of a {session_s} s session"
        )
        await wait_until_async(
            "roles back",
            lambda: (ea.state, eb.state) == (ElectorState.ACTIVE, ElectorState.STANDBY),
            timeout_s=30,
        )
        assert "fence:nn1" not in b.events and "active" not in b.events  # no failover
        assert a.events[:2] == ["active", "neutral"] and a.events[-1] == "active"


# ---- the state machine on an in-memory store (no ZooKeeper), for interleavings


async def test_a_disconnect_during_fencing_never_becomes_active() -> None:
    zk = MemoryZk()
    ns = fresh_ns()
    a = App("nn1")
    old = node_info(ns, "nn9", "127.0.0.1", 8029, 8019)
    sa = MemoryStore(zk)
    ea = ActiveStandbyElector(sa, node_info(ns, "nn1", "127.0.0.1", 8021, 8019), a)
    ea.sleep_after_failure_s = 0.05
    await ea.format_zk(force=False)
    zk.nodes[ea.breadcrumb_path] = Node(old.SerializeToString(), 0, 0)

    async def fence_then_flap(info: ActiveNodeInfo) -> None:
        a.events.append(f"fence:{info.namenodeId}")
        if a.events.count(f"fence:{info.namenodeId}") == 1:
            sa.emit("suspended")  # ZooKeeper goes away and comes back while fencing
            sa.emit("connected")

    a.fence_old_active = fence_then_flap  # type: ignore[method-assign]
    ea.start()
    try:
        await ea.join_election()
        # the first attempt saw the interruption: no active, no breadcrumb written
        assert a.events[:2] == ["fence:nn9", "neutral"]
        # the retry after reconnecting fences again and only then becomes active
        await wait_until_async(
            "nn1 active", lambda: ea.state is ElectorState.ACTIVE, timeout_s=15.0
        )
        assert a.events == ["fence:nn9", "neutral", "fence:nn9", "active"]
        crumb = zk.nodes[ea.breadcrumb_path]
        assert ActiveNodeInfo.FromString(crumb.data).namenodeId == "nn1"
    finally:
        await ea.close()


async def test_a_lost_session_leaves_neutral_only_on_a_new_election() -> None:
    zk = MemoryZk()
    ns = fresh_ns()
    a = App("nn1")
    sa = MemoryStore(zk)
    ea = ActiveStandbyElector(sa, node_info(ns, "nn1", "127.0.0.1", 8021, 8019), a)
    await ea.format_zk(force=False)
    ea.start()
    try:
        await ea.join_election()
        assert a.events == ["active"]
        sa.emit("lost")
        await wait_until_async("neutral", lambda: ea.state is ElectorState.NEUTRAL, timeout_s=15.0)
        await sa.close()  # the server dropped the session's lock
        zk.sessions += 1
        sa.session_id = zk.sessions  # the client's new session
        sa.emit("connected")
        await wait_until_async(
            "active again", lambda: ea.state is ElectorState.ACTIVE, timeout_s=15.0
        )
        assert a.events == ["active", "neutral", "active"]  # its own breadcrumb: no fencing
        assert zk.nodes[ea.lock_path].owner == sa.session_id
    finally:
        await ea.close()


async def test_a_failed_zookeeper_operation_is_retried_later() -> None:
    zk = MemoryZk()
    ns = fresh_ns()
    a = App("nn1")
    store = MemoryStore(zk)
    failures = [ElectorError("ZooKeeper error on the lock: a test failure")]
    real_create = store.create

    async def flaky_create(path: str, data: bytes, *, ephemeral: bool) -> None:
        if failures:
            raise failures.pop()
        await real_create(path, data, ephemeral=ephemeral)

    store.create = flaky_create  # type: ignore[method-assign]
    ea = ActiveStandbyElector(
        store, node_info(ns, "nn1", "127.0.0.1", 8021, 8019), a, sleep_after_failure_s=0.05
    )
    await ea.format_zk(force=False)
    ea.start()
    try:
        with pytest.raises(ElectorError, match="a test failure"):
            await ea.join_election()
        assert a.events == []
        await wait_until_async(
            "active after the retry", lambda: ea.state is ElectorState.ACTIVE, timeout_s=15.0
        )
        assert a.events == ["active"]
    finally:
        await ea.close()


@pytest.mark.parametrize("session_timeout_s", [3.0, 10.0])
def test_reconnect_attempts_leave_time_within_the_session_timeout(session_timeout_s: float) -> None:
    """After a ZooKeeper restart the session survives only if the client is back within
    the session timeout: the wait between reconnect attempts (jitter included) stays a
    small part of it, whatever the timeout."""
    store = KazooStore("127.0.0.1:1", session_timeout_s=session_timeout_s)
    retry = store._zk._conn_retry
    longest = retry.max_delay * (1 + retry.max_jitter)
    assert longest <= session_timeout_s / 6, longest


@pytest.mark.parametrize("session_s", [2.0, 4.0, 10.0, 30.0])
def test_reconnect_attempts_come_often_enough_to_keep_the_session(session_s: float) -> None:
    policy = reconnect_policy(session_s)
    assert policy["max_tries"] == -1  # never gives up on its own
    assert policy["max_delay"] <= session_s / 10
    assert policy["delay"] <= policy["max_delay"]
