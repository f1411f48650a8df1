"""A NameNode's health as the ZKFC sees it: HDFS's HealthMonitor, polling HAServiceProtocol
(getServiceStatus, then monitorHealth) and reporting changes of state to callbacks."""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass

from qjm.ipc import RemoteError, RpcError
from qjm.namenode.client import HAAdminClient
from qjm.namenode.types import HAState

log = logging.getLogger(__name__)

HEALTH_CHECK_FAILED = "org.apache.hadoop.ha.HealthCheckFailedException"


class HealthState(enum.Enum):
    """HealthMonitor.State in HDFS."""

    INITIALIZING = "INITIALIZING"
    SERVICE_NOT_RESPONDING = "SERVICE_NOT_RESPONDING"
    SERVICE_HEALTHY = "SERVICE_HEALTHY"
    SERVICE_UNHEALTHY = "SERVICE_UNHEALTHY"
    HEALTH_MONITOR_FAILED = "HEALTH_MONITOR_FAILED"


@dataclass(frozen=True)
class ServiceStatus:
    """What getServiceStatus said last: HA state, ready to become active, why not."""

    state: HAState
    ready_to_become_active: bool
    not_ready_reason: str = ""


@dataclass(frozen=True)
class HealthMonitorSettings:
    """Timing of the probes; the defaults are HDFS's ha.health-monitor.* defaults."""

    check_interval_s: float = 1.0  # ha.health-monitor.check-interval.ms
    # ha.health-monitor.connect-retry-interval.ms: HDFS waits this long when it cannot even
    # build a proxy; our client connects on its first call, so a failure to connect shows as
    # SERVICE_NOT_RESPONDING and the wait is max(this, sleep_after_disconnect_s).
    connect_retry_interval_s: float = 1.0
    rpc_timeout_s: float = 45.0  # ha.health-monitor.rpc-timeout.ms
    sleep_after_disconnect_s: float = 1.0  # ha.health-monitor.sleep-after-disconnect.ms


StateCallback = Callable[[HealthState], None]
StatusCallback = Callable[[ServiceStatus], None]


class HealthMonitor:
    """Polls one NameNode's HAServiceProtocol on the running event loop.

    A HealthCheckFailedException from monitorHealth means SERVICE_UNHEALTHY; any other
    failure (unreachable, timed out, another remote error) means SERVICE_NOT_RESPONDING,
    after which the connection is dropped and made again after sleep-after-disconnect. An
    error inside the monitor itself means HEALTH_MONITOR_FAILED and the monitor stops.
    State callbacks run on the loop, once per change; status callbacks once per change of
    the service status.
    """

    def __init__(
        self,
        address: str,
        settings: HealthMonitorSettings | None = None,
        *,
        user: str | None = None,
    ) -> None:
        self.address = address
        self.settings = settings or HealthMonitorSettings()
        self.user = user
        self._state = HealthState.INITIALIZING
        self._status: ServiceStatus | None = None
        self._state_callbacks: list[StateCallback] = []
        self._status_callbacks: list[StatusCallback] = []
        self._task: asyncio.Task[None] | None = None
        self._client: HAAdminClient | None = None
        self.last_error: str = ""

    @property
    def state(self) -> HealthState:
        """The current health state."""
        return self._state

    @property
    def last_status(self) -> ServiceStatus | None:
        """The last service status received (None before the first)."""
        return self._status

    def add_state_callback(self, callback: StateCallback) -> None:
        """Call callback(new_state) on every change of health state."""
        self._state_callbacks.append(callback)

    def add_status_callback(self, callback: StatusCallback) -> None:
        """Call callback(status) on every change of the service status."""
        self._status_callbacks.append(callback)

    def start(self) -> None:
        """Start polling (on the running event loop)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"health-monitor-{self.address}"
            )

    @property
    def running(self) -> bool:
        """Whether the polling task is alive."""
        return self._task is not None and not self._task.done()

    async def stop(self) -> None:
        """Stop polling and close the connection."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._drop_client()

    def forget_status(self) -> None:
        """Report the next service status to the status callbacks even if it is unchanged
        (after a transition, so the new state is checked against the next probe)."""
        self._status = None

    def _enter_state(self, state: HealthState) -> None:
        if state is self._state:
            return
        log.info("health of NameNode at %s: %s -> %s", self.address, self._state.name, state.name)
        self._state = state
        for callback in list(self._state_callbacks):
            try:
                callback(state)
            except Exception:
                log.exception("a health state callback failed")

    def _set_status(self, status: ServiceStatus) -> None:
        if status == self._status:
            return
        self._status = status
        for callback in list(self._status_callbacks):
            try:
                callback(status)
            except Exception:
                log.exception("a service status callback failed")

    async def _drop_client(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()

    def _connect(self) -> HAAdminClient:
        if self._client is None:
            self._client = HAAdminClient(
                self.address, user=self.user, timeout=self.settings.rpc_timeout_s
            )
        return self._client

    async def check_once(self) -> bool:
        """One probe; True when the connection is still good (False: reconnect first)."""
        client = self._connect()
        try:
            state, ready, reason = await client.get_service_status()
            self._set_status(ServiceStatus(state, ready, reason))
            await client.monitor_health()
        except RemoteError as e:
            self.last_error = e.message
            if e.class_name == HEALTH_CHECK_FAILED:
                log.warning("NameNode at %s is unhealthy: %s", self.address, e.message)
                self._enter_state(HealthState.SERVICE_UNHEALTHY)
                return True
            log.warning("NameNode at %s failed a health probe: %s", self.address, e)
            self._enter_state(HealthState.SERVICE_NOT_RESPONDING)
            return False
        except (RpcError, OSError) as e:
            self.last_error = str(e)
            log.warning("NameNode at %s is not responding: %s", self.address, e)
            self._enter_state(HealthState.SERVICE_NOT_RESPONDING)
            return False
        self.last_error = ""
        self._enter_state(HealthState.SERVICE_HEALTHY)
        return True

    async def _run(self) -> None:
        try:
            while True:
                if await self.check_once():
                    await asyncio.sleep(self.settings.check_interval_s)
                else:
                    await self._drop_client()
                    await asyncio.sleep(
                        max(
                            self.settings.sleep_after_disconnect_s,
                            self.settings.connect_retry_interval_s,
                        )
                    )
        except asyncio.CancelledError:
            raise
        except Exception as e:
            log.exception("the health monitor of %s failed", self.address)
            self.last_error = f"health monitor failed: {e}"
            self._enter_state(HealthState.HEALTH_MONITOR_FAILED)


__all__ = [
    "HealthMonitor",
    "HealthMonitorSettings",
    "HealthState",
    "ServiceStatus",
]
