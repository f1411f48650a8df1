"""`qjm haadmin`: HDFS's `hdfs haadmin` for a qjm cluster's NameNodes.

With `[namenode] automatic_failover` the ZKFCs own the HA state, as in HDFS: a manual
transition needs --forcemanual, and -failover asks the target's ZKFC for a graceful failover.
"""

from __future__ import annotations

import argparse
import sys

from qjm import runtime
from qjm.cli.common import add_config_arg
from qjm.config import ClusterConfig
from qjm.config_site import load_cluster_config
from qjm.errors import ConfigError
from qjm.ha.haadmin import (
    FailoverFailedError,
    HATarget,
    auto_failover_refusal,
    check_health,
    failover,
    get_status,
    graceful_failover_through_zkfc,
    transition_to_active,
    transition_to_standby,
)
from qjm.ipc import RpcError
from qjm.ipc.login import user_login

DEFAULT_TIMEOUT_S = 60.0
EXIT_AUTO_FAILED = 255  # HDFS's haadmin returns -1 for what it refuses or fails in auto mode
_STATE_NAMES = {"INITIALIZING": "initializing", "ACTIVE": "active", "STANDBY": "standby"}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `qjm haadmin`."""
    p = sub.add_parser(
        "haadmin",
        help="NameNode HA administration (as hdfs haadmin)",
        description="Query and change the HA state of the NameNodes named in the config.",
    )
    add_config_arg(p, "with its NameNodes")
    p.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="per-call timeout in seconds"
    )
    p.add_argument("--forcemanual", action="store_true", help="request as REQUEST_BY_USER_FORCED")
    p.add_argument("--forcefence", action="store_true", help="-failover: fence even if graceful")
    p.add_argument(
        "--forceactive",
        action="store_true",
        help="-failover/-transitionToActive: skip the readiness / other-active checks",
    )
    act = p.add_mutually_exclusive_group(required=True)
    act.add_argument("-getServiceState", metavar="NN", help="print active/standby of NN")
    act.add_argument(
        "-getAllServiceState", action="store_true", help="print the state of every NameNode"
    )
    act.add_argument("-transitionToActive", metavar="NN", help="make NN active")
    act.add_argument("-transitionToStandby", metavar="NN", help="make NN standby")
    act.add_argument(
        "-failover", nargs=2, metavar=("FROM", "TO"), help="move the active role FROM -> TO"
    )
    act.add_argument("-checkHealth", metavar="NN", help="exit 0 when NN is healthy")
    p.set_defaults(func=run_haadmin)


_FLAGS = ("--forcemanual", "--forcefence", "--forceactive")


def hdfs_order(argv: list[str]) -> list[str]:
    """`haadmin` arguments with HDFS's flag placement (`-failover --forcefence A B`,
    `-transitionToActive --forcemanual A`) moved before the action, where argparse takes them."""
    if not argv or argv[0] != "haadmin":
        return argv
    flags = [a for a in argv[1:] if a in _FLAGS]
    rest = [a for a in argv[1:] if a not in _FLAGS]
    return [argv[0], *flags, *rest]


def _targets(cfg: ClusterConfig) -> dict[str, HATarget]:
    if not cfg.namenodes:
        raise ConfigError(f"{cfg.source} configures no [namenodes.*]")
    return {n: HATarget(n, c.rpc_address) for n, c in cfg.namenodes.items()}


def _target(targets: dict[str, HATarget], name: str) -> HATarget:
    try:
        return targets[name]
    except KeyError:
        known = ", ".join(targets)
        raise ConfigError(f"no NameNode called {name!r} (known: {known})") from None


def _say(message: str) -> None:
    print(message, file=sys.stderr)


def run_haadmin(args: argparse.Namespace) -> int:
    """Run one haadmin action; 0 ok, 1 failure (one line on stderr); with automatic
    failover, 255 for what it refuses or a failed -failover (HDFS's -1)."""
    cfg = load_cluster_config(args.config)
    user_login(cfg.security)
    targets = _targets(cfg)
    timeout = args.timeout
    if cfg.namenode.automatic_failover:
        refused = _refused_in_auto_mode(args, targets)
        if refused is not None:
            return refused
        if args.failover:
            return _auto_failover(cfg, targets, args.failover, timeout)
    try:
        if args.getServiceState:
            target = _target(targets, args.getServiceState)
            state, _, _ = runtime.run(get_status(target, timeout))
            print(_STATE_NAMES.get(state.name, state.name.lower()))
            return 0
        if args.getAllServiceState:
            return runtime.run(_all_states(list(targets.values()), timeout))
        if args.checkHealth:
            runtime.run(check_health(_target(targets, args.checkHealth), timeout))
            return 0
        if args.transitionToStandby:
            target = _target(targets, args.transitionToStandby)
            runtime.run(
                transition_to_standby(target, forced=args.forcemanual, call_timeout_s=timeout)
            )
            return 0
        if args.transitionToActive:
            target = _target(targets, args.transitionToActive)
            others = [t for n, t in targets.items() if n != target.name]
            runtime.run(
                transition_to_active(
                    target,
                    others,
                    force_active=args.forceactive,
                    forced=args.forcemanual,
                    call_timeout_s=timeout,
                    report=_say,
                )
            )
            return 0
        from_name, to_name = args.failover
        from_t, to_t = _target(targets, from_name), _target(targets, to_name)
        runtime.run(
            failover(
                from_t,
                to_t,
                force_fence=args.forcefence,
                force_active=args.forceactive,
                forced=args.forcemanual,
                call_timeout_s=timeout,
                report=_say,
            )
        )
        print(f"Failover to {to_name} successful")
        return 0
    except FailoverFailedError as e:
        prefix = "Failover failed: " if args.failover else ""
        print(f"qjm haadmin: {prefix}{e}", file=sys.stderr)
        return 1
    except RpcError as e:
        print(f"qjm haadmin: {e}", file=sys.stderr)
        return 1


def _refused_in_auto_mode(args: argparse.Namespace, targets: dict[str, HATarget]) -> int | None:
    """With automatic failover: refuse a manual transition without --forcemanual and
    -failover's --forcefence/--forceactive (HDFS's exit -1); None when it may go on."""
    manual = args.transitionToActive or args.transitionToStandby
    if manual:
        target = _target(targets, manual)
        if not args.forcemanual:
            print(auto_failover_refusal(target), file=sys.stderr)
            return EXIT_AUTO_FAILED
        _say(
            "Proceeding with manual HA state management even though\n"
            f"automatic failover is enabled for NameNode at {target.address}"
        )
    if args.failover and (args.forcefence or args.forceactive):
        print(
            "forcefence and forceactive flags not supported with auto-failover enabled.",
            file=sys.stderr,
        )
        return EXIT_AUTO_FAILED
    return None


def _auto_failover(
    cfg: ClusterConfig, targets: dict[str, HATarget], names: list[str], timeout: float
) -> int:
    """-failover FROM TO with automatic failover: TO's ZKFC does a graceful failover."""
    from_name, to_name = names
    _target(targets, from_name)
    to_t = _target(targets, to_name)
    try:
        runtime.run(
            graceful_failover_through_zkfc(
                to_t, cfg.zkfc_address_of(to_name), call_timeout_s=timeout
            )
        )
    except FailoverFailedError as e:
        print(f"qjm haadmin: Failover failed: {e}", file=sys.stderr)
        return EXIT_AUTO_FAILED
    print(f"Failover to NameNode at {to_t.address} successful")
    return 0


async def _all_states(targets: list[HATarget], call_timeout_s: float) -> int:
    """Print every NameNode's address and state as hdfs haadmin -getAllServiceState."""
    for target in targets:
        try:
            state, _, _ = await get_status(target, call_timeout_s)
            shown = _STATE_NAMES.get(state.name, state.name.lower())
        except RpcError as e:
            shown = f"Failed to connect: {e}"
        print(f"{target.address:<50} {shown}")
    return 0
