"""Leader election for automatic failover: HDFS's ActiveStandbyElector on ZooKeeper (kazoo).

Znodes, under `<parent>/<nameservice>` (parent `/qjm-ha` by default):

    ActiveStandbyElectorLock  EPHEMERAL   ActiveNodeInfo of the holder (the active)
    ActiveBreadCrumb          PERSISTENT  ActiveNodeInfo of the last active, for fencing

The winner of the lock reads the breadcrumb; if it names another node, that node is fenced
(the fence callback must succeed) before the breadcrumb is rewritten and the winner becomes
active. Losers become standby and watch the lock. A disconnected session puts the elector in
neutral mode (never becoming active meanwhile); a lost session is rejoined on the new one.

The state machine runs on the asyncio event loop, one event at a time. It talks to ZooKeeper
only through `ZkStore` (blocking kazoo calls run in worker threads; kazoo's watch and session
callbacks hop to the loop with call_soon_threadsafe), so it can be driven by another store.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from qjm.errors import QjmError
from qjm.ha.HAZKInfo_pb2 import ActiveNodeInfo

log = logging.getLogger(__name__)

DEFAULT_PARENT = "/qjm-ha"
LOCK_NAME = "ActiveStandbyElectorLock"
BREADCRUMB_NAME = "ActiveBreadCrumb"
DEFAULT_SESSION_TIMEOUT_S = 10.0  # ha.zookeeper.session-timeout.ms
DEFAULT_ZK_OP_RETRIES = 3  # ha.failover-controller.active-standby-elector.zk.op.retries
SLEEP_AFTER_FAILURE_S = 1.0  # HDFS sleeps 1000 ms before rejoining after a failed becomeActive

__all__ = [
    "BREADCRUMB_NAME",
    "DEFAULT_PARENT",
    "LOCK_NAME",
    "ActiveNodeInfo",
    "ActiveStandbyElector",
    "ElectorCallbacks",
    "ElectorError",
    "ElectorState",
    "KazooStore",
    "ParentZNodeMissingError",
    "ZkStore",
    "node_info",
    "parse_acl",
    "parse_auth",
]


class ElectorError(QjmError):
    """ZooKeeper could not be used for the election; the message says why."""


class ParentZNodeMissingError(ElectorError):
    """The nameservice's parent znode does not exist (run `qjm zkfc format-zk`)."""


class ElectorState(enum.Enum):
    """Where the elector stands (HDFS's ActiveStandbyElector.State)."""

    INIT = "INIT"  # not in the election
    ACTIVE = "ACTIVE"
    STANDBY = "STANDBY"
    NEUTRAL = "NEUTRAL"  # in the election but not connected: neither active nor standby


def node_info(
    nameservice: str, namenode: str, hostname: str, port: int, zkfc_port: int
) -> ActiveNodeInfo:
    """The ActiveNodeInfo a ZKFC writes for its NameNode."""
    return ActiveNodeInfo(
        nameserviceId=nameservice,
        namenodeId=namenode,
        hostname=hostname,
        port=port,
        zkfcPort=zkfc_port,
    )


class ElectorCallbacks(Protocol):
    """What the elector asks of its owner (the ZKFC); each may raise to report failure."""

    async def become_active(self) -> None:
        """Make the local NameNode active."""

    async def become_standby(self) -> None:
        """Make the local NameNode standby."""

    async def enter_neutral_mode(self) -> None:
        """The ZooKeeper connection is down: do not assume either role."""

    async def fence_old_active(self, old: ActiveNodeInfo) -> None:
        """Fence the node the breadcrumb names; raise when it could not be fenced."""


# ---------------------------------------------------------------- ZooKeeper store


@dataclass(frozen=True)
class Node:
    """A znode's data, version and ephemeral owner (0 for a persistent znode)."""

    data: bytes
    version: int
    owner: int


class NodeExists(ElectorError):
    """create: the znode exists."""


class NoNode(ElectorError):
    """The znode (or its parent) does not exist."""


class BadVersion(ElectorError):
    """The znode's version is not the one expected."""


class NotConnected(ElectorError):
    """The ZooKeeper session is not connected."""


SessionEvent = str  # "connected", "suspended", "lost"
WatchCallback = Callable[[], None]


