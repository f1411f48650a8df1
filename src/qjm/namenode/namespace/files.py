"""Files with blocks: the namespace's side of HDFS's write protocol (design §B.10).

Each plan validates a call against the tree and returns the ops to log with the answer the
caller gives the client; nothing changes until apply. What only the BlockManager knows
(whether a block has its minimum replicas, where its replicas are) comes in as a callable,
so the plans stay pure and a standby replaying the ops needs none of it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from qjm.editlog.ops import (
    AddBlockOp,
    AppendOp,
    Block,
    CloseOp,
    ConcatDeleteOp,
    Op,
    PermissionStatus,
    TruncateOp,
    UpdateBlocksOp,
)
from qjm.namenode.errors import (
    AlreadyBeingCreatedError,
    FileAlreadyExistsError,
    IllegalArgumentError,
    JavaIllegalArgumentError,
    LeaseError,
    NamenodeError,
    NotReplicatedYetError,
    PathNotFoundError,
)
from qjm.namenode.inodes import FILE
from qjm.namenode.namespace.paths import join_path
from qjm.namenode.namespace.quota import QuotaMixin
from qjm.namenode.permissions import READ, WRITE
from qjm.namenode.types import Caller, RpcIds

MAX_BLOCKS_PER_FILE = 10_000  # dfs.namenode.fs-limits.max-blocks-per-file (Hadoop 3)

L = TypeVar("L")
BlockTest = Callable[[Block], bool]


def block_name(b: Block | None) -> str:
    """A block as HDFS's Block.toString writes it: blk_<id>_<genstamp>."""
    return "null" if b is None else f"blk_{b.block_id}_{b.genstamp}"


def same_block(a: Block | None, b: Block | None) -> bool:
    """Same id and generation stamp, or both absent (HDFS's Block.matchingIdAndGenStamp)."""
    if a is None or b is None:
        return a is b
    return a.block_id == b.block_id and a.genstamp == b.genstamp


@dataclass(frozen=True)
class FileBlocks:
    """A file's blocks as the block manager follows them (design §B.14)."""

    path: str
    blocks: tuple[Block, ...]
    replication: int
    under_construction: bool


@dataclass(frozen=True, slots=True)
class FsckEntry:
    """One path as fsck walks it: kind, length, and a file's blocks or a directory's entries."""

    path: str
    kind: int  # FILE, DIRECTORY or SYMLINK
    length: int
    replication: int
    blocks: tuple[Block, ...]
    under_construction: bool
    children: tuple[str, ...]  # a directory's entry names, in listing order


@dataclass(frozen=True)
class AddedBlock:
    """What addBlock answers: the block to write and where it starts in the file."""

    ops: list[Op]
    block: Block
    offset: int
    retry: bool  # the same last block again (a retried call): nothing logged
    replication: int  # the file's, for choosing targets
    block_size: int
    client_machine: str


@dataclass(frozen=True)
class Completion:
    """What complete answers: whether the file is closed now (false: the client retries)."""

    ops: list[Op]
    done: bool


@dataclass(frozen=True)
class LocatedBlock(Generic[L]):
    """One block of a file, its offset in the file and the caller's locations for it."""

    block: Block
    offset: int
    locations: L


@dataclass(frozen=True)
class LocatedBlocks(Generic[L]):
    """getBlockLocations: the blocks covering a range, and the file's last block."""

    file_length: int  # without an incomplete last block, as HDFS counts it
    under_construction: bool
    blocks: list[LocatedBlock[L]] = field(default_factory=list)
    last_block: LocatedBlock[L] | None = None
    last_complete: bool = False


@dataclass(frozen=True)
class Appended:
    """What append answers: the partial last block reopened for writing, if any."""

    ops: list[Op]
    last_block: Block | None
    offset: int  # where last_block starts in the file (the file length when None)


@dataclass(frozen=True)
class Truncated:
    """What truncate answers: done (HDFS's true) or the last block to recover to a length."""

    ops: list[Op]
    done: bool
    recover: Block | None = None  # the block to cut: its new length and generation stamp


