"""Files with blocks in the namespace: ids and stamps, addBlock, complete, abandon, fsync,
locations, append, truncate, concat, and the counters across images and replays."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from qjm.editlog.framing import iter_ops
from qjm.editlog.ops import (
    AddBlockOp,
    AllocateBlockIdOp,
    AppendOp,
    Block,
    CloseOp,
    ConcatDeleteOp,
    Op,
    SetGenstampV2Op,
    TruncateOp,
    UpdateBlocksOp,
    decode_op,
    encode_op,
    read_ops,
)
from qjm.namenode.errors import (
    AlreadyBeingCreatedError,
    DSQuotaExceededError,
    FileAlreadyExistsError,
    IllegalArgumentError,
    LeaseError,
    NamenodeError,
    NotReplicatedYetError,
    PathNotFoundError,
)
from qjm.namenode.image import NameSystemInfo, read_image, write_image
from qjm.namenode.namespace import Namespace, load_namespace
from qjm.namenode.namespace.files import AddedBlock
from qjm.namenode.namespace.quota import long2string
from qjm.namenode.types import Caller, RpcIds

FIXTURES = Path(__file__).parent / "fixtures" / "hadoop"
SU = Caller("hdfs")
ALICE = Caller("alice", ("users",))
RPC = RpcIds(b"0123456789abcdef", 7)
BS = 1 << 20  # the files' block size here
FIRST = (1 << 30) + 1  # HDFS's first sequential block id


def yes(_: Block) -> bool:
    return True


def no(_: Block) -> bool:
    return False


class W:
    """A namespace with a log of every op applied, and helpers for writing files."""

    def __init__(self) -> None:
        self.ns = Namespace(superuser="hdfs", root_mtime=5)
        self.log: list[Op] = []
        self.now = 1_000
        self.removed: list[Block] = []
        self.ns.on_blocks_removed = self.removed.extend
        self.run(self.ns.plan_mkdirs("/d", SU, 0o777, True, self.now))

    def run(self, ops: list[Op]) -> list[Op]:
        for op in ops:
            self.ns.apply(op)
            self.log.append(op)
        self.now += 1
        return ops

    def create(self, path: str, client: str = "c1", repl: int = 3) -> int:
        self.run(
            self.ns.plan_create(path, SU, 0o644, False, True, repl, BS, client, "m1", self.now, RPC)
        )
        st = self.ns.stat(path, SU)
        assert st is not None
        return st.file_id

    def add(
        self,
        path: str,
        previous: Block | None,
        client: str = "c1",
        done: Callable[[Block], bool] = yes,
    ) -> AddedBlock:
        a = self.ns.plan_add_block(path, SU, client, 0, previous, done)
        self.run(a.ops)
        return a

    def blocks(self, path: str) -> tuple[Block, ...]:
        r = self.ns._resolve(path)
        return self.ns.store.blocks.get(r.last, ())

    def write(self, path: str, sizes: list[int], client: str = "c1") -> list[Block]:
        """A file written with blocks of sizes and closed; its final blocks."""
        self.create(path, client)
        prev: Block | None = None
        for n in sizes:
            b = self.add(path, prev, client).block
            prev = Block(b.block_id, n, b.genstamp)
        done = self.ns.plan_complete_file(path, SU, client, 0, prev, yes, self.now)
        assert done.done
        self.run(done.ops)
        return list(self.blocks(path))


def replay(log: list[Op]) -> Namespace:
    """A fresh namespace applying the logged ops through the codec."""
    ns = Namespace(superuser="hdfs", root_mtime=5)
    for txid, op in enumerate(log, 1):
        ns.apply(decode_op(next(iter_ops(encode_op(op, txid), 0))))
    return ns


# --- ids and generation stamps -----------------------------------------------------------


def test_first_block_allocates_hdfs_first_id_and_stamp() -> None:
    w = W()
    w.create("/d/f")
    a = w.ns.plan_add_block("/d/f", SU, "c1", 0, None, yes)
    assert a.ops == [
        AllocateBlockIdOp(block_id=FIRST),
        SetGenstampV2Op(genstamp_v2=1001),
        AddBlockOp(path="/d/f", penultimate_block=None, last_block=Block(FIRST, 0, 1001)),
    ]
    assert (a.block, a.offset, a.retry, a.replication, a.block_size) == (
        Block(FIRST, 0, 1001),
        0,
        False,
        3,
        BS,
    )
    assert w.ns.block_ids.last_block_id == FIRST - 1  # a plan changes nothing
    w.run(a.ops)
    assert (w.ns.block_ids.last_block_id, w.ns.block_ids.genstamp_v2) == (FIRST, 1001)


def test_add_block_chain_commits_each_previous_and_replays() -> None:
    w = W()
    w.create("/d/f")
    b0 = w.add("/d/f", None).block
    a1 = w.add("/d/f", Block(b0.block_id, 100, b0.genstamp))
    assert isinstance(a1.ops[2], AddBlockOp)
    assert a1.ops[2].penultimate_block == Block(FIRST, 100, 1001)  # committed length
    assert (a1.block, a1.offset) == (Block(FIRST + 1, 0, 1002), 100)
    a2 = w.add("/d/f", Block(a1.block.block_id, 70, a1.block.genstamp))
    assert a2.offset == 170
    assert w.blocks("/d/f") == (
        Block(FIRST, 100, 1001),
        Block(FIRST + 1, 70, 1002),
        Block(FIRST + 2, 0, 1003),
    )
    st = w.ns.stat("/d/f", SU)
    assert st is not None and st.length == 170 and st.under_construction
    back = replay(w.log)
    assert back.dump() == w.ns.dump() and back.block_ids == w.ns.block_ids


def test_retried_add_block_answers_the_same_block() -> None:
    w = W()
    w.create("/d/f")
    first = w.add("/d/f", None).block
    again = w.ns.plan_add_block("/d/f", SU, "c1", 0, None, yes)  # the answer was lost
    assert (again.ops, again.block, again.retry, again.offset) == ([], first, True, 0)
    second = w.add("/d/f", Block(first.block_id, 10, first.genstamp)).block
    again = w.ns.plan_add_block("/d/f", SU, "c1", 0, Block(first.block_id, 10, first.genstamp), yes)
    assert (again.ops, again.block, again.retry, again.offset) == ([], second, True, 10)
    # once the last block holds data, the same previous is no retry
    w.run(w.ns.plan_fsync("/d/f", SU, "c1", 0, 5))
    with pytest.raises(NamenodeError, match=r"looked like a retry .* already contains 5 bytes"):
        w.ns.plan_add_block("/d/f", SU, "c1", 0, Block(first.block_id, 10, first.genstamp), yes)


@pytest.mark.parametrize(
    ("previous", "why"),
    [
        (Block(999, 0, 1001), "blk_999_1001"),  # an unknown block
        (Block(FIRST, 10, 1000), "blk_1073741825_1000"),  # the right id, a stale stamp
        (None, "null"),  # no previous, yet the file has two blocks
    ],
)
def test_stale_previous_is_refused(previous: Block | None, why: str) -> None:
    w = W()
    w.create("/d/f")
    b0 = w.add("/d/f", None).block
    b1 = w.add("/d/f", Block(b0.block_id, 10, b0.genstamp)).block
    w.add("/d/f", Block(b1.block_id, 10, b1.genstamp))
    with pytest.raises(NamenodeError) as e:
        w.ns.plan_add_block("/d/f", SU, "c1", 0, previous, yes)
    assert type(e.value) is NamenodeError
    assert str(e.value) == (
        f"Cannot allocate block in /d/f: passed 'previous' block {why} does not match "
        f"actual last block in file blk_{FIRST + 2}_1003"
    )


@pytest.mark.parametrize(
    ("setup", "path", "client", "file_id", "error", "message"),
    [
        (
            "open",
            "/d/f",
            "c2",
            0,
            LeaseError,
            "Client (=c2) is not the lease owner (=c1: /d/f (inode 0) Holder c2 does not have "
            "any open files.",
        ),
        (
            "open2",
            "/d/f",
            "c2",
            0,
            LeaseError,
            "Client (=c2) is not the lease owner (=c1: /d/f (inode 0) [Lease.  Holder: c2, "
            "pending creates: 1]",
        ),
        (
            "closed",
            "/d/f",
            "c1",
            0,
            LeaseError,
            "File is not open for writing: /d/f (inode 0) Holder c1 does not have any open files.",
        ),
        (
            "open",
            "/d/nope",
            "c1",
            0,
            PathNotFoundError,
            "File does not exist: /d/nope (inode 0) [Lease.  Holder: c1, pending creates: 1]",
        ),
        (
            "open",
            "/d",
            "c1",
            0,
            LeaseError,
            "INode is not a regular file: /d (inode 0) [Lease.  Holder: c1, pending creates: 1]",
        ),
        (
            "open",
            "/d/f",
            "c1",
            12345,
            PathNotFoundError,
            "File does not exist: /d/f (inode 12345) [Lease.  Holder: c1, pending creates: 1]",
        ),
    ],
)
def test_lease_checks(
    setup: str, path: str, client: str, file_id: int, error: type[Exception], message: str
) -> None:
    """HDFS's checkLease: the exception class and message the genuine client sees."""
    w = W()
    w.create("/d/f")
    if setup == "closed":
        w.run(w.ns.plan_complete_file("/d/f", SU, "c1", 0, None, yes, w.now).ops)
    if setup == "open2":
        w.create("/d/g", client="c2")
    calls: list[Callable[[], object]] = [
        lambda: w.ns.plan_add_block(path, SU, client, file_id, None, yes),
        lambda: w.ns.plan_abandon_block(path, SU, client, file_id, Block(FIRST, 0, 1001)),
        lambda: w.ns.plan_fsync(path, SU, client, file_id, 10),
    ]
    if setup != "closed":  # a complete of a closed file is a retried complete
        calls.append(lambda: w.ns.plan_complete_file(path, SU, client, file_id, None, yes, 9))
    for call in calls:
        with pytest.raises(error) as e:
            call()
        assert type(e.value) is error and str(e.value) == message


