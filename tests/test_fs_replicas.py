"""The xceiver over a real FsDataset (design §B.13): what a pipeline writes lands on disk in
HDFS's layout with the block's chunk sums, including hflush and a write starting inside a
chunk, and reads back through the xceiver byte for byte."""

from __future__ import annotations

import hashlib
import os
import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from qjm.datanode import dataset as dataset_mod
from qjm.datanode import transfer_client as tc
from qjm.datanode.dataset import FsDataset
from qjm.datanode.fs_replicas import DiskPool, FsReplicaStore
from qjm.datanode.layout import BlockPoolInfo, meta_header
from qjm.datanode.replica import ReplicaState
from qjm.datanode.replica_store import ExtendedBlock
from qjm.datanode.storage import DataStorage
from qjm.datanode.xceiver import DataXceiverServer
from qjm.fileutil import start_writeback
from qjm.hdfs import checksum
from qjm.hdfs import datatransfer as codec
from qjm.hdfs.checksum import DataChecksum
from qjm.hdfs.proto import hdfs_pb2
from qjm.hdfs.proto.datatransfer_pb2 import OpWriteBlockProto
from qjm.testing.wait import wait_until_async

POOL = "BP-7-127.0.0.1-1700000000000"
Stage = OpWriteBlockProto.BlockConstructionStage


class DiskNode:
    """One xceiver over a FsDataset in its own directory."""

    def __init__(self, root: Path, name: str) -> None:
        storage = DataStorage([root / "data"])
        storage.load("CID-fs-replicas")
        self.dataset = FsDataset(storage)
        self.dataset.add_block_pool(BlockPoolInfo(7, POOL))
        self.pool = DiskPool(4)
        self.received: list[ExtendedBlock] = []
        self.server = DataXceiverServer(
            FsReplicaStore(self.dataset, self.pool),
            on_block_received=self.received.append,
            name=name,
        )

    @property
    def info(self) -> hdfs_pb2.DatanodeInfoProto:
        return hdfs_pb2.DatanodeInfoProto(
            id=hdfs_pb2.DatanodeIDProto(
                ipAddr="127.0.0.1",
                hostName="localhost",
                datanodeUuid=self.server.name,
                xferPort=self.server.port,
                infoPort=0,
                ipcPort=0,
            )
        )

    async def stop(self) -> None:
        await self.server.stop()
        self.pool.shutdown()
        self.dataset.close()


@pytest.fixture
async def nodes(tmp_path: Path) -> AsyncIterator[list[DiskNode]]:
    made = [DiskNode(tmp_path / f"dn{i}", f"dn{i}") for i in range(2)]
    for node in made:
        await node.server.start()
    yield made
    for node in made:
        await node.stop()


def _on_disk(node: DiskNode, block_id: int) -> tuple[bytes, bytes]:
    r = node.dataset.get_replica(POOL, block_id)
    assert r is not None and r.state == ReplicaState.FINALIZED
    return r.data_path.read_bytes(), r.meta_path.read_bytes()


async def test_pipeline_with_hflush_and_a_mid_chunk_write_lands_on_disk(
    nodes: list[DiskNode],
) -> None:
    block = ExtendedBlock(POOL, 1 << 30 | 1, 1001)
    first = random.Random(1).randbytes(700)  # ends inside the second chunk
    rest = random.Random(2).randbytes(200_000)  # starts inside that chunk
    pipeline = await tc.PipelineWriter.open([n.info for n in nodes], block, client_name="c")
    await pipeline.write(first, sync=True)
    assert await pipeline.flush() == 700
    # hflushed bytes are visible on both nodes while the replica is being written
    for node in nodes:
        assert await tc.read_block(node.info, block, 0, 700) == first
        assert await tc.read_block(node.info, block, 511, 189) == first[511:]
    await pipeline.write(rest)
    written = await pipeline.close()
    data = first + rest
    assert written.num_bytes == len(data)
    header = meta_header(DataChecksum())
    for node in nodes:
        on_disk, meta = _on_disk(node, block.block_id)
        assert on_disk == data
        assert meta == header + checksum.chunk_sums(data, 512)
        assert node.received == [ExtendedBlock(POOL, block.block_id, 1001, len(data))]
        for offset, length in [(0, len(data)), (1, 1), (699, 3), (513, 70_000)]:
            got = await tc.read_block(node.info, written, offset, length)
            assert got == data[offset : offset + length], (offset, length)


