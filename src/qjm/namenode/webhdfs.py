"""WebHDFS on the NameNode's HTTP port (design §W): `/webhdfs/v1/<path>?op=...`.

Every namespace op runs through the ClientProtocol handlers (the same permission checks,
namespace plans, retry rules and audit log as an RPC call, the audit line saying
proto=webhdfs); answers and errors are HDFS's JSON (qjm.hdfs.webhdfs_json). OPEN, CREATE,
APPEND and GETFILECHECKSUM answer 307 to a DataNode's WebHDFS, which moves the bytes.
"""

from __future__ import annotations

import json
import logging
import os
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web
from google.protobuf.message import Message

from qjm.errors import QjmError, describe_error
from qjm.hdfs import webhdfs_json as wj
from qjm.hdfs.proto import hdfs_pb2 as hdfs
from qjm.hdfs.webhdfs_http import JSON_TYPE, query_of
from qjm.ipc.sasl import proxy_policy, server_security
from qjm.ipc.server import CallContext
from qjm.namenode.client_rpc import MAX_LENGTH, client_methods
from qjm.namenode.errors import NamenodeError, PathNotFoundError
from qjm.namenode.proto import ClientNamenodeProtocol_pb2 as cn

if TYPE_CHECKING:
    from qjm.namenode.blocks.datanode_manager import DatanodeDescriptor
    from qjm.namenode.server import NameNode

log = logging.getLogger("qjm.namenode.webhdfs")
PROTOCOL = "webhdfs"  # CallContext.protocol of a WebHDFS call: its audit line's proto=
DIR_PERMISSION = 0o755  # HDFS's PermissionParam defaults
FILE_PERMISSION = 0o644
MAX_REPLICATION = 512  # dfs.replication.max


KERBEROS_DATA_OPS = (
    "{op} is not served on a Kerberos cluster: its DataNode redirect would need a delegation "
    "token, which WebHDFS does not issue yet"
)


def json_response(body: dict[str, Any], status: int = 200) -> web.Response:
    """An answer with a JSON body, as HDFS writes it."""
    return web.Response(text=json.dumps(body), status=status, content_type=JSON_TYPE)


def error_response(java_class: str, message: str) -> web.Response:
    """HDFS's RemoteException body with its HTTP status."""
    return json_response(wj.remote_exception(java_class, message), wj.http_status(java_class))