def test_add_block_waits_for_the_penultimate_block_and_limits_blocks() -> None:
    w = W()
    w.create("/d/f")
    b0 = w.add("/d/f", None).block
    b1 = w.add("/d/f", Block(b0.block_id, 10, b0.genstamp)).block
    prev = Block(b1.block_id, 10, b1.genstamp)
    with pytest.raises(NotReplicatedYetError, match=r"^Not replicated yet: /d/f$"):
        w.ns.plan_add_block("/d/f", SU, "c1", 0, prev, lambda b: b.block_id != b0.block_id)
    w.ns.max_blocks_per_file = 2
    with pytest.raises(NamenodeError) as e:
        w.ns.plan_add_block("/d/f", SU, "c1", 0, prev, yes)
    assert str(e.value) == (
        "File has reached the limit on maximum number of blocks "
        "(dfs.namenode.fs-limits.max-blocks-per-file): 2 >= 2"
    )


def test_add_block_is_refused_over_a_space_quota() -> None:
    """A new block is charged its full size times replication until committed, as HDFS."""
    w = W()
    w.run(w.ns.plan_set_quota("/d", SU, -1, 3 * BS))  # room for one block at replication 3
    w.create("/d/f")
    b0 = w.add("/d/f", None).block
    with pytest.raises(DSQuotaExceededError) as e:
        w.ns.plan_add_block("/d/f", SU, "c1", 0, Block(b0.block_id, 1, b0.genstamp), yes)
    assert str(e.value) == (
        f"The DiskSpace quota of /d is exceeded: quota = {3 * BS} B = 3 MB but diskspace "
        f"consumed = {3 + 3 * BS} B = 3.00 MB"
    )


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1 KB"),
        (1536, "1.50 KB"),
        ((1 << 20) - 1, "1.00 MB"),  # rounds up to the next prefix, as Hadoop does
        (402653184, "384 MB"),
        ((1 << 63) - 1, "8.00 EB"),
        (-2048, "-2 KB"),
    ],
)
def test_long2string_as_hadoop(n: int, text: str) -> None:
    assert long2string(n) == text


