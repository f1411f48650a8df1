"""WebHDFS on a DataNode's HTTP port (design §W), where the NameNode's 307 sends the bytes:
OPEN streams a file's range, CREATE and APPEND write the request body through the block
pipeline, GETFILECHECKSUM combines the blocks' BLOCK_CHECKSUM answers.

Like HDFS's DatanodeWebHdfsMethods the DataNode is a client of the NameNode here, as the
requesting user, over ClientProtocol (create or append, addBlock, complete,
getBlockLocations): the namespace calls come from a factory the daemon is given (the
DataNode package knows no NameNode), the bytes move over DataTransferProtocol.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Protocol

from aiohttp import web

from qjm.config import ClusterConfig
from qjm.datanode import transfer_client as tc
from qjm.errors import QjmError, describe_error
from qjm.hdfs import webhdfs_json as wj
from qjm.hdfs.datanode_protocol import token_from_proto
from qjm.hdfs.proto import hdfs_pb2 as hdfs
from qjm.hdfs.transfer_sasl import TransferProtection
from qjm.hdfs.webhdfs_http import JSON_TYPE, query_of
from qjm.ipc import RemoteError, RpcError
from qjm.ipc.sasl import client_security
from qjm.security.block_token import Token

log = logging.getLogger("qjm.datanode.webhdfs")
READ_PIECE = 4 << 20  # bytes one READ_BLOCK asks for while streaming an OPEN
BODY_CHUNK = 1 << 20  # bytes of a request body read at a time
PIPELINE_TRIES = 3  # pipelines set up for one block before a write gives up
COMPLETE_WAIT_S = 30.0  # how long complete may answer false (replicas not yet reported)


class NamespaceCalls(Protocol):
    """The ClientProtocol calls a DataNode's WebHDFS makes as one user (NameNodeClient's)."""

    client_name: str

    async def server_defaults(self) -> hdfs.FsServerDefaultsProto:
        """getServerDefaults."""

    async def create_file(
        self, path: str, permission: int, *, overwrite: bool, replication: int, block_size: int
    ) -> int:
        """create; the file id."""

    async def append_file(self, path: str) -> int:
        """append into a new block; the file id."""

    async def add_block(
        self,
        path: str,
        previous: hdfs.ExtendedBlockProto | None,
        file_id: int,
        excluded: list[hdfs.DatanodeInfoProto] | None = None,
    ) -> hdfs.LocatedBlockProto:
        """addBlock."""

    async def abandon_block(self, path: str, block: hdfs.ExtendedBlockProto, file_id: int) -> None:
        """abandonBlock."""

    async def complete_file(
        self, path: str, last: hdfs.ExtendedBlockProto | None, file_id: int
    ) -> bool:
        """complete."""

    async def block_locations(
        self, path: str, offset: int, length: int
    ) -> hdfs.LocatedBlocksProto | None:
        """getBlockLocations."""

    async def close(self) -> None:
        """Close its connections."""


# (the NameNodes' RPC addresses, the user, its real user when a proxy, else "") -> that
# user's namespace calls
NamespaceFactory = Callable[[list[str], str, str], NamespaceCalls]


def _json(body: dict[str, Any], status: int = 200) -> web.Response:
    return web.Response(text=json.dumps(body), status=status, content_type=JSON_TYPE)


def _error(java_class: str, message: str) -> web.Response:
    return _json(wj.remote_exception(java_class, message), wj.http_status(java_class))


def _token(proto: Any) -> Token | None:
    """A located block's token; None for the empty token (block tokens off)."""
    return token_from_proto(proto) if proto.identifier else None


