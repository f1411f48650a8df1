"""The DataNode's storage: HDFS's layout rules, VERSION files, replicas written, finalized,
read back after a restart, torn and bad files found at start-up, full and failed volumes."""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from qjm.datanode import dataset as dataset_mod
from qjm.datanode.dataset import FsDataset
from qjm.datanode.errors import (
    DiskOutOfSpaceError,
    ReplicaAlreadyExistsError,
    ReplicaNotFoundError,
    StorageError,
)
from qjm.datanode.layout import (
    BlockPoolInfo,
    StorageInfo,
    block_file_name,
    choose_round_robin,
    chunk_aligned,
    id_to_block_dir,
    meta_file_name,
    meta_header,
    parse_block_file_name,
    parse_meta_file_name,
    parse_properties,
)
from qjm.datanode.replica import ReplicaState
from qjm.datanode.storage import DataStorage
from qjm.fileutil import LockHeld
from qjm.hdfs.checksum import ChecksumError, DataChecksum, chunk_sums

CID = "CID-0f6a5cbd-1111-2222-3333-444455556666"
BPID = "BP-1234567-127.0.0.1-1700000000000"
POOL = BlockPoolInfo(namespace_id=4242, block_pool_id=BPID)
BLK = 1 << 30 | 1  # the first sequential block id HDFS allocates
GS = 1001
CS = DataChecksum()


def payload(n: int, seed: int = 0) -> bytes:
    """n deterministic bytes that differ from chunk to chunk."""
    return bytes(((i * 31 + seed) ^ (i >> 9)) & 0xFF for i in range(n))


# -- layout rules ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("block_id", "dirs"),
    [
        (BLK, ("subdir0", "subdir0")),
        (0x40123456, ("subdir18", "subdir20")),
        (0x401F1F00, ("subdir31", "subdir31")),
        (0x40200000, ("subdir0", "subdir0")),  # bit 21 is beyond the 5 bits kept
        (-5, ("subdir31", "subdir31")),  # a legacy random id: Java's arithmetic shift
        (-4611686018427387904, ("subdir0", "subdir0")),
    ],
)
def test_id_based_subdirs(block_id: int, dirs: tuple[str, str]) -> None:
    assert id_to_block_dir(block_id) == dirs


@pytest.mark.parametrize(
    ("name", "block", "meta"),
    [
        ("blk_1073741825", 1073741825, None),
        ("blk_-42", -42, None),
        ("blk_1073741825_1001.meta", None, (1073741825, 1001)),
        ("blk_-42_7.meta", None, (-42, 7)),
        ("blk_1_2.meta.tmp", None, None),
        ("blk_x", None, None),
        ("blk_1_2", None, None),
        ("blk_1073741825.meta", None, None),
        ("VERSION", None, None),
    ],
)
def test_file_names(name: str, block: int | None, meta: tuple[int, int] | None) -> None:
    assert parse_block_file_name(name) == block
    assert parse_meta_file_name(name) == meta


def test_names_round_trip() -> None:
    assert block_file_name(BLK) == "blk_1073741825"
    assert meta_file_name(BLK, GS) == "blk_1073741825_1001.meta"
    assert meta_header(CS) == b"\x00\x01\x02\x00\x00\x02\x00"


@pytest.mark.parametrize(
    ("offset", "length", "visible", "want"),
    [
        (0, 10, 1300, (0, 512)),
        (511, 2, 1300, (0, 1024)),
        (512, 512, 1300, (512, 1024)),
        (1000, 10_000, 1300, (512, 1300)),
        (1300, 0, 1300, (1024, 1300)),
        (0, 0, 0, (0, 0)),
    ],
)
def test_chunk_aligned_ranges(
    offset: int, length: int, visible: int, want: tuple[int, int]
) -> None:
    assert chunk_aligned(offset, length, visible, 512) == want


def test_chunk_aligned_refuses_reads_past_the_end() -> None:
    with pytest.raises(StorageError, match="outside the replica's 100 visible"):
        chunk_aligned(101, 1, 100, 512)