async def test_whole_block_write_read_checksum_and_transfer(nodes: list[DiskNode]) -> None:
    data = random.Random(3).randbytes(300_001)
    block = ExtendedBlock(POOL, 1 << 30 | 2, 1002)
    written = await tc.write_block([nodes[0].info], block, data)
    assert await tc.read_block(nodes[0].info, written, 0, len(data)) == data
    # the DataNode's MD5-of-CRCs equals one computed from the data
    got = await tc.block_checksum(nodes[0].info, written)
    assert got.blockChecksum == hashlib.md5(checksum.chunk_sums(data)).digest()
    # TRANSFER_BLOCK: the second node gets a finalized copy with the same sums on disk
    await tc.transfer_block(nodes[0].info, written, [nodes[1].info], client_name="c")
    assert _on_disk(nodes[1], block.block_id) == _on_disk(nodes[0], block.block_id)
    assert nodes[1].received == [ExtendedBlock(POOL, block.block_id, 1002, len(data))]


async def test_a_write_behind_batch_lands_in_one_pwritev_and_sums_line_up(
    nodes: list[DiskNode],
) -> None:
    """append_parts (design §B.4): many packets' parts, more than one pwritev takes, land
    byte for byte with their sums; a batch that does not continue the replica at its end on
    a chunk boundary is written as one packet instead."""
    ds = nodes[0].dataset
    rng = random.Random(5)
    parts = [rng.randbytes(512) for _ in range(700)] + [rng.randbytes(300)]
    data = b"".join(parts)
    w = ds.create_rbw(POOL, 1 << 30 | 77, 1001)
    with pytest.raises(checksum.ChecksumError, match="expected"):
        w.append_parts(0, parts, checksum.chunk_sums(data)[:-4])
    assert w.bytes_on_disk == 0
    w.append_parts(0, parts[:600], checksum.chunk_sums(b"".join(parts[:600])))
    w.append_parts(600 * 512, parts[600:], checksum.chunk_sums(b"".join(parts[600:])))
    assert w.bytes_on_disk == len(data)
    # a resend of the last part (not at the end): written as a packet, nothing changes
    w.append_parts(700 * 512, parts[-1:], checksum.chunk_sums(parts[-1]))
    more = rng.randbytes(1000)  # starts inside the last chunk: the packet path extends it
    w.append_parts(len(data), [more], checksum.chunk_sums(more, 512, len(data)))
    data += more
    w.finalize()
    on_disk, meta = _on_disk(nodes[0], 1 << 30 | 77)
    assert on_disk == data
    assert meta == meta_header(DataChecksum()) + checksum.chunk_sums(data)