# --- complete ----------------------------------------------------------------------------


def test_complete_waits_for_replicas_then_closes_with_the_lengths() -> None:
    w = W()
    w.create("/d/f", repl=2)
    b0 = w.add("/d/f", None).block
    b1 = w.add("/d/f", Block(b0.block_id, 300, b0.genstamp)).block
    last = Block(b1.block_id, 200, b1.genstamp)
    waiting = w.ns.plan_complete_file("/d/f", SU, "c1", 0, last, lambda b: b != last, 50)
    assert (waiting.ops, waiting.done) == ([], False)  # the client calls again
    # the committed length is what is asked about
    asked: list[Block] = []
    done = w.ns.plan_complete_file("/d/f", SU, "c1", 0, last, lambda b: asked.append(b) or True, 51)
    assert done.done and asked[-1] == last
    (close,) = done.ops
    assert isinstance(close, CloseOp)
    assert close.blocks == (Block(b0.block_id, 300, b0.genstamp), last) and close.mtime == 51
    w.run(done.ops)
    st = w.ns.stat("/d/f", SU)
    assert st is not None and st.length == 500 and not st.under_construction
    cs = w.ns.content_summary("/d", SU)
    assert (cs.length, cs.space_consumed) == (500, 1000)  # length x replication
    assert replay(w.log).dump() == w.ns.dump()
    # a retried complete (the answer was lost) is true; a wrong last block is not
    again = w.ns.plan_complete_file("/d/f", SU, "c1", 0, last, no, 52)
    assert (again.ops, again.done) == ([], True)
    with pytest.raises(LeaseError, match="File is not open for writing"):
        w.ns.plan_complete_file("/d/f", SU, "c1", 0, Block(b1.block_id, 200, 1), yes, 53)


