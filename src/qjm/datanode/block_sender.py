"""Sending a replica's chunk-aligned range as packets: HDFS's BlockSender (design §B.3).

READ_BLOCK and transfers to other DataNodes use it. The data part of each packet goes by
zero-copy sendfile when the replica is a file and the event loop can; else (uvloop, the
DataNode's loop) the data and sums of 16 packets are read in one go, the next 16 read
while these are sent, and the packets are framed from views of them; no Python work per
byte either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from qjm.datanode.replica_store import ReplicaReader
from qjm.datanode.sasl_streams import is_wrapped
from qjm.hdfs import checksum
from qjm.hdfs import datatransfer as codec

log = logging.getLogger(__name__)

PACKET_DATA_BYTES = 64 * 1024  # Hadoop's transferTo buffer: 128 chunks of 512 bytes
READ_AHEAD_BYTES = 1024 * 1024  # read at once without sendfile: 16 packets


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


async def _read_range(replica: ReplicaReader, pos: int, n: int, sums: bool) -> tuple[bytes, bytes]:
    """The data of [pos, pos+n) and, when sums, the sums of its chunks, read at once."""
    if not sums:
        return await replica.read_data(pos, n), b""
    data, got = await asyncio.gather(replica.read_data(pos, n), _packet_sums(replica, pos, n))
    return data, got


async def send_range(
    writer: asyncio.StreamWriter,
    replica: ReplicaReader,
    start: int,
    end: int,
    *,
    send_sums: bool = True,
    packet_data_bytes: int = PACKET_DATA_BYTES,
    timeout_s: float = 60.0,
    read_ahead_bytes: int = READ_AHEAD_BYTES,
) -> int:
    """Send [start, end) of the replica as packets and the empty last packet; bytes sent.

    start is chunk-aligned; end is at most the visible length.
    """
    bpc = replica.bytes_per_checksum
    if start % bpc:
        raise ValueError(f"send_range start {start} is not a multiple of {bpc}")
    per_packet = chunks_per_packet(bpc, packet_data_bytes) * bpc
    # no sendfile through a SASL layer: every byte is wrapped (design §S.12)
    data_file = None if is_wrapped(writer) else replica.data_file()
    loop = asyncio.get_running_loop()
    seqno = 0
    pos = start
    while pos < end and data_file is not None:
        n = min(end - pos, per_packet)
        sums = await _packet_sums(replica, pos, n) if send_sums else b""
        writer.write(codec.encode_packet_head(pos, seqno, data_len=n, sums_len=len(sums)) + sums)
        try:
            sent = await asyncio.wait_for(
                loop.sendfile(writer.transport, data_file, pos, n), timeout_s
            )
        except NotImplementedError:  # a loop without sendfile (uvloop): batched reads
            data_file = None
            data, _ = await _read_range(replica, pos, n, False)
            sent = len(data)
            writer.write(data)
        if sent != n:
            raise codec.DataTransferError(
                f"replica {replica.block} ended at {pos + sent}, expected {pos + n} bytes"
            )
        await asyncio.wait_for(writer.drain(), timeout_s)
        pos += n
        seqno += 1
    if pos < end:
        seqno = await _send_read_ahead(
            writer, replica, pos, end, seqno, send_sums, per_packet, timeout_s, read_ahead_bytes
        )
    writer.write(codec.encode_packet(end, seqno, b"", b"", last=True))
    await asyncio.wait_for(writer.drain(), timeout_s)
    return end - start


async def _send_read_ahead(
    writer: asyncio.StreamWriter,
    replica: ReplicaReader,
    pos: int,
    end: int,
    seqno: int,
    send_sums: bool,
    per_packet: int,
    timeout_s: float,
    read_ahead_bytes: int,
) -> int:
    """Send [pos, end) as packets from reads of many packets at a time, the next read under
    way while one is sent; the next seqno."""
    span = max(1, read_ahead_bytes // per_packet) * per_packet

    def read(at: int) -> asyncio.Task[tuple[bytes, bytes]]:
        return asyncio.ensure_future(_read_range(replica, at, min(end - at, span), send_sums))

    pending = read(pos)
    try:
        while pos < end:
            data, sums = await pending
            n = len(data)
            if n != min(end - pos, span):
                raise codec.DataTransferError(
                    f"replica {replica.block} gave {n} bytes at {pos}, expected "
                    f"{min(end - pos, span)}"
                )
            nxt = pos + n
            if nxt < end:
                pending = read(nxt)
            view, sums_view = memoryview(data), memoryview(sums)
            bpc = replica.bytes_per_checksum
            for off in range(0, n, per_packet):
                k = min(n - off, per_packet)
                s = bytes(sums_view[4 * (off // bpc) : 4 * (-(-(off + k) // bpc))])
                head = codec.encode_packet_head(pos + off, seqno, data_len=k, sums_len=len(s))
                writer.writelines((head, s, view[off : off + k]))  # one send for the packet
                seqno += 1
                if writer.transport.get_write_buffer_size() > span:
                    async with asyncio.timeout(timeout_s):
                        await writer.drain()
            pos = nxt
    finally:
        if not pending.done():
            pending.cancel()
            with contextlib.suppress(BaseException):
                await pending
    return seqno
