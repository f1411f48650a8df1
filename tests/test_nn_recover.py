"""`qjm namenode recover`: the shared journal decides every txid it holds (design §N.5).

Table tests of the plan (which edits are applied, which dropped and why) and the
real-process scenario: an edit the active logged locally while its quorum flush failed
must not come back when its name dir is recovered after the other NameNode took over.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from conftest import JNFactory, run_qjm
from nn_harness import (
    NNProcess,
    Rpc,
    copy_name_dir,
    format_cluster,
    make_config,
    ns_tree,
    write_config,
)
from qjm.editlog.ops import (
    DeleteOp,
    EndLogSegmentOp,
    MkdirOp,
    Op,
    PermissionStatus,
    RenameOp,
    StartLogSegmentOp,
)
from qjm.ipc import RemoteError
from qjm.namenode.admin import namespace_factory
from qjm.namenode.fs_image import load_newest
from qjm.namenode.recovery_plan import plan_recovery
from qjm.namenode.storage import NNStorage


def mkdir(path: str) -> MkdirOp:
    """A mkdir op of path."""
    return MkdirOp(
        inode_id=16386,
        path=path,
        timestamp=1,
        permission_status=PermissionStatus("hdfs", "supergroup", 0o755),
    )


START, END = StartLogSegmentOp(), EndLogSegmentOp()
A, B, C, GHOST = mkdir("/a"), mkdir("/b"), mkdir("/c"), mkdir("/ghost")
MV = RenameOp(src="/a", dst="/z", timestamp=1)
RM = DeleteOp(path="/b", timestamp=1)


def run(*ops: Op, first: int = 1) -> list[tuple[int, Op]]:
    """ops numbered from txid first."""
    return [(first + i, op) for i, op in enumerate(ops)]


# name: (image txid, shared, journal read, local, flag) ->
#       (applied txids, from shared, from local, dropped as (txid, opcode, path, why part))
PLANS: dict[str, tuple[tuple[Any, ...], tuple[Any, ...]]] = {
    "journal and local agree": (
        (0, run(START, A, B), True, run(START, A, B), False),
        ([1, 2, 3], 3, 0, []),
    ),
    "a local op the journal contradicts is dropped": (
        (0, run(START, A, END, START), True, run(START, A, GHOST), False),
        ([1, 2, 3, 4], 4, 0, [(3, "OP_MKDIR", "/ghost", "holds OP_END_LOG_SEGMENT")]),
    ),
    "local ops beyond the journal are dropped without the flag": (
        (0, run(START, A), True, run(START, A, GHOST, MV), False),
        (
            [1, 2],
            2,
            0,
            [
                (3, "OP_MKDIR", "/ghost", "beyond the shared journal's end at txid 2"),
                (4, "OP_RENAME", "/a -> /z", "--local-edits-beyond-journal"),
            ],
        ),
    ),
    "local ops beyond the journal are applied with the flag": (
        (0, run(START, A), True, run(START, A, GHOST, MV), True),
        ([1, 2, 3, 4], 2, 2, []),
    ),
    "contradicted and beyond at once": (
        (0, run(START, A, B), True, run(START, A, C, RM), True),
        ([1, 2, 3, 4], 3, 1, [(3, "OP_MKDIR", "/c", "holds OP_MKDIR /b")]),
    ),
    "an unreadable journal: nothing local without the flag": (
        (0, [], False, run(START, A), False),
        (
            [],
            0,
            0,
            [(1, "OP_START_LOG_SEGMENT", None, "could not be read"), (2, "OP_MKDIR", "/a", "")],
        ),
    ),
    "an unreadable journal: the local edits with the flag": (
        (0, [], False, run(START, A), True),
        ([1, 2], 0, 2, []),
    ),
    "the journal holds more than the local edits": (
        (0, run(START, A, B, C), True, run(START), False),
        ([1, 2, 3, 4], 4, 0, []),
    ),
    "ops at or below the image are skipped": (
        (2, run(START, A, B, C), True, run(START, A, B, GHOST), False),
        ([3, 4], 2, 0, [(4, "OP_MKDIR", "/ghost", "holds OP_MKDIR /c")]),
    ),
    "a gap in the journal ends its run there": (
        (0, run(START, A) + run(C, first=4), True, run(START, A, B), False),
        ([1, 2], 2, 0, [(3, "OP_MKDIR", "/b", "beyond")]),
    ),
    "a gap in the local edits beyond the journal": (
        (0, run(START), True, run(START, A) + run(C, first=4), True),
        ([1, 2], 1, 1, [(4, "OP_MKDIR", "/c", "txid 3 is missing")]),
    ),
}


@pytest.mark.parametrize("case", PLANS, ids=list(PLANS))
def test_the_shared_journal_decides_every_txid_it_holds(case: str) -> None:
    (image, shared, read, local, flag), (txids, n_shared, n_local, dropped) = PLANS[case]
    plan = plan_recovery(image, shared, local, journal_read=read, local_beyond_journal=flag)
    assert [t for t, _ in plan.run] == txids
    assert (plan.from_shared, plan.from_local) == (n_shared, n_local)
    assert len(plan.dropped) == len(dropped), plan.dropped
    for got, (txid, opcode, path, why) in zip(plan.dropped, dropped, strict=True):
        assert (got.txid, got.opcode, got.path) == (txid, opcode, path), got
        assert why in got.why and got.source == "local", got
        assert f"txid {txid} {opcode}" in got.line()
    shared_ops = dict(shared)
    for t, op in plan.run:  # every txid the journal holds is the journal's op
        if t in shared_ops and t <= image + n_shared:
            assert op == shared_ops[t]


# -- real processes ----------------------------------------------------------------------------
@pytest.mark.slow
async def test_recover_does_not_resurrect_an_edit_no_journalnode_holds(
    tmp_path: Path, jn_factory: JNFactory
) -> None:
    jns = [jn_factory.start(f"jn{i}") for i in range(3)]
    cfg = make_config(jns, tmp_path)
    await format_cluster(cfg, "nn1")
    copy_name_dir(cfg, "nn1", "nn2")
    conf = write_config(cfg, tmp_path / "cluster.toml")
    nn1, nn2 = NNProcess(conf, "nn1", tmp_path), NNProcess(conf, "nn2", tmp_path)
    rpcs: list[Rpc] = []
    try:
        nn1.start()
        rpcs.append(rpc1 := Rpc((await nn1.wait_ready())["rpc"]))
        await rpc1.transition_to_active()
        assert await rpc1.mkdirs("/committed")  # txid 2, acknowledged
        for jn in jns:  # every JournalNode down
            jn_factory.stop(jn)
        with pytest.raises(RemoteError, match="could not be synced"):
            await rpc1.mkdirs("/ghost")  # txid 3: in nn1's local edits only
        assert await nn1.wait_exit(60) == 1
        jns = [jn_factory.start(jn.name, jn.rpc, jn.http) for jn in jns]
        nn2.start()
        rpcs.append(rpc2 := Rpc((await nn2.wait_ready())["rpc"]))
        await rpc2.transition_to_active()  # its segment starts at txid 3
        assert await rpc2.stat("/committed") is not None
        assert await rpc2.stat("/ghost") is None

        done = await asyncio.to_thread(
            run_qjm, "namenode", "recover", "--config", str(conf), "--id", "nn1"
        )
        assert done.returncode == 0, done.stderr
        out = done.stdout
        # Txid 3 is nn2's segment start in the journal (or past the committed txid the
        # JournalNodes heard of yet): either way nn1's local txid 3 is dropped, and said so.
        assert "dropped txid 3 OP_MKDIR /ghost (local edits): " in out, out
        assert "from the local edits" not in out, out
        assert "from the shared journal" in out, out
        storage = NNStorage(cfg.namenode_named("nn1").name_dir, lock=False)
        ns, txid = load_newest(storage, namespace_factory(cfg))
        paths = set(ns_tree(ns))
        assert "/committed" in paths and "/ghost" not in paths, (txid, paths)
    finally:
        for r in rpcs:
            await r.close()
        nn1.stop()
        nn2.stop()
