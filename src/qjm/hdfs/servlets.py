"""What every HDFS daemon serves operators on its HTTP port, for every qjm daemon (design
§N.11): /jmx as HDFS's JMXJsonServlet, /conf as its ConfServlet and /logs/ as HttpServer2's
log directory. Each daemon hands in its beans and its configuration; the rules are here.
"""

from __future__ import annotations

import asyncio
import fnmatch
import html
import json
import os
import stat
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote
from xml.sax.saxutils import escape

from aiohttp import web

from qjm.logs import LOG_DIR_ENV, log_dir
from qjm.security.http import http_security

Bean = dict[str, Any]
BeanSource = Callable[[], Awaitable[list[Bean]]]
ConfSource = Callable[[], list[tuple[str, str, str]]]
JSON_TYPE = "application/json"
LOG_CHUNK = 1 << 16


def _parse_object_name(name: str) -> tuple[str, dict[str, str], bool] | None:
    """(domain, key properties, property-list pattern) of a JMX ObjectName, None when it is
    not one (no domain separator, or a key property without '=')."""
    domain, sep, rest = name.partition(":")
    if not sep or not rest:
        return None
    props: dict[str, str] = {}
    wildcard = False
    for part in rest.split(","):
        if part == "*":
            wildcard = True
            continue
        key, eq, value = part.partition("=")
        if not eq or not key:
            return None
        props[key] = value
    return domain, props, wildcard


def bean_matches(name: str, pattern: str) -> bool:
    """Whether a bean's ObjectName matches a JMX query pattern as ObjectName.apply does:
    domain and values may hold * and ?, a trailing ,* admits more key properties."""
    got, want = _parse_object_name(name), _parse_object_name(pattern)
    if got is None or want is None:
        return False
    domain, props, _ = got
    want_domain, want_props, more = want
    if not fnmatch.fnmatchcase(domain, want_domain):
        return False
    if not more and set(props) != set(want_props):
        return False
    return all(k in props and fnmatch.fnmatchcase(props[k], v) for k, v in want_props.items())


def select_beans(beans: list[Bean], query: Mapping[str, str]) -> tuple[int, dict[str, Any]]:
    """(HTTP status, body) of a /jmx request: every bean, those `qry` matches, or the one
    attribute `get=BEAN::ATTR` names; errors as JMXJsonServlet writes them."""
    get = query.get("get")
    if get is not None:
        parts = get.split("::")
        if len(parts) != 2 or not all(parts):
            return 400, {"result": "ERROR", "message": "query format is not as expected."}
        name, attr = parts
        for bean in beans:
            if bean["name"] == name:
                if attr not in bean:
                    return 404, {
                        "result": "ERROR",
                        "message": f"No attribute with name {attr} was found.",
                    }
                return 200, {
                    "beans": [{"name": name, "modelerType": bean["modelerType"], attr: bean[attr]}]
                }
        return 404, {"result": "ERROR", "message": f"No bean with name {name} was found."}
    pattern = query.get("qry", "*:*")
    if _parse_object_name(pattern) is None:  # not an ObjectName: a glob on the whole name
        return 200, {"beans": [b for b in beans if fnmatch.fnmatchcase(b["name"], pattern)]}
    return 200, {"beans": [b for b in beans if bean_matches(b["name"], pattern)]}


def rpc_activity_bean(
    service: str, port: int, stats: Mapping[str, int], hostname: str
) -> Bean | None:
    """Hadoop IPC's RpcActivityForPort<port> bean from an IPC server's counters (None before
    it started): the counts qjm keeps, no latency figures (design §N.11)."""
    if not stats:
        return None
    return {
        "name": f"Hadoop:service={service},name=RpcActivityForPort{port}",
        "modelerType": f"RpcActivityForPort{port}",
        "tag.port": str(port),
        "tag.Context": "rpc",
        "tag.Hostname": hostname,
        "ReceivedBytes": stats["bytes_in"],
        "SentBytes": stats["bytes_out"],
        "RpcQueueTimeNumOps": stats["calls"],
        "RpcAuthenticationFailures": stats["auth_failures"],
        "NumOpenConnections": stats["connections"],
    }


def conf_xml(props: list[tuple[str, str, str]]) -> str:
    """A configuration as Hadoop's Configuration.writeXml writes it (final, source)."""
    body = "".join(
        f"<property><name>{escape(k)}</name><value>{escape(v)}</value><final>false</final>"
        f"<source>{escape(r)}</source></property>"
        for k, v, r in props
    )
    return (
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>'
        f"<configuration>{body}</configuration>\n"
    )


def conf_json(props: list[tuple[str, str, str]]) -> dict[str, Any]:
    """A configuration as Configuration.dumpConfiguration writes it."""
    return {
        "properties": [{"key": k, "value": v, "isFinal": False, "resource": r} for k, v, r in props]
    }


def conf_response(props: list[tuple[str, str, str]], query: Mapping[str, str]) -> web.Response:
    """GET /conf[?format=xml|json][&name=KEY] as HDFS's ConfServlet answers it."""
    fmt = query.get("format", "xml")
    if fmt not in ("xml", "json"):
        return web.Response(status=400, text=f"Bad format: {fmt}")
    name = query.get("name")
    if name is not None:
        props = [p for p in props if p[0] == name]
        if not props:
            return web.Response(status=404, text=f"Property {name} not found")
        if fmt == "json":
            k, v, r = props[0]
            one = {"property": {"key": k, "value": v, "isFinal": False, "resource": r}}
            return web.json_response(one)
    if fmt == "json":
        return web.json_response(conf_json(props))
    return web.Response(text=conf_xml(props), content_type="text/xml", charset="utf-8")