@pytest.mark.parametrize(
    ("avail", "start", "size", "want"),
    [
        ([10, 10, 10], 0, 5, (0, 1)),
        ([10, 10, 10], 2, 5, (2, 0)),
        ([1, 10, 1], 2, 5, (1, 2)),
        ([5, 6], 0, 5, (1, 0)),  # more than the size, as HDFS's policy asks
    ],
)
def test_round_robin(avail: list[int], start: int, size: int, want: tuple[int, int]) -> None:
    assert choose_round_robin(avail, start, size) == want


def test_round_robin_out_of_space_names_the_sizes() -> None:
    with pytest.raises(DiskOutOfSpaceError, match=r"\(=7 B\) is less than the block size \(=9 B\)"):
        choose_round_robin([3, 7], 0, 9)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("storageType=DATA_NODE\nlayoutVersion=-57\ncTime=0\n", "lacks the key clusterID"),
        (f"clusterID={CID}\nstorageType=NAME_NODE\nlayoutVersion=-57\ncTime=0\n", "NAME_NODE"),
        (f"clusterID={CID}\nstorageType=DATA_NODE\nlayoutVersion=-56\ncTime=0\n", "-56"),
        (f"clusterID={CID}\nstorageType=DATA_NODE\nlayoutVersion=-57\ncTime=x\n", "cTime='x'"),
        (f"clusterID={CID}\nstorageType=DATA_NODE\ncTime=0\n", "lacks the key layoutVersion"),
    ],
)
def test_version_refusals(text: str, error: str) -> None:
    with pytest.raises(StorageError, match=error):
        StorageInfo.parse(text, "dir/current/VERSION")


def test_version_text_is_hdfs_s() -> None:
    info = StorageInfo("DS-1", CID, "uuid-1")
    text = info.to_text()
    assert text.startswith("#")
    assert parse_properties(text) == {
        "storageID": "DS-1",
        "clusterID": CID,
        "cTime": "0",
        "datanodeUuid": "uuid-1",
        "storageType": "DATA_NODE",
        "layoutVersion": "-57",
    }
    assert StorageInfo.parse(text, "v") == info
    assert BlockPoolInfo.parse(POOL.to_text(), "v") == POOL


# -- the storage on disk -----------------------------------------------------------------
def stat(free: int, total: int = 1 << 40) -> SimpleNamespace:
    return SimpleNamespace(f_frsize=1, f_blocks=total, f_bavail=free)


class Node:
    """A DataNode's storage on some directories, reopened as a restart would."""

    def __init__(self, dirs: list[Path], statvfs: Callable[[str], object] | None = None) -> None:
        self.dirs = dirs
        self.statvfs = statvfs or os.statvfs
        self.ds: FsDataset | None = None

    def start(self, cluster_id: str = CID, dn_uuid: str | None = None) -> FsDataset:
        storage = DataStorage(self.dirs)
        storage.load(cluster_id, dn_uuid)
        self.ds = FsDataset(storage, statvfs=self.statvfs)  # type: ignore[arg-type]
        self.ds.add_block_pool(POOL)
        return self.ds

    def restart(self) -> FsDataset:
        assert self.ds is not None
        self.ds.close()
        return self.start()


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    n = Node([tmp_path / "d1", tmp_path / "d2"])
    n.start()
    yield n
    if n.ds is not None:
        n.ds.close()


def write(ds: FsDataset, block_id: int, data: bytes, packets: list[int], gs: int = GS) -> None:
    """Write data in packets of the given sizes and finalize."""
    w = ds.create_rbw(BPID, block_id, gs)
    off = 0
    for size in packets:
        chunk = data[off : off + size]
        w.write_packet(off, chunk, chunk_sums(chunk, 512, off), verify=True)
        off += size
    assert off == len(data)
    w.set_bytes_acked(off)
    w.finalize()


def read_all(ds: FsDataset, block_id: int) -> bytes:
    with ds.open_reader(BPID, block_id) as rd:
        return rd.read(0, rd.visible_length)


