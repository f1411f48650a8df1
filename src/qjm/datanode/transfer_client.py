"""The client side of DataTransferProtocol on asyncio (design §B.3, §B.4).

Write a block through a pipeline (WRITE_BLOCK, packets with CRC32C sums, acks, the last
empty packet), read a range (READ_BLOCK, sums verified, CHECKSUM_OK), ask BLOCK_CHECKSUM,
and send a replica to another DataNode (TRANSFER_BLOCK's work). The DataNode forwards to
the next pipeline node with PipelineWriter's parts; tests and benchmarks use it all.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

from qjm.datanode import sasl_streams
from qjm.datanode import transfer_io as tio
from qjm.datanode.block_sender import PACKET_DATA_BYTES, chunks_per_packet, send_range
from qjm.datanode.replica_store import ExtendedBlock, ReplicaReader
from qjm.hdfs import checksum
from qjm.hdfs import datatransfer as codec
from qjm.hdfs.datanode_protocol import token_to_proto
from qjm.hdfs.proto import datatransfer_pb2 as dt
from qjm.hdfs.proto import hdfs_pb2
from qjm.hdfs.transfer_sasl import NO_PROTECTION, TransferProtection
from qjm.security.block_token import Token

Stage = dt.OpWriteBlockProto.BlockConstructionStage
MAX_PACKETS_IN_FLIGHT = 80  # Hadoop's dfs.client.write.max-packets-in-flight


class BlockWriteError(codec.DataTransferError):
    """A pipeline write that failed; bad_node_index names the node to drop (HDFS's rule)."""

    def __init__(
        self,
        message: str,
        *,
        status: int = dt.ERROR,
        bad_node_index: int | None = None,
        first_bad_link: str = "",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.bad_node_index = bad_node_index
        self.first_bad_link = first_bad_link


class BlockReadError(codec.DataTransferError):
    """A read refused by the DataNode or whose data failed its checksum."""


def block_proto(block: ExtendedBlock) -> hdfs_pb2.ExtendedBlockProto:
    """The wire form of a block."""
    return hdfs_pb2.ExtendedBlockProto(
        poolId=block.pool_id,
        blockId=block.block_id,
        generationStamp=block.generation_stamp,
        numBytes=block.num_bytes,
    )


def block_from_proto(proto: hdfs_pb2.ExtendedBlockProto) -> ExtendedBlock:
    """A block from its wire form."""
    return ExtendedBlock(proto.poolId, proto.blockId, proto.generationStamp, proto.numBytes)


def base_header(block: ExtendedBlock, token: Token | None = None) -> dt.BaseHeaderProto:
    """The BaseHeaderProto of an op on block, with its block token (design §S.9)."""
    return dt.BaseHeaderProto(block=block_proto(block), token=token_to_proto(token))


def client_header(
    block: ExtendedBlock, client_name: str, token: Token | None = None
) -> dt.ClientOperationHeaderProto:
    """The ClientOperationHeaderProto of an op on block."""
    return dt.ClientOperationHeaderProto(
        baseHeader=base_header(block, token), clientName=client_name
    )


def write_block_op(
    block: ExtendedBlock,
    downstream: Sequence[hdfs_pb2.DatanodeInfoProto],
    *,
    client_name: str,
    stage: int,
    pipeline_size: int,
    latest_generation_stamp: int,
    min_bytes: int = 0,
    max_bytes: int = 0,
    bytes_per_checksum: int = codec.BYTES_PER_CHECKSUM,
    source: hdfs_pb2.DatanodeInfoProto | None = None,
    token: Token | None = None,
) -> dt.OpWriteBlockProto:
    """An OpWriteBlockProto; downstream are the nodes after the one it is sent to."""
    op = dt.OpWriteBlockProto(
        header=client_header(block, client_name, token),
        targets=list(downstream),
        stage=stage,  # type: ignore[arg-type]
        pipelineSize=pipeline_size,
        minBytesRcvd=min_bytes,
        maxBytesRcvd=max_bytes,
        latestGenerationStamp=latest_generation_stamp,
        requestedChecksum=dt.ChecksumProto(
            type=hdfs_pb2.CHECKSUM_CRC32C, bytesPerChecksum=bytes_per_checksum
        ),
        targetStorageTypes=[hdfs_pb2.DISK] * len(downstream),
    )
    if source is not None:
        op.source.CopyFrom(source)
    return op


async def connect(
    node: hdfs_pb2.DatanodeInfoProto,
    timeout_s: float,
    *,
    protection: TransferProtection = NO_PROTECTION,
    token: Token | None = None,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """An open connection to a DataNode's data transfer port; with protection (a SASL layer
    mask, dfs.data.transfer.protection) after the SASL handshake with the op's block token,
    its streams wrapped (design §S.12). SaslTransferError when the handshake fails."""
    host, port = tio.xfer_address(node)
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
    if not protection:
        return reader, writer
    try:
        return await sasl_streams.client_handshake(reader, writer, token, protection, timeout_s)
    except BaseException:
        await close_writer(writer)
        raise


async def close_writer(writer: asyncio.StreamWriter) -> None:
    """Close a connection, ignoring a peer already gone."""
    writer.close()
    with contextlib.suppress(OSError, TimeoutError):
        await asyncio.wait_for(writer.wait_closed(), 5)


@dataclass
class _InFlight:
    seqno: int
    offset: int  # first byte of the packet in the block
    end: int


class PipelineWriter:
    """One block written through a pipeline of DataNodes (HDFS's DataStreamer, one block)."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        targets: Sequence[hdfs_pb2.DatanodeInfoProto],
        block: ExtendedBlock,
        *,
        offset: int,
        bytes_per_checksum: int,
        timeout_s: float,
        packet_data_bytes: int = PACKET_DATA_BYTES,
        max_in_flight: int = MAX_PACKETS_IN_FLIGHT,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self.targets = list(targets)
        self.block = block
        self.bytes_per_checksum = bytes_per_checksum
        self._timeout = timeout_s
        self._per_packet = chunks_per_packet(bytes_per_checksum, packet_data_bytes) * (
            bytes_per_checksum
        )
        self._max_in_flight = max_in_flight
        self._offset = offset  # the next byte to send
        self._seqno = 0
        self._in_flight: collections.deque[_InFlight] = collections.deque()
        self.bytes_acked = offset
        self._error: codec.DataTransferError | None = None
        self._changed = asyncio.Condition()
        self._acks = asyncio.create_task(self._read_acks())

    @classmethod
    async def open(
        cls,
        targets: Sequence[hdfs_pb2.DatanodeInfoProto],
        block: ExtendedBlock,
        *,
        client_name: str,
        stage: int = Stage.PIPELINE_SETUP_CREATE,
        latest_generation_stamp: int | None = None,
        offset: int = 0,
        bytes_per_checksum: int = codec.BYTES_PER_CHECKSUM,
        timeout_s: float = 60.0,
        packet_data_bytes: int = PACKET_DATA_BYTES,
        token: Token | None = None,
        protection: TransferProtection = NO_PROTECTION,
    ) -> PipelineWriter:
        """Connect to targets[0] and set the pipeline up; BlockWriteError names a bad node."""
        if not targets:
            raise ValueError("a pipeline needs at least one target")
        try:
            reader, writer = await connect(
                targets[0], timeout_s, protection=protection, token=token
            )
        except (OSError, TimeoutError, codec.DataTransferError) as exc:
            raise BlockWriteError(
                f"cannot connect to {tio.xfer_name(targets[0])}: {exc}",
                bad_node_index=0,
                first_bad_link=tio.xfer_name(targets[0]),
            ) from None
        op = write_block_op(
            block,
            targets[1:],
            client_name=client_name,
            stage=stage,
            pipeline_size=len(targets),
            latest_generation_stamp=(
                block.generation_stamp
                if latest_generation_stamp is None
                else latest_generation_stamp
            ),
            min_bytes=offset,
            max_bytes=offset,
            bytes_per_checksum=bytes_per_checksum,
            token=token,
        )
        try:
            writer.write(codec.encode_op(codec.Op.WRITE_BLOCK, op))
            await asyncio.wait_for(writer.drain(), timeout_s)
            resp = await asyncio.wait_for(
                tio.read_response(reader, "WRITE_BLOCK answer"), timeout_s
            )
        except (OSError, TimeoutError, codec.DataTransferError) as exc:
            await close_writer(writer)
            raise BlockWriteError(
                f"pipeline setup with {tio.xfer_name(targets[0])} failed: {exc}",
                bad_node_index=0,
                first_bad_link=tio.xfer_name(targets[0]),
            ) from None
        if resp.status != dt.SUCCESS:
            await close_writer(writer)
            names = [tio.xfer_name(t) for t in targets]
            bad = names.index(resp.firstBadLink) if resp.firstBadLink in names else 0
            raise BlockWriteError(
                f"pipeline setup failed: {codec.status_name(resp.status)}"
                + (f", first bad link {resp.firstBadLink}" if resp.firstBadLink else "")
                + (f": {resp.message}" if resp.message else ""),
                status=resp.status,
                bad_node_index=bad,
                first_bad_link=resp.firstBadLink,
            )
        return cls(
            reader,
            writer,
            targets,
            block,
            offset=offset,
            bytes_per_checksum=bytes_per_checksum,
            timeout_s=timeout_s,
            packet_data_bytes=packet_data_bytes,
        )

    @property
    def offset(self) -> int:
        """The block offset of the next byte to send."""
        return self._offset

    async def _read_acks(self) -> None:
        try:
            while True:
                ack = await tio.read_ack(self._reader)
                if ack.seqno == codec.HEARTBEAT_SEQNO:
                    continue
                async with self._changed:
                    if not self._in_flight or self._in_flight[0].seqno != ack.seqno:
                        expected = self._in_flight[0].seqno if self._in_flight else None
                        raise codec.MalformedTransferError(
                            f"ack for seqno {ack.seqno}, expected {expected}"
                        )
                    packet = self._in_flight.popleft()
                    bad = ack.first_bad
                    if bad is not None:
                        name = tio.xfer_name(self.targets[bad]) if bad < len(self.targets) else "?"
                        self._error = BlockWriteError(
                            f"datanode {bad} ({name}) of the pipeline answered "
                            f"{codec.status_name(ack.replies[bad])} for packet {packet.seqno} "
                            f"at offset {packet.offset} of {self.block}",
                            status=ack.replies[bad],
                            bad_node_index=bad,
                            first_bad_link=name,
                        )
                        self._changed.notify_all()
                        return
                    self.bytes_acked = packet.end
                    self._changed.notify_all()
        except (OSError, codec.DataTransferError) as exc:
            async with self._changed:
                if self._error is None:
                    self._error = BlockWriteError(
                        f"pipeline to {tio.xfer_name(self.targets[0])} failed: {exc}",
                        bad_node_index=0,
                        first_bad_link=tio.xfer_name(self.targets[0]),
                    )
                self._changed.notify_all()

    async def _wait(self, ready: collections.abc.Callable[[], bool]) -> None:
        async with self._changed:
            await asyncio.wait_for(
                self._changed.wait_for(lambda: self._error is not None or ready()), self._timeout
            )
            if self._error is not None:
                raise self._error

    async def send_packet(
        self, offset: int, data: bytes, sums: bytes, *, last: bool = False, sync: bool = False
    ) -> int:
        """Send one packet as given (sums not checked) once the window allows; its seqno."""
        await self._wait(lambda: len(self._in_flight) < self._max_in_flight)
        seqno = self._seqno
        self._seqno += 1
        self._in_flight.append(_InFlight(seqno, offset, offset + len(data)))
        self._writer.write(codec.encode_packet(offset, seqno, data, sums, last=last, sync=sync))
        await asyncio.wait_for(self._writer.drain(), self._timeout)
        self._offset = max(self._offset, offset + len(data))
        return seqno

    async def write(self, data: bytes, *, sync: bool = False) -> None:
        """Send data at the current offset in packets ending on chunk boundaries."""
        view = memoryview(data)
        pos = 0
        bpc = self.bytes_per_checksum
        while pos < len(view):
            offset = self._offset
            room = self._per_packet - offset % bpc if offset % bpc else self._per_packet
            chunk = bytes(view[pos : pos + room])
            pos += len(chunk)
            await self.send_packet(
                offset,
                chunk,
                checksum.chunk_sums(chunk, bpc, offset),
                sync=sync and pos == len(view),
            )

    async def flush(self) -> int:
        """Wait until every packet sent is acknowledged by the whole pipeline; bytes acked."""
        await self._wait(lambda: not self._in_flight)
        return self.bytes_acked

    async def close(self) -> ExtendedBlock:
        """Send the last (empty) packet, wait for every ack, close; the written block."""
        try:
            await self.send_packet(self._offset, b"", b"", last=True)
            await self.flush()
        finally:
            await self.abort()
        return ExtendedBlock(
            self.block.pool_id, self.block.block_id, self.block.generation_stamp, self._offset
        )

    async def abort(self) -> None:
        """Drop the connection (the pipeline's nodes see it close)."""
        self._acks.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._acks
        await close_writer(self._writer)


async def write_block(
    targets: Sequence[hdfs_pb2.DatanodeInfoProto],
    block: ExtendedBlock,
    data: bytes,
    *,
    client_name: str = "qjm-client",
    timeout_s: float = 60.0,
    token: Token | None = None,
    protection: TransferProtection = NO_PROTECTION,
) -> ExtendedBlock:
    """Write a whole new block through the pipeline of targets; the finalized block."""
    pipeline = await PipelineWriter.open(
        targets,
        block,
        client_name=client_name,
        timeout_s=timeout_s,
        token=token,
        protection=protection,
    )
    try:
        await pipeline.write(data)
    except BaseException:
        await pipeline.abort()
        raise
    return await pipeline.close()


async def read_block(
    node: hdfs_pb2.DatanodeInfoProto,
    block: ExtendedBlock,
    offset: int,
    length: int,
    *,
    client_name: str = "qjm-client",
    verify: bool = True,
    timeout_s: float = 60.0,
    token: Token | None = None,
    protection: TransferProtection = NO_PROTECTION,
) -> bytes:
    """length bytes of block from offset, read from node with their sums verified."""
    reader, writer = await connect(node, timeout_s, protection=protection, token=token)
    try:
        op = dt.OpReadBlockProto(
            header=client_header(block, client_name, token),
            offset=offset,
            len=length,
            sendChecksums=verify,
        )
        writer.write(codec.encode_op(codec.Op.READ_BLOCK, op))
        await asyncio.wait_for(writer.drain(), timeout_s)
        resp = await asyncio.wait_for(tio.read_response(reader, "READ_BLOCK answer"), timeout_s)
        if resp.status != dt.SUCCESS:
            raise BlockReadError(
                f"{tio.xfer_name(node)} refused to read {block}: "
                f"{codec.status_name(resp.status)} {resp.message}".rstrip()
            )
        info = resp.readOpChecksumInfo
        bpc = info.checksum.bytesPerChecksum or codec.BYTES_PER_CHECKSUM
        chunk_offset = info.chunkOffset
        if chunk_offset > offset or offset - chunk_offset >= max(bpc, 1):
            raise BlockReadError(f"read of {block} starts at {chunk_offset}, asked {offset}")
        checked = verify and info.checksum.type == hdfs_pb2.CHECKSUM_CRC32C
        parts: list[bytes] = []
        expect = chunk_offset
        while True:
            packet, _ = await asyncio.wait_for(tio.read_packet(reader), timeout_s)
            header = packet.header
            if header.offset_in_block != expect:
                raise BlockReadError(
                    f"packet of {block} at offset {header.offset_in_block}, expected {expect}"
                )
            if checked and packet.data:
                try:
                    bad = checksum.first_bad_chunk(packet.data, packet.sums, bpc, expect)
                except checksum.ChecksumError as exc:
                    raise BlockReadError(f"{block} from {tio.xfer_name(node)}: {exc}") from None
                if bad is not None:
                    raise BlockReadError(
                        f"checksum error in {block} at offset {bad} from {tio.xfer_name(node)}"
                    )
            parts.append(packet.data)
            expect += len(packet.data)
            if header.last_packet_in_block:
                break
        status = dt.CHECKSUM_OK if checked else dt.SUCCESS
        writer.write(codec.delimited(dt.ClientReadStatusProto(status=status)))
        await asyncio.wait_for(writer.drain(), timeout_s)
    finally:
        await close_writer(writer)
    data = b"".join(parts)
    start = offset - chunk_offset
    if len(data) < start + length:
        raise BlockReadError(
            f"{tio.xfer_name(node)} sent {len(data) - start} bytes of {block} from {offset}, "
            f"asked {length}"
        )
    return data[start : start + length]


async def block_checksum(
    node: hdfs_pb2.DatanodeInfoProto,
    block: ExtendedBlock,
    *,
    timeout_s: float = 60.0,
    token: Token | None = None,
    protection: TransferProtection = NO_PROTECTION,
) -> dt.OpBlockChecksumResponseProto:
    """The DataNode's MD5-of-CRC32C checksum of its replica of block."""
    reader, writer = await connect(node, timeout_s, protection=protection, token=token)
    try:
        op = dt.OpBlockChecksumProto(header=base_header(block, token))
        writer.write(codec.encode_op(codec.Op.BLOCK_CHECKSUM, op))
        await asyncio.wait_for(writer.drain(), timeout_s)
        resp = await asyncio.wait_for(tio.read_response(reader, "BLOCK_CHECKSUM answer"), timeout_s)
    finally:
        await close_writer(writer)
    if resp.status != dt.SUCCESS:
        raise BlockReadError(
            f"{tio.xfer_name(node)} refused the checksum of {block}: "
            f"{codec.status_name(resp.status)} {resp.message}".rstrip()
        )
    return resp.checksumResponse


async def transfer_block(
    node: hdfs_pb2.DatanodeInfoProto,
    block: ExtendedBlock,
    targets: Sequence[hdfs_pb2.DatanodeInfoProto],
    *,
    client_name: str = "qjm-client",
    timeout_s: float = 60.0,
    token: Token | None = None,
    protection: TransferProtection = NO_PROTECTION,
) -> None:
    """Ask node to copy its replica of block to targets (TRANSFER_BLOCK)."""
    reader, writer = await connect(node, timeout_s, protection=protection, token=token)
    try:
        op = dt.OpTransferBlockProto(
            header=client_header(block, client_name, token),
            targets=list(targets),
            targetStorageTypes=[hdfs_pb2.DISK] * len(targets),
        )
        writer.write(codec.encode_op(codec.Op.TRANSFER_BLOCK, op))
        await asyncio.wait_for(writer.drain(), timeout_s)
        resp = await asyncio.wait_for(tio.read_response(reader, "TRANSFER_BLOCK answer"), timeout_s)
    finally:
        await close_writer(writer)
    if resp.status != dt.SUCCESS:
        raise BlockWriteError(
            f"{tio.xfer_name(node)} failed to transfer {block}: "
            f"{codec.status_name(resp.status)} {resp.message}".rstrip(),
            status=resp.status,
        )


async def send_replica(
    target: hdfs_pb2.DatanodeInfoProto,
    replica: ReplicaReader,
    *,
    client_name: str,
    timeout_s: float = 60.0,
    token: Token | None = None,
    protection: TransferProtection = NO_PROTECTION,
) -> None:
    """Copy an open replica to target (HDFS's DataTransfer): WRITE_BLOCK with a TRANSFER
    stage and the WRITE token the sender signed, the packets, and the target's close ack
    when a client asked for it. With protection the handshake uses that token (§S.12)."""
    block = replica.block
    length = replica.visible_length
    stage = Stage.TRANSFER_FINALIZED if replica.finalized else Stage.TRANSFER_RBW
    reader, writer = await connect(target, timeout_s, protection=protection, token=token)
    try:
        op = write_block_op(
            ExtendedBlock(block.pool_id, block.block_id, block.generation_stamp, length),
            [],
            client_name=client_name,
            stage=stage,
            pipeline_size=1,
            latest_generation_stamp=block.generation_stamp,
            min_bytes=length,
            max_bytes=length,
            bytes_per_checksum=replica.bytes_per_checksum,
            token=token,
        )
        writer.write(codec.encode_op(codec.Op.WRITE_BLOCK, op))
        await send_range(writer, replica, 0, length, timeout_s=timeout_s)
        if client_name:
            ack = await asyncio.wait_for(
                tio.read_message(reader, dt.DNTransferAckProto, codec.MAX_ACK_PROTO, "close ack"),
                timeout_s,
            )
            if ack.status != dt.SUCCESS:
                raise BlockWriteError(
                    f"{tio.xfer_name(target)} answered {codec.status_name(ack.status)} to the "
                    f"transfer of {block}",
                    status=ack.status,
                )
    finally:
        await close_writer(writer)
