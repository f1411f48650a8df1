"""A NameNodeService for RPC-layer tests: a namespace in memory, no edit log, standby by a flag.

FakeNameNode.read returns its namespace and write runs plan + apply as the real NameNode
does (without logging); standby=True makes every namespace call raise StandbyError.
"""

from __future__ import annotations

import asyncio
import getpass
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from qjm.config import NameNodeSettings
from qjm.ipc.server import CallContext, IpcServer
from qjm.namenode.client_rpc import client_methods
from qjm.namenode.errors import (
    FileAlreadyExistsError,
    HealthCheckFailedError,
    ParentNotDirectoryError,
    PathIsNotEmptyDirectoryError,
    PathNotFoundError,
    ServiceFailedError,
    StandbyError,
)
from qjm.namenode.ha_rpc import ha_methods
from qjm.namenode.protocols import CLIENT_PROTOCOL, HA_SERVICE_PROTOCOL
from qjm.namenode.types import Caller, ContentSummary, FileStatus, HAState

try:  # the real namespace once it is there
    from qjm.namenode.namespace import Namespace as _RealNamespace

    HAVE_REAL_NAMESPACE = hasattr(_RealNamespace, "plan_mkdirs")
except ImportError:  # pragma: no cover
    HAVE_REAL_NAMESPACE = False


@dataclass
class _Node:
    is_dir: bool
    permission: int
    owner: str
    group: str
    mtime: int
    file_id: int
    replication: int = 0
    block_size: int = 0
    client: str | None = None
    quota: tuple[int, int] = (-1, -1)
    children: dict[str, _Node] = field(default_factory=dict)


def _parts(path: str) -> list[str]:
    return [p for p in path.split("/") if p]


