"""fsck's judgement of files and blocks, and its text, as HDFS's NamenodeFsck (table tests of
the pure module), and the `qjm fsck` / `qjm dfsadmin` formatting."""

from __future__ import annotations

import pytest

from qjm.cli.dfsadmin import byte_desc, datanode_text, summary_text
from qjm.cli.fsck import exit_code, fsck_query
from qjm.hdfs.proto import hdfs_pb2 as hdfs
from qjm.namenode import fsck
from qjm.namenode.fsck import BlockView, FsckOptions, FsckResult, ReplicaState, ReplicaView
from qjm.namenode.proto import ClientNamenodeProtocol_pb2 as cn

L, C = ReplicaState.LIVE, ReplicaState.CORRUPT
DN, DD = ReplicaState.DECOMMISSIONING, ReplicaState.DECOMMISSIONED


def block(i: int, *states: ReplicaState, size: int = 100, queued: bool = False) -> BlockView:
    """A block of size bytes with one replica per state, on DataNodes 1, 2, ..."""
    replicas = tuple(
        ReplicaView(f"127.0.0.1:{9866 + n}", f"DS-{n}", s) for n, s in enumerate(states)
    )
    return BlockView(f"BP-1:blk_{i}_100{i}", size, replicas, queued)


def judge(
    blocks: list[BlockView], replication: int = 3, opts: FsckOptions | None = None, **kw: bool
) -> tuple[str, FsckResult]:
    """check_file of /f with these blocks: its text and the counts."""
    opts = opts or FsckOptions()
    res = FsckResult(default_replication=3, min_replication=1)
    text = fsck.check_file(
        "/f", sum(b.num_bytes for b in blocks), replication, blocks, kw.get("uc", False), opts, res
    )
    return text, res


@pytest.mark.parametrize(
    ("states", "replication", "healthy", "counts"),
    [
        # live, corrupt (all), missing, under, over, min-replicated
        ((L, L, L), 3, True, (3, False, 0, 0, 0, 1)),
        ((L, L), 3, True, (2, False, 0, 1, 0, 1)),
        ((L, L, L, L), 3, True, (4, False, 0, 0, 1, 1)),
        ((), 3, False, (0, False, 1, 0, 0, 0)),
        ((C, C), 3, False, (0, True, 0, 0, 0, 0)),  # corrupt, not missing: its replicas exist
        ((L, C), 2, True, (1, False, 0, 1, 0, 1)),
        ((DN, L), 3, True, (1, False, 0, 1, 0, 1)),
        ((DD,), 1, True, (0, False, 0, 0, 0, 1)),
    ],
)
def test_a_blocks_replicas_are_judged_as_hdfs_judges_them(
    states: tuple[ReplicaState, ...],
    replication: int,
    healthy: bool,
    counts: tuple[int, bool, int, int, int, int],
) -> None:
    b = block(1, *states)
    _, res = judge([b], replication)
    live, corrupt, missing, under, over, minimal = counts
    assert (b.live, b.corrupt) == (live, corrupt)
    assert len(res.missing_ids) == missing
    assert (res.under_replicated, res.over_replicated, res.min_replicated) == (under, over, minimal)
    assert res.healthy() is healthy
    assert res.corrupt_files == (0 if healthy else 1)


def test_the_files_lines_name_each_problem() -> None:
    opts = FsckOptions(files=True, blocks=True, locations=True)
    text, _ = judge([block(1, L, L, L), block(2, L, L)], 3, opts)
    assert text.startswith("/f 200 bytes, replicated: replication=3, 2 block(s): ")
    assert " Under replicated BP-1:blk_2_1002. Target Replicas is 3 but found 2 live" in text
    assert " OK\n" not in text  # a file with an under-replicated block is not OK
    assert "0. BP-1:blk_1_1001 len=100 Live_repl=3  [DatanodeInfoWithStorage[127.0.0.1:9866" in (
        text
    )
    text, _ = judge([block(1, L, L, L)], 3, opts)
    assert text.startswith("/f 100 bytes, replicated: replication=3, 1 block(s):  OK\n")
    text, _ = judge([block(1)], 3, opts)
    assert "0. BP-1:blk_1_1001 len=100 MISSING!" in text
    assert " MISSING 1 blocks of total size 100 B\n" in text
    text, _ = judge([block(1, C)], 1, FsckOptions())
    assert text == (
        "\n/f: CORRUPT blockpool BP-1 block blk_1_1001\n\n/f: CORRUPT 1 blocks of total size 100 B."
    )
    text, _ = judge([block(1, L, C)], 2, FsckOptions(files=True, blocks=True, replica_details=True))
    assert "[DatanodeInfoWithStorage[127.0.0.1:9866,DS-0,DISK](LIVE), " in text
    assert "DatanodeInfoWithStorage[127.0.0.1:9867,DS-1,DISK](CORRUPT)]" in text


def test_open_files_are_counted_apart_unless_asked_for() -> None:
    text, res = judge([block(1)], 3, uc=True)
    assert text == "" and res.open_files == 1 and res.total_files == 0 and res.healthy()
    assert "(Files currently being written: 1)" in res.summary(3)
    text, res = judge([block(1, L)], 3, FsckOptions(open_for_write=True), uc=True)
    assert text.startswith("/f 100 bytes, replicated: replication=3, 1 block(s), OPENFORWRITE: ")
    assert res.total_files == 1