class WebHdfs:
    """The NameNode's /webhdfs/v1 handlers over its ClientProtocol handlers."""

    def __init__(self, nn: NameNode) -> None:
        self.nn = nn
        self.handlers = {name: m.handler for name, m in client_methods(nn).items()}
        self.client_id = os.urandom(16)
        self.calls = 0

    # -- plumbing -------------------------------------------------------------------------

    def _context(self, request: web.Request, method: str, caller: WebCaller) -> CallContext:
        self.calls += 1
        peer = request.remote or "?"
        return CallContext(
            protocol=PROTOCOL,
            method=method,
            user=caller.user,
            client_id=self.client_id,
            call_id=self.calls,
            retry_count=0,
            peer=f"{peer}:0",
            principal=caller.principal,
            auth="KERBEROS" if request.get("principal") else "SIMPLE",
            real_user=caller.real_user,
        )

    async def _call(self, request: web.Request, user: WebCaller, method: str, req: Message) -> Any:
        """Run one ClientProtocol handler as the caller; its answer once it may be sent
        (§N.1)."""
        ctx = self._context(request, method, user)
        answer = await self.handlers[method](req, ctx)
        if ctx.answer_check is not None:
            refusal = ctx.answer_check()
            if refusal is not None:
                raise refusal
        return answer

    @staticmethod
    def caller_of(request: web.Request) -> WebCaller:
        """Who calls: SPNEGO's user under Kerberos, else user.name= (HDFS's dr.who without);
        with doas= a proxy acting for that user, if the proxy user rules admit it (§S.14)."""
        query = query_of(request)
        spnego = request.get("user")
        if spnego:
            name = query.get("user.name")
            if name and name != spnego:
                raise wj.WebHdfsError(
                    wj.SECURITY, f"Usernames not matched: name={name} != expected={spnego}"
                )
            real = str(spnego)
        else:
            real = _user_name(query, "user.name") or wj.DEFAULT_USER
        doas = _user_name(query, "doas")
        if not doas or doas == real:
            return WebCaller(real, "", str(request.get("principal", "")))
        principal = str(request.get("principal", "")) or real
        ip = request.remote or ""
        refusal = proxy_policy().refusal(principal, real, doas, ip)
        if refusal is not None:
            raise wj.WebHdfsError(AUTHORIZATION, refusal)
        return WebCaller(doas, real, "")

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Any /webhdfs/v1 request: its op's answer, or HDFS's RemoteException JSON."""
        try:
            op = wj.op_of(request.method, query_of(request))
            path = wj.path_of(request.raw_path)
            caller = self.caller_of(request)
            return await self._dispatch(request, op, path, caller)
        except wj.WebHdfsError as e:
            return error_response(e.java_class, str(e))
        except NamenodeError as e:
            return error_response(e.java_class, str(e))
        except QjmError as e:  # the journal or a lease: an IOException, as HDFS's
            return error_response(wj.IO_EXCEPTION, describe_error(e))
        except Exception as e:  # a bug: HDFS's 500 RuntimeException, never a bare traceback
            log.exception("WebHDFS %s %s failed", request.method, request.path_qs[:200])
            return error_response("java.lang.RuntimeException", f"{type(e).__name__}: {e}")

    async def _dispatch(
        self, request: web.Request, op: str, path: str, user: WebCaller
    ) -> web.StreamResponse:
        if op == "GETFILESTATUS":
            r = await self._call(request, user, "getFileInfo", cn.GetFileInfoRequestProto(src=path))
            if not r.HasField("fs"):
                raise PathNotFoundError(f"File does not exist: {path}")
            return json_response(wj.file_status_body(r.fs))
        if op in ("LISTSTATUS", "LISTSTATUS_BATCH"):
            return await self._list(request, user, path, op == "LISTSTATUS_BATCH")
        if op == "GETCONTENTSUMMARY":
            r = await self._call(
                request, user, "getContentSummary", cn.GetContentSummaryRequestProto(path=path)
            )
            return json_response(wj.content_summary_body(r.summary))
        if op == "GETHOMEDIRECTORY":
            return json_response(wj.home_directory_body(user.user))
        if op == "GETSERVERDEFAULTS":
            r = await self._call(
                request, user, "getServerDefaults", cn.GetServerDefaultsRequestProto()
            )
            return json_response(wj.server_defaults_body(r.serverDefaults))
        if op in ("OPEN", "GETFILECHECKSUM", "CREATE", "APPEND") and server_security() is not None:
            # HDFS's redirect carries a delegation token the DataNode acts with; qjm issues
            # none over HTTP yet, and the DataNode must not act as itself (design §W)
            raise wj.WebHdfsError(wj.UNSUPPORTED, KERBEROS_DATA_OPS.format(op=op))
        if op in ("OPEN", "GETFILECHECKSUM"):
            return await self._redirect_read(request, user, path, op)
        if op in ("CREATE", "APPEND"):
            return await self._redirect_write(request, user, path, op)
        if op == "GETDELEGATIONTOKEN":
            raise wj.WebHdfsError(
                wj.UNSUPPORTED, "GETDELEGATIONTOKEN is not served: this cluster is not secure"
            )
        return await self._namespace_op(request, user, path, op)

    async def _list(
        self, request: web.Request, user: WebCaller, path: str, batch: bool
    ) -> web.Response:
        """LISTSTATUS (every page, as HDFS's NameNode gathers them) or one LISTSTATUS_BATCH
        page after startAfter; a file lists itself."""
        after = query_of(request).get("startAfter", "").encode("utf-8", errors="surrogateescape")
        entries: list[hdfs.HdfsFileStatusProto] = []
        while True:
            req = cn.GetListingRequestProto(src=path, startAfter=after, needLocation=False)
            r = await self._call(request, user, "getListing", req)
            if not r.HasField("dirList"):
                raise PathNotFoundError(f"File {path} does not exist.")
            page = list(r.dirList.partialListing)
            entries.extend(page)
            if batch:
                return json_response(wj.list_batch_body(page, r.dirList.remainingEntries))
            if not r.dirList.remainingEntries or not page:
                return json_response(wj.list_status_body(entries))
            after = page[-1].path

    async def _namespace_op(
        self, request: web.Request, user: WebCaller, path: str, op: str
    ) -> web.Response:
        q = query_of(request)
        req: Message
        if op == "MKDIRS":
            perm = wj.permission_param(q, "permission", DIR_PERMISSION)
            req = cn.MkdirsRequestProto(
                src=path, masked=hdfs.FsPermissionProto(perm=perm), createParent=True
            )
            r = await self._call(request, user, "mkdirs", req)
            return json_response(wj.boolean_body(bool(r.result)))
        if op == "RENAME":
            dst = wj.path_param(q, "destination")
            r = await self._call(request, user, "rename", cn.RenameRequestProto(src=path, dst=dst))
            return json_response(wj.boolean_body(bool(r.result)))
        if op == "DELETE":
            recursive = wj.bool_param(q, "recursive", False)
            req = cn.DeleteRequestProto(src=path, recursive=recursive)
            r = await self._call(request, user, "delete", req)
            return json_response(wj.boolean_body(bool(r.result)))
        if op == "SETPERMISSION":
            perm = wj.permission_param(q, "permission", DIR_PERMISSION)
            req = cn.SetPermissionRequestProto(
                src=path, permission=hdfs.FsPermissionProto(perm=perm)
            )
            await self._call(request, user, "setPermission", req)
            return web.Response(status=200)
        if op == "SETOWNER":
            owner, group = q.get("owner") or None, q.get("group") or None
            if owner is None and group is None:
                raise wj.WebHdfsError(wj.ILLEGAL_ARGUMENT, "Both owner and group are empty.")
            req = cn.SetOwnerRequestProto(src=path, username=owner, groupname=group)
            await self._call(request, user, "setOwner", req)
            return web.Response(status=200)
        if op == "SETREPLICATION":
            rep = wj.long_param(q, "replication", 0, low=1, high=MAX_REPLICATION)
            if rep == 0:  # absent: the default replication, as HDFS's ReplicationParam
                rep = self.nn.settings.default_replication
            req = cn.SetReplicationRequestProto(src=path, replication=rep)
            r = await self._call(request, user, "setReplication", req)
            return json_response(wj.boolean_body(bool(r.result)))
        if op == "SETTIMES":
            mtime = wj.long_param(q, "modificationtime", -1, low=-1)
            atime = wj.long_param(q, "accesstime", -1, low=-1)
            req = cn.SetTimesRequestProto(src=path, mtime=mtime & MAX_U64, atime=atime & MAX_U64)
            await self._call(request, user, "setTimes", req)
            return web.Response(status=200)
        if op == "CONCAT":
            raw = q.get("sources", "")
            sources = [s for s in raw.split(",") if s]
            if not sources:
                raise wj.ParamError("sources", raw, "no source paths")
            req = cn.ConcatRequestProto(trg=path, srcs=sources)
            await self._call(request, user, "concat", req)
            return web.Response(status=200)
        if op == "TRUNCATE":
            length = wj.long_param(q, "newlength", -1)
            if length < 0:
                raise wj.ParamError("newlength", q.get("newlength", ""), "missing")
            req = cn.TruncateRequestProto(src=path, newLength=length, clientName=f"webhdfs_{user}")
            r = await self._call(request, user, "truncate", req)
            return json_response(wj.boolean_body(bool(r.result)))
        raise wj.WebHdfsError(wj.UNSUPPORTED, f"op {op} is not served")

    # -- redirects to a DataNode ------------------------------------------------------------

    def _location(
        self,
        node: DatanodeDescriptor,
        op: str,
        path: str,
        user: WebCaller,
        params: Mapping[str, str],
    ) -> str:
        """http://<DataNode>/webhdfs/v1<path>?op=..&user.name=..&namenoderpcaddress=..&.."""
        reg = node.reg
        params = {**params, "namenoderpcaddress": self.nn.cfg.nameservice}
        name = user.user
        if user.real_user:  # a proxy: the real user, acting for doas=, as HDFS's redirect
            name, params["doas"] = user.real_user, user.user
        quoted = wj.quote_path(path)
        return f"http://{reg.ip}:{reg.info_port}{wj.PREFIX}{quoted}?" + wj.redirect_query(
            op, name, params
        )

    def _any_datanode(self, request: web.Request) -> DatanodeDescriptor:
        """A DataNode for a new file's bytes: placement's first choice (the client's own
        machine's DataNode when it has one), as HDFS's chooseDatanode."""
        bm = self.nn.blocks.bm
        machine = request.remote or ""
        writer = next(
            (n.uuid for n in self.nn.blocks.dm.nodes.values() if n.reg.ip == machine), None
        )
        chosen = bm.choose_targets(1, writer=writer, block_size=self.nn.settings.block_size)
        if not chosen:
            raise NamenodeError("Failed to find datanode, suggest to check cluster health.")
        return chosen[0].node

    async def _redirect_read(
        self, request: web.Request, user: WebCaller, path: str, op: str
    ) -> web.Response:
        """OPEN and GETFILECHECKSUM: 307 to a DataNode holding the block at offset (the last
        block for a checksum; any live one for an empty file), as HDFS's chooseDatanode; the
        read is audited (cmd=open) here, as HDFS's."""
        q = query_of(request)
        offset = wj.long_param(q, "offset", 0)
        length = wj.long_param(q, "length", MAX_LENGTH)
        info = await self._call(request, user, "getFileInfo", cn.GetFileInfoRequestProto(src=path))
        if not info.HasField("fs"):
            raise PathNotFoundError(f"File {path} not found.")
        if info.fs.fileType == hdfs.HdfsFileStatusProto.IS_DIR:
            raise PathNotFoundError(f"Path is not a file: {path}")
        size = info.fs.length
        if op == "OPEN" and size > 0 and offset >= size:
            raise NamenodeError(f"Offset={offset} out of the range [0, {size}); OPEN, path={path}")
        node = None
        if size > 0:
            at = offset if op == "OPEN" else size - 1
            req = cn.GetBlockLocationsRequestProto(src=path, offset=at, length=1)
            r = await self._call(request, user, "getBlockLocations", req)
            nodes = self.nn.blocks.dm.nodes
            uuids = [loc.id.datanodeUuid for b in r.locations.blocks[:1] for loc in b.locs]
            node = next((nodes[u] for u in uuids if u in nodes and nodes[u].alive), None)
        if node is None:
            candidates = self.nn.blocks.dm.live_nodes()
            if not candidates:
                raise NamenodeError("Failed to find datanode, suggest to check cluster health.")
            node = random.choice(candidates)
        params: dict[str, str] = {}
        if op == "OPEN":
            params = {"offset": str(offset)}
            if "length" in q:
                params["length"] = str(length)
        location = self._location(node, op, path, user, params)
        if wj.bool_param(q, "noredirect", False):
            return json_response({"Location": location})
        return _redirect(location)

    async def _redirect_write(
        self, request: web.Request, user: WebCaller, path: str, op: str
    ) -> web.Response:
        """CREATE (PUT) and APPEND (POST): 307 to a DataNode that writes the body's bytes
        through the NameNode as the caller. The parameters are checked here first."""
        self.nn.check_lease()
        self.nn.ha.check_active("WRITE")  # a standby sends the client to the active first
        q = query_of(request)
        params: dict[str, str] = {}
        if op == "CREATE":
            params["overwrite"] = str(wj.bool_param(q, "overwrite", False)).lower()
            params["permission"] = format(
                wj.permission_param(q, "permission", FILE_PERMISSION), "o"
            )
            rep = wj.long_param(q, "replication", 0, high=MAX_REPLICATION)
            if rep:
                params["replication"] = str(rep)
            block_size = wj.long_param(q, "blocksize", 0)
            if block_size:
                params["blocksize"] = str(block_size)
        else:
            status = await self._call(
                request, user, "getFileInfo", cn.GetFileInfoRequestProto(src=path)
            )
            if not status.HasField("fs"):
                raise PathNotFoundError(f"File does not exist: {path}")
        if "buffersize" in q:
            params["buffersize"] = str(wj.long_param(q, "buffersize", 4096, low=1))
        node = self._any_datanode(request)
        location = self._location(node, op, path, user, params)
        if wj.bool_param(q, "noredirect", False):
            return json_response({"Location": location})
        return _redirect(location)


MAX_U64 = (1 << 64) - 1
AUTHORIZATION = "org.apache.hadoop.security.authorize.AuthorizationException"


@dataclass(frozen=True)
class WebCaller:
    """A WebHDFS caller: the user it acts as, its real user when a proxy, its principal."""

    user: str
    real_user: str = ""
    principal: str = ""


def _user_name(query: Mapping[str, str], name: str) -> str:
    """A user name parameter ("" when absent); one with a slash, whitespace or NUL, or
    over 256 characters, is refused."""
    value = query.get(name, "").strip()
    if len(value) > 256 or any(c in value for c in "/\x00\n\t\r "):
        raise wj.ParamError(name, value, "not a user name")
    return value


def _redirect(location: str) -> web.Response:
    """HDFS's 307 Temporary Redirect to a DataNode."""
    return web.Response(
        status=307, headers={"Location": location}, content_type="application/octet-stream"
    )


WEBHDFS_KEY = web.AppKey("webhdfs", WebHdfs)


def add_routes(app: web.Application, nn: NameNode) -> None:
    """Serve /webhdfs/v1 (every method) on app."""
    webhdfs = WebHdfs(nn)
    app[WEBHDFS_KEY] = webhdfs
    for method in ("GET", "PUT", "POST", "DELETE"):
        app.router.add_route(method, wj.PREFIX, webhdfs.handle)
        app.router.add_route(method, wj.PREFIX + "/{tail:.*}", webhdfs.handle)
