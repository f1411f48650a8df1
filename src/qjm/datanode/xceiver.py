"""The DataNode's DataTransferProtocol server: HDFS's DataXceiverServer and DataXceiver.

One asyncio task per connection serves ops until the peer closes or idles (design §B.3):
WRITE_BLOCK with its pipeline (BlockReceiver and PacketResponder, design §B.4),
READ_BLOCK, BLOCK_CHECKSUM and TRANSFER_BLOCK. Every read from a peer has a deadline and a
bounded length, and the server holds at most max_connections connections. With block
tokens on, every op's token is checked before anything is opened (design §S.9).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from qjm.datanode import sasl_streams
from qjm.datanode import transfer_client as tc
from qjm.datanode import transfer_io as tio
from qjm.datanode.block_keys import BlockPoolKeys
from qjm.datanode.block_sender import send_range
from qjm.datanode.replica_store import (
    ExtendedBlock,
    ReplicaAlreadyExistsError,
    ReplicaError,
    ReplicaReader,
    ReplicaStore,
    ReplicaWriter,
)
from qjm.datanode.write_behind import WriteBehind
from qjm.errors import describe_error
from qjm.hdfs import checksum
from qjm.hdfs import datatransfer as codec
from qjm.hdfs.datanode_protocol import token_from_proto
from qjm.hdfs.proto import datatransfer_pb2 as dt
from qjm.hdfs.proto import hdfs_pb2
from qjm.hdfs.transfer_sasl import NO_PROTECTION, TransferProtection
from qjm.security.block_token import AccessMode, InvalidBlockTokenError, Token

log = logging.getLogger(__name__)

Stage = dt.OpWriteBlockProto.BlockConstructionStage
_TRANSFER_STAGES = (Stage.TRANSFER_RBW, Stage.TRANSFER_FINALIZED)
MAX_BYTES_PER_CHECKSUM = 1024 * 1024
# the access each op needs (HDFS's DataXceiver.checkAccess calls)
OP_MODES = {
    codec.Op.READ_BLOCK: AccessMode.READ,
    codec.Op.BLOCK_CHECKSUM: AccessMode.READ,
    codec.Op.WRITE_BLOCK: AccessMode.WRITE,
    codec.Op.TRANSFER_BLOCK: AccessMode.COPY,
    codec.Op.COPY_BLOCK: AccessMode.COPY,
    codec.Op.REPLACE_BLOCK: AccessMode.REPLACE,
}


@dataclass(frozen=True)
class XceiverLimits:
    """Bounds on each connection (design §B.3)."""

    max_connections: int = 4096  # Hadoop's dfs.datanode.max.transfer.threads
    idle_timeout_s: float = 60.0  # a read from a peer waits at most this long
    keepalive_s: float = 4.0  # for the next op on a connection (dfs.datanode.socket...)
    max_packet_payload: int = codec.MAX_PACKET_PAYLOAD
    ack_timeout_s: float = 60.0  # a downstream node's ack
    # a block's bytes received and not yet handed to the disk (design §B.4)
    write_behind_bytes: int = 4 * 1024 * 1024
    # bytes a connection buffers before reading from, or writing to, its peer waits
    stream_buffer_bytes: int = 1024 * 1024


BlockReceivedHook = Callable[[ExtendedBlock], None]


@dataclass
class XceiverMetrics:
    """Counters the DataNode exposes on /metrics."""

    connections_refused: int = 0
    blocks_written: int = 0
    blocks_read: int = 0
    bytes_written: int = 0
    bytes_read: int = 0
    checksum_errors: int = 0
    bad_requests: int = 0
    token_refusals: int = 0  # ops refused ERROR_ACCESS_TOKEN (design §S.9)
    sasl_refusals: int = 0  # connections refused at the SASL handshake (design §S.12)
    aes_connections: int = 0  # connections whose stream switched to AES-CTR (design §S.12)
    ops: dict[str, int] = field(default_factory=dict)


class _RequestError(Exception):
    """An op refused with a status and a message sent to the peer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class DataXceiverServer:
    """Accepts data transfer connections and serves each in its own task."""

    def __init__(
        self,
        store: ReplicaStore,
        *,
        limits: XceiverLimits | None = None,
        on_block_received: BlockReceivedHook | None = None,
        name: str = "datanode",
        keys: BlockPoolKeys | None = None,
        protection: TransferProtection = NO_PROTECTION,
    ) -> None:
        self.store = store
        self.keys = keys  # None: block tokens off, nothing checked (design §S.9)
        # SASL layers of dfs.data.transfer.protection; 0: none, no handshake (design §S.12)
        self.protection = protection
        if protection and keys is None:
            raise ValueError("SASL on data transfer needs block tokens (design §S.12)")
        self.limits = limits or XceiverLimits()
        self.on_block_received = on_block_received
        self.name = name
        self.metrics = XceiverMetrics()
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._port = 0

    @property
    def port(self) -> int:
        """The bound port."""
        return self._port

    @property
    def active_connections(self) -> int:
        """Connections being served (HDFS's xceiver count)."""
        return len(self._connections)

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        """Listen on host:port (0 picks a free port)."""
        self._server = await asyncio.start_server(
            self._serve, host, port, limit=self.limits.stream_buffer_bytes
        )
        self._port = int(self._server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        """Stop listening and drop every connection at once (as a killed DataNode would)."""
        if self._server is not None:
            self._server.close()
        for writer in list(self._connections):
            writer.transport.abort()
        if self._tasks:  # each ends on its closed connection; any still waiting is cancelled
            _, pending = await asyncio.wait(list(self._tasks), timeout=5)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=5)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    # --- one connection ------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        if len(self._connections) >= self.limits.max_connections:
            self.metrics.connections_refused += 1
            writer.write(
                codec.delimited(
                    codec.response(
                        dt.ERROR,
                        f"{self.name} serves at most {self.limits.max_connections} "
                        "data transfer connections",
                    )
                )
            )
            await tc.close_writer(writer)
            return
        self._connections.add(writer)
        self._tasks.add(task)
        writer.transport.set_write_buffer_limits(high=self.limits.stream_buffer_bytes)
        peer = writer.get_extra_info("peername")
        raw_writer = writer
        try:
            if self.protection:
                assert self.keys is not None
                try:
                    reader, writer = await asyncio.wait_for(
                        sasl_streams.server_handshake(
                            reader, writer, self.keys.password, self.protection
                        ),
                        self.limits.idle_timeout_s,
                    )
                    if isinstance(writer, sasl_streams.AesStreamWriter):
                        self.metrics.aes_connections += 1
                except sasl_streams.SaslTransferError as exc:
                    self.metrics.sasl_refusals += 1
                    log.warning(
                        "%s: failed to complete the SASL data transfer handshake with %s: %s",
                        self.name,
                        peer,
                        exc,
                    )
                    return
            first = True
            while True:
                timeout_s = self.limits.idle_timeout_s if first else self.limits.keepalive_s
                try:
                    op, body = await asyncio.wait_for(tio.read_op(reader), timeout_s)
                except tio.ConnectionClosedError:
                    return  # the peer is done (between ops)
                first = False
                self.metrics.ops[op.name] = self.metrics.ops.get(op.name, 0) + 1
                if not await self._dispatch(op, body, reader, writer):
                    return
        except TimeoutError:
            log.info("%s: data transfer peer %s idle past its deadline; closing", self.name, peer)
        except codec.MalformedTransferError as exc:
            self.metrics.bad_requests += 1
            log.warning("%s: malformed data transfer from %s: %s", self.name, peer, exc)
            with contextlib.suppress(OSError):
                writer.write(codec.delimited(codec.response(dt.ERROR_INVALID, str(exc))))
        except (OSError, codec.DataTransferError) as exc:
            log.info("%s: data transfer with %s ended: %s", self.name, peer, describe_error(exc))
        except asyncio.CancelledError:
            pass  # stop(): the connection's task ends here
        except Exception:
            log.exception("%s: data transfer with %s failed", self.name, peer)
        finally:
            self._connections.discard(raw_writer)
            self._tasks.discard(task)
            await tc.close_writer(writer)

    async def _dispatch(
        self, op: codec.Op, body: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        """Serve one op; whether the connection may carry another."""
        cls = codec.OP_MESSAGES.get(op)
        if cls is None or op in (codec.Op.REPLACE_BLOCK, codec.Op.COPY_BLOCK):
            await self._reply(writer, dt.ERROR_UNSUPPORTED, f"{op.name} is not served by qjm")
            return False
        message = codec.parse_message(cls, body, f"{op.name} request")
        if not await self._check_token(op, message, writer):
            return False
        try:
            if op == codec.Op.READ_BLOCK:
                assert isinstance(message, dt.OpReadBlockProto)
                return await self._read_block(message, reader, writer)
            if op == codec.Op.WRITE_BLOCK:
                assert isinstance(message, dt.OpWriteBlockProto)
                await self._write_block(message, reader, writer)
                return False
            if op == codec.Op.BLOCK_CHECKSUM:
                assert isinstance(message, dt.OpBlockChecksumProto)
                await self._block_checksum(message, writer)
                return True
            assert isinstance(message, dt.OpTransferBlockProto)
            await self._transfer_block(message, writer)
            return False
        except _RequestError as exc:
            log.info("%s: %s refused: %s", self.name, op.name, exc)
            await self._reply(writer, exc.status, str(exc))
            return False

    async def _check_token(
        self, op: codec.Op, message: object, writer: asyncio.StreamWriter
    ) -> bool:
        """Whether the op's block token grants its access (always, with tokens off); a
        refusal is answered ERROR_ACCESS_TOKEN, as HDFS's DataXceiver.checkAccess: a write
        names this node as the first bad link, a DataNode's write gets no answer."""
        if self.keys is None:
            return True
        mode = OP_MODES[op]
        if isinstance(message, dt.OpBlockChecksumProto):
            base = message.header
        else:
            assert isinstance(
                message, dt.OpReadBlockProto | dt.OpWriteBlockProto | dt.OpTransferBlockProto
            )
            base = message.header.baseHeader
        block = tc.block_from_proto(base.block)
        t = base.token
        try:
            self.keys.check(
                Token(t.identifier, t.password, t.kind, t.service),
                block.pool_id,
                block.block_id,
                str(block),
                mode,
            )
            return True
        except InvalidBlockTokenError as exc:
            self.metrics.token_refusals += 1
            peer = writer.get_extra_info("peername")
            log.warning(
                "%s: block token verification failed: op=%s, remoteAddress=%s, message=%s",
                self.name,
                op.name,
                peer,
                exc,
            )
            if isinstance(message, dt.OpWriteBlockProto) and not message.header.clientName:
                return False
            first_bad = ""
            if mode == AccessMode.WRITE:
                host, port = writer.get_extra_info("sockname")[:2]
                first_bad = f"{host}:{port}"
            await self._reply(writer, dt.ERROR_ACCESS_TOKEN, str(exc), first_bad)
            return False

    def dn_token(self, block: ExtendedBlock, mode: AccessMode) -> Token | None:
        """A token this DataNode signs for its own copy to another (None: tokens off)."""
        if self.keys is None:
            return None
        return self.keys.token(block.pool_id, block.block_id, (mode,))

    async def _reply(
        self, writer: asyncio.StreamWriter, status: int, message: str = "", first_bad_link: str = ""
    ) -> None:
        proto = codec.response(status, message, first_bad_link)
        writer.write(codec.delimited(proto))
        await asyncio.wait_for(writer.drain(), self.limits.idle_timeout_s)

    # --- READ_BLOCK ----------------------------------------------------------------------

    async def _open_reader(self, block: ExtendedBlock) -> ReplicaReader:
        try:
            return await self.store.open_reader(block)
        except ReplicaError as exc:
            raise _RequestError(dt.ERROR, str(exc)) from None

    async def _read_block(
        self, op: dt.OpReadBlockProto, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        block = tc.block_from_proto(op.header.baseHeader.block)
        replica = await self._open_reader(block)
        try:
            visible = replica.visible_length
            offset, length = op.offset, op.len
            if offset > visible or length > visible - offset:
                raise _RequestError(
                    dt.ERROR,
                    f"offset {offset} and length {length} do not match {block} "
                    f"(visible length {visible})",
                )
            bpc = replica.bytes_per_checksum
            start = offset - offset % bpc
            end = offset + length
            if op.sendChecksums and end % bpc and end + (bpc - end % bpc) <= visible:
                end += bpc - end % bpc  # whole chunks, so the reader can check the last one
            resp = codec.response(dt.SUCCESS)
            info = resp.readOpChecksumInfo
            kind = replica.checksum_type if op.sendChecksums else hdfs_pb2.CHECKSUM_NULL
            info.checksum.type = kind  # type: ignore[assignment]
            info.checksum.bytesPerChecksum = bpc
            resp.readOpChecksumInfo.chunkOffset = start
            writer.write(codec.delimited(resp))
            sent = await send_range(
                writer,
                replica,
                start,
                end,
                send_sums=op.sendChecksums,
                timeout_s=self.limits.idle_timeout_s,
            )
        finally:
            await replica.close()
        self.metrics.blocks_read += 1
        self.metrics.bytes_read += sent
        # The reader says CHECKSUM_OK (or SUCCESS) and may send another op on this connection.
        status = await asyncio.wait_for(
            tio.read_message(reader, dt.ClientReadStatusProto, codec.MAX_ACK_PROTO, "read status"),
            self.limits.idle_timeout_s,
        )
        if status.status not in (dt.CHECKSUM_OK, dt.SUCCESS):
            log.warning(
                "%s: reader of %s answered %s", self.name, block, codec.status_name(status.status)
            )
        return True

    # --- BLOCK_CHECKSUM ------------------------------------------------------------------

    async def _block_checksum(
        self, op: dt.OpBlockChecksumProto, writer: asyncio.StreamWriter
    ) -> None:
        block = tc.block_from_proto(op.header.block)
        options = op.blockChecksumOptions
        if op.HasField("blockChecksumOptions") and options.blockChecksumType != dt.MD5CRC:
            raise _RequestError(dt.ERROR_UNSUPPORTED, "only the MD5CRC block checksum is served")
        replica = await self._open_reader(block)
        try:
            visible = replica.visible_length
            requested = block.num_bytes if 0 < block.num_bytes <= visible else visible
            bpc = replica.bytes_per_checksum
            whole, tail = divmod(requested, bpc)
            sums = await replica.read_sums(0, whole) if whole else b""
            if tail:
                sums += checksum.chunk_sums(await replica.read_data(whole * bpc, tail), bpc)
            checksum_type = replica.checksum_type
        finally:
            await replica.close()
        resp = codec.response(dt.SUCCESS)
        cr = resp.checksumResponse
        cr.bytesPerCrc = bpc
        cr.crcPerBlock = len(sums) // codec.CHECKSUM_SIZE
        cr.blockChecksum = block_md5(sums)
        cr.crcType = checksum_type  # type: ignore[assignment]
        cr.blockChecksumOptions.blockChecksumType = dt.MD5CRC
        writer.write(codec.delimited(resp))
        await asyncio.wait_for(writer.drain(), self.limits.idle_timeout_s)

    # --- TRANSFER_BLOCK ------------------------------------------------------------------

    async def _transfer_block(
        self, op: dt.OpTransferBlockProto, writer: asyncio.StreamWriter
    ) -> None:
        block = tc.block_from_proto(op.header.baseHeader.block)
        if not op.targets:
            raise _RequestError(dt.ERROR_INVALID, f"TRANSFER_BLOCK of {block} names no target")
        for target in op.targets:  # one at a time (design §B.4)
            replica = await self._open_reader(block)
            try:
                await tc.send_replica(
                    target,
                    replica,
                    client_name=op.header.clientName,
                    timeout_s=self.limits.idle_timeout_s,
                    token=self.dn_token(block, AccessMode.WRITE),
                    protection=self.protection,
                )
            except (OSError, TimeoutError, codec.DataTransferError) as exc:
                raise _RequestError(
                    dt.ERROR,
                    f"transfer of {block} to {tio.xfer_name(target)} failed: {describe_error(exc)}",
                ) from None
            finally:
                await replica.close()
        await self._reply(writer, dt.SUCCESS)

    # --- WRITE_BLOCK ---------------------------------------------------------------------

    async def _open_writer(self, op: dt.OpWriteBlockProto, block: ExtendedBlock) -> ReplicaWriter:
        stage = op.stage
        bpc = op.requestedChecksum.bytesPerChecksum
        gs = op.latestGenerationStamp
        try:
            if stage == Stage.PIPELINE_SETUP_CREATE:
                return await self.store.create_rbw(block, bpc)
            if stage in _TRANSFER_STAGES:
                return await self.store.create_temporary(block, bpc)
            if stage == Stage.PIPELINE_SETUP_APPEND:
                # the replica's length is minBytesRcvd: Hadoop's client puts the file's
                # block size in the header block's numBytes (design §B.4)
                return await self.store.append(block, gs, op.minBytesRcvd)
            if stage in (
                Stage.PIPELINE_SETUP_STREAMING_RECOVERY,
                Stage.PIPELINE_SETUP_APPEND_RECOVERY,
            ):
                return await self.store.recover_rbw(block, gs, op.minBytesRcvd, op.maxBytesRcvd)
        except ReplicaAlreadyExistsError as exc:
            raise _RequestError(dt.ERROR_EXISTS, str(exc)) from None
        except ReplicaError as exc:
            raise _RequestError(dt.ERROR, str(exc)) from None
        raise _RequestError(
            dt.ERROR_INVALID, f"WRITE_BLOCK stage {Stage.Name(stage)} is not a setup stage"
        )

    async def _write_block(
        self, op: dt.OpWriteBlockProto, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        block = tc.block_from_proto(op.header.baseHeader.block)
        is_client = bool(op.header.clientName)
        is_transfer = op.stage in _TRANSFER_STAGES
        with_acks = is_client and not is_transfer
        checksum = op.requestedChecksum
        if checksum.type != hdfs_pb2.CHECKSUM_CRC32C:
            raise _RequestError(
                dt.ERROR_UNSUPPORTED,
                f"checksum type {hdfs_pb2.ChecksumTypeProto.Name(checksum.type)} is not served; "
                "use CRC32C",
            )
        if not 0 < checksum.bytesPerChecksum <= MAX_BYTES_PER_CHECKSUM:
            raise _RequestError(
                dt.ERROR_INVALID,
                f"bytesPerChecksum {checksum.bytesPerChecksum} is outside "
                f"1..{MAX_BYTES_PER_CHECKSUM}",
            )
        if op.targets and not with_acks:
            raise _RequestError(
                dt.ERROR_UNSUPPORTED,
                "a transfer or DataNode write with downstream targets is not served; "
                "send to each target",
            )
        if op.stage == Stage.PIPELINE_CLOSE_RECOVERY:
            await self._close_recovery(op, block, writer)
            return
        replica = await self._open_writer(op, block)
        mirror: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        kept = False  # a transfer's copy is kept once received whole
        try:
            if op.targets:
                mirror = await self._connect_mirror(op, writer)
                if mirror is None:
                    return
            if with_acks:
                await self._reply(writer, dt.SUCCESS)
            receiver = _BlockReceiver(self, op, replica, reader, writer, mirror, with_acks)
            done = await receiver.run()
            if done and not with_acks:
                if op.stage == Stage.TRANSFER_RBW:
                    await replica.to_rbw()  # the client's recovery takes it over
                else:
                    await self._finalized(replica)
                kept = True
                if is_transfer:
                    await self._reply(writer, dt.SUCCESS)
        finally:
            if is_transfer and not kept:
                await replica.discard()  # a failed transfer's copy must not block the next
            else:
                await replica.close()
            if mirror is not None:
                await tc.close_writer(mirror[1])

    async def _finalized(self, replica: ReplicaWriter) -> ExtendedBlock:
        block = await replica.finalize()
        self.metrics.blocks_written += 1
        log.info("%s: received %s (%d bytes)", self.name, block, block.num_bytes)
        if self.on_block_received is not None:
            self.on_block_received(block)
        return block

    async def _close_recovery(
        self, op: dt.OpWriteBlockProto, block: ExtendedBlock, writer: asyncio.StreamWriter
    ) -> None:
        try:
            done = await self.store.recover_close(block, op.latestGenerationStamp, op.minBytesRcvd)
        except ReplicaError as exc:
            raise _RequestError(dt.ERROR, str(exc)) from None
        if op.targets:
            mirror = await self._connect_mirror(op, writer)
            if mirror is None:
                return
            await tc.close_writer(mirror[1])
        self.metrics.blocks_written += 1
        if self.on_block_received is not None:
            self.on_block_received(done)
        await self._reply(writer, dt.SUCCESS)

    async def _connect_mirror(
        self, op: dt.OpWriteBlockProto, writer: asyncio.StreamWriter
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        """The connection to the next node, set up; None after answering the error upstream."""
        target = op.targets[0]
        name = tio.xfer_name(target)
        timeout_s = self.limits.idle_timeout_s
        mirror_op = dt.OpWriteBlockProto()
        mirror_op.CopyFrom(op)
        del mirror_op.targets[:]
        mirror_op.targets.extend(op.targets[1:])
        del mirror_op.targetStorageTypes[:]
        mirror_op.targetStorageTypes.extend(op.targetStorageTypes[1:])
        del mirror_op.targetStorageIds[:]
        mirror_op.targetStorageIds.extend(op.targetStorageIds[1:])
        try:
            # the mirror's handshake uses the client's token, as HDFS's DataXceiver
            mreader, mwriter = await tc.connect(
                target,
                timeout_s,
                protection=self.protection,
                token=token_from_proto(op.header.baseHeader.token),
            )
            mwriter.transport.set_write_buffer_limits(high=self.limits.stream_buffer_bytes)
        except (OSError, TimeoutError, codec.DataTransferError) as exc:
            await self._reply(
                writer,
                dt.ERROR,
                f"cannot connect to {name}: {describe_error(exc)}",
                first_bad_link=name,
            )
            return None
        try:
            mwriter.write(codec.encode_op(codec.Op.WRITE_BLOCK, mirror_op))
            await asyncio.wait_for(mwriter.drain(), timeout_s)
            resp = await asyncio.wait_for(tio.read_response(mreader, "mirror's answer"), timeout_s)
        except (OSError, TimeoutError, codec.DataTransferError) as exc:
            await tc.close_writer(mwriter)
            await self._reply(
                writer, dt.ERROR, f"{name} failed: {describe_error(exc)}", first_bad_link=name
            )
            return None
        if resp.status != dt.SUCCESS:
            await tc.close_writer(mwriter)
            await self._reply(
                writer, resp.status, resp.message, first_bad_link=resp.firstBadLink or name
            )
            return None
        return mreader, mwriter


@dataclass
class _Pending:
    seqno: int
    last: bool
    end: int
    status: int


class _BlockReceiver:
    """Receives one block's packets, mirrors them downstream and acks upstream (design §B.4).

    Each packet is checked, forwarded, then queued to the write-behind (or, when it does not
    continue the queued bytes on a chunk boundary, written directly once the queue is
    empty); the responder acks it once the next node acked it and the replica holds it.
    Deadlines are asyncio.timeout scopes, and a write to a peer waits only when the
    connection's buffer is full, so a packet costs no task of its own.
    """

    def __init__(
        self,
        server: DataXceiverServer,
        op: dt.OpWriteBlockProto,
        replica: ReplicaWriter,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        mirror: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None,
        with_acks: bool,
    ) -> None:
        self.server = server
        self.limits = server.limits
        self.block = tc.block_from_proto(op.header.baseHeader.block)
        self.replica = replica
        self.bpc = replica.bytes_per_checksum
        self.reader = reader
        self.writer = writer
        self.mirror = mirror
        self.mirror_error = False
        self.with_acks = with_acks
        self.queue: asyncio.Queue[_Pending | None] = asyncio.Queue()
        self.acks: list[bytes] = []  # encoded acks not yet sent upstream
        self.finalized = False
        self.disk = WriteBehind(replica, self.limits.write_behind_bytes)

    async def run(self) -> bool:
        """Receive until the last packet; whether the whole block arrived intact."""
        try:
            return await self._run()
        finally:
            await self.disk.close()

    async def _run(self) -> bool:
        responder = asyncio.create_task(self._respond()) if self.with_acks else None
        try:
            ok = await self._receive()
        except BaseException:
            if responder is not None:
                responder.cancel()
                with contextlib.suppress(BaseException):
                    await responder
            raise
        if responder is None:
            if ok:
                await self.disk.drain()
            return ok
        self.queue.put_nowait(None)
        if ok:
            return await responder
        # A checksum error: let the responder send its ERROR_CHECKSUM ack, then close.
        with contextlib.suppress(Exception):
            await asyncio.wait_for(responder, self.limits.ack_timeout_s)
        responder.cancel()
        return False

    async def _receive(self) -> bool:
        max_payload = self.limits.max_packet_payload
        while True:
            async with asyncio.timeout(self.limits.idle_timeout_s):
                header, head, body = await tio.read_packet_frame(self.reader, max_payload)
            status = dt.SUCCESS
            view = memoryview(body)
            sums, data = view[: header.sums_len], view[header.sums_len :]
            if data:
                try:
                    bad = self._first_bad_chunk(data, sums, header.offset_in_block)
                except checksum.ChecksumError as exc:
                    raise codec.MalformedTransferError(f"{self.block}: {exc}") from None
                if bad is not None:
                    self.server.metrics.checksum_errors += 1
                    log.warning(
                        "%s: checksum error in %s at offset %d (packet %d); nothing more is "
                        "accepted for this block",
                        self.server.name,
                        self.block,
                        bad,
                        header.seqno,
                    )
                    self.queue.put_nowait(
                        _Pending(
                            header.seqno,
                            False,
                            header.offset_in_block + len(data),
                            dt.ERROR_CHECKSUM,
                        )
                    )
                    return False
            await self._mirror(head, body)
            if data:
                await self._store(header.offset_in_block, data, sums)
            if header.sync_block:
                await self.disk.drain()
                await self.replica.flush(sync=True)
            if not self.with_acks and header.last_packet_in_block:
                return True
            self.queue.put_nowait(
                _Pending(header.seqno, header.last_packet_in_block, self.disk.end, status)
            )
            if header.last_packet_in_block:
                return True

    def _first_bad_chunk(self, data: memoryview, sums: memoryview, offset: int) -> int | None:
        """The offset of a packet's first chunk that fails its sum, or None (design §B.4).

        The last node of the pipeline checks chunk by chunk, as HDFS's last node does; a node
        with a mirror checks all chunks at once first (HDFS's nodes with a mirror check none).
        """
        mirrored = self.mirror is not None and not self.mirror_error
        if mirrored and checksum.sums_agree(data, sums, self.bpc, offset):
            return None
        return checksum.first_bad_chunk(data, sums, self.bpc, offset)

    async def _mirror(self, head: bytes, body: memoryview) -> None:
        if self.mirror is None or self.mirror_error:
            return
        out = self.mirror[1]
        try:
            if out.transport.is_closing():  # the next node went away: writing would raise
                raise ConnectionResetError("the connection to the next node is closed")
            out.writelines((head, body))  # one send for both
            if out.transport.get_write_buffer_size() > self.limits.stream_buffer_bytes:
                async with asyncio.timeout(self.limits.ack_timeout_s):
                    await out.drain()
        except (OSError, TimeoutError, RuntimeError) as exc:
            # RuntimeError: uvloop's answer to a write on a transport closed meanwhile
            log.info(
                "%s: mirror of %s failed: %s", self.server.name, self.block, describe_error(exc)
            )
            self.mirror_error = True

    async def _store(self, offset: int, data: memoryview, sums: memoryview) -> None:
        """Queue a packet that continues the block on a chunk boundary (its sums were
        checked); any other packet is written here, chunk-aligned, once the queue is empty:
        bytes already on disk skipped, a partial last chunk extended and its sum recomputed."""
        if self.disk.can_queue(offset):
            await self.disk.put(offset, data, sums)
            self.server.metrics.bytes_written += len(data)
            return
        await self.disk.drain()
        on_disk = self.replica.bytes_on_disk
        if offset > on_disk:
            raise codec.MalformedTransferError(
                f"packet at offset {offset} of {self.block} leaves a gap after {on_disk} bytes"
            )
        skip = on_disk - offset
        if skip >= len(data):
            return  # already written (a packet resent after hflush)
        new = bytes(data[skip:])
        start = on_disk - on_disk % self.bpc
        if start != on_disk:
            new = await self.replica.read(start, on_disk - start) + new
        await self.replica.write(start, new, checksum.chunk_sums(new, self.bpc, start))
        self.disk.resync()
        self.server.metrics.bytes_written += len(data) - skip

    async def _send_ack(self, ack: codec.PipelineAck) -> None:
        """Queue an ack for upstream: the acks made before the responder next waits go in
        one send (design §B.4)."""
        if not self.acks:
            asyncio.get_running_loop().call_soon(self._flush_acks)
        self.acks.append(codec.encode_ack(ack))
        if self.writer.transport.get_write_buffer_size() > self.limits.stream_buffer_bytes:
            self._flush_acks()
            async with asyncio.timeout(self.limits.idle_timeout_s):
                await self.writer.drain()

    def _flush_acks(self) -> None:
        """Send the queued acks upstream in one write."""
        if self.acks and not self.writer.is_closing():
            self.writer.write(b"".join(self.acks))
        self.acks.clear()

    async def _respond(self) -> bool:
        """Send each packet's ack upstream once the downstream acked it and the replica holds
        its bytes (PacketResponder)."""
        try:
            return await self._respond_each()
        finally:
            self._flush_acks()  # what was queued before a failure or cancellation

    async def _respond_each(self) -> bool:
        while True:
            item = await self.queue.get()
            if item is None:
                return False
            downstream: tuple[int, ...] = ()
            if self.mirror is not None and item.status == dt.SUCCESS:
                downstream = await self._downstream_ack(item.seqno)
            await self.disk.wait_written(item.end)
            if item.status == dt.SUCCESS and item.last and not self.finalized:
                await self.server._finalized(self.replica)
                self.finalized = True
            elif item.status == dt.SUCCESS and all(r == dt.SUCCESS for r in downstream):
                self.replica.set_bytes_acked(item.end)
            await self._send_ack(codec.PipelineAck(item.seqno, (item.status, *downstream)))
            if item.last or item.status != dt.SUCCESS:
                self._flush_acks()
                async with asyncio.timeout(self.limits.idle_timeout_s):
                    await self.writer.drain()
                return item.status == dt.SUCCESS

    async def _downstream_ack(self, seqno: int) -> tuple[int, ...]:
        """The downstream nodes' replies for seqno; (ERROR,) when the next node failed."""
        assert self.mirror is not None
        if not self.mirror_error:
            try:
                async with asyncio.timeout(self.limits.ack_timeout_s):
                    ack = await tio.read_ack(self.mirror[0])
                if ack.seqno != seqno:
                    raise codec.MalformedTransferError(
                        f"downstream acked seqno {ack.seqno}, expected {seqno}"
                    )
                return ack.replies
            except (OSError, TimeoutError, codec.DataTransferError) as exc:
                log.info(
                    "%s: downstream of %s failed: %s",
                    self.server.name,
                    self.block,
                    describe_error(exc),
                )
                self.mirror_error = True
        return (dt.ERROR,)  # HDFS: this node fine, the next one bad


def block_md5(sums: bytes) -> bytes:
    """HDFS's per-block checksum (MD5CRC): the MD5 of the chunk CRCs as stored."""
    return hashlib.md5(sums, usedforsecurity=False).digest()