def log_file(directory: Path, relative: str) -> Path | None:
    """The path under directory that relative names, None when it would leave it (.., an
    absolute path, a link out of it)."""
    if "\x00" in relative:
        return None
    root = directory.resolve()
    target = (root / relative.lstrip("/")).resolve()
    if target != root and root not in target.parents:
        return None
    return target


def listing_html(directory: Path, relative: str) -> str:
    """A directory's entries as HttpServer2's /logs/ lists them: a link per name."""
    rows = []
    for entry in sorted(directory.iterdir(), key=lambda p: p.name):
        try:
            st = entry.stat()
        except OSError:
            continue
        slash = "/" if stat.S_ISDIR(st.st_mode) else ""
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(st.st_mtime))
        rows.append(
            f'<tr><td><a href="{quote(entry.name)}{slash}">{html.escape(entry.name)}{slash}</a>'
            f"</td><td>{st.st_size}</td><td>{when}</td></tr>"
        )
    title = html.escape(f"/logs/{relative}")
    return (
        f"<!doctype html><html><head><title>Directory: {title}</title></head><body>"
        f"<h1>Directory: {title}</h1><table><tr><th>Name</th><th>Size</th>"
        f"<th>Last Modified (UTC)</th></tr>{''.join(rows)}</table></body></html>"
    )


async def serve_logs(request: web.Request) -> web.StreamResponse:
    """GET /logs/PATH: the daemon's log directory (QJM_LOG_DIR), read-only: a listing, or a
    file's bytes as text; 404 for a path outside it or without a log directory."""
    directory = log_dir()
    if directory is None:
        return web.Response(
            status=404, text=f"this daemon has no log directory ({LOG_DIR_ENV} is not set)"
        )
    relative = request.match_info.get("path", "")
    target = log_file(directory, relative)
    if target is None:
        return web.Response(status=404, text=f"not under the log directory: {relative}")
    loop = asyncio.get_running_loop()
    try:
        st = await loop.run_in_executor(None, os.stat, target)
    except OSError:
        return web.Response(status=404, text=f"no such log file: {relative}")
    if stat.S_ISDIR(st.st_mode):
        if relative and not relative.endswith("/"):
            raise web.HTTPFound(f"/logs/{relative}/")
        page = await loop.run_in_executor(None, listing_html, target, relative)
        return web.Response(text=page, content_type="text/html")
    if not stat.S_ISREG(st.st_mode):
        return web.Response(status=404, text=f"not a log file: {relative}")
    resp = web.StreamResponse(
        headers={"Content-Type": "text/plain; charset=utf-8", "Content-Length": str(st.st_size)}
    )
    await resp.prepare(request)
    fd = await loop.run_in_executor(None, os.open, target, os.O_RDONLY)
    try:
        offset = 0
        while offset < st.st_size:  # what the file held when asked; it may grow meanwhile
            chunk = await loop.run_in_executor(
                None, os.pread, fd, min(LOG_CHUNK, st.st_size - offset), offset
            )
            if not chunk:
                break
            await resp.write(chunk)
            offset += len(chunk)
    finally:
        os.close(fd)
    await resp.write_eof()
    return resp


def refusal(request: web.Request, *, instrumentation: bool) -> web.Response | None:
    """403 unless the caller may read the path, as HttpServer2: without Kerberos everyone;
    under it /logs/ needs an administrator (dfs.cluster.administrators), and /jmx and /conf
    one too only with instrumentation_requires_admin (design §N.11)."""
    security = http_security()[0]
    if security is None:
        return None
    if instrumentation and not security.instrumentation_requires_admin:
        return None
    user = str(request.get("user", ""))
    if user and security.administrator(user):
        return None
    return web.Response(
        status=403,
        text=f"User {user or '(unauthenticated)'} is unauthorized to access this page.\n",
    )


def add_operator_routes(app: web.Application, beans: BeanSource, conf: ConfSource) -> None:
    """Add /jmx, /conf and /logs/ to a daemon's application (design §N.11)."""

    async def jmx(request: web.Request) -> web.Response:
        refused = refusal(request, instrumentation=True)
        if refused is not None:
            return refused
        status, body = select_beans(await beans(), request.query)
        return web.Response(
            status=status,
            text=json.dumps(body, indent=2),
            content_type=JSON_TYPE,
            charset="utf-8",
        )

    async def conf_handler(request: web.Request) -> web.Response:
        return refusal(request, instrumentation=True) or conf_response(conf(), request.query)

    async def logs(request: web.Request) -> web.StreamResponse:
        return refusal(request, instrumentation=False) or await serve_logs(request)

    async def logs_root(request: web.Request) -> web.Response:
        raise web.HTTPFound("/logs/")

    app.router.add_get("/jmx", jmx)
    app.router.add_get("/conf", conf_handler)
    app.router.add_get("/logs", logs_root)
    app.router.add_get("/logs/{path:.*}", logs)
