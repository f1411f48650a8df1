"""Clients of a NameNode pair: namespace calls with HA failover, and the HA admin protocol."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import AsyncIterator
from typing import Any, TypeVar

from google.protobuf.message import Message

from qjm.hdfs.proto import hdfs_pb2 as hdfs
from qjm.ipc import IpcClient, RemoteError, RpcConnectionError, RpcError, RpcTimeoutError
from qjm.ipc.client import CallIds
from qjm.ipc.sasl import ClientSecurity
from qjm.namenode import protocols
from qjm.namenode.proto import ClientNamenodeProtocol_pb2 as cn
from qjm.namenode.proto import HAServiceProtocol_pb2 as ha
from qjm.namenode.status_proto import status_from_proto, summary_from_proto
from qjm.namenode.types import MODE_MASK, ContentSummary, FileStatus, HAState

log = logging.getLogger(__name__)

M = TypeVar("M", bound=Message)

STANDBY_EXCEPTION = "org.apache.hadoop.ipc.StandbyException"
RETRIABLE_EXCEPTION = "org.apache.hadoop.ipc.RetriableException"
FILE_NOT_FOUND = "java.io.FileNotFoundException"
DEFAULT_UMASK = 0o022


def _last_name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


class NoActiveNameNodeError(RpcError):
    """No NameNode answered as active within the attempts."""


class NameNodeClient:
    """HDFS's client calls over qjm.ipc, failing over between NameNodes as HDFS's
    ConfiguredFailoverProxyProvider does.

    A StandbyException or an unreachable NameNode moves to the next address; after a
    whole round without an active one the client backs off (doubling, bounded) and tries
    again, up to max_rounds rounds. Every other error is raised at once.
    """

    def __init__(
        self,
        addresses: list[str],
        *,
        user: str | None = None,
        real_user: str = "",
        timeout: float = 30.0,
        max_rounds: int = 5,
        backoff_s: float = 0.1,
        max_backoff_s: float = 2.0,
        connect_timeout_s: float = 2.0,
    ) -> None:
        if not addresses:
            raise ValueError("NameNodeClient needs at least one NameNode address")
        self.addresses = list(addresses)
        self.user = user
        self.real_user = real_user  # a proxy's real user under simple auth (design §S.14)
        self.timeout = timeout
        self.max_rounds = max(1, max_rounds)
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.client_id = os.urandom(16)  # one id over every NameNode, as DFSClient has
        self.call_ids = CallIds()  # ... and one call id counter (design §N.3)
        self.client_name = f"qjm_client_{self.client_id.hex()[:16]}"
        self._connect_timeout_s = connect_timeout_s
        self._clients: dict[str, IpcClient] = {}
        self._current = 0  # index of the NameNode that answered last
        self.failovers = 0

    @property
    def current(self) -> str:
        """The address calls go to first (the last one that answered as active)."""
        return self.addresses[self._current]

    def _client(self, address: str) -> IpcClient:
        client = self._clients.get(address)
        if client is None:
            client = self._clients[address] = IpcClient(
                address,
                protocols.CLIENT_PROTOCOL,
                user=self.user,
                real_user=self.real_user,
                client_id=self.client_id,
                call_ids=self.call_ids,
                connect_timeout_s=self._connect_timeout_s,
                reconnect_attempts=1,
            )
        return client

    async def call(self, method: str, request: Message) -> Any:
        """Call a ClientProtocol method on the active NameNode, failing over as needed.

        Every attempt carries the same call id, as Hadoop's RetryInvocationHandler sends
        them: a NameNode that already ran an at-most-once call (the answer was lost with
        a connection or a failover) answers it from its retry cache (design §N.3).
        """
        response_type = protocols.CLIENT_METHODS[method].response
        call_id = self.call_ids.next()
        failures: list[str] = []
        backoff = self.backoff_s
        n = len(self.addresses)
        for round_no in range(self.max_rounds):
            for step in range(n):
                index = (self._current + step) % n
                address = self.addresses[index]
                try:
                    response = await self._client(address).call(
                        method, request, response_type, timeout=self.timeout, call_id=call_id
                    )
                except RemoteError as e:
                    if e.class_name not in (STANDBY_EXCEPTION, RETRIABLE_EXCEPTION):
                        self._current = index
                        raise
                    failures.append(f"{address}: {e.class_name.rsplit('.', 1)[-1]}")
                except (RpcConnectionError, RpcTimeoutError) as e:
                    failures.append(f"{address}: {e}")
                else:
                    if index != self._current:
                        self.failovers += 1
                        log.info("%s: now using NameNode %s", method, address)
                    self._current = index
                    return response
            if round_no + 1 < self.max_rounds:
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.max_backoff_s)
        raise NoActiveNameNodeError(
            f"{method}: no active NameNode among {', '.join(self.addresses)} after "
            f"{self.max_rounds} round(s): " + "; ".join(failures[-n:])
        )

    async def close(self) -> None:
        """Close every connection."""
        for client in self._clients.values():
            await client.close()
        self._clients.clear()

    async def __aenter__(self) -> NameNodeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- namespace calls ------------------------------------------------------------------

    async def stat(self, path: str) -> FileStatus | None:
        """The status of path, None when there is no such path."""
        r = await self.call("getFileInfo", cn.GetFileInfoRequestProto(src=path))
        return status_from_proto(r.fs, _last_name(path)) if r.HasField("fs") else None

    async def list_page(
        self, path: str, start_after: bytes = b""
    ) -> tuple[list[FileStatus], int] | None:
        """One page of path's entries after start_after and how many remain; None: no path."""
        r = await self.call(
            "getListing",
            cn.GetListingRequestProto(src=path, startAfter=start_after, needLocation=False),
        )
        if not r.HasField("dirList"):
            return None
        entries = [
            status_from_proto(e, e.path.decode("utf-8", errors="surrogateescape"))
            for e in r.dirList.partialListing
        ]
        return entries, r.dirList.remainingEntries

    async def listing(self, path: str) -> list[FileStatus] | None:
        """Every entry of a directory (a file lists itself), page by page; None: no path."""
        out: list[FileStatus] = []
        after = b""
        while True:
            page = await self.list_page(path, after)
            if page is None:
                return out or None
            entries, remaining = page
            out.extend(entries)
            if not remaining or not entries:
                return out
            after = entries[-1].name.encode("utf-8", errors="surrogateescape")

    async def walk(self, path: str) -> AsyncIterator[tuple[str, FileStatus]]:
        """(full path, status) of everything under a directory, depth first, sorted by name."""
        entries = await self.listing(path)
        for entry in entries or []:
            full = path.rstrip("/") + "/" + entry.name
            yield full, entry
            if entry.is_dir:
                async for item in self.walk(full):
                    yield item

    async def mkdirs(
        self, path: str, permission: int = 0o777, *, create_parent: bool = True
    ) -> bool:
        """Make a directory (and its parents); permission is masked by the umask."""
        r = await self.call(
            "mkdirs",
            cn.MkdirsRequestProto(
                src=path,
                masked=hdfs.FsPermissionProto(perm=permission & ~DEFAULT_UMASK),
                createParent=create_parent,
                unmasked=hdfs.FsPermissionProto(perm=permission),
            ),
        )
        return bool(r.result)

    async def create(
        self,
        path: str,
        permission: int = 0o666,
        *,
        overwrite: bool = False,
        create_parent: bool = True,
        replication: int | None = None,
        block_size: int | None = None,
    ) -> FileStatus:
        """Create an empty file open for writing by this client; its status."""
        if replication is None or block_size is None:
            defaults = await self.server_defaults()
            replication = replication or defaults.replication
            block_size = block_size or defaults.blockSize
        flags = cn.CREATE | (cn.OVERWRITE if overwrite else 0)
        r = await self.call(
            "create",
            cn.CreateRequestProto(
                src=path,
                masked=hdfs.FsPermissionProto(perm=permission & ~DEFAULT_UMASK),
                clientName=self.client_name,
                createFlag=flags,
                createParent=create_parent,
                replication=replication,
                blockSize=block_size,
                unmasked=hdfs.FsPermissionProto(perm=permission),
            ),
        )
        if r.HasField("fs"):
            return status_from_proto(r.fs, _last_name(path))
        status = await self.stat(path)
        if status is None:
            raise RpcError(f"create {path}: the NameNode answered no status and has no such file")
        return status

    async def complete(self, path: str, file_id: int = 0) -> bool:
        """Close a file this client created."""
        r = await self.call(
            "complete",
            cn.CompleteRequestProto(src=path, clientName=self.client_name, fileId=file_id),
        )
        return bool(r.result)

    # -- what a DataNode's WebHDFS calls to write and read a file (design §W) ------------

    async def create_file(
        self,
        path: str,
        permission: int,
        *,
        overwrite: bool,
        replication: int,
        block_size: int,
    ) -> int:
        """Create path open for writing by this client, its mode as given (no umask); its
        file id."""
        flags = cn.CREATE | (cn.OVERWRITE if overwrite else 0)
        r = await self.call(
            "create",
            cn.CreateRequestProto(
                src=path,
                masked=hdfs.FsPermissionProto(perm=permission),
                clientName=self.client_name,
                createFlag=flags,
                createParent=True,
                replication=replication,
                blockSize=block_size,
            ),
        )
        if r.HasField("fs"):
            return int(r.fs.fileId)
        status = await self.stat(path)
        if status is None:
            raise RpcError(f"create {path}: the NameNode answered no status and has no such file")
        return status.file_id

    async def append_file(self, path: str) -> int:
        """Reopen path for this client to append in a new block (CreateFlag.NEW_BLOCK); its
        file id."""
        req = cn.AppendRequestProto(src=path, clientName=self.client_name, flag=cn.NEW_BLOCK)
        r = await self.call("append", req)
        return int(r.stat.fileId)

    async def add_block(
        self,
        path: str,
        previous: hdfs.ExtendedBlockProto | None,
        file_id: int,
        excluded: list[hdfs.DatanodeInfoProto] | None = None,
    ) -> hdfs.LocatedBlockProto:
        """addBlock: the file's next block and the pipeline to write it through, on none of
        the excluded DataNodes."""
        req = cn.AddBlockRequestProto(
            src=path, clientName=self.client_name, fileId=file_id, excludeNodes=excluded or []
        )
        if previous is not None:
            req.previous.CopyFrom(previous)
        r = await self.call("addBlock", req)
        return r.block  # type: ignore[no-any-return]

    async def abandon_block(self, path: str, block: hdfs.ExtendedBlockProto, file_id: int) -> None:
        """abandonBlock: drop the file's last block, whose pipeline could not be set up."""
        req = cn.AbandonBlockRequestProto(
            b=block, src=path, holder=self.client_name, fileId=file_id
        )
        await self.call("abandonBlock", req)

    async def complete_file(
        self, path: str, last: hdfs.ExtendedBlockProto | None, file_id: int
    ) -> bool:
        """complete with the last block written: true once the file is closed."""
        req = cn.CompleteRequestProto(src=path, clientName=self.client_name, fileId=file_id)
        if last is not None:
            req.last.CopyFrom(last)
        r = await self.call("complete", req)
        return bool(r.result)

    async def block_locations(
        self, path: str, offset: int, length: int
    ) -> hdfs.LocatedBlocksProto | None:
        """getBlockLocations of a range of path; None when there is no such file."""
        r = await self.call(
            "getBlockLocations",
            cn.GetBlockLocationsRequestProto(src=path, offset=offset, length=length),
        )
        return r.locations if r.HasField("locations") else None

    async def touch(self, path: str) -> FileStatus:
        """An empty file at path (create + complete), or a missing one's times set to now."""
        existing = await self.stat(path)
        if existing is not None:
            if existing.is_dir:
                raise RpcError(f"touch {path}: is a directory")
            now = int(time.time() * 1000)
            await self.set_times(path, now, now)
            return await self.stat(path) or existing
        status = await self.create(path)
        await self.complete(path, status.file_id)
        return status

    async def rename(self, src: str, dst: str) -> bool:
        """The old rename: False instead of most errors."""
        r = await self.call("rename", cn.RenameRequestProto(src=src, dst=dst))
        return bool(r.result)

    async def rename2(self, src: str, dst: str, *, overwrite: bool = False) -> None:
        """Rename, raising on every failure."""
        await self.call(
            "rename2", cn.Rename2RequestProto(src=src, dst=dst, overwriteDest=overwrite)
        )

    async def delete(self, path: str, *, recursive: bool = False) -> bool:
        """Delete path; False when there is no such path."""
        r = await self.call("delete", cn.DeleteRequestProto(src=path, recursive=recursive))
        return bool(r.result)

    async def chmod(self, path: str, mode: int) -> None:
        """Set the permission bits (0o7777)."""
        await self.call(
            "setPermission",
            cn.SetPermissionRequestProto(
                src=path, permission=hdfs.FsPermissionProto(perm=mode & MODE_MASK)
            ),
        )

    async def chown(self, path: str, owner: str | None, group: str | None) -> None:
        """Set the owner and/or the group (None leaves one as it is)."""
        request = cn.SetOwnerRequestProto(src=path)
        if owner is not None:
            request.username = owner
        if group is not None:
            request.groupname = group
        await self.call("setOwner", request)

    async def setrep(self, path: str, replication: int) -> bool:
        """Set a file's replication; False for a directory."""
        r = await self.call(
            "setReplication", cn.SetReplicationRequestProto(src=path, replication=replication)
        )
        return bool(r.result)

    async def set_times(self, path: str, mtime: int, atime: int) -> None:
        """Set modification and access times in ms (-1 leaves one as it is)."""
        await self.call(
            "setTimes",
            cn.SetTimesRequestProto(
                src=path, mtime=mtime & ((1 << 64) - 1), atime=atime & ((1 << 64) - 1)
            ),
        )

    async def content_summary(self, path: str) -> ContentSummary:
        """Totals under path."""
        r = await self.call("getContentSummary", cn.GetContentSummaryRequestProto(path=path))
        return summary_from_proto(r.summary)

    async def server_defaults(self) -> hdfs.FsServerDefaultsProto:
        """The NameNode's defaults (block size, replication, ...)."""
        r = await self.call("getServerDefaults", cn.GetServerDefaultsRequestProto())
        defaults: hdfs.FsServerDefaultsProto = r.serverDefaults
        return defaults

    async def msync(self) -> None:
        """Wait until the active has synced everything it applied."""
        await self.call("msync", cn.MsyncRequestProto())


