"""HDFS's ZKFailoverController: one per NameNode, wiring its HealthMonitor to the
ActiveStandbyElector and serving ZKFCProtocol (cedeActive, gracefulFailover).

* Health SERVICE_HEALTHY joins the election; INITIALIZING quits it (no fencing needed);
  SERVICE_UNHEALTHY and SERVICE_NOT_RESPONDING quit it marking that the node must be fenced;
  HEALTH_MONITOR_FAILED is fatal (`failed` is set and the controller leaves the election).
* Winning the election: the old active the breadcrumb names is fenced first — a graceful
  transitionToStandby over HAServiceProtocol (bounded by graceful-fence.rpc-timeout), else
  the configured fencing methods in order — and only then is the local NameNode made active
  with transitionToActive(REQUEST_BY_ZKFC). When every way of fencing fails, it does not
  become active (the elector releases the lock and tries again later).
* cedeActive(ms): the local NameNode goes standby, the controller leaves the election for ms
  (deleting its breadcrumb when the standby transition worked, so the next active need not
  fence it); a request for longer than max_cede_s (design §N.7) is refused, changing nothing.
  gracefulFailover(): asks the current active's ZKFC to cede, then waits for the local
  NameNode to be made active.
* ZKFCProtocol callers must be administrators (HDFS's checkRpcAdminAccess), by the rule of
  the NameNode's HA calls: the ZKFC's own user or a member of the superuser group; anyone
  else gets AccessControlException.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import logging
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from qjm.errors import QjmError
from qjm.ha import ZKFCProtocol_pb2 as zp
from qjm.ha.elector import ActiveNodeInfo, ActiveStandbyElector, ElectorState, ZkStore
from qjm.ha.fencing import FenceTarget, NodeFencer
from qjm.ha.health_monitor import (
    HealthMonitor,
    HealthMonitorSettings,
    HealthState,
    ServiceStatus,
)
from qjm.ipc import CallContext, IpcClient, IpcServer, Method, RpcTimeoutError
from qjm.ipc.framing import DEFAULT_MAX_DATA_LENGTH
from qjm.ipc.server import ipc_limit_keys
from qjm.namenode.client import HAAdminClient
from qjm.namenode.errors import AccessControlError
from qjm.namenode.types import HAState
from qjm.security.users import os_groups, os_user

log = logging.getLogger(__name__)

ZKFC_PROTOCOL = "org.apache.hadoop.ha.ZKFCProtocol"
SERVICE_FAILED = "org.apache.hadoop.ha.ServiceFailedException"
DEFAULT_ZKFC_PORT = 8019  # dfs.ha.zkfc.port
DEFAULT_GRACEFUL_FENCE_TIMEOUT_S = 5.0  # ha.failover-controller.graceful-fence.rpc-timeout.ms
DEFAULT_NEW_ACTIVE_TIMEOUT_S = 60.0  # ha.failover-controller.new-active.rpc-timeout.ms
DEFAULT_MAX_CEDE_S = 30.0  # 3 x ha.zookeeper.session-timeout.ms (10 s)
ILLEGAL_ARGUMENT = "org.apache.hadoop.HadoopIllegalArgumentException"


def _timed_out(e: BaseException) -> bool:
    """Whether e is a call that got no answer in time (asyncio's or the IPC client's)."""
    return isinstance(e, (TimeoutError, RpcTimeoutError))


class ZkfcError(QjmError):
    """A ZKFC request could not be done (sent to callers as ServiceFailedException)."""

    java_class = SERVICE_FAILED


class CedeRefusedError(ZkfcError):
    """A cedeActive longer than this ZKFC honours (design §N.7)."""

    java_class = ILLEGAL_ARGUMENT


def cede_seconds(millis: int, max_cede_s: float) -> float:
    """How long a cedeActive(millis) cedes, in seconds; CedeRefusedError past the bound."""
    bound_ms = round(max_cede_s * 1000)
    if millis > bound_ms:
        raise CedeRefusedError(
            f"cedeActive for {millis} ms refused: this ZKFC cedes at most {bound_ms} ms "
            "(zkfc.max_cede_ms; by default 3 ZooKeeper session timeouts); nothing was changed"
        )
    return max(millis, 0) / 1000.0


def _login_user() -> str:
    """The user an IPC call carries when none is given (as qjm.ipc's client)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return os_user()


@dataclass(frozen=True)
class ZkfcSettings:
    """Who this ZKFC is and its timeouts (HDFS's defaults)."""

    nameservice: str
    namenode_id: str
    nn_host: str
    nn_port: int
    zkfc_host: str = "127.0.0.1"
    zkfc_port: int = DEFAULT_ZKFC_PORT  # 0: any free port
    health: HealthMonitorSettings = field(default_factory=HealthMonitorSettings)
    graceful_fence_timeout_s: float = DEFAULT_GRACEFUL_FENCE_TIMEOUT_S
    new_active_timeout_s: float = DEFAULT_NEW_ACTIVE_TIMEOUT_S
    user: str | None = None  # the user HAServiceProtocol calls are made as
    # who may call cedeActive/gracefulFailover: the ZKFC's own user (default: user, else the
    # OS user running it) and the members of the superuser group, as the NameNode's HA calls
    superuser: str | None = None
    superuser_group: str = "supergroup"
    # False under Kerberos (design §S.3): callers are who they authenticated as, and the OS
    # user running the ZKFC is nobody's identity; superuser alone is the ZKFC's own user
    trust_os_user: bool = True
    # the longest cedeActive honoured (design §N.7): 3 x the default session timeout
    max_cede_s: float = DEFAULT_MAX_CEDE_S
    # the IPC server's limits (design §N.6); None: none
    ipc_max_connections: int | None = None
    ipc_idle_timeout_s: float | None = None
    ipc_max_unfinished_bytes: int | None = None

    @property
    def admin_users(self) -> tuple[str, ...]:
        """The users this ZKFC counts as superusers (HDFS: the ZKFC's login user): the
        configured superuser, the user its own calls carry and the OS user running it."""
        users = [self.superuser]
        if self.trust_os_user:
            users += [self.user or _login_user(), os_user()]
        return tuple(dict.fromkeys(u for u in users if u))

    @property
    def nn_address(self) -> str:
        """host:port of the local NameNode's RPC server."""
        return f"{self.nn_host}:{self.nn_port}"


class ZKFCClient:
    """ZKFCProtocol calls to one ZKFC (what `hdfs haadmin -failover` sends)."""

    def __init__(self, address: str, *, user: str | None = None, timeout: float = 60.0) -> None:
        self.address = address
        self.timeout = timeout
        self._client = IpcClient(
            address, ZKFC_PROTOCOL, user=user, connect_timeout_s=min(timeout, 5.0)
        )

    async def cede_active(self, millis: int) -> None:
        """Ask the ZKFC to leave the election for millis ms (0: rejoin now)."""
        req = zp.CedeActiveRequestProto(millisToCede=max(0, millis))
        await self._client.call("cedeActive", req, zp.CedeActiveResponseProto, self.timeout)

    async def graceful_failover(self) -> None:
        """Ask the ZKFC to make its NameNode active, the current active ceding."""
        req = zp.GracefulFailoverRequestProto()
        await self._client.call(
            "gracefulFailover", req, zp.GracefulFailoverResponseProto, self.timeout
        )

    async def close(self) -> None:
        """Close the connection."""
        await self._client.close()


class ZKFailoverController:
    """The controller for one NameNode (see the module doc); the elector is made by the
    caller on a ZooKeeper store, with this controller as its callbacks (`attach`)."""

    def __init__(self, settings: ZkfcSettings, fencer: NodeFencer) -> None:
        self.settings = settings
        self.fencer = fencer
        self.monitor = HealthMonitor(settings.nn_address, settings.health, user=settings.user)
        self.elector: ActiveStandbyElector | None = None
        self.server: IpcServer | None = None
        self.service_state = HAState.INITIALIZING  # what this ZKFC last made its NameNode
        self.failed = asyncio.Event()  # set on a fatal error (the health monitor failed)
        self.fatal_error = ""
        self.fenced: list[str] = []  # namenode ids fenced, in order (for status and tests)
        self._delay_until = 0.0  # monotonic time before which it will not join (cede)
        self._recheck_lock = asyncio.Lock()
        self._recheck_timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._attempt: asyncio.Future[bool] | None = None  # the next active attempt's result
        self._transitions = 0  # transitions of the local NameNode in flight

    def info(self, zkfc_port: int) -> ActiveNodeInfo:
        """The ActiveNodeInfo this controller writes to ZooKeeper."""
        s = self.settings
        return ActiveNodeInfo(
            nameserviceId=s.nameservice,
            namenodeId=s.namenode_id,
            hostname=s.nn_host,
            port=s.nn_port,
            zkfcPort=zkfc_port,
        )

    # ---- life cycle

    async def start_rpc(self) -> int:
        """Serve ZKFCProtocol; returns the port (call before making the elector)."""
        s = self.settings
        cap = s.ipc_max_unfinished_bytes
        server = IpcServer(
            name=f"zkfc-{s.namenode_id}",
            # ZKFCProtocol's calls are a few bytes: no frame needs more than the cap
            max_data_length=DEFAULT_MAX_DATA_LENGTH if cap is None else cap,
            max_connections=s.ipc_max_connections,
            idle_timeout_s=s.ipc_idle_timeout_s,
            max_unfinished_bytes=cap,
            limit_keys=ipc_limit_keys("zkfc"),
        )
        server.register(ZKFC_PROTOCOL, self._methods())
        await server.start(self.settings.zkfc_host, self.settings.zkfc_port)
        self.server = server
        return server.port

    def attach(self, elector: ActiveStandbyElector) -> None:
        """Use elector (made with this controller as callbacks) and start monitoring health."""
        self.elector = elector
        self.monitor.add_state_callback(self._on_health)
        self.monitor.add_status_callback(self._on_status)
        self.monitor.start()

    @classmethod
    async def start(
        cls, settings: ZkfcSettings, fencer: NodeFencer, store: ZkStore, *, parent: str
    ) -> ZKFailoverController:
        """A controller serving ZKFCProtocol and monitoring its NameNode, electing on store."""
        zkfc = cls(settings, fencer)
        port = await zkfc.start_rpc()
        elector = ActiveStandbyElector(store, zkfc.info(port), zkfc, parent=parent)
        elector.start()
        zkfc.attach(elector)
        return zkfc

    async def stop(self) -> None:
        """Stop monitoring, leave the election (the lock goes) and stop serving."""
        if self._recheck_timer is not None:
            self._recheck_timer.cancel()
        await self.monitor.stop()
        for task in list(self._tasks):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self.elector is not None:
            await self.elector.close()
        if self.server is not None:
            await self.server.stop()

    # ---- health → election

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        async def logged() -> None:
            try:
                await coro
            except asyncio.CancelledError:
                raise
            except Exception as e:  # reported; the next health change tries again
                log.error("zkfc %s: %s", self.settings.namenode_id, e)

        task = asyncio.get_running_loop().create_task(logged())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _on_health(self, state: HealthState) -> None:
        log.info("zkfc %s: local NameNode is %s", self.settings.namenode_id, state.value)
        self._spawn(self.recheck())

    def _on_status(self, status: ServiceStatus) -> None:
        expected = self.service_state
        if expected in (HAState.ACTIVE, HAState.STANDBY) and status.state is not expected:
            self._spawn(self._verify_service_state())

    async def _verify_service_state(self) -> None:
        """The NameNode reported a state other than the one this ZKFC gave it (it restarted,
        or someone else changed it): confirmed by a fresh status call, leave the election
        marking it for fencing and rejoin as its health says (HDFS's
        verifyChangedServiceState)."""
        elector = self.elector
        if elector is None:
            return
        async with self._recheck_lock:
            expected = self.service_state
            if expected not in (HAState.ACTIVE, HAState.STANDBY):
                return
            s = self.settings
            try:
                async with HAAdminClient(
                    s.nn_address, user=s.user, timeout=s.graceful_fence_timeout_s
                ) as client:
                    state = (await client.get_service_status())[0]
            except Exception as e:
                log.warning("zkfc: could not confirm %s's state: %s", s.namenode_id, e)
                return  # the health monitor reports an unreachable node
            if state is expected or self.service_state is not expected or self._transitions:
                return  # a transition in flight, or already handled
            log.error(
                "zkfc: %s is %s but was made %s; quitting the election (it must be fenced)",
                s.namenode_id,
                state.name,
                expected.name,
            )
            await elector.quit_election(need_fence=True)
            self.service_state = HAState.INITIALIZING
        await self.recheck()

    async def recheck(self) -> None:
        """Join or leave the election as the local NameNode's health (and a cede) says."""
        elector = self.elector
        if elector is None:
            return
        async with self._recheck_lock:
            state = self.monitor.state
            remaining = self._delay_until - time.monotonic()
            if remaining > 0:
                if state is HealthState.SERVICE_HEALTHY:
                    log.info("zkfc: would join the election, but ceded for %.1f s more", remaining)
                self._schedule_recheck(remaining)
                return
            if state is HealthState.SERVICE_HEALTHY:
                await elector.join_election()
            elif state is HealthState.INITIALIZING:
                await elector.quit_election(need_fence=False)
                self.service_state = HAState.INITIALIZING
            elif state in (HealthState.SERVICE_UNHEALTHY, HealthState.SERVICE_NOT_RESPONDING):
                log.warning("zkfc: quitting the election; the local NameNode must be fenced")
                await elector.quit_election(need_fence=True)
                self.service_state = HAState.INITIALIZING
            elif state is HealthState.HEALTH_MONITOR_FAILED:
                self.fatal_error = f"the health monitor failed: {self.monitor.last_error}"
                log.error("zkfc: %s", self.fatal_error)
                await elector.quit_election(need_fence=True)
                self.failed.set()

    def _schedule_recheck(self, delay_s: float) -> None:
        if self._recheck_timer is not None:
            self._recheck_timer.cancel()
        self._recheck_timer = asyncio.get_running_loop().call_later(
            delay_s, lambda: self._spawn(self.recheck())
        )

    # ---- elector callbacks

    async def become_active(self) -> None:
        """Make the local NameNode active (REQUEST_BY_ZKFC); raises when it cannot."""
        s = self.settings
        self._transitions += 1
        try:
            async with HAAdminClient(
                s.nn_address, user=s.user, timeout=s.new_active_timeout_s
            ) as client:
                await client.transition_to_active(by_zkfc=True)
        except Exception as e:
            self._record_attempt(False)
            raise ZkfcError(f"could not make {s.namenode_id} active: {e}") from e
        finally:
            self._transitions -= 1
        self.service_state = HAState.ACTIVE
        self.monitor.forget_status()
        log.info("zkfc: %s is active", s.namenode_id)
        self._record_attempt(True)

    async def become_standby(self) -> None:
        """Make the local NameNode standby (REQUEST_BY_ZKFC)."""
        s = self.settings
        self._transitions += 1
        try:
            async with HAAdminClient(
                s.nn_address, user=s.user, timeout=s.new_active_timeout_s
            ) as client:
                await client.transition_to_standby(by_zkfc=True)
        except Exception as e:
            log.error("zkfc: could not make %s standby: %s", s.namenode_id, e)
            return
        finally:
            self._transitions -= 1
        self.service_state = HAState.STANDBY
        self.monitor.forget_status()

    async def enter_neutral_mode(self) -> None:
        """ZooKeeper is unreachable: keep the NameNode as it is until a role is known."""
        log.warning("zkfc: lost ZooKeeper; neutral until the session is back")

    async def fence_old_active(self, old: ActiveNodeInfo) -> None:
        """Fence the old active: graceful transitionToStandby, then the fencing methods."""
        s = self.settings
        address = f"{old.hostname}:{old.port}"
        try:
            async with HAAdminClient(
                address, user=s.user, timeout=s.graceful_fence_timeout_s
            ) as client:
                await asyncio.wait_for(
                    client.transition_to_standby(by_zkfc=True), s.graceful_fence_timeout_s
                )
        except Exception as e:
            why = f"no answer within {s.graceful_fence_timeout_s:g} s" if _timed_out(e) else e
            log.warning(
                "zkfc: graceful fencing of %s (%s) failed: %s", old.namenodeId, address, why
            )
        else:
            log.info("zkfc: %s (%s) went standby without fencing", old.namenodeId, address)
            self.fenced.append(old.namenodeId)
            return
        target = FenceTarget(old.hostname, old.port, old.nameserviceId, old.namenodeId)
        if not await self.fencer.fence(target):
            why = "; ".join(self.fencer.last_errors) or "no method succeeded"
            raise ZkfcError(f"unable to fence {old.namenodeId} ({address}): {why}")
        self.fenced.append(old.namenodeId)

    def _record_attempt(self, succeeded: bool) -> None:
        if self._attempt is not None and not self._attempt.done():
            self._attempt.set_result(succeeded)

    # ---- ZKFCProtocol

    def check_admin(self, ctx: CallContext) -> None:
        """Refuse a ZKFCProtocol caller who is no superuser (HDFS's checkRpcAdminAccess)."""
        s = self.settings
        host = ctx.peer.rpartition(":")[0].strip("[]") or ctx.peer
        if ctx.user in s.admin_users or s.superuser_group in os_groups(ctx.user):
            log.info("zkfc: allowed RPC access from %s at %s", ctx.user, host)
            return
        message = (
            f"Disallowed RPC access from {ctx.user} at {host}: superuser privilege is "
            f"required for {ctx.method} (the ZKFC's user {' or '.join(s.admin_users)}, or "
            f"a member of {s.superuser_group})"
        )
        log.warning("zkfc: %s", message)
        raise AccessControlError(message)

    def _methods(self) -> dict[str, Method]:
        async def cede_active(
            req: zp.CedeActiveRequestProto, ctx: CallContext
        ) -> zp.CedeActiveResponseProto:
            self.check_admin(ctx)
            seconds = cede_seconds(req.millisToCede, self.settings.max_cede_s)
            log.info("zkfc: %s asks to cede the active role for %d ms", ctx.peer, req.millisToCede)
            await self.cede_active(seconds)
            return zp.CedeActiveResponseProto()

        async def graceful_failover(
            req: zp.GracefulFailoverRequestProto, ctx: CallContext
        ) -> zp.GracefulFailoverResponseProto:
            self.check_admin(ctx)
            log.info("zkfc: %s asks for a graceful failover to here", ctx.peer)
            await self.graceful_failover()
            return zp.GracefulFailoverResponseProto()

        return {
            "cedeActive": Method(zp.CedeActiveRequestProto, cede_active),
            "gracefulFailover": Method(
                zp.GracefulFailoverRequestProto,
                graceful_failover,
            ),
        }

    async def cede_active(self, seconds: float) -> None:
        """Go standby and stay out of the election for seconds (<= 0: rejoin now)."""
        elector = self.elector
        if elector is None:
            raise ZkfcError("this ZKFC is not in an election yet")
        if seconds <= 0:
            self._delay_until = 0.0
            await self.recheck()
            return
        async with self._recheck_lock:
            s = self.settings
            need_fence = False
            try:
                async with HAAdminClient(
                    s.nn_address, user=s.user, timeout=s.graceful_fence_timeout_s
                ) as client:
                    await client.transition_to_standby(by_zkfc=True)
            except Exception as e:
                log.warning("zkfc: could not make %s standby while ceding: %s", s.namenode_id, e)
                need_fence = True
            self._delay_until = time.monotonic() + seconds
            await elector.quit_election(need_fence=need_fence)
            self.service_state = HAState.INITIALIZING
        await self.recheck()

    async def graceful_failover(self) -> None:
        """Make the local NameNode active: the current active's ZKFC cedes, then this one
        takes the lock; raises ZkfcError when it could not."""
        elector = self.elector
        s = self.settings
        if elector is None:
            raise ZkfcError("this ZKFC is not in an election yet")
        if self.monitor.state is not HealthState.SERVICE_HEALTHY:
            raise ZkfcError(
                f"{s.namenode_id} is not healthy ({self.monitor.state.value}); "
                "it cannot become active"
            )
        if elector.state is ElectorState.ACTIVE:
            log.info("zkfc: %s is already active", s.namenode_id)
            return
        node = await elector.store.get(elector.lock_path)
        if node is None:
            raise ZkfcError("no node is active now (nobody holds the election lock)")
        old = ActiveNodeInfo.FromString(node.data)
        timeout = 2 * s.graceful_fence_timeout_s
        self._attempt = asyncio.get_running_loop().create_future()
        other = ZKFCClient(f"{old.hostname}:{old.zkfcPort}", user=s.user, timeout=timeout + 5)
        try:
            await other.cede_active(int(timeout * 1000))
            try:
                ok = await asyncio.wait_for(asyncio.shield(self._attempt), timeout + 60)
            except TimeoutError:
                raise ZkfcError(
                    f"{s.namenode_id} did not get the chance to become active "
                    "(from ZooKeeper) in time"
                ) from None
            if not ok:
                raise ZkfcError(f"{s.namenode_id} could not become active: {elector.last_error}")
        except ZkfcError:
            with contextlib.suppress(Exception):
                await other.cede_active(0)  # let the old active rejoin at once
            raise
        except Exception as e:
            raise ZkfcError(f"{old.namenodeId}'s ZKFC could not cede: {e}") from e
        finally:
            self._attempt = None
            await other.close()
