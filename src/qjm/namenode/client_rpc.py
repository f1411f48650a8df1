"""ClientNamenodeProtocol's handlers: HDFS client requests translated to Namespace calls."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from google.protobuf.message import Message

from qjm.editlog.ops import AddOp, Op
from qjm.hdfs.proto import hdfs_pb2 as hdfs
from qjm.ipc.server import CallContext, Method
from qjm.namenode import protocols
from qjm.namenode.errors import (
    AccessControlError,
    IllegalArgumentError,
    NamenodeError,
    NotSupportedError,
    PathNotFoundError,
)
from qjm.namenode.namespace import check_path_length
from qjm.namenode.proto import ClientNamenodeProtocol_pb2 as cn
from qjm.namenode.retry_cache import CacheEntry, RetryCache, created_status
from qjm.namenode.service import NameNodeService
from qjm.namenode.status_proto import (
    content_summary_proto,
    file_status_proto,
    signed64,
    unsigned64,
)
from qjm.namenode.types import MODE_MASK, Caller, FileStatus, HAState, RpcIds

if TYPE_CHECKING:
    from qjm.namenode.namespace import Namespace

MIN_BLOCK_SIZE = 1 << 20  # dfs.namenode.fs-limits.min-block-size
_STATE_ON_WIRE = {  # HAServiceStateProto; STOPPING is never sent
    HAState.INITIALIZING: 0,
    HAState.ACTIVE: 1,
    HAState.STANDBY: 2,
    HAState.OBSERVER: 3,
    HAState.STOPPING: 0,
}
NO_DATANODES = "qjm keeps metadata only: {method} needs DataNodes"
NO_ACLS = "qjm keeps no ACLs: {method} is not supported (permissions are owner/group/mode only)"
NO_XATTRS = "qjm keeps no extended attributes: {method} is not supported"
# Methods refused outright, with the reason.
REFUSED: dict[str, str] = {
    **{
        m: NO_DATANODES
        for m in ("addBlock", "abandonBlock", "append", "truncate", "concat", "recoverLease")
    },
    **{
        m: NO_ACLS
        for m in ("modifyAclEntries", "removeAclEntries", "removeDefaultAcl", "removeAcl", "setAcl")
    },
    **{m: NO_XATTRS for m in ("setXAttr", "removeXAttr")},
}
_ACTIONS = ("---", "--x", "-w-", "-wx", "r--", "r-x", "rw-", "rwx")
# FsAction's names, as HDFS's permission errors spell them
_ACTION_NAMES = (
    "NONE",
    "EXECUTE",
    "WRITE",
    "WRITE_EXECUTE",
    "READ",
    "READ_EXECUTE",
    "READ_WRITE",
    "ALL",
)
_SAFEMODE_ENTER = 2

Handler = Callable[[Any, CallContext], Awaitable[Message]]


def now_ms() -> int:
    """The wall clock in milliseconds since the epoch (HDFS's modification times)."""
    return time.time_ns() // 1_000_000


def rpc_ids(ctx: CallContext) -> RpcIds:
    """The retry-cache ids of a call (logged with its mutation)."""
    return RpcIds(client_id=ctx.client_id, call_id=ctx.call_id)


def not_supported(method: str, reason: str = NO_DATANODES) -> Handler:
    """A handler refusing method with reason (a format string naming {method})."""

    async def refuse(req: Any, ctx: CallContext) -> Message:
        raise NotSupportedError(reason.format(method=method))

    return refuse


def mode_string(status: FileStatus) -> str:
    """The mode as ls shows it, e.g. drwxr-xr-x."""
    kind = "d" if status.is_dir else "l" if status.symlink is not None else "-"
    perm = status.permission
    return kind + "".join(_ACTIONS[(perm >> shift) & 7] for shift in (6, 3, 0))


def check_access(status: FileStatus, path: str, caller: Caller, action: int) -> None:
    """Raise AccessControlError unless caller may do action (rwx bits) on status, as HDFS."""
    if caller.superuser:
        return
    perm = status.permission
    if caller.user == status.owner:
        granted = (perm >> 6) & 7
    elif status.group in caller.groups:
        granted = (perm >> 3) & 7
    else:
        granted = perm & 7
    if granted & action != action:
        raise AccessControlError(
            f"Permission denied: user={caller.user}, access={_ACTION_NAMES[action]}, "
            f'inode="{path}":{status.owner}:{status.group}:{mode_string(status)}'
        )


def empty_locations(status: FileStatus) -> hdfs.LocatedBlocksProto:
    """A file's block locations without any block (as HDFS answers an empty file)."""
    return hdfs.LocatedBlocksProto(
        fileLength=status.length,
        underConstruction=status.under_construction,
        isLastBlockComplete=False,
    )


class ClientRpc:
    """The ClientProtocol handlers of one NameNode."""

    def __init__(self, nn: NameNodeService) -> None:
        self.nn = nn

    async def _retry_entry(self, ctx: CallContext) -> CacheEntry | None:
        """An at-most-once call's retry cache entry (design §N.3); refuses unless active.

        None: no cache, or ids it cannot key; run the call. An entry that succeeded: answer
        from it. Otherwise run the call, then RetryCache.set_state with how it ended.
        """
        self.nn.check_write(ctx)  # a standby refuses before it looks (HDFS checkOperation)
        cache = self.nn.retry_cache
        if cache is None:
            return None
        return await cache.wait_for_completion(ctx.client_id, ctx.call_id)

    # -- reads --------------------------------------------------------------------------------

    async def get_file_info(
        self, req: cn.GetFileInfoRequestProto, ctx: CallContext
    ) -> cn.GetFileInfoResponseProto:
        """getFileInfo: the status of src, absent when there is no such path."""
        ns = await self.nn.read(ctx)
        status = ns.stat(req.src, self.nn.caller_of(ctx))
        if status is None:
            return cn.GetFileInfoResponseProto()
        return cn.GetFileInfoResponseProto(fs=file_status_proto(status, b""))

    async def get_listing(
        self, req: cn.GetListingRequestProto, ctx: CallContext
    ) -> cn.GetListingResponseProto:
        """getListing: one page of entries after startAfter; absent for no such path."""
        ns = await self.nn.read(ctx)
        start_after = req.startAfter.decode("utf-8", errors="surrogateescape")
        found = ns.listing(
            req.src,
            self.nn.caller_of(ctx),
            start_after=start_after,
            limit=self.nn.settings.listing_limit,
        )
        if found is None:
            return cn.GetListingResponseProto()
        entries, remaining = found
        listing = hdfs.DirectoryListingProto(remainingEntries=remaining)
        for e in entries:
            proto = file_status_proto(e, e.name.encode("utf-8", errors="surrogateescape"))
            if req.needLocation and not e.is_dir:
                # listLocatedStatus casts every file to HdfsLocatedFileStatus: a file must
                # carry locations, here the (empty) list of its blocks' DataNodes
                proto.locations.CopyFrom(empty_locations(e))
            listing.partialListing.append(proto)
        return cn.GetListingResponseProto(dirList=listing)

    async def get_content_summary(
        self, req: cn.GetContentSummaryRequestProto, ctx: CallContext
    ) -> cn.GetContentSummaryResponseProto:
        """getContentSummary: totals under path."""
        ns = await self.nn.read(ctx)
        summary = ns.content_summary(req.path, self.nn.caller_of(ctx))
        return cn.GetContentSummaryResponseProto(summary=content_summary_proto(summary))

    async def get_server_defaults(
        self, req: cn.GetServerDefaultsRequestProto, ctx: CallContext
    ) -> cn.GetServerDefaultsResponseProto:
        """getServerDefaults: block size and replication from the settings, HDFS's others."""
        settings = self.nn.settings
        return cn.GetServerDefaultsResponseProto(
            serverDefaults=hdfs.FsServerDefaultsProto(
                blockSize=settings.block_size,
                bytesPerChecksum=512,
                writePacketSize=65536,
                replication=settings.default_replication,
                fileBufferSize=4096,
                encryptDataTransfer=False,
                trashInterval=0,
                checksumType=hdfs.CHECKSUM_CRC32C,
            )
        )

    async def get_fs_stats(
        self, req: cn.GetFsStatusRequestProto, ctx: CallContext
    ) -> cn.GetFsStatsResponseProto:
        """getFsStats: no DataNodes, so no capacity and no blocks."""
        return cn.GetFsStatsResponseProto(
            capacity=0,
            used=0,
            remaining=0,
            under_replicated=0,
            corrupt_blocks=0,
            missing_blocks=0,
            missing_repl_one_blocks=0,
            blocks_in_future=0,
            pending_deletion_blocks=0,
        )

    async def renew_lease(
        self, req: cn.RenewLeaseRequestProto, ctx: CallContext
    ) -> cn.RenewLeaseResponseProto:
        """renewLease: leases do not expire here; a standby refuses it as HDFS does."""
        await self.nn.read(ctx)
        return cn.RenewLeaseResponseProto()

    async def msync(self, req: cn.MsyncRequestProto, ctx: CallContext) -> cn.MsyncResponseProto:
        """msync: return once everything applied is synced (the response carries the state id)."""
        await self.nn.msync(ctx)
        return cn.MsyncResponseProto()

    async def get_ha_service_state(
        self, req: cn.HAServiceStateRequestProto, ctx: CallContext
    ) -> cn.HAServiceStateResponseProto:
        """getHAServiceState: this NameNode's HA state (served in every state)."""
        state = self.nn.service_status()[0]  # an active whose lease lapsed steps down first
        return cn.HAServiceStateResponseProto(
            state=_STATE_ON_WIRE[state]  # type: ignore[arg-type]
        )

    # -- writes -------------------------------------------------------------------------------

    async def mkdirs(self, req: cn.MkdirsRequestProto, ctx: CallContext) -> cn.MkdirsResponseProto:
        """mkdirs: the directory (and its parents with createParent) with the masked mode."""
        check_path_length("mkdirs", req.src)  # first, as HDFS: in any HA state (design §N.4)
        caller = self.nn.caller_of(ctx)
        permission = req.masked.perm  # the plan masks it
        when = now_ms()

        def plan(ns: Namespace) -> list[Op]:
            return ns.plan_mkdirs(req.src, caller, permission, req.createParent, when)

        await self.nn.write(ctx, plan)
        return cn.MkdirsResponseProto(result=True)

    async def create(self, req: cn.CreateRequestProto, ctx: CallContext) -> cn.CreateResponseProto:
        """create: a new empty file open for writing by clientName; answers its status."""
        check_path_length("create", req.src)
        flags = req.createFlag
        if flags & cn.APPEND:
            raise NotSupportedError(NO_DATANODES.format(method="create with CreateFlag.APPEND"))
        block_size = signed64(req.blockSize)  # a Java long: 2**64-1 is -1, refused below
        if block_size < MIN_BLOCK_SIZE:
            raise IllegalArgumentError(
                f"create {req.src}: specified block size {block_size} is less than the "
                f"configured minimum value {MIN_BLOCK_SIZE}"
            )
        caller = self.nn.caller_of(ctx)
        permission = req.masked.perm  # the plan masks it
        overwrite = bool(flags & cn.OVERWRITE)
        may_create = bool(flags & cn.CREATE)
        when = now_ms()
        ids = rpc_ids(ctx)
        machine = ctx.peer.rsplit(":", 1)[0].strip("[]")

        def plan(ns: Namespace) -> list[Op]:
            if not may_create and ns.stat(req.src, caller) is None:
                raise PathNotFoundError(
                    f"failed to overwrite non-existent file {req.src} on client {machine}"
                )
            return ns.plan_create(
                req.src,
                caller,
                permission,
                overwrite,
                req.createParent,
                req.replication,
                block_size,
                req.clientName,
                machine,
                when,
                ids,
            )

        entry = await self._retry_entry(ctx)
        if entry is not None and entry.succeeded:  # a retry: the first call's answer
            return self._created(entry.payload)
        status: FileStatus | None = None
        try:
            ops = await self.nn.write(ctx, plan)
            added = ops[-1] if ops else None
            if isinstance(added, AddOp):
                status = created_status(added)  # what it created, as HDFS answers
        finally:
            RetryCache.set_state(entry, status is not None, status)
        return self._created(status)

    @staticmethod
    def _created(status: object) -> cn.CreateResponseProto:
        """create's answer: the status of the file it made (none when unknown)."""
        if not isinstance(status, FileStatus):
            return cn.CreateResponseProto()
        return cn.CreateResponseProto(fs=file_status_proto(status, b""))

    async def complete(
        self, req: cn.CompleteRequestProto, ctx: CallContext
    ) -> cn.CompleteResponseProto:
        """complete: close the file clientName wrote (no blocks to wait for: always true)."""
        if req.HasField("last") and req.last.numBytes:
            raise NotSupportedError(NO_DATANODES.format(method="complete with a last block"))
        caller = self.nn.caller_of(ctx)
        when = now_ms()

        def plan(ns: Namespace) -> list[Op]:
            return ns.plan_complete(req.src, caller, req.clientName, req.fileId, when)

        await self.nn.write(ctx, plan)
        return cn.CompleteResponseProto(result=True)

    async def rename(self, req: cn.RenameRequestProto, ctx: CallContext) -> cn.RenameResponseProto:
        """rename (the old one): false instead of most errors, as HDFS."""
        check_path_length("rename", req.dst)
        caller = self.nn.caller_of(ctx)
        when = now_ms()
        ids = rpc_ids(ctx)

        def plan(ns: Namespace) -> list[Op]:
            return ns.plan_rename(req.src, req.dst, caller, when, ids)

        entry = await self._retry_entry(ctx)
        if entry is not None and entry.succeeded:
            return cn.RenameResponseProto(result=True)
        renamed = False
        try:
            renamed = bool(await self.nn.write(ctx, plan))
        finally:
            RetryCache.set_state(entry, renamed)  # false is not an answer to keep (HDFS)
        return cn.RenameResponseProto(result=renamed)

    async def rename2(
        self, req: cn.Rename2RequestProto, ctx: CallContext
    ) -> cn.Rename2ResponseProto:
        """rename2: rename with options, raising on every failure."""
        check_path_length("rename", req.dst)
        caller = self.nn.caller_of(ctx)
        when = now_ms()
        ids = rpc_ids(ctx)

        def plan(ns: Namespace) -> list[Op]:
            return ns.plan_rename2(req.src, req.dst, caller, req.overwriteDest, when, ids)

        entry = await self._retry_entry(ctx)
        if entry is not None and entry.succeeded:
            return cn.Rename2ResponseProto()
        done = False
        try:
            await self.nn.write(ctx, plan)
            done = True
        finally:
            RetryCache.set_state(entry, done)
        return cn.Rename2ResponseProto()

    async def delete(self, req: cn.DeleteRequestProto, ctx: CallContext) -> cn.DeleteResponseProto:
        """delete: false when there is no such path."""
        caller = self.nn.caller_of(ctx)
        when = now_ms()
        ids = rpc_ids(ctx)

        def plan(ns: Namespace) -> list[Op]:
            return ns.plan_delete(req.src, caller, req.recursive, when, ids)

        entry = await self._retry_entry(ctx)
        if entry is not None and entry.succeeded:
            return cn.DeleteResponseProto(result=True)
        deleted = False
        try:
            deleted = bool(await self.nn.write(ctx, plan))
        finally:
            RetryCache.set_state(entry, deleted)
        return cn.DeleteResponseProto(result=deleted)

    async def set_permission(
        self, req: cn.SetPermissionRequestProto, ctx: CallContext
    ) -> cn.SetPermissionResponseProto:
        """setPermission: the mode bits (MODE_MASK) of src."""
        caller = self.nn.caller_of(ctx)
        permission = req.permission.perm  # the plan masks it

        def plan(ns: Namespace) -> list[Op]:
            return ns.plan_set_permission(req.src, caller, permission)

        await self.nn.write(ctx, plan)
        return cn.SetPermissionResponseProto()

    async def set_owner(
        self, req: cn.SetOwnerRequestProto, ctx: CallContext
    ) -> cn.SetOwnerResponseProto:
        """setOwner: owner and/or group of src (an absent one is left as it is)."""
        caller = self.nn.caller_of(ctx)
        owner = req.username if req.HasField("username") else None
        group = req.groupname if req.HasField("groupname") else None

        def plan(ns: Namespace) -> list[Op]:
            return ns.plan_set_owner(req.src, caller, owner, group)

        await self.nn.write(ctx, plan)
        return cn.SetOwnerResponseProto()

    async def set_replication(
        self, req: cn.SetReplicationRequestProto, ctx: CallContext
    ) -> cn.SetReplicationResponseProto:
        """setReplication: false for a directory."""
        caller = self.nn.caller_of(ctx)

        def plan(ns: Namespace) -> list[Op]:
            return ns.plan_set_replication(req.src, caller, req.replication)

        ops = await self.nn.write(ctx, plan)
        return cn.SetReplicationResponseProto(result=bool(ops))

    async def set_times(
        self, req: cn.SetTimesRequestProto, ctx: CallContext
    ) -> cn.SetTimesResponseProto:
        """setTimes: mtime and atime of src (-1 leaves one as it is)."""
        caller = self.nn.caller_of(ctx)
        mtime, atime = signed64(req.mtime), signed64(req.atime)

        def plan(ns: Namespace) -> list[Op]:
            return ns.plan_set_times(req.src, caller, mtime, atime)

        await self.nn.write(ctx, plan)
        return cn.SetTimesResponseProto()

    # -- what real clients call beyond the namespace calls (design §N.10) -----------------

    async def _stat(self, ctx: CallContext, path: str) -> tuple[FileStatus, Caller]:
        """The status of path (FileNotFoundException when there is none) and the caller."""
        ns = await self.nn.read(ctx)
        caller = self.nn.caller_of(ctx)
        status = ns.stat(path, caller)
        if status is None:
            raise PathNotFoundError(f"File does not exist: {path}")
        return status, caller

    async def _file(self, ctx: CallContext, path: str) -> FileStatus:
        """The status of a file at path (FileNotFoundException for a directory too)."""
        status, _ = await self._stat(ctx, path)
        if status.is_dir:
            raise PathNotFoundError(f"Path is not a file: {path}")
        return status

    async def get_block_locations(
        self, req: cn.GetBlockLocationsRequestProto, ctx: CallContext
    ) -> cn.GetBlockLocationsResponseProto:
        """getBlockLocations: none for an empty file; a file with data needs DataNodes."""
        status = await self._file(ctx, req.src)
        if status.length:
            raise NotSupportedError(
                NO_DATANODES.format(method=f"reading {req.src} (getBlockLocations)")
            )
        return cn.GetBlockLocationsResponseProto(locations=empty_locations(status))

    async def get_located_file_info(
        self, req: cn.GetLocatedFileInfoRequestProto, ctx: CallContext
    ) -> cn.GetLocatedFileInfoResponseProto:
        """getLocatedFileInfo: the status, with (no) block locations for an empty file."""
        ns = await self.nn.read(ctx)
        status = ns.stat(req.src, self.nn.caller_of(ctx))
        if status is None:
            return cn.GetLocatedFileInfoResponseProto()
        proto = file_status_proto(status, b"")
        if not status.is_dir and not status.length:
            proto.locations.CopyFrom(empty_locations(status))
        return cn.GetLocatedFileInfoResponseProto(fs=proto)

    async def get_file_link_info(
        self, req: cn.GetFileLinkInfoRequestProto, ctx: CallContext
    ) -> cn.GetFileLinkInfoResponseProto:
        """getFileLinkInfo: as getFileInfo (a symlink itself, not its target)."""
        ns = await self.nn.read(ctx)
        status = ns.stat(req.src, self.nn.caller_of(ctx))
        if status is None:
            return cn.GetFileLinkInfoResponseProto()
        return cn.GetFileLinkInfoResponseProto(fs=file_status_proto(status, b""))

    async def get_quota_usage(
        self, req: cn.GetQuotaUsageRequestProto, ctx: CallContext
    ) -> cn.GetQuotaUsageResponseProto:
        """getQuotaUsage: names and space used under path against its quotas."""
        ns = await self.nn.read(ctx)
        s = ns.content_summary(req.path, self.nn.caller_of(ctx))
        return cn.GetQuotaUsageResponseProto(
            usage=hdfs.QuotaUsageProto(
                fileAndDirectoryCount=s.file_count + s.directory_count,
                quota=unsigned64(s.ns_quota),
                spaceConsumed=s.space_consumed,
                spaceQuota=unsigned64(s.space_quota),
            )
        )

    async def set_quota(
        self, req: cn.SetQuotaRequestProto, ctx: CallContext
    ) -> cn.SetQuotaResponseProto:
        """setQuota: a directory's name and space quotas (-1 resets, Long.MAX_VALUE keeps)."""
        if req.HasField("storageType"):
            raise NotSupportedError("qjm keeps no storage types: setQuota by storage type")
        caller = self.nn.caller_of(ctx)
        ns_quota, ds_quota = signed64(req.namespaceQuota), signed64(req.storagespaceQuota)

        def plan(ns: Namespace) -> list[Op]:
            return ns.plan_set_quota(req.path, caller, ns_quota, ds_quota)

        await self.nn.write(ctx, plan)
        return cn.SetQuotaResponseProto()

    async def get_preferred_block_size(
        self, req: cn.GetPreferredBlockSizeRequestProto, ctx: CallContext
    ) -> cn.GetPreferredBlockSizeResponseProto:
        """getPreferredBlockSize: the file's block size."""
        status = await self._file(ctx, req.filename)
        return cn.GetPreferredBlockSizeResponseProto(bsize=status.block_size)

    async def is_file_closed(
        self, req: cn.IsFileClosedRequestProto, ctx: CallContext
    ) -> cn.IsFileClosedResponseProto:
        """isFileClosed: false while the file is open for writing."""
        status = await self._file(ctx, req.src)
        return cn.IsFileClosedResponseProto(result=not status.under_construction)

    async def fsync(self, req: cn.FsyncRequestProto, ctx: CallContext) -> cn.FsyncResponseProto:
        """fsync (hflush/hsync): no blocks, so nothing to persist beyond the file itself."""
        await self._file(ctx, req.src)
        return cn.FsyncResponseProto()

    async def set_safe_mode(
        self, req: cn.SetSafeModeRequestProto, ctx: CallContext
    ) -> cn.SetSafeModeResponseProto:
        """setSafeMode: never in safe mode (no blocks to wait for); entering it is refused."""
        if req.action == _SAFEMODE_ENTER:
            raise NotSupportedError("qjm keeps metadata only: it has no safe mode to enter")
        return cn.SetSafeModeResponseProto(result=False)

    async def check_access(
        self, req: cn.CheckAccessRequestProto, ctx: CallContext
    ) -> cn.CheckAccessResponseProto:
        """checkAccess: AccessControlException unless the caller may (rwx) the path."""
        status, caller = await self._stat(ctx, req.path)
        if self.nn.settings.permissions_enabled:
            check_access(status, req.path, caller, req.mode)
        return cn.CheckAccessResponseProto()

    async def get_acl_status(
        self, req: cn.GetAclStatusRequestProto, ctx: CallContext
    ) -> cn.GetAclStatusResponseProto:
        """getAclStatus: owner, group, sticky bit and mode; never any ACL entries."""
        status, _ = await self._stat(ctx, req.src)
        return cn.GetAclStatusResponseProto(
            result=cn.AclStatusProto(
                owner=status.owner,
                group=status.group,
                sticky=bool(status.permission & 0o1000),
                permission=hdfs.FsPermissionProto(perm=status.permission & MODE_MASK),
            )
        )

    async def get_xattrs(
        self, req: cn.GetXAttrsRequestProto, ctx: CallContext
    ) -> cn.GetXAttrsResponseProto:
        """getXAttrs: none kept; asking for a named one fails as HDFS (not found)."""
        await self._stat(ctx, req.src)
        if len(req.xAttrs):
            raise NamenodeError("At least one of the attributes provided was not found.")
        return cn.GetXAttrsResponseProto()

    async def list_xattrs(
        self, req: cn.ListXAttrsRequestProto, ctx: CallContext
    ) -> cn.ListXAttrsResponseProto:
        """listXAttrs: none kept."""
        await self._stat(ctx, req.src)
        return cn.ListXAttrsResponseProto()

    async def list_encryption_zones(
        self, req: cn.ListEncryptionZonesRequestProto, ctx: CallContext
    ) -> cn.ListEncryptionZonesResponseProto:
        """listEncryptionZones: there are none."""
        await self.nn.read(ctx)
        return cn.ListEncryptionZonesResponseProto(hasMore=False)

    async def get_ez_for_path(
        self, req: cn.GetEZForPathRequestProto, ctx: CallContext
    ) -> cn.GetEZForPathResponseProto:
        """getEZForPath: no path is in an encryption zone."""
        await self._stat(ctx, req.src)
        return cn.GetEZForPathResponseProto()

    def handlers(self) -> dict[str, Handler]:
        """Each served method's handler by wire name."""
        return {
            "getFileInfo": self.get_file_info,
            "getListing": self.get_listing,
            "mkdirs": self.mkdirs,
            "create": self.create,
            "complete": self.complete,
            "rename": self.rename,
            "rename2": self.rename2,
            "delete": self.delete,
            "setPermission": self.set_permission,
            "setOwner": self.set_owner,
            "setReplication": self.set_replication,
            "setTimes": self.set_times,
            "getContentSummary": self.get_content_summary,
            "getServerDefaults": self.get_server_defaults,
            "getFsStats": self.get_fs_stats,
            "renewLease": self.renew_lease,
            "msync": self.msync,
            "getHAServiceState": self.get_ha_service_state,
            "getBlockLocations": self.get_block_locations,
            "getLocatedFileInfo": self.get_located_file_info,
            "getFileLinkInfo": self.get_file_link_info,
            "getQuotaUsage": self.get_quota_usage,
            "setQuota": self.set_quota,
            "getPreferredBlockSize": self.get_preferred_block_size,
            "isFileClosed": self.is_file_closed,
            "fsync": self.fsync,
            "setSafeMode": self.set_safe_mode,
            "checkAccess": self.check_access,
            "getAclStatus": self.get_acl_status,
            "getXAttrs": self.get_xattrs,
            "listXAttrs": self.list_xattrs,
            "listEncryptionZones": self.list_encryption_zones,
            "getEZForPath": self.get_ez_for_path,
        }


def client_methods(nn: NameNodeService) -> dict[str, Method]:
    """Every ClientProtocol method qjm answers, for IpcServer.register."""
    handlers = ClientRpc(nn).handlers()
    methods: dict[str, Method] = {}
    for name, spec in protocols.CLIENT_METHODS.items():
        handler = handlers.get(name) or not_supported(name, REFUSED.get(name, NO_DATANODES))
        methods[name] = Method(spec.request, handler)
    return methods
