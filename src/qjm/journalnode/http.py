"""The JournalNode's HTTP server: /getJournal, /status, /metrics, a status page, and /jmx,
/conf and /logs/ as every daemon's (design §N.11)."""

from __future__ import annotations

import asyncio
import html
import json
import logging
import os
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from qjm.errors import QjmError
from qjm.hdfs.servlets import add_operator_routes, rpc_activity_bean
from qjm.protocol.errors import (
    InvalidRequestError,
    JournalNotFormattedError,
    StorageInfoMismatchError,
)
from qjm.protocol.status import describe_member_change, describe_segments, node_status_dict
from qjm.protocol.urls import GET_JOURNAL_PATH, parse_get_journal_query
from qjm.security.http import server_middlewares

if TYPE_CHECKING:
    from qjm.journalnode.journal import JournalCounters
    from qjm.journalnode.node import JournalNode

CHUNK = 1 << 20
log = logging.getLogger("qjm.journalnode.http")
NODE_KEY = web.AppKey("node", object)


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


async def get_journal(request: web.Request) -> web.StreamResponse:
    """Stream a segment: finalized, or in progress when inProgressOk=true."""
    node: JournalNode = request.app[NODE_KEY]  # type: ignore[assignment]
    try:
        q = parse_get_journal_query(request.query)
        jid, txid, in_progress_ok = q.jid, q.segment_txid, q.in_progress_ok
        found = await node.run(jid, lambda j: j.segment_for(q))
    except InvalidRequestError as e:
        return _error(400, str(e))
    except JournalNotFormattedError as e:
        return _error(404, str(e))
    except StorageInfoMismatchError as e:
        log.warning("refused a segment fetch from %s: %s", request.remote, e)
        return _error(403, str(e))
    except QjmError as e:
        return _error(500, str(e))
    if found is None:
        kind = "segment" if in_progress_ok else "finalized segment"
        return _error(404, f"no {kind} starting at txid {txid} in journal {jid!r}")
    path, length = found
    loop = asyncio.get_running_loop()
    try:
        fd = await loop.run_in_executor(None, os.open, path, os.O_RDONLY)
    except FileNotFoundError:
        return _error(404, f"segment {path.name} of journal {jid!r} went away; retry")
    try:
        resp = web.StreamResponse(
            headers={
                "Content-Type": "application/octet-stream",
                "Content-Length": str(length),
                "X-Qjm-Segment": path.name,
            }
        )
        await resp.prepare(request)
        offset = 0
        while offset < length:
            want = min(CHUNK, length - offset)
            chunk = await loop.run_in_executor(None, os.pread, fd, want, offset)
            if not chunk:
                break
            await resp.write(chunk)
            offset += len(chunk)
        await resp.write_eof()
        return resp
    finally:
        os.close(fd)


async def status_json(request: web.Request) -> web.Response:
    """The node's status as JSON."""
    node: JournalNode = request.app[NODE_KEY]  # type: ignore[assignment]
    st = node_status_dict(await node.node_status())
    st["rpc"] = node.ipc_stats()
    return web.json_response(st, dumps=lambda o: json.dumps(o, indent=2))


