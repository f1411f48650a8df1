"""DataXceiver against our transfer client over loopback (design §B.3, §B.4).

The storage is the in-memory ReplicaStore (tests/memory_replicas.py); the sockets, the
pipeline and the bytes are real.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import struct
from collections.abc import AsyncIterator
from pathlib import Path
from typing import BinaryIO

import crc32c
import pytest

from memory_replicas import MemReader, MemStore, MemWriter
from qjm.datanode import transfer_client as tc
from qjm.datanode import transfer_io as tio
from qjm.datanode.block_keys import BlockPoolKeys
from qjm.datanode.replica_store import ExtendedBlock, ReplicaReader, ReplicaWriter
from qjm.datanode.xceiver import DataXceiverServer, XceiverLimits
from qjm.hdfs import checksum
from qjm.hdfs import datatransfer as codec
from qjm.hdfs.proto import datatransfer_pb2 as dt
from qjm.hdfs.proto import hdfs_pb2
from qjm.namenode.block_tokens import BlockTokenSecretManager
from qjm.security.block_token import AccessMode, Token
from qjm.testing.wait import wait_until_async

POOL = "BP-1-127.0.0.1-1"


class Node:
    """One xceiver with its store and the blocks it reported received."""

    def __init__(self, name: str, limits: XceiverLimits | None = None) -> None:
        self.store = MemStore()
        self.received: list[ExtendedBlock] = []
        self.server = DataXceiverServer(
            self.store, limits=limits, on_block_received=self.received.append, name=name
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


@pytest.fixture
async def nodes() -> AsyncIterator[list[Node]]:
    made = [Node(f"dn{i}") for i in range(3)]
    for node in made:
        await node.server.start()
    yield made
    for node in made:
        await node.server.stop()


def _block(block_id: int = 1 << 30 | 1, gs: int = 1001) -> ExtendedBlock:
    return ExtendedBlock(POOL, block_id, gs)


def _data(n: int, seed: int = 1) -> bytes:
    return random.Random(seed).randbytes(n)


async def test_pipeline_write_and_read_at_odd_offsets(nodes: list[Node]) -> None:
    data = _data(300_000)  # five packets of 64 KiB and a partial chunk at the end
    block = _block()
    written = await tc.write_block([n.info for n in nodes], block, data)
    assert written.num_bytes == len(data)
    for node in nodes:
        replica = node.store.replicas[block.block_id]
        assert replica.finalized and bytes(replica.data) == data
        assert node.received == [ExtendedBlock(POOL, block.block_id, 1001, len(data))]
    for node, (offset, length) in zip(
        nodes * 2,
        [(0, len(data)), (1, 1), (511, 2), (513, 70_000), (299_999, 1), (1000, 0)],
        strict=True,
    ):
        got = await tc.read_block(node.info, written, offset, length)
        assert got == data[offset : offset + length], (offset, length)
    with pytest.raises(tc.BlockReadError, match="do not match .*visible length 300000"):
        await tc.read_block(nodes[0].info, written, 299_000, 2000)


async def test_hflush_then_more_data_and_a_read_of_what_is_acked(nodes: list[Node]) -> None:
    block = _block(7)
    pipeline = await tc.PipelineWriter.open([n.info for n in nodes], block, client_name="c")
    await pipeline.write(b"a" * 700, sync=True)  # ends inside the second chunk
    assert await pipeline.flush() == 700
    # Visible to readers before the block is closed (RBW, acked length).
    assert await tc.read_block(nodes[2].info, block, 0, 700) == b"a" * 700
    await pipeline.write(b"b" * 1000)  # starts inside a chunk: the DataNode extends its sum
    await pipeline.close()
    expected = b"a" * 700 + b"b" * 1000
    for node in nodes:
        replica = node.store.replicas[7]
        assert bytes(replica.data) == expected and replica.syncs >= 1
        assert bytes(replica.sums) == checksum.chunk_sums(expected)


async def test_corrupted_packet_is_refused_and_nothing_finalized(nodes: list[Node]) -> None:
    block = _block(11)
    pipeline = await tc.PipelineWriter.open([n.info for n in nodes], block, client_name="c")
    good = _data(1024, 2)
    await pipeline.send_packet(0, good, checksum.chunk_sums(good))
    bad = bytearray(_data(1024, 3))
    sums = checksum.chunk_sums(bytes(bad), 512, 1024)
    bad[600] ^= 0xFF  # second chunk of this packet: block offset 1536
    await pipeline.send_packet(1024, bytes(bad), sums)
    with pytest.raises(tc.BlockWriteError) as err:
        await pipeline.flush()
    await pipeline.abort()
    assert err.value.status == dt.ERROR_CHECKSUM and err.value.bad_node_index == 0
    assert "offset 1024" in str(err.value)
    for node in nodes:
        assert not node.received
        replica = node.store.replicas[11]
        assert not replica.finalized and len(replica.data) == 1024  # the bad bytes never stored
    assert nodes[0].server.metrics.checksum_errors == 1


def _cancelling_sums(data: bytes) -> bytes:
    """Sums of data's chunks with the first two changed so that, combined, they still give
    the CRC32C of all of data: only a chunk-by-chunk check sees them wrong."""
    zeros = bytes(512)
    x = 0x1234_5678
    shifted_x = crc32c.crc32c(zeros, x) ^ crc32c.crc32c(zeros, 0)  # A_512(x)
    sums = bytearray(checksum.chunk_sums(data))
    s0, s1 = struct.unpack_from(">II", sums)
    struct.pack_into(">II", sums, 0, s0 ^ x, s1 ^ shifted_x)
    assert checksum.sums_agree(data, bytes(sums)) and checksum.first_bad_chunk(data, sums) == 0
    return bytes(sums)


async def test_the_last_node_checks_every_chunk(nodes: list[Node]) -> None:
    # Nodes with a mirror check a packet's chunks all at once; sums wrong in a way that check
    # cannot see reach the last node, which checks chunk by chunk and refuses (design §B.4).
    block = _block(13)
    pipeline = await tc.PipelineWriter.open([n.info for n in nodes], block, client_name="c")
    good = _data(1024, 2)
    await pipeline.send_packet(0, good, checksum.chunk_sums(good))
    await pipeline.flush()
    crafted = _data(2048, 3)
    await pipeline.send_packet(1024, crafted, _cancelling_sums(crafted))
    with pytest.raises(tc.BlockWriteError) as err:
        await pipeline.flush()
    await pipeline.abort()
    assert err.value.status == dt.ERROR_CHECKSUM and err.value.bad_node_index == 2
    assert [n.server.metrics.checksum_errors for n in nodes] == [0, 0, 1]
    for node in nodes:
        assert not node.received and not node.store.replicas[13].finalized
    assert len(nodes[2].store.replicas[13].data) == 1024  # the last node stored none of it


async def test_downstream_node_dying_is_named_by_index(nodes: list[Node]) -> None:
    await _downstream_dies(nodes)
    for node in nodes[:2]:  # the first two were told as HDFS tells them: by the ack
        assert node.server.metrics.bad_requests == 0


@pytest.mark.parametrize("dying", [1, 2])
def test_downstream_node_dying_under_uvloop_is_named_by_index(dying: int) -> None:
    # The daemon's loop, uvloop, raises RuntimeError (not OSError) for a write to a
    # connection that closed meanwhile: the node must still name the next node, not fail.
    import uvloop

    async def scenario() -> None:
        made = [Node(f"dn{i}") for i in range(3)]
        for node in made:
            await node.server.start()
        try:
            await _downstream_dies(made, dying)
        finally:
            for node in made:
                await node.server.stop()

    uvloop.run(scenario())


async def _downstream_dies(nodes: list[Node], dying: int = 2) -> None:
    """Node `dying` stops mid-block: the client is told which one, with ERROR."""
    block = _block(12)
    pipeline = await tc.PipelineWriter.open([n.info for n in nodes], block, client_name="c")
    await pipeline.write(_data(100_000, 4))
    await pipeline.flush()
    await nodes[dying].server.stop()
    with pytest.raises(tc.BlockWriteError) as err:
        for _ in range(20):  # bounded: the error comes with the next ack
            await pipeline.write(_data(65_536, 5))
            await pipeline.flush()
    await pipeline.abort()
    assert err.value.bad_node_index == dying
    assert err.value.first_bad_link == tio.xfer_name(nodes[dying].info)
    assert err.value.status == dt.ERROR


async def test_setup_names_first_bad_link_when_a_target_is_down(nodes: list[Node]) -> None:
    await nodes[1].server.stop()
    with pytest.raises(tc.BlockWriteError) as err:
        await tc.PipelineWriter.open([n.info for n in nodes], _block(13), client_name="c")
    assert err.value.bad_node_index == 1
    assert err.value.first_bad_link == tio.xfer_name(nodes[1].info)
    assert not nodes[0].received


def _md5_of_crcs(data: bytes, bpc: int = 512) -> bytes:
    """HDFS's MD5CRC block checksum computed here from the bytes alone."""
    crcs = b"".join(
        crc32c.crc32c(data[i : i + bpc]).to_bytes(4, "big") for i in range(0, len(data), bpc)
    )
    return hashlib.md5(crcs).digest()