class ZkStore(Protocol):
    """The ZooKeeper operations the elector needs, as coroutines."""

    @property
    def session_id(self) -> int:
        """The current session's id (0 when none)."""

    def on_session(self, callback: Callable[[SessionEvent], None]) -> None:
        """Call callback (on the loop) on every change of session state."""

    async def create(self, path: str, data: bytes, *, ephemeral: bool) -> None:
        """Create a znode; NodeExists or NoNode (parent missing)."""

    async def get(self, path: str, watch: WatchCallback | None = None) -> Node | None:
        """The znode, or None; watch fires (on the loop) once when it changes or goes."""

    async def exists(self, path: str, watch: WatchCallback | None = None) -> bool:
        """Whether the znode exists; watch fires once when it is created, changed or deleted."""

    async def set(self, path: str, data: bytes, version: int) -> None:
        """Set a znode's data if its version is still version; BadVersion or NoNode."""

    async def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None:
        """Delete a znode (if its version matches); NoNode or BadVersion."""

    async def ensure_path(self, path: str) -> None:
        """Create path and its ancestors as persistent znodes where missing."""

    async def children(self, path: str) -> list[str]:
        """The names of a znode's children; NoNode."""

    async def close(self) -> None:
        """Close the session (its ephemeral znodes go at once)."""


def parse_acl(spec: str) -> list[Any]:
    """kazoo ACLs from HDFS's ha.zookeeper.acl form: `scheme:id:perms[,...]` (perms of rwcda)."""
    from kazoo.security import ACL, Id, Permissions

    bits = {
        "r": Permissions.READ,
        "w": Permissions.WRITE,
        "c": Permissions.CREATE,
        "d": Permissions.DELETE,
        "a": Permissions.ADMIN,
    }
    acls = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        scheme, sep, rest = part.partition(":")
        ident, sep2, perms = rest.rpartition(":")
        if not sep or not sep2 or not scheme or not perms:
            raise ElectorError(f"ZooKeeper ACL {part!r} is not scheme:id:perms")
        mask = 0
        for ch in perms.lower():
            if ch not in bits:
                raise ElectorError(f"ZooKeeper ACL {part!r}: unknown permission {ch!r} (rwcda)")
            mask |= bits[ch]
        acls.append(ACL(mask, Id(scheme, ident)))
    return acls


def resolve_indirection(value: str, key: str) -> str:
    """HDFS's `@/path` form of ha.zookeeper.acl and .auth: the file's text, else value."""
    if not value.startswith("@"):
        return value
    path = value[1:]
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError as e:
        raise ElectorError(f"{key}: cannot read {path}: {e.strerror}") from None


def parse_auth(spec: str) -> list[tuple[str, str]]:
    """kazoo auth_data from HDFS's ha.zookeeper.auth form: `scheme:auth[,...]`."""
    out = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        scheme, sep, auth = part.partition(":")
        if not sep or not scheme or not auth:
            raise ElectorError(f"ZooKeeper auth {part!r} is not scheme:auth")
        out.append((scheme, auth))
    return out


def reconnect_policy(session_timeout_s: float) -> dict[str, float]:
    """Kazoo's connection_retry for a session of session_timeout_s: retry forever, often."""
    # A session survives a ZooKeeper restart only if the client is back within the session
    # timeout; kazoo's default backoff grows to a minute between attempts, so attempts here
    # come at most a tenth of the session apart.
    return {
        "max_tries": -1,
        "delay": min(0.1, session_timeout_s / 40),
        "max_delay": min(1.0, session_timeout_s / 10),
    }


