"""Sending a replica's chunk-aligned range as packets: HDFS's BlockSender (design §B.3).

READ_BLOCK and transfers to other DataNodes use it. The data part of each packet goes by
zero-copy sendfile when the replica is a file and the event loop can, else in one read per
packet; no Python work per byte either way.
"""

from __future__ import annotations

import asyncio
import logging

from qjm.datanode.replica_store import ReplicaReader
from qjm.hdfs import checksum
from qjm.hdfs import datatransfer as codec

log = logging.getLogger(__name__)

PACKET_DATA_BYTES = 64 * 1024  # Hadoop's transferTo buffer: 128 chunks of 512 bytes


def chunks_per_packet(bytes_per_checksum: int, packet_data_bytes: int = PACKET_DATA_BYTES) -> int:
    """How many whole chunks one packet carries."""
    return max(1, packet_data_bytes // bytes_per_checksum)


async def _packet_sums(replica: ReplicaReader, pos: int, n: int) -> bytes:
    """The sums of the chunks of [pos, pos+n); a cut-off last chunk's sum is recomputed.

    A replica being written may hold more bytes than are visible, so its stored sum of a
    partial last chunk can cover bytes this packet leaves out.
    """
    bpc = replica.bytes_per_checksum
    count = -(-n // bpc)
    sums = await replica.read_sums(pos // bpc, count)
    if len(sums) != 4 * count:
        raise codec.DataTransferError(
            f"replica {replica.block} has {len(sums) // 4} checksums from chunk {pos // bpc}, "
            f"needs {count}"
        )
    tail = (pos + n) % bpc
    if tail:
        last_start = pos + n - tail
        partial = await replica.read_data(last_start, tail)
        sums = sums[:-4] + checksum.chunk_sums(partial, bpc, last_start)
    return sums


async def send_range(
    writer: asyncio.StreamWriter,
    replica: ReplicaReader,
    start: int,
    end: int,
    *,
    send_sums: bool = True,
    packet_data_bytes: int = PACKET_DATA_BYTES,
    timeout_s: float = 60.0,
) -> int:
    """Send [start, end) of the replica as packets and the empty last packet; bytes sent.

    start is chunk-aligned; end is at most the visible length.
    """
    bpc = replica.bytes_per_checksum
    if start % bpc:
        raise ValueError(f"send_range start {start} is not a multiple of {bpc}")
    per_packet = chunks_per_packet(bpc, packet_data_bytes) * bpc
    data_file = replica.data_file()
    loop = asyncio.get_running_loop()
    seqno = 0
    pos = start
    while pos < end:
        n = min(end - pos, per_packet)
        sums = await _packet_sums(replica, pos, n) if send_sums else b""
        head = codec.encode_packet_head(pos, seqno, data_len=n, sums_len=len(sums))
        if data_file is not None:
            writer.write(head + sums)
            try:
                sent = await asyncio.wait_for(
                    loop.sendfile(writer.transport, data_file, pos, n), timeout_s
                )
            except NotImplementedError:  # a loop without sendfile: plain reads from now on
                data_file = None
                sent = 0
            if data_file is not None and sent != n:
                raise codec.DataTransferError(
                    f"replica {replica.block} ended at {pos + sent}, expected {pos + n} bytes"
                )
            if data_file is None:
                writer.write(await replica.read_data(pos, n))
        else:
            data = await replica.read_data(pos, n)
            if len(data) != n:
                raise codec.DataTransferError(
                    f"replica {replica.block} gave {len(data)} bytes at {pos}, expected {n}"
                )
            writer.write(head + sums + data)
        await asyncio.wait_for(writer.drain(), timeout_s)
        pos += n
        seqno += 1
    writer.write(codec.encode_packet(end, seqno, b"", b"", last=True))
    await asyncio.wait_for(writer.drain(), timeout_s)
    return end - start