def test_the_summary_has_hdfs_lines_and_javas_floats() -> None:
    res = FsckResult(default_replication=3, min_replication=1)
    fsck.check_dir("/", FsckOptions(), res)
    for i, states in enumerate([(L, L, L), (L,), ()]):
        fsck.check_file(
            f"/f{i}", 100, 3, [block(i, *states, queued=i > 0)], False, FsckOptions(), res
        )
    s = res.summary(datanodes=3)
    assert s.startswith("Status: CORRUPT\n Number of data-nodes:\t3\n Number of racks:\t\t1\n")
    assert " Total dirs:\t\t\t1\n Total symlinks:\t\t0\n\nReplicated Blocks:\n" in s
    assert " Total blocks (validated):\t3 (avg. block size 100 B)\n" in s
    assert "  CORRUPT FILES:\t1\n  MISSING BLOCKS:\t1\n  MISSING SIZE:\t\t100 B\n" in s
    assert " Minimally replicated blocks:\t2 (66.666664 %)\n" in s
    assert " Under-replicated blocks:\t1 (33.333332 %)\n" in s
    assert " Average block replication:\t1.3333334\n" in s
    assert " Missing replicas:\t\t2 (22.222221 %)\n" in s
    assert " Blocks queued for replication:\t2\n" in s
    assert s.endswith(" Missing internal blocks:\t0\n Blocks queued for replication:\t0\n")
    assert " %)" not in FsckResult(3, 1).summary(0)  # no percentages of no blocks


@pytest.mark.parametrize(
    ("x", "java"),
    [(0, "0.0"), (100, "100.0"), (50 / 3, "16.666666"), (1 / 3, "0.33333334"), (2.5, "2.5")],
)
def test_floats_print_as_java_prints_a_float(x: float, java: str) -> None:
    assert fsck.java_float(x) == java


def test_the_verdict_lines_and_the_exit_codes_are_dfscks() -> None:
    res = FsckResult(3, 1)
    assert fsck.ended_lines("/a", res, 0, 5).endswith(
        "\n\n\nThe filesystem under path '/a' is HEALTHY"
    )
    assert exit_code(fsck.ended_lines("/a", res, 0, 5).splitlines()[-1]) == 0
    res.corrupt_blocks = 1
    assert exit_code(fsck.ended_lines("/a", res, 0, 5).splitlines()[-1]) == 1
    assert exit_code(fsck.nonexistent_line("/x").splitlines()[-1]) == 0
    assert exit_code(fsck.failed_lines("/a", "standby", 0, 1).splitlines()[-1]) == 255
    listing = fsck.corrupt_files_text("/", [("blk_1_1001", "/f")], 1, 0)
    assert listing == (
        "Cookie:\t1\nblk_1_1001\t/f\n\n\nThe filesystem under path '/' has 1 CORRUPT files\n\n"
    )
    assert exit_code(listing.rstrip().splitlines()[-1]) == 1
    none = fsck.corrupt_files_text("/", [], 0, 0).rstrip().splitlines()[-1]
    assert none.endswith("has no CORRUPT files") and exit_code(none) == 0
    assert "has no more CORRUPT files" in fsck.corrupt_files_text("/", [], 5, 5)


def test_the_query_is_dfscks() -> None:
    flags = {"files": True, "blocks": True, "locations": False, "racks": False}
    flags |= {"replicaDetails": False, "openforwrite": True, "list_corruptfileblocks": False}
    assert fsck_query("/a b", "root", flags) == (
        "ugi=root&files=1&blocks=1&openforwrite=1&path=%2Fa+b"
    )


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1 KB"),
        (36 * 1024, "36 KB"),
        (1536, "1.50 KB"),
        (1048575, "1.00 MB"),  # 1024.00 KB rounds up to the next unit, as Hadoop's
        (1215238594560, "1.11 TB"),
        (16767860736, "15.62 GB"),
    ],
)
def test_bytes_are_described_as_hadoops_string_utils(n: int, text: str) -> None:
    assert byte_desc(n) == text


def test_the_dfsadmin_report_is_hdfs_text() -> None:
    stats = cn.GetFsStatsResponseProto(
        capacity=1000, used=250, remaining=500, under_replicated=2, corrupt_blocks=1,
        missing_blocks=1, missing_repl_one_blocks=1, blocks_in_future=0,
        pending_deletion_blocks=3,
    )  # fmt: skip
    s = summary_text(stats, safe_mode=True)
    assert s.startswith("Safe mode is ON\nConfigured Capacity: 1000 (1000 B)\n")
    assert "Present Capacity: 750 (750 B)\nDFS Remaining: 500 (500 B)\n" in s
    assert "DFS Used: 250 (250 B)\nDFS Used%: 33.33%\nReplicated Blocks:\n" in s
    assert "\tUnder replicated blocks: 2\n\tBlocks with corrupt replicas: 1\n" in s
    assert "\tMissing blocks (with replication factor 1): 1\n\tPending deletion blocks: 3\n" in s
    assert s.endswith("\n-------------------------------------------------\n")
    d = hdfs.DatanodeInfoProto(
        id=hdfs.DatanodeIDProto(ipAddr="127.0.0.1", hostName="h", datanodeUuid="u",
                                xferPort=9866, infoPort=9864, ipcPort=9867),
        capacity=4096, dfsUsed=1024, remaining=2048, nonDfsUsed=1024, lastUpdate=0,
        xceiverCount=2, adminState=hdfs.DatanodeInfoProto.DECOMMISSION_INPROGRESS,
        numBlocks=7,
    )  # fmt: skip
    text = datanode_text(d)
    assert text.startswith("Name: 127.0.0.1:9866 (h)\nHostname: h\n")
    assert "Decommission Status : Decommission in progress\n" in text
    assert "DFS Used: 1024 (1 KB)\nNon DFS Used: 1024 (1 KB)\nDFS Remaining: 2048 (2 KB)\n" in text
    assert "DFS Used%: 25.00%\nDFS Remaining%: 50.00%\n" in text
    assert "Xceivers: 2\n" in text and "Last Block Report: Never\n" in text
    assert text.endswith("Num of Blocks: 7\n")
