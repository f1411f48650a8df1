"""The Spark sources' pure parts (no JVM): rows of ops, inodes and Delimited lines, and the
planning of segments, image ranges and text ranges, against the HDFS fixtures."""

from __future__ import annotations

import asyncio
import itertools
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from conftest import FIXTURES
from qjm.editlog.file_names import finalized_name, inprogress_name
from qjm.editlog.framing import RawOp
from qjm.editlog.ops import (
    MkdirOp,
    PermissionStatus,
    RenameOldOp,
    encode_body,
    encode_ops,
    read_ops,
)
from qjm.editlog.ops import opcodes as oc
from qjm.editlog.segments import SegmentFile, txid_run
from qjm.errors import EditLogError
from qjm.namenode.image import ImageError, read_image
from qjm.namenode.image.views import iter_delimited, iter_file_distribution
from qjm.spark import plan as P
from qjm.spark import rows as R
from qjm.spark.schemas import EDITS, IMAGE
from qjm_cluster import JNCluster, settle

IMAGE_FILE = FIXTURES / "fsimage_0000000000000061740"
EDITS_FILE = FIXTURES / "editsStored"
EDITS_XML = FIXTURES / "editsStored.xml"


def xml_opcode_counts() -> Counter[str]:
    """Op counts by opcode as HDFS's own XML dump of editsStored has them."""
    root = ET.parse(EDITS_XML).getroot()
    return Counter(r.findtext("OPCODE") or "" for r in root.iter("RECORD"))


def edit_rows(location: Path | str, **kw: object) -> list[dict[str, object]]:
    """Every EDITS row of a location, through the planner and the part reader."""
    return [r for p in P.plan_edits(str(location), **kw) for r in P.read_edits_part(p)]


# --- edits -----------------------------------------------------------------------------------


def test_edits_rows_count_every_op_type_as_the_hdfs_xml_does() -> None:
    rows = edit_rows(EDITS_FILE)
    assert Counter(r["opcode"] for r in rows) == xml_opcode_counts()
    assert [r["txid"] for r in rows] == list(range(1, len(rows) + 1))
    assert all(r["segment_start"] == 1 for r in rows)


def test_edits_columns_take_the_common_fields() -> None:
    by_op: dict[str, list[dict[str, object]]] = {}
    for r in edit_rows(EDITS_FILE):
        by_op.setdefault(str(r["opcode"]), []).append(r)
    add = by_op["OP_ADD"][0]
    assert (add["path"], add["owner"], add["group"], add["permission"], add["replication"]) == (
        "/file_create",
        "lei",
        "supergroup",
        "rw-r--r--",
        3,
    )
    assert add["timestamp"] == 1512607197452 and add["block_count"] == 0
    assert add["extra"]["inode_id"] == "16386"  # type: ignore[index]
    assert "path" not in add["extra"]  # type: ignore[operator]
    rename = by_op["OP_RENAME_OLD"][0]
    assert rename["path"] and rename["destination"] and rename["timestamp"]
    closes = [r for r in by_op["OP_CLOSE"] if r["block_count"]]
    assert closes and all(int(r["length"]) > 0 for r in closes)  # type: ignore[call-overload]
    add_block = by_op["OP_ADD_BLOCK"][0]
    assert add_block["block_count"] in (1, 2) and add_block["length"] is not None
    assert by_op["OP_TRUNCATE"][0]["length"] is not None
    owner = by_op["OP_SET_OWNER"][0]
    assert owner["path"] and (owner["owner"] or owner["group"])
    perms = by_op["OP_SET_PERMISSIONS"][0]
    assert perms["permission"] and len(str(perms["permission"])) == 9
    genstamp = by_op["OP_SET_GENSTAMP_V2"][0]
    assert genstamp["path"] is None and "genstamp_v2" in genstamp["extra"]  # type: ignore[operator]


def test_every_edits_row_fits_the_arrow_schema() -> None:
    rows = edit_rows(EDITS_FILE)
    batches = list(R.to_batches(rows, EDITS, batch_rows=50))
    assert [b.num_rows for b in batches] == [50, 50, len(rows) - 100]
    assert all(b.schema == EDITS.arrow() for b in batches)
    assert batches[0].column("opcode")[0].as_py() == "OP_START_LOG_SEGMENT"
    assert list(R.to_batches([], EDITS)) == []