async def test_writeback_starts_behind_each_8_mib_written(
    nodes: list[DiskNode], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replica's bytes are handed to the disk's writeback as they are written (design
    §B.1), so the fsync at its close finds little left to write."""
    started: list[tuple[int, int]] = []
    real = dataset_mod.start_writeback

    def record(fd: int, offset: int, length: int) -> bool:
        started.append((offset, length))
        return real(fd, offset, length)

    monkeypatch.setattr(dataset_mod, "start_writeback", record)
    mib = 1024 * 1024
    part = random.Random(6).randbytes(mib)
    sums = checksum.chunk_sums(part)
    w = nodes[0].dataset.create_rbw(POOL, 1 << 30 | 78, 1001)
    for i in range(20):
        w.append_parts(i * mib, [part], sums)
    w.finalize()
    assert started == [(0, 8 * mib), (8 * mib, 8 * mib)]


def test_start_writeback_on_a_real_file(tmp_path: Path) -> None:
    fd = os.open(tmp_path / "f", os.O_RDWR | os.O_CREAT)
    try:
        os.write(fd, b"x" * 100_000)
        assert start_writeback(fd, 0, 100_000)
        assert not start_writeback(fd, 0, 0)
        assert not start_writeback(-1, 0, 10)  # a bad descriptor: refused, nothing raised
    finally:
        os.close(fd)


async def test_a_streaming_recovery_of_a_block_already_finalized_whole_reopens_it(
    nodes: list[DiskNode],
) -> None:
    # A client that missed the last ack (every node has finalized the block) recovers the
    # pipeline with the streaming stage and a new genstamp, then tells the NameNode that
    # genstamp: the replicas must take it, or every one of them is stale (design §B.4).
    data = random.Random(9).randbytes(200_001)
    block = ExtendedBlock(POOL, 1 << 30 | 21, 1001)
    infos = [n.info for n in nodes]
    await tc.write_block(infos, block, data)
    pipeline = await tc.PipelineWriter.open(
        infos,
        block,
        client_name="c",
        stage=Stage.PIPELINE_SETUP_STREAMING_RECOVERY,
        latest_generation_stamp=1005,
        offset=len(data),
    )
    done = await pipeline.close()  # the empty last packet, acknowledged by both
    assert done.num_bytes == len(data)
    for node in nodes:
        r = node.dataset.get_replica(POOL, block.block_id)
        assert r is not None and (r.state, r.genstamp) == (ReplicaState.FINALIZED, 1005)
        assert r.data_path.read_bytes() == data
    # a client that did not send every byte the replica holds is refused, as HDFS's
    with pytest.raises(tc.BlockWriteError, match="is not being written"):
        await tc.PipelineWriter.open(
            infos,
            ExtendedBlock(POOL, block.block_id, 1005),
            client_name="c",
            stage=Stage.PIPELINE_SETUP_STREAMING_RECOVERY,
            latest_generation_stamp=1007,
            offset=len(data) - 1,
        )


async def test_a_failed_transfers_copy_is_removed_and_a_newer_one_replaces_an_older(
    nodes: list[DiskNode],
) -> None:
    # HDFS's BlockReceiver deletes a transfer's unfinished copy, and createTemporary
    # replaces an older one: else the copy left behind refuses every later transfer of the
    # block to that node, and the block cannot get its replicas back (design §B.4)
    bid = 1 << 30 | 31
    target = nodes[1]
    data = random.Random(4).randbytes(100_000)
    # a transfer that breaks off after one packet
    _, writer = await tc.connect(target.info, 10.0)
    op = tc.write_block_op(
        ExtendedBlock(POOL, bid, 1001, len(data)),
        [],
        client_name="",
        stage=Stage.TRANSFER_FINALIZED,
        pipeline_size=1,
        latest_generation_stamp=1001,
        min_bytes=len(data),
        max_bytes=len(data),
    )
    first = data[:4096]
    writer.write(codec.encode_op(codec.Op.WRITE_BLOCK, op))
    writer.write(codec.encode_packet(0, 0, first, checksum.chunk_sums(first)))
    await writer.drain()
    await wait_until_async(
        "the copy begun", lambda: target.dataset.get_replica(POOL, bid) is not None
    )
    await tc.close_writer(writer)
    await wait_until_async(
        "the broken transfer's copy removed",
        lambda: target.dataset.get_replica(POOL, bid) is None,
    )
    assert not list((target.dataset.volumes[0].root).glob(f"**/blk_{bid}*"))
    # an older copy left behind (a crash of its sender mid-transfer) is replaced by a newer
    old = target.dataset.create_rbw(POOL, bid, 1001, temporary=True)
    old.close()
    source = nodes[0]
    block = await tc.write_block([source.info], ExtendedBlock(POOL, bid, 1002), data)
    await tc.transfer_block(source.info, block, [target.info], client_name="c")
    r = target.dataset.get_replica(POOL, bid)
    assert r is not None and (r.state, r.genstamp) == (ReplicaState.FINALIZED, 1002)
    assert r.data_path.read_bytes() == data


async def test_a_transfer_rbw_copy_becomes_rbw_and_joins_the_recovered_pipeline(
    nodes: list[DiskNode],
) -> None:
    # a client's pipeline recovery that adds a DataNode: the block being written is copied
    # to the new node (TRANSFER_RBW), which must hold it as RBW, not as a transfer's copy,
    # for the recovery's WRITE_BLOCK to take it over (HDFS's convertTemporaryToRbw)
    source, added = nodes
    data = random.Random(12).randbytes(150_000)
    block = ExtendedBlock(POOL, 1 << 30 | 41, 1001)
    pipeline = await tc.PipelineWriter.open([source.info], block, client_name="c")
    await pipeline.write(data)
    await pipeline.flush()
    try:
        r = source.dataset.get_replica(POOL, block.block_id)
        assert r is not None and r.state == ReplicaState.RBW
        await tc.transfer_block(
            source.info,
            ExtendedBlock(POOL, block.block_id, 1001, len(data)),
            [added.info],
            client_name="c",
        )
        copy = added.dataset.get_replica(POOL, block.block_id)
        assert copy is not None and (copy.state, copy.num_bytes) == (ReplicaState.RBW, len(data))
    finally:
        await pipeline.abort()
    more = random.Random(13).randbytes(70_000)
    recovered = await tc.PipelineWriter.open(
        [source.info, added.info],
        ExtendedBlock(POOL, block.block_id, 1001, len(data)),
        client_name="c",
        stage=Stage.PIPELINE_SETUP_STREAMING_RECOVERY,
        latest_generation_stamp=1004,
        offset=len(data),
    )
    await recovered.write(more)
    await recovered.close()
    for node in nodes:
        r = node.dataset.get_replica(POOL, block.block_id)
        assert r is not None and (r.state, r.genstamp) == (ReplicaState.FINALIZED, 1004)
        assert r.data_path.read_bytes() == data + more