def test_complete_refuses_a_block_that_is_not_the_last() -> None:
    w = W()
    w.create("/d/f")
    b0 = w.add("/d/f", None).block
    with pytest.raises(NamenodeError, match=r"Commit block with mismatching GS\. NN has blk_"):
        w.ns.plan_complete_file("/d/f", SU, "c1", 0, Block(b0.block_id, 1, 7), yes, 9)
    with pytest.raises(NamenodeError, match="Trying to commit inconsistent block: id = 5"):
        w.ns.plan_complete_file("/d/f", SU, "c1", 0, Block(5, 1, b0.genstamp), yes, 9)
    waiting = w.ns.plan_complete_file("/d/f", SU, "c1", 0, Block(b0.block_id, 1, 1001), no, 9)
    assert not waiting.done


# --- abandon and fsync -------------------------------------------------------------------


def test_abandon_drops_only_the_last_block() -> None:
    w = W()
    w.create("/d/f")
    b0 = w.add("/d/f", None).block
    b1 = w.add("/d/f", Block(b0.block_id, 10, b0.genstamp)).block
    assert w.ns.plan_abandon_block("/d/f", SU, "c1", 0, b0) == []  # not the last: HDFS ignores
    ops = w.ns.plan_abandon_block("/d/f", SU, "c1", 0, b1)
    assert ops == [UpdateBlocksOp(path="/d/f", blocks=(Block(b0.block_id, 10, b0.genstamp),))]
    w.run(ops)
    assert w.removed == [b1]  # the BlockManager is told
    assert w.blocks("/d/f") == (Block(b0.block_id, 10, b0.genstamp),)
    # the client then asks for a block again after the same previous
    again = w.add("/d/f", Block(b0.block_id, 10, b0.genstamp))
    assert not again.retry and again.block.block_id == FIRST + 2
    assert replay(w.log).dump() == w.ns.dump()


