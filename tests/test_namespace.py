"""The namespace: plans, apply, reads, replay equality and the image round trip."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from qjm.editlog.framing import iter_ops
from qjm.editlog.ops import AddOp, Block, CloseOp, DeleteOp, MkdirOp, Op, decode_op, encode_op
from qjm.namenode.errors import NSQuotaExceededError
from qjm.namenode.image import NameSystemInfo, read_image, write_image
from qjm.namenode.image.model import ROOT_INODE_ID
from qjm.namenode.namespace import Namespace
from qjm.namenode.types import Caller, RpcIds

FIXTURE = Path(__file__).parent / "fixtures" / "hadoop" / "fsimage_0000000000000061740"
SU = Caller("hdfs")
ALICE = Caller("alice", ("users",))
RPC = RpcIds(b"0123456789abcdef", 7)


class Recorder:
    """A namespace that logs every op it applies (as the active's edit log would)."""

    def __init__(self) -> None:
        self.ns = Namespace(superuser="hdfs", root_mtime=5)
        self.log: list[Op] = []
        self.now = 1_000

    def run(self, ops: list[Op]) -> list[Op]:
        for op in ops:
            self.ns.apply(op)
            self.log.append(op)
        self.now += 1
        return ops

    def mkdirs(self, path: str, caller: Caller = SU, perm: int = 0o755) -> list[Op]:
        return self.run(self.ns.plan_mkdirs(path, caller, perm, True, self.now))

    def touch(self, path: str, caller: Caller = SU, perm: int = 0o644) -> list[Op]:
        ops = self.run(
            self.ns.plan_create(
                path, caller, perm, False, True, 3, 128 << 20, "c1", "host", self.now, RPC
            )
        )
        return ops + self.run(self.ns.plan_complete(path, caller, "c1", 0, self.now))


def replay(log: list[Op]) -> Namespace:
    """apply-only of the logged ops (through the codec) on a fresh namespace."""
    ns = Namespace(superuser="hdfs", root_mtime=5)
    for txid, op in enumerate(log, 1):
        raw = next(iter_ops(encode_op(op, txid), 0))
        ns.apply(decode_op(raw))
    return ns


def test_fresh_namespace_root() -> None:
    ns = Namespace(superuser="hdfs")
    assert len(ns) == 1
    assert ns.last_inode_id == ROOT_INODE_ID
    st = ns.stat("/", SU)
    assert st is not None and st.is_dir and st.file_id == ROOT_INODE_ID and st.name == ""
    assert (st.owner, st.group, st.permission) == ("hdfs", "supergroup", 0o755)
    assert ns.totals() == (0, 1, 0)


def test_mkdirs_create_complete_stat_listing() -> None:
    r = Recorder()
    ops = r.mkdirs("/a/b/c")
    assert [type(o) for o in ops] == [MkdirOp, MkdirOp, MkdirOp]
    assert [o.inode_id for o in ops if isinstance(o, MkdirOp)] == [16386, 16387, 16388]
    assert r.ns.last_inode_id == 16388
    assert r.mkdirs("/a/b") == []  # already a directory
    ops = r.touch("/a/b/f")
    assert [type(o) for o in ops] == [AddOp, CloseOp]
    st = r.ns.stat("/a/b/f", SU)
    assert st is not None and not st.is_dir and not st.under_construction
    assert (st.replication, st.block_size, st.file_id, st.children) == (3, 128 << 20, 16389, -1)
    assert r.ns.stat("/a/x", SU) is None
    entries, remaining = r.ns.listing("/a/b", SU) or ([], -1)
    assert [e.name for e in entries] == ["c", "f"] and remaining == 0
    listed = r.ns.listing("/a/b/f", SU)
    assert listed is not None and listed[0][0].name == "" and listed[0][0].file_id == 16389
    assert r.ns.listing("/nope", SU) is None
    assert r.ns.totals() == (1, 4, 0)
    assert len(r.ns) == 5  # /, a, b, c, f


def test_listing_pages_by_name() -> None:
    r = Recorder()
    for n in ["d", "b", "a", "e", "c"]:
        r.mkdirs(f"/x/{n}")
    page, remaining = r.ns.listing("/x", SU, "", 2) or ([], -1)
    assert [e.name for e in page] == ["a", "b"] and remaining == 3
    page, remaining = r.ns.listing("/x", SU, "b", 2) or ([], -1)
    assert [e.name for e in page] == ["c", "d"] and remaining == 1
    page, remaining = r.ns.listing("/x", SU, "d", 2) or ([], -1)
    assert [e.name for e in page] == ["e"] and remaining == 0


def test_create_under_construction_until_complete() -> None:
    r = Recorder()
    r.mkdirs("/d")
    r.run(r.ns.plan_create("/d/f", SU, 0o644, False, False, 2, 1 << 20, "cl", "m", 50, RPC))
    st = r.ns.stat("/d/f", SU)
    assert st is not None and st.under_construction and st.mtime == 50
    assert r.ns.plan_complete("/d/f", SU, "cl", st.file_id, 60)
    r.run(r.ns.plan_complete("/d/f", SU, "cl", st.file_id, 60))
    st = r.ns.stat("/d/f", SU)
    assert st is not None and not st.under_construction and st.mtime == 60
    assert r.ns.plan_complete("/d/f", SU, "cl", st.file_id, 70) == []  # retried complete


def test_create_overwrite_replaces_the_file() -> None:
    r = Recorder()
    r.touch("/f")
    old = r.ns.stat("/f", SU)
    ops = r.run(r.ns.plan_create("/f", SU, 0o600, True, False, 1, 1 << 20, "c", "m", 9, RPC))
    assert [type(o) for o in ops] == [DeleteOp, AddOp]
    new = r.ns.stat("/f", SU)
    assert old is not None and new is not None
    assert new.file_id > old.file_id and new.permission == 0o600
    assert r.ns.totals() == (1, 1, 0)


def test_apply_only_replay_equals_plan_and_apply() -> None:
    r = Recorder()
    r.mkdirs("/user/alice")
    r.run(r.ns.plan_set_owner("/user/alice", SU, "alice", "users"))
    r.touch("/user/alice/docs/a.txt", ALICE)
    r.touch("/user/alice/docs/b.txt", ALICE)
    r.run(r.ns.plan_rename("/user/alice/docs/a.txt", "/user/alice/a.txt", ALICE, r.now, RPC))
    r.run(r.ns.plan_rename2("/user/alice/docs", "/user/alice/d2", ALICE, False, r.now, RPC))
    r.run(r.ns.plan_set_permission("/user/alice/a.txt", ALICE, 0o600))
    r.run(r.ns.plan_set_replication("/user/alice/a.txt", ALICE, 2))
    r.run(r.ns.plan_set_times("/user/alice/a.txt", ALICE, 77, 88))
    r.run(r.ns.plan_set_quota("/user/alice", SU, 100, 1 << 30))
    r.run(r.ns.plan_delete("/user/alice/d2", ALICE, True, r.now, RPC))
    r.mkdirs("/tmp")
    r.run(r.ns.plan_create("/tmp/open", SU, 0o644, False, False, 1, 1 << 20, "w", "m", 3, RPC))
    other = replay(r.log)
    assert other.dump() == r.ns.dump()
    assert other.last_inode_id == r.ns.last_inode_id
    assert other.totals() == r.ns.totals()
    assert len(other) == len(r.ns) == 6


def test_image_round_trip(tmp_path: Path) -> None:
    r = Recorder()
    r.mkdirs("/user/alice")
    r.touch("/user/alice/f")
    r.run(r.ns.plan_set_quota("/user", SU, 50, 1 << 40))
    r.run(r.ns.plan_create("/open", SU, 0o640, False, False, 2, 1 << 20, "w", "m", 3, RPC))
    path = tmp_path / "fsimage_0000000000000000042"
    write_image(path, r.ns.to_image(42, NameSystemInfo(namespace_id=7, txid=0)))
    image = read_image(path)
    assert image.ns_info.txid == 42 and image.ns_info.namespace_id == 7
    back = Namespace.from_image(image, superuser="hdfs")
    assert back.dump() == r.ns.dump()
    assert back.last_inode_id == r.ns.last_inode_id
    assert back.totals() == r.ns.totals()
    assert back.content_summary("/user", SU) == r.ns.content_summary("/user", SU)


def test_hadoop_image_loads() -> None:
    image = read_image(FIXTURE)
    ns = Namespace.from_image(image, superuser="hdfs")
    assert len(ns) == len(image.paths())
    assert ns.last_inode_id == image.last_inode_id
    st = ns.stat("/tmp/files/3/4/foo", SU)
    assert st is not None and st.length == 4 and st.owner == "hdfs" and st.permission == 0o640
    cs = ns.content_summary("/", SU)
    assert (cs.file_count, cs.directory_count, cs.length) == (100, 116, 400)
    # a new inode gets the next id after the image's last one
    ops = ns.plan_mkdirs("/new", SU, 0o755, False, 1)
    assert isinstance(ops[0], MkdirOp) and ops[0].inode_id == image.last_inode_id + 1


@pytest.mark.parametrize("path", ["/", "/a", "/a/b/c"])
def test_stat_after_mkdirs(path: str) -> None:
    r = Recorder()
    r.mkdirs("/a/b/c")
    st = r.ns.stat(path, ALICE)
    assert st is not None and st.is_dir


def test_listing_a_big_directory_follows_changes() -> None:
    r = Recorder()
    r.mkdirs("/big")
    for i in range(1500):
        r.run(r.ns.plan_mkdirs(f"/big/e{i:04d}", SU, 0o755, False, r.now))
    page, remaining = r.ns.listing("/big", SU, "e0998", 3) or ([], -1)
    assert [e.name for e in page] == ["e0999", "e1000", "e1001"] and remaining == 498
    r.run(r.ns.plan_delete("/big/e1000", SU, False, r.now, RPC))
    r.run(r.ns.plan_rename2("/big/e0001", "/big/e1000a", SU, False, r.now, RPC))
    page, remaining = r.ns.listing("/big", SU, "e0999", 2) or ([], -1)
    assert [e.name for e in page] == ["e1000a", "e1001"] and remaining == 498
    r.run(r.ns.plan_delete("/big", SU, True, r.now, RPC))
    r.mkdirs("/big/x")  # slots reused: no stale listing
    page, remaining = r.ns.listing("/big", SU) or ([], -1)
    assert [e.name for e in page] == ["x"] and remaining == 0
    assert replay(r.log).dump() == r.ns.dump()


EDITS = Path(__file__).parent / "fixtures" / "hadoop" / "editsStored"


def test_hadoop_edit_log_replays_and_round_trips_through_an_image(tmp_path: Path) -> None:
    """HDFS's own edit log (every op kind) applies; the result survives an image."""
    from qjm.editlog.ops import read_ops

    ns = Namespace(superuser="hdfs")
    for _, op in read_ops(EDITS.read_bytes()):
        ns.apply(op)
    assert ns.last_inode_id == 16398
    assert ns.totals() == (8, 3, 5147)
    concat = ns.stat("/file_concat_target", SU)
    assert concat is not None and concat.length == 4608  # three 1536-byte files concatenated
    assert ns.stat("/file_concat_0", SU) is None
    truncated = ns.stat("/file_create", SU)
    assert truncated is not None and truncated.length == 512 and not truncated.under_construction
    moved = ns.stat("/file_moved", SU)
    assert moved is not None and (moved.owner, moved.permission) == ("newOwner", 0o777)
    link = ns.stat("/file_symlink", SU)
    assert link is not None and link.symlink == "/file_concat_target"
    path = tmp_path / "fsimage_0000000000000000099"
    write_image(path, ns.to_image(99, NameSystemInfo(namespace_id=1, txid=0)))
    back = Namespace.from_image(read_image(path), superuser="hdfs")
    assert back.dump() == ns.dump()
    assert back.totals() == ns.totals()


def test_fast_loader_equals_the_general_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """load_namespace (straight into columns) gives what from_image(read_image()) gives."""
    from qjm.editlog.ops import read_ops
    from qjm.namenode import image_bridge
    from qjm.namenode.namespace import load_namespace

    def no_fallback(*_: object) -> None:
        raise AssertionError("the fast loader fell back to the general path")

    monkeypatch.setattr(image_bridge, "_general", no_fallback)

    cases: list[Path] = [FIXTURE]
    r = Recorder()
    r.mkdirs("/user/alice")
    r.touch("/user/alice/f")
    r.run(r.ns.plan_set_quota("/user", SU, 50, 1 << 40))
    r.run(r.ns.plan_create("/open", SU, 0o640, False, False, 2, 1 << 20, "w", "m", 3, RPC))
    edits = Namespace(superuser="hdfs")
    for _, op in read_ops(EDITS.read_bytes()):
        edits.apply(op)
    for i, ns in enumerate((r.ns, edits, Namespace(superuser="hdfs"))):
        p = tmp_path / f"fsimage_{i:019d}"
        write_image(p, ns.to_image(i, NameSystemInfo(namespace_id=3, txid=0)))
        cases.append(p)
    for p in cases:
        image = read_image(p)
        slow = Namespace.from_image(image, superuser="hdfs")
        fast, ns_info = load_namespace(p, superuser="hdfs")
        assert ns_info == image.ns_info
        assert fast.dump() == slow.dump(), p.name
        assert fast.totals() == slow.totals() and len(fast) == len(slow)
        assert fast.last_inode_id == slow.last_inode_id
        # and it works on: a new inode, a quota check
        ops = fast.plan_mkdirs("/zz/new", SU, 0o755, True, 1)
        for op in ops:
            fast.apply(op)
        assert fast.stat("/zz/new", SU) is not None


def test_copy_is_independent() -> None:
    r = Recorder()
    r.mkdirs("/a/b")
    r.touch("/a/b/f")
    r.run(r.ns.plan_set_quota("/a", SU, 10, 1 << 30))
    r.run(r.ns.plan_create("/a/open", SU, 0o644, False, False, 1, 1 << 20, "w", "m", 3, RPC))
    c = r.ns.copy()
    assert c.dump() == r.ns.dump() and c.totals() == r.ns.totals()
    before = c.dump()
    r.touch("/a/b/g")
    r.run(r.ns.plan_delete("/a/b/f", SU, False, r.now, RPC))
    r.run(r.ns.plan_set_owner("/a", SU, "zed", "zgroup"))
    assert c.dump() == before  # the original's changes do not reach the copy
    snapshot = r.ns.dump()
    for op in c.plan_mkdirs("/a/x", SU, 0o755, False, 9):
        c.apply(op)
    assert r.ns.dump() == snapshot  # nor the copy's the original
    assert c.stat("/a/x", SU) is not None and r.ns.stat("/a/x", SU) is None
    cs = c.content_summary("/a", SU)
    assert (cs.file_count, cs.directory_count, cs.ns_quota) == (2, 3, 10)


def test_failover_continues_inode_ids() -> None:
    """The standby applies the active's ops; once it plans, its ids follow the active's."""
    active, standby = Namespace(superuser="hdfs"), Namespace(superuser="hdfs")

    def write(leader: Namespace, follower: Namespace, ops: list[Op]) -> None:
        for op in ops:
            leader.apply(op)
            follower.apply(op)

    write(active, standby, active.plan_mkdirs("/a/b", SU, 0o755, True, 1))
    write(
        active,
        standby,
        active.plan_create("/a/f", SU, 0o644, False, False, 1, 1 << 20, "c", "m", 2, RPC),
    )
    # failover: the old standby plans now, the old active tails
    ops = standby.plan_mkdirs("/a/c", SU, 0o755, False, 3)
    assert isinstance(ops[0], MkdirOp) and ops[0].inode_id == 16389
    write(standby, active, ops)
    write(standby, active, standby.plan_complete("/a/f", SU, "c", 0, 4))
    assert active.dump() == standby.dump()
    ids = [row[1] for row in active.dump()]
    assert len(ids) == len(set(ids))


def test_a_loader_builds_a_namespace_through_the_inode_store_api() -> None:
    """InodeStore.from_columns then Namespace.from_store: totals and quota usage counted."""
    from qjm.namenode.inodes import DIRECTORY, FILE, NO_SLOT, InodeColumns, InodeStore, StringTable

    table = StringTable()
    u = table.id("hdfs")
    cols = InodeColumns(
        ids=[ROOT_INODE_ID, 16390, 16391],
        parents=[NO_SLOT, 0, 1],
        flags=[DIRECTORY, DIRECTORY, FILE],
        modes=[0o755, 0o750, 0o644],
        owners=[u, u, u],
        groups=[u, u, u],
        mtimes=[1, 2, 3],
        atimes=[0, 0, 3],
        repls=[0, 0, 3],
        bsizes=[0, 0, 1 << 20],
        lengths=[0, 0, 100],
        names=["", "d", "f"],
        kids=[{"d": 1}, {"f": 2}, None],
        strings=table,
        blocks={2: (Block(1, 100, 1),)},
        quotas={1: (10, 1000)},
        leases={},
        extra={},
    )
    ns = Namespace.from_store(InodeStore.from_columns(cols), last_inode_id=16385, superuser="hdfs")
    assert ns.totals() == (1, 2, 100)
    assert ns.last_inode_id == 16391  # at least the largest id held
    d = ns.content_summary("/d", SU)
    assert (d.ns_quota, d.space_quota, d.space_consumed) == (10, 1000, 300)
    root = ns.content_summary("/", SU)
    assert (root.file_count, root.directory_count, root.space_consumed) == (1, 2, 300)
    with pytest.raises(NSQuotaExceededError):  # the cached usage counts the two inodes
        ns.plan_mkdirs("/d/" + "/".join("abcdefghi"), SU, 0o755, True, 4)
    with pytest.raises(ValueError, match="different lengths"):
        InodeStore.from_columns(dataclasses.replace(cols, names=["", "d"]))