async def test_block_checksum_is_md5_of_chunk_crcs(nodes: list[Node]) -> None:
    data = _data(5000, 6)
    block = await tc.write_block([nodes[0].info], _block(21), data)
    resp = await tc.block_checksum(nodes[0].info, block)
    assert resp.bytesPerCrc == 512 and resp.crcPerBlock == 10  # ceil(5000 / 512)
    assert resp.crcType == hdfs_pb2.CHECKSUM_CRC32C
    assert resp.blockChecksum == _md5_of_crcs(data)
    # A requested length shorter than the replica covers only those bytes.
    short = ExtendedBlock(POOL, 21, 1001, 1500)
    resp = await tc.block_checksum(nodes[0].info, short)
    assert (resp.crcPerBlock, resp.blockChecksum) == (3, _md5_of_crcs(data[:1500]))


async def test_transfer_block_copies_the_replica(nodes: list[Node]) -> None:
    data = _data(140_000, 7)
    block = await tc.write_block([nodes[0].info], _block(31), data)
    await tc.transfer_block(nodes[0].info, block, [nodes[1].info, nodes[2].info])
    for node in nodes[1:]:
        replica = node.store.replicas[31]
        assert replica.finalized and bytes(replica.data) == data
        assert node.received and node.received[0].num_bytes == len(data)
    with pytest.raises(tc.BlockWriteError, match="no replica"):
        await tc.transfer_block(nodes[0].info, _block(32), [nodes[1].info])


