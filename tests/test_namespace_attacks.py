"""A hostile caller, bad paths and ops that contradict the tree are refused, and nothing changes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from qjm.editlog.ops import (
    AddOp,
    CloseOp,
    DeleteOp,
    MkdirOp,
    Op,
    PermissionStatus,
    RenameOldOp,
    RenameOp,
    SetOwnerOp,
    SetPermissionsOp,
    TimesOp,
)
from qjm.namenode.errors import (
    AccessControlError,
    InvalidPathError,
    NamenodeError,
    NSQuotaExceededError,
)
from qjm.namenode.namespace import Namespace
from qjm.namenode.types import Caller, RpcIds

SU = Caller("hdfs")
ALICE = Caller("alice", ("users",))
MALLORY = Caller("mallory", ("users",))  # same group as alice, not the owner
EVE = Caller("eve", ("strangers",))
RPC = RpcIds()
PS = PermissionStatus("hdfs", "supergroup", 0o755)


def run(ns: Namespace, ops: list[Op]) -> None:
    for op in ops:
        ns.apply(op)


@pytest.fixture
def ns() -> Namespace:
    """alice's home 0755 with a private file and a group-writable dir; sticky /tmp."""
    n = Namespace(superuser="hdfs", supergroup="hadoop")
    run(n, n.plan_mkdirs("/home/alice", SU, 0o755, True, 1))
    run(n, n.plan_set_owner("/home/alice", SU, "alice", "users"))
    run(n, n.plan_mkdirs("/home/alice/team", ALICE, 0o775, False, 2))
    run(
        n,
        n.plan_create(
            "/home/alice/secret", ALICE, 0o600, False, False, 1, 1 << 20, "c", "m", 3, RPC
        ),
    )
    run(n, n.plan_complete("/home/alice/secret", ALICE, "c", 0, 4))
    run(n, n.plan_mkdirs("/tmp", SU, 0o1777, False, 5))
    run(
        n, n.plan_create("/tmp/alice.log", ALICE, 0o666, False, False, 1, 1 << 20, "c", "m", 6, RPC)
    )
    run(n, n.plan_complete("/tmp/alice.log", ALICE, "c", 0, 7))
    run(n, n.plan_mkdirs("/private", SU, 0o700, False, 8))
    return n


HOSTILE: list[tuple[str, Callable[[Namespace, Caller], Any]]] = [
    ("chmod", lambda n, c: n.plan_set_permission("/home/alice/secret", c, 0o777)),
    ("chmod dir", lambda n, c: n.plan_set_permission("/home/alice", c, 0o777)),
    ("chown", lambda n, c: n.plan_set_owner("/home/alice/secret", c, c.user, None)),
    ("chgrp", lambda n, c: n.plan_set_owner("/home/alice/secret", c, None, c.groups[0])),
    ("delete", lambda n, c: n.plan_delete("/home/alice/secret", c, False, 9, RPC)),
    ("delete home", lambda n, c: n.plan_delete("/home/alice", c, True, 9, RPC)),
    ("rename", lambda n, c: n.plan_rename("/home/alice/secret", "/tmp/stolen", c, 9, RPC)),
    ("rename2", lambda n, c: n.plan_rename2("/home/alice/secret", "/tmp/x", c, False, 9, RPC)),
    (
        "rename into",
        lambda n, c: n.plan_rename2("/tmp/alice.log", "/home/alice/x", c, False, 9, RPC),
    ),
    (
        "create in",
        lambda n, c: n.plan_create(
            "/home/alice/x", c, 0o644, False, False, 1, 1 << 20, "c", "m", 9, RPC
        ),
    ),
    (
        "overwrite",
        lambda n, c: n.plan_create(
            "/home/alice/secret", c, 0o644, True, False, 1, 1 << 20, "c", "m", 9, RPC
        ),
    ),
    ("mkdir in", lambda n, c: n.plan_mkdirs("/home/alice/x", c, 0o755, False, 9)),
    ("setrep", lambda n, c: n.plan_set_replication("/home/alice/secret", c, 3)),
    ("settimes", lambda n, c: n.plan_set_times("/home/alice/secret", c, 1, 1)),
    ("quota", lambda n, c: n.plan_set_quota("/home/alice", c, 1, -1)),
    ("sticky delete", lambda n, c: n.plan_delete("/tmp/alice.log", c, False, 9, RPC)),
    ("sticky rename", lambda n, c: n.plan_rename2("/tmp/alice.log", "/tmp/mine", c, False, 9, RPC)),
    ("list private", lambda n, c: n.listing("/private", c)),
    ("stat under private", lambda n, c: n.stat("/private/x", c)),
    ("summary private", lambda n, c: n.content_summary("/private", c)),
]


