"""The qjm data sources in a real Spark (local[1], one session for the module)."""

from __future__ import annotations

import asyncio
import json
import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import FIXTURES, run_qjm
from qjm.editlog.file_names import finalized_name, inprogress_name
from qjm.editlog.ops import MkdirOp, PermissionStatus, encode_ops
from qjm.spark.schemas import EDITS, IMAGE

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]  # a JVM starting on a loaded machine

IMAGE_FILE = FIXTURES / "fsimage_0000000000000061740"
EDITS_FILE = FIXTURES / "editsStored"


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """One local[1] session for every test of the module."""
    from qjm.spark.session import build_session

    session = build_session("local[1]", "qjm-tests", conf={"spark.sql.shuffle.partitions": "2"})
    try:
        yield session
    finally:
        session.stop()


def oiv(*args: str) -> str:
    """The output of `qjm oiv` on the fixture image."""
    done = run_qjm("oiv", "-i", str(IMAGE_FILE), *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_image_source_gives_a_row_per_inode_with_oivs_totals(spark: Any) -> None:
    df = spark.read.format("qjm-image").option("numPartitions", 3).load(str(IMAGE_FILE))
    assert df.schema.simpleString() == spark.createDataFrame([], IMAGE.ddl()).schema.simpleString()
    assert df.rdd.getNumPartitions() == 3
    assert df.count() == 216  # the INodeSection's count
    totals = dict(
        line.split(" = ") for line in oiv("-p", "FileDistribution").splitlines() if " = " in line
    )
    files = df.where("type = 'FILE'")
    agg = files.selectExpr(
        "count(*) AS n", "sum(block_count) AS blocks", "sum(size * replication) AS space"
    ).first()
    assert (agg.n, agg.blocks, agg.space) == (
        int(totals["totalFiles"]),
        int(totals["totalBlocks"]),
        int(totals["totalSpace"]),
    )
    assert df.where("type = 'DIRECTORY'").count() == int(totals["totalDirectories"])
    delimited = oiv("-p", "Delimited").splitlines()[1:]
    assert df.selectExpr("sum(size)").first()[0] == sum(int(x.split("\t")[6]) for x in delimited)
    assert sorted(r.path for r in df.select("path").collect()) == sorted(
        x.split("\t")[0] for x in delimited
    )


def test_edits_source_counts_every_op_type_as_editsstored_xml(spark: Any) -> None:
    df = spark.read.format("qjm-edits").load(str(EDITS_FILE))
    assert df.columns == EDITS.names
    got = {r.opcode: r["count"] for r in df.groupBy("opcode").count().collect()}
    root = ET.parse(FIXTURES / "editsStored.xml").getroot()
    assert got == Counter(r.findtext("OPCODE") for r in root.iter("RECORD"))
    first = df.where("opcode = 'OP_ADD'").orderBy("txid").first()
    assert (first.path, first.owner, first.extra["inode_id"]) == ("/file_create", "lei", "16386")


def test_oiv_delimited_source_round_trips_qjm_oiv_output(spark: Any, tmp_path: Path) -> None:
    text = tmp_path / "image.tsv"
    text.write_text(oiv("-p", "Delimited"))
    d = spark.read.format("qjm-oiv-delimited").option("bytesPerPartition", 4096).load(str(text))
    assert d.rdd.getNumPartitions() > 1
    assert d.count() == 216
    img = spark.read.format("qjm-image").load(str(IMAGE_FILE))
    cols = ["path", "type", "size", "replication", "block_count", "owner", "group", "permission"]
    # Delimited shows symlinks as files and times to the minute; everything else agrees.
    a = img.selectExpr(
        *cols[:1],
        "IF(type = 'SYMLINK', 'FILE', type) AS type",
        *cols[2:],
        "mtime - mtime % 60000 AS mtime",
    )
    assert a.exceptAll(d.select(*cols, "mtime")).count() == 0
    assert d.select(*cols, "mtime").exceptAll(a).count() == 0


def mkdirs(start: int, end: int) -> bytes:
    """An edits file of MKDIR ops start..end."""
    perm = PermissionStatus("u", "g", 0o755)
    return encode_ops(
        [
            (t, MkdirOp(inode_id=16385 + t, path=f"/d{t}", timestamp=t, permission_status=perm))
            for t in range(start, end + 1)
        ]
    )


def stream_txids(
    spark: Any, location: str, out: Path, checkpoint: Path, where: str = "true"
) -> list[int]:
    """Run the qjm-edits stream of location once (availableNow) into Parquet at out, resuming
    from checkpoint; every txid written so far, sorted."""
    q = (
        spark.readStream.format("qjm-edits")
        .load(location)
        .where(where)
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    assert q.awaitTermination(120), "the availableNow query did not finish in 120 s"
    assert q.exception() is None
    return sorted(r.txid for r in spark.read.parquet(str(out)).select("txid").collect())


def test_edits_stream_picks_up_new_segments_and_restarts_from_its_checkpoint(
    spark: Any, tmp_path: Path
) -> None:
    current = tmp_path / "current"
    current.mkdir()
    (current / finalized_name(1, 5)).write_bytes(mkdirs(1, 5))
    (current / inprogress_name(6)).write_bytes(mkdirs(6, 8))
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def run() -> list[int]:
        return stream_txids(spark, str(current), out, checkpoint)

    assert run() == list(range(1, 9))
    # The open segment is finalized with more ops and a new one begins.
    (current / inprogress_name(6)).unlink()
    (current / finalized_name(6, 10)).write_bytes(mkdirs(6, 10))
    (current / inprogress_name(11)).write_bytes(mkdirs(11, 12))
    assert run() == list(range(1, 13))  # each txid once: the restart resumed at txid 9
    assert spark.read.parquet(str(out)).where("path = '/d12'").count() == 1


# --- qjm analyze -------------------------------------------------------------------------------


def analyze(*args: str) -> int:
    """Run `qjm analyze` in this process: it uses the module's session and leaves it running."""
    from qjm.cli.main import main

    return main(["analyze", *args, "--quiet"])


def test_analyze_namespace_writes_parquet_and_a_report_matching_oiv(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "ns"
    assert analyze("namespace", "--image", str(IMAGE_FILE), "--out", str(out)) == 0
    assert f"report: {out / 'report.html'}" in capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    totals = dict(
        line.split(" = ") for line in oiv("-p", "FileDistribution").splitlines() if " = " in line
    )
    assert summary["inodes"] == 216
    assert (summary["files"], summary["directories"]) == (
        int(totals["totalFiles"]),
        int(totals["totalDirectories"]),
    )
    assert (summary["space"], summary["blocks"]) == (
        int(totals["totalSpace"]),
        int(totals["totalBlocks"]),
    )
    delimited = oiv("-p", "Delimited").splitlines()[1:]
    assert summary["bytes"] == sum(int(x.split("\t")[6]) for x in delimited)
    assert spark.read.parquet(str(out / "inodes")).count() == 216
    by_depth = spark.read.parquet(str(out / "by_depth")).collect()
    assert sum(r.files for r in by_depth) == summary["files"]
    assert sum(r.bytes for r in by_depth) == summary["bytes"]
    by_dir = {r.directory: r for r in spark.read.parquet(str(out / "by_directory")).collect()}
    assert by_dir["/tmp"].files == sum(
        1 for x in delimited if x.startswith("/tmp/") and x.split("\t")[9][0] == "-"
    )
    by_size = spark.read.parquet(str(out / "by_size")).collect()
    assert sum(r.files for r in by_size) == summary["files"]
    assert sum(r.bytes for r in by_size) == summary["bytes"]
    assert {r.size_range for r in by_size} <= {"0 B", "< 1 KiB"}  # the fixture's files are tiny
    report = (out / "report.html").read_text()
    assert report.count("<img") >= 6 and "By owner" in report and "Files by size" in report


def test_the_analyze_command_in_its_own_process(tmp_path: Path) -> None:
    """Done-when 1 as an operator types it (and --ui): a fresh process, its own Spark."""
    out = tmp_path / "report"
    args = ("namespace", "--image", str(IMAGE_FILE), "--out", str(out), "--ui")
    done = run_qjm("analyze", *args, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    steps = [ln for ln in done.stderr.replace("\r", "\n").splitlines() if ln.startswith("[")]
    assert any("starting Spark (local[*])" in ln for ln in steps), done.stderr
    assert any("writing inodes" in ln for ln in steps), done.stderr
    # The UI (a page, /api/v1 JSON, Prometheus) on loopback while the job runs.
    assert any(re.search(r"Spark UI: http://(localhost|127\.0\.0\.1):\d+ ", ln) for ln in steps), (
        steps
    )
    assert "inodes: 216" in done.stdout and f"report: {out / 'report.html'}" in done.stdout
    assert json.loads((out / "summary.json").read_text())["inodes"] == 216
    assert {p.name for p in out.iterdir()} >= {"inodes", "by_depth", "by_owner", "report.html"}


def test_a_schema_other_than_the_sources_is_refused(spark: Any) -> None:
    df = spark.read.schema("path STRING").format("qjm-image").load(str(IMAGE_FILE))
    with pytest.raises(Exception, match="qjm-image has a fixed schema"):
        df.count()


def test_analyze_namespace_takes_an_oiv_delimited_dump(spark: Any, tmp_path: Path) -> None:
    text = tmp_path / "image.tsv"
    text.write_text(oiv("-p", "Delimited"))
    out = tmp_path / "ns-local[1]"  # glob characters in --out are taken literally
    assert analyze("namespace", "--delimited", str(text), "--out", str(out)) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["inodes"], summary["files"], summary["bytes"]) == (216, 100, 400)


def test_analyze_ops_counts_every_op_type_as_editsstored_xml(spark: Any, tmp_path: Path) -> None:
    out = tmp_path / "ops"
    assert analyze("ops", "--edits", str(EDITS_FILE), "--out", str(out)) == 0
    counts = {r.opcode: r["count"] for r in spark.read.parquet(str(out / "op_counts")).collect()}
    root = ET.parse(FIXTURES / "editsStored.xml").getroot()
    assert counts == Counter(r.findtext("OPCODE") for r in root.iter("RECORD"))
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["ops"], summary["missing_txids"]) == (121, 0)
    hottest = spark.read.parquet(str(out / "hottest_paths")).first()
    assert hottest.ops >= 2 and hottest.path.startswith("/")
    assert (out / "report.html").read_text().count("<img") == 2


def test_analyze_reports_a_corrupt_segment_in_one_line(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    current = tmp_path / "current"
    current.mkdir()
    seg = current / finalized_name(1, 5)
    seg.write_bytes(mkdirs(1, 5)[:-3])
    assert analyze("ops", "--edits", str(current), "--out", str(tmp_path / "out")) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("qjm: error: ") and seg.name in err[0], err


async def test_analyze_audit_finds_all_nodes_consistent_then_a_damaged_copy(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from qjm_cluster import JNCluster, journal_with_segments
    from test_spark_audit import rewrite_op

    async with JNCluster(tmp_path / "jn") as cluster:
        jid = await journal_with_segments(cluster, [(1, 5), (6, 3)])
        uri = cluster.uri(jid)
        out = tmp_path / "audit"
        assert await asyncio.to_thread(analyze, "audit", "--journal", uri, "--out", str(out)) == 0
        assert "consistent: True" in capsys.readouterr().out
        summary = json.loads((out / "summary.json").read_text())
        assert (summary["segments"], summary["statuses"]) == (2, {"ok": 6})
        assert "all nodes consistent" in (out / "report.html").read_text()

        rewrite_op(cluster.current_dir(1, jid) / finalized_name(6, 8), 7, b"tx 1 ")
        assert await asyncio.to_thread(analyze, "audit", "--journal", uri, "--out", str(out)) == 2
        bad = spark.read.parquet(str(out / "copies")).where("status != 'ok'").collect()
        assert [(r.node, r.segment_start, r.status, r.first_difference_txid) for r in bad] == [
            (cluster.address(1), 6, "differs", 7)
        ]


def test_against_a_qjm_cluster_audit_ops_and_the_stream(spark: Any, tmp_path: Path) -> None:
    from conftest import read_json
    from ports import free_port_block

    d = tmp_path / "cluster"
    # JournalNodes only: this test's writer is `qjm journal write`, not a NameNode.
    base = str(free_port_block(6))
    up = run_qjm(
        "cluster", "up", "--dir", str(d), "--namenodes", "0", "--base-port", base, "--json",
        "--insecure",
    )  # fmt: skip
    assert up.returncode == 0, up.stderr
    try:
        uri = str(read_json(up.stdout)["shared_edits"])
        config = str(d / "cluster.toml")
        done = run_qjm("journal", "format", "--config", config)
        assert done.returncode == 0, done.stderr

        def write(n: int) -> None:
            w = run_qjm("journal", "write", "--config", config, "--count", str(n), "--finalize")
            assert w.returncode == 0, w.stderr

        write(40)
        write(25)
        out = tmp_path / "audit"
        assert analyze("audit", "--journal", uri, "--out", str(out)) == 0
        summary = json.loads((out / "summary.json").read_text())
        assert summary["consistent"] is True and summary["statuses"] == {
            "ok": 3 * summary["segments"]
        }

        ops = tmp_path / "ops"
        assert analyze("ops", "--edits", uri, "--out", str(ops)) == 0
        counted = json.loads((ops / "summary.json").read_text())
        assert counted["missing_txids"] == 0 and counted["op_counts"].get("OP_OPAQUE") == 65

        stream_out, checkpoint = tmp_path / "stream", tmp_path / "checkpoint"

        def run() -> list[int]:
            return stream_txids(spark, uri, stream_out, checkpoint, "opcode = 'OP_OPAQUE'")

        first = run()
        assert len(first) == 65
        write(10)
        second = run()
        assert len(second) == 75 and second[:65] == first and len(set(second)) == 75
    finally:
        down = run_qjm("cluster", "down", "--dir", str(d))
        assert down.returncode == 0, down.stderr


def test_analyze_a_running_cluster_with_namenodes(spark: Any, tmp_path: Path) -> None:
    """ZooKeeper, 3 JNs, 2 NNs and ZKFCs; the NameNode writes, the standby checkpoints."""
    from urllib.request import urlopen

    from ha_cluster import auto_cluster, namenode_addresses, wait_single_active
    from qjm.cluster.launcher import daemons_of
    from qjm.config import NameNodeSettings
    from qjm.namenode.client import NameNodeClient
    from qjm.spark.plan import last_qjournal_txid
    from qjm.testing.wait import wait_until

    # Segments of 20 txns; one checkpoint once 40 txns are past the format's image (txid 0),
    # so the two images kept are 0 and that one and no edits are purged.
    settings = NameNodeSettings(roll_txns=20, checkpoint_txns=40, checkpoint_check_period_s=1)
    with auto_cluster(tmp_path / "c", namenode_settings=settings) as c:
        active = wait_single_active(c, 60)
        paths = [f"/spark/d{i}" for i in range(50)]

        async def write() -> None:
            addresses = list(namenode_addresses(c).values())
            async with NameNodeClient(addresses, timeout=10.0, max_rounds=8) as client:
                for p in paths:
                    assert await client.mkdirs(p)

        asyncio.run(write())
        http = daemons_of(c)[active]["http"]

        def status() -> dict[str, Any]:
            with urlopen(f"http://{http}/status", timeout=5) as r:
                return dict(json.load(r))

        last = status()["last_applied_txid"]
        uri = str(c["shared_edits"])
        # The JournalNodes learn the last commit from the writer's next call (at most 1 s).
        wait_until("the journal's committed txid", lambda: last_qjournal_txid(uri) >= last, 30)
        image_txid = wait_until(
            "the standby's checkpoint on the active",
            lambda: status()["image_txid"] if status()["image_txid"] >= 40 else None,
            60,
        )

        audit = tmp_path / "audit"
        assert analyze("audit", "--journal", uri, "--out", str(audit)) == 0
        verdict = json.loads((audit / "summary.json").read_text())
        assert verdict["consistent"] is True and verdict["segments"] >= 2
        assert verdict["statuses"] == {"ok": 3 * verdict["segments"]}

        ops = tmp_path / "ops"
        assert analyze("ops", "--edits", uri, "--out", str(ops)) == 0
        counted = json.loads((ops / "summary.json").read_text())
        assert counted["missing_txids"] == 0 and counted["last_txid"] >= last
        assert counted["op_counts"]["OP_MKDIR"] == 51  # /spark and its 50 directories
        mkdir_txids = [
            r.txid
            for r in spark.read.parquet(str(ops / "ops")).where("opcode = 'OP_MKDIR'").collect()
        ]

        ns = tmp_path / "ns"
        download = tmp_path / "download"
        args = ("--image", f"http://{http}", "--download-dir", str(download), "--out", str(ns))
        assert analyze("namespace", *args) == 0
        summary = json.loads((ns / "summary.json").read_text())
        # The checkpoint holds the root and every directory made up to its txid.
        made = sum(1 for t in mkdir_txids if t <= image_txid)
        assert summary["directories"] == summary["inodes"] == 1 + made
        assert summary["files"] == 0 and made >= 30
        # the report names its checkpoint, its age, and where the NameNode was meanwhile
        assert summary["image_txid"] == image_txid and 0 <= summary["image_age_s"] < 600
        assert summary["namenode_txid"] >= last >= image_txid
        report = (ns / "report.html").read_text()
        assert f"txid {image_txid:,}, written" in report
        behind = summary["namenode_txid"] - image_txid
        assert (f"{behind:,} transactions behind" if behind else "the image is current") in report
        got = spark.read.parquet(str(ns / "inodes")).where("path LIKE '/spark/%'").count()
        assert got == made - 1
        fetched = list(download.glob("fsimage_*"))
        assert [f.name for f in fetched if not f.name.endswith(".md5")] == [
            f"fsimage_{image_txid:019d}"
        ]


def test_an_empty_edits_directory_reads_as_no_rows(spark: Any, tmp_path: Path) -> None:
    """No segment planned: Spark still reads its one empty partition, which gives nothing."""
    empty = tmp_path / "edits"
    empty.mkdir()
    assert spark.read.format("qjm-edits").load(str(empty)).count() == 0