class _FileReader(MemReader):
    """A replica whose data is a file: READ_BLOCK sends it with sendfile."""

    def __init__(self, reader: MemReader, path: Path) -> None:
        super().__init__(reader.replica)
        self._file: BinaryIO = path.open("rb")

    def data_file(self) -> BinaryIO | None:
        return self._file

    async def read_data(self, offset: int, length: int) -> bytes:
        raise AssertionError("zero-copy read must not read data in Python")

    async def close(self) -> None:
        self._file.close()


async def test_read_block_sends_file_data_zero_copy(nodes: list[Node], tmp_path: Path) -> None:
    data = _data(200 * 1024, 8)  # whole chunks, so no partial sum is recomputed
    block = await tc.write_block([nodes[0].info], _block(41), data)
    path = tmp_path / "blk_41"
    path.write_bytes(data)
    store = nodes[0].store
    original = store.open_reader

    async def open_file_reader(b: ExtendedBlock) -> ReplicaReader:
        reader = await original(b)
        assert isinstance(reader, MemReader)
        return _FileReader(reader, path)

    store.open_reader = open_file_reader  # type: ignore[method-assign]
    assert await tc.read_block(nodes[0].info, block, 1024, 150_000) == data[1024:151_024]


async def _raw(node: Node, payload: bytes) -> dt.BlockOpResponseProto | None:
    reader, writer = await asyncio.open_connection("127.0.0.1", node.server.port)
    try:
        writer.write(payload)
        await writer.drain()
        try:
            return await asyncio.wait_for(tio.read_response(reader, "answer"), 10)
        except tio.ConnectionClosedError:
            return None
    finally:
        await tc.close_writer(writer)


async def test_malformed_requests_get_a_clear_answer_and_the_server_goes_on(
    nodes: list[Node],
) -> None:
    node = nodes[0]
    resp = await _raw(node, b"\x00\x1b\x51")
    assert resp is not None and resp.status == dt.ERROR_INVALID
    assert "expected 28, received 27" in resp.message
    huge = b"\x00\x1c\x50" + codec.encode_varint(2 << 30)  # a 2 GiB op proto
    resp = await _raw(node, huge)
    assert resp is not None and "WRITE_BLOCK request of 2147483648 bytes" in resp.message
    resp = await _raw(node, b"\x00\x1c\x53" + codec.encode_varint(1) + b"\x00")
    assert resp is not None and resp.status == dt.ERROR_UNSUPPORTED
    # A 2 GiB packet inside a WRITE_BLOCK: refused, never allocated, nothing finalized.
    op = tc.write_block_op(
        _block(51),
        [],
        client_name="c",
        stage=tc.Stage.PIPELINE_SETUP_CREATE,
        pipeline_size=1,
        latest_generation_stamp=1001,
    )
    reader, writer = await asyncio.open_connection("127.0.0.1", node.server.port)
    writer.write(codec.encode_op(codec.Op.WRITE_BLOCK, op))
    assert (await tio.read_response(reader, "setup")).status == dt.SUCCESS
    writer.write(codec.PACKET_LENGTHS.pack(0x7FFFFFF0, 25) + b"\x00" * 25)
    answer = await asyncio.wait_for(reader.read(), 10)  # the server answers and closes
    assert b"packet data and checksums of 2147483628 bytes is outside" in answer
    await tc.close_writer(writer)
    assert not node.received and node.server.metrics.bad_requests >= 3
    data = _data(1000, 9)  # still serving
    block = await tc.write_block([node.info], _block(52), data)
    assert await tc.read_block(node.info, block, 0, 1000) == data


