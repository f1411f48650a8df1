"""HDFS's refusals, each with its exception class: paths, existence, permissions, quotas."""

from __future__ import annotations

import pytest

from qjm.editlog.ops import Op, RenameOldOp, RenameOp, SetOwnerOp, SetQuotaOp
from qjm.namenode.errors import (
    AccessControlError,
    DSQuotaExceededError,
    FileAlreadyExistsError,
    IllegalArgumentError,
    LeaseError,
    NamenodeError,
    NSQuotaExceededError,
    ParentNotDirectoryError,
    PathIsNotEmptyDirectoryError,
    PathNotFoundError,
)
from qjm.namenode.namespace import Namespace, check_replication
from qjm.namenode.types import Caller, RpcIds

SU = Caller("hdfs")
ALICE = Caller("alice", ("users",))
BOB = Caller("bob", ("users",))
EVE = Caller("eve", ("others",))
RPC = RpcIds()


def run(ns: Namespace, ops: list[Op]) -> list[Op]:
    for op in ops:
        ns.apply(op)
    return ops


def mkdirs(ns: Namespace, path: str, caller: Caller = SU, perm: int = 0o755) -> None:
    run(ns, ns.plan_mkdirs(path, caller, perm, True, 10))


def touch(ns: Namespace, path: str, caller: Caller = SU, perm: int = 0o644) -> None:
    run(ns, ns.plan_create(path, caller, perm, False, False, 1, 1 << 20, "c", "m", 10, RPC))
    run(ns, ns.plan_complete(path, caller, "c", 0, 11))


@pytest.fixture
def ns() -> Namespace:
    """/home/alice (alice:users 755) with a file; /tmp sticky 1777; /shared users 775."""
    n = Namespace(superuser="hdfs")
    mkdirs(n, "/home/alice")
    run(n, n.plan_set_owner("/home/alice", SU, "alice", "users"))
    touch(n, "/home/alice/notes", ALICE)
    mkdirs(n, "/tmp", perm=0o1777)
    mkdirs(n, "/shared", perm=0o775)
    run(n, n.plan_set_owner("/shared", SU, None, "users"))
    return n


# --- existence -------------------------------------------------------------------------


def test_mkdirs_without_parent_is_file_not_found(ns: Namespace) -> None:
    with pytest.raises(PathNotFoundError, match="Parent directory doesn't exist: /a/b"):
        ns.plan_mkdirs("/a/b/c", SU, 0o755, False, 1)
    assert ns.stat("/a", SU) is None


def test_mkdirs_over_a_file_exists(ns: Namespace) -> None:
    with pytest.raises(FileAlreadyExistsError, match="not a directory"):
        ns.plan_mkdirs("/home/alice/notes", ALICE, 0o755, True, 1)


def test_mkdirs_under_a_file_is_parent_not_directory(ns: Namespace) -> None:
    with pytest.raises(ParentNotDirectoryError):
        ns.plan_mkdirs("/home/alice/notes/x/y", ALICE, 0o755, True, 1)


def test_create_existing_without_overwrite(ns: Namespace) -> None:
    with pytest.raises(FileAlreadyExistsError, match="because the file exists"):
        ns.plan_create(
            "/home/alice/notes", ALICE, 0o644, False, False, 1, 1 << 20, "c", "m", 1, RPC
        )
    with pytest.raises(FileAlreadyExistsError, match="as a directory"):
        ns.plan_create("/home/alice", SU, 0o644, True, False, 1, 1 << 20, "c", "m", 1, RPC)


def test_create_without_parent(ns: Namespace) -> None:
    with pytest.raises(PathNotFoundError):
        ns.plan_create("/nope/f", SU, 0o644, False, False, 1, 1 << 20, "c", "m", 1, RPC)


def test_create_parents_get_implicit_uwx(ns: Namespace) -> None:
    run(ns, ns.plan_create("/p/q/f", SU, 0o444, False, True, 1, 1 << 20, "c", "m", 1, RPC))
    p = ns.stat("/p", SU)
    f = ns.stat("/p/q/f", SU)
    assert p is not None and f is not None
    assert p.permission == 0o744 and f.permission == 0o444


def test_create_bad_replication(ns: Namespace) -> None:
    with pytest.raises(NamenodeError, match="replication factor of 0"):
        ns.plan_create("/f", SU, 0o644, False, False, 0, 1 << 20, "c", "m", 1, RPC)
    with pytest.raises(NamenodeError, match="exceeds maximum"):
        ns.plan_create("/f", SU, 0o644, False, False, 513, 1 << 20, "c", "m", 1, RPC)