@pytest.mark.parametrize(("length", "logged"), [(-1, False), (0, False), (40, True), (5, False)])
def test_fsync_logs_a_new_length_only(length: int, logged: bool) -> None:
    w = W()
    w.create("/d/f")
    b = w.add("/d/f", None).block
    w.run(w.ns.plan_fsync("/d/f", SU, "c1", 0, 5))
    ops = w.ns.plan_fsync("/d/f", SU, "c1", 0, length)
    if logged:
        assert ops == [UpdateBlocksOp(path="/d/f", blocks=(Block(b.block_id, length, b.genstamp),))]
        w.run(ops)
        st = w.ns.stat("/d/f", SU)
        assert st is not None and st.length == length
    else:
        assert ops == []


def test_fsync_without_blocks_logs_nothing() -> None:
    w = W()
    w.create("/d/f")
    assert w.ns.plan_fsync("/d/f", SU, "c1", 0, 10) == []


# --- getBlockLocations -------------------------------------------------------------------

SIZES = [100, 100, 50]


@pytest.mark.parametrize(
    ("offset", "length", "want"),
    [
        (0, 1, [0]),
        (0, 100, [0]),
        (99, 2, [0, 1]),
        (100, 100, [1]),
        (150, 1000, [1, 2]),
        (0, 250, [0, 1, 2]),
        (0, 0, [0]),  # HDFS answers the block at the offset even for no length
        (249, 1, [2]),
        (250, 10, []),  # at the end
        (1000, 10, []),  # past it
    ],
)
def test_locations_over_offsets(offset: int, length: int, want: list[int]) -> None:
    w = W()
    blocks = w.write("/d/f", SIZES)
    starts = [0, 100, 200]
    got = w.ns.block_locations("/d/f", SU, offset, length, lambda b: f"dn{b.block_id}", no)
    assert [(lb.block, lb.offset, lb.locations) for lb in got.blocks] == [
        (blocks[i], starts[i], f"dn{blocks[i].block_id}") for i in want
    ]
    assert (got.file_length, got.under_construction, got.last_complete) == (250, False, True)
    assert got.last_block is not None
    assert (got.last_block.block, got.last_block.offset) == (blocks[2], 200)


def test_locations_of_an_open_file_leave_out_its_incomplete_last_block() -> None:
    w = W()
    w.create("/d/f")
    b0 = w.add("/d/f", None).block
    b1 = w.add("/d/f", Block(b0.block_id, 100, b0.genstamp)).block
    w.run(w.ns.plan_fsync("/d/f", SU, "c1", 0, 30))
    got = w.ns.block_locations(
        "/d/f", SU, 0, 1 << 30, lambda b: (), lambda b: b != w.blocks("/d/f")[-1]
    )
    assert (got.file_length, got.under_construction, got.last_complete) == (100, True, False)
    assert [lb.offset for lb in got.blocks] == [0, 100]
    assert got.last_block is not None and got.last_block.offset == 100
    assert got.last_block.block == Block(b1.block_id, 30, b1.genstamp)
    empty = W()
    empty.create("/d/e")
    e = empty.ns.block_locations("/d/e", SU, 0, 10, lambda b: (), yes)
    assert (e.file_length, e.under_construction, e.blocks, e.last_block) == (0, True, [], None)


@pytest.mark.parametrize(
    ("path", "offset", "length", "error", "message"),
    [
        ("/d/f", -1, 1, IllegalArgumentError, "Negative offset is not supported. File: /d/f"),
        ("/d/f", 0, -1, IllegalArgumentError, "Negative length is not supported. File: /d/f"),
        ("/d/nope", 0, 1, PathNotFoundError, "File does not exist: /d/nope"),
        ("/d", 0, 1, PathNotFoundError, "Path is not a file: /d"),
    ],
)
def test_locations_refusals(
    path: str, offset: int, length: int, error: type[Exception], message: str
) -> None:
    w = W()
    w.write("/d/f", [10])
    with pytest.raises(error) as e:
        w.ns.block_locations(path, SU, offset, length, lambda b: (), yes)
    assert type(e.value) is error and str(e.value) == message


