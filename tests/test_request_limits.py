"""HDFS's request limits in the plan step (design §N.4), as table tests of pure functions and
of Namespace plans: path length and depth, component length, directory items, and ops that
do not fit the edit log's encoding, refused before anything is applied."""

from __future__ import annotations

import pytest

from qjm.config import NameNodeSettings
from qjm.editlog.ops import AddOp, MkdirOp, PermissionStatus, SetOwnerOp
from qjm.errors import ConfigError
from qjm.namenode.errors import IllegalArgumentError
from qjm.namenode.namespace import (
    FsLimits,
    Namespace,
    PathComponentTooLongError,
    PathTooLongError,
    check_path_length,
    java_length,
    path_depth,
)
from qjm.namenode.server import encode_for_log
from qjm.namenode.types import Caller, RpcIds

SU = Caller("hdfs")
RPC = RpcIds()
TOO_LONG = "Pathname too long.  Limit 8000 characters, 1000 levels."
CLEF = "\U0001d11e"  # one code point, two Java chars


@pytest.mark.parametrize(
    ("path", "java", "depth"),
    [
        ("/", 1, 0),
        ("/a/b", 4, 2),
        ("/a//b/", 6, 2),
        ("/é", 2, 1),
        (f"/{CLEF}", 3, 1),
    ],
)
def test_java_length_and_depth(path: str, java: int, depth: int) -> None:
    assert java_length(path) == java
    assert path_depth(path) == depth


@pytest.mark.parametrize(
    ("path", "refused"),
    [
        ("/" + "x" * 7999, False),  # 8,000 characters
        ("/" + "x" * 8000, True),
        ("/" + "é" * 7999, False),  # 8,000 Java chars, more bytes
        ("/" + CLEF * 4000, True),  # 4,001 code points, 8,001 Java chars
        ("/a" * 1000, False),  # 1,000 levels
        ("/a" * 1001, True),
        ("/a" * 1000 + "/", False),
        ("/big/" + "/".join(["x" * 200] * 350), True),  # 70 KB
        ("/d" * 20_000, True),  # 20,000 components
    ],
)
def test_check_path_length(path: str, refused: bool) -> None:
    if not refused:
        check_path_length("mkdirs", path)
        return
    with pytest.raises(PathTooLongError) as e:
        check_path_length("mkdirs", path)
    assert str(e.value) == f"mkdirs: {TOO_LONG}"
    assert e.value.java_class == "java.io.IOException"


@pytest.fixture
def ns() -> Namespace:
    n = Namespace(superuser="hdfs")
    for op in n.plan_mkdirs("/tmp", SU, 0o777, True, 1):
        n.apply(op)
    for op in n.plan_create("/tmp/f", SU, 0o644, False, False, 1, 1 << 20, "c", "m", 1, RPC):
        n.apply(op)
    return n


@pytest.mark.parametrize(
    ("method", "plan"),
    [
        ("mkdirs", lambda ns, p: ns.plan_mkdirs(p, SU, 0o755, True, 1)),
        (
            "create",
            lambda ns, p: ns.plan_create(p, SU, 0o644, False, True, 1, 1 << 20, "c", "m", 1, RPC),
        ),
        ("rename", lambda ns, p: ns.plan_rename("/tmp/f", p, SU, 1, RPC)),
        ("rename", lambda ns, p: ns.plan_rename2("/tmp/f", p, SU, False, 1, RPC)),
    ],
)
@pytest.mark.parametrize("path", ["/big/" + "/".join(["x" * 200] * 350), "/d" * 20_000])
def test_plans_refuse_a_new_path_past_the_limits(
    ns: Namespace, method: str, plan: object, path: str
) -> None:
    before = ns.dump()
    with pytest.raises(PathTooLongError, match=f"^{method}: Pathname too long"):
        plan(ns, path)  # type: ignore[operator]
    assert ns.dump() == before


def test_only_the_rename_destination_is_checked(ns: Namespace) -> None:
    """HDFS checks the new path (dst), not the source: a long missing source is HDFS's false."""
    assert ns.plan_rename("/d" * 2000, "/tmp/g", SU, 1, RPC) == []


def test_the_deepest_plan_allowed_stays_bounded(ns: Namespace) -> None:
    ops = ns.plan_mkdirs("/a" * 1000, SU, 0o755, True, 1)
    assert len(ops) == 1000 and all(isinstance(op, MkdirOp) for op in ops)


