"""Lease recovery and block recovery: the namespace's side (design §B.16).

HDFS's FSNamesystem.internalReleaseLease (close a file whose writer is gone, or start the
recovery of its last block under a new generation stamp) and commitBlockSynchronization
(the recovered block's length and stamp, and the file closed), as plans: each returns the
ops to log; what only the BlockManager knows comes in as callables.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from qjm.editlog.ops import Block, CloseOp, Op, PermissionStatus, ReassignLeaseOp, UpdateBlocksOp
from qjm.namenode.errors import (
    AlreadyBeingCreatedError,
    NamenodeError,
    PathNotFoundError,
)
from qjm.namenode.inodes import FILE
from qjm.namenode.namespace.files import BlockTest, FilesMixin, block_name
from qjm.namenode.namespace.paths import join_path
from qjm.namenode.permissions import WRITE
from qjm.namenode.types import Caller

NAMENODE_LEASE_HOLDER = "HDFS_NameNode"  # HdfsServerConstants.NAMENODE_LEASE_HOLDER


@dataclass(frozen=True)
class BlockRecovery:
    """A recovery to run: the last block as its replicas hold it, the recovery id (a new
    generation stamp) and, for a truncate, the block it is cut to."""

    path: str
    block: Block
    recovery_id: int
    truncate_block: Block | None = None


@dataclass(frozen=True)
class LeaseRelease:
    """What releasing a lease does: ops to log, whether they close the file, a recovery."""

    ops: list[Op]
    closed: bool
    recovery: BlockRecovery | None = None


@dataclass(frozen=True)
class LastBlockFacts:
    """What the BlockManager knows of a block that lease recovery needs."""

    committed: BlockTest  # COMMITTED or COMPLETE in the block map
    has_min: BlockTest  # complete, or with its minimum live replicas
    located: Callable[[Block], int]  # how many expected or stored locations it has
    recovering: BlockTest  # a recovery of it is under way (not yet timed out)


class RecoveryMixin(FilesMixin):
    """Plans for recoverLease, the lease monitor and commitBlockSynchronization."""

    def open_files(self) -> list[tuple[str, str]]:
        """(path, lease holder) of every file under construction."""
        st = self._st
        return [(st.path_of(s), holder) for s, (holder, _) in st.lease.items() if st.is_uc(s)]

    def truncate_block(self, path: str) -> Block | None:
        """The truncate block of a file cut inside its last block, until recovered."""
        r = self._resolve(path)
        return self._st.truncating.get(r.last) if r.found else None

    def _close_op(self, s: int, src: str, blocks: tuple[Block, ...], now_ms: int) -> CloseOp:
        st = self._st
        return CloseOp(  # HDFS's logCloseFile leaves the inode id 0
            path=src,
            replication=st.replication[s],
            mtime=now_ms,
            atime=st.atime[s],
            block_size=st.block_size[s],
            blocks=blocks,
            permission_status=PermissionStatus(st.owner_name(s), st.group_name(s), st.mode[s]),
        )

    def check_recover_lease(
        self, path: str, caller: Caller, client_name: str, client_machine: str
    ) -> bool:
        """recoverLease's checks: True when the file is closed already (nothing to do).

        As HDFS's FSNamesystem.recoverLease: the file must exist; WRITE on it is needed
        while it is open; a recovery under way is HDFS's RecoveryInProgressException.
        """
        r = self._resolve(path)
        pc = self._pc(caller)
        self._traverse(pc, r)
        st = self._st
        src = join_path(r.comps)
        if not r.found or st.kind(r.last) != FILE:
            raise PathNotFoundError(f"File not found: {src}")
        s = r.last
        if not st.is_uc(s):
            return True
        pc.check(s, WRITE)
        if s not in st.lease:
            raise AlreadyBeingCreatedError(
                f"Failed to RECOVER_LEASE {src} for {client_name} on {client_machine} because "
                "the file is under construction but no leases found."
            )
        return False

    def plan_release_lease(
        self,
        path: str,
        recovery_holder: str | None,
        facts: LastBlockFacts,
        now_ms: int,
    ) -> LeaseRelease:
        """Release an open file's lease (HDFS's internalReleaseLease, design §B.16).

        Closes the file (OP_CLOSE) when its last block is committed with its minimum
        replicas, or is empty and placed nowhere (then dropped); else starts the recovery
        of the last block under a new generation stamp (OP_SET_GENSTAMP_V2) unless one is
        under way, and moves the lease to recovery_holder (OP_REASSIGN_LEASE; None keeps
        the holder, as a soft-limit recovery does).
        """
        r = self._resolve(path)
        st = self._st
        src = join_path(r.comps)
        if not r.found or st.kind(r.last) != FILE:
            raise PathNotFoundError(f"File not found: {src}")
        s = r.last
        if not st.is_uc(s):
            return LeaseRelease([], True)
        blocks = st.blocks.get(s, ())
        if not blocks:
            return LeaseRelease([self._close_op(s, src, (), now_ms)], True)
        last = blocks[-1]
        penultimate_ok = len(blocks) < 2 or facts.has_min(blocks[-2])
        truncating = st.truncating.get(s)
        if truncating is None and facts.committed(last):
            if penultimate_ok and facts.has_min(last):
                return LeaseRelease([self._close_op(s, src, blocks, now_ms)], True)
            if not penultimate_ok:
                raise AlreadyBeingCreatedError(
                    f"DIR* NameSystem.internalReleaseLease: Failed to release lease for file "
                    f"{src}. Committed blocks are waiting to be minimally replicated. "
                    "Try again later."
                )
        if truncating is None and last.num_bytes == 0 and facts.located(last) == 0:
            # no DataNode holds it: the writer died before writing; drop it and close
            return LeaseRelease([self._close_op(s, src, blocks[:-1], now_ms)], True)
        holder = st.lease.get(s, ("", ""))[0]
        ops: list[Op] = []
        recovery = None
        if not facts.recovering(last):
            gs_op = self.block_ids.next_genstamp()
            rid = gs_op.genstamp_v2
            cut = None if truncating is None else Block(last.block_id, truncating.num_bytes, rid)
            ops.append(gs_op)
            recovery = BlockRecovery(src, last, rid, cut)
        if recovery_holder is not None and recovery_holder != holder:
            ops.append(ReassignLeaseOp(lease_holder=holder, path=src, new_holder=recovery_holder))
        return LeaseRelease(ops, False, recovery)

    def plan_commit_block_synchronization(
        self,
        block: Block,
        recovery_id: int,
        expected_recovery_id: int | None,
        new_length: int,
        close_file: bool,
        delete_block: bool,
        now_ms: int,
    ) -> tuple[str | None, list[Op]]:
        """commitBlockSynchronization: the recovered last block's length and stamp, and the
        file closed (OP_CLOSE) or its blocks persisted (OP_UPDATE_BLOCKS) (design §B.16).

        expected_recovery_id is the recovery the BlockManager started for the block (None:
        none). Answers the file's path (None when there is nothing to do: a retried call
        for a closed file) and the ops.
        """
        st = self._st
        found = None
        for s, _ in st.lease.items():
            blocks = st.blocks.get(s, ())
            if blocks and blocks[-1].block_id == block.block_id and st.is_uc(s):
                found = s
                break
        if found is None:
            if delete_block or expected_recovery_id is None:
                return None, []  # HDFS: the file is closed already, or the block is gone
            raise NamenodeError(f"Block (={block_name(block)}) not found")
        s = found
        src = st.path_of(s)
        blocks = st.blocks[s]
        if expected_recovery_id != recovery_id:
            raise NamenodeError(
                f"The recovery id {recovery_id} does not match current recovery id "
                f"{expected_recovery_id or 0} for block {block_name(block)}"
            )
        last = blocks[-1]
        if delete_block:
            final = blocks[:-1]
        else:
            final = (*blocks[:-1], Block(last.block_id, new_length, recovery_id))
        if close_file:
            return src, [self._close_op(s, src, final, now_ms)]
        return src, [UpdateBlocksOp(path=src, blocks=final)]