def test_locations_need_read() -> None:
    w = W()
    w.write("/d/f", [10])
    w.run(w.ns.plan_set_permission("/d/f", SU, 0o600))
    with pytest.raises(NamenodeError, match="access=READ"):
        w.ns.block_locations("/d/f", ALICE, 0, 1, lambda b: (), yes)


# --- the counters across images and replays ----------------------------------------------


def test_allocation_survives_an_image_and_a_replay(tmp_path: Path) -> None:
    """A restarted NameNode (image, then the edits after it) never reissues an id or stamp."""
    w = W()
    w.write("/d/f", [10, 20])
    at_image = len(w.log)
    image = tmp_path / "fsimage_0000000000000000009"
    write_image(image, w.ns.to_image(9, NameSystemInfo(namespace_id=4, txid=0)))
    w.write("/d/g", [5])  # after the image: only in the edits
    for loaded in (
        load_namespace(image, superuser="hdfs")[0],
        Namespace.from_image(read_image(image), superuser="hdfs"),
    ):
        assert (loaded.block_ids.last_block_id, loaded.block_ids.genstamp_v2) == (FIRST + 1, 1002)
        for op in w.log[at_image:]:
            loaded.apply(op)
        assert loaded.block_ids == w.ns.block_ids and loaded.dump() == w.ns.dump()
        nxt = loaded.copy()  # the copy keeps the counters too (a checkpoint's snapshot)
        nxt.apply(nxt.plan_create("/d/h", SU, 0o644, False, False, 1, BS, "c9", "m", 1, RPC)[0])
        a = nxt.plan_add_block("/d/h", SU, "c9", 0, None, yes)
        assert a.block == Block(FIRST + 3, 0, 1004)
    info = read_image(image).ns_info
    assert (info.last_allocated_block_id, info.genstamp_v2, info.genstamp_v1) == (
        FIRST + 1,
        1002,
        1000,
    )


def test_hadoop_edit_log_keeps_the_counters_hdfs_wrote(tmp_path: Path) -> None:
    ns = Namespace(superuser="hdfs")
    for _, op in read_ops((FIXTURES / "editsStored").read_bytes()):
        ns.apply(op)
    ids = ns.block_ids
    assert (ids.last_block_id, ids.genstamp_v2, ids.genstamp_v1) == (1073741838, 1016, 1000)
    assert ids.last_striped_block_id == -9223372036854775792
    path = tmp_path / "fsimage_0000000000000000121"
    write_image(path, ns.to_image(121, NameSystemInfo(namespace_id=1, txid=0)))
    back, info = load_namespace(path, superuser="hdfs")
    assert back.block_ids == ids
    assert (info.last_allocated_block_id, info.last_allocated_striped_block_id) == (
        1073741838,
        -9223372036854775792,
    )


def test_hadoop_image_counters_load_and_round_trip(tmp_path: Path) -> None:
    fixture = FIXTURES / "fsimage_0000000000000061740"
    ns, _ = load_namespace(fixture, superuser="hdfs")
    assert (ns.block_ids.genstamp_v2, ns.block_ids.last_block_id) == (11100, 1073751924)
    assert Namespace.from_image(read_image(fixture), superuser="hdfs").block_ids == ns.block_ids
    out = tmp_path / "fsimage_0000000000000061740"
    write_image(out, ns.to_image(61740, NameSystemInfo(namespace_id=1, txid=0)))
    assert read_image(out).ns_info.genstamp_v2 == 11100


# --- removed blocks, append, pipeline, truncate, concat ----------------------------------


def test_delete_and_overwrite_report_their_blocks() -> None:
    w = W()
    f = w.write("/d/f", [10, 20])
    g = w.write("/d/g", [5])
    assert w.ns.blocks_under("/d") == f + g and w.ns.blocks_under("/nope") == []
    w.run(w.ns.plan_delete("/d/f", SU, False, w.now, RPC))
    assert w.removed == f
    w.run(w.ns.plan_create("/d/g", SU, 0o644, True, False, 1, BS, "c1", "m", w.now, RPC))
    assert w.removed == f + g


