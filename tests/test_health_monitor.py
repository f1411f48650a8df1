"""HealthMonitor against a fake NameNode's HAServiceProtocol served by a real IpcServer."""

from __future__ import annotations

import asyncio

from nn_fakes import FakeNameNode, serve
from ports import free_port_block
from qjm.ha.health_monitor import HealthMonitor, HealthMonitorSettings, HealthState
from qjm.namenode.types import HAState
from qjm.testing.wait import wait_until_async

FAST = HealthMonitorSettings(
    check_interval_s=0.05,
    connect_retry_interval_s=0.05,
    rpc_timeout_s=2.0,
    sleep_after_disconnect_s=0.05,
)


def test_defaults_are_hdfs_defaults() -> None:
    s = HealthMonitorSettings()
    assert (s.check_interval_s, s.connect_retry_interval_s) == (1.0, 1.0)
    assert (s.rpc_timeout_s, s.sleep_after_disconnect_s) == (45.0, 1.0)


async def test_healthy_unhealthy_not_responding_and_callbacks() -> None:
    nn = FakeNameNode(standby=True)
    port = free_port_block()  # a port the NameNode can come back on
    server = await serve(nn, port=port)
    monitor = HealthMonitor(f"127.0.0.1:{server.port}", FAST)
    seen: list[HealthState] = []
    statuses: list[tuple[HAState, bool]] = []
    monitor.add_state_callback(seen.append)
    monitor.add_status_callback(lambda s: statuses.append((s.state, s.ready_to_become_active)))
    assert monitor.state is HealthState.INITIALIZING
    monitor.start()
    try:
        await wait_until_async("healthy", lambda: monitor.state is HealthState.SERVICE_HEALTHY)
        assert monitor.last_status is not None
        assert monitor.last_status.state is HAState.STANDBY
        assert monitor.last_status.ready_to_become_active

        nn.standby = False  # a change of HA state reaches the status callback
        await wait_until_async("status active", lambda: statuses[-1:] == [(HAState.ACTIVE, True)])

        nn.healthy = False  # monitorHealth raises HealthCheckFailedException
        await wait_until_async("unhealthy", lambda: monitor.state is HealthState.SERVICE_UNHEALTHY)
        assert "unhealthy" in monitor.last_error

        nn.healthy = True
        await wait_until_async(
            "healthy again", lambda: monitor.state is HealthState.SERVICE_HEALTHY
        )

        await server.stop()
        await wait_until_async(
            "not responding",
            lambda: monitor.state is HealthState.SERVICE_NOT_RESPONDING,
        )
        assert monitor.running  # it keeps probing
        # once per change, in order
        assert seen == [
            HealthState.SERVICE_HEALTHY,
            HealthState.SERVICE_UNHEALTHY,
            HealthState.SERVICE_HEALTHY,
            HealthState.SERVICE_NOT_RESPONDING,
        ]
        assert statuses == [  # readiness follows health in the fake
            (HAState.STANDBY, True),
            (HAState.ACTIVE, True),
            (HAState.ACTIVE, False),
            (HAState.ACTIVE, True),
        ]

        # the NameNode comes back on the same port: the monitor reconnects
        server = await serve(nn, port=port)
        await wait_until_async(
            "healthy after restart",
            lambda: monitor.state is HealthState.SERVICE_HEALTHY,
        )
    finally:
        await monitor.stop()
        await server.stop()
    assert not monitor.running


async def test_a_failing_monitor_reports_health_monitor_failed() -> None:
    nn = FakeNameNode()
    server = await serve(nn)
    monitor = HealthMonitor(f"127.0.0.1:{server.port}", FAST)

    def broken(_status: object) -> None:
        raise AssertionError("callbacks are isolated")

    monitor.add_status_callback(broken)

    async def boom() -> bool:
        raise ValueError("a bug in the monitor")

    try:
        monitor.start()
        await wait_until_async("healthy", lambda: monitor.state is HealthState.SERVICE_HEALTHY)
        monitor.check_once = boom  # type: ignore[method-assign]
        await wait_until_async("failed", lambda: monitor.state is HealthState.HEALTH_MONITOR_FAILED)
        await wait_until_async("stopped", lambda: not monitor.running)
        assert "a bug in the monitor" in monitor.last_error
    finally:
        await monitor.stop()
        await server.stop()


class HangingNameNode(FakeNameNode):
    """monitorHealth does not answer while hang is set."""

    def __init__(self) -> None:
        super().__init__()
        self.hang = asyncio.Event()
        self.release = asyncio.Event()

    async def monitor_health(self) -> None:
        if self.hang.is_set():
            await self.release.wait()
        await super().monitor_health()


async def test_a_call_past_the_rpc_timeout_means_not_responding() -> None:
    nn = HangingNameNode()
    server = await serve(nn)
    settings = HealthMonitorSettings(
        check_interval_s=0.05,
        connect_retry_interval_s=0.05,
        rpc_timeout_s=0.3,
        sleep_after_disconnect_s=0.05,
    )
    monitor = HealthMonitor(f"127.0.0.1:{server.port}", settings)
    monitor.start()
    try:
        await wait_until_async("healthy", lambda: monitor.state is HealthState.SERVICE_HEALTHY)
        nn.hang.set()
        await wait_until_async(
            "not responding",
            lambda: monitor.state is HealthState.SERVICE_NOT_RESPONDING,
        )
        nn.hang.clear()
        nn.release.set()
        await wait_until_async(
            "healthy again", lambda: monitor.state is HealthState.SERVICE_HEALTHY
        )
    finally:
        await monitor.stop()
        await server.stop()
