"""What the RPC layer needs of a NameNode: the contract between client_rpc/ha_rpc and server."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from qjm.editlog.ops import Op
from qjm.ipc.server import CallContext
from qjm.namenode.audit import AuditLog
from qjm.namenode.types import Caller, FileStatus, HAState

if TYPE_CHECKING:
    from qjm.config import NameNodeSettings
    from qjm.namenode.block_service import NameNodeBlocks
    from qjm.namenode.delegation import TokenPolicy
    from qjm.namenode.lease_manager import LeaseRecovery
    from qjm.namenode.namespace import Namespace
    from qjm.namenode.retry_cache import RetryCache

Plan = Callable[["Namespace"], list[Op]]


class NameNodeService(Protocol):
    """A NameNode as its RPC handlers see it."""

    settings: NameNodeSettings
    retry_cache: RetryCache | None  # None when [namenode] retry_cache_enabled is false
    blocks: NameNodeBlocks  # block management beside the namespace (design §B.14)
    leases: LeaseRecovery  # leases and block recovery (design §B.16)
    token_policy: TokenPolicy  # delegation token lifetimes (design §S.10)

    def caller_of(self, ctx: CallContext) -> Caller:
        """The Caller (user, groups, superuser) of an RPC."""
        ...

    def audit_log(self) -> AuditLog | None:
        """The audit log while serving, None when it is off (design §S.7)."""
        ...

    def audit_status(self, path: str) -> FileStatus | None:
        """A path's status for the audit line, None when it does not exist."""
        ...

    async def read(self, ctx: CallContext) -> Namespace:
        """The namespace to answer a read from, once every edit it shows is synced.

        Raises StandbyError unless active, or unless ctx carries a state id (an observer
        read), in which case it waits (bounded) until that txid is applied.
        """
        ...

    async def refresh_nodes(self) -> tuple[list[str], list[str]]:
        """Read the exclude list again and apply it: (started, stopped) decommissions."""
        ...

    async def roll_edits(self, ctx: CallContext) -> int:
        """rollEdits: finalize the open segment; the new one's first txid (design §N.11)."""
        ...

    async def save_namespace(self, ctx: CallContext) -> int:
        """saveNamespace: an image of the namespace in safe mode; its txid (design §N.11)."""
        ...

    async def meta_save(self, ctx: CallContext, filename: str) -> str:
        """metaSave: the block and DataNode state into the log directory; the path."""
        ...

    def check_write(self, ctx: CallContext) -> None:
        """Raise StandbyError unless this NameNode takes writes now (HDFS's checkOperation)."""
        ...

    async def write(self, ctx: CallContext, plan: Plan) -> list[Op]:
        """Run plan (validate, make ops), apply and log its ops, return them once synced.

        Raises StandbyError unless active; plan's own errors pass through untouched.
        """
        ...

    def last_txid(self) -> int:
        """The newest txid applied here (the state id sent in every RPC response)."""
        ...

    async def msync(self, ctx: CallContext) -> None:
        """Return once everything applied here is synced (StandbyError on a standby)."""
        ...

    @property
    def ha_state(self) -> HAState:
        """The current HA state."""
        ...

    def service_status(self) -> tuple[HAState, bool, str]:
        """(state, ready to become active, the reason when not ready)."""
        ...

    async def monitor_health(self) -> None:
        """Return when healthy; raise HealthCheckFailedError naming what is wrong."""
        ...

    async def transition_to_active(self, source: str) -> None:
        """Become active (fence, recover, catch up, open a segment); no-op when active."""
        ...

    async def transition_to_standby(self, source: str) -> None:
        """Stop writing and start tailing; no-op when standby."""
        ...