@pytest.mark.parametrize(
    ("replication", "machine", "refusal"),
    [
        (1, None, None),
        (512, "m", None),
        (
            0,
            None,
            "Requested replication factor of 0 is less than the required minimum of 1 for /f",
        ),
        (-3, "m", "of -3 is less than the required minimum of 1 for /f, clientName=m"),
        (513, None, "Requested replication factor of 513 exceeds maximum of 512 for /f"),
        (
            513,
            "h",
            "Requested replication factor of 513 exceeds maximum of 512 for /f, clientName=h",
        ),
    ],
)
def test_check_replication(replication: int, machine: str | None, refusal: str | None) -> None:
    """HDFS's BlockManager.verifyReplication: java.io.IOException, its message."""
    if refusal is None:
        check_replication(replication, "/f", machine)
        return
    with pytest.raises(NamenodeError) as refused:
        check_replication(replication, "/f", machine)
    assert type(refused.value) is NamenodeError  # java.io.IOException, as HDFS
    assert str(refused.value).endswith(refusal)


def test_set_replication_checks_the_bounds_first(ns: Namespace) -> None:
    """As HDFS's FSDirAttrOp.setReplication: before the path, so a directory is refused too."""
    with pytest.raises(NamenodeError, match="exceeds maximum of 512 for /home/alice$"):
        ns.plan_set_replication("/home/alice", ALICE, 513)
    with pytest.raises(NamenodeError, match="less than the required minimum of 1 for /nope$"):
        ns.plan_set_replication("/nope", ALICE, 0)


def test_complete_by_another_client_is_a_lease_error(ns: Namespace) -> None:
    run(ns, ns.plan_create("/f", SU, 0o644, False, False, 1, 1 << 20, "c1", "m", 1, RPC))
    with pytest.raises(LeaseError):
        ns.plan_complete("/f", SU, "c2", 0, 2)
    with pytest.raises(PathNotFoundError):
        ns.plan_complete("/g", SU, "c1", 0, 2)
    with pytest.raises(PathNotFoundError):
        ns.plan_complete("/f", SU, "c1", 99999, 2)  # another file id


def test_delete_non_empty_needs_recursive(ns: Namespace) -> None:
    with pytest.raises(PathIsNotEmptyDirectoryError, match="is non empty"):
        ns.plan_delete("/home/alice", ALICE, False, 1, RPC)
    assert ns.plan_delete("/nope", SU, True, 1, RPC) == []
    run(ns, ns.plan_delete("/home", SU, True, 1, RPC))
    assert ns.stat("/home/alice/notes", SU) is None
    assert ns.totals() == (0, 3, 0)  # /, /tmp, /shared
    assert len(ns) == 3


def test_old_rename_false_cases_and_into_directory(ns: Namespace) -> None:
    assert ns.plan_rename("/missing", "/x", SU, 1, RPC) == []
    assert ns.plan_rename("/home/alice/notes", "/nope/x", SU, 1, RPC) == []
    touch(ns, "/tmp/t")
    assert ns.plan_rename("/home/alice/notes", "/tmp/t", SU, 1, RPC) == []  # dst exists
    ops = run(ns, ns.plan_rename("/home/alice/notes", "/tmp", SU, 1, RPC))
    assert ops == [RenameOldOp(src="/home/alice/notes", dst="/tmp/notes", timestamp=1)]
    assert ns.stat("/tmp/notes", SU) is not None and ns.stat("/home/alice/notes", SU) is None


def test_rename2_refusals(ns: Namespace) -> None:
    touch(ns, "/tmp/t")
    with pytest.raises(PathNotFoundError):
        ns.plan_rename2("/missing", "/x", SU, False, 1, RPC)
    with pytest.raises(FileAlreadyExistsError):
        ns.plan_rename2("/home/alice/notes", "/tmp/t", SU, False, 1, RPC)
    with pytest.raises(PathNotFoundError):
        ns.plan_rename2("/home/alice/notes", "/no/x", SU, False, 1, RPC)
    with pytest.raises(ParentNotDirectoryError):
        ns.plan_rename2("/home/alice/notes", "/tmp/t/x", SU, False, 1, RPC)
    with pytest.raises(NamenodeError, match="must both be"):
        ns.plan_rename2("/home/alice/notes", "/shared", SU, True, 1, RPC)
    with pytest.raises(NamenodeError, match="not empty"):
        ns.plan_rename2("/shared", "/home", SU, True, 1, RPC)
    with pytest.raises(FileAlreadyExistsError, match="are the same"):
        ns.plan_rename2("/tmp/t", "/tmp/t", SU, False, 1, RPC)
    ops = run(ns, ns.plan_rename2("/home/alice/notes", "/tmp/t", SU, True, 2, RPC))
    assert isinstance(ops[0], RenameOp) and ops[0].options == ("OVERWRITE",)
    assert ns.stat("/home/alice/notes", SU) is None
    st = ns.stat("/tmp/t", SU)
    assert st is not None and st.owner == "alice"
    assert ns.totals()[0] == 1


