"""Manual HA administration: state queries, health checks, transitions and a graceful failover
with the steps and fallbacks of HDFS's FailoverController."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from qjm.errors import QjmError, describe_error
from qjm.ipc import RemoteError, RpcError
from qjm.namenode.client import HAAdminClient
from qjm.namenode.types import HAState

Report = Callable[[str], None]

# What stands in for HDFS's fencing methods (sshfence, shell): the journal. A NameNode that
# becomes active takes a new epoch on a quorum of JournalNodes, and from then on every
# JournalNode refuses the old active's writes, so the old active can no longer change the
# namespace whether or not it heard it should stop.
FENCING_NOTE = (
    "fencing {name} by the journal: {to} takes a new epoch on a quorum of JournalNodes as "
    "it becomes active, and from then on every JournalNode refuses {name}'s writes"
)


class FailoverFailedError(QjmError):
    """A failover (or transition) could not be done; the message says why and what was left."""


@dataclass(frozen=True)
class HATarget:
    """One NameNode to administer: its name in the config and its RPC address."""

    name: str
    address: str

    def __str__(self) -> str:
        return f"{self.name} ({self.address})"


def _quiet(message: str) -> None:
    """A report that says nothing."""


async def get_status(target: HATarget, call_timeout_s: float) -> tuple[HAState, bool, str]:
    """(state, ready to become active, reason) of target; RpcError when unreachable."""
    async with HAAdminClient(target.address, timeout=call_timeout_s) as c:
        return await c.get_service_status()


async def check_health(target: HATarget, call_timeout_s: float) -> None:
    """Return when target is healthy; FailoverFailedError naming what is wrong."""
    try:
        async with HAAdminClient(target.address, timeout=call_timeout_s) as c:
            await c.monitor_health()
    except RpcError as e:
        raise FailoverFailedError(
            f"Health check of {target} failed: {describe_error(e, brief=True)}"
        ) from e


async def transition_to_standby(target: HATarget, *, forced: bool, call_timeout_s: float) -> None:
    """Ask target to become standby."""
    async with HAAdminClient(target.address, timeout=call_timeout_s) as c:
        await c.transition_to_standby(forced=forced)


async def transition_to_active(
    target: HATarget,
    others: list[HATarget],
    *,
    force_active: bool = False,
    forced: bool = False,
    call_timeout_s: float = 60.0,
    report: Report = _quiet,
) -> None:
    """Make target active after checking no other NameNode is (HAAdmin -transitionToActive).

    Another NameNode that is active refuses the transition unless force_active; one that
    cannot be reached does not: the journal's epoch fences it should it still be writing.
    """
    if not force_active:
        for other in others:
            try:
                state, _, _ = await get_status(other, call_timeout_s)
            except RpcError as e:
                report(
                    f"{other} is unreachable ({describe_error(e, brief=True)}); going on: "
                    + FENCING_NOTE.format(name=other.name, to=target.name)
                )
                continue
            if state is HAState.ACTIVE:
                raise FailoverFailedError(
                    f"transitionToActive: {other} is already active; use -failover "
                    f"{other.name} {target.name}, or --forceactive"
                )
    try:
        async with HAAdminClient(target.address, timeout=call_timeout_s) as c:
            await c.transition_to_active(forced=forced)
    except RpcError as e:
        raise FailoverFailedError(
            f"transitionToActive of {target} failed: {describe_error(e, brief=True)}"
        ) from e


def auto_failover_refusal(target: HATarget) -> str:
    """HDFS's refusal of a manual transition when automatic failover is on (no --forcemanual)."""
    return (
        f"Automatic failover is enabled for NameNode at {target.address}\n"
        "Refusing to manually manage HA state, since it may cause\n"
        "a split-brain scenario or other incorrect state.\n"
        "If you are very sure you know what you are doing, please \n"
        "specify the --forcemanual flag."
    )


