"""The audit log (design §S.7): one line per namespace call, in HDFS's hdfs-audit.log format,
fields separated by tabs:

    allowed=true ugi=alice (auth:SIMPLE) ip=/127.0.0.1 cmd=mkdirs src=/a dst=null
    perm=alice:supergroup:rwxr-xr-x proto=rpc

What the line says is a pure function; the wrapper around each audited ClientProtocol handler
writes it after the call, refused calls too (allowed=false). A thread writes the file,
`<name_dir>/hdfs-audit.log`.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qjm.namenode.types import FileStatus

AUDIT_LOG = "hdfs-audit.log"  # in the NameNode's name dir
_ACTIONS = ("---", "--x", "-w-", "-wx", "r--", "r-x", "rw-", "rwx")


@dataclass(frozen=True)
class Audited:
    """How one ClientProtocol method is audited: HDFS's cmd, its path fields, status or not."""

    cmd: str
    src: str = "src"  # the request field holding the path ("" for none)
    dst: str = ""  # the field holding the destination
    status: bool = False  # logs the path's status after the call (perm=owner:group:mode)


# ClientProtocol method -> how HDFS's FSNamesystem audits it
AUDITED = {
    "getFileInfo": Audited("getfileinfo"),
    "getListing": Audited("listStatus"),
    "getBlockLocations": Audited("open"),
    "getContentSummary": Audited("contentSummary", "path"),
    "mkdirs": Audited("mkdirs", status=True),
    "create": Audited("create", status=True),
    "append": Audited("append", status=True),
    "rename": Audited("rename", dst="dst", status=True),
    "rename2": Audited("rename", dst="dst", status=True),
    "delete": Audited("delete"),
    "setPermission": Audited("setPermission", status=True),
    "setOwner": Audited("setOwner", status=True),
    "setReplication": Audited("setReplication"),
    "setTimes": Audited("setTimes", status=True),
    "truncate": Audited("truncate", status=True),
    "concat": Audited("concat", "srcs", "trg", status=True),
    "recoverLease": Audited("recoverLease"),
    "setQuota": Audited("setQuota", "path"),
    "listCorruptFileBlocks": Audited("listCorruptFileBlocks", "path"),
    "getDatanodeReport": Audited("datanodeReport", ""),
    "checkAccess": Audited("checkAccess", "path"),
}


def permission_text(mode: int) -> str:
    """FsPermission's toString: rwxr-xr-x, with t for the sticky bit."""
    text = "".join(_ACTIONS[(mode >> shift) & 7] for shift in (6, 3, 0))
    if mode & 0o1000:
        text = text[:-1] + ("t" if text[-1] == "x" else "T")
    return text


def audit_line(
    *,
    allowed: bool,
    user: str,
    auth: str,
    ip: str,
    cmd: str,
    src: str | None,
    dst: str | None,
    status: FileStatus | None,
    real_user: str = "",
    proto: str = "rpc",
) -> str:
    """One line of HDFS's audit log; a proxy call's ugi names its real user (design §S.14);
    proto is rpc, or webhdfs for a call that came over WebHDFS (design §W)."""
    perm = (
        "null"
        if status is None
        else f"{status.owner}:{status.group}:{permission_text(status.permission)}"
    )
    ugi = (
        f"{user} (auth:PROXY) via {real_user} (auth:{auth})"
        if real_user
        else f"{user} (auth:{auth})"
    )
    return (
        f"allowed={'true' if allowed else 'false'}\tugi={ugi}\tip=/{ip}\t"
        f"cmd={cmd}\tsrc={src if src is not None else 'null'}\t"
        f"dst={dst if dst is not None else 'null'}\tperm={perm}\tproto={proto}"
    )


def field_text(request: Any, name: str) -> str | None:
    """A request field as the audit line shows it (a list as Java's Arrays.toString)."""
    if not name:
        return None
    value = getattr(request, name, None)
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return "[" + ", ".join(str(v) for v in value) + "]"


class AuditLog:
    """An audit log file written by its own thread, so no call waits on the disk."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lines: queue.SimpleQueue[tuple[float, str] | None] = queue.SimpleQueue()
        self._file = path.open("a", encoding="utf-8")
        self._thread = threading.Thread(target=self._run, name="audit-log", daemon=True)
        self._thread.start()

    def write(self, line: str) -> None:
        """Queue one line (stamped now)."""
        self._lines.put((time.time(), line))

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued, then close the file."""
        self._lines.put(None)
        self._thread.join(timeout)

    def _run(self) -> None:
        with self._file:
            while (item := self._lines.get()) is not None:
                when, line = item
                stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(when))
                millis = int(when * 1000) % 1000
                self._file.write(f"{stamp},{millis:03d} INFO FSNamesystem.audit: {line}\n")
                if self._lines.empty():
                    self._file.flush()


Handler = Callable[[Any, Any], Awaitable[Any]]


def audited(
    method: str,
    handler: Handler,
    stat: Callable[[str], FileStatus | None],
    auth: str,
    sink: Callable[[], AuditLog | None],
) -> Handler:
    """handler, writing an audit line to sink() after each call (stat: a path's status)."""
    spec = AUDITED[method]

    async def call(request: Any, ctx: Any) -> Any:
        if sink() is None:
            return await handler(request, ctx)
        try:
            answer = await handler(request, ctx)
        except Exception as e:
            # as HDFS: a refusal is logged (allowed=false), other failures are not
            if getattr(e, "java_class", "") == ACCESS_CONTROL:
                write(request, ctx, allowed=False)
            raise
        write(request, ctx, allowed=True)
        return answer

    def write(request: Any, ctx: Any, *, allowed: bool) -> None:
        src, dst = field_text(request, spec.src), field_text(request, spec.dst)
        status = None
        if allowed and spec.status:
            target = dst if dst is not None else src
            status = stat(target) if target else None
        ip = ctx.peer.rpartition(":")[0].strip("[]") or ctx.peer
        out = sink()
        if out is None:
            return
        out.write(
            audit_line(
                allowed=allowed,
                user=ctx.principal or ctx.user,
                auth=ctx.auth if getattr(ctx, "auth", "SIMPLE") != "SIMPLE" else auth,
                ip=ip,
                cmd=spec.cmd,
                src=src,
                dst=dst,
                status=status,
                real_user=getattr(ctx, "real_user", ""),
                proto="webhdfs" if getattr(ctx, "protocol", "") == "webhdfs" else "rpc",
            )
        )

    return call


ACCESS_CONTROL = "org.apache.hadoop.security.AccessControlException"
