"""Seeded random workloads: replay equals plan+apply, cached counts equal recounts, images agree."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from qjm.editlog.framing import iter_ops
from qjm.editlog.ops import Op, decode_op, encode_op
from qjm.namenode.errors import NamenodeError
from qjm.namenode.image import NameSystemInfo, read_image, write_image
from qjm.namenode.inodes import DIRECTORY, NO_SLOT
from qjm.namenode.namespace import ROOT, Namespace
from qjm.namenode.types import Caller, RpcIds

USERS = [
    Caller("hdfs"),
    Caller("alice", ("users",)),
    Caller("bob", ("users",)),
    Caller("eve", ("others",)),
]
NAMES = ["a", "b", "c", "d"]
RPC = RpcIds(b"x" * 16, 1)


def random_path(rng: random.Random) -> str:
    return "/" + "/".join(rng.choice(NAMES) for _ in range(rng.randint(1, 4)))


def pick(ns: Namespace, rng: random.Random) -> str:
    """An existing path more often than not, else any path of the small universe."""
    if rng.random() < 0.6:
        return rng.choice([p for p, _ in ns.iter_paths()])
    return random_path(rng)


def random_call(ns: Namespace, rng: random.Random, now: int) -> list[Op]:
    who = rng.choices(USERS, weights=[4, 2, 2, 1])[0]
    p, q = pick(ns, rng), pick(ns, rng)
    k = rng.randrange(13)
    if k == 0:
        return ns.plan_mkdirs(
            p, who, rng.choice([0o755, 0o700, 0o777, 0o1777]), rng.random() < 0.7, now
        )
    if k == 1:
        return ns.plan_create(
            p,
            who,
            rng.choice([0o644, 0o600, 0o666]),
            rng.random() < 0.3,
            rng.random() < 0.5,
            rng.randint(1, 3),
            1 << 20,
            f"c{who.user}",
            "m",
            now,
            RPC,
        )
    if k == 2:
        return ns.plan_complete(p, who, f"c{who.user}", 0, now)
    if k == 3:
        return ns.plan_rename(p, q, who, now, RPC)
    if k == 4:
        return ns.plan_rename2(p, q, who, rng.random() < 0.5, now, RPC)
    if k == 5:
        return ns.plan_delete(p, who, rng.random() < 0.7, now, RPC)
    if k == 6:
        return ns.plan_set_permission(p, who, rng.choice([0o755, 0o700, 0o777, 0o1777, 0o500]))
    if k == 7:
        return ns.plan_set_owner(
            p, who, rng.choice([None, "alice", "bob"]), rng.choice([None, "users", "others"])
        )
    if k == 8:
        return ns.plan_set_replication(p, who, rng.randint(1, 4))
    if k == 9:
        return ns.plan_set_times(p, who, rng.choice([-1, now]), rng.choice([-1, now]))
    if k == 10:
        return ns.plan_set_quota(
            p, who, rng.choice([-1, 3, 5, 10, (1 << 63) - 1]), rng.choice([-1, 0, 1 << 30])
        )
    if k == 11:
        ns.content_summary(p, who)
        return []
    ns.listing(p, who)
    ns.stat(p, who)
    return []


def check_counts(ns: Namespace) -> None:
    """Counters and cached quota usage equal a recount of the tree."""
    st = ns.store
    files = dirs = nbytes = 0
    for s in st.subtree(ROOT):
        if st.flags[s] & 3 == DIRECTORY:
            dirs += 1
        else:
            files += 1
            nbytes += st.length[s]
        k = st.kids[s]
        if k is not None:
            assert k, "an empty entry dict is kept as None"
            for name, c in k.items():
                assert st.names[c] == name and st.parent[c] == s
    assert ns.totals() == (files, dirs, nbytes)
    whole = ns.content_summary("/", Caller("hdfs"))  # from the kept counts
    _, ds, *_ = ns.subtree_usage(ROOT)
    assert (whole.length, whole.file_count, whole.directory_count) == (nbytes, files, dirs)
    assert whole.space_consumed == ds
    assert len(ns) == files + dirs
    for s, q in st.quota.items():
        ns_used, ds_used, *_ = ns.subtree_usage(s)
        assert (q[2], q[3]) == (ns_used, ds_used), st.path_of(s)
    assert st.parent[ROOT] == NO_SLOT


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_random_workload(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    ns = Namespace(superuser="hdfs")
    log: list[Op] = []
    refused = 0
    for now in range(1, 1501):
        try:
            ops = random_call(ns, rng, now)
        except NamenodeError:
            refused += 1
            continue
        for op in ops:
            ns.apply(op)
            log.append(op)
        if now % 50 == 0:
            check_counts(ns)
    assert log and refused  # both paths were exercised
    check_counts(ns)
    other = Namespace(superuser="hdfs")
    for txid, op in enumerate(log, 1):
        other.apply(decode_op(next(iter_ops(encode_op(op, txid), 0))))
    assert other.dump() == ns.dump()
    check_counts(other)
    path = tmp_path / "fsimage_0000000000000000001"
    write_image(path, ns.to_image(1, NameSystemInfo(namespace_id=1, txid=1)))
    back = Namespace.from_image(read_image(path), superuser="hdfs")
    assert back.dump() == ns.dump()
    check_counts(back)