async def graceful_failover_through_zkfc(
    to_t: HATarget, zkfc_address: str, *, call_timeout_s: float = 60.0
) -> None:
    """Ask to_t's ZKFC (at zkfc_address) for a graceful failover to to_t, as HDFS's
    haadmin -failover does with automatic failover; FailoverFailedError says what failed."""
    from qjm.ha.zkfc import ZKFCClient

    client = ZKFCClient(zkfc_address, timeout=call_timeout_s)
    try:
        await client.graceful_failover()
    except RemoteError as e:
        raise FailoverFailedError(
            f"the ZKFC of {to_t.name} at {zkfc_address} refused: {e.class_name}: {e.message}"
        ) from e
    except RpcError as e:
        raise FailoverFailedError(
            f"cannot reach the ZKFC of {to_t.name} at {zkfc_address}: {e}"
        ) from e
    finally:
        await client.close()


async def _pre_failover_checks(
    from_t: HATarget, to_t: HATarget, force_active: bool, call_timeout_s: float
) -> None:
    """FailoverController.preFailoverChecks: to_t reachable, not active, ready and healthy."""
    if from_t.address == to_t.address:
        raise FailoverFailedError(f"Can't failover a service to itself: {to_t}")
    try:
        state, ready, reason = await get_status(to_t, call_timeout_s)
    except RpcError as e:
        raise FailoverFailedError(
            f"Unable to get the service state of {to_t}: {describe_error(e, brief=True)}"
        ) from e
    if state is HAState.ACTIVE:
        raise FailoverFailedError(f"Can't failover to an active service: {to_t} is active")
    if not ready and not force_active:
        raise FailoverFailedError(
            f"{to_t} is not ready to become active: {reason or 'no reason given'}"
        )
    try:
        async with HAAdminClient(to_t.address, timeout=call_timeout_s) as c:
            await c.monitor_health()
    except RemoteError as e:
        raise FailoverFailedError(
            f"Can't failover to an unhealthy service {to_t}: {e.message}"
        ) from e
    except RpcError as e:
        raise FailoverFailedError(f"Got an error checking the health of {to_t}: {e}") from e


async def failover(
    from_t: HATarget,
    to_t: HATarget,
    *,
    force_fence: bool = False,
    force_active: bool = False,
    forced: bool = False,
    call_timeout_s: float = 60.0,
    report: Report = _quiet,
) -> None:
    """Move the active role from from_t to to_t as HDFS's FailoverController does.

    Checks to_t (reachable, not active, ready unless force_active, healthy), asks from_t to
    become standby (graceful fence), fences it when that failed or force_fence (here: the
    journal's epoch, see FENCING_NOTE), then makes to_t active. If that fails and from_t
    had stepped down gracefully, tries to make from_t active again (failback).
    """
    await _pre_failover_checks(from_t, to_t, force_active, call_timeout_s)
    graceful = False
    try:
        await transition_to_standby(from_t, forced=forced, call_timeout_s=call_timeout_s)
        graceful = True
        report(f"{from_t} is now standby")
    except RpcError as e:
        report(f"Unable to gracefully make {from_t} standby: {describe_error(e, brief=True)}")
    if not graceful or force_fence:
        report(FENCING_NOTE.format(name=from_t.name, to=to_t.name))
    try:
        async with HAAdminClient(to_t.address, timeout=call_timeout_s) as c:
            await c.transition_to_active(forced=forced)
    except RpcError as e:
        message = f"Unable to failover to {to_t}: {describe_error(e, brief=True)}"
        if graceful and not force_fence:
            # HDFS fails back only when it did not fence from_t: to_t may still be trying
            # to become active, so it is asked to step down first.
            try:
                await failover(
                    to_t,
                    from_t,
                    force_fence=True,
                    force_active=True,
                    forced=forced,
                    call_timeout_s=call_timeout_s,
                    report=report,
                )
                message += f"; failed back: {from_t} is active again"
            except FailoverFailedError as back:
                message += f". Failback to {from_t} failed ({back})"
        raise FailoverFailedError(message) from e
    report(f"{to_t} is now active")
