"""The `qjm` command."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback

from qjm import __version__
from qjm.errors import QjmError

# Subcommand modules, each with add_parser(subparsers) adding the command its name ends
# with; optional ones may be absent.
COMMANDS = [
    "qjm.cli.journalnode",
    "qjm.cli.namenode",
    "qjm.cli.datanode",
    "qjm.cli.journal",
    "qjm.cli.cluster",
    "qjm.cli.oev",
    "qjm.cli.oiv",
    "qjm.cli.dfs",
    "qjm.cli.fsck",
    "qjm.cli.dfsadmin",
    "qjm.cli.getconf",
    "qjm.cli.haadmin",
    "qjm.cli.zkfc",
    "qjm.cli.analyze",
]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every available subcommand, or with the one named only."""
    parser = argparse.ArgumentParser(
        prog="qjm", description="HDFS-style NameNode high availability on a Quorum Journal"
    )
    parser.add_argument("--version", action="version", version=f"qjm {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        if only is not None and command_of(name) != only:
            continue
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:
                continue
            raise
        module.add_parser(sub)
    return parser


def command_of(module: str) -> str:
    """The subcommand a module of COMMANDS adds (its name's last part)."""
    return module.rsplit(".", 1)[-1]


def main(argv: list[str] | None = None) -> int:
    """Run the qjm command; errors are one line, never a bare traceback."""
    argv = sys.argv[1:] if argv is None else list(argv)
    # A daemon or a command imports its own module only (every process of a cluster starts
    # through here); anything else (no command, --help, a typo) gets the full parser.
    known = {command_of(name) for name in COMMANDS}
    parser = build_parser(argv[0] if argv[:1] and argv[0] in known else None)
    if argv[:1] == ["haadmin"]:
        from qjm.cli.haadmin import hdfs_order

        argv = hdfs_order(argv)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except QjmError as e:
        print(f"qjm: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("qjm: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:
        if os.environ.get("QJM_DEBUG"):
            traceback.print_exc()
        print(
            f"qjm: internal error: {type(e).__name__}: {e} (set QJM_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 70


if __name__ == "__main__":
    sys.exit(main())
