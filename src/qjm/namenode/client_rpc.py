"""ClientNamenodeProtocol's handlers: HDFS client requests translated to Namespace calls."""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from google.protobuf.message import Message

from qjm.editlog.ops import AddOp, Block, Op, SetGenstampV2Op
from qjm.editlog.ops.types import DelegationTokenIdentifier
from qjm.hdfs.datanode_protocol import bad_block_from_proto, token_to_proto
from qjm.hdfs.proto import Security_pb2 as sec
from qjm.hdfs.proto import hdfs_pb2 as hdfs
from qjm.ipc.sasl import client_security
from qjm.ipc.server import CallContext, Method
from qjm.namenode import protocols
from qjm.namenode.audit import AUDITED, audited
from qjm.namenode.blocks.datanode_manager import AdminState, ReportType
from qjm.namenode.delegation import TOKEN_KIND, identifier_bytes, renewer_short_name
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
from qjm.security.block_token import AccessMode

if TYPE_CHECKING:
    from qjm.namenode.blocks.datanode_manager import DatanodeDescriptor, DatanodeStorageInfo
    from qjm.namenode.namespace import Namespace
    from qjm.namenode.namespace.files import LocatedBlock, LocatedBlocks

    Located = list[tuple[DatanodeDescriptor, DatanodeStorageInfo]]