class KazooStore:
    """ZkStore on a kazoo client (threading handler); every znode made gets acl."""

    def __init__(
        self,
        hosts: str,
        *,
        session_timeout_s: float = DEFAULT_SESSION_TIMEOUT_S,
        auth: list[tuple[str, str]] | None = None,
        acl: list[Any] | None = None,
        op_retries: int = DEFAULT_ZK_OP_RETRIES,
        sasl_options: dict[str, Any] | None = None,
    ) -> None:
        from kazoo.client import KazooClient

        self.hosts = hosts
        self._acl = acl
        # no ZooKeeper call waits longer than this for its answer (kazoo's sync calls wait
        # forever for a request queued while the connection goes down)
        self._op_timeout_s = max(2.0, session_timeout_s)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session_callbacks: list[Callable[[SessionEvent], None]] = []
        self._zk = KazooClient(
            hosts=hosts,
            timeout=session_timeout_s,
            auth_data=auth or None,
            default_acl=acl,
            sasl_options=sasl_options,  # ZooKeeper's Kerberos (design §S.11)
            command_retry={"max_tries": op_retries, "delay": 0.1, "max_delay": 1.0},
            connection_retry=reconnect_policy(session_timeout_s),
        )
        self._zk.add_listener(self._on_state)

    @property
    def session_id(self) -> int:
        """The current session's id (0 when none)."""
        cid = self._zk.client_id
        return int(cid[0]) if cid else 0

    def _hop(self, fn: Callable[..., None], *args: Any) -> None:
        """Run fn(*args) on the event loop, from a kazoo thread."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(fn, *args)

    def _on_state(self, state: str) -> None:
        from kazoo.protocol.states import KazooState

        event = {
            KazooState.CONNECTED: "connected",
            KazooState.SUSPENDED: "suspended",
            KazooState.LOST: "lost",
        }.get(state)
        if event is not None:
            for cb in list(self._session_callbacks):
                self._hop(cb, event)

    def on_session(self, callback: Callable[[SessionEvent], None]) -> None:
        """Call callback (on the loop) on every change of session state."""
        self._session_callbacks.append(callback)

    async def start(self, timeout_s: float = 15.0) -> None:
        """Connect; ElectorError naming the hosts when ZooKeeper does not answer in time."""
        self._loop = asyncio.get_running_loop()
        try:
            await asyncio.to_thread(self._zk.start, timeout_s)
        except Exception as e:
            await asyncio.to_thread(self._zk.stop)
            raise ElectorError(f"cannot connect to ZooKeeper at {self.hosts}: {e}") from e

    async def _run(self, name: str, path: str, *args: Any, **kwargs: Any) -> Any:
        """kazoo's <name>_async(path, ...) with its retries, each answer awaited at most
        the operation timeout; errors as the ZkStore protocol's."""
        from kazoo import exceptions as kx
        from kazoo.retry import RetryFailedError

        call_async = getattr(self._zk, f"{name}_async")
        timeout = self._op_timeout_s
        timed_out = self._zk.handler.timeout_exception

        def attempt() -> Any:
            try:
                return call_async(path, *args, **kwargs).get(timeout=timeout)
            except timed_out:
                raise kx.OperationTimeoutError() from None

        try:
            return await asyncio.to_thread(self._zk.retry, attempt)
        except kx.NodeExistsError as e:
            raise NodeExists(f"{path} exists") from e
        except kx.NoNodeError as e:
            raise NoNode(f"{path} (or its parent) does not exist") from e
        except kx.BadVersionError as e:
            raise BadVersion(f"{path} changed meanwhile") from e
        except kx.NoAuthError as e:
            raise ElectorError(f"ZooKeeper refused access to {path} (check ACL/auth)") from e
        except (
            kx.ConnectionLoss,
            kx.SessionExpiredError,
            kx.OperationTimeoutError,
            RetryFailedError,
            kx.ConnectionClosedError,
        ) as e:
            raise NotConnected(f"ZooKeeper connection lost during an operation on {path}") from e
        except kx.KazooException as e:
            raise ElectorError(f"ZooKeeper error on {path}: {type(e).__name__} {e}") from e

    def _watcher(self, watch: WatchCallback | None) -> Callable[[Any], None] | None:
        if watch is None:
            return None

        def fire(_event: Any) -> None:
            self._hop(watch)

        return fire

    async def create(self, path: str, data: bytes, *, ephemeral: bool) -> None:
        """Create a znode; NodeExists or NoNode (parent missing)."""
        await self._run("create", path, data, acl=self._acl, ephemeral=ephemeral)

    async def get(self, path: str, watch: WatchCallback | None = None) -> Node | None:
        """The znode, or None; watch fires (on the loop) once when it changes or goes."""
        try:
            data, stat = await self._run("get", path, watch=self._watcher(watch))
        except NoNode:
            return None
        return Node(bytes(data or b""), stat.version, stat.ephemeralOwner)

    async def exists(self, path: str, watch: WatchCallback | None = None) -> bool:
        """Whether the znode exists; watch fires once when it is created, changed or deleted."""
        return await self._run("exists", path, watch=self._watcher(watch)) is not None

    async def set(self, path: str, data: bytes, version: int) -> None:
        """Set a znode's data if its version is still version; BadVersion or NoNode."""
        await self._run("set", path, data, version=version)

    async def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None:
        """Delete a znode (if its version matches); NoNode or BadVersion."""
        if recursive:  # children first, deepest first (kazoo has no async recursive delete)
            for child in await self.children(path):
                with contextlib.suppress(NoNode):  # gone meanwhile
                    await self.delete(f"{path.rstrip('/')}/{child}", recursive=True)
        await self._run("delete", path, version=version)

    async def ensure_path(self, path: str) -> None:
        """Create path and its ancestors as persistent znodes where missing."""
        await self._run("ensure_path", path, acl=self._acl)

    async def children(self, path: str) -> list[str]:
        """The names of a znode's children; NoNode."""
        return list(await self._run("get_children", path))

    async def close(self) -> None:
        """Close the session (its ephemeral znodes go at once)."""

        def stop() -> None:
            self._zk.stop()
            self._zk.close()

        await asyncio.to_thread(stop)