def batch_rows_of(batches: list[Any]) -> list[dict[str, Any]]:
    """Rows of Arrow batches with `extra` as a dict again."""
    rows = [r for b in batches for r in b.to_pylist()]
    for r in rows:
        r["extra"] = dict(r["extra"])
    return rows


@pytest.mark.parametrize("batch_rows", [10, 8192])
def test_edits_batches_hold_the_same_rows_as_the_row_reader(batch_rows: int) -> None:
    (part,) = P.plan_edits(str(EDITS_FILE))
    batches = list(P.read_edits_batches(part, batch_rows))
    assert all(b.schema == EDITS.arrow() and b.num_rows <= batch_rows for b in batches)
    assert batch_rows_of(batches) == list(P.read_edits_part(part))


def test_edits_batches_keep_an_undecodable_op_when_strict_is_off(tmp_path: Path) -> None:
    f = tmp_path / "edits"
    good = encode_ops([mkdir(1), mkdir(2)])
    from qjm.editlog.framing import encode_op as frame

    f.write_bytes(good + frame(oc.OP_MKDIR, 3, b"\x00\x01"))
    (part,) = P.plan_edits(str(f), strict=False)
    rows = batch_rows_of(list(P.read_edits_batches(part)))
    assert rows == list(P.read_edits_part(part))
    assert [r["opcode"] for r in rows] == ["OP_MKDIR"] * 3 and "decode_error" in rows[2]["extra"]
    (strict,) = P.plan_edits(str(f))
    with pytest.raises(EditLogError, match="txid 3"):
        list(P.read_edits_batches(strict))


def test_an_undecodable_op_fails_unless_strict_is_off() -> None:
    raw = RawOp(oc.OP_MKDIR, 7, b"\x00\x01", 8)
    with pytest.raises(EditLogError, match="OP_MKDIR txid 7"):
        R.raw_edit_row(raw, 1)
    row = R.raw_edit_row(raw, 1, strict=False)
    assert row["opcode"] == "OP_MKDIR" and row["txid"] == 7
    assert row["extra"]["body_hex"] == "0001" and "corrupt" in row["extra"]["decode_error"]


def mkdir(txid: int) -> tuple[int, MkdirOp]:
    """A MKDIR op for a txid."""
    perm = PermissionStatus("u", "g", 0o755)
    return txid, MkdirOp(
        inode_id=16385 + txid, path=f"/d{txid}", timestamp=txid, permission_status=perm
    )


def write_segment_file(directory: Path, start: int, end: int, in_progress: bool = False) -> Path:
    """A segment file of MKDIR ops start..end."""
    name = inprogress_name(start) if in_progress else finalized_name(start, end)
    path = directory / name
    path.write_bytes(encode_ops([mkdir(t) for t in range(start, end + 1)]))
    return path


def test_chain_prefers_finalized_and_drops_covered_segments() -> None:
    segs = [
        SegmentFile(1, 10, Path("a")),
        SegmentFile(11, None, Path("stale-inprogress")),
        SegmentFile(11, 20, Path("b")),
        SegmentFile(5, 8, Path("inside")),
        SegmentFile(21, None, Path("c")),
    ]

    def chain(**kw: int) -> list[tuple[int, int | None, str]]:
        return [(s.start, s.end, str(s.path)) for s in txid_run(segs, **kw).segments]

    assert chain() == [(1, 10, "a"), (11, 20, "b"), (21, None, "c")]
    assert chain(from_txid=12) == [(11, 20, "b"), (21, None, "c")]
    assert chain(to_txid=10) == [(1, 10, "a")]


def test_a_directory_gives_one_part_per_segment_and_a_torn_tail_ends_the_open_one(
    tmp_path: Path,
) -> None:
    write_segment_file(tmp_path, 1, 3)
    write_segment_file(tmp_path, 4, 9)
    open_seg = write_segment_file(tmp_path, 10, 12, in_progress=True)
    with open(open_seg, "ab") as f:
        f.write(b"\x03\x00\x00")  # a torn frame after txid 12
    (tmp_path / "VERSION").write_text("x")
    parts = P.plan_edits(str(tmp_path))
    assert [(p.start, p.end) for p in parts] == [(1, 3), (4, 9), (10, None)]
    rows = edit_rows(tmp_path)
    assert [r["txid"] for r in rows] == list(range(1, 13))
    assert [r["segment_start"] for r in rows] == [1] * 3 + [4] * 6 + [10] * 3
    assert rows[4]["path"] == "/d5" and rows[4]["permission"] == "rwxr-xr-x"
    assert [r["txid"] for r in edit_rows(tmp_path, from_txid=5, to_txid=10)] == list(range(5, 11))
    assert len(P.plan_edits(str(tmp_path), in_progress=False)) == 2
    assert P.last_local_txid(str(tmp_path)) == 12


