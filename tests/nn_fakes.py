"""A NameNodeService for RPC-layer tests: a real Namespace, no edit log, standby by a flag.

FakeNameNode.read returns its namespace and write runs plan + apply as the real NameNode
does (without logging); standby=True makes every namespace call raise StandbyError.
"""

from __future__ import annotations

import asyncio
import getpass
import threading
from collections.abc import Callable
from typing import Any

from qjm.config import DataNodeSettings, NameNodeSettings
from qjm.ipc.server import CallContext, IpcServer
from qjm.namenode.audit import AuditLog
from qjm.namenode.block_service import NameNodeBlocks, namespace_info_of
from qjm.namenode.client_rpc import client_methods
from qjm.namenode.errors import HealthCheckFailedError, ServiceFailedError, StandbyError
from qjm.namenode.ha_rpc import ha_methods
from qjm.namenode.lease_manager import LeaseRecovery
from qjm.namenode.namespace import Namespace
from qjm.namenode.protocols import CLIENT_PROTOCOL, HA_SERVICE_PROTOCOL
from qjm.namenode.retry_cache import RetryCache
from qjm.namenode.types import Caller, FileStatus, HAState


def make_namespace(superuser: str) -> Namespace:
    """A fresh namespace owned by superuser."""
    return Namespace(superuser=superuser)


class FakeNameNode:
    """NameNodeService over an in-memory namespace; txid counts applied ops."""

    def __init__(
        self,
        *,
        standby: bool = False,
        superuser: str | None = None,
        automatic_failover: bool = False,
    ) -> None:
        self.superuser = superuser or getpass.getuser()
        # automatic_failover: ZKFCs may transition it, users only with --forcemanual
        self.settings = NameNodeSettings(automatic_failover=automatic_failover)
        self.ns = make_namespace(self.superuser)
        self.standby = standby
        self.txid = 0
        self.healthy = True
        self.fail_activation = False  # transitionToActive fails (while healthy)
        self.transitions: list[tuple[str, str]] = []
        self.calls: list[str] = []  # methods that reached read/write
        self.state_ids: list[int | None] = []
        self.groups: dict[str, tuple[str, ...]] = {}  # user -> groups (none when absent)
        self.retry_cache: RetryCache | None = RetryCache(
            self.settings.retry_cache_expiry_ms / 1000, self.settings.retry_cache_max_entries
        )
        # a real block manager, no DataNodes: the block map follows the applied ops
        pool = namespace_info_of("BP-1-127.0.0.1-1", 1, "CID-fake", -66, 0)
        self.blocks = NameNodeBlocks(
            lambda: pool, lambda: self.ns, DataNodeSettings(), block_size=self.settings.block_size
        )
        self.blocks.attach(self.ns)
        self.blocks.leave_safe_mode_if_met()
        self.leases = LeaseRecovery(self, self.settings)
        self.blocks.committer = self.leases.commit_block_synchronization
        self.audit: AuditLog | None = None  # a test sets one to read the lines

    def audit_log(self) -> AuditLog | None:
        return self.audit

    def audit_status(self, path: str) -> FileStatus | None:
        return self.ns.stat(path, Caller(self.superuser, (), True))

    def caller_of(self, ctx: CallContext) -> Caller:
        groups = self.groups.get(ctx.user, ())
        superuser = ctx.user == self.superuser or self.settings.superuser_group in groups
        return Caller(ctx.user, groups, superuser)

    def _check(self, ctx: CallContext) -> None:
        self.calls.append(ctx.method)
        self.state_ids.append(ctx.state_id)
        if self.standby:
            raise StandbyError(
                f"Operation category {ctx.method} is not supported in state standby. "
                "Visit https://s.apache.org/sbnn-error"
            )

    def check_write(self, ctx: CallContext) -> None:
        if self.standby:
            self._check(ctx)

    async def read(self, ctx: CallContext) -> Any:
        self._check(ctx)
        return self.ns

    async def write(self, ctx: CallContext, plan: Callable[[Any], list[Any]]) -> list[Any]:
        self._check(ctx)
        ops = plan(self.ns)
        for op in ops:
            self.ns.apply(op)
            self.blocks.follow(self.ns, op, live=True)
            self.txid += 1
        await asyncio.sleep(0)
        return ops

    def last_txid(self) -> int:
        return self.txid

    async def msync(self, ctx: CallContext) -> None:
        self._check(ctx)

    @property
    def ha_state(self) -> HAState:
        return HAState.STANDBY if self.standby else HAState.ACTIVE

    def service_status(self) -> tuple[HAState, bool, str]:
        return (self.ha_state, self.healthy, "" if self.healthy else "not healthy: test")

    async def monitor_health(self) -> None:
        if not self.healthy:
            raise HealthCheckFailedError("the test made this NameNode unhealthy")

    async def transition_to_active(self, source: str) -> None:
        if not self.healthy or self.fail_activation:
            raise ServiceFailedError("cannot become active: the test said so")
        self.transitions.append(("active", source))
        self.standby = False

    async def transition_to_standby(self, source: str) -> None:
        self.transitions.append(("standby", source))
        self.standby = True


async def serve(nn: FakeNameNode, host: str = "127.0.0.1", port: int = 0) -> IpcServer:
    """An IpcServer serving nn's client and HA protocols (started)."""
    server = IpcServer(name="fake-nn", state_id=nn.last_txid)
    server.register(CLIENT_PROTOCOL, client_methods(nn))  # type: ignore[arg-type]
    server.register(HA_SERVICE_PROTOCOL, ha_methods(nn))  # type: ignore[arg-type]
    await server.start(host, port)
    return server


class ServedInThread:
    """FakeNameNodes served on loopback by an event loop in a thread, for tests that run
    blocking commands (a `qjm` subprocess) meanwhile."""

    def __init__(self, *nodes: FakeNameNode) -> None:
        self.nodes = list(nodes)
        self.servers: list[IpcServer] = []
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def __enter__(self) -> ServedInThread:
        self._thread.start()
        for nn in self.nodes:
            self.servers.append(self.run(serve(nn)))
        return self

    def run(self, coro: Any) -> Any:
        """Run a coroutine on the servers' loop and return its result (bounded wait)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=30)

    @property
    def addresses(self) -> list[str]:
        """127.0.0.1:port of each server, in the order of the nodes."""
        return [f"127.0.0.1:{s.port}" for s in self.servers]

    def stop(self, index: int) -> None:
        """Stop one server (its NameNode becomes unreachable)."""
        self.run(self.servers[index].stop())

    def __exit__(self, *exc: object) -> None:
        for server in self.servers:
            self.run(server.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=30)
        self.loop.close()