def test_first_start_formats_and_a_restart_keeps_the_ids(node: Node) -> None:
    ds = node.ds
    assert ds is not None
    infos = [sd.info for sd in ds.storage.storage_dirs]
    dn_uuid = ds.storage.datanode_uuid
    assert len({i.storage_id for i in infos}) == 2
    for d, info in zip(node.dirs, infos, strict=True):
        props = parse_properties((d / "current" / "VERSION").read_text())
        assert props["storageID"] == info.storage_id and info.storage_id.startswith("DS-")
        assert props["clusterID"] == CID and props["datanodeUuid"] == dn_uuid
        assert props["storageType"] == "DATA_NODE" and props["layoutVersion"] == "-57"
        bp = parse_properties((d / "current" / BPID / "current" / "VERSION").read_text())
        assert bp == {
            "namespaceID": "4242",
            "cTime": "0",
            "blockpoolID": BPID,
            "layoutVersion": "-57",
        }
        assert (d / "in_use.lock").exists()
        for sub in ("current/finalized", "current/rbw"):
            assert (d / "current" / BPID / sub).is_dir()
    with pytest.raises(LockHeld, match="in use by another process"):
        DataStorage(node.dirs).load(CID)
    ds2 = node.restart()
    assert [sd.info for sd in ds2.storage.storage_dirs] == infos
    assert ds2.storage.datanode_uuid == dn_uuid


def test_a_dir_of_another_cluster_or_datanode_is_refused(node: Node, tmp_path: Path) -> None:
    assert node.ds is not None
    dn_uuid = node.ds.storage.datanode_uuid
    node.ds.close()
    with pytest.raises(StorageError) as e:
        DataStorage(node.dirs).load("CID-other")
    assert str(node.dirs[0]) in str(e.value)
    assert CID in str(e.value) and "CID-other" in str(e.value)
    with pytest.raises(StorageError) as e:
        DataStorage(node.dirs).load(CID, "another-uuid")
    assert dn_uuid in str(e.value) and "another-uuid" in str(e.value)
    # A directory of another DataNode mixed with ours.
    other = Node([tmp_path / "other"])
    other.start()
    assert other.ds is not None
    other.ds.close()
    with pytest.raises(
        StorageError, match=f"belongs to DataNode .* not to this DataNode {dn_uuid}"
    ):
        DataStorage([*node.dirs, tmp_path / "other"]).load(CID)
    # The refusals left no lock behind.
    node.start()


def test_a_block_pool_of_another_namespace_is_refused(node: Node) -> None:
    assert node.ds is not None
    node.ds.close()
    storage = DataStorage(node.dirs)
    storage.load(CID)
    ds = FsDataset(storage)
    try:
        with pytest.raises(StorageError, match="namespace 4242, not to the NameNode's namespace 7"):
            ds.add_block_pool(BlockPoolInfo(7, BPID))
    finally:
        ds.close()
    node.start()


def test_round_trip_through_a_restart_at_odd_offsets(node: Node) -> None:
    ds = node.ds
    assert ds is not None
    data = payload(5000)
    w = ds.create_rbw(BPID, BLK, GS)
    # 700 bytes (a partial chunk), then a packet that resends that partial chunk from its
    # start (as a client does after hflush), then one starting mid-chunk (as an append's
    # first packet does: its sum covers its own bytes only), then the rest.
    w.write_packet(0, data[:700], chunk_sums(data[:700], 512), sync=True)
    w.write_packet(512, data[512:1100], chunk_sums(data[512:1100], 512))
    w.write_packet(1100, data[1100:1536], chunk_sums(data[1100:1536], 512))
    w.write_packet(1536, data[1536:2000], chunk_sums(data[1536:2000], 512))
    # A resend from an earlier chunk (a recovered pipeline's): what is on disk is skipped.
    w.write_packet(1024, data[1024:], chunk_sums(data[1024:], 512))
    # A duplicate of a packet already on disk changes nothing.
    w.write_packet(1536, data[1536:2048], chunk_sums(data[1536:2048], 512))
    w.set_bytes_acked(5000)
    fin = w.finalize()
    assert fin.state == ReplicaState.FINALIZED and fin.num_bytes == 5000
    a, b = id_to_block_dir(BLK)
    assert fin.data_path.parent == fin.data_path.parents[3] / "finalized" / a / b
    assert fin.meta_path.name == f"blk_{BLK}_{GS}.meta"
    assert fin.meta_path.read_bytes() == meta_header(CS) + chunk_sums(data, 512)
    assert not any((fin.data_path.parents[3] / "rbw").iterdir())

    ds = node.restart()
    r = ds.get_replica(BPID, BLK)
    assert r is not None and r.state == ReplicaState.FINALIZED and r.genstamp == GS
    with ds.open_reader(BPID, BLK, GS) as rd:
        assert rd.read(0, 5000) == data
        for offset, length in [(0, 1), (1, 5000), (511, 2), (1023, 1000), (4999, 1), (4608, 392)]:
            start, data_part, sums = rd.read_chunks(offset, length)
            assert start <= offset < start + len(data_part) or length == 0
            assert data_part == data[start : start + len(data_part)]
            assert sums == chunk_sums(data_part, 512)
            assert start + len(data_part) >= min(offset + length, 5000)