def test_a_journalnode_dir_gives_its_open_segment_up_to_its_committed_txid(
    tmp_path: Path,
) -> None:
    write_segment_file(tmp_path, 1, 3)
    write_segment_file(tmp_path, 4, 9, in_progress=True)
    (tmp_path / "committed-txid").write_bytes((6).to_bytes(8, "big"))
    assert [r["txid"] for r in edit_rows(tmp_path)] == list(range(1, 7))
    assert P.last_local_txid(str(tmp_path)) == 6
    assert [r["txid"] for r in edit_rows(tmp_path, to_txid=5)] == list(range(1, 6))
    (tmp_path / "committed-txid").write_bytes((3).to_bytes(8, "big"))
    assert [(p.start, p.end) for p in P.plan_edits(str(tmp_path))] == [(1, 3)]


def test_a_torn_finalized_segment_fails_naming_the_file(tmp_path: Path) -> None:
    seg = write_segment_file(tmp_path, 1, 3)
    seg.write_bytes(seg.read_bytes()[:-3])
    with pytest.raises(EditLogError, match=seg.name):
        edit_rows(tmp_path)


def test_a_missing_location_is_named() -> None:
    with pytest.raises(P.SourceError, match="no such edits file or directory"):
        P.plan_edits("/nonexistent/edits")


