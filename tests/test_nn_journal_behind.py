"""A NameNode never follows a shared journal that ends before what it committed (design §N.5).

Table tests of the rules (the floor, the verdict from each JournalNode's end, the local
edits that refuse a new segment), and one real-process scenario: a stranger formats every
JournalNode of a running HA pair.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from conftest import JNFactory, run_qjm
from nn_harness import (
    NNProcess,
    Rpc,
    copy_name_dir,
    format_cluster,
    make_config,
    start_nn,
    write_config,
)
from qjm.editlog.ops import (
    EndLogSegmentOp,
    MkdirOp,
    PermissionStatus,
    StartLogSegmentOp,
    encode_ops,
    read_ops,
)
from qjm.editlog.segments import list_segments
from qjm.ipc import RemoteError
from qjm.namenode.admin import initialize_shared_edits
from qjm.namenode.journal_check import (
    Floor,
    LocalEditsAheadError,
    LocalSegment,
    NodeEnd,
    decided,
    journal_behind,
    journal_floor,
    local_floor,
)
from qjm.namenode.journal_set import LocalJournal
from qjm.namenode.storage import NNStorage, empty_image
from qjm_cluster import JNCluster

# -- the floor ---------------------------------------------------------------------------------
FLOORS = {
    "nothing known": (dict(committed=0, image_txid=0), None, 0, "applied txid 0"),
    "applied wins": (dict(committed=1928, image_txid=1900, seen_txid=1800), None, 1928, "applied"),
    "image wins": (dict(committed=0, image_txid=12, seen_txid=1), None, 12, "image at txid 12"),
    "seen_txid": (dict(committed=0, image_txid=0, seen_txid=41), None, 40, "seen_txid is 41"),
    "local edits": (
        dict(committed=0, image_txid=0, seen_txid=1),
        Floor(690, "its local edits file x ends at txid 690"),
        690,
        "ends at txid 690",
    ),
    "a tie keeps the first reason": (
        dict(committed=7, image_txid=7),
        None,
        7,
        "applied txid 7",
    ),
}


@pytest.mark.parametrize("case", FLOORS, ids=list(FLOORS))
def test_the_floor_is_the_highest_committed_txid_known(case: str) -> None:
    kwargs, local, txid, reason = FLOORS[case]
    floor = journal_floor(**kwargs, local=local)
    assert floor.txid == txid and reason in floor.reason, floor


LOCAL = {
    "none": ([], None),
    "finalized ends": (
        [LocalSegment(1, 10, "a"), LocalSegment(11, 25, "b"), LocalSegment(26, None, "c")],
        25,
    ),
    "in progress with ops: the txid before it": ([LocalSegment(26, None, "c")], 25),
    "an in-progress file with only its header proves nothing": (
        [LocalSegment(1, 10, "a"), LocalSegment(11, None, "b", has_ops=False)],
        10,
    ),
    "only an empty in-progress file": ([LocalSegment(1, None, "a", has_ops=False)], None),
}


@pytest.mark.parametrize("case", LOCAL, ids=list(LOCAL))
def test_what_the_local_edits_prove_the_journal_committed(case: str) -> None:
    segments, txid = LOCAL[case]
    got = local_floor(segments)
    assert (got.txid if got is not None else None) == txid, got


def ends(*highest: int | None) -> list[NodeEnd]:
    """NodeEnds of jn0, jn1, ... (None: did not answer)."""
    return [
        NodeEnd(f"jn{i}:1", h, "" if h is not None else "no answer") for i, h in enumerate(highest)
    ]


VERDICTS = {
    "every node formatted": (ends(0, 0, 0), 1928, 3),
    "a majority formatted": (ends(0, 0, 1928), 1928, 2),
    "one node behind (lagging)": (ends(0, 1928, 1928), 1928, None),
    "one node down, one behind: not known": (ends(None, 0, 1928), 1928, None),
    "two nodes down: not known": (ends(None, None, 0), 1928, None),
    "journal ahead of the floor": (ends(2000, 2000, 1990), 1928, None),
    "the floor itself is held": (ends(1928, 1928, 0), 1928, None),
    "floor 0: never behind": (ends(0, 0, 0), 0, None),
    "five nodes, three behind": (ends(5, 5, 5, 99, 99), 50, 3),
    "five nodes, two behind": (ends(5, 5, 99, 99, None), 50, None),
}


@pytest.mark.parametrize("case", VERDICTS, ids=list(VERDICTS))
def test_the_journal_is_behind_when_a_majority_ends_before_the_floor(case: str) -> None:
    answers, floor, short = VERDICTS[case]
    got = journal_behind(answers, Floor(floor, "test"))
    assert (len(got) if got is not None else None) == short, got


DECIDED = {
    "nothing heard": ([], False),
    "a majority short": (ends(0, 0), True),
    "a majority reaching": (ends(1928, 1928), True),
    "one of each: the third decides": (ends(0, 1928), False),
    "one short, two unknown": (ends(0, None, None), False),
}


@pytest.mark.parametrize("case", DECIDED, ids=list(DECIDED))
def test_the_probe_stops_once_the_answers_decide(case: str) -> None:
    answers, settled = DECIDED[case]
    assert decided(answers, 3, 1928) is settled


# -- the local journal never moves committed edits aside ---------------------------------------
def mkdir(i: int) -> MkdirOp:
    """A mkdir op of /d<i>."""
    return MkdirOp(
        inode_id=16386 + i,
        path=f"/d{i}",
        timestamp=1,
        permission_status=PermissionStatus("hdfs", "supergroup", 0o755),
    )


LOCAL_FILES = {
    # name: (files as (name, ops), first txid of the new segment, refused?, files left)
    "a finalized segment reaching the restart": (
        [("edits_0000000000000000001-0000000000000000004", 1, 4)],
        1,
        True,
        ["edits_0000000000000000001-0000000000000000004"],
    ),
    "an in-progress segment with ops after the restart": (
        [
            ("edits_0000000000000000001-0000000000000000004", 1, 4),
            ("edits_inprogress_0000000000000000005", 5, 6),
        ],
        3,
        True,
        [
            "edits_0000000000000000001-0000000000000000004",
            "edits_inprogress_0000000000000000005",
        ],
    ),
    "an in-progress segment at the restart: never committed, moved aside": (
        [
            ("edits_0000000000000000001-0000000000000000004", 1, 4),
            ("edits_inprogress_0000000000000000005", 5, 6),
        ],
        5,
        False,
        [
            "edits_0000000000000000001-0000000000000000004",
            "edits_inprogress_0000000000000000005.stale",
        ],
    ),
    "an in-progress tail past the restart is cut": (
        [("edits_inprogress_0000000000000000001", 1, 6)],
        5,
        False,
        ["edits_0000000000000000001-0000000000000000004"],
    ),
}


@pytest.mark.parametrize("case", LOCAL_FILES, ids=list(LOCAL_FILES))
def test_local_edits_ahead_of_the_restart_refuse_it(case: str, tmp_path: Path) -> None:
    files, first_txid, refused, left = LOCAL_FILES[case]
    for name, first, last in files:
        ops = []
        for t in range(first, last + 1):
            op = StartLogSegmentOp() if t == first else mkdir(t)
            if name.startswith("edits_0") and t == last:
                op = EndLogSegmentOp()
            ops.append((t, op))
        (tmp_path / name).write_bytes(encode_ops(ops))
    local = LocalJournal(tmp_path)
    if refused:
        with pytest.raises(LocalEditsAheadError, match="went backwards"):
            local.recover(first_txid)
    else:
        local.recover(first_txid)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(left)


# -- real processes: a stranger formats every JournalNode --------------------------------------
async def status(address: str) -> dict[str, Any]:
    """A NameNode's /status."""
    async with aiohttp.ClientSession() as s, s.get(f"http://{address}/status") as r:
        data: dict[str, Any] = json.loads(await r.text())
        return data