def test_a_reader_of_a_replica_being_written_sees_acked_bytes(node: Node) -> None:
    ds = node.ds
    assert ds is not None
    data = payload(1500, seed=3)
    w = ds.create_rbw(BPID, BLK, GS)
    w.write_packet(0, data[:1000], chunk_sums(data[:1000], 512))
    w.set_bytes_acked(700)
    assert ds.visible_length(BPID, BLK) == 700
    with ds.open_reader(BPID, BLK) as rd:
        start, got, sums = rd.read_chunks(600, 1000)
        assert (start, got) == (512, data[512:700])
        assert sums == chunk_sums(data[512:700], 512)
        # A writer going on meanwhile does not change what this reader was given.
        w.write_packet(1000, data[1000:], chunk_sums(data[1000:], 512, 1000))
        w.set_bytes_acked(1500)
        assert rd.read_chunks(0, 700)[2] == chunk_sums(data[:700], 512)
    with ds.open_reader(BPID, BLK) as rd:
        assert rd.read_chunks(0, 1500)[1:] == (data, chunk_sums(data, 512))
    with pytest.raises(ReplicaNotFoundError, match="older than the genstamp 2000"):
        ds.open_reader(BPID, BLK, 2000)
    with pytest.raises(ReplicaAlreadyExistsError, match="already exists as blk_1073741825_1001"):
        ds.create_rbw(BPID, BLK, GS)
    w.close()


def test_a_packet_with_bad_sums_is_refused_with_its_offset(node: Node) -> None:
    ds = node.ds
    assert ds is not None
    data = payload(1024)
    w = ds.create_rbw(BPID, BLK, GS)
    sums = bytearray(chunk_sums(data, 512))
    sums[5] ^= 1
    with pytest.raises(ChecksumError, match="byte offset 512"):
        w.write_packet(0, data, bytes(sums), verify=True)
    assert w.bytes_on_disk == 0
    w.close()


def test_a_torn_rbw_is_cut_to_its_last_verified_chunk(node: Node) -> None:
    ds = node.ds
    assert ds is not None
    data = payload(1800, seed=5)
    for block_id in (BLK, BLK + 1, BLK + 2, BLK + 3):
        w = ds.create_rbw(BPID, block_id, GS)
        w.write_packet(0, data, chunk_sums(data, 512), sync=True)
        w.close()
    rbw = ds.get_replica(BPID, BLK)
    assert rbw is not None
    # A crash after data reached the disk but before its sums did: the block file is
    # longer than the meta file covers. The last sum's chunk now holds bytes it does not
    # cover, so the cut goes back to that chunk's start, as HDFS's does.
    with open(rbw.data_path, "ab") as f:
        f.write(b"x" * 900)
    # A crash mid-rewrite of the last partial chunk: new data, the old sum.
    r1 = ds.get_replica(BPID, BLK + 1)
    assert r1 is not None
    with open(r1.data_path, "r+b") as f:
        f.seek(1700)
        f.write(b"zz")
    # A meta file cut inside the second chunk's sum.
    r2 = ds.get_replica(BPID, BLK + 2)
    assert r2 is not None
    os.truncate(r2.meta_path, 7 + 4 + 2)

    ds = node.restart()
    # BLK + 3 was left as a crash leaves a synced replica: nothing is cut.
    for block_id, length in ((BLK, 1536), (BLK + 1, 1536), (BLK + 2, 512), (BLK + 3, 1800)):
        r = ds.get_replica(BPID, block_id)
        assert r is not None
        assert (r.state, r.num_bytes) == (ReplicaState.RWR, length), block_id
        assert r.data_path.stat().st_size == length
        assert r.meta_path.read_bytes() == meta_header(CS) + chunk_sums(data[:length], 512)
        assert read_all(ds, block_id) == data[:length]
    reported = {r.block_id: (r.state, r.num_bytes) for r in ds.replicas(BPID)}
    assert reported[BLK + 1] == (ReplicaState.RWR, 1536)