def test_rename_updates_both_parents_mtime(ns: Namespace) -> None:
    run(ns, ns.plan_rename2("/home/alice/notes", "/shared/n", SU, False, 500, RPC))
    for p in ("/home/alice", "/shared"):
        st = ns.stat(p, SU)
        assert st is not None and st.mtime == 500


def test_set_replication_and_times(ns: Namespace) -> None:
    assert ns.plan_set_replication("/home/alice", ALICE, 2) == []  # a directory: false
    run(ns, ns.plan_set_replication("/home/alice/notes", ALICE, 5))
    run(ns, ns.plan_set_times("/home/alice/notes", ALICE, 123, -1))
    st = ns.stat("/home/alice/notes", SU)
    assert st is not None and st.replication == 5 and st.mtime == 123 and st.atime == 10
    with pytest.raises(PathNotFoundError):
        ns.plan_set_times("/nope", SU, 1, 1)
    with pytest.raises(AccessControlError):
        ns.plan_set_times("/home/alice/notes", EVE, 1, 1)
    # HDFS's setTimes needs WRITE on the path: owning a read-only file is not enough
    run(ns, ns.plan_set_permission("/home/alice/notes", ALICE, 0o444))
    with pytest.raises(AccessControlError, match="WRITE"):
        ns.plan_set_times("/home/alice/notes", ALICE, 1, 1)
    run(ns, ns.plan_set_times("/home/alice/notes", SU, 7, 8))


def test_set_owner_rules(ns: Namespace) -> None:
    # the owner may change the group to one of theirs, not the owner
    ops = ns.plan_set_owner("/home/alice/notes", ALICE, None, "users")
    assert ops == [SetOwnerOp(src="/home/alice/notes", username=None, groupname="users")]
    with pytest.raises(AccessControlError, match="non-super user cannot change owner"):
        ns.plan_set_owner("/home/alice/notes", ALICE, "bob", None)
    with pytest.raises(AccessControlError, match="does not belong to"):
        ns.plan_set_owner("/home/alice/notes", ALICE, None, "wheel")
    run(ns, ns.plan_set_owner("/home/alice/notes", SU, "bob", "wheel"))
    st = ns.stat("/home/alice/notes", SU)
    assert st is not None and (st.owner, st.group) == ("bob", "wheel")


def test_content_summary_and_quota_values(ns: Namespace) -> None:
    run(ns, ns.plan_set_quota("/home", SU, 10, 1000))
    cs = ns.content_summary("/home", SU)
    assert (cs.file_count, cs.directory_count, cs.ns_quota, cs.space_quota) == (1, 2, 10, 1000)
    # 2^63-1 leaves a quota as it is; -1 clears
    ops = ns.plan_set_quota("/home", SU, (1 << 63) - 1, -1)
    assert ops == [SetQuotaOp(src="/home", ns_quota=10, ds_quota=-1)]
    with pytest.raises(IllegalArgumentError):
        ns.plan_set_quota("/home", SU, -5, -1)
    with pytest.raises(IllegalArgumentError, match="root"):
        ns.plan_set_quota("/", SU, -1, -1)
    with pytest.raises(PathNotFoundError):
        ns.plan_set_quota("/home/alice/notes", SU, 5, -1)
    with pytest.raises(AccessControlError, match="Superuser privilege"):
        ns.plan_set_quota("/home", ALICE, 5, -1)
    with pytest.raises(PathNotFoundError):
        ns.content_summary("/nope", SU)


def test_ns_quota_counts_the_directory_itself(ns: Namespace) -> None:
    mkdirs(ns, "/q")
    run(ns, ns.plan_set_quota("/q", SU, 3, -1))
    mkdirs(ns, "/q/a")
    touch(ns, "/q/a/f")
    with pytest.raises(NSQuotaExceededError, match="/q"):
        ns.plan_mkdirs("/q/b", SU, 0o755, False, 1)
    with pytest.raises(NSQuotaExceededError):
        ns.plan_create("/q/g", SU, 0o644, False, False, 1, 1 << 20, "c", "m", 1, RPC)
    with pytest.raises(NSQuotaExceededError):
        ns.plan_mkdirs("/q/a/x/y", SU, 0o755, True, 1)
    run(ns, ns.plan_delete("/q/a/f", SU, False, 1, RPC))
    run(ns, ns.plan_mkdirs("/q/b", SU, 0o755, False, 1))  # room again


