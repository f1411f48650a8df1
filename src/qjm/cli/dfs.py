"""`qjm dfs`: the common `hadoop fs` verbs against a qjm NameNode pair, with HA failover."""

from __future__ import annotations

import argparse
import getpass
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from qjm import runtime
from qjm.config_site import load_cluster_config
from qjm.errors import ConfigError
from qjm.ipc import RemoteError, RpcError
from qjm.ipc.login import user_login
from qjm.namenode.client import NameNodeClient
from qjm.namenode.types import FileStatus

_ACTIONS = ("---", "--x", "-w-", "-wx", "r--", "r-x", "rw-", "rwx")

Verb = Callable[[NameNodeClient, argparse.Namespace], Awaitable[int]]


class ShellError(Exception):
    """A verb failed on one path: printed as `verb: message`, exit code 1."""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `qjm dfs` and its verbs."""
    p = sub.add_parser(
        "dfs",
        help="file system commands against the NameNodes (as hadoop fs)",
        description="hadoop fs verbs over HDFS's client protocol, failing over between "
        "the NameNodes to the active one.",
    )
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--config", help="cluster TOML file, or Hadoop conf dir (hdfs-site.xml)")
    where.add_argument("--namenodes", help="comma-separated NameNode RPC addresses")
    p.add_argument("--user", help="the user to act as (default: this OS user)")
    p.add_argument("--timeout", type=float, default=30.0, help="per-call timeout in seconds")
    vs = p.add_subparsers(dest="verb", required=True, metavar="VERB")

    v = vs.add_parser("mkdir", help="make directories")
    v.add_argument("-p", action="store_true", help="make parents, no error if it exists")
    v.add_argument("paths", nargs="+")
    v.set_defaults(verb_func=_mkdir)

    v = vs.add_parser("ls", help="list a directory (or show a file)")
    v.add_argument("-R", action="store_true", help="recursively")
    v.add_argument("-d", action="store_true", help="directories as plain files")
    v.add_argument("paths", nargs="*", default=["/"])
    v.set_defaults(verb_func=_ls)

    v = vs.add_parser("stat", help="print a path's status by a format (default %%y)")
    v.add_argument("args", nargs="+", metavar="[FORMAT] PATH")
    v.set_defaults(verb_func=_stat)

    v = vs.add_parser("touch", help="create empty files or update their times")
    v.add_argument("paths", nargs="+")
    v.set_defaults(verb_func=_touch)

    v = vs.add_parser("mv", help="move (rename) paths")
    v.add_argument("paths", nargs="+", metavar="SRC... DST")
    v.set_defaults(verb_func=_mv)

    v = vs.add_parser("rm", help="delete paths")
    v.add_argument("-r", "-R", dest="r", action="store_true", help="recursively")
    v.add_argument("-f", action="store_true", help="no error for a missing path")
    v.add_argument("paths", nargs="+")
    v.set_defaults(verb_func=_rm)

    v = vs.add_parser("chmod", help="set permission bits (octal)")
    v.add_argument("-R", action="store_true", help="recursively")
    v.add_argument("mode")
    v.add_argument("paths", nargs="+")
    v.set_defaults(verb_func=_chmod)

    v = vs.add_parser("chown", help="set OWNER[:GROUP]")
    v.add_argument("-R", action="store_true", help="recursively")
    v.add_argument("owner", metavar="OWNER[:GROUP]")
    v.add_argument("paths", nargs="+")
    v.set_defaults(verb_func=_chown)

    v = vs.add_parser("setrep", help="set files' replication")
    v.add_argument("replication", type=int)
    v.add_argument("paths", nargs="+")
    v.set_defaults(verb_func=_setrep)

    v = vs.add_parser("du", help="space used by each entry (or in total with -s)")
    v.add_argument("-s", action="store_true", help="one total per path")
    v.add_argument("paths", nargs="+")
    v.set_defaults(verb_func=_du)

    v = vs.add_parser("count", help="directories, files and bytes under paths")
    v.add_argument("-q", action="store_true", help="with quotas")
    v.add_argument("paths", nargs="+")
    v.set_defaults(verb_func=_count)

    p.set_defaults(func=run_dfs)


def namenode_addresses(args: argparse.Namespace) -> list[str]:
    """The NameNode RPC addresses from --namenodes or --config."""
    if args.namenodes:
        addresses = [a.strip() for a in args.namenodes.split(",") if a.strip()]
        if not addresses:
            raise ConfigError("--namenodes names no address")
        return addresses
    cfg = load_cluster_config(args.config)
    user_login(cfg.security)
    if not cfg.namenodes:
        raise ConfigError(f"{args.config} configures no [namenodes.*]")
    return [nn.rpc_address for nn in cfg.namenodes.values()]


def run_dfs(args: argparse.Namespace) -> int:
    """Run one verb; 0 when every path succeeded, 1 otherwise."""
    addresses = namenode_addresses(args)
    user = args.user or getpass.getuser()

    async def main() -> int:
        async with NameNodeClient(addresses, user=user, timeout=args.timeout) as client:
            verb: Verb = args.verb_func
            return await verb(client, args)

    return runtime.run(main())


# -- formatting ----------------------------------------------------------------------------


def mode_string(status: FileStatus) -> str:
    """drwxr-xr-x style, with t/T for the sticky bit as ls shows it."""
    perm = status.permission
    bits = "".join(_ACTIONS[(perm >> s) & 7] for s in (6, 3, 0))
    if perm & 0o1000:
        bits = bits[:8] + ("t" if perm & 0o001 else "T")
    return ("d" if status.is_dir else "-") + bits


def _local_time(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ms / 1000))


def ls_lines(entries: list[tuple[str, FileStatus]]) -> list[str]:
    """hadoop fs -ls lines, with its column widths (at least 3 for replication, 10 for size)."""
    repl_w = max([3] + [len(str(s.replication)) for _, s in entries])
    owner_w = max([0] + [len(s.owner) for _, s in entries])
    group_w = max([0] + [len(s.group) for _, s in entries])
    len_w = max([10] + [len(str(s.length)) for _, s in entries])
    lines = []
    for path, s in entries:
        repl = "-" if s.is_dir else str(s.replication)
        lines.append(
            f"{mode_string(s)} {repl:>{repl_w}} {s.owner:<{owner_w}} {s.group:<{group_w}} "
            f"{s.length:>{len_w}} {_local_time(s.mtime)} {path}"
        )
    return lines


def stat_line(fmt: str, path: str, s: FileStatus) -> str:
    """hadoop fs -stat's format: %b %F %g %n %o %r %u %y %Y %a %A %x %X."""
    utc = "%Y-%m-%d %H:%M:%S"
    values = {
        "b": str(s.length),
        "F": "directory" if s.is_dir else "regular file",
        "g": s.group,
        "n": s.name or path,
        "o": str(s.block_size),
        "r": str(s.replication),
        "u": s.owner,
        "y": datetime.fromtimestamp(s.mtime / 1000, UTC).strftime(utc),
        "Y": str(s.mtime),
        "x": datetime.fromtimestamp(s.atime / 1000, UTC).strftime(utc),
        "X": str(s.atime),
        "a": format(s.permission & 0o7777, "o"),
        "A": mode_string(s)[1:],
        "%": "%",
    }
    out, i = [], 0
    while i < len(fmt):
        c = fmt[i]
        if c == "%" and i + 1 < len(fmt) and fmt[i + 1] in values:
            out.append(values[fmt[i + 1]])
            i += 2
        elif c == "\\" and fmt[i + 1 : i + 2] == "n":
            out.append("\n")
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _no_such(verb: str, path: str) -> ShellError:
    return ShellError(f"`{path}': No such file or directory")