def test_bad_files_are_set_aside_never_served(node: Node) -> None:
    ds = node.ds
    assert ds is not None
    data = payload(600)
    for block_id in (BLK, BLK + 1, BLK + 2):
        write(ds, block_id, data, [600])
    bad_header = ds.get_replica(BPID, BLK)
    no_meta = ds.get_replica(BPID, BLK + 1)
    short_meta = ds.get_replica(BPID, BLK + 2)
    assert bad_header and no_meta and short_meta
    raw = bytearray(bad_header.meta_path.read_bytes())
    raw[1] = 9  # meta version 9
    bad_header.meta_path.write_bytes(bytes(raw))
    no_meta.meta_path.unlink()
    os.truncate(short_meta.meta_path, 9)

    ds = node.restart()
    assert [r.block_id for r in ds.replicas(BPID)] == []
    for block_id in (BLK, BLK + 1, BLK + 2):
        with pytest.raises(ReplicaNotFoundError):
            ds.open_reader(BPID, block_id)
    reasons = {q.path.name: q.reason for q in ds.quarantined}
    assert "meta version 9, expected 1" in reasons[f"blk_{BLK}_{GS}.meta"]
    assert reasons[f"blk_{BLK + 1}"] == "a block file without a meta file"
    assert "the meta file has 9 bytes" in reasons[f"blk_{BLK + 2}"]
    for q in ds.quarantined:
        assert q.path.parent.name == "quarantine" and q.path.exists()
        assert q.reason in q.path.with_name(q.path.name + ".reason").read_text()


def test_a_finalize_cut_by_a_crash_is_finished_at_start_up(node: Node) -> None:
    ds = node.ds
    assert ds is not None
    data = payload(700)
    w = ds.create_rbw(BPID, BLK, GS)
    w.write_packet(0, data, chunk_sums(data, 512), sync=True)
    r = w.replica
    w.close()
    # The meta file reached finalized/, the block file did not (design §B.1's order).
    a, b = id_to_block_dir(BLK)
    dest = r.data_path.parents[1] / "finalized" / a / b
    dest.mkdir(parents=True)
    os.replace(r.meta_path, dest / r.meta_path.name)
    ds = node.restart()
    got = ds.get_replica(BPID, BLK)
    assert got is not None and got.state == ReplicaState.FINALIZED
    assert got.data_path == dest / f"blk_{BLK}"
    assert read_all(ds, BLK) == data


def test_append_with_a_new_genstamp(node: Node) -> None:
    ds = node.ds
    assert ds is not None
    data = payload(2500, seed=9)
    write(ds, BLK, data[:1000], [1000])
    with pytest.raises(ReplicaNotFoundError, match="genstamp 1001, the request names 999"):
        ds.append(BPID, BLK, 999, 1002)
    w = ds.append(BPID, BLK, GS, 1002, expected_length=1000)
    r = w.replica
    assert (r.state, r.genstamp, r.visible_length) == (ReplicaState.RBW, 1002, 1000)
    assert r.data_path.parent.name == "rbw" and r.meta_path.name == f"blk_{BLK}_1002.meta"
    # The first packet fills the partial chunk from offset 1000; its sum is its own bytes'.
    w.write_packet(1000, data[1000:1024], chunk_sums(data[1000:1024], 512, 1000))
    w.write_packet(1024, data[1024:], chunk_sums(data[1024:], 512))
    fin = w.finalize()
    assert (fin.state, fin.genstamp, fin.num_bytes) == (ReplicaState.FINALIZED, 1002, 2500)
    assert fin.meta_path.read_bytes() == meta_header(CS) + chunk_sums(data, 512)
    ds = node.restart()
    assert read_all(ds, BLK) == data
    r2 = ds.get_replica(BPID, BLK)
    assert r2 is not None and r2.genstamp == 1002


