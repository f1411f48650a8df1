"""HAServiceProtocol's handlers: health, status and the manual state transitions."""

from __future__ import annotations

import logging

from qjm.ipc.server import CallContext, Handler, Method
from qjm.namenode import protocols
from qjm.namenode.errors import AccessControlError
from qjm.namenode.proto import HAServiceProtocol_pb2 as ha
from qjm.namenode.service import NameNodeService
from qjm.namenode.types import HAState

log = logging.getLogger(__name__)

_STATE_ON_WIRE = {  # HAServiceStateProto; a stopping node reports INITIALIZING
    HAState.INITIALIZING: ha.INITIALIZING,
    HAState.ACTIVE: ha.ACTIVE,
    HAState.STANDBY: ha.STANDBY,
    HAState.OBSERVER: ha.OBSERVER,
    HAState.STOPPING: ha.INITIALIZING,
}


def request_source(info: ha.HAStateChangeRequestInfoProto) -> str:
    """The request source's name (REQUEST_BY_USER, REQUEST_BY_USER_FORCED, REQUEST_BY_ZKFC)."""
    return ha.HARequestSource.Name(info.reqSource)


def check_superuser(nn: NameNodeService, ctx: CallContext) -> None:
    """Refuse a caller who is no superuser, as HDFS's NameNode does for every HA call."""
    if not nn.settings.permissions_enabled:
        return
    caller = nn.caller_of(ctx)
    if not caller.superuser:
        raise AccessControlError(
            f"Access denied for user {caller.user}. Superuser privilege is required "
            f"for {ctx.method}"
        )


def _remote_host(ctx: CallContext) -> str:
    """The caller's address without the port (HDFS's Server.getRemoteAddress())."""
    host, sep, _ = ctx.peer.rpartition(":")
    return host.strip("[]") if sep else ctx.peer


def check_ha_state_change(nn: NameNodeService, ctx: CallContext, source: str) -> None:
    """Refuse a transition its source may not make (HDFS's NameNode.checkHaStateChange).

    With automatic failover the ZKFCs own the HA state: a user's request is refused unless
    forced (haadmin --forcemanual); without it a ZKFC's request is refused.
    """
    auto = nn.settings.automatic_failover
    if source == "REQUEST_BY_USER" and auto:
        raise AccessControlError(
            "Manual HA control for this NameNode is disallowed, because automatic HA is enabled."
        )
    if source == "REQUEST_BY_USER_FORCED" and auto:
        log.warning(
            "Allowing manual HA control from %s even though automatic HA is enabled, "
            "because the user specified the force flag",
            _remote_host(ctx),
        )
    if source == "REQUEST_BY_ZKFC" and not auto:
        raise AccessControlError(
            f"Request from ZK failover controller at {_remote_host(ctx)} denied since "
            "automatic HA is not enabled"
        )


def ha_methods(nn: NameNodeService) -> dict[str, Method]:
    """Every HAServiceProtocol method, for IpcServer.register."""

    async def monitor_health(
        req: ha.MonitorHealthRequestProto, ctx: CallContext
    ) -> ha.MonitorHealthResponseProto:
        check_superuser(nn, ctx)
        await nn.monitor_health()
        return ha.MonitorHealthResponseProto()

    async def get_service_status(
        req: ha.GetServiceStatusRequestProto, ctx: CallContext
    ) -> ha.GetServiceStatusResponseProto:
        check_superuser(nn, ctx)
        state, ready, reason = nn.service_status()
        response = ha.GetServiceStatusResponseProto(
            state=_STATE_ON_WIRE[state], readyToBecomeActive=ready
        )
        if not ready and reason:
            response.notReadyReason = reason
        return response

    async def transition_to_active(
        req: ha.TransitionToActiveRequestProto, ctx: CallContext
    ) -> ha.TransitionToActiveResponseProto:
        check_superuser(nn, ctx)
        source = request_source(req.reqInfo)
        check_ha_state_change(nn, ctx, source)
        await nn.transition_to_active(source)
        return ha.TransitionToActiveResponseProto()

    async def transition_to_standby(
        req: ha.TransitionToStandbyRequestProto, ctx: CallContext
    ) -> ha.TransitionToStandbyResponseProto:
        check_superuser(nn, ctx)
        source = request_source(req.reqInfo)
        check_ha_state_change(nn, ctx, source)
        await nn.transition_to_standby(source)
        return ha.TransitionToStandbyResponseProto()

    handlers: dict[str, Handler] = {
        "monitorHealth": monitor_health,
        "getServiceStatus": get_service_status,
        "transitionToActive": transition_to_active,
        "transitionToStandby": transition_to_standby,
    }
    return {
        name: Method(spec.request, handlers[name])
        for name, spec in protocols.HA_SERVICE_METHODS.items()
    }