async def _each(verb: str, paths: list[str], action: Callable[[str], Awaitable[None]]) -> int:
    """Run action on every path; print `verb: message` for each failure; 0 when none."""
    rc = 0
    for path in paths:
        try:
            await action(path)
        except ShellError as e:
            print(f"{verb}: {e}", file=sys.stderr)
            rc = 1
        except RemoteError as e:
            print(f"{verb}: {e.message}", file=sys.stderr)
            rc = 1
    return rc


async def _walk_apply(
    client: NameNodeClient, path: str, recursive: bool, fn: Callable[[str], Awaitable[None]]
) -> None:
    status = await client.stat(path)
    if status is None:
        raise _no_such("", path)
    await fn(path)
    if recursive and status.is_dir:
        async for full, _ in client.walk(path):
            await fn(full)


# -- verbs ---------------------------------------------------------------------------------


async def _mkdir(client: NameNodeClient, args: argparse.Namespace) -> int:
    async def one(path: str) -> None:
        status = await client.stat(path)
        if status is not None:
            if args.p and status.is_dir:
                return
            raise ShellError(f"`{path}': File exists")
        if not args.p:
            parent = path.rstrip("/").rsplit("/", 1)[0] or "/"
            if await client.stat(parent) is None:
                raise ShellError(f"`{path}': No such file or directory")
        await client.mkdirs(path, create_parent=args.p)

    return await _each("mkdir", args.paths, one)


async def _ls(client: NameNodeClient, args: argparse.Namespace) -> int:
    async def one(path: str) -> None:
        status = await client.stat(path)
        if status is None:
            raise _no_such("ls", path)
        if not status.is_dir or args.d:
            print("\n".join(ls_lines([(path, status)])))
            return
        if args.R:
            entries = [(full, s) async for full, s in client.walk(path)]
        else:
            listed = await client.listing(path) or []
            entries = [(path.rstrip("/") + "/" + s.name, s) for s in listed]
            print(f"Found {len(entries)} items")
        if entries:
            print("\n".join(ls_lines(entries)))

    return await _each("ls", args.paths, one)


async def _stat(client: NameNodeClient, args: argparse.Namespace) -> int:
    fmt, paths = ("%y", args.args) if len(args.args) == 1 else (args.args[0], args.args[1:])

    async def one(path: str) -> None:
        status = await client.stat(path)
        if status is None:
            raise _no_such("stat", path)
        print(stat_line(fmt, path, status))

    return await _each("stat", paths, one)