def test_append_under_the_blocks_own_genstamp_is_served_a_lower_one_refused(node: Node) -> None:
    # hdfs-native appends without a new stamp; HDFS's FsDatasetImpl refuses only a lower one
    ds = node.ds
    assert ds is not None
    data = payload(1500, seed=10)
    write(ds, BLK, data[:700], [700])
    with pytest.raises(StorageError, match="new genstamp 1000 is below 1001"):
        ds.append(BPID, BLK, GS, GS - 1, expected_length=700)
    w = ds.append(BPID, BLK, GS, GS, expected_length=700)
    assert (w.replica.state, w.replica.genstamp) == (ReplicaState.RBW, GS)
    w.write_packet(512, data[512:], chunk_sums(data[512:], 512, 512))
    fin = w.finalize()
    assert (fin.genstamp, fin.num_bytes, fin.meta_path.name) == (GS, 1500, f"blk_{BLK}_{GS}.meta")
    assert read_all(node.restart(), BLK) == data


def test_pipeline_recovery_cuts_unacked_bytes_and_bumps_the_genstamp(node: Node) -> None:
    ds = node.ds
    assert ds is not None
    data = payload(1500, seed=11)
    w = ds.create_rbw(BPID, BLK, GS)
    w.write_packet(0, data, chunk_sums(data, 512))
    w.set_bytes_acked(900)
    w2 = ds.recover_rbw(BPID, BLK, GS, 1002, 900, 1500)
    with pytest.raises(ReplicaNotFoundError, match="the pipeline was recovered"):
        w.write_packet(1500, b"x", chunk_sums(b"x", 512))
    w.close()
    r = w2.replica
    assert (r.genstamp, r.num_bytes, r.meta_path.name) == (1002, 900, f"blk_{BLK}_1002.meta")
    w2.write_packet(900, data[900:], chunk_sums(data[900:], 512, 900))
    w2.finalize()
    assert read_all(ds, BLK) == data
    with ds.open_reader(BPID, BLK) as rd:
        assert rd.sums(0, 1500) == chunk_sums(data, 512)


def test_block_recovery_truncates_and_finalizes(node: Node) -> None:
    ds = node.ds
    assert ds is not None
    data = payload(1300)
    w = ds.create_rbw(BPID, BLK, GS)
    w.write_packet(0, data, chunk_sums(data, 512))
    assert ds.init_replica_recovery(BPID, BLK, 1005).state == ReplicaState.RUR
    fin = ds.update_replica_under_recovery(BPID, BLK, 1005, 1000)
    assert (fin.state, fin.genstamp, fin.num_bytes) == (ReplicaState.FINALIZED, 1005, 1000)
    assert fin.meta_path.read_bytes() == meta_header(CS) + chunk_sums(data[:1000], 512)


def test_invalidate_deletes_and_checks_the_genstamp(node: Node) -> None:
    ds = node.ds
    assert ds is not None
    write(ds, BLK, payload(10), [10])
    r = ds.get_replica(BPID, BLK)
    assert r is not None
    with pytest.raises(ReplicaNotFoundError, match="names 5"):
        ds.invalidate(BPID, BLK, 5)
    ds.invalidate(BPID, BLK, GS)
    assert not r.data_path.exists() and not r.meta_path.exists()
    assert ds.get_replica(BPID, BLK) is None
    assert node.restart().replicas(BPID) == []