async def metrics(request: web.Request) -> web.Response:
    """Prometheus text exposition."""
    node: JournalNode = request.app[NODE_KEY]  # type: ignore[assignment]
    body = generate_latest(node.metrics.registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


JMX_JN_INFO = "Hadoop:service=JournalNode,name=JournalNodeInfo"


def journal_bean_name(jid: str) -> str:
    """The ObjectName of one journal's metrics bean, as HDFS's JournalMetrics."""
    return f"Hadoop:service=JournalNode,name=Journal-{jid}"


def jmx_beans(
    st: dict[str, Any], counters: dict[str, JournalCounters], hostname: str
) -> list[dict[str, Any]]:
    """HDFS's Journal-<jid> beans (one per open journal) and JournalNodeInfo, from a
    node_status_dict and each open journal's counters (design §N.11)."""
    beans: list[dict[str, Any]] = []
    statuses = st["journals"]
    for jid in sorted(statuses):
        j = statuses[jid]
        c = counters.get(jid)
        if c is None or not j["formatted"]:
            continue
        committed = j["committed_txid"] if j["committed_txid"] is not None else 0
        beans.append(
            {
                "name": journal_bean_name(jid),
                "modelerType": f"Journal-{jid}",
                "tag.Context": "dfs",
                "tag.Hostname": hostname,
                "BatchesWritten": c.batches_written,
                "TxnsWritten": c.txns_written,
                "BytesWritten": c.bytes_written,
                "BatchesWrittenWhileLagging": c.batches_written_while_lagging,
                "TxnsServedViaRpc": c.txns_served_via_rpc,
                "BytesServedViaRpc": c.bytes_served_via_rpc,
                "RpcEmptyResponses": c.rpc_empty_responses,
                "RpcRequestCacheMissAmountNumMisses": c.rpc_cache_misses,
                "NumEditLogsSynced": c.segments_synced,
                "LastWriterEpoch": j["last_writer_epoch"],
                "LastPromisedEpoch": j["last_promised_epoch"],
                "LastWrittenTxId": j["highest_written_txid"],
                "CurrentLagTxns": max(committed - j["highest_written_txid"], 0),
                "LastJournalTimestamp": int(c.last_journal_timestamp * 1000),
            }
        )
    journals_status = {
        jid: {"Formatted": str(j["formatted"]).lower()} for jid, j in statuses.items()
    }
    cluster_ids = sorted({j["cluster_id"] for j in statuses.values() if j.get("cluster_id")})
    beans.append(
        {
            "name": JMX_JN_INFO,
            "modelerType": "org.apache.hadoop.hdfs.qjournal.server.JournalNode",
            "JournalsStatus": json.dumps(journals_status),
            "ClusterIds": cluster_ids,
            "Version": st["version"],
            "HostAndPort": st["rpc_address"],
        }
    )
    return beans


async def journalnode_beans(node: JournalNode) -> list[dict[str, Any]]:
    """Every bean /jmx serves."""
    st = node_status_dict(await node.node_status())
    counters = {j.jid: j.counters for j in node.journals()}
    host = socket.gethostname()
    rpc = rpc_activity_bean("JournalNode", node.rpc_port, node.ipc_stats(), host)
    return jmx_beans(st, counters, host) + ([rpc] if rpc else [])


async def status_page(request: web.Request) -> web.Response:
    """A small human status page that refreshes itself."""
    node: JournalNode = request.app[NODE_KEY]  # type: ignore[assignment]
    st = node_status_dict(await node.node_status())
    rows = []
    for j in st["journals"].values():
        cells = [
            j["jid"],
            "yes" if j["formatted"] else "no",
            str(j.get("namespace_id", "-")),
            str(j["last_promised_epoch"]),
            str(j["last_writer_epoch"]),
            str(j["committed_txid"] if j["committed_txid"] is not None else "-"),
            str(j["highest_written_txid"]),
            describe_segments(j["segments"]),
            "; ".join(j["members"]) or "-",
            describe_member_change(j) or "-",
            "; ".join(j["problems"]) or "-",
        ]
        rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    heads = [
        "journal",
        "formatted",
        "namespace",
        "promised epoch",
        "writer epoch",
        "committed txid",
        "last written txid",
        "segments",
        "members",
        "last member change",
        "problems",
    ]
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><meta http-equiv="refresh" content="2">
<title>JournalNode {html.escape(st["rpc_address"])}</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px 10px;text-align:left}}th{{background:#eee}}</style>
</head><body>
<h1>JournalNode {html.escape(st["rpc_address"])}</h1>
<p>HTTP {html.escape(st["http_address"])} &middot; version {html.escape(st["version"])}
&middot; <a href="/status">status JSON</a> &middot; <a href="/metrics">metrics</a></p>
<table><tr>{"".join(f"<th>{h}</th>" for h in heads)}</tr>
{"".join(rows) or '<tr><td colspan="11">no journals yet</td></tr>'}
</table></body></html>"""
    return web.Response(text=page, content_type="text/html")


def make_app(node: JournalNode) -> web.Application:
    """The aiohttp application of one JournalNode."""
    app = web.Application(middlewares=server_middlewares())  # SPNEGO under Kerberos
    app[NODE_KEY] = node
    app.router.add_get(GET_JOURNAL_PATH, get_journal)
    app.router.add_get("/status", status_json)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/", status_page)
    add_operator_routes(  # /jmx, /conf, /logs/ (design §N.11)
        app,
        lambda: journalnode_beans(node),
        lambda: node.conf_source(),
    )
    return app


class _Refuse(asyncio.Protocol):
    """Answers a connection past the cap with a 503 and closes it cleanly."""

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Send the 503, half-close, and drop the connection shortly after."""
        # uvloop's transports implement asyncio.Transport without subclassing it.
        transport = cast(asyncio.Transport, transport)
        body = json.dumps(
            {
                "error": f"too many HTTP connections: the limit is {self.limit} "
                "(journalnode.http_max_connections); retry later"
            }
        ).encode()
        transport.write(
            b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            + body
        )
        if transport.can_write_eof():
            transport.write_eof()
        asyncio.get_running_loop().call_later(1.0, transport.close)

    def data_received(self, data: bytes) -> None:
        """Discard the request; closing with it unread would reset the connection."""


def capped_factory(runner: web.AppRunner, limit: int) -> Callable[[], asyncio.BaseProtocol]:
    """aiohttp's protocol factory behind a cap on concurrent connections."""

    def factory() -> asyncio.BaseProtocol:
        server = runner.server
        assert server is not None
        if len(server.connections) >= limit:
            log.warning(
                "refusing an HTTP connection: %d open, journalnode.http_max_connections = %d",
                len(server.connections),
                limit,
            )
            return _Refuse(limit)
        return server()

    return factory