# ---------------------------------------------------------------- the elector


class ActiveStandbyElector:
    """One ZKFC's side of the election for nameservice, on store (see the module doc)."""

    def __init__(
        self,
        store: ZkStore,
        info: ActiveNodeInfo,
        callbacks: ElectorCallbacks,
        *,
        parent: str = DEFAULT_PARENT,
        sleep_after_failure_s: float = SLEEP_AFTER_FAILURE_S,
    ) -> None:
        self.store = store
        self.info = info
        self.callbacks = callbacks
        self.sleep_after_failure_s = sleep_after_failure_s
        self.parent_znode = f"{parent.rstrip('/')}/{info.nameserviceId}"
        self.lock_path = f"{self.parent_znode}/{LOCK_NAME}"
        self.breadcrumb_path = f"{self.parent_znode}/{BREADCRUMB_NAME}"
        self._data = info.SerializeToString(deterministic=True)
        self.state = ElectorState.INIT
        self.want_active = False
        self.connected = True  # the store is started connected
        self.last_error = ""
        self._queue: asyncio.Queue[tuple[str, Any, asyncio.Future[None] | None]] = asyncio.Queue()
        self._worker: asyncio.Task[None] | None = None
        self._retry: asyncio.TimerHandle | None = None
        self._interruptions = 0  # disconnects and session losses seen, counted on arrival
        store.on_session(self._on_session)

    # ---- public API

    def start(self) -> None:
        """Start handling events (on the running event loop)."""
        if self._worker is None:
            self._worker = asyncio.get_running_loop().create_task(self._work(), name="elector")

    async def join_election(self) -> None:
        """Take part in the election; returns once the first attempt has been handled."""
        await self._request("join")

    async def quit_election(self, need_fence: bool) -> None:
        """Leave the election, releasing the lock; without need_fence an active also deletes
        its breadcrumb, so the next active need not fence it."""
        await self._request("quit", need_fence)

    async def parent_exists(self) -> bool:
        """Whether the nameservice's parent znode exists."""
        return await self.store.exists(self.parent_znode)

    async def format_zk(self, force: bool) -> None:
        """Create the parent znode; with force, first delete whatever is under it."""
        if await self.store.exists(self.parent_znode):
            if not force:
                raise ElectorError(
                    f"{self.parent_znode} already exists in ZooKeeper; "
                    "format again with --force to clear it"
                )
            await self.store.delete(self.parent_znode, recursive=True)
        await self.store.ensure_path(self.parent_znode)

    async def close(self) -> None:
        """Stop handling events and close the ZooKeeper session (the lock, if held, goes)."""
        if self._retry is not None:
            self._retry.cancel()
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await worker
        await self.store.close()

    # ---- events

    def _post(self, kind: str, arg: Any = None) -> None:
        self._queue.put_nowait((kind, arg, None))

    async def _request(self, kind: str, arg: Any = None) -> None:
        if self._worker is None:
            self.start()
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait((kind, arg, done))
        await done

    async def _work(self) -> None:
        while True:
            kind, arg, done = await self._queue.get()
            try:
                await self._handle(kind, arg)
            except Exception as e:  # keep electing; the error is kept for status
                self.last_error = str(e)
                log.error("elector: %s failed: %s", kind, e)
                if self.want_active:  # try again later rather than stay stuck
                    self._schedule_retry()
                if done is not None and not done.done():
                    done.set_exception(e)
            finally:
                if done is not None and not done.done():
                    done.set_result(None)

    async def _handle(self, kind: str, arg: Any) -> None:
        if kind == "join":
            self.want_active = True
            if self.connected:
                await self._elect()
        elif kind == "quit":
            await self._quit(bool(arg))
        elif kind in ("lock", "retry"):
            if self.want_active and self.connected:
                await self._elect()
        elif kind in ("suspended", "lost"):
            log.warning("elector: ZooKeeper session %s", kind)
            if self.want_active and self.state is not ElectorState.NEUTRAL:
                self.state = ElectorState.NEUTRAL
                await self.callbacks.enter_neutral_mode()
        elif kind == "connected" and self.want_active and self.connected:
            await self._elect()

    def _on_session(self, event: SessionEvent) -> None:
        # counted on arrival, so a step in progress sees it before the event is handled
        if event != "connected":
            self._interruptions += 1
        self.connected = event == "connected"
        self._post(event)

    def _on_lock_watch(self) -> None:
        self._post("lock")

    # ---- steps

    async def _elect(self) -> None:
        """Try for the lock; become active if held, standby if another holds it."""
        for _ in range(3):
            try:
                await self.store.create(self.lock_path, self._data, ephemeral=True)
            except NodeExists:
                node = await self.store.get(self.lock_path, self._on_lock_watch)
                if node is None:
                    continue  # the holder went meanwhile: try again
                if node.owner == self.store.session_id and node.data == self._data:
                    await self._become_active(node.version)
                else:
                    await self._become_standby()
                return
            except NoNode as e:
                self.want_active = False  # reported once; join again after formatting
                raise ParentZNodeMissingError(
                    f"{self.parent_znode} does not exist in ZooKeeper: "
                    "run `qjm zkfc format-zk` first"
                ) from e
            node = await self.store.get(self.lock_path, self._on_lock_watch)
            if node is None or node.owner != self.store.session_id:
                continue
            await self._become_active(node.version)
            return
        raise ElectorError(f"{self.lock_path}: could not take or read the lock")

    async def _become_standby(self) -> None:
        if self.state is not ElectorState.STANDBY:
            self.state = ElectorState.STANDBY
            log.info("elector: another node holds %s; standby", self.lock_path)
            await self.callbacks.become_standby()

    async def _become_active(self, lock_version: int) -> None:
        if self.state is ElectorState.ACTIVE:
            return
        interruptions = self._interruptions
        try:
            crumb = await self.store.get(self.breadcrumb_path)
            if crumb is not None and crumb.data != self._data:
                old = ActiveNodeInfo.FromString(crumb.data)
                log.info(
                    "elector: fencing the old active %s before becoming active", old.namenodeId
                )
                try:
                    await self.callbacks.fence_old_active(old)
                except Exception as e:
                    raise ElectorError(
                        f"could not fence the old active {old.namenodeId} "
                        f"({old.hostname}:{old.port}): {e}"
                    ) from e
            self._check_uninterrupted(interruptions)
            if crumb is None:
                await self.store.create(self.breadcrumb_path, self._data, ephemeral=False)
            elif crumb.data != self._data:
                await self.store.set(self.breadcrumb_path, self._data, crumb.version)
            self._check_uninterrupted(interruptions)
            await self.callbacks.become_active()
        except asyncio.CancelledError:
            raise
        except Exception as e:
            self.last_error = str(e)
            log.error("elector: failed to become active: %s; retrying later", e)
            await self._release_lock()
            self.state = ElectorState.INIT
            self._schedule_retry()
            return
        self.state = ElectorState.ACTIVE
        self.last_error = ""
        log.info("elector: holding %s; active", self.lock_path)

    def _check_uninterrupted(self, interruptions: int) -> None:
        if not self.connected or interruptions != self._interruptions:
            raise NotConnected("the ZooKeeper session was interrupted; not becoming active")

    def _schedule_retry(self) -> None:
        if self._retry is not None:
            self._retry.cancel()
        self._retry = asyncio.get_running_loop().call_later(
            self.sleep_after_failure_s, self._post, "retry"
        )

    async def _release_lock(self) -> None:
        with contextlib.suppress(ElectorError):
            node = await self.store.get(self.lock_path)
            if node is not None and node.owner == self.store.session_id:
                await self.store.delete(self.lock_path, node.version)

    async def _quit(self, need_fence: bool) -> None:
        self.want_active = False
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None
        if self.state is ElectorState.ACTIVE and not need_fence:
            with contextlib.suppress(ElectorError):
                crumb = await self.store.get(self.breadcrumb_path)
                if crumb is not None and crumb.data == self._data:
                    await self.store.delete(self.breadcrumb_path, crumb.version)
        await self._release_lock()
        self.state = ElectorState.INIT


async def connect(
    hosts: str,
    info: ActiveNodeInfo,
    callbacks: ElectorCallbacks,
    *,
    parent: str = DEFAULT_PARENT,
    session_timeout_s: float = DEFAULT_SESSION_TIMEOUT_S,
    auth: list[tuple[str, str]] | None = None,
    acl: list[Any] | None = None,
    start_timeout_s: float = 15.0,
    sleep_after_failure_s: float = SLEEP_AFTER_FAILURE_S,
) -> ActiveStandbyElector:
    """An elector on a new kazoo session to hosts, started."""
    store = KazooStore(hosts, session_timeout_s=session_timeout_s, auth=auth, acl=acl)
    await store.start(start_timeout_s)
    elector = ActiveStandbyElector(
        store, info, callbacks, parent=parent, sleep_after_failure_s=sleep_after_failure_s
    )
    elector.start()
    return elector