async def metrics(address: str) -> str:
    """A NameNode's /metrics text."""
    async with aiohttp.ClientSession() as s, s.get(f"http://{address}/metrics") as r:
        return await r.text()


async def wait_status(address: str, cond: Any, what: str, within: float = 60.0) -> dict[str, Any]:
    """Poll /status until cond(status) holds; the status then."""
    deadline = time.monotonic() + within
    st: dict[str, Any] = {}
    while True:
        try:
            st = await status(address)
        except aiohttp.ClientError:
            st = {}
        if st and cond(st):
            return st
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within}s waiting for {what}; last {st}")
        await asyncio.sleep(0.1)  # poll interval of a bounded wait


def local_mkdirs(name_dir: Path) -> set[str]:
    """Paths of every OP_MKDIR in a name dir's local edits."""
    out = set()
    for seg in list_segments(name_dir / "current"):
        for _, op in read_ops(seg.path.read_bytes()):
            if isinstance(op, MkdirOp):
                out.add(op.path)
    return out


def edits_files(name_dir: Path) -> set[str]:
    """Names of the edits files (moved-aside ones included) in a name dir."""
    return {p.name for p in (name_dir / "current").iterdir() if p.name.startswith("edits_")}


@pytest.mark.slow
async def test_a_formatted_journal_is_refused_by_both_namenodes(
    tmp_path: Path, jn_factory: JNFactory
) -> None:
    jns = [jn_factory.start(f"jn{i}") for i in range(3)]
    cfg = make_config(jns, tmp_path)
    await format_cluster(cfg, "nn1")
    copy_name_dir(cfg, "nn1", "nn2")
    conf = write_config(cfg, tmp_path / "cluster.toml")
    dirs = {n: Path(cfg.namenode_named(n).name_dir) for n in ("nn1", "nn2")}
    procs = {n: NNProcess(conf, n, tmp_path) for n in ("nn1", "nn2")}
    for p in procs.values():
        p.start()
    rpcs: dict[str, Rpc] = {}
    try:
        infos = {n: await p.wait_ready() for n, p in procs.items()}
        http = {n: i["http"] for n, i in infos.items()}
        rpcs = {n: Rpc(i["rpc"]) for n, i in infos.items()}
        await rpcs["nn1"].transition_to_active()
        wanted = {f"/keep/d{i}" for i in range(8)}
        for path in sorted(wanted):
            assert await rpcs["nn1"].mkdirs(path)
        last = (await status(http["nn1"]))["last_applied_txid"]
        await wait_status(http["nn2"], lambda s: s["last_applied_txid"] == last, "nn2 tails")

        # A stranger formats every JournalNode for the journal's own namespace, forced.
        ns = NNStorage(dirs["nn1"], lock=False).read_ns_info()
        done = await asyncio.to_thread(
            run_qjm,
            "journal",
            "format",
            "--config",
            str(conf),
            "--force",
            "--cluster-id",
            ns.cluster_id,
            "--namespace-id",
            str(ns.namespace_id),
        )
        assert done.returncode == 0, done.stderr
        before = {n: edits_files(d) for n, d in dirs.items()}

        # nn1's next write fails; neither NameNode becomes active on the journal: refused
        # before anything is written.
        with pytest.raises(RemoteError):
            await rpcs["nn1"].mkdirs("/after")
        for n in ("nn1", "nn2"):
            with pytest.raises(RemoteError, match="become active.*went backwards"):
                await rpcs[n].transition_to_active()
        # Neither exits; both report the journal behind.
        behind = {
            n: await wait_status(
                http[n], lambda s: s.get("journal_behind"), f"{n} to report the journal behind"
            )
            for n in ("nn1", "nn2")
        }
        for n, st in behind.items():
            text = st["journal_behind"]
            assert "went backwards" in text and "initialize-shared-edits" in text, text
            assert f"--id {n}" in text, text
            # Seen by the check (each node's end) or by the refused transition's recovery.
            assert "hold nothing after txid 0" in text or "it ends at txid 0" in text, text
            assert st["ha_state"] == "standby" and st["fatal_error"] is None, st
        assert f"committed txid {last}" in behind["nn2"]["journal_behind"]
        assert behind["nn2"]["tailer"]["paused"], behind["nn2"]
        assert behind["nn2"]["last_applied_txid"] == last  # nn2 keeps its namespace
        assert behind["nn1"]["last_applied_txid"] >= last  # nn1 did not reload an old image
        assert behind["nn1"]["dirs"] >= behind["nn2"]["dirs"] > len(wanted), behind["nn1"]
        assert "qjm_namenode_journal_behind 1.0" in await metrics(http["nn2"])

        # Reported once in the log, not at each check.
        checks = behind["nn2"]["journal_checks"]
        await wait_status(
            http["nn2"], lambda s: s["journal_checks"] >= checks + 3, "three more checks"
        )
        log = procs["nn2"].log.read_text()
        assert log.count('msg="NameNode nn2: the shared journal') == 1, log[-3000:]

        # Nothing was moved aside; the data is in the name dirs: nn1's local edits hold every
        # acknowledged mkdir, nn2 saved its namespace as an image at the txid it applied.
        for n, d in dirs.items():
            files = edits_files(d)
            assert before[n] <= files and not any(f.endswith(".stale") for f in files), files
        assert wanted <= local_mkdirs(dirs["nn1"])
        assert (await status(http["nn2"]))["last_checkpoint_txid"] == last
        for p in procs.values():
            assert p.proc is not None and p.proc.poll() is None, p.log.read_text()[-3000:]

        # Restarted, nn1 knows the floor from its name dir alone and refuses again.
        await rpcs["nn1"].close()
        assert procs["nn1"].stop() == 0
        procs["nn1"].start()
        rpcs["nn1"] = Rpc((await procs["nn1"].wait_ready())["rpc"])
        st = await wait_status(http["nn1"], lambda s: s.get("journal_behind"), "nn1 again")
        assert "seen_txid is" in st["journal_behind"], st["journal_behind"]
        with pytest.raises(RemoteError, match="become active.*went backwards"):
            await rpcs["nn1"].transition_to_active()
        assert before["nn1"] <= edits_files(dirs["nn1"])

        # What the message says to run: the journal re-initialized from nn1's name dir.
        await rpcs["nn1"].close()
        assert procs["nn1"].stop() == 0
        done = await asyncio.to_thread(
            run_qjm,
            "namenode",
            "initialize-shared-edits",
            "--config",
            str(conf),
            "--id",
            "nn1",
            "--force",
        )
        assert done.returncode == 0, done.stderr
        procs["nn1"].start()
        rpcs["nn1"] = Rpc((await procs["nn1"].wait_ready())["rpc"])
        await rpcs["nn1"].transition_to_active()
        for path in wanted:
            assert await rpcs["nn1"].stat(path) is not None, path
        assert await rpcs["nn1"].mkdirs("/later")
        # nn2 follows the journal again by itself, from where it stopped.
        await wait_status(http["nn2"], lambda s: s["journal_behind"] is None, "nn2 to follow")
        await wait_status(
            http["nn2"],
            lambda s: s["last_applied_txid"] >= last + 1 and not s["tailer"]["paused"],
            "nn2 to apply the new edits",
        )
    finally:
        for r in rpcs.values():
            await r.close()
        for p in procs.values():
            p.stop()


@pytest.mark.slow
async def test_initialize_shared_edits_from_an_image_alone_starts_the_journal_after_it(
    tmp_path: Path,
) -> None:
    async with JNCluster(tmp_path / "jns") as cluster:
        cfg = make_config(cluster, tmp_path, names=("nn1",))
        await format_cluster(cfg, "nn1")
        with NNStorage(cfg.namenode_named("nn1").name_dir) as st:
            st.save_image_contents(empty_image(st.read_ns_info().namespace_id, 12))
            st.write_seen_txid(12)
        report = await initialize_shared_edits(cfg, "nn1", force=True)
        assert report.segments == [(13, 14)] and report.last_txid == 14
        nn = await start_nn(cfg, "nn1")
        try:
            assert nn.journal_behind is None and nn.applied_txid == 14
            await nn.transition_to_active("test")
            assert nn.edit_log is not None and nn.edit_log.segment_start_txid == 15
        finally:
            await nn.stop()