@pytest.mark.parametrize(
    ("limits", "name", "refused"),
    [
        (FsLimits(), "x" * 255, False),
        (FsLimits(), "x" * 256, True),
        (FsLimits(), "é" * 128, True),  # 256 bytes
        (FsLimits(max_component_length=10), "x" * 11, True),
        (FsLimits(max_component_length=10), "x" * 10, False),
        (FsLimits(max_component_length=0), "x" * 1000, False),  # 0: no limit
    ],
)
def test_component_length_is_configurable(
    ns: Namespace, limits: FsLimits, name: str, refused: bool
) -> None:
    ns.limits = limits
    if not refused:
        assert ns.plan_mkdirs(f"/tmp/new/{name}", SU, 0o755, True, 1)
        return
    with pytest.raises(PathComponentTooLongError) as e:
        ns.plan_mkdirs(f"/tmp/new/{name}", SU, 0o755, True, 1)
    # the directory named is the one the name goes into, made by the same call
    assert f" in directory /tmp/new is exceeded: limit={limits.max_component_length} " in str(
        e.value
    )
    assert e.value.java_class.endswith("FSLimitException$PathComponentTooLongException")


def test_directory_items_are_configurable(ns: Namespace) -> None:
    from qjm.namenode.namespace import MaxDirectoryItemsExceededError

    ns.limits = FsLimits(max_directory_items=1)  # /tmp holds f
    with pytest.raises(MaxDirectoryItemsExceededError, match="limit=1 items=1"):
        ns.plan_mkdirs("/tmp/d", SU, 0o755, False, 1)
    assert ns.copy().limits == ns.limits


def _add(client_name: str = "c", path: str = "/tmp/g") -> AddOp:
    return AddOp(
        inode_id=99,
        path=path,
        replication=1,
        mtime=1,
        atime=1,
        block_size=1 << 20,
        permission_status=PermissionStatus("u", "g", 0o644),
        client_name=client_name,
        client_machine="127.0.0.1",
    )


@pytest.mark.parametrize(
    ("ops", "opcode"),
    [
        ([_add("c" * 70_000)], "OP_ADD"),
        (
            [
                MkdirOp(
                    inode_id=1,
                    path="/m",
                    timestamp=1,
                    permission_status=PermissionStatus("u", "g", 0o755),
                ),
                _add("c" * 70_000),
            ],
            "OP_ADD",
        ),
        ([SetOwnerOp(src="/tmp", username="u" * 70_000)], "OP_SET_OWNER"),
        ([SetOwnerOp(src="/tmp", groupname="é" * 40_000)], "OP_SET_OWNER"),
    ],
)
def test_ops_that_do_not_fit_the_edit_log_are_refused_whole(ops: list, opcode: str) -> None:
    with pytest.raises(IllegalArgumentError) as e:
        encode_for_log("create", ops)
    text = str(e.value)
    assert text.startswith("create refused: cannot encode " + opcode)
    assert "16-bit" in text and "nothing was applied or logged" in text
    assert e.value.java_class == "org.apache.hadoop.HadoopIllegalArgumentException"


def test_a_value_past_a_java_long_is_refused_before_it_is_applied(ns: Namespace) -> None:
    """Not only names: any field the codec cannot write (a block size over 2**63-1)."""
    ops = ns.plan_create("/tmp/g", SU, 0o644, False, False, 1, 2**64 - 1, "c", "m", 1, RPC)
    before = ns.dump()
    with pytest.raises(IllegalArgumentError, match="cannot encode OP_ADD"):
        encode_for_log("create", ops)
    assert ns.dump() == before


def test_ops_that_fit_are_encoded_once() -> None:
    bodies = encode_for_log("create", [_add("c" * 65_535)])
    assert len(bodies) == 1 and len(bodies[0]) > 65_535


@pytest.mark.parametrize(
    ("key", "value", "refused"),
    [
        ("max_directory_items", 0, True),
        ("max_directory_items", 6_400_000, False),
        ("max_directory_items", 6_400_001, True),
        ("max_component_length", 0, False),
        ("ipc_max_connections", 0, True),
        ("ipc_idle_timeout_ms", 0, True),
        ("ipc_max_unfinished_bytes", 134_217_727, True),
        ("ipc_max_unfinished_bytes", 134_217_728, False),
        ("image_upload_max_bytes", 0, True),
    ],
)
def test_namenode_limit_settings(key: str, value: int, refused: bool) -> None:
    if not refused:
        NameNodeSettings(**{key: value})
        return
    with pytest.raises(ConfigError, match=f"namenode.{key}"):
        NameNodeSettings(**{key: value})