async def test_a_qjournal_uri_gives_the_journal_segments(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        await cluster.format(jid)
        q = cluster.qjm(jid)
        try:
            await q.recover_unfinalized_segments()
            for start, end in ((1, 4), (5, 7)):
                stream = await q.start_log_segment(start)
                for t in range(start, end + 1):
                    assert stream.write_op(oc.OP_MKDIR, encode_body(mkdir(t)[1])) == t
                await stream.flush()
                await stream.close()
                await q.finalize_log_segment(start, end)
            stream = await q.start_log_segment(8)
            stream.write_op(oc.OP_MKDIR, encode_body(mkdir(8)[1]))
            await stream.flush()
            stream.write_op(oc.OP_MKDIR, encode_body(mkdir(9)[1]))
            await stream.flush()  # txid 8 is now known committed; 9 when the next one goes
            uri = cluster.uri(jid)
            parts = await asyncio.to_thread(P.plan_edits, uri)
            assert [(p.start, p.end) for p in parts[:2]] == [(1, 4), (5, 7)]
            assert all(p.remote is not None and len(p.remote.urls) >= 2 for p in parts)
            rows = [r for p in parts for r in await asyncio.to_thread(list, P.read_edits_part(p))]
            txids = [r["txid"] for r in rows]
            assert txids[:8] == list(range(1, 9)) and txids == list(range(1, len(txids) + 1))
            assert {r["opcode"] for r in rows} == {"OP_MKDIR"}
            assert rows[6]["path"] == "/d7" and rows[6]["segment_start"] == 5
            finalized = await asyncio.to_thread(P.plan_edits, uri, in_progress=False)
            assert [(p.start, p.end) for p in finalized] == [(1, 4), (5, 7)]
            assert await asyncio.to_thread(P.last_qjournal_txid, uri) >= 8
        finally:
            await settle(q)


# --- fsimage ---------------------------------------------------------------------------------


@pytest.mark.parametrize("num_partitions", [1, 2, 5, 1000])
def test_image_ranges_read_every_inode_with_its_path(num_partitions: int) -> None:
    image = read_image(IMAGE_FILE)
    paths = image.paths()
    parts = P.plan_image(str(IMAGE_FILE), num_partitions)
    # Cuts fall on message starts near equal byte shares: as many ranges as asked for,
    # fewer only when there are about as many ranges as inodes.
    if num_partitions <= 5:
        assert len(parts) == num_partitions
    assert 1 <= len(parts) <= min(num_partitions, 216)
    assert all(a.end == b.start for a, b in itertools.pairwise(parts))
    rows = [r for p in parts for r in P.read_inode_range(p)]
    assert len(rows) == 216  # the INodeSection's count
    assert {r["id"]: r["path"] for r in rows} == {i: paths.get(i) for i in image.inodes}
    assert {r["id"]: r["parent_id"] for r in rows if r["id"] != 16385} == image.parents
    for r in rows:
        node = image.inodes[r["id"]]
        assert (r["type"], r["size"], r["owner"], r["mtime"]) == (
            node.type,
            node.size,
            node.user,
            node.mtime,
        )


@pytest.mark.parametrize("batch_rows", [7, 8192])
def test_image_batches_hold_the_same_rows_as_the_row_reader(batch_rows: int) -> None:
    for part in P.plan_image(str(IMAGE_FILE), 3):
        batches = list(P.read_inode_batches(part, batch_rows))
        assert all(b.schema == IMAGE.arrow() for b in batches)
        assert all(b.num_rows <= batch_rows for b in batches)
        got = [row for b in batches for row in b.to_pylist()]
        assert got == list(P.read_inode_range(part))


def compressed_copy(image: Path, target: Path) -> Path:
    """The image rewritten with every section zlib-compressed (HDFS's DefaultCodec)."""
    import struct
    import zlib

    from qjm.namenode.image import fsimage_pb2 as pb
    from qjm.namenode.image import read_summary
    from qjm.namenode.image.format import MAGIC, delimited

    data = image.read_bytes()
    summary = read_summary(data)
    out = bytearray(MAGIC)
    fs = pb.FileSummary(
        ondiskVersion=summary.ondisk_version,
        layoutVersion=summary.layout_version & 0xFFFFFFFF,
        codec="org.apache.hadoop.io.compress.DefaultCodec",
    )
    for sec in summary.sections:
        packed = zlib.compress(data[sec.offset : sec.offset + sec.length])
        fs.sections.add(name=sec.name, offset=len(out), length=len(packed))
        out += packed
    tail = delimited(fs)
    target.write_bytes(bytes(out + tail + struct.pack(">i", len(tail))))
    return target


def test_a_compressed_image_is_split_and_read_alike(tmp_path: Path) -> None:
    packed = compressed_copy(IMAGE_FILE, tmp_path / IMAGE_FILE.name)
    assert packed.stat().st_size < IMAGE_FILE.stat().st_size
    plain = [r for p in P.plan_image(str(IMAGE_FILE), 4) for r in P.read_inode_range(p)]
    parts = P.plan_image(str(packed), 4)
    assert len(parts) == 4 and all(p.codec for p in parts)
    assert [r for p in parts for r in P.read_inode_range(p)] == plain
    assert [r for p in parts for b in P.read_inode_batches(p) for r in b.to_pylist()] == plain


def test_image_totals_match_oiv() -> None:
    rows = [r for p in P.plan_image(str(IMAGE_FILE), 3) for r in P.read_inode_range(p)]
    dist = dict(
        line.rstrip("\n").split(" = ")
        for line in iter_file_distribution(read_image(IMAGE_FILE))
        if " = " in line
    )
    files = [r for r in rows if r["type"] == "FILE"]
    assert len(files) == int(dist["totalFiles"]) == 100
    assert sum(1 for r in rows if r["type"] == "DIRECTORY") == int(dist["totalDirectories"])
    assert sum(r["block_count"] for r in files) == int(dist["totalBlocks"])
    assert sum(r["size"] * r["replication"] for r in files) == int(dist["totalSpace"])
    delimited = list(iter_delimited(read_image(IMAGE_FILE)))[1:]
    assert sum(r["size"] for r in rows) == sum(int(x.split("\t")[6]) for x in delimited) == 400
    batches = list(R.to_batches(rows, IMAGE))
    assert sum(b.num_rows for b in batches) == 216 and batches[0].schema == IMAGE.arrow()


def test_an_image_whose_inode_count_disagrees_is_refused(tmp_path: Path) -> None:
    data = bytearray(IMAGE_FILE.read_bytes())
    from qjm.namenode.image import read_summary

    info = read_summary(bytes(data)).section("INODE")
    assert info is not None
    # The header message is lastInodeId (field 1) then numInodes (field 2 = 216 = d8 01).
    head = data[info.offset : info.offset + 16]
    i = head.index(b"\x10\xd8\x01")
    data[info.offset + i + 1] = 0xD7  # 215
    bad = tmp_path / IMAGE_FILE.name
    bad.write_bytes(bytes(data))
    with pytest.raises(ImageError, match="216 inodes but its header says 215"):
        P.plan_image(str(bad), check_md5=False)
    with pytest.raises(ImageError, match="MD5|md5|digest"):
        (tmp_path / (IMAGE_FILE.name + ".md5")).write_text(
            (FIXTURES / (IMAGE_FILE.name + ".md5")).read_text()
        )
        P.plan_image(str(bad))


def test_the_inode_scan_reads_ids_of_every_width_and_other_field_orders() -> None:
    from qjm.namenode.image import fsimage_pb2 as pb
    from qjm.namenode.image.format import delimited

    ids = [1, 127, 128, 16383, 16384, 16385, 2**21 - 1, 2**21, 2**35, 2**63 - 1]
    buf = b"".join(
        delimited(pb.INodeSection.INode(type=2 if i % 2 else 1, id=i, name=b"x")) for i in ids
    )
    # A message that does not start with type then id (another writer's field order).
    odd = (
        bytes([0x10, 5, 0x08, 2])
        + pb.INodeSection.INode(type=2, id=5, name=b"y").SerializeToString()[4:]
    )
    buf += bytes([len(odd)]) + odd
    offsets, got, dirs = P._scan_inodes(buf, 0)
    assert got == [*ids, 5] and offsets[0] == 0 and len(offsets) == len(ids) + 1
    assert [got[offsets.index(d)] for d in dirs] == [i for i in ids if i % 2] + [5]
    with pytest.raises(ImageError, match="truncated at byte"):
        P._scan_inodes(buf[:-1], 0)
    with pytest.raises(ImageError, match="corrupt: bad message at byte 0"):
        P._scan_inodes(b"\x03\x08\x02\x10", 0)  # an id cut off inside the message


# --- oiv -p Delimited ------------------------------------------------------------------------


def test_delimited_round_trip_of_our_oiv_output(tmp_path: Path) -> None:
    image = read_image(IMAGE_FILE)
    text = tmp_path / "image.tsv"
    text.write_text("".join(iter_delimited(image)))
    parts = P.plan_delimited(str(text), bytes_per_partition=700)
    assert len(parts) > 10
    rows = [r for p in parts for r in P.read_text_range(p)]
    assert len(rows) == 216
    by_path = {r["path"]: r for r in rows}
    assert len(by_path) == 216
    for path, node in image.iter_paths():
        r = by_path[path]
        assert (r["size"], r["owner"], r["group"], r["permission"][-9:]) == (
            node.size,
            node.user,
            node.group,
            R.permission_string(node.mode),
        )
        assert r["type"] == ("DIRECTORY" if node.type == "DIRECTORY" else "FILE")
        assert r["mtime"] == node.mtime // 60_000 * 60_000  # Delimited keeps minutes
        if node.type == "FILE":
            assert (r["replication"], r["block_count"]) == (node.replication, len(node.blocks))
        else:
            assert (r["ns_quota"], r["ds_quota"]) == (node.ns_quota, node.ds_quota)


def test_delimited_header_maps_columns_and_tolerates_extra_ones(tmp_path: Path) -> None:
    header = "\t".join([*R.DELIMITED_COLUMNS, "ErasureCodingPolicy"])
    line = "/a\tb\t3\t2020-01-02 03:04\t2020-01-02 03:05\t134217728\t1\t10\t0\t0\t-rw-r--r--\tu\tg\tRS-6-3"
    f = tmp_path / "x.tsv"
    f.write_text(
        f"{header}\n{line}\n/b\t1\t2020-01-02 03:04\t1970-01-01 00:00\t0\t0\t0\t-1\t-1\tdrwx------\tu\tg\t-\n"
    )
    rows = [r for p in P.plan_delimited(str(f), time_zone="UTC") for r in P.read_text_range(p)]
    assert rows[0]["path"] == "/a\tb"  # a path holding the delimiter keeps it
    assert (rows[0]["size"], rows[0]["replication"], rows[0]["name"]) == (10, 3, "a\tb")
    assert rows[0]["mtime"] == 1577934240000 and rows[0]["ns_quota"] is None
    assert (rows[1]["type"], rows[1]["permission"], rows[1]["ns_quota"]) == (
        "DIRECTORY",
        "rwx------",
        -1,
    )
    no_header = tmp_path / "y.tsv"
    no_header.write_text(line.replace("/a\tb", "/a").rsplit("\t", 1)[0] + "\n")
    rows = [r for p in P.plan_delimited(str(no_header)) for r in P.read_text_range(p)]
    local = int(time.mktime(time.strptime("2020-01-02 03:04", "%Y-%m-%d %H:%M"))) * 1000
    assert rows[0]["path"] == "/a" and rows[0]["mtime"] == local


def test_a_bad_delimited_line_is_named(tmp_path: Path) -> None:
    f = tmp_path / "x.tsv"
    f.write_text("/a\tthree\n")
    with pytest.raises(P.SourceError, match="byte 0"):
        [r for p in P.plan_delimited(str(f)) for r in P.read_text_range(p)]
    with pytest.raises(P.SourceError, match="time zone"):
        P.plan_delimited(str(f), time_zone="Nowhere/Else")


def test_editsstored_file_reads_like_read_ops() -> None:
    data = EDITS_FILE.read_bytes()
    ops = list(read_ops(data))
    rows = edit_rows(EDITS_FILE)
    assert [(t, op.opcode_name) for t, op in ops] == [(r["txid"], r["opcode"]) for r in rows]
    rename = next(op for _, op in ops if isinstance(op, RenameOldOp))
    row = next(r for r in rows if r["opcode"] == "OP_RENAME_OLD")
    assert (row["path"], row["destination"], row["timestamp"]) == (
        rename.src,
        rename.dst,
        rename.timestamp,
    )


@pytest.mark.slow
async def test_image_from_a_namenode_over_http_and_from_its_name_dir(
    tmp_path: Path, jn_factory: Any
) -> None:
    from nn_harness import format_cluster, make_config, start_nn

    jns = [jn_factory.start(f"jn{i}") for i in range(3)]
    cfg = make_config(jns, tmp_path, names=("nn1",))
    await format_cluster(cfg, "nn1")
    nn = await start_nn(cfg, "nn1")
    try:
        fetched = await asyncio.to_thread(P.resolve_image, nn.http_url(), str(tmp_path / "dl"))
    finally:
        await nn.stop()
    check_fetched_image(Path(fetched), Path(cfg.namenode_named("nn1").name_dir), tmp_path)
    with pytest.raises(P.SourceError, match="cannot fetch the image"):
        await asyncio.to_thread(P.fetch_image, "http://127.0.0.1:1/", str(tmp_path / "x"))


def check_fetched_image(fetched: Path, name_dir: Path, tmp_path: Path) -> None:
    """The fetched image is the name dir's newest one, and it reads."""
    local = Path(P.resolve_image(str(name_dir)))
    assert fetched.name == local.name == "fsimage_0000000000000000000"
    assert fetched.read_bytes() == local.read_bytes()
    rows = [r for p in P.plan_image(str(fetched)) for r in P.read_inode_range(p)]  # .md5 checked
    assert [(r["path"], r["type"]) for r in rows] == [("/", "DIRECTORY")]
    with pytest.raises(P.SourceError, match="no fsimage_"):
        P.resolve_image(str(tmp_path))


def test_stream_reader_offsets_follow_the_segments(tmp_path: Path) -> None:
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

    from qjm.spark.sources import EditsStreamReader

    write_segment_file(tmp_path, 1, 5)
    reader = EditsStreamReader({"path": str(tmp_path), "maxTxidsPerBatch": "3"})
    assert reader.initialOffset() == {"txid": 1}
    assert reader.getDefaultReadLimit() == ReadMaxRows(3)
    assert reader.latestOffset({"txid": 1}, ReadMaxRows(3)) == {"txid": 4}
    assert reader.latestOffset({"txid": 4}, ReadAllAvailable()) == {"txid": 6}
    assert reader.partitions({"txid": 6}, {"txid": 6}) == []
    rows = [
        r
        for p in reader.partitions({"txid": 2}, {"txid": 5})
        for b in reader.read(p)
        for r in b.to_pylist()
    ]
    assert [r["txid"] for r in rows] == [2, 3, 4]
    reader.prepareForTriggerAvailableNow()
    write_segment_file(tmp_path, 6, 8)
    assert reader.latestOffset({"txid": 6}, ReadAllAvailable()) == {"txid": 6}  # fixed end
    latest = EditsStreamReader({"path": str(tmp_path), "startingTxid": "latest"})
    assert latest.initialOffset() == {"txid": 9}
    assert latest.latestOffset({"txid": 9}, ReadAllAvailable()) == {"txid": 9}
    with pytest.raises(P.SourceError, match="startingTxid"):
        EditsStreamReader({"path": str(tmp_path), "startingTxid": "0"})


def test_spark_failures_become_the_qjm_error_they_carry() -> None:
    from qjm.cli.analyze import spark_error_message

    worker = (
        "An exception was thrown from the Python worker.\n"
        "Traceback (most recent call last):\n"
        '  File "plan.py", line 3, in read\n'
        "qjm.errors.CorruptOpError: /x/edits_1-5: op txid 5 at offset 90 is cut short\n"
        "\tat org.apache.spark.api.python.BasePythonRunner...\n"
    )
    assert spark_error_message(RuntimeError(worker)) == (
        "/x/edits_1-5: op txid 5 at offset 90 is cut short"
    )
    assert spark_error_message(RuntimeError("\n[PATH_NOT_FOUND] no such path\nmore")) == (
        "[PATH_NOT_FOUND] no such path"
    )


def test_analyze_says_when_spark_does_not_start(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pyspark.errors import PySparkRuntimeError

    import qjm.spark.session
    from qjm.cli.main import main

    def no_java(*args: object, **kw: object) -> None:
        raise PySparkRuntimeError(errorClass="JAVA_GATEWAY_EXITED", messageParameters={})

    monkeypatch.setattr(qjm.spark.session, "build_session", no_java)
    rc = main(
        ["analyze", "ops", "--edits", str(EDITS_FILE), "--out", "/nonexistent/out", "--quiet"]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1, err
    assert err[0].startswith(
        "qjm: error: Spark did not start (master 'local[*]'; is java installed?)"
    )


# --- the Parquet copy qjm analyze makes ------------------------------------------------------


def test_a_part_is_written_whole_or_not_at_all(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from qjm.spark.materialize import write_part

    parts = P.plan_image(str(IMAGE_FILE), 2)
    assert write_part(str(tmp_path), 1, parts[1], P.read_inode_batches, IMAGE.arrow()) > 0
    table = pq.read_table(tmp_path / "part-00001.parquet")
    assert table.schema == IMAGE.arrow()
    assert table.to_pylist() == list(P.read_inode_range(parts[1]))

    def failing(part: object) -> Iterator[pa.RecordBatch]:
        yield from P.read_inode_batches(parts[0], 7)
        raise ImageError("section INODE is truncated", "INODE")

    with pytest.raises(ImageError, match="truncated"):
        write_part(str(tmp_path), 0, parts[0], failing, IMAGE.arrow())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["part-00001.parquet"]


def test_a_segment_that_rolled_after_planning_is_read_under_its_new_name(tmp_path: Path) -> None:
    """A JournalNode finalizes its open segment between the plan and the read: the part
    reads edits_<start>-<end> instead; one that was also purged fails with why."""
    open_segment = write_segment_file(tmp_path, 1, 3, in_progress=True)
    (part,) = P.plan_edits(str(tmp_path))
    assert part.end is None and part.path == str(open_segment)
    open_segment.rename(tmp_path / finalized_name(1, 3))  # the roll
    rows = batch_rows_of(list(P.read_edits_batches(part)))
    assert [r["txid"] for r in rows] == [1, 2, 3]
    (tmp_path / finalized_name(1, 3)).unlink()  # the purge
    with pytest.raises(P.SourceError, match="it is gone"):
        list(P.read_edits_batches(part))


def test_a_setTimes_op_places_no_row_at_the_time_it_sets() -> None:
    """OP_TIMES carries times a caller chose (`-put -p`, distcp -pt): its timestamp column is
    empty and the times are in `extra`, the same from both readers."""
    from qjm.editlog.ops.namespace_ops import TimesOp

    op = TimesOp(path="/a", mtime=0, atime=1_600_000_000_000)
    row = R.edit_row(9, op, 1)
    assert row["timestamp"] is None
    assert row["extra"] == {"mtime": "0", "atime": "1600000000000"}
    cols = R.EditColumns()
    cols.add(9, op, 1)
    assert batch_rows_of([cols.batch()]) == [row]
    assert R.edit_row(3, mkdir(3)[1], 1)["timestamp"] == 3  # a logged time stays