def test_append_reopens_a_partial_last_block_then_the_pipeline_restamps_it() -> None:
    w = W()
    blocks = w.write("/d/f", [BS, 10])
    got = w.ns.plan_append("/d/f", SU, "c2", "m2", False, yes, RPC)
    assert got.ops == [
        AppendOp(
            path="/d/f",
            client_name="c2",
            client_machine="m2",
            rpc_client_id=RPC.client_id,
            rpc_call_id=RPC.call_id,
        )
    ]
    assert (got.last_block, got.offset) == (blocks[1], BS)
    w.run(got.ops)
    st = w.ns.stat("/d/f", SU)
    assert st is not None and st.under_construction
    (gs_op,) = w.ns.plan_update_block_for_pipeline(blocks[1], "c2")
    assert gs_op == SetGenstampV2Op(genstamp_v2=1003)
    w.run([gs_op])
    with pytest.raises(LeaseError, match="Lease mismatch on blk_"):
        w.ns.plan_update_block_for_pipeline(blocks[1], "c1")
    new = Block(blocks[1].block_id, 10, 1003)
    with pytest.raises(NamenodeError, match="does not have a larger generation stamp"):
        w.ns.plan_update_pipeline("c2", blocks[1], blocks[1], RPC)
    with pytest.raises(NamenodeError, match="to a smaller size block"):
        w.ns.plan_update_pipeline("c2", blocks[1], Block(new.block_id, 3, 1003), RPC)
    w.run(w.ns.plan_update_pipeline("c2", blocks[1], new, RPC))
    assert w.blocks("/d/f")[-1] == new
    assert replay(w.log).dump() == w.ns.dump()


@pytest.mark.parametrize(
    ("sizes", "new_block", "reopened"),
    [([BS], False, None), ([], False, None), ([10], True, None), ([10], False, 0)],
)
def test_append_answers_the_block_to_write_on(
    sizes: list[int], new_block: bool, reopened: int | None
) -> None:
    w = W()
    blocks = w.write("/d/f", sizes)
    got = w.ns.plan_append("/d/f", SU, "c2", "m2", new_block, yes, RPC)
    assert got.last_block == (None if reopened is None else blocks[reopened])
    assert got.offset == (sum(sizes) if reopened is None else sum(sizes[:reopened]))


@pytest.mark.parametrize(
    ("path", "client", "error", "message"),
    [
        (
            "/d/open",
            "c2",
            AlreadyBeingCreatedError,
            "Failed to APPEND_FILE /d/open for c2 on m2 because this file lease is currently "
            "owned by c1 on m1",
        ),
        (
            "/d/open",
            "c1",
            AlreadyBeingCreatedError,
            "Failed to APPEND_FILE /d/open for c1 on m2 because c1 is already the current "
            "lease holder.",
        ),
        (
            "/d",
            "c2",
            FileAlreadyExistsError,
            "Cannot append to directory /d; already exists as a directory.",
        ),
        (
            "/d/nope",
            "c2",
            PathNotFoundError,
            "Failed to append to non-existent file /d/nope for client m2",
        ),
    ],
)
def test_append_refusals(path: str, client: str, error: type[Exception], message: str) -> None:
    w = W()
    w.create("/d/open")
    with pytest.raises(error) as e:
        w.ns.plan_append(path, SU, client, "m2", False, yes, RPC)
    assert type(e.value) is error and str(e.value) == message


def test_append_waits_for_a_replicated_last_block() -> None:
    w = W()
    w.write("/d/f", [10])
    with pytest.raises(NamenodeError, match=r"is not sufficiently replicated yet\.$"):
        w.ns.plan_append("/d/f", SU, "c2", "m2", False, no, RPC)