def test_volumes_round_robin_and_a_full_volume_is_skipped(tmp_path: Path) -> None:
    free = {"d1": 1 << 30, "d2": 1 << 30}
    n = Node([tmp_path / "d1", tmp_path / "d2"], lambda p: stat(free[Path(p).name]))
    ds = n.start()
    try:
        ids = [ds.create_rbw(BPID, BLK + i, GS, expected_size=1000) for i in range(4)]
        roots = [w.replica.data_path.parents[4].name for w in ids]
        assert roots == ["d1", "d2", "d1", "d2"]
        for w in ids:
            w.close()
        free["d1"] = 500  # d1 is full for a 1000-byte block
        w = ds.create_rbw(BPID, BLK + 10, GS, expected_size=1000)
        w2 = ds.create_rbw(BPID, BLK + 11, GS, expected_size=1000)
        assert {w.replica.data_path.parents[4].name, w2.replica.data_path.parents[4].name} == {"d2"}
        free["d2"] = 1500  # the room promised to the two writers counts too
        with pytest.raises(DiskOutOfSpaceError, match="is less than the block size"):
            ds.create_rbw(BPID, BLK + 12, GS, expected_size=1000)
        w.close()
        w2.close()
        ds.create_rbw(BPID, BLK + 12, GS, expected_size=1000).close()
    finally:
        ds.close()


def test_space_reports(tmp_path: Path) -> None:
    n = Node([tmp_path / "d1"], lambda p: stat(free=1 << 28, total=1 << 30))
    ds = n.start()
    try:
        write(ds, BLK, payload(1300), [1300])
        (rep,) = ds.volume_reports()
        used = 1300 + 7 + 12
        assert (rep.capacity, rep.dfs_used, rep.remaining) == (1 << 30, used, 1 << 28)
        assert rep.block_pool_used == {BPID: used}
        assert ds.pool_used(BPID) == used
    finally:
        ds.close()


def test_a_failed_disk_is_given_up_and_the_other_volume_serves(
    node: Node, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = node.ds
    assert ds is not None
    write(ds, BLK, payload(600), [600])  # on d1
    write(ds, BLK + 1, payload(600, 1), [600])  # on d2
    w = ds.create_rbw(BPID, BLK + 2, GS)  # on d1
    bad_fd = w._fd_data
    real_pwrite = os.pwrite

    def failing_pwrite(fd: int, data: object, offset: int) -> int:
        if fd == bad_fd:
            raise OSError(errno.EIO, "Input/output error")
        return real_pwrite(fd, data, offset)  # type: ignore[arg-type]

    monkeypatch.setattr(dataset_mod.os, "pwrite", failing_pwrite)
    with pytest.raises(StorageError, match="failed writing .*Input/output error"):
        w.write_packet(0, b"abc", chunk_sums(b"abc", 512))
    monkeypatch.undo()
    (failed,) = ds.failed_volumes
    assert failed.path == node.dirs[0] and "Input/output error" in failed.reason
    assert ds.get_replica(BPID, BLK) is None
    assert read_all(ds, BLK + 1) == payload(600, 1)
    assert ds.create_rbw(BPID, BLK + 3, GS).replica.data_path.parents[4] == node.dirs[1]
    reports = {r.path: r for r in ds.volume_reports()}
    assert reports[node.dirs[0]].failed and not reports[node.dirs[1]].failed
    assert set(ds.block_report(BPID)) == {ds.volumes[1].storage_id}


def test_readers_and_writers_of_different_replicas_run_at_once(node: Node) -> None:
    ds = node.ds
    assert ds is not None
    data = payload(3000)
    write(ds, BLK, data, [3000])
    failures: list[BaseException] = []

    def guarded(fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                fn()
            except BaseException as e:  # reported by the test thread
                failures.append(e)

        return run

    def reader() -> None:
        for _ in range(30):
            assert read_all(ds, BLK) == data

    def writer(i: int) -> Callable[[], None]:
        return lambda: write(ds, BLK + 1 + i, payload(3000, i), [700, 1300, 1000])

    threads = [threading.Thread(target=guarded(reader)) for _ in range(2)]
    threads += [threading.Thread(target=guarded(writer(i))) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads) and failures == []
    for i in range(4):
        assert read_all(ds, BLK + 1 + i) == payload(3000, i)
    assert len(ds.replicas(BPID)) == 5


def test_replica_errors_are_the_ones_the_transfer_server_answers() -> None:
    from qjm.datanode import replica_store

    assert issubclass(ReplicaNotFoundError, replica_store.ReplicaNotFoundError)
    assert issubclass(ReplicaAlreadyExistsError, replica_store.ReplicaAlreadyExistsError)