def test_ds_quota_on_set_replication_and_rename() -> None:
    from qjm.editlog.ops import AddOp, Block, CloseOp, PermissionStatus

    ns = Namespace(superuser="hdfs")
    mkdirs(ns, "/src")
    mkdirs(ns, "/dst")
    # a file with one 100-byte block, as an HDFS edit log would carry it
    ps = PermissionStatus("hdfs", "supergroup", 0o644)
    ns.apply(
        AddOp(
            inode_id=ns.last_inode_id + 1,
            path="/src/f",
            replication=1,
            mtime=1,
            atime=1,
            block_size=1 << 20,
            permission_status=ps,
            client_name="c",
            client_machine="m",
        )
    )
    ns.apply(
        CloseOp(
            path="/src/f",
            replication=1,
            mtime=2,
            atime=1,
            block_size=1 << 20,
            blocks=(Block(1 << 30, 100, 1001),),
            permission_status=ps,
        )
    )
    assert ns.totals() == (1, 3, 100)
    run(ns, ns.plan_set_quota("/src", SU, -1, 250))
    run(ns, ns.plan_set_quota("/dst", SU, -1, 150))
    run(ns, ns.plan_set_replication("/src/f", SU, 2))  # 200 <= 250
    with pytest.raises(DSQuotaExceededError, match="/src"):
        ns.plan_set_replication("/src/f", SU, 3)
    with pytest.raises(DSQuotaExceededError, match="/dst"):
        ns.plan_rename2("/src/f", "/dst/f", SU, False, 3, RPC)
    with pytest.raises(DSQuotaExceededError, match="/dst"):
        ns.plan_rename("/src/f", "/dst", SU, 3, RPC)
    cs = ns.content_summary("/src", SU)
    assert cs.space_consumed == 200 and cs.length == 100


def test_apply_only_keeps_quota_usage() -> None:
    """A replayed namespace enforces the same quotas (usage recomputed the same way)."""
    a = Namespace(superuser="hdfs")
    log: list[Op] = []
    log += run(a, a.plan_mkdirs("/q/a", SU, 0o755, True, 1))
    log += run(a, a.plan_set_quota("/q", SU, 3, -1))
    log += run(a, a.plan_mkdirs("/q/b", SU, 0o755, False, 2))
    b = Namespace(superuser="hdfs")
    for op in log:
        b.apply(op)
    for n in (a, b):
        with pytest.raises(NSQuotaExceededError):
            n.plan_mkdirs("/q/c", SU, 0o755, False, 3)


def test_a_file_inside_a_path_is_parent_not_directory(ns: Namespace) -> None:
    with pytest.raises(ParentNotDirectoryError, match="/home/alice/notes \\(is not a directory\\)"):
        ns.stat("/home/alice/notes/x", SU)
    with pytest.raises(ParentNotDirectoryError):
        ns.listing("/home/alice/notes/x/y", ALICE)
    with pytest.raises(ParentNotDirectoryError):
        ns.plan_delete("/home/alice/notes/x", SU, True, 1, RPC)


def test_old_rename_of_a_file_onto_itself_is_true(ns: Namespace) -> None:
    ops = ns.plan_rename("/home/alice/notes", "/home/alice/notes", ALICE, 1, RPC)
    assert ops == [RenameOldOp(src="/home/alice/notes", dst="/home/alice/notes", timestamp=1)]
    before = ns.dump()
    run(ns, ops)
    assert ns.dump() == before


def test_fs_limits(ns: Namespace) -> None:
    from qjm.namenode import namespace as nsmod

    long = "x" * 256
    with pytest.raises(nsmod.PathComponentTooLongError, match="limit=255 length=256"):
        ns.plan_mkdirs(f"/tmp/{long}/y", SU, 0o755, True, 1)
    with pytest.raises(nsmod.PathComponentTooLongError):
        ns.plan_create(f"/tmp/{long}", SU, 0o644, False, False, 1, 1 << 20, "c", "m", 1, RPC)
    with pytest.raises(nsmod.PathComponentTooLongError):
        ns.plan_rename2("/home/alice/notes", f"/tmp/{long}", SU, False, 1, RPC)
    assert ns.plan_mkdirs("/tmp/" + "é" * 127, SU, 0o755, False, 1)  # 254 bytes: fine
    mkdirs(ns, "/lim/a")
    ns.limits = nsmod.FsLimits(max_directory_items=2)
    mkdirs(ns, "/lim/b")
    with pytest.raises(nsmod.MaxDirectoryItemsExceededError, match="/lim"):
        ns.plan_mkdirs("/lim/c", SU, 0o755, False, 1)
    with pytest.raises(nsmod.MaxDirectoryItemsExceededError):
        ns.plan_rename2("/home/alice/notes", "/lim/n", SU, False, 1, RPC)
    run(ns, ns.plan_rename2("/lim/a", "/lim/a2", SU, False, 1, RPC))  # within the directory
    assert "MaxDirectoryItemsExceededException" in nsmod.MaxDirectoryItemsExceededError.java_class