def test_truncate_at_a_block_boundary_is_done_at_once() -> None:
    w = W()
    blocks = w.write("/d/f", [100, 100, 50])
    t = w.ns.plan_truncate("/d/f", SU, 100, "c2", "m2", 77)
    assert t.done and t.recover is None
    assert t.ops == [
        TruncateOp(src="/d/f", client_name="c2", client_machine="m2", new_length=100, timestamp=77)
    ]
    w.run(t.ops)
    assert w.removed == blocks[1:]
    st = w.ns.stat("/d/f", SU)
    assert st is not None and st.length == 100 and not st.under_construction
    assert w.ns.plan_truncate("/d/f", SU, 100, "c2", "m2", 78) == type(t)([], True)


def test_truncate_inside_a_block_needs_recovery() -> None:
    w = W()
    blocks = w.write("/d/f", [100, 100])
    t = w.ns.plan_truncate("/d/f", SU, 130, "c2", "m2", 77)
    b = blocks[1]
    assert not t.done and t.recover == Block(b.block_id, 30, 1003)
    assert t.ops == [
        SetGenstampV2Op(genstamp_v2=1003),
        TruncateOp(
            src="/d/f",
            client_name="c2",
            client_machine="m2",
            new_length=130,
            timestamp=77,
            truncate_block=Block(b.block_id, 100, 1003),
        ),
    ]
    w.run(t.ops)
    st = w.ns.stat("/d/f", SU)
    assert st is not None and st.under_construction  # until recovery closes it
    assert w.ns.block_ids.genstamp_v2 == 1003
    assert replay(w.log).dump() == w.ns.dump()


@pytest.mark.parametrize(
    ("length", "error", "message"),
    [
        (-1, IllegalArgumentError, "Cannot truncate to a negative file size: -1."),
        (
            300,
            IllegalArgumentError,
            "Cannot truncate to a larger file size. Current size: 200, truncate size: 300.",
        ),
    ],
)
def test_truncate_refusals(length: int, error: type[Exception], message: str) -> None:
    w = W()
    w.write("/d/f", [100, 100])
    with pytest.raises(error) as e:
        w.ns.plan_truncate("/d/f", SU, length, "c2", "m2", 1)
    assert type(e.value) is error and str(e.value) == message


def test_concat_appends_blocks_and_deletes_the_sources() -> None:
    w = W()
    t = w.write("/d/t", [100])
    a = w.write("/d/a", [50, 10])
    b = w.write("/d/b", [7])
    ops = w.ns.plan_concat("/d/t", ["/d/a", "/d/b"], SU, 99, RPC)
    assert ops == [
        ConcatDeleteOp(
            trg="/d/t",
            srcs=("/d/a", "/d/b"),
            timestamp=99,
            rpc_client_id=RPC.client_id,
            rpc_call_id=RPC.call_id,
        )
    ]
    w.run(ops)
    assert list(w.blocks("/d/t")) == t + a + b and w.removed == []  # moved, not freed
    assert w.ns.stat("/d/a", SU) is None
    st = w.ns.stat("/d/t", SU)
    assert st is not None and st.length == 167
    assert replay(w.log).dump() == w.ns.dump()


@pytest.mark.parametrize(
    ("srcs", "message"),
    [
        (["/d/a", "/d/a"], "concat: at least two of the source files are the same"),
        (["/d/t"], "concat: the src file /d/t is the same with the target file /d/t"),
        (["/d/empty"], "concat: source file /d/empty is invalid or empty or underConstruction"),
        (["/d/open"], "concat: source file /d/open is invalid or empty or underConstruction"),
        (["/e/x"], "Source file /e/x is not in the same directory with the target /d/t"),
    ],
)
def test_concat_refusals(srcs: list[str], message: str) -> None:
    w = W()
    w.write("/d/t", [100])
    w.write("/d/a", [10])
    w.write("/d/empty", [])
    w.create("/d/open")
    w.run(w.ns.plan_mkdirs("/e", SU, 0o755, False, w.now))
    w.write("/e/x", [10])
    with pytest.raises(IllegalArgumentError) as e:
        w.ns.plan_concat("/d/t", srcs, SU, 1, RPC)
    assert str(e.value) == message