class HAAdminClient:
    """HAServiceProtocol calls to one NameNode (what `hdfs haadmin` sends)."""

    def __init__(
        self,
        address: str,
        *,
        user: str | None = None,
        timeout: float = 20.0,
        security: ClientSecurity | None = None,
    ) -> None:
        self.address = address
        self.timeout = timeout
        self._client = IpcClient(
            address,
            protocols.HA_SERVICE_PROTOCOL,
            user=user,
            connect_timeout_s=min(timeout, 5.0),
            reconnect_attempts=1,
            security=security,
        )

    async def _call(self, method: str, request: Message) -> Any:
        spec = protocols.HA_SERVICE_METHODS[method]
        return await self._client.call(method, request, spec.response, timeout=self.timeout)

    async def get_service_status(self) -> tuple[HAState, bool, str]:
        """(state, ready to become active, the reason when not ready)."""
        r = await self._call("getServiceStatus", ha.GetServiceStatusRequestProto())
        return HAState(r.state), bool(r.readyToBecomeActive), r.notReadyReason

    async def get_service_state(self) -> HAState:
        """The NameNode's HA state."""
        return (await self.get_service_status())[0]

    async def monitor_health(self) -> None:
        """Return when healthy; RemoteError (HealthCheckFailedException) when not."""
        await self._call("monitorHealth", ha.MonitorHealthRequestProto())

    @staticmethod
    def _req_info(forced: bool, by_zkfc: bool = False) -> ha.HAStateChangeRequestInfoProto:
        source = ha.REQUEST_BY_USER_FORCED if forced else ha.REQUEST_BY_USER
        if by_zkfc:
            source = ha.REQUEST_BY_ZKFC
        return ha.HAStateChangeRequestInfoProto(reqSource=source)

    async def transition_to_active(self, *, forced: bool = False, by_zkfc: bool = False) -> None:
        """Make the NameNode active (it fences the old writer by a new epoch)."""
        await self._call(
            "transitionToActive",
            ha.TransitionToActiveRequestProto(reqInfo=self._req_info(forced, by_zkfc)),
        )

    async def transition_to_standby(self, *, forced: bool = False, by_zkfc: bool = False) -> None:
        """Make the NameNode standby (it stops writing and tails the journal)."""
        await self._call(
            "transitionToStandby",
            ha.TransitionToStandbyRequestProto(reqInfo=self._req_info(forced, by_zkfc)),
        )

    async def close(self) -> None:
        """Close the connection."""
        await self._client.close()

    async def __aenter__(self) -> HAAdminClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


__all__ = [
    "FILE_NOT_FOUND",
    "HAAdminClient",
    "NameNodeClient",
    "NoActiveNameNodeError",
    "status_from_proto",
    "summary_from_proto",
]