async def _touch(client: NameNodeClient, args: argparse.Namespace) -> int:
    async def one(path: str) -> None:
        try:
            await client.touch(path)
        except RemoteError:
            raise
        except RpcError as e:
            raise ShellError(f"`{path}': {e}") from e

    return await _each("touch", args.paths, one)


async def _mv(client: NameNodeClient, args: argparse.Namespace) -> int:
    if len(args.paths) < 2:
        print("mv: give SRC... DST", file=sys.stderr)
        return 2
    *sources, dst = args.paths
    dst_status = await client.stat(dst)
    if len(sources) > 1 and (dst_status is None or not dst_status.is_dir):
        print(f"mv: `{dst}': Is not a directory", file=sys.stderr)
        return 1

    async def one(src: str) -> None:
        if await client.stat(src) is None:
            raise _no_such("mv", src)
        target = dst
        if dst_status is not None and dst_status.is_dir:
            target = dst.rstrip("/") + "/" + src.rstrip("/").rsplit("/", 1)[-1]
        elif dst_status is not None:
            raise ShellError(f"`{dst}': File exists")
        await client.rename2(src, target)

    return await _each("mv", sources, one)


async def _rm(client: NameNodeClient, args: argparse.Namespace) -> int:
    async def one(path: str) -> None:
        status = await client.stat(path)
        if status is None:
            if args.f:
                return
            raise _no_such("rm", path)
        if status.is_dir and not args.r:
            raise ShellError(f"`{path}': Is a directory")
        if await client.delete(path, recursive=args.r):
            print(f"Deleted {path}")
        elif not args.f:
            raise _no_such("rm", path)

    return await _each("rm", args.paths, one)


async def _chmod(client: NameNodeClient, args: argparse.Namespace) -> int:
    try:
        mode = int(args.mode, 8)
    except ValueError:
        print(
            f"chmod: chmod : mode '{args.mode}' does not match the expected pattern (octal)",
            file=sys.stderr,
        )
        return 2
    if not 0 <= mode <= 0o7777:
        print(f"chmod: mode {args.mode} is out of range (0-7777)", file=sys.stderr)
        return 2

    async def set_mode(path: str) -> None:
        await client.chmod(path, mode)

    return await _each("chmod", args.paths, lambda p: _walk_apply(client, p, args.R, set_mode))


async def _chown(client: NameNodeClient, args: argparse.Namespace) -> int:
    owner, _, group = args.owner.partition(":")

    async def set_owner(path: str) -> None:
        await client.chown(path, owner or None, group or None)

    return await _each("chown", args.paths, lambda p: _walk_apply(client, p, args.R, set_owner))


async def _setrep(client: NameNodeClient, args: argparse.Namespace) -> int:
    if args.replication < 1:
        print(f"setrep: replication must be >= 1, got {args.replication}", file=sys.stderr)
        return 2

    async def set_one(path: str) -> None:
        if await client.setrep(path, args.replication):
            print(f"Replication {args.replication} set: {path}")

    async def one(path: str) -> None:
        status = await client.stat(path)
        if status is None:
            raise _no_such("setrep", path)
        if not status.is_dir:
            await set_one(path)
            return
        async for full, s in client.walk(path):
            if not s.is_dir:
                await set_one(full)

    return await _each("setrep", args.paths, one)


async def _du(client: NameNodeClient, args: argparse.Namespace) -> int:
    async def one(path: str) -> None:
        status = await client.stat(path)
        if status is None:
            raise _no_such("du", path)
        if args.s or not status.is_dir:
            rows = [(path, await client.content_summary(path))]
        else:
            rows = [
                (
                    path.rstrip("/") + "/" + e.name,
                    await client.content_summary(path.rstrip("/") + "/" + e.name),
                )
                for e in (await client.listing(path) or [])
            ]
        if not rows:
            return
        len_w = max(len(str(s.length)) for _, s in rows)
        used_w = max(len(str(s.space_consumed)) for _, s in rows)
        for p, s in rows:
            print(f"{s.length:<{len_w}}  {s.space_consumed:<{used_w}}  {p}")

    return await _each("du", args.paths, one)


def _quota(value: int, none: str) -> str:
    return none if value < 0 else str(value)


async def _count(client: NameNodeClient, args: argparse.Namespace) -> int:
    async def one(path: str) -> None:
        if await client.stat(path) is None:
            raise _no_such("count", path)
        s = await client.content_summary(path)
        line = f"{s.directory_count:>12} {s.file_count:>12} {s.length:>18} {path}"
        if args.q:
            ns_left = (
                "inf" if s.ns_quota < 0 else str(s.ns_quota - s.file_count - s.directory_count)
            )
            ds_left = "inf" if s.space_quota < 0 else str(s.space_quota - s.space_consumed)
            quotas = (
                f"{_quota(s.ns_quota, 'none'):>12} {ns_left:>15} "
                f"{_quota(s.space_quota, 'none'):>15} {ds_left:>15} "
            )
            line = quotas + line
        print(line)

    return await _each("count", args.paths, one)
