"""The chaos harness's command line (`make chaos ARGS=...`)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from qjm.cluster.process import LaunchError
from qjm.errors import QjmError
from qjm.testing.chaos.nemesis import ACTION_KINDS
from qjm.testing.chaos.runner import RunConfig, Runner, prepare_directory
from qjm.testing.chaos.summary import write_summary

EXIT_VIOLATIONS = 1
EXIT_FAILED = 2


def parser() -> argparse.ArgumentParser:
    """The arguments."""
    p = argparse.ArgumentParser(
        prog="make chaos ARGS=...",
        description=(
            "Run ZooKeeper, 3 JournalNodes, 2 NameNodes and 2 ZKFCs on loopback under a seeded "
            "nemesis while HA clients write and read their own subtrees; check what the "
            "cluster holds and answered against the recorded history after each healing and "
            "at the end. Exit 0: no violation; 1: violations (each names the seed); 2: the "
            "run itself failed."
        ),
    )
    p.add_argument("--seed", type=int, help="the schedule's seed (default: a random one)")
    p.add_argument("--actions", type=int, default=20, help="nemesis actions to make (default 20)")
    p.add_argument(
        "--duration",
        type=float,
        help="make actions for this many seconds instead of a number of them",
    )
    p.add_argument("--dir", default="chaos-run", help="the run's directory (default ./chaos-run)")
    p.add_argument("--clients", type=int, default=6, help="workload clients, 4-8 (default 6)")
    p.add_argument(
        "--kinds",
        default=",".join(ACTION_KINDS),
        help="comma-separated fault kinds (default all: " + ", ".join(ACTION_KINDS) + ")",
    )
    p.add_argument(
        "--session-timeout-ms",
        type=int,
        default=3000,
        help="the ZKFCs' ZooKeeper session timeout (default 3000)",
    )
    p.add_argument("--base-port", type=int, help="the first of the cluster's ports")
    p.add_argument("--keep", action="store_true", help="leave the cluster running at the end")
    p.add_argument(
        "--no-probe",
        action="store_true",
        help="no deposed-active probe (a read sent to a stopped active after the takeover)",
    )
    return p


def config_from(args: argparse.Namespace) -> RunConfig:
    """The run's config from parsed arguments; ValueError naming a bad one."""
    kinds = tuple(k.strip() for k in args.kinds.split(",") if k.strip())
    unknown = [k for k in kinds if k not in ACTION_KINDS]
    if unknown or not kinds:
        raise ValueError(
            f"--kinds: unknown kind(s) {', '.join(unknown) or '(none)'}; the kinds are "
            + ", ".join(ACTION_KINDS)
        )
    if not 1 <= args.clients <= 16:
        raise ValueError(f"--clients {args.clients}: run 1 to 16 (4-8 is the intended load)")
    if args.actions < 0:
        raise ValueError(f"--actions {args.actions}: must be 0 or more")
    if args.session_timeout_ms < 1000:
        raise ValueError(f"--session-timeout-ms {args.session_timeout_ms}: at least 1000")
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(3), "big")
    return RunConfig(
        seed=seed,
        directory=Path(args.dir).resolve(),
        actions=args.actions,
        duration_s=args.duration,
        clients=args.clients,
        kinds=kinds,
        session_timeout_ms=args.session_timeout_ms,
        base_port=args.base_port,
        keep=args.keep,
        probe=not args.no_probe,
    )


def main(argv: list[str] | None = None) -> int:
    """Run the harness; 0 when no violation was found."""
    args = parser().parse_args(argv)
    try:
        cfg = config_from(args)
        prepare_directory(cfg.directory)
    except (ValueError, LaunchError, OSError) as e:
        print(f"chaos: {e}", file=sys.stderr)
        return EXIT_FAILED
    runner = Runner(cfg)
    try:
        summary = asyncio.run(runner.run())
    except (QjmError, OSError) as e:
        print(f"chaos: the run failed (seed {cfg.seed}): {e}", file=sys.stderr)
        print(runner.summary.text(), file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print(runner.summary.text())
        path = write_summary(runner.summary, cfg.directory)
        print(f"chaos: interrupted (seed {cfg.seed}); the summary so far: {path}", file=sys.stderr)
        return EXIT_FAILED
    path = write_summary(summary, cfg.directory)
    print(summary.text())
    print(f"summary: {path}; calls: {cfg.directory / 'history.jsonl'}")
    print(
        f'run again: make chaos ARGS="--seed {cfg.seed} --actions {summary.actions_done}'
        f"{' --kinds ' + args.kinds if args.kinds != ','.join(ACTION_KINDS) else ''}"
        f'{" --no-probe" if args.no_probe else ""}"'
    )
    return EXIT_VIOLATIONS if summary.violations else 0


__all__ = ["main", "parser"]