async def test_connection_limit_and_idle_timeout() -> None:
    node = Node("small", XceiverLimits(max_connections=1, idle_timeout_s=0.5))
    await node.server.start()
    try:
        idle_reader, idle_writer = await asyncio.open_connection("127.0.0.1", node.server.port)
        deadline = asyncio.get_running_loop().time() + 10
        while node.server.active_connections < 1:  # bounded wait for the accept
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.01)
        resp = await _raw(node, b"")
        assert resp is not None and resp.status == dt.ERROR
        assert "at most 1 data transfer connections" in resp.message
        # The idle connection is closed by the server after its deadline.
        assert await asyncio.wait_for(idle_reader.read(), 10) == b""
        idle_writer.close()
        assert node.server.metrics.connections_refused == 1
    finally:
        await node.server.stop()


class _GatedStore(MemStore):
    """A MemStore whose writers hold each write until the gate opens."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.held = 0

    async def create_rbw(self, block: ExtendedBlock, bytes_per_checksum: int) -> ReplicaWriter:
        inner = await super().create_rbw(block, bytes_per_checksum)
        store = self

        class Gated(MemWriter):
            async def write(self, offset: int, data: bytes, sums: bytes) -> None:
                store.held += 1
                await store.gate.wait()
                await super().write(offset, data, sums)

        assert isinstance(inner, MemWriter)
        return Gated(inner.replica)


async def test_no_ack_goes_up_before_the_middle_node_holds_the_bytes(nodes: list[Node]) -> None:
    """Write-behind (design §B.4): the packets go on downstream while a node's disk write is
    held, and no ack reaches the client until that node has written them."""
    gated = _GatedStore()
    nodes[1].store = gated
    nodes[1].server.store = gated
    block = _block(11)
    data = _data(3 * 65536)
    pipeline = await tc.PipelineWriter.open([n.info for n in nodes], block, client_name="c")
    await pipeline.write(data)
    last = nodes[2].store
    await wait_until_async(
        "the last node wrote every byte while the middle one is held",
        lambda: (
            gated.held >= 1
            and block.block_id in last.replicas
            and len(last.replicas[block.block_id].data) == len(data)
        ),
        10.0,
    )
    assert pipeline.bytes_acked == 0
    assert nodes[1].store.replicas[block.block_id].bytes_acked == 0
    gated.gate.set()
    assert await asyncio.wait_for(pipeline.flush(), 10) == len(data)
    await pipeline.close()
    assert bytes(gated.replicas[block.block_id].data) == data


async def test_block_tokens_are_checked_on_every_op_and_copies_carry_the_nodes_own() -> None:
    """Design §S.9: with keys, a pipeline write, a read, a checksum and a transfer pass with
    the NameNode's tokens (the transfer's copy with the source's own WRITE token); a READ
    token used to write, or an empty one, is refused ERROR_ACCESS_TOKEN and stores nothing."""
    nn = BlockTokenSecretManager(
        nn_index=0, num_nns=1, key_update_interval_ms=60_000, token_lifetime_ms=60_000
    )
    made = []
    for i in range(3):
        keys = BlockPoolKeys()
        keys.add(POOL, nn.export())
        node = Node(f"dn{i}")
        node.server.keys = keys
        await node.server.start()
        made.append(node)
    try:
        a, b, c = made

        def token(block_id: int, *modes: AccessMode) -> Token:
            return nn.token("alice", POOL, block_id, modes)

        data = _data(70_000, 3)
        block = await tc.write_block(
            [a.info, b.info], _block(41), data, token=token(41, AccessMode.WRITE)
        )
        read = token(41, AccessMode.READ)
        assert await tc.read_block(b.info, block, 0, len(data), token=read) == data
        assert (await tc.block_checksum(a.info, block, token=read)).crcPerBlock > 0
        await tc.transfer_block(a.info, block, [c.info], token=token(41, AccessMode.COPY))
        assert bytes(c.store.replicas[41].data) == data  # c took a's own WRITE token
        with pytest.raises(tc.BlockWriteError, match="doesn't have WRITE permission") as err:
            await tc.write_block(
                [a.info, b.info], _block(42), data, token=token(42, AccessMode.READ)
            )
        assert err.value.first_bad_link == tio.xfer_name(a.info)
        with pytest.raises(tc.BlockReadError, match="ERROR_ACCESS_TOKEN.*Unable to de-serialize"):
            await tc.read_block(a.info, block, 0, 10)
        with pytest.raises(tc.BlockWriteError, match="ERROR_ACCESS_TOKEN.*COPY permission"):
            await tc.transfer_block(a.info, block, [c.info], token=read)
        assert 42 not in a.store.replicas and 42 not in b.store.replicas
        assert a.server.metrics.token_refusals == 3
    finally:
        for node in made:
            await node.server.stop()