class DataNodeWebHdfs:
    """One DataNode's /webhdfs/v1 handlers."""

    def __init__(
        self,
        cfg: ClusterConfig,
        factory: NamespaceFactory,
        protection: TransferProtection,
        timeout_s: float,
    ) -> None:
        self.cfg = cfg
        self.factory = factory
        self.protection = protection
        self.timeout_s = timeout_s
        self._clients: dict[str, NamespaceCalls] = {}

    async def close(self) -> None:
        """Close every user's NameNode connections."""
        clients, self._clients = list(self._clients.values()), {}
        for c in clients:
            await c.close()

    def _namenodes(self, query: Any) -> list[str]:
        """The NameNodes namenoderpcaddress= names: this cluster's nameservice (or one of its
        NameNodes' RPC addresses); any other is refused, so no caller points the DataNode
        at a server of its choosing."""
        raw = query.get("namenoderpcaddress", "")
        addresses = {name: nn.rpc_address for name, nn in self.cfg.namenodes.items()}
        if raw == self.cfg.nameservice:
            return list(addresses.values())
        if raw in addresses.values():
            return [raw]
        if not raw:
            raise wj.ParamError("namenoderpcaddress", raw, "missing")
        raise wj.ParamError(
            "namenoderpcaddress",
            raw,
            f"neither nameservice {self.cfg.nameservice} nor its NameNodes",
        )

    def _client(self, namenodes: list[str], user: str, real_user: str) -> NamespaceCalls:
        key = f"{user}\x00{real_user}\x00{','.join(namenodes)}"
        client = self._clients.get(key)
        if client is None:
            client = self._clients[key] = self.factory(namenodes, user, real_user)
        return client

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Any /webhdfs/v1 request a NameNode redirected here."""
        try:
            op = wj.op_of(request.method, query_of(request))
            if op not in ("OPEN", "CREATE", "APPEND", "GETFILECHECKSUM"):
                raise wj.WebHdfsError(
                    wj.ILLEGAL_ARGUMENT, f"op {op} is answered by the NameNode, not a DataNode"
                )
            if client_security() is not None:  # it would call the NameNode as itself
                raise wj.WebHdfsError(
                    wj.UNSUPPORTED,
                    "a DataNode's WebHDFS needs a delegation token on a Kerberos cluster, "
                    "which WebHDFS does not issue yet",
                )
            path = wj.path_of(request.raw_path)
            user = request.get("user") or query_of(request).get("user.name", "") or wj.DEFAULT_USER
            # a proxy (doas=): the NameNode's proxy user rules judge the real user (§S.14)
            doas = query_of(request).get("doas", "")
            real_user = user if doas and doas != user else ""
            ns = self._client(self._namenodes(query_of(request)), doas or user, real_user)
            if op == "OPEN":
                return await self._open(request, ns, path)
            if op == "GETFILECHECKSUM":
                return await self._checksum(ns, path)
            return await self._write(request, ns, path, op)
        except wj.WebHdfsError as e:
            return _error(e.java_class, str(e))
        except RemoteError as e:
            return _error(e.class_name, e.message)
        except (RpcError, QjmError, OSError, TimeoutError) as e:
            return _error(wj.IO_EXCEPTION, describe_error(e))
        except Exception as e:  # a bug: HDFS's 500, never a bare traceback
            log.exception("WebHDFS %s %s failed", request.method, request.path_qs[:200])
            return _error("java.lang.RuntimeException", f"{type(e).__name__}: {e}")

    # -- reads ------------------------------------------------------------------------------

    async def _open(
        self, request: web.Request, ns: NamespaceCalls, path: str
    ) -> web.StreamResponse:
        """OPEN: 200 and the bytes of [offset, offset+length) (to the end without length)."""
        q = query_of(request)
        offset = wj.long_param(q, "offset", 0)
        length = wj.long_param(q, "length", wj.LONG_MAX)
        lbs = await ns.block_locations(path, offset, length)
        if lbs is None:
            raise wj.WebHdfsError(wj.FILE_NOT_FOUND, f"File does not exist: {path}")
        size = lbs.fileLength
        if offset > size or (offset == size and size > 0):
            raise wj.WebHdfsError(
                wj.IO_EXCEPTION, f"Offset={offset} out of the range [0, {size}); OPEN, path={path}"
            )
        end = min(size, offset + length) if length <= wj.LONG_MAX - offset else size
        blocks = list(lbs.blocks)
        response = web.StreamResponse(
            status=200,
            headers={
                "Content-Type": "application/octet-stream",
                "Content-Length": str(end - offset),
            },
        )
        # the first piece is read before the answer starts, so a bad replica set is an error
        pieces = self._pieces(blocks, offset, end)
        first = await anext(pieces, b"")
        await response.prepare(request)
        try:
            if first:
                await response.write(first)
            async for piece in pieces:
                await response.write(piece)
        except (wj.WebHdfsError, RpcError, QjmError, TimeoutError) as e:
            # the status is sent: end the connection short of Content-Length, which the
            # client sees as a failed read (a client that went away ends it the same way)
            log.warning("WebHDFS OPEN %s stopped mid-answer: %s", path, describe_error(e))
            if request.transport is not None:
                request.transport.close()
            return response
        await response.write_eof()
        return response

    async def _pieces(
        self, blocks: Sequence[hdfs.LocatedBlockProto], start: int, end: int
    ) -> AsyncIterator[bytes]:
        """The bytes of [start, end) of a file, READ_PIECE at a time, each read from the
        first of the block's DataNodes that answers."""
        pos = start
        for lb in blocks:
            b_start, b_end = lb.offset, lb.offset + lb.b.numBytes
            while pos < end and b_start <= pos < b_end:
                n = min(READ_PIECE, b_end - pos, end - pos)
                yield await self._read(lb, pos - b_start, n)
                pos += n
        if pos < end:
            raise wj.WebHdfsError(
                wj.IO_EXCEPTION, f"no block holds bytes {pos}..{end} (the file is being written?)"
            )

    async def _read(self, lb: hdfs.LocatedBlockProto, offset: int, n: int) -> bytes:
        block = tc.block_from_proto(lb.b)
        errors = []
        for node in lb.locs:
            try:
                return await tc.read_block(
                    node,
                    block,
                    offset,
                    n,
                    client_name="webhdfs",
                    timeout_s=self.timeout_s,
                    token=_token(lb.blockToken),
                    protection=self.protection,
                )
            except (OSError, TimeoutError, QjmError) as e:
                errors.append(describe_error(e))
        raise wj.WebHdfsError(
            wj.IO_EXCEPTION,
            f"Could not obtain block: blk_{lb.b.blockId}: " + ("; ".join(errors) or "no DataNode"),
        )

    async def _checksum(self, ns: NamespaceCalls, path: str) -> web.Response:
        """GETFILECHECKSUM: HDFS's MD5-of-MD5-of-CRC32C of the file's blocks."""
        lbs = await ns.block_locations(path, 0, wj.LONG_MAX)
        if lbs is None:
            raise wj.WebHdfsError(wj.FILE_NOT_FOUND, f"File does not exist: {path}")
        sums = []
        for lb in lbs.blocks:
            sums.append(await self._block_sum(lb))
        algorithm, raw = wj.file_checksum(sums)
        return _json(wj.file_checksum_body(algorithm, raw))

    async def _block_sum(self, lb: hdfs.LocatedBlockProto) -> wj.BlockSum:
        block = tc.block_from_proto(lb.b)
        errors = []
        for node in lb.locs:
            try:
                r = await tc.block_checksum(
                    node,
                    block,
                    timeout_s=self.timeout_s,
                    token=_token(lb.blockToken),
                    protection=self.protection,
                )
                return wj.BlockSum(r.bytesPerCrc, r.crcPerBlock, bytes(r.blockChecksum))
            except (OSError, TimeoutError, QjmError) as e:
                errors.append(describe_error(e))
        raise wj.WebHdfsError(
            wj.IO_EXCEPTION,
            f"Fail to get block MD5 for blk_{lb.b.blockId}: "
            + ("; ".join(errors) or "no DataNode"),
        )

    # -- writes -----------------------------------------------------------------------------

    async def _write(
        self, request: web.Request, ns: NamespaceCalls, path: str, op: str
    ) -> web.Response:
        """CREATE (201, Location hdfs://<nameservice><path>) or APPEND (200): the body's bytes
        into the file, block by block through addBlock's pipelines, then complete."""
        q = query_of(request)
        previous: hdfs.ExtendedBlockProto | None = None
        if op == "CREATE":
            defaults = None
            replication = wj.long_param(q, "replication", 0, high=512)
            block_size = wj.long_param(q, "blocksize", 0)
            if not replication or not block_size:
                defaults = await ns.server_defaults()
            replication = replication or defaults.replication  # type: ignore[union-attr]
            block_size = block_size or defaults.blockSize  # type: ignore[union-attr]
            file_id = await ns.create_file(
                path,
                wj.permission_param(q, "permission", 0o644),
                overwrite=wj.bool_param(q, "overwrite", False),
                replication=replication,
                block_size=block_size,
            )
        else:
            file_id = await ns.append_file(path)
            lbs = await ns.block_locations(path, 0, wj.LONG_MAX)
            if lbs is not None and lbs.blocks:
                previous = lbs.blocks[-1].b
            block_size = 0
        previous = await self._write_body(request, ns, path, file_id, previous, block_size)
        deadline = time.monotonic() + COMPLETE_WAIT_S
        delay = 0.05
        while not await ns.complete_file(path, previous, file_id):
            if time.monotonic() > deadline:
                raise wj.WebHdfsError(
                    wj.IO_EXCEPTION,
                    f"Unable to close file {path}: its last block has too few replicas after "
                    f"{COMPLETE_WAIT_S:g}s",
                )
            await asyncio.sleep(delay)  # HDFS's client backs off the same way
            delay = min(delay * 2, 1.0)
        if op == "APPEND":
            return web.Response(status=200)
        location = f"hdfs://{self.cfg.nameservice}{wj.quote_path(path)}"
        return web.Response(status=201, headers={"Location": location})

    async def _write_body(
        self,
        request: web.Request,
        ns: NamespaceCalls,
        path: str,
        file_id: int,
        previous: hdfs.ExtendedBlockProto | None,
        block_size: int,
    ) -> hdfs.ExtendedBlockProto | None:
        """Stream the body into new blocks; the last block written (previous if none)."""
        pipeline: tc.PipelineWriter | None = None
        in_block = 0
        try:
            while True:
                chunk = await request.content.read(BODY_CHUNK)
                if not chunk:
                    break
                view = memoryview(chunk)
                while view:
                    if pipeline is None:
                        if not block_size:  # an append: the file's own block size
                            block_size = await self._file_block_size(ns, path)
                        pipeline = await self._new_pipeline(ns, path, previous, file_id)
                        in_block = 0
                    n = min(len(view), block_size - in_block)
                    await pipeline.write(bytes(view[:n]))
                    in_block += n
                    view = view[n:]
                    if in_block >= block_size:
                        previous = tc.block_proto(await pipeline.close())
                        pipeline = None
            if pipeline is not None:
                previous = tc.block_proto(await pipeline.close())
                pipeline = None
        finally:
            if pipeline is not None:
                await pipeline.abort()
        return previous

    async def _new_pipeline(
        self,
        ns: NamespaceCalls,
        path: str,
        previous: hdfs.ExtendedBlockProto | None,
        file_id: int,
    ) -> tc.PipelineWriter:
        """The next block's pipeline. One whose setup fails is abandoned and a block asked
        for again without the bad DataNode, as HDFS's DataStreamer does, PIPELINE_TRIES
        times at most."""
        excluded: list[hdfs.DatanodeInfoProto] = []
        for attempt in range(PIPELINE_TRIES):
            lb = await ns.add_block(path, previous, file_id, excluded)
            try:
                return await tc.PipelineWriter.open(
                    list(lb.locs),
                    tc.block_from_proto(lb.b),
                    client_name=ns.client_name,
                    timeout_s=self.timeout_s,
                    token=_token(lb.blockToken),
                    protection=self.protection,
                )
            except tc.BlockWriteError as e:
                await ns.abandon_block(path, lb.b, file_id)
                bad = e.bad_node_index if e.bad_node_index is not None else 0
                if bad < len(lb.locs):
                    excluded.append(lb.locs[bad])
                log.warning(
                    "WebHDFS write of %s: pipeline setup failed (try %d of %d): %s",
                    path,
                    attempt + 1,
                    PIPELINE_TRIES,
                    e,
                )
                if attempt + 1 == PIPELINE_TRIES:
                    raise
        raise AssertionError("unreachable")

    @staticmethod
    async def _file_block_size(ns: NamespaceCalls, path: str) -> int:
        """The block size an append's new blocks are cut at: the server default."""
        return int((await ns.server_defaults()).blockSize)


WEBHDFS_KEY = web.AppKey("datanode_webhdfs", DataNodeWebHdfs)


def add_routes(app: web.Application, webhdfs: DataNodeWebHdfs) -> None:
    """Serve /webhdfs/v1 (every method) on a DataNode's app."""
    app[WEBHDFS_KEY] = webhdfs
    for method in ("GET", "PUT", "POST", "DELETE"):
        app.router.add_route(method, wj.PREFIX, webhdfs.handle)
        app.router.add_route(method, wj.PREFIX + "/{tail:.*}", webhdfs.handle)
