"""Leases of files open for writing and their recovery on the active (design §B.16).

HDFS's LeaseManager keeps when each client last renewed its lease; past the soft limit
another client may take the file over (its create, append or truncate recovers it first),
past the hard limit the active's monitor recovers it on its own. Recovery itself is the
namespace's plan_release_lease (close the file, or start a block recovery on a DataNode)
and, when the primary DataNode reports back, plan_commit_block_synchronization.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from qjm.editlog.ops import Block, Op
from qjm.errors import describe_error
from qjm.hdfs.datanode_protocol import BlockSynchronization
from qjm.ipc.server import CallContext
from qjm.namenode.errors import RecoveryInProgressError
from qjm.namenode.namespace.recovery import NAMENODE_LEASE_HOLDER
from qjm.namenode.types import HAState

if TYPE_CHECKING:
    from qjm.config import NameNodeSettings
    from qjm.namenode.block_service import NameNodeBlocks
    from qjm.namenode.namespace import Namespace
    from qjm.namenode.service import Plan

log = logging.getLogger("qjm.namenode.leases")


def now_ms() -> int:
    """The wall clock in milliseconds (modification times)."""
    return time.time_ns() // 1_000_000


class LeaseClock:
    """When each lease holder last renewed (HDFS's Lease.lastUpdate), and its limits.

    A holder not seen yet counts as renewed when first asked about: leases loaded from an
    image or the journal start their clock then, as HDFS's LeaseManager does at start-up.
    """

    def __init__(
        self, soft_s: float, hard_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.soft_s = soft_s
        self.hard_s = hard_s
        self.clock = clock
        self.last: dict[str, float] = {}

    def renew(self, holder: str) -> None:
        """The holder renewed (renewLease, create, append, truncate, a reassigned lease)."""
        self.last[holder] = self.clock()

    def _age(self, holder: str) -> float:
        now = self.clock()
        return now - self.last.setdefault(holder, now)

    def expired_soft(self, holder: str) -> bool:
        """Past the soft limit: another client may recover the holder's files."""
        return self._age(holder) > self.soft_s

    def expired_hard(self, holder: str) -> bool:
        """Past the hard limit: the active recovers the holder's files on its own."""
        return self._age(holder) > self.hard_s

    def forget_except(self, holders: set[str]) -> None:
        """Drop the holders that hold no lease any more."""
        for h in [h for h in self.last if h not in holders]:
            del self.last[h]


class LeaseHost(Protocol):
    """What lease recovery needs of the NameNode."""

    blocks: NameNodeBlocks

    @property
    def ha_state(self) -> HAState:
        """The current HA state."""
        ...

    @property
    def ns(self) -> Namespace:
        """The namespace."""
        ...

    async def write(self, ctx: CallContext, plan: Plan) -> list[Op]:
        """Apply, log and sync a plan's ops (active only)."""
        ...


def internal_context(method: str) -> CallContext:
    """The call context of a write the NameNode makes on its own (no client)."""
    return CallContext("internal", method, NAMENODE_LEASE_HOLDER, b"", -1, 0, "")


class LeaseRecovery:
    """recoverLease, the soft and hard limits, and commitBlockSynchronization on the
    active (design §B.16)."""

    def __init__(self, host: LeaseHost, settings: NameNodeSettings) -> None:
        self.host = host
        self.clock = LeaseClock(
            settings.lease_soft_limit_ms / 1000, settings.lease_hard_limit_ms / 1000
        )
        self.recheck_s = settings.lease_recheck_ms / 1000
        self.hard_limit_recoveries = 0
        self.soft_limit_recoveries = 0

    async def release(self, path: str, recovery_holder: str | None, method: str) -> bool:
        """Release path's lease (HDFS's internalReleaseLease); True when the file is closed."""
        blocks = self.host.blocks
        got: dict[str, object] = {}

        def plan(ns: Namespace) -> list[Op]:
            old = ns.open_files()
            holder = next((h for p, h in old if p == path), None)
            got["holder"] = holder
            rel = ns.plan_release_lease(path, recovery_holder, blocks.recovery_facts(), now_ms())
            got["rel"] = rel
            return rel.ops

        await self.host.write(internal_context(method), plan)
        from qjm.namenode.namespace.recovery import LeaseRelease

        rel = got["rel"]
        assert isinstance(rel, LeaseRelease)
        if rel.recovery is not None:
            primary = blocks.start_recovery(rel.recovery)
            log.info(
                "lease recovery of %s: block %s under recovery id %d, primary %s",
                path,
                rel.recovery.block,
                rel.recovery.recovery_id,
                primary,
            )
        holder = recovery_holder if recovery_holder is not None else got["holder"]
        if isinstance(holder, str) and not rel.closed:
            self.clock.renew(holder)
        return rel.closed

    async def recover_for(self, path: str, client_name: str, what: str, machine: str) -> None:
        """Before another client's create, append or truncate of path: a lease past its soft
        limit is recovered (HDFS's recoverLeaseInternal without force); the call goes on
        once the file is closed, else RecoveryInProgressException."""
        open_files = dict(self.host.ns.open_files())
        holder = open_files.get(path)
        if holder is None or holder == client_name or not self.clock.expired_soft(holder):
            return  # the plan refuses a file open elsewhere as HDFS does
        self.soft_limit_recoveries += 1
        log.info("%s of %s by %s: lease of %s past its soft limit", what, path, client_name, holder)
        if not await self.release(path, None, f"recoverLease({what})"):
            raise RecoveryInProgressError(
                f"Failed to {what} {path} for {client_name} on {machine} because lease "
                "recovery is in progress. Try again later."
            )

    async def tick(self) -> int:
        """The monitor's check: recover each file whose holder is past the hard limit."""
        host = self.host
        if host.ha_state != HAState.ACTIVE or host.blocks.safe_mode.is_on:
            return 0
        open_files = host.ns.open_files()
        self.clock.forget_except({h for _, h in open_files})
        n = 0
        for path, holder in open_files:
            if not self.clock.expired_hard(holder):
                continue
            try:
                await self.release(path, NAMENODE_LEASE_HOLDER, "internalReleaseLease")
                n += 1
            except Exception as e:
                log.warning("lease recovery of %s (holder %s): %s", path, holder, describe_error(e))
        self.hard_limit_recoveries += n
        return n

    async def monitor(self) -> None:
        """Every lease_recheck_ms while the NameNode runs: tick."""
        while self.host.ha_state != HAState.STOPPING:
            await asyncio.sleep(self.recheck_s)  # the check's period, not a synchronization
            try:
                await self.tick()
            except Exception as e:
                log.error("lease monitor: %s", describe_error(e))

    async def commit_block_synchronization(self, sync: BlockSynchronization) -> None:
        """A primary DataNode's recovery result: the last block's new length and stamp,
        the file closed (design §B.16); a stale recovery id is refused."""
        blocks = self.host.blocks
        b = Block(sync.block.block_id, sync.block.num_bytes, sync.block.gen_stamp)
        expected = blocks.recovery_id(b.block_id)

        def plan(ns: Namespace) -> list[Op]:
            _, ops = ns.plan_commit_block_synchronization(
                b,
                sync.new_gen_stamp,
                expected,
                sync.new_length,
                sync.close_file,
                sync.delete_block,
                now_ms(),
            )
            return ops

        ops = await self.host.write(internal_context("commitBlockSynchronization"), plan)
        if ops:
            blocks.end_recovery(b.block_id)
            log.info(
                "commitBlockSynchronization of %s: %d bytes under stamp %d%s",
                b,
                sync.new_length,
                sync.new_gen_stamp,
                ", file closed" if sync.close_file else "",
            )