MIN_BLOCK_SIZE = 1 << 20  # dfs.namenode.fs-limits.min-block-size
_STATE_ON_WIRE = {  # HAServiceStateProto; STOPPING is never sent
    HAState.INITIALIZING: 0,
    HAState.ACTIVE: 1,
    HAState.STANDBY: 2,
    HAState.OBSERVER: 3,
    HAState.STOPPING: 0,
}
NO_RECOVERY = "qjm does not serve {method}"
NO_ACLS = "qjm keeps no ACLs: {method} is not supported (permissions are owner/group/mode only)"
NO_XATTRS = "qjm keeps no extended attributes: {method} is not supported"
# Methods refused outright, with the reason.
REFUSED: dict[str, str] = {
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
_SAFEMODE_LEAVE = 1
_SAFEMODE_ENTER = 2
_SAFEMODE_GET = 3
_SAFEMODE_FORCE_EXIT = 4
MAX_LENGTH = (1 << 63) - 1  # a Java Long.MAX_VALUE: "to the end of the file"
_REPORT_TYPES = {1: "ALL", 2: "LIVE", 3: "DEAD", 4: "DECOMMISSIONING"}
_ADMIN_STATES = {
    AdminState.NORMAL: hdfs.DatanodeInfoProto.NORMAL,
    AdminState.DECOMMISSION_INPROGRESS: hdfs.DatanodeInfoProto.DECOMMISSION_INPROGRESS,
    AdminState.DECOMMISSIONED: hdfs.DatanodeInfoProto.DECOMMISSIONED,
}

Handler = Callable[[Any, CallContext], Awaitable[Message]]


def now_ms() -> int:
    """The wall clock in milliseconds since the epoch (HDFS's modification times)."""
    return time.time_ns() // 1_000_000


def rpc_ids(ctx: CallContext) -> RpcIds:
    """The retry-cache ids of a call (logged with its mutation)."""
    return RpcIds(client_id=ctx.client_id, call_id=ctx.call_id)


def not_supported(method: str, reason: str = NO_RECOVERY) -> Handler:
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


def block_from(b: hdfs.ExtendedBlockProto) -> Block:
    """The block an ExtendedBlockProto names."""
    return Block(b.blockId, b.numBytes, b.generationStamp)


def datanode_info(node: DatanodeDescriptor, num_blocks: int = 0) -> hdfs.DatanodeInfoProto:
    """A DatanodeInfoProto of a registered DataNode, with its figures (num_blocks where the
    caller counted them: getDatanodeReport)."""
    r = node.reg
    capacity, used, remaining = node.capacity(), node.dfs_used(), node.remaining()
    storages = node.storages.values()
    return hdfs.DatanodeInfoProto(
        id=hdfs.DatanodeIDProto(
            ipAddr=r.ip,
            hostName=r.hostname,
            datanodeUuid=r.uuid,
            xferPort=r.xfer_port,
            infoPort=r.info_port,
            ipcPort=r.ipc_port,
            infoSecurePort=r.info_secure_port,  # design §S.13
        ),
        capacity=capacity,
        dfsUsed=used,
        remaining=remaining,
        nonDfsUsed=max(0, capacity - used - remaining),
        blockPoolUsed=sum(s.block_pool_used for s in node.storages.values()),
        lastUpdate=int(time.time() * 1000 - max(0.0, time.monotonic() - node.last_update) * 1000),
        xceiverCount=node.xceiver_count,
        location="/default-rack",
        adminState=_ADMIN_STATES[node.admin_state],
        lastBlockReportTime=max((s.last_block_report_ms for s in storages), default=0),
        numBlocks=num_blocks,
    )


TokenFor = Callable[[Block], sec.TokenProto]


def located_block(
    pool: str,
    block: Block,
    offset: int,
    locs: Located,
    corrupt: bool = False,
    token: sec.TokenProto | None = None,
) -> hdfs.LocatedBlockProto:
    """A LocatedBlockProto: the block, where it starts, its DataNodes and storages, and its
    block token (empty when block tokens are off, design §S.9)."""
    return hdfs.LocatedBlockProto(
        b=hdfs.ExtendedBlockProto(
            poolId=pool,
            blockId=block.block_id,
            generationStamp=block.genstamp,
            numBytes=block.num_bytes,
        ),
        offset=offset,
        locs=[datanode_info(n) for n, _ in locs],
        corrupt=corrupt,
        blockToken=token if token is not None else token_to_proto(None),
        isCached=[False] * len(locs),
        storageTypes=[int(st.storage_type) for _, st in locs],  # type: ignore[misc]
        storageIDs=[st.storage_id for _, st in locs],
    )


def located_blocks(
    pool: str, lbs: LocatedBlocks[Located], token_for: TokenFor | None = None
) -> hdfs.LocatedBlocksProto:
    """getBlockLocations' LocatedBlocksProto of the namespace's answer, each block with the
    token token_for makes (none: empty tokens)."""

    def one(lb: LocatedBlock[Located]) -> hdfs.LocatedBlockProto:
        token = token_for(lb.block) if token_for is not None else None
        return located_block(pool, lb.block, lb.offset, lb.locations, token=token)

    out = hdfs.LocatedBlocksProto(
        fileLength=lbs.file_length,
        underConstruction=lbs.under_construction,
        isLastBlockComplete=lbs.last_complete,
        blocks=[one(lb) for lb in lbs.blocks],
    )
    if lbs.last_block is not None:
        out.lastBlock.CopyFrom(one(lbs.last_block))
    return out


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
            if req.needLocation and not e.is_dir and e.symlink is None:
                # listLocatedStatus casts every file to HdfsLocatedFileStatus: a file must
                # carry locations, its blocks' DataNodes
                child = req.src.rstrip("/") + "/" + e.name
                proto.locations.CopyFrom(self._locate(ns, child, self.nn.caller_of(ctx)))
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
        """getFsStats: live DataNodes' capacity and the block manager's counts."""
        await self.nn.read(ctx)
        s = self.nn.blocks.bm.fs_stats()
        return cn.GetFsStatsResponseProto(
            capacity=s.capacity,
            used=s.used,
            remaining=s.remaining,
            under_replicated=s.under_replicated,
            corrupt_blocks=s.corrupt_blocks,
            missing_blocks=s.missing_blocks,
            missing_repl_one_blocks=s.missing_repl_one_blocks,
            blocks_in_future=0,
            pending_deletion_blocks=s.pending_deletion,
        )

    async def get_datanode_report(
        self, req: cn.GetDatanodeReportRequestProto, ctx: CallContext
    ) -> cn.GetDatanodeReportResponseProto:
        """getDatanodeReport: ALL, LIVE, DEAD or DECOMMISSIONING DataNodes."""
        await self.nn.read(ctx)
        kind = _REPORT_TYPES.get(int(req.type))
        if kind is None:
            return cn.GetDatanodeReportResponseProto()
        nodes = self.nn.blocks.dm.datanode_report(ReportType(kind))
        bm = self.nn.blocks.bm
        return cn.GetDatanodeReportResponseProto(
            di=[datanode_info(n, bm.blocks_on(n)) for n in nodes]
        )

    async def renew_lease(
        self, req: cn.RenewLeaseRequestProto, ctx: CallContext
    ) -> cn.RenewLeaseResponseProto:
        """renewLease: the client's leases start their soft and hard limits again (design
        §B.16); a standby refuses it as HDFS does."""
        await self.nn.read(ctx)
        self.nn.leases.clock.renew(req.clientName)
        return cn.RenewLeaseResponseProto()

    async def report_bad_blocks(
        self, req: cn.ReportBadBlocksRequestProto, ctx: CallContext
    ) -> cn.ReportBadBlocksResponseProto:
        """reportBadBlocks: a reader found replicas whose bytes fail their sums; they are
        marked corrupt (design §B.5). The active takes it; a standby refuses, as HDFS's."""
        self.nn.check_write(ctx)
        await self.nn.read(ctx)
        await self.nn.blocks.report_bad_blocks([bad_block_from_proto(b) for b in req.blocks])
        return cn.ReportBadBlocksResponseProto()

    async def refresh_nodes(
        self, req: cn.RefreshNodesRequestProto, ctx: CallContext
    ) -> cn.RefreshNodesResponseProto:
        """refreshNodes (superuser): read the exclude list again; listed DataNodes start to
        decommission, the others return to service. A standby takes it too, as HDFS's, so
        that both NameNodes agree (design §B.20)."""
        caller = self.nn.caller_of(ctx)
        if not caller.superuser:
            raise AccessControlError(
                f"Access denied for user {caller.user}. Superuser privilege is required"
            )
        await self.nn.refresh_nodes()
        return cn.RefreshNodesResponseProto()

    async def roll_edits(
        self, req: cn.RollEditsRequestProto, ctx: CallContext
    ) -> cn.RollEditsResponseProto:
        """rollEdits (superuser, active): the new segment's first txid (design §N.11)."""
        return cn.RollEditsResponseProto(newSegmentTxId=await self.nn.roll_edits(ctx))

    async def save_namespace(
        self, req: cn.SaveNamespaceRequestProto, ctx: CallContext
    ) -> cn.SaveNamespaceResponseProto:
        """saveNamespace (superuser, in safe mode): an image now, on the active or a standby
        (design §N.11); a time window or txn gap is not honoured, the image is always saved."""
        await self.nn.save_namespace(ctx)
        return cn.SaveNamespaceResponseProto(saved=True)

    async def meta_save(
        self, req: cn.MetaSaveRequestProto, ctx: CallContext
    ) -> cn.MetaSaveResponseProto:
        """metaSave (superuser): a file in the NameNode's log directory (design §N.11)."""
        await self.nn.meta_save(ctx, req.filename)
        return cn.MetaSaveResponseProto()

    async def list_corrupt_file_blocks(
        self, req: cn.ListCorruptFileBlocksRequestProto, ctx: CallContext
    ) -> cn.ListCorruptFileBlocksResponseProto:
        """listCorruptFileBlocks (superuser): files under path with a block no live replica
        is left of, a page at a time from the cookie (design §B.17)."""
        ns = await self.nn.read(ctx)
        caller = self.nn.caller_of(ctx)
        if not caller.superuser:
            raise AccessControlError(
                f"Access denied for user {caller.user}. Superuser privilege is required"
            )
        start = int(req.cookie) if req.cookie.isdigit() else 0
        rows, cookie = self.nn.blocks.corrupt_files(ns, req.path, start)
        return cn.ListCorruptFileBlocksResponseProto(
            corrupt=hdfs.CorruptFileBlocksProto(files=[p for _, p in rows], cookie=str(cookie))
        )

    async def recover_lease(
        self, req: cn.RecoverLeaseRequestProto, ctx: CallContext
    ) -> cn.RecoverLeaseResponseProto:
        """recoverLease: true when the file is closed or closes at once; else its last
        block's recovery is started and the answer is false (design §B.16)."""
        self.nn.check_write(ctx)
        caller = self.nn.caller_of(ctx)
        machine = ctx.peer.rsplit(":", 1)[0].strip("[]")
        ns = await self.nn.read(ctx)
        if ns.check_recover_lease(req.src, caller, req.clientName, machine):
            return cn.RecoverLeaseResponseProto(result=True)
        closed = await self.nn.leases.release(req.src, req.clientName, "recoverLease")
        return cn.RecoverLeaseResponseProto(result=closed)

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
            raise NotSupportedError("create with CreateFlag.APPEND: call append instead")
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
        if not overwrite:
            await self.nn.leases.recover_for(req.src, req.clientName, "CREATE_FILE", machine)
        self.nn.leases.clock.renew(req.clientName)
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
        """complete: close the file once its blocks have min replicas; false until then."""
        caller = self.nn.caller_of(ctx)
        when = now_ms()
        last = block_from(req.last) if req.HasField("last") else None
        blocks = self.nn.blocks
        done = [False]

        def plan(ns: Namespace) -> list[Op]:
            c = ns.plan_complete_file(
                req.src, caller, req.clientName, req.fileId, last, blocks.is_complete, when
            )
            done[0] = c.done
            return c.ops

        await self.nn.write(ctx, plan)
        return cn.CompleteResponseProto(result=done[0])

    # -- files with blocks (design §B.10, §B.14) -------------------------------------------

    def _pool(self) -> str:
        return self.nn.blocks.namespace_info().block_pool_id

    def _token(self, block: Block, caller: Caller, *modes: AccessMode) -> sec.TokenProto | None:
        """A block token granting modes on block to the caller; None when tokens are off
        (design §S.9)."""
        tokens = self.nn.blocks.tokens
        if tokens is None:
            return None
        return token_to_proto(tokens.token(caller.user, self._pool(), block.block_id, modes))

    def _read_tokens(self, caller: Caller) -> TokenFor | None:
        """READ tokens for a reader's located blocks; None when tokens are off."""
        if self.nn.blocks.tokens is None:
            return None

        def token_for(block: Block) -> sec.TokenProto:
            token = self._token(block, caller, AccessMode.READ)
            assert token is not None
            return token

        return token_for

    def _locate(self, ns: Namespace, path: str, caller: Caller) -> hdfs.LocatedBlocksProto:
        """The LocatedBlocksProto of a whole file."""
        blocks = self.nn.blocks
        lbs = ns.block_locations(path, caller, 0, MAX_LENGTH, blocks.locations, blocks.is_complete)
        return located_blocks(self._pool(), lbs, self._read_tokens(caller))

    def _nodes_named(self, names: list[str]) -> list[str]:
        """The uuids of DataNodes named by "host:xferPort" (favoredNodes)."""
        dm = self.nn.blocks.dm
        out = []
        for name in names:
            host, _, port = name.rpartition(":")
            for node in dm.nodes.values():
                r = node.reg
                if (r.ip == host or r.hostname == host) and str(r.xfer_port) == port:
                    out.append(node.uuid)
        return out

    def _writer(self, machine: str) -> str | None:
        """The DataNode on the client's machine, if one is registered (placement's writer)."""
        for node in self.nn.blocks.dm.nodes.values():
            if node.reg.ip == machine or node.reg.hostname == machine:
                return node.uuid
        return None

    def _targets(
        self, src: str, n: int, machine: str, excluded: list[str], favored: list[str], size: int
    ) -> Located:
        """n targets for a new replica pipeline, or HDFS's IOException when none fits."""
        blocks = self.nn.blocks
        chosen = blocks.bm.choose_targets(
            n, writer=self._writer(machine), excluded=excluded, favored=favored, block_size=size
        )
        need = blocks.bm.min_replication
        if len(chosen) < need:
            raise NamenodeError(
                f"File {src} could only be written to {len(chosen)} of the {need} "
                f"minReplication nodes. There are {len(blocks.dm.live_nodes())} datanode(s) "
                f"running and {len(excluded)} node(s) are excluded in this operation."
            )
        return [(t.node, t.storage) for t in chosen]

    async def add_block(
        self, req: cn.AddBlockRequestProto, ctx: CallContext
    ) -> cn.AddBlockResponseProto:
        """addBlock: commit the previous block, allocate the next with targets on DataNodes."""
        caller = self.nn.caller_of(ctx)
        previous = block_from(req.previous) if req.HasField("previous") else None
        excluded = [d.id.datanodeUuid for d in req.excludeNodes]
        favored = self._nodes_named(list(req.favoredNodes))
        blocks = self.nn.blocks
        got: dict[str, Any] = {}

        def plan(ns: Namespace) -> list[Op]:
            added = ns.plan_add_block(
                req.src, caller, req.clientName, req.fileId, previous, blocks.is_complete
            )
            got["targets"] = self._targets(
                req.src,
                added.replication,
                added.client_machine,
                excluded,
                favored,
                added.block_size,
            )
            got["added"] = added
            return added.ops

        await self.nn.write(ctx, plan)
        added, targets = got["added"], got["targets"]
        blocks.set_expected(added.block, targets)
        token = self._token(added.block, caller, AccessMode.WRITE)
        return cn.AddBlockResponseProto(
            block=located_block(self._pool(), added.block, added.offset, targets, token=token)
        )

    async def get_additional_datanode(
        self, req: cn.GetAdditionalDatanodeRequestProto, ctx: CallContext
    ) -> cn.GetAdditionalDatanodeResponseProto:
        """getAdditionalDatanode: more targets for a pipeline that lost a DataNode."""
        ns = await self.nn.read(ctx)
        self.nn.check_write(ctx)
        caller = self.nn.caller_of(ctx)
        f = ns.file_blocks(req.src)
        if f is None:
            raise PathNotFoundError(f"File does not exist: {req.src}")
        ns.block_locations(req.src, caller, 0, 0, lambda b: None, lambda b: True)  # READ
        dm = self.nn.blocks.dm
        existing = [d.id.datanodeUuid for d in req.existings]
        excluded = existing + [d.id.datanodeUuid for d in req.excludes]
        more = self._targets(
            req.src,
            int(req.numAdditionalNodes),
            ctx.peer.rsplit(":", 1)[0].strip("[]"),
            excluded,
            [],
            f.blocks[-1].num_bytes if f.blocks else 0,
        )
        locs: Located = []
        for uuid, sid in zip(existing, req.existingStorageUuids, strict=False):
            node = dm.nodes.get(uuid)
            if node is not None and sid in node.storages:
                locs.append((node, node.storages[sid]))
        block = block_from(req.blk)
        # HDFS's getAdditionalDatanode: COPY, for the TRANSFER_BLOCK to the new node
        token = self._token(block, caller, AccessMode.COPY)
        return cn.GetAdditionalDatanodeResponseProto(
            block=located_block(self._pool(), block, 0, locs + more, token=token)
        )

    async def abandon_block(
        self, req: cn.AbandonBlockRequestProto, ctx: CallContext
    ) -> cn.AbandonBlockResponseProto:
        """abandonBlock: drop the file's last block (the client will ask for another)."""
        caller = self.nn.caller_of(ctx)
        block = block_from(req.b)

        def plan(ns: Namespace) -> list[Op]:
            return ns.plan_abandon_block(req.src, caller, req.holder, req.fileId, block)

        await self.nn.write(ctx, plan)
        return cn.AbandonBlockResponseProto()

    async def update_block_for_pipeline(
        self, req: cn.UpdateBlockForPipelineRequestProto, ctx: CallContext
    ) -> cn.UpdateBlockForPipelineResponseProto:
        """updateBlockForPipeline: a new generation stamp for an open file's last block."""
        block = block_from(req.block)

        def plan(ns: Namespace) -> list[Op]:
            return ns.plan_update_block_for_pipeline(block, req.clientName)

        ops = await self.nn.write(ctx, plan)
        gs = next(op.genstamp_v2 for op in ops if isinstance(op, SetGenstampV2Op))
        new = Block(block.block_id, block.num_bytes, gs)
        token = self._token(new, self.nn.caller_of(ctx), AccessMode.WRITE)
        return cn.UpdateBlockForPipelineResponseProto(
            block=located_block(self._pool(), new, 0, [], token=token)
        )

    async def update_pipeline(
        self, req: cn.UpdatePipelineRequestProto, ctx: CallContext
    ) -> cn.UpdatePipelineResponseProto:
        """updatePipeline: the last block takes the new generation stamp, length and nodes."""
        old, new = block_from(req.oldBlock), block_from(req.newBlock)
        ids = rpc_ids(ctx)

        def plan(ns: Namespace) -> list[Op]:
            return ns.plan_update_pipeline(req.clientName, old, new, ids)

        entry = await self._retry_entry(ctx)
        if entry is not None and entry.succeeded:
            return cn.UpdatePipelineResponseProto()
        done = False
        try:
            await self.nn.write(ctx, plan)
            done = True
        finally:
            RetryCache.set_state(entry, done)
        dm = self.nn.blocks.dm
        targets: Located = []
        for d, sid in zip(req.newNodes, req.storageIDs, strict=False):
            node = dm.nodes.get(d.datanodeUuid)
            if node is not None and sid in node.storages:
                targets.append((node, node.storages[sid]))
        self.nn.blocks.set_expected(new, targets)
        return cn.UpdatePipelineResponseProto()

    async def append(self, req: cn.AppendRequestProto, ctx: CallContext) -> cn.AppendResponseProto:
        """append: reopen the file for clientName; its partial last block to write on."""
        caller = self.nn.caller_of(ctx)
        machine = ctx.peer.rsplit(":", 1)[0].strip("[]")
        new_block = bool(req.flag & cn.NEW_BLOCK) if req.HasField("flag") else False
        blocks = self.nn.blocks
        ids = rpc_ids(ctx)
        got: dict[str, Any] = {}

        def plan(ns: Namespace) -> list[Op]:
            a = ns.plan_append(
                req.src, caller, req.clientName, machine, new_block, blocks.is_complete, ids
            )
            got["a"] = a
            return a.ops

        entry = await self._retry_entry(ctx)
        if entry is not None and entry.succeeded:
            raise NamenodeError(f"append of {req.src} was retried after it succeeded; reopen")
        await self.nn.leases.recover_for(req.src, req.clientName, "APPEND_FILE", machine)
        self.nn.leases.clock.renew(req.clientName)
        done = False
        try:
            await self.nn.write(ctx, plan)
            done = True
        finally:
            RetryCache.set_state(entry, done)
        ns = await self.nn.read(ctx)
        status = ns.stat(req.src, caller)
        out = cn.AppendResponseProto()
        a = got["a"]
        if a.last_block is not None:
            token = self._token(a.last_block, caller, AccessMode.WRITE)
            locs = blocks.locations(a.last_block)
            out.block.CopyFrom(
                located_block(self._pool(), a.last_block, a.offset, locs, token=token)
            )
        if status is not None:
            out.stat.CopyFrom(file_status_proto(status, b""))
        return out

    async def truncate(
        self, req: cn.TruncateRequestProto, ctx: CallContext
    ) -> cn.TruncateResponseProto:
        """truncate: at a block boundary done at once (true); inside a block the file stays
        open and its last block is recovered to the length (false) (design §B.16)."""
        caller = self.nn.caller_of(ctx)
        machine = ctx.peer.rsplit(":", 1)[0].strip("[]")
        when = now_ms()
        got: dict[str, Any] = {}

        def plan(ns: Namespace) -> list[Op]:
            t = ns.plan_truncate(req.src, caller, req.newLength, req.clientName, machine, when)
            got["t"] = t
            return t.ops

        entry = await self._retry_entry(ctx)
        if entry is not None and entry.succeeded:
            return cn.TruncateResponseProto(result=entry.payload is not False)
        await self.nn.leases.recover_for(req.src, req.clientName, "TRUNCATE_FILE", machine)
        done = False
        result = True
        try:
            await self.nn.write(ctx, plan)
            t = got["t"]
            result = t.done
            if t.recover is not None:
                ns = await self.nn.read(ctx)
                self._start_truncate_recovery(ns, req.src, req.clientName, t.recover)
            done = True
        finally:
            RetryCache.set_state(entry, done, result)
        return cn.TruncateResponseProto(result=result)

    def _start_truncate_recovery(
        self, ns: Namespace, src: str, client_name: str, cut: Block
    ) -> None:
        """The recovery of a truncate inside a block: the block as its replicas hold it,
        cut under the truncate's new stamp (HDFS's in-place truncate, design §B.16)."""
        from qjm.namenode.namespace.recovery import BlockRecovery

        self.nn.leases.clock.renew(client_name)
        f = ns.file_blocks(src)
        if f is None or not f.blocks:
            return
        last = f.blocks[-1]
        self.nn.blocks.start_recovery(BlockRecovery(f.path, last, cut.genstamp, cut))

    async def concat(self, req: cn.ConcatRequestProto, ctx: CallContext) -> cn.ConcatResponseProto:
        """concat: the sources' blocks appended to the target, the sources deleted."""
        caller = self.nn.caller_of(ctx)
        when = now_ms()
        ids = rpc_ids(ctx)

        def plan(ns: Namespace) -> list[Op]:
            return ns.plan_concat(req.trg, list(req.srcs), caller, when, ids)

        entry = await self._retry_entry(ctx)
        if entry is not None and entry.succeeded:
            return cn.ConcatResponseProto()
        done = False
        try:
            await self.nn.write(ctx, plan)
            done = True
        finally:
            RetryCache.set_state(entry, done)
        return cn.ConcatResponseProto()

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
        """getBlockLocations: the blocks covering the range, with their DataNodes."""
        ns = await self.nn.read(ctx)
        blocks = self.nn.blocks
        lbs = ns.block_locations(
            req.src,
            self.nn.caller_of(ctx),
            signed64(req.offset),
            signed64(req.length),
            blocks.locations,
            blocks.is_complete,
        )
        tokens = self._read_tokens(self.nn.caller_of(ctx))
        return cn.GetBlockLocationsResponseProto(
            locations=located_blocks(self._pool(), lbs, tokens)
        )

    async def get_located_file_info(
        self, req: cn.GetLocatedFileInfoRequestProto, ctx: CallContext
    ) -> cn.GetLocatedFileInfoResponseProto:
        """getLocatedFileInfo: the status, with (no) block locations for an empty file."""
        ns = await self.nn.read(ctx)
        status = ns.stat(req.src, self.nn.caller_of(ctx))
        if status is None:
            return cn.GetLocatedFileInfoResponseProto()
        proto = file_status_proto(status, b"")
        if not status.is_dir and status.symlink is None:
            proto.locations.CopyFrom(self._locate(ns, req.src, self.nn.caller_of(ctx)))
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
        """fsync (hflush/hsync): the last block's length, when the client sends one."""
        caller = self.nn.caller_of(ctx)

        def plan(ns: Namespace) -> list[Op]:
            return ns.plan_fsync(req.src, caller, req.client, req.fileId, req.lastBlockLength)

        await self.nn.write(ctx, plan)
        return cn.FsyncResponseProto()

    async def set_safe_mode(
        self, req: cn.SetSafeModeRequestProto, ctx: CallContext
    ) -> cn.SetSafeModeResponseProto:
        """setSafeMode: GET answers whether it is on; ENTER and LEAVE (superuser) change it.
        As HDFS's: a checked call is for the active only; an unchecked one (dfsadmin's, to
        each NameNode in turn) is answered in any state, so a standby enters safe mode too
        and keeps it when it becomes active (design §N.11)."""
        sm = self.nn.blocks.safe_mode
        if req.checked:
            self.nn.check_write(ctx)
        if req.action in (_SAFEMODE_ENTER, _SAFEMODE_LEAVE, _SAFEMODE_FORCE_EXIT):
            caller = self.nn.caller_of(ctx)
            if not caller.superuser:
                raise AccessControlError(
                    f"Access denied for user {caller.user}. Superuser privilege is required"
                )
            if req.action == _SAFEMODE_ENTER:
                sm.enter()
            else:
                sm.leave()
        elif req.action != _SAFEMODE_GET:
            raise IllegalArgumentError(f"setSafeMode: unknown action {req.action}")
        return cn.SetSafeModeResponseProto(result=sm.is_on)

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

    # -- delegation tokens (design §S.10) ------------------------------------------------------

    async def get_delegation_token(
        self, req: sec.GetDelegationTokenRequestProto, ctx: CallContext
    ) -> sec.GetDelegationTokenResponseProto:
        """getDelegationToken: a token owned by the Kerberos caller, renewable by renewer."""
        self.nn.check_write(ctx)
        if ctx.auth == "SIMPLE":  # no secret manager runs without security: no token, as HDFS
            return sec.GetDelegationTokenResponseProto()
        if ctx.auth != "KERBEROS":
            raise NamenodeError(
                "Delegation Token can be issued only with kerberos or web authentication"
            )
        owner, renewer = ctx.principal or ctx.user, renewer_short_name(req.renewer)
        when, policy, key = now_ms(), self.nn.token_policy, os.urandom(64)
        issued: list[tuple[DelegationTokenIdentifier, bytes]] = []

        def plan(ns: Namespace) -> list[Op]:
            ops, ident, password = ns.tokens.plan_get(
                owner, renewer, ctx.real_user, when, policy, key
            )
            issued.append((ident, password))
            return ops

        await self.nn.write(ctx, plan)
        ident, password = issued[-1]
        # the service is left to the client, as HDFS's (ha-hdfs:<nameservice> in HA)
        token = sec.TokenProto(
            identifier=identifier_bytes(ident), password=password, kind=TOKEN_KIND, service=""
        )
        return sec.GetDelegationTokenResponseProto(token=token)

    async def renew_delegation_token(
        self, req: sec.RenewDelegationTokenRequestProto, ctx: CallContext
    ) -> sec.RenewDelegationTokenResponseProto:
        """renewDelegationToken: only the token's renewer, authenticated by Kerberos."""
        self.nn.check_write(ctx)
        if ctx.auth not in ("KERBEROS", "SIMPLE"):
            raise NamenodeError(
                "Delegation Token can be renewed only with kerberos or web authentication"
            )
        renewer, when, policy = ctx.user, now_ms(), self.nn.token_policy
        expiry: list[int] = []

        def plan(ns: Namespace) -> list[Op]:
            ops, new_expiry = ns.tokens.plan_renew(
                req.token.identifier, req.token.password, renewer, when, policy
            )
            expiry.append(new_expiry)
            return ops

        await self.nn.write(ctx, plan)
        return sec.RenewDelegationTokenResponseProto(newExpiryTime=expiry[-1])

    async def cancel_delegation_token(
        self, req: sec.CancelDelegationTokenRequestProto, ctx: CallContext
    ) -> sec.CancelDelegationTokenResponseProto:
        """cancelDelegationToken: the token's owner or its renewer."""
        self.nn.check_write(ctx)
        canceller, short = ctx.principal or ctx.user, ctx.user

        def plan(ns: Namespace) -> list[Op]:
            return ns.tokens.plan_cancel(req.token.identifier, canceller, short)

        await self.nn.write(ctx, plan)
        return sec.CancelDelegationTokenResponseProto()

    def handlers(self) -> dict[str, Handler]:
        """Each served method's handler by wire name."""
        return {
            "getDelegationToken": self.get_delegation_token,
            "renewDelegationToken": self.renew_delegation_token,
            "cancelDelegationToken": self.cancel_delegation_token,
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
            "reportBadBlocks": self.report_bad_blocks,
            "listCorruptFileBlocks": self.list_corrupt_file_blocks,
            "refreshNodes": self.refresh_nodes,
            "rollEdits": self.roll_edits,
            "saveNamespace": self.save_namespace,
            "metaSave": self.meta_save,
            "recoverLease": self.recover_lease,
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
            "getDatanodeReport": self.get_datanode_report,
            "addBlock": self.add_block,
            "getAdditionalDatanode": self.get_additional_datanode,
            "abandonBlock": self.abandon_block,
            "updateBlockForPipeline": self.update_block_for_pipeline,
            "updatePipeline": self.update_pipeline,
            "append": self.append,
            "truncate": self.truncate,
            "concat": self.concat,
        }


def client_methods(nn: NameNodeService) -> dict[str, Method]:
    """Every ClientProtocol method qjm answers, for IpcServer.register."""
    handlers = ClientRpc(nn).handlers()
    methods: dict[str, Method] = {}
    auth = "KERBEROS" if client_security() is not None else "SIMPLE"
    for name, spec in protocols.CLIENT_METHODS.items():
        handler = handlers.get(name) or not_supported(name, REFUSED.get(name, NO_RECOVERY))
        if name in AUDITED:
            handler = audited(name, handler, nn.audit_status, auth, nn.audit_log)
        methods[name] = Method(spec.request, handler)
    return methods
