"""GET /fsck on the NameNode's HTTP port: HDFS's FsckServlet, what `hdfs fsck` and `qjm fsck`
read (query: path, ugi, files, blocks, locations, racks, replicadetails, openforwrite,
listcorruptfileblocks, startblockafter).

The active walks the subtree by path in listing order and streams the report as it goes,
handing the event loop back every WALK_BATCH paths; a standby, or an active deposed during
the walk, ends the report with HDFS's "Fsck on path 'P' FAILED" (design §B.17).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from aiohttp import web

from qjm.namenode import fsck
from qjm.namenode.errors import NamenodeError
from qjm.namenode.inodes import DIRECTORY, FILE

if TYPE_CHECKING:
    from qjm.namenode.server import NameNode

WALK_BATCH = 1000  # paths judged between two hand-backs of the event loop


def options_of(query: Mapping[str, str]) -> fsck.FsckOptions:
    """The report's flags from the servlet's query (present means on, as HDFS's)."""
    return fsck.FsckOptions(
        files="files" in query,
        blocks="blocks" in query,
        locations="locations" in query,
        racks="racks" in query,
        replica_details="replicadetails" in query,
        open_for_write="openforwrite" in query,
    )


async def serve_fsck(nn: NameNode, request: web.Request) -> web.StreamResponse:
    """Stream fsck's report of the query's path (text/plain)."""
    q = request.query
    path = q.get("path", "/") or "/"
    # under Kerberos the authenticated user (design §S.5), never the one the query claims
    user = request.get("user") or q.get("ugi") or q.get("user.name") or "dr.who"
    resp = web.StreamResponse(headers={"Content-Type": "text/plain; charset=utf-8"})
    await resp.prepare(request)
    began, t0 = time.time(), time.monotonic()

    def took_ms() -> int:
        return int((time.monotonic() - t0) * 1000)

    remote = request.remote or "unknown"
    await resp.write(fsck.started_line(user, remote, path, began).encode())
    try:
        caller = nn.caller_named(user)
        if not caller.superuser:
            raise PermissionError(f"Access denied for user {user}. Superuser privilege is required")
        ns, answer_check = await nn.read_as_active()
        if ns.fsck_entry(path) is None:
            await resp.write(fsck.nonexistent_line(path).encode())
        elif "listcorruptfileblocks" in q:
            start = _int(q.get("startblockafter", "0"))
            rows, cookie = nn.blocks.corrupt_files(ns, path, start)
            await resp.write(fsck.corrupt_files_text(path, rows, cookie, start).encode())
        else:
            res = fsck.FsckResult(nn.settings.default_replication, nn.blocks.bm.min_replication)
            await _walk(nn, path, options_of(q), res, resp)
            refused = answer_check()
            if refused is not None:
                raise refused
            datanodes = len(nn.blocks.dm.live_nodes())
            await resp.write(("\n" + res.summary(datanodes)).encode())
            await resp.write(fsck.ended_lines(path, res, time.time(), took_ms()).encode())
    except (NamenodeError, PermissionError) as e:
        await resp.write(fsck.failed_lines(path, str(e), time.time(), took_ms()).encode())
    await resp.write_eof()
    return resp


async def _walk(
    nn: NameNode, root: str, opts: fsck.FsckOptions, res: fsck.FsckResult, resp: web.StreamResponse
) -> None:
    """Judge every path under root, depth first in listing order, streaming the lines."""
    stack = [root]
    out: list[str] = []
    done = 0
    while stack:
        entry = nn.ns.fsck_entry(stack.pop())
        if entry is None:  # deleted since its directory was listed: HDFS skips it too
            continue
        if entry.kind == DIRECTORY:
            out.append(fsck.check_dir(entry.path, opts, res))
            base = entry.path.rstrip("/") + "/"
            stack.extend(base + name for name in reversed(entry.children))
        elif entry.kind == FILE:
            views = [nn.blocks.fsck_block(b) for b in entry.blocks]
            out.append(
                fsck.check_file(
                    entry.path,
                    entry.length,
                    entry.replication,
                    views,
                    entry.under_construction,
                    opts,
                    res,
                )
            )
        else:
            out.append(fsck.check_symlink(entry.path, opts, res))
        done += 1
        if done % WALK_BATCH == 0:
            await resp.write("".join(out).encode())
            out.clear()
            await asyncio.sleep(0)
            nn.ha.check_active("READ")  # deposed meanwhile: the report fails, as HDFS's
    await resp.write("".join(out).encode())


def _int(text: str) -> int:
    """A non-negative integer of the query (0 when it is not one)."""
    return int(text) if text.isdigit() else 0