class FilesMixin(QuotaMixin):
    """Plans for files with blocks: addBlock, complete, abandon, fsync, append, truncate,
    concat, the pipeline updates; and getBlockLocations."""

    max_blocks_per_file: int = MAX_BLOCKS_PER_FILE

    # --- the lease --------------------------------------------------------------------

    def _lease_string(self, path: str, file_id: int, holder: str) -> str:
        """HDFS's leaseExceptionString: the path, the inode and the holder's lease."""
        n = sum(1 for h, _ in self._st.lease.values() if h == holder)
        lease = (
            f"[Lease.  Holder: {holder}, pending creates: {n}]"
            if n
            else f"Holder {holder} does not have any open files."
        )
        return f"{path} (inode {file_id}) {lease}"

    def _check_lease(self, path: str, caller: Caller, holder: str, file_id: int) -> tuple[int, str]:
        """The open file at path that holder writes: (slot, normalized path).

        HDFS's FSNamesystem.checkLease, with its exceptions and messages; a file id other
        than 0 must be the id of the file at path (design §B.10).
        """
        r = self._resolve(path)
        self._traverse(self._pc(caller), r)
        st = self._st
        src = join_path(r.comps)
        if not r.found or (file_id and st.ids[r.last] != file_id):
            raise PathNotFoundError(
                f"File does not exist: {self._lease_string(src, file_id, holder)}"
            )
        s = r.last
        if st.kind(s) != FILE:
            raise LeaseError(
                f"INode is not a regular file: {self._lease_string(src, file_id, holder)}"
            )
        if not st.is_uc(s):
            raise LeaseError(
                f"File is not open for writing: {self._lease_string(src, file_id, holder)}"
            )
        owner = st.lease.get(s, ("", ""))[0]
        if owner != holder:
            raise LeaseError(
                f"Client (={holder}) is not the lease owner (={owner}: "
                f"{self._lease_string(src, file_id, holder)}"
            )
        return s, src

    def _blocks_complete(self, blocks: Sequence[Block], is_complete: BlockTest) -> bool:
        return all(is_complete(b) for b in blocks)

    # --- addBlock -----------------------------------------------------------------------

    def plan_add_block(
        self,
        path: str,
        caller: Caller,
        client_name: str,
        file_id: int,
        previous: Block | None,
        is_complete: BlockTest,
    ) -> AddedBlock:
        """addBlock: commit previous with the client's length, allocate a new last block.

        previous is the client's last block (None for the first); is_complete tells
        whether a block has its minimum replicas. A repeated call with the same previous
        answers the same empty last block again (design §B.10).
        """
        s, src = self._check_lease(path, caller, client_name, file_id)
        st = self._st
        blocks = st.blocks.get(s, ())
        last = blocks[-1] if blocks else None
        replication, block_size = st.replication[s], st.block_size[s]
        machine = st.lease.get(s, ("", ""))[1]
        if not same_block(previous, last):
            penultimate = blocks[-2] if len(blocks) > 1 else None
            if (
                previous is None
                and last is not None
                and last.num_bytes >= block_size
                and is_complete(last)
            ):
                pass  # an append that starts at a block boundary: a new block after a full one
            elif last is not None and same_block(penultimate, previous):
                if last.num_bytes:
                    raise NamenodeError(
                        f"Request looked like a retry to allocate block {block_name(last)} "
                        f"but it already contains {last.num_bytes} bytes"
                    )
                offset = sum(b.num_bytes for b in blocks[:-1])
                return AddedBlock([], last, offset, True, replication, block_size, machine)
            else:
                raise NamenodeError(
                    f"Cannot allocate block in {src}: passed 'previous' block "
                    f"{block_name(previous)} does not match actual last block in file "
                    f"{block_name(last)}"
                )
        if len(blocks) >= 2 and not is_complete(blocks[-2]):
            raise NotReplicatedYetError(f"Not replicated yet: {src}")
        if len(blocks) >= self.max_blocks_per_file:
            raise NamenodeError(
                "File has reached the limit on maximum number of blocks "
                f"(dfs.namenode.fs-limits.max-blocks-per-file): {len(blocks)} >= "
                f"{self.max_blocks_per_file}"
            )
        penult = last
        if last is not None and previous is not None:  # commit it with the client's length
            penult = Block(last.block_id, previous.num_bytes, last.genstamp)
        grown = 0 if penult is None or last is None else penult.num_bytes - last.num_bytes
        # HDFS charges a new block its full preferred size until it is committed
        self._check_quota(st.parent[s], 0, (grown + block_size) * replication)
        id_op = self.block_ids.next_block_id()
        gs_op = self.block_ids.next_genstamp()
        new = Block(id_op.block_id, 0, gs_op.genstamp_v2)
        offset = sum(b.num_bytes for b in blocks[:-1]) + (penult.num_bytes if penult else 0)
        add = AddBlockOp(path=src, penultimate_block=penult, last_block=new)
        ops: list[Op] = [id_op, gs_op, add]
        return AddedBlock(ops, new, offset, False, replication, block_size, machine)

    # --- complete -----------------------------------------------------------------------

    def plan_complete_file(
        self,
        path: str,
        caller: Caller,
        client_name: str,
        file_id: int,
        last: Block | None,
        is_complete: BlockTest,
        now_ms: int,
    ) -> Completion:
        """complete: close the file once every block has its minimum replicas.

        The last block is committed with the client's length first; while a block lacks
        replicas the answer is false with nothing logged, and the client calls again.
        """
        try:
            s, src = self._check_lease(path, caller, client_name, file_id)
        except LeaseError:
            rr = self._resolve(path)
            st = self._st
            if rr.found and st.kind(rr.last) == FILE and not st.is_uc(rr.last):
                blocks = st.blocks.get(rr.last, ())
                if same_block(last, blocks[-1] if blocks else None):
                    return Completion([], True)  # a retried complete of a closed file
            raise
        st = self._st
        blocks = st.blocks.get(s, ())
        if len(blocks) >= 2 and not is_complete(blocks[-2]):
            return Completion([], False)
        final = blocks
        if last is not None and blocks:  # commit it with the client's length
            stored = blocks[-1]
            if stored.block_id != last.block_id:
                raise NamenodeError(
                    f"Trying to commit inconsistent block: id = {last.block_id}, "
                    f"expected id = {stored.block_id}"
                )
            if stored.genstamp != last.genstamp:
                raise NamenodeError(
                    f"Commit block with mismatching GS. NN has {block_name(stored)}, "
                    f"client submits {block_name(last)}"
                )
            final = (*blocks[:-1], Block(stored.block_id, last.num_bytes, stored.genstamp))
        if not self._blocks_complete(final, is_complete):
            return Completion([], False)
        return Completion(
            [
                CloseOp(  # HDFS's logCloseFile leaves the inode id 0
                    path=src,
                    replication=st.replication[s],
                    mtime=now_ms,
                    atime=st.atime[s],
                    block_size=st.block_size[s],
                    blocks=final,
                    permission_status=PermissionStatus(
                        st.owner_name(s), st.group_name(s), st.mode[s]
                    ),
                )
            ],
            True,
        )

    # --- abandonBlock, fsync -------------------------------------------------------------

    def plan_abandon_block(
        self, path: str, caller: Caller, client_name: str, file_id: int, block: Block
    ) -> list[Op]:
        """abandonBlock: drop the file's last block if it is block; [] otherwise (as HDFS)."""
        s, src = self._check_lease(path, caller, client_name, file_id)
        blocks = self._st.blocks.get(s, ())
        if not blocks or blocks[-1].block_id != block.block_id:
            return []
        return [UpdateBlocksOp(path=src, blocks=blocks[:-1])]

    def plan_fsync(
        self, path: str, caller: Caller, client_name: str, file_id: int, last_block_length: int
    ) -> list[Op]:
        """fsync (hflush/hsync): persist the last block's length when the client sends one.

        HDFS's UPDATE_LENGTH sends a length (> 0); without one, or when it is the length
        already kept, nothing is logged (design §B.10).
        """
        s, src = self._check_lease(path, caller, client_name, file_id)
        blocks = self._st.blocks.get(s, ())
        if last_block_length <= 0 or not blocks or blocks[-1].num_bytes == last_block_length:
            return []
        b = blocks[-1]
        return [
            UpdateBlocksOp(
                path=src, blocks=(*blocks[:-1], Block(b.block_id, last_block_length, b.genstamp))
            )
        ]

    # --- the pipeline: a new generation stamp for the file's last block ------------------

    def _uc_block(self, block: Block, client_name: str) -> tuple[int, str]:
        """The open file whose last block is block (HDFS's checkUCBlock): (slot, path)."""
        st = self._st
        for s, (holder, _) in st.lease.items():
            blocks = st.blocks.get(s, ())
            if blocks and blocks[-1].block_id == block.block_id:
                if holder != client_name:
                    raise LeaseError(
                        f"Lease mismatch on {block_name(block)} owned by {holder} but is "
                        f"accessed by {client_name}"
                    )
                return s, st.path_of(s)
        raise NamenodeError(
            f"{block_name(block)} does not exist or is not the last block of a file under "
            "construction."
        )

    def plan_update_block_for_pipeline(self, block: Block, client_name: str) -> list[Op]:
        """updateBlockForPipeline: a new generation stamp for an open file's last block.

        The op's genstamp_v2 is the stamp to answer (design §B.10).
        """
        self._uc_block(block, client_name)
        return [self.block_ids.next_genstamp()]

    def plan_update_pipeline(
        self, client_name: str, old_block: Block, new_block: Block, rpc: RpcIds
    ) -> list[Op]:
        """updatePipeline: the last block takes the new generation stamp and length."""
        s, src = self._uc_block(old_block, client_name)
        blocks = self._st.blocks[s]
        last = blocks[-1]
        if new_block.genstamp <= last.genstamp:
            raise NamenodeError(
                f"Update {block_name(old_block)} but the new block {block_name(new_block)} "
                f"does not have a larger generation stamp than the last block {block_name(last)}"
            )
        if new_block.num_bytes < last.num_bytes:
            raise NamenodeError(
                f"Update {block_name(old_block)} (size={old_block.num_bytes}) to a smaller "
                f"size block {block_name(new_block)} (size={new_block.num_bytes})"
            )
        updated = Block(last.block_id, new_block.num_bytes, new_block.genstamp)
        return [
            UpdateBlocksOp(
                path=src,
                blocks=(*blocks[:-1], updated),
                rpc_client_id=rpc.client_id,
                rpc_call_id=rpc.call_id,
            )
        ]

    # --- getBlockLocations ---------------------------------------------------------------

    def block_locations(
        self,
        path: str,
        caller: Caller,
        offset: int,
        length: int,
        locate: Callable[[Block], L],
        is_complete: BlockTest,
    ) -> LocatedBlocks[L]:
        """getBlockLocations: the blocks covering [offset, offset+length) and the last block.

        locate gives a block's locations (from the BlockManager); is_complete tells whether
        the last block is complete. READ on the file is needed. As HDFS's
        createLocatedBlocks: the file length leaves out an incomplete last block, whose
        length a reader asks a DataNode for.
        """
        if offset < 0:
            raise IllegalArgumentError(f"Negative offset is not supported. File: {path}")
        if length < 0:
            raise IllegalArgumentError(f"Negative length is not supported. File: {path}")
        r = self._resolve(path)
        pc = self._pc(caller)
        self._traverse(pc, r)
        st = self._st
        src = join_path(r.comps)
        if not r.found:
            raise PathNotFoundError(f"File does not exist: {src}")
        s = r.last
        if st.kind(s) != FILE:
            raise PathNotFoundError(f"Path is not a file: {src}")
        pc.check(s, READ)
        uc = st.is_uc(s)
        blocks = st.blocks.get(s, ())
        if not blocks:
            return LocatedBlocks(0, uc)
        last = blocks[-1]
        last_complete = not uc or is_complete(last)
        size = sum(b.num_bytes for b in blocks)
        file_length = size if last_complete else size - last.num_bytes
        out: list[LocatedBlock[L]] = []
        n = len(blocks) if blocks[0].num_bytes else 0
        i = pos = 0
        while i < n and pos + blocks[i].num_bytes <= offset:
            pos += blocks[i].num_bytes
            i += 1
        if not (n and i == n):  # else the offset is at or past the end
            end = offset + length
            while True:
                out.append(LocatedBlock(blocks[i], pos, locate(blocks[i])))
                pos += blocks[i].num_bytes
                i += 1
                if not (pos < end and i < len(blocks)):
                    break
        last_pos = file_length - last.num_bytes if last_complete else file_length
        return LocatedBlocks(
            file_length, uc, out, LocatedBlock(last, last_pos, locate(last)), last_complete
        )

    # --- append, truncate, concat ---------------------------------------------------------

    def _open_elsewhere(
        self, what: str, src: str, s: int, holder: str, client_machine: str
    ) -> AlreadyBeingCreatedError:
        """HDFS's recoverLeaseInternal refusal for a file already open for writing."""
        owner, owner_machine = self._st.lease.get(s, ("", ""))
        why = (
            f"{holder} is already the current lease holder."
            if owner == holder
            else f"this file lease is currently owned by {owner} on {owner_machine}"
        )
        return AlreadyBeingCreatedError(
            f"Failed to {what} {src} for {holder} on {client_machine} because {why}"
        )

    def plan_append(
        self,
        path: str,
        caller: Caller,
        client_name: str,
        client_machine: str,
        new_block: bool,
        is_replicated: BlockTest,
        rpc: RpcIds,
    ) -> Appended:
        """append: the closed file back under construction with client_name's lease.

        Its partial last block is answered for the client to write on (the client then
        asks a new generation stamp through updateBlockForPipeline); is_replicated tells
        whether the last block has enough replicas to append to.
        """
        r = self._resolve(path)
        pc = self._pc(caller)
        self._traverse(pc, r)
        st = self._st
        src = join_path(r.comps)
        if r.found and st.is_dir(r.last):
            raise FileAlreadyExistsError(
                f"Cannot append to directory {src}; already exists as a directory."
            )
        if r.found:
            pc.check(r.last, WRITE)
        else:
            raise PathNotFoundError(
                f"Failed to append to non-existent file {src} for client {client_machine}"
            )
        s = r.last
        if st.kind(s) != FILE:
            raise PathNotFoundError(f"Path is not a file: {src}")
        if st.is_uc(s):
            raise self._open_elsewhere("APPEND_FILE", src, s, client_name, client_machine)
        blocks = st.blocks.get(s, ())
        last = blocks[-1] if blocks else None
        if last is not None and not is_replicated(last):
            raise NamenodeError(
                f"append: lastBlock={block_name(last)} of src={src} is not sufficiently "
                "replicated yet."
            )
        reopened = None
        size = sum(b.num_bytes for b in blocks)
        if last is not None and not new_block and last.num_bytes < st.block_size[s]:
            # the rest of the partial block is charged while it is written (HDFS's
            # verifyQuotaForUCBlock)
            rest = (st.block_size[s] - last.num_bytes) * st.replication[s]
            self._check_quota(st.parent[s], 0, rest)
            reopened = last
        op = AppendOp(
            path=src,
            client_name=client_name,
            client_machine=client_machine,
            new_block=new_block,
            rpc_client_id=rpc.client_id,
            rpc_call_id=rpc.call_id,
        )
        offset = size - reopened.num_bytes if reopened is not None else size
        return Appended([op], reopened, offset)

    def plan_truncate(
        self,
        path: str,
        caller: Caller,
        new_length: int,
        client_name: str,
        client_machine: str,
        now_ms: int,
    ) -> Truncated:
        """truncate: at a block boundary done at once; inside a block, the file is opened
        for client_name and the cut block needs recovery (done false) (design §B.10)."""
        if new_length < 0:
            raise IllegalArgumentError(f"Cannot truncate to a negative file size: {new_length}.")
        r = self._resolve(path)
        pc = self._pc(caller)
        self._traverse(pc, r)
        st = self._st
        src = join_path(r.comps)
        if r.found:
            pc.check(r.last, WRITE)
        if not r.found:
            raise PathNotFoundError(f"File does not exist: {src}")
        s = r.last
        if st.kind(s) != FILE:
            raise PathNotFoundError(f"Path is not a file: {src}")
        if st.is_uc(s):
            raise self._open_elsewhere("TRUNCATE_FILE", src, s, client_name, client_machine)
        blocks = st.blocks.get(s, ())
        old_length = sum(b.num_bytes for b in blocks)
        if old_length == new_length:
            return Truncated([], True)
        if old_length < new_length:
            raise IllegalArgumentError(
                f"Cannot truncate to a larger file size. Current size: {old_length}, "
                f"truncate size: {new_length}."
            )
        pos = 0
        cut: Block | None = None
        for b in blocks:
            if pos < new_length < pos + b.num_bytes:
                cut = b
                break
            pos += b.num_bytes
        op = TruncateOp(
            src=src,
            client_name=client_name,
            client_machine=client_machine,
            new_length=new_length,
            timestamp=now_ms,
        )
        if cut is None:
            return Truncated([op], True)
        gs_op = self.block_ids.next_genstamp()
        gs = gs_op.genstamp_v2
        # As HDFS logs it: the block keeps its length until recovery cuts it.
        logged = TruncateOp(
            src=src,
            client_name=client_name,
            client_machine=client_machine,
            new_length=new_length,
            timestamp=now_ms,
            truncate_block=Block(cut.block_id, cut.num_bytes, gs),
        )
        return Truncated([gs_op, logged], False, Block(cut.block_id, new_length - pos, gs))

    def plan_concat(
        self, target: str, srcs: Sequence[str], caller: Caller, now_ms: int, rpc: RpcIds
    ) -> list[Op]:
        """concat: the sources' blocks appended to the target's, the sources deleted.

        HDFS's FSDirConcatOp checks: closed files in the target's directory, none of them
        empty, repeated or the target, block sizes no larger than the target's.
        """
        if not target:
            raise JavaIllegalArgumentError("Target file name is empty")
        if not srcs:
            raise JavaIllegalArgumentError("No sources given")
        rt = self._resolve(target)
        pc = self._pc(caller)
        self._traverse(pc, rt)
        st = self._st
        trg = join_path(rt.comps)
        if rt.found:
            pc.check(rt.last, WRITE)
        if not rt.found:
            raise PathNotFoundError(f"File does not exist: {trg}")
        t = rt.last
        if st.kind(t) != FILE:
            raise PathNotFoundError(f"Path is not a file: {trg}")
        if st.is_uc(t):
            raise IllegalArgumentError(f"concat: target file {trg} is under construction")
        parent = st.parent[t]
        seen: list[int] = []
        paths: list[str] = []
        delta = 0
        for src in srcs:
            r = self._resolve(src)
            self._traverse(pc, r)
            if r.found:
                pc.check(r.last, READ)
            if len(r.slots) >= 2 and len(r.slots) >= len(r.comps):
                pc.check(r.slots[len(r.comps) - 1], WRITE)
            if not r.found:
                raise PathNotFoundError(f"File does not exist: {src}")
            s = r.last
            if st.kind(s) != FILE:
                raise PathNotFoundError(f"Path is not a file: {src}")
            if st.parent[s] != parent:
                raise IllegalArgumentError(
                    f"Source file {src} is not in the same directory with the target {trg}"
                )
            if s == t:
                raise IllegalArgumentError(
                    f"concat: the src file {src} is the same with the target file {trg}"
                )
            if st.is_uc(s) or not st.blocks.get(s):
                raise IllegalArgumentError(
                    f"concat: source file {src} is invalid or empty or underConstruction"
                )
            if st.block_size[s] > st.block_size[t]:
                raise IllegalArgumentError(
                    f"concat: source file {src} has preferred block size {st.block_size[s]} "
                    "which is greater than the target file's preferred block size "
                    f"{st.block_size[t]}"
                )
            if s not in seen:
                seen.append(s)
            paths.append(join_path(r.comps))
            delta += st.length[s] * (st.replication[t] - st.replication[s])
        if len(seen) < len(srcs):
            raise IllegalArgumentError("concat: at least two of the source files are the same")
        self._check_quota(parent, 0, delta)
        return [
            ConcatDeleteOp(
                trg=trg,
                srcs=tuple(paths),
                timestamp=now_ms,
                rpc_client_id=rpc.client_id,
                rpc_call_id=rpc.call_id,
            )
        ]

    # --- what the block manager follows (design §B.14) -----------------------------------

    def file_blocks(self, path: str) -> FileBlocks | None:
        """The blocks, replication and open state of the file at path; None if no file."""
        r = self._resolve(path)
        st = self._st
        if not r.found or st.kind(r.last) != FILE:
            return None
        s = r.last
        return FileBlocks(join_path(r.comps), st.blocks.get(s, ()), st.replication[s], st.is_uc(s))

    def fsck_entry(self, path: str) -> FsckEntry | None:
        """What fsck needs of one path (None if it is gone): it walks by path, so a tree
        that changes between its steps is read as it is at each step (design §B.17)."""
        r = self._resolve(path)
        if not r.found:
            return None
        st, s = self._st, r.last
        kind = st.kind(s)
        blocks = st.blocks.get(s, ()) if kind == FILE else ()
        return FsckEntry(
            join_path(r.comps),
            kind,
            st.length[s] if kind == FILE else 0,
            st.replication[s] if kind == FILE else 0,
            blocks,
            kind == FILE and st.is_uc(s),
            tuple(st.names_sorted(s)) if st.is_dir(s) else (),
        )

    def all_file_blocks(self) -> list[FileBlocks]:
        """Every file that has blocks, as file_blocks answers it (loading the block map)."""
        st = self._st
        return [
            FileBlocks(st.path_of(s), blocks, st.replication[s], st.is_uc(s))
            for s, blocks in st.blocks.items()
            if blocks
        ]

    # --- what a delete frees -------------------------------------------------------------

    def blocks_under(self, path: str) -> list[Block]:
        """Every block of the files at or under path (what deleting it frees); [] if none."""
        r = self._resolve(path)
        if not r.found:
            return []
        st = self._st
        return [b for x in st.subtree(r.last) for b in st.blocks.get(x, ())]