class MiniNamespace:
    """The Namespace API over a dict tree: enough semantics to test translation, no permissions."""

    def __init__(self, *, superuser: str = "root", **_: Any) -> None:
        self.last_inode_id = 16385
        self.root = _Node(True, 0o755, superuser, "supergroup", 0, 16385)

    def _find(self, path: str) -> _Node | None:
        node = self.root
        for part in _parts(path):
            if not node.is_dir or part not in node.children:
                return None
            node = node.children[part]
        return node

    def _parent(self, path: str) -> tuple[_Node, str]:
        parts = _parts(path)
        parent = self._find("/" + "/".join(parts[:-1]))
        if parent is None:
            raise PathNotFoundError(f"Parent directory doesn't exist: {path}")
        if not parent.is_dir:
            raise ParentNotDirectoryError(f"Parent path is not a directory: {path}")
        return parent, parts[-1]

    def _status(self, name: str, n: _Node) -> FileStatus:
        return FileStatus(
            name=name,
            is_dir=n.is_dir,
            length=0,
            permission=n.permission,
            owner=n.owner,
            group=n.group,
            mtime=n.mtime,
            atime=0 if n.is_dir else n.mtime,
            replication=n.replication,
            block_size=n.block_size,
            file_id=n.file_id,
            children=len(n.children) if n.is_dir else -1,
            under_construction=n.client is not None,
        )

    def __len__(self) -> int:
        def count(n: _Node) -> int:
            return 1 + sum(count(c) for c in n.children.values())

        return count(self.root)

    def stat(self, path: str, caller: Caller) -> FileStatus | None:
        n = self._find(path)
        return None if n is None else self._status((_parts(path) or [""])[-1], n)

    def listing(
        self, path: str, caller: Caller, start_after: str = "", limit: int = 1000
    ) -> tuple[list[FileStatus], int] | None:
        n = self._find(path)
        if n is None:
            return None
        if not n.is_dir:
            return [self._status(_parts(path)[-1], n)], 0
        names = sorted(k for k in n.children if k > start_after)
        page = names[:limit]
        return [self._status(k, n.children[k]) for k in page], len(names) - len(page)

    def content_summary(self, path: str, caller: Caller) -> ContentSummary:
        n = self._find(path)
        if n is None:
            raise PathNotFoundError(f"File does not exist: {path}")
        files = dirs = 0
        todo = [n]
        while todo:
            m = todo.pop()
            if m.is_dir:
                dirs += 1
                todo.extend(m.children.values())
            else:
                files += 1
        return ContentSummary(0, files, dirs, n.quota[0], 0, n.quota[1])

    # plans return closures as "ops"; apply runs them
    def plan_mkdirs(
        self, path: str, caller: Caller, permission: int, create_parent: bool, now_ms: int
    ) -> list[Any]:
        n = self._find(path)
        if n is not None:
            if n.is_dir:
                return []
            raise FileAlreadyExistsError(f"Path is not a directory: {path}")
        parts = _parts(path)
        ops: list[Any] = []
        if not create_parent:
            self._parent(path)
        for i in range(1, len(parts) + 1):
            sub = "/" + "/".join(parts[:i])
            if self._find(sub) is None:
                ops.append(("mkdir", sub, permission, caller.user, now_ms))
        return ops

    def plan_create(
        self,
        path: str,
        caller: Caller,
        permission: int,
        overwrite: bool,
        create_parent: bool,
        replication: int,
        block_size: int,
        client_name: str,
        client_machine: str,
        now_ms: int,
        rpc: Any,
    ) -> list[Any]:
        ops: list[Any] = []
        n = self._find(path)
        if n is not None:
            if n.is_dir or not overwrite:
                raise FileAlreadyExistsError(f"{path} already exists")
            ops.append(("delete", path))
        if create_parent:
            parent = "/" + "/".join(_parts(path)[:-1])
            ops += self.plan_mkdirs(parent, caller, 0o755, True, now_ms)
        else:
            self._parent(path)
        ops.append(
            ("add", path, permission, caller.user, now_ms, replication, block_size, client_name)
        )
        return ops

    def plan_complete(
        self, path: str, caller: Caller, client_name: str, file_id: int, now_ms: int
    ) -> list[Any]:
        n = self._find(path)
        if n is None:
            raise PathNotFoundError(f"File does not exist: {path}")
        return [] if n.client is None else [("close", path)]

    def plan_rename(self, src: str, dst: str, caller: Caller, now_ms: int, rpc: Any) -> list[Any]:
        if self._find(src) is None or self._find(dst) is not None:
            return []
        return [("rename", src, dst)]

    def plan_rename2(
        self, src: str, dst: str, caller: Caller, overwrite: bool, now_ms: int, rpc: Any
    ) -> list[Any]:
        if self._find(src) is None:
            raise PathNotFoundError(f"rename source {src} is not found.")
        if self._find(dst) is not None and not overwrite:
            raise FileAlreadyExistsError(f"rename destination {dst} already exists.")
        ops: list[Any] = [("delete", dst)] if self._find(dst) is not None else []
        return [*ops, ("rename", src, dst)]

    def plan_delete(
        self, path: str, caller: Caller, recursive: bool, now_ms: int, rpc: Any
    ) -> list[Any]:
        n = self._find(path)
        if n is None:
            return []
        if n.children and not recursive:
            raise PathIsNotEmptyDirectoryError(f"{path} is non empty")
        return [("delete", path)]

    def plan_set_permission(self, path: str, caller: Caller, permission: int) -> list[Any]:
        self._must(path)
        return [("set", path, "permission", permission)]

    def plan_set_owner(
        self, path: str, caller: Caller, owner: str | None, group: str | None
    ) -> list[Any]:
        self._must(path)
        ops: list[Any] = []
        if owner is not None:
            ops.append(("set", path, "owner", owner))
        if group is not None:
            ops.append(("set", path, "group", group))
        return ops

    def plan_set_replication(self, path: str, caller: Caller, replication: int) -> list[Any]:
        n = self._must(path)
        return [] if n.is_dir else [("set", path, "replication", replication)]

    def plan_set_times(self, path: str, caller: Caller, mtime: int, atime: int) -> list[Any]:
        self._must(path)
        return [] if mtime == -1 else [("set", path, "mtime", mtime)]

    def plan_set_quota(self, path: str, caller: Caller, ns_quota: int, ds_quota: int) -> list[Any]:
        n = self._must(path)
        if not n.is_dir:
            raise PathNotFoundError(f"{path}: quotas are set on directories only")
        return [("set", path, "quota", (ns_quota, ds_quota))]

    def _must(self, path: str) -> _Node:
        n = self._find(path)
        if n is None:
            raise PathNotFoundError(f"File does not exist: {path}")
        return n

    def apply(self, op: Any) -> None:
        kind, path = op[0], op[1]
        if kind == "mkdir":
            parent, name = self._parent(path)
            self.last_inode_id += 1
            parent.children[name] = _Node(
                True, op[2], op[3], "supergroup", op[4], self.last_inode_id
            )
        elif kind == "add":
            parent, name = self._parent(path)
            self.last_inode_id += 1
            parent.children[name] = _Node(
                False, op[2], op[3], "supergroup", op[4], self.last_inode_id, op[5], op[6], op[7]
            )
        elif kind == "close":
            self._must(path).client = None
        elif kind == "delete":
            parent, name = self._parent(path)
            del parent.children[name]
        elif kind == "rename":
            parent, name = self._parent(path)
            node = parent.children.pop(name)
            new_parent, new_name = self._parent(op[2])
            new_parent.children[new_name] = node
        elif kind == "set":
            setattr(self._must(path), op[2], op[3])


def make_namespace(superuser: str) -> Any:
    """The real Namespace when it is there, else MiniNamespace."""
    if HAVE_REAL_NAMESPACE:
        return _RealNamespace(superuser=superuser)
    return MiniNamespace(superuser=superuser)


class FakeNameNode:
    """NameNodeService over an in-memory namespace; txid counts applied ops."""

    def __init__(self, *, standby: bool = False, superuser: str | None = None) -> None:
        self.superuser = superuser or getpass.getuser()
        self.settings = NameNodeSettings()
        self.ns = make_namespace(self.superuser)
        self.standby = standby
        self.txid = 0
        self.healthy = True
        self.transitions: list[tuple[str, str]] = []
        self.calls: list[str] = []  # methods that reached read/write
        self.state_ids: list[int | None] = []

    def caller_of(self, ctx: CallContext) -> Caller:
        return Caller(ctx.user, ("supergroup",), ctx.user == self.superuser)

    def _check(self, ctx: CallContext) -> None:
        self.calls.append(ctx.method)
        self.state_ids.append(ctx.state_id)
        if self.standby:
            raise StandbyError(
                f"Operation category {ctx.method} is not supported in state standby. "
                "Visit https://s.apache.org/sbnn-error"
            )

    async def read(self, ctx: CallContext) -> Any:
        self._check(ctx)
        return self.ns

    async def write(self, ctx: CallContext, plan: Callable[[Any], list[Any]]) -> list[Any]:
        self._check(ctx)
        ops = plan(self.ns)
        for op in ops:
            self.ns.apply(op)
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
        if not self.healthy:
            raise ServiceFailedError("cannot become active: the test made it unhealthy")
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