@pytest.mark.parametrize("who", [MALLORY, EVE], ids=["same-group", "stranger"])
@pytest.mark.parametrize(("what", "attempt"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_caller_is_refused(
    ns: Namespace, who: Caller, what: str, attempt: Callable[[Namespace, Caller], Any]
) -> None:
    before = ns.dump()
    with pytest.raises(AccessControlError, match=who.user):
        attempt(ns, who)
    assert ns.dump() == before


def test_refusal_names_user_access_and_inode(ns: Namespace) -> None:
    with pytest.raises(AccessControlError) as e:
        ns.plan_mkdirs("/home/alice/x", EVE, 0o755, False, 9)
    msg = str(e.value)
    assert (
        "user=eve" in msg
        and "access=WRITE" in msg
        and '"/home/alice":alice:users:drwxr-xr-x' in msg
    )
    assert e.value.java_class == "org.apache.hadoop.security.AccessControlException"


def test_superuser_and_supergroup_may(ns: Namespace) -> None:
    admin = Caller("root", ("hadoop",))
    run(ns, ns.plan_set_permission("/home/alice/secret", admin, 0o644))
    run(ns, ns.plan_delete("/tmp/alice.log", admin, False, 9, RPC))
    assert ns.stat("/tmp/alice.log", SU) is None
    flagged = Caller("ops", (), superuser=True)
    run(ns, ns.plan_set_owner("/home/alice/secret", flagged, "ops", None))


def test_group_member_may_write_a_group_writable_dir(ns: Namespace) -> None:
    run(ns, ns.plan_mkdirs("/home/alice/team/m", MALLORY, 0o755, False, 9))
    with pytest.raises(AccessControlError):
        ns.plan_mkdirs("/home/alice/team/e", EVE, 0o755, False, 9)


def test_sticky_owner_of_file_may_delete(ns: Namespace) -> None:
    run(ns, ns.plan_delete("/tmp/alice.log", ALICE, False, 9, RPC))
    assert ns.stat("/tmp/alice.log", SU) is None


def test_recursive_delete_needs_all_on_subdirectories(ns: Namespace) -> None:
    # mallory owns a dir in /tmp but alice made a read-only subdir inside it
    run(ns, ns.plan_mkdirs("/tmp/m", MALLORY, 0o777, False, 9))
    run(ns, ns.plan_mkdirs("/tmp/m/a/b", ALICE, 0o755, True, 9))
    with pytest.raises(AccessControlError, match="access=ALL"):
        ns.plan_delete("/tmp/m", MALLORY, True, 9, RPC)


def test_permissions_disabled_allows_everything(ns: Namespace) -> None:
    open_ns = Namespace(superuser="hdfs", permissions_enabled=False)
    run(open_ns, open_ns.plan_mkdirs("/p", SU, 0o700, False, 1))
    run(open_ns, open_ns.plan_mkdirs("/p/q", EVE, 0o700, False, 1))
    run(open_ns, open_ns.plan_set_permission("/p", EVE, 0o777))


def test_rename_into_own_subtree(ns: Namespace) -> None:
    run(ns, ns.plan_mkdirs("/a/b/c", SU, 0o755, True, 1))
    with pytest.raises(NamenodeError, match="under source"):
        ns.plan_rename2("/a", "/a/b/c/a", SU, False, 2, RPC)
    assert ns.plan_rename("/a", "/a/b", SU, 2, RPC) == []  # old rename (into /a/b/a): false
    assert ns.plan_rename("/a", "/a/b/c/d", SU, 2, RPC) == []
    with pytest.raises(NamenodeError):
        ns.plan_rename2("/a", "/a", SU, False, 2, RPC)


def test_root_cannot_be_deleted_or_renamed(ns: Namespace) -> None:
    with pytest.raises(NamenodeError):
        ns.plan_delete("/", SU, False, 1, RPC)  # non-empty, not recursive
    assert ns.plan_delete("/", SU, True, 1, RPC) == []  # HDFS answers false
    assert ns.plan_rename("/", "/x", SU, 1, RPC) == []
    with pytest.raises(NamenodeError, match="root"):
        ns.plan_rename2("/", "/x", SU, False, 1, RPC)
    with pytest.raises(NamenodeError, match="root"):
        ns.plan_rename2("/tmp", "/", SU, True, 1, RPC)
    with pytest.raises(NamenodeError, match="root"):
        ns.apply(DeleteOp(path="/", timestamp=1))
    assert ns.stat("/home/alice/secret", SU) is not None


def test_quota_exceeded_by_rename(ns: Namespace) -> None:
    run(ns, ns.plan_mkdirs("/q", SU, 0o755, False, 1))
    run(ns, ns.plan_set_quota("/q", SU, 2, -1))
    run(ns, ns.plan_mkdirs("/big/x/y", SU, 0o755, True, 1))
    with pytest.raises(NSQuotaExceededError, match="/q"):
        ns.plan_rename2("/big", "/q/big", SU, False, 2, RPC)
    with pytest.raises(NSQuotaExceededError):
        ns.plan_rename("/big", "/q", SU, 2, RPC)
    run(ns, ns.plan_rename2("/big/x/y", "/q/y", SU, False, 2, RPC))  # one inode fits
    # a rename inside the quota directory does not count twice
    run(ns, ns.plan_rename2("/q/y", "/q/z", SU, False, 3, RPC))


BAD_PATHS = ["relative", "", "/a/../b", "/a/./b", "/a//b", "/..", "/.", "/a:b", "//", "a/b"]


@pytest.mark.parametrize("path", BAD_PATHS)
def test_invalid_paths(ns: Namespace, path: str) -> None:
    with pytest.raises(InvalidPathError):
        ns.stat(path, SU)
    with pytest.raises(InvalidPathError):
        ns.plan_mkdirs(path, SU, 0o755, True, 1)
    with pytest.raises(InvalidPathError):
        ns.plan_create(path, SU, 0o644, False, True, 1, 1 << 20, "c", "m", 1, RPC)
    with pytest.raises(InvalidPathError):
        ns.plan_rename2("/tmp", path, SU, False, 1, RPC)
    with pytest.raises(InvalidPathError):
        ns.plan_delete(path, SU, True, 1, RPC)


def test_trailing_slash_is_allowed(ns: Namespace) -> None:
    st = ns.stat("/home/alice/", SU)
    assert st is not None and st.is_dir


CONTRADICTIONS: list[tuple[Op, str]] = [
    (MkdirOp(inode_id=20000, path="/missing/d", timestamp=1, permission_status=PS), "/missing/d"),
    (MkdirOp(inode_id=20000, path="/home", timestamp=1, permission_status=PS), "/home"),
    (
        MkdirOp(inode_id=20000, path="/home/alice/secret/d", timestamp=1, permission_status=PS),
        "secret/d",
    ),
    (
        AddOp(
            inode_id=20000,
            path="/nope/f",
            replication=1,
            mtime=1,
            atime=1,
            block_size=1,
            permission_status=PS,
            client_name="c",
            client_machine="m",
        ),
        "/nope/f",
    ),
    (
        AddOp(
            inode_id=20000,
            path="/home",
            replication=1,
            mtime=1,
            atime=1,
            block_size=1,
            permission_status=PS,
            client_name="c",
            client_machine="m",
            overwrite=True,
        ),
        "/home",
    ),
    (
        CloseOp(
            path="/home/alice/missing",
            replication=1,
            mtime=1,
            atime=1,
            block_size=1,
            permission_status=PS,
        ),
        "/home/alice/missing",
    ),
    (
        CloseOp(
            path="/home/alice/secret",
            replication=1,
            mtime=1,
            atime=1,
            block_size=1,
            permission_status=PS,
        ),
        "not under construction",
    ),
    (DeleteOp(path="/nope", timestamp=1), "/nope"),
    (RenameOldOp(src="/nope", dst="/x", timestamp=1), "/nope"),
    (RenameOp(src="/home", dst="/tmp/alice.log", timestamp=1), "exists"),
    (RenameOp(src="/home", dst="/home/alice/h", timestamp=1), "under the source"),
    (RenameOp(src="/home", dst="/nope/h", timestamp=1), "/nope/h"),
    (SetPermissionsOp(src="/nope", mode=0o777), "/nope"),
    (SetOwnerOp(src="/nope", username="x"), "/nope"),
    (TimesOp(path="/nope", mtime=1, atime=1), "/nope"),
    (MkdirOp(inode_id=20000, path="/a/../b", timestamp=1, permission_status=PS), "/a/../b"),
]


@pytest.mark.parametrize(
    ("op", "named"),
    CONTRADICTIONS,
    ids=[f"{o.opcode_name}-{i}" for i, (o, _) in enumerate(CONTRADICTIONS)],
)
def test_replayed_op_contradicting_the_tree(ns: Namespace, op: Op, named: str) -> None:
    before = ns.dump()
    with pytest.raises(NamenodeError) as e:
        ns.apply(op)
    assert op.opcode_name in str(e.value) and named in str(e.value)
    assert ns.dump() == before


def test_unknown_to_the_tree_ops_are_ignored(ns: Namespace) -> None:
    from qjm.editlog.ops import (
        AllocateBlockIdOp,
        EndLogSegmentOp,
        SetGenstampV2Op,
        StartLogSegmentOp,
    )

    before = ns.dump()
    for op in (
        StartLogSegmentOp(),
        SetGenstampV2Op(genstamp_v2=1001),
        AllocateBlockIdOp(block_id=1 << 30),
        EndLogSegmentOp(),
    ):
        ns.apply(op)
    assert ns.dump() == before
