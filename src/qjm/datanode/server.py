"""The DataNode daemon: HDFS's DataNode class (design §B.13).

Three listeners on one event loop: the DataTransferProtocol server (DataXceiverServer), the
ClientDatanodeProtocol IPC server and an HTTP server (/status, /metrics, /, and /jmx, /conf
and /logs/ as every daemon's, design §N.11). The data
directories are locked at start; the block pool is loaded when the first NameNode answers
versionRequest (BPOfferService). Every blocking disk call (loading the pool, writing and
reading replicas, deleting, space reports) runs on one bounded thread pool (DiskPool).
"""

from __future__ import annotations

import asyncio
import html
import json
import logging
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from qjm import __version__
from qjm.config import ClusterConfig, DataNodeConfig, format_address, parse_address
from qjm.datanode import block_recovery as brec
from qjm.datanode import replica_store as rs
from qjm.datanode import transfer_client as tc
from qjm.datanode.block_keys import BlockPoolKeys
from qjm.datanode.block_scanner import BlockScanner, ScanSettings
from qjm.datanode.bp_service import BPOfferService, namenode_addresses, settings_from_config
from qjm.datanode.client_datanode_rpc import ReplicaLengths, client_datanode_methods
from qjm.datanode.client_datanode_rpc import ReplicaNotFoundError as RpcReplicaNotFoundError
from qjm.datanode.dataset import FsDataset, VolumeReport
from qjm.datanode.fs_replicas import DiskPool, FsReplicaStore
from qjm.datanode.layout import BlockPoolInfo
from qjm.datanode.replica import ReplicaState
from qjm.datanode.storage import DataStorage
from qjm.datanode.webhdfs import DataNodeWebHdfs, NamespaceFactory
from qjm.datanode.webhdfs import add_routes as add_webhdfs_routes
from qjm.datanode.xceiver import DataXceiverServer, XceiverLimits
from qjm.errors import ConfigError, QjmError, describe_error
from qjm.hdfs import block_report as br
from qjm.hdfs import datanode_protocol as wire
from qjm.hdfs.datanode_protocol import (
    CLIENT_DATANODE_PROTOCOL,
    Block,
    DatanodeId,
    DatanodeStorage,
    FinalizeCommand,
    HeartbeatFacts,
    InvalidateCommand,
    NamespaceInfo,
    RecoveryCommand,
    StorageBlockReport,
    StorageInfo,
    StorageReport,
    TransferCommand,
)
from qjm.hdfs.proto import InterDatanodeProtocol_pb2 as idp
from qjm.hdfs.proto import hdfs_pb2
from qjm.hdfs.servlets import add_operator_routes, rpc_activity_bean
from qjm.hdfs.site_conf import conf_properties
from qjm.hdfs.transfer_sasl import TransferProtection
from qjm.ipc import IpcClient, IpcServer
from qjm.ipc.metrics import rpc_families
from qjm.ipc.server import ipc_limit_keys
from qjm.runtime import stop_on_signals, write_ready_file
from qjm.security import tls
from qjm.security.block_token import AccessMode, ExportedKeys
from qjm.security.http import server_middlewares

log = logging.getLogger(__name__)

DATANODE_LAYOUT_VERSION = -57  # HDFS's DataNodeLayoutVersion.CURRENT_LAYOUT_VERSION
STOP_GRACE_S = 5.0


class DataNodeStartupError(QjmError):
    """The DataNode cannot start: a port taken, storage refused; the message says which."""


class DataNodeFatalError(QjmError):
    """The DataNode stopped itself: more data volumes failed than it tolerates."""


def _check_bindable(host: str, port: int, what: str) -> None:
    """Fail with one clear line when host:port cannot be listened on."""
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as e:
            raise DataNodeStartupError(
                f"cannot listen for {what} on {format_address(host, port)}: {e.strerror or e}"
            ) from None


class _PoolStore:
    """The xceiver's ReplicaStore before the block pool is loaded refuses every op."""

    def __init__(self, node: DataNode) -> None:
        self._node = node

    def _store(self) -> FsReplicaStore:
        store = self._node.store
        if store is None:
            raise rs.ReplicaNotFoundError("no block pool is served yet (no NameNode answered)")
        return store

    async def create_rbw(self, block: rs.ExtendedBlock, bpc: int) -> rs.ReplicaWriter:
        """See ReplicaStore."""
        return await self._store().create_rbw(block, bpc)

    async def create_temporary(self, block: rs.ExtendedBlock, bpc: int) -> rs.ReplicaWriter:
        """See ReplicaStore."""
        return await self._store().create_temporary(block, bpc)

    async def append(
        self, block: rs.ExtendedBlock, new_generation_stamp: int, expected_length: int
    ) -> rs.ReplicaWriter:
        """See ReplicaStore."""
        return await self._store().append(block, new_generation_stamp, expected_length)

    async def recover_rbw(
        self, block: rs.ExtendedBlock, new_generation_stamp: int, min_bytes: int, max_bytes: int
    ) -> rs.ReplicaWriter:
        """See ReplicaStore."""
        return await self._store().recover_rbw(block, new_generation_stamp, min_bytes, max_bytes)

    async def recover_close(
        self, block: rs.ExtendedBlock, new_generation_stamp: int, expected_length: int
    ) -> rs.ExtendedBlock:
        """See ReplicaStore."""
        return await self._store().recover_close(block, new_generation_stamp, expected_length)

    async def open_reader(self, block: rs.ExtendedBlock) -> rs.ReplicaReader:
        """See ReplicaStore."""
        return await self._store().open_reader(block)


class DataNode:
    """One DataNode: storage, the transfer, IPC and HTTP servers, and its NameNode actors."""

    def __init__(
        self,
        cfg: ClusterConfig,
        dn: DataNodeConfig,
        *,
        disk_threads: int = 16,
        namespace_factory: NamespaceFactory | None = None,
    ) -> None:
        """namespace_factory: the ClientProtocol calls WebHDFS makes (none: no WebHDFS)."""
        self.cfg = cfg
        self.dn = dn
        self.settings = cfg.datanode
        self.transfer_host, self.transfer_port = parse_address(
            dn.transfer_address, f"datanodes.{dn.name}.transfer_address"
        )
        self.ipc_host, self.ipc_port = parse_address(
            dn.ipc_address, f"datanodes.{dn.name}.ipc_address"
        )
        self.http_host, self.http_port = parse_address(
            dn.http_address, f"datanodes.{dn.name}.http_address"
        )
        # dfs.http.policy (design §S.13): the HTTPS port, served under HTTPS_ONLY and both
        self.https_host, self.https_port = (
            parse_address(dn.https_address, f"datanodes.{dn.name}.https_address")
            if dn.https_address
            else (self.http_host, 0)
        )
        self._https_server: asyncio.Server | None = None
        self.storage = DataStorage([Path(d) for d in dn.dirs()])
        self.disk = DiskPool(disk_threads)
        self.dataset: FsDataset | None = None
        self.store: FsReplicaStore | None = None
        # every NameNode's block keys when block tokens are on (design §S.9)
        self.block_keys = BlockPoolKeys() if cfg.security.block_tokens else None
        self.xceiver = DataXceiverServer(
            _PoolStore(self),
            limits=XceiverLimits(
                max_connections=self.settings.max_transfer_threads,
                idle_timeout_s=self.settings.socket_timeout_ms / 1000,
                max_packet_payload=self.settings.max_packet_bytes,
                ack_timeout_s=self.settings.socket_timeout_ms / 1000,
            ),
            on_block_received=self._block_received,
            name=dn.name,
            keys=self.block_keys,
            protection=TransferProtection.of(
                cfg.security.data_transfer_protection,
                cfg.security.data_transfer_cipher_suites,
                cfg.security.data_transfer_cipher_key_bits,
            ),
        )
        self.bpos = BPOfferService(
            namenode_addresses(cfg), self, self, settings_from_config(self.settings)
        )
        self.webhdfs = (
            None
            if namespace_factory is None
            else DataNodeWebHdfs(
                cfg,
                namespace_factory,
                self.xceiver.protection,
                self.settings.socket_timeout_ms / 1000,
            )
        )
        self.ipc: IpcServer | None = None
        self._http: web.AppRunner | None = None
        self._http_server: asyncio.Server | None = None
        self._volumes: list[VolumeReport] = []
        self._refresher: asyncio.Task[None] | None = None
        self.scanner: BlockScanner | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.counts: dict[str, int] = {
            "blocks_deleted": 0,
            "blocks_transferred": 0,
            "transfers_failed": 0,
            "invalidates_missing": 0,
            "recoveries_done": 0,
            "recoveries_failed": 0,
            "scanner_corrupt_reported": 0,
        }
        self.xmits_in_progress = 0
        self.started = time.time()
        self.registry = CollectorRegistry()
        self.registry.register(_DataNodeCollector(self))
        self.stopped = asyncio.Event()
        self.fatal = asyncio.Event()  # set with fatal_reason when it must stop itself
        self.fatal_reason = ""

    # ---- life -------------------------------------------------------------------------

    async def start(self) -> None:
        """Lock the data directories, listen on every port, start the NameNode actors."""
        await self.disk.run(self.storage.lock)
        try:
            _check_bindable(self.transfer_host, self.transfer_port, "data transfer")
            _check_bindable(self.ipc_host, self.ipc_port, "IPC")
            if tls.serves_http(self.cfg.security.http_policy):
                _check_bindable(self.http_host, self.http_port, "HTTP")
            if tls.serves_https(self.cfg.security.http_policy):
                _check_bindable(self.https_host, self.https_port, "HTTPS")
            await self._listen()
        except BaseException:
            await self.stop()
            raise
        await self.bpos.start()
        log.info(
            "DataNode %s started: transfer=%s ipc=%s http=%s dirs=%s namenodes=%s",
            self.dn.name,
            format_address(self.transfer_host, self.transfer_port),
            format_address(self.ipc_host, self.ipc_port),
            self.http_url(),
            ",".join(self.dn.dirs()),
            ",".join(self.bpos.actors),
        )

    async def _listen(self) -> None:
        try:
            await self.xceiver.start(self.transfer_host, self.transfer_port)
        except OSError as e:
            raise DataNodeStartupError(
                f"cannot listen for data transfer on "
                f"{format_address(self.transfer_host, self.transfer_port)}: {e.strerror or e}"
            ) from None
        self.transfer_port = self.xceiver.port
        self.ipc = IpcServer(
            name=f"datanode-{self.dn.name}",
            max_connections=self.settings.ipc_max_connections,
            limit_keys=ipc_limit_keys("datanode"),
        )
        self.ipc.register(CLIENT_DATANODE_PROTOCOL, client_datanode_methods(_Lengths(self)))
        self.ipc.register(
            brec.INTER_DATANODE_PROTOCOL, brec.inter_datanode_methods(_Recovery(self))
        )
        try:
            await self.ipc.start(self.ipc_host, self.ipc_port)
        except OSError as e:
            raise DataNodeStartupError(
                f"cannot listen for IPC on {format_address(self.ipc_host, self.ipc_port)}: "
                f"{e.strerror or e}"
            ) from None
        self.ipc_port = self.ipc.port
        runner = web.AppRunner(make_app(self), access_log=None, handle_signals=False)
        await runner.setup()
        self._http = runner
        factory = runner.server
        assert factory is not None
        policy, loop = self.cfg.security.http_policy, asyncio.get_running_loop()
        if tls.serves_http(policy):
            try:
                self._http_server = await loop.create_server(
                    factory, self.http_host, self.http_port, reuse_address=True
                )
            except OSError as e:
                raise DataNodeStartupError(
                    f"cannot listen for HTTP on {format_address(self.http_host, self.http_port)}: "
                    f"{e.strerror or e}"
                ) from None
            self.http_port = int(self._http_server.sockets[0].getsockname()[1])
        if tls.serves_https(policy):
            where = format_address(self.https_host, self.https_port)
            try:
                context = await asyncio.to_thread(tls.server_context, self.cfg.security)
                self._https_server = await loop.create_server(
                    factory, self.https_host, self.https_port, reuse_address=True, ssl=context
                )
            except ConfigError as e:
                raise DataNodeStartupError(str(e)) from None
            except OSError as e:
                raise DataNodeStartupError(
                    f"cannot listen for HTTPS on {where}: {e.strerror or e}"
                ) from None
            self.https_port = int(self._https_server.sockets[0].getsockname()[1])

    def client_http_address(self) -> str:
        """host:port clients reach the HTTP server at: the HTTPS port under HTTPS_ONLY."""
        return tls.client_address(
            self.cfg.security.http_policy,
            format_address(self.http_host, self.http_port),
            format_address(self.https_host, self.https_port),
        )

    def http_url(self) -> str:
        """Base URL clients use (https under HTTPS_ONLY, design §S.13)."""
        address = self.client_http_address()
        return tls.client_url(self.cfg.security.http_policy, address, address)

    async def stop(self) -> None:
        """Stop the actors and listeners, let running disk calls end, release the storage."""
        await self.bpos.stop()
        if self.scanner is not None:
            await self.scanner.stop()
        if self._refresher is not None:
            self._refresher.cancel()
            await asyncio.gather(self._refresher, return_exceptions=True)
            self._refresher = None
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=STOP_GRACE_S)
        await self.xceiver.stop()
        if self.ipc is not None:
            await self.ipc.stop()
            self.ipc = None
        for srv in (self._http_server, self._https_server):
            if srv is not None:
                srv.close()
        self._http_server = self._https_server = None
        if self._http is not None:
            await self._http.cleanup()
            self._http = None
        if self.webhdfs is not None:
            await self.webhdfs.close()
        await asyncio.get_running_loop().run_in_executor(None, self.disk.shutdown)
        if self.dataset is not None:
            self.dataset.close()  # stops writers, releases the directory locks
        else:
            self.storage.release()
        self.stopped.set()

    def _spawn(self, coro: Any, what: str) -> None:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro, name=what)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ---- DataNodeFacts ----------------------------------------------------------------

    def datanode_id(self) -> DatanodeId:
        """This DataNode's identity as it registers (the NameNode takes the address it sees)."""
        host = self.transfer_host if self.transfer_host not in ("0.0.0.0", "::") else "127.0.0.1"
        return DatanodeId(
            ip_addr=host,
            host_name=socket.gethostname(),
            datanode_uuid=self.storage.datanode_uuid,
            xfer_port=self.transfer_port,
            info_port=self.http_port,
            ipc_port=self.ipc_port,
            # dfs.datanode.https.address's port where it serves HTTPS (design §S.13)
            info_secure_port=(
                self.https_port if tls.serves_https(self.cfg.security.http_policy) else 0
            ),
        )

    async def init_block_pool(self, namespace: NamespaceInfo) -> StorageInfo:
        """Load the data directories for the cluster and the pool's replicas (off the loop)."""
        info = BlockPoolInfo(namespace.storage.namespace_id, namespace.block_pool_id)

        def load() -> FsDataset:
            self.storage.load(
                namespace.storage.cluster_id,
                failed_tolerated=self.settings.failed_volumes_tolerated,
            )
            ds = FsDataset(self.storage, reserved=self.settings.du_reserved_bytes)
            ds.add_block_pool(info)
            return ds

        ds = await self.disk.run(load)
        self.dataset = ds
        loop = asyncio.get_running_loop()

        def volume_failed() -> None:
            loop.call_soon_threadsafe(self._volume_failed)

        ds.on_volume_failed = volume_failed
        self.store = FsReplicaStore(ds, self.disk)
        self._volumes = await self.disk.run(ds.volume_reports)
        self._refresher = asyncio.get_running_loop().create_task(self._refresh_volumes())
        self.scanner = BlockScanner(
            ds,
            self.disk,
            ScanSettings(self.settings.scan_bytes_per_second, self.settings.scan_period_ms / 1000),
            self._scanned_corrupt,
        )
        self.scanner.start()
        log.info(
            "block pool %s loaded: %d replica(s) on %d volume(s), datanode uuid %s",
            namespace.block_pool_id,
            len(ds.replicas(namespace.block_pool_id)),
            len(ds.live_volumes()),
            self.storage.datanode_uuid,
        )
        return StorageInfo(
            DATANODE_LAYOUT_VERSION,
            namespace.storage.namespace_id,
            namespace.storage.cluster_id,
            namespace.storage.ctime,
        )

    def _volume_failed(self) -> None:
        """A data volume failed at run time (design §B.19): within the tolerated count the
        NameNodes hear at once (an error report, the failed storage in the next heartbeat, a
        full report without it) and the other volumes serve on; past it the DataNode stops."""
        ds = self.dataset
        if ds is None:
            return
        failed = ds.failed_volumes
        tolerated = self.settings.failed_volumes_tolerated
        which = "; ".join(f"{f.path}: {f.reason}" for f in failed)
        if len(failed) > tolerated:
            self.fatal_reason = (
                f"{len(failed)} data volume(s) failed, {tolerated} tolerated "
                f"(datanode.failed_volumes_tolerated): {which}"
            )
            log.critical("DataNode %s stops: %s", self.dn.name, self.fatal_reason)
            self.bpos.error_report(wire.ErrorCode.FATAL_DISK_ERROR, self.fatal_reason)
            self.fatal.set()
            return
        log.error(
            "DataNode %s serves on with %d failed volume(s) of %d (%d tolerated): %s",
            self.dn.name,
            len(failed),
            len(ds.volumes),
            tolerated,
            which,
        )
        self.bpos.error_report(wire.ErrorCode.DISK_ERROR, f"failed volumes: {which}")
        self._spawn(self._report_volume_failure(), "volume failure")

    async def _report_volume_failure(self) -> None:
        """Space reports now (the failed storage marked), then a full report to each NameNode."""
        if self.dataset is not None:
            self._volumes = await self.disk.run(self.dataset.volume_reports)
        self.bpos.trigger_block_report()

    def _scanned_corrupt(
        self, pool: str, block_id: int, genstamp: int, length: int, storage_id: str
    ) -> None:
        """The scanner found a replica whose bytes fail their sums: every NameNode hears."""
        self.counts["scanner_corrupt_reported"] += 1
        self.bpos.report_bad_blocks(
            [
                wire.BadBlock(
                    wire.ExtendedBlock(pool, block_id, genstamp, length),
                    (self.datanode_id(),),
                    (storage_id,),
                )
            ]
        )

    async def _refresh_volumes(self) -> None:
        """Space reports each heartbeat interval, on a disk thread (statvfs can hang)."""
        interval = self.settings.heartbeat_interval_ms / 1000
        while True:
            await asyncio.sleep(interval)
            if self.dataset is not None:
                try:
                    self._volumes = await self.disk.run(self.dataset.volume_reports)
                except Exception as e:  # one failed scan must not end the refresher
                    log.warning("volume reports failed: %s", describe_error(e))

    def heartbeat_facts(self, pool_id: str) -> HeartbeatFacts:
        """The space of each volume as last measured, and the load."""
        reports = tuple(
            StorageReport(
                DatanodeStorage(v.storage_id),
                capacity=v.capacity,
                dfs_used=v.dfs_used,
                remaining=v.remaining,
                block_pool_used=v.block_pool_used.get(pool_id, 0),
                failed=bool(v.failed),
            )
            for v in self._volumes
        )
        failed = len(self.dataset.failed_volumes) if self.dataset is not None else 0
        return HeartbeatFacts(
            reports,
            # as HDFS's count of DataXceiver threads, which includes the server's own: an
            # idle node reports 1, so one open connection on a small cluster is not "too
            # busy" for placement (design §B.7)
            xceiver_count=1 + self.xceiver.active_connections,
            xmits_in_progress=self.xmits_in_progress,
            failed_volumes=failed,
        )

    async def block_reports(self, pool_id: str) -> list[StorageBlockReport]:
        """Every replica of the pool but transfers' copies, one report per live volume."""
        ds = self.dataset
        if ds is None:
            return []
        per_storage = await self.disk.run(ds.block_report, pool_id)
        return [
            StorageBlockReport(
                DatanodeStorage(sid),
                tuple(
                    br.ReportedReplica(
                        r.block_id, r.num_bytes, r.genstamp, br.ReplicaState(int(r.state))
                    )
                    for r in replicas
                    if r.state != ReplicaState.TEMPORARY
                ),
            )
            for sid, replicas in per_storage.items()
        ]

    # ---- what the storage tells the NameNodes -----------------------------------------

    def _storage_of(self, pool_id: str, block_id: int) -> DatanodeStorage | None:
        ds = self.dataset
        r = ds.get_replica(pool_id, block_id) if ds is not None else None
        return DatanodeStorage(r.storage_id) if r is not None else None

    def _block_received(self, block: rs.ExtendedBlock) -> None:
        """A replica was finalized: every NameNode hears of it (RECEIVED)."""
        storage = self._storage_of(block.pool_id, block.block_id)
        if storage is None:
            return
        self.bpos.notify_received(
            Block(
                block_id=block.block_id, gen_stamp=block.generation_stamp, num_bytes=block.num_bytes
            ),
            storage,
        )

    # ---- CommandHandler ---------------------------------------------------------------

    async def invalidate(self, command: InvalidateCommand) -> None:
        """Delete the replicas on a disk thread; each deletion is reported (DELETED)."""
        self._spawn(self._invalidate(command), "invalidate")

    async def _invalidate(self, command: InvalidateCommand) -> None:
        store = self.store
        if store is None:
            return
        for b in command.blocks:
            block = rs.ExtendedBlock(command.pool_id, b.block_id, b.gen_stamp, b.num_bytes)
            try:
                gone = await store.invalidate(block)
            except rs.ReplicaError as e:
                self.counts["invalidates_missing"] += 1
                log.warning("cannot delete %s: %s", block, e)
                continue
            except QjmError as e:
                log.error("deleting %s failed: %s", block, describe_error(e))
                continue
            self.counts["blocks_deleted"] += 1
            log.info("deleted %s", gone.describe())
            self.bpos.notify_deleted(
                Block(block_id=gone.block_id, gen_stamp=gone.genstamp, num_bytes=gone.num_bytes),
                DatanodeStorage(gone.storage_id),
            )

    async def transfer(self, command: TransferCommand) -> None:
        """Copy each replica to its targets (HDFS's DataTransfer), in the background."""
        self._spawn(self._transfer(command), "transfer")

    async def _transfer(self, command: TransferCommand) -> None:
        store = self.store
        if store is None:
            return
        timeout_s = self.settings.socket_timeout_ms / 1000
        for b, targets in zip(command.blocks, command.targets, strict=False):
            block = rs.ExtendedBlock(command.pool_id, b.block_id, b.gen_stamp, b.num_bytes)
            for target in targets:
                info = hdfs_pb2.DatanodeInfoProto(id=wire.datanode_id_to_proto(target.datanode))
                self.xmits_in_progress += 1
                try:
                    replica = await store.open_reader(block)
                    try:
                        await tc.send_replica(
                            info,
                            replica,
                            client_name="",
                            timeout_s=timeout_s,
                            token=self.xceiver.dn_token(block, AccessMode.WRITE),
                            protection=self.xceiver.protection,
                        )
                    finally:
                        await replica.close()
                    self.counts["blocks_transferred"] += 1
                    log.info(
                        "transferred %s to %s",
                        block,
                        format_address(target.datanode.ip_addr, target.datanode.xfer_port),
                    )
                except (OSError, TimeoutError, QjmError) as e:
                    self.counts["transfers_failed"] += 1
                    log.warning("transfer of %s failed: %s", block, describe_error(e))
                finally:
                    self.xmits_in_progress -= 1

    def add_block_keys(self, pool_id: str, keys: ExportedKeys) -> None:
        """A NameNode's block keys (design §S.9); ignored with block tokens off."""
        if self.block_keys is not None:
            self.block_keys.add(pool_id, keys)

    async def recover(self, command: RecoveryCommand) -> None:
        """Run each block's recovery as its primary, in the background (design §B.16)."""
        for rb in command.blocks:
            self._spawn(self._recover(rb), f"recover blk_{rb.block.block_id}")

    async def _recover(self, rb: wire.RecoveringBlock) -> None:
        try:
            sync = await brec.recover_block(
                rb, _IpcInterDatanode(), self.bpos.commit_block_synchronization
            )
        except Exception as e:
            self.counts["recoveries_failed"] += 1
            log.warning("block recovery of blk_%d failed: %s", rb.block.block_id, describe_error(e))
            return
        self.counts["recoveries_done"] += 1
        log.info(
            "recovered blk_%d: %d bytes under stamp %d on %d DataNode(s)",
            rb.block.block_id,
            sync.new_length,
            sync.new_gen_stamp,
            len(sync.new_targets),
        )

    async def finalize(self, command: FinalizeCommand) -> None:
        """Nothing to finalize: the storage keeps no pre-upgrade copy (design §B.13)."""
        log.info("finalize of block pool %s: nothing to do", command.pool_id)

    # ---- status -----------------------------------------------------------------------

    def replica_counts(self) -> dict[str, int]:
        """Replicas of every pool by state."""
        counts = {s.name: 0 for s in ReplicaState}
        ds = self.dataset
        if ds is not None:
            for pool in list(ds.pools):
                for r in ds.replicas(pool):
                    counts[r.state.name] += 1
        return counts

    def _scanner_status(self) -> dict[str, Any]:
        """The block scanner's settings and counts (design §B.18)."""
        sc = self.scanner
        totals = sc.totals() if sc is not None else None
        return {
            "enabled": self.settings.scan_bytes_per_second > 0,
            "bytes_per_second": self.settings.scan_bytes_per_second,
            "period_s": self.settings.scan_period_ms / 1000,
            "blocks_scanned": totals.blocks_scanned if totals else 0,
            "bytes_scanned": totals.bytes_scanned if totals else 0,
            "corrupt_found": totals.corrupt_found if totals else 0,
            "read_errors": totals.read_errors if totals else 0,
        }

    def status(self) -> dict[str, Any]:
        """What /status answers."""
        ns = self.bpos.namespace
        volumes = [
            {
                "path": str(v.path),
                "storage_id": v.storage_id,
                "capacity": v.capacity,
                "used": v.dfs_used,
                "remaining": v.remaining,
                "failed": v.failed or None,
            }
            for v in self._volumes
        ]
        failed = (
            [
                {"path": str(f.path), "storage_id": f.storage_id, "reason": f.reason}
                for f in self.dataset.failed_volumes
            ]
            if self.dataset is not None
            else []
        )
        now = asyncio.get_running_loop().time()
        namenodes = {}
        for name, actor in self.bpos.actors.items():
            st = actor.status()
            st["seconds_since_heartbeat"] = (
                None if actor.last_heartbeat is None else round(now - actor.last_heartbeat, 3)
            )
            st["seconds_since_full_report"] = (
                None if actor.last_report is None else round(now - actor.last_report, 3)
            )
            namenodes[name] = st
        counters = dict(self.bpos.counters.counts)
        return {
            "name": self.dn.name,
            "version": __version__,
            "uuid": self.storage.datanode_uuid or None,
            "cluster_id": ns.storage.cluster_id if ns else None,
            "block_pool_id": ns.block_pool_id if ns else None,
            "transfer_address": format_address(self.transfer_host, self.transfer_port),
            "ipc_address": format_address(self.ipc_host, self.ipc_port),
            "http_address": format_address(self.http_host, self.http_port),
            "data_dirs": self.dn.dirs(),
            "volumes": volumes,
            "failed_volumes": failed,
            "replicas": self.replica_counts(),
            "active_namenode": self.bpos.claims.active,
            "commands_taken": {
                k[len("commands_") :]: v
                for k, v in counters.items()
                if k.startswith("commands_")
                and k not in ("commands_dropped_not_active", "commands_unsupported")
                and k != "commands_failed"
            },
            "commands_dropped": counters.get("commands_dropped_not_active", 0),
            "commands_failed": counters.get("commands_failed", 0),
            "stale_active_claims": counters.get("stale_active_claims", 0),
            "active_changes": counters.get("active_changes", 0),
            "namenodes": namenodes,
            "scanner": self._scanner_status(),
            "xceiver": {
                "active_connections": self.xceiver.active_connections,
                **{k: v for k, v in vars(self.xceiver.metrics).items() if k != "ops"},
                "ops": dict(self.xceiver.metrics.ops),
            },
            "counts": dict(self.counts),
            # design §S.9: the block keys held, by pool (null: block tokens off)
            "block_keys": (
                None
                if self.block_keys is None
                else {p: self.block_keys.key_ids(p) for p in self.block_keys.pools()}
            ),
        }


class _Lengths(ReplicaLengths):
    """getReplicaVisibleLength from the FsDataset."""

    def __init__(self, node: DataNode) -> None:
        self._node = node

    async def visible_length(self, block: wire.ExtendedBlock) -> int:
        """Bytes of the replica a reader may see."""
        ds = self._node.dataset
        r = ds.get_replica(block.pool_id, block.block_id) if ds is not None else None
        if r is None or r.genstamp < block.gen_stamp:
            raise RpcReplicaNotFoundError(
                f"Replica not found for {block.pool_id}:blk_{block.block_id}_{block.gen_stamp}"
            )
        return r.visible_length


class _Recovery(brec.ReplicaRecovery):
    """InterDatanodeProtocol's side of the FsDataset (design §B.16); disk work off the loop."""

    def __init__(self, node: DataNode) -> None:
        self._node = node

    async def init_replica_recovery(self, rb: wire.RecoveringBlock) -> brec.ReplicaRecord | None:
        """Start recovering this node's replica of rb (None when there is none)."""
        node = self._node
        ds = node.dataset
        b = rb.block
        r = ds.get_replica(b.pool_id, b.block_id) if ds is not None else None
        if ds is None or r is None:
            return None
        if r.genstamp < b.gen_stamp:
            raise brec.BlockRecoveryError(
                f"replica.getGenerationStamp() < block.getGenerationStamp(), block=blk_"
                f"{b.block_id}_{b.gen_stamp}, replica genstamp {r.genstamp}"
            )
        got = await node.disk.run(ds.init_replica_recovery, b.pool_id, b.block_id, rb.new_gen_stamp)
        state = got.original_state if got.original_state is not None else got.state
        return brec.ReplicaRecord(node.datanode_id(), state, got.num_bytes, got.genstamp)

    async def update_replica_under_recovery(
        self, block: wire.ExtendedBlock, recovery_id: int, new_length: int
    ) -> str:
        """Cut and finalize the replica under the recovery id; every NameNode hears of it."""
        node = self._node
        ds = node.dataset
        if ds is None:
            raise brec.BlockRecoveryError("no block pool is served yet")
        r = await node.disk.run(
            ds.update_replica_under_recovery, block.pool_id, block.block_id, recovery_id, new_length
        )
        node.bpos.notify_received(
            Block(block_id=r.block_id, gen_stamp=r.genstamp, num_bytes=r.num_bytes),
            DatanodeStorage(r.storage_id),
        )
        return r.storage_id


class _IpcInterDatanode(brec.InterDatanodeCalls):
    """InterDatanodeProtocol calls over IPC to each holder's IPC port."""

    @staticmethod
    async def _call(node: wire.DatanodeId, method: str, req: Any, resp: Any) -> Any:
        client = IpcClient(
            format_address(node.ip_addr, node.ipc_port),
            brec.INTER_DATANODE_PROTOCOL,
            connect_timeout_s=5.0,
            reconnect_attempts=1,
        )
        try:
            return await client.call(method, req, resp, timeout=60.0)
        finally:
            await client.close()

    async def init(
        self, node: wire.DatanodeId, rb: wire.RecoveringBlock
    ) -> brec.ReplicaRecord | None:
        """initReplicaRecovery on node."""
        req = idp.InitReplicaRecoveryRequestProto(block=wire.recovering_block_to_proto(rb))
        out = await self._call(
            node, "initReplicaRecovery", req, idp.InitReplicaRecoveryResponseProto
        )
        if not out.replicaFound:
            return None
        return brec.ReplicaRecord(
            node, ReplicaState(out.state), out.block.numBytes, out.block.genStamp
        )

    async def update(
        self, node: wire.DatanodeId, block: wire.ExtendedBlock, recovery_id: int, new_length: int
    ) -> str:
        """updateReplicaUnderRecovery on node."""
        req = idp.UpdateReplicaUnderRecoveryRequestProto(
            block=wire.extended_block_to_proto(block), recoveryId=recovery_id, newLength=new_length
        )
        out = await self._call(
            node,
            "updateReplicaUnderRecovery",
            req,
            idp.UpdateReplicaUnderRecoveryResponseProto,
        )
        return str(out.storageUuid)


# ---- metrics ------------------------------------------------------------------------------


class _DataNodeCollector(Collector):
    """Reads the DataNode's counters at scrape time (names after HDFS's DataNodeMetrics)."""

    def __init__(self, node: DataNode) -> None:
        self._node = node

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        """One family per metric."""
        node = self._node
        m = node.xceiver.metrics
        scan = node._scanner_status()
        for key, value, text in (
            ("bytes_written", m.bytes_written, "Bytes received into replicas"),
            ("bytes_read", m.bytes_read, "Bytes sent to readers"),
            ("blocks_written", m.blocks_written, "Replicas finalized"),
            ("blocks_read", m.blocks_read, "READ_BLOCK ops served"),
            ("blocks_removed", node.counts["blocks_deleted"], "Replicas deleted"),
            (
                "blocks_replicated",
                node.counts["blocks_transferred"],
                "Replicas sent by DNA_TRANSFER",
            ),
            ("transfers_failed", node.counts["transfers_failed"], "DNA_TRANSFER sends that failed"),
            ("checksum_errors", m.checksum_errors, "Packets refused for a checksum mismatch"),
            ("block_token_refusals", m.token_refusals, "Ops refused for their block token"),
            ("sasl_refusals", m.sasl_refusals, "Connections refused at the SASL handshake"),
            ("aes_connections", m.aes_connections, "Data transfer streams switched to AES-CTR"),
            ("blocks_verified", scan["blocks_scanned"], "Replicas the block scanner checked"),
            ("scanner_bytes", scan["bytes_scanned"], "Bytes the block scanner checked"),
            ("scanner_corrupt", scan["corrupt_found"], "Corrupt replicas the scanner found"),
            ("xceiver_bad_requests", m.bad_requests, "Malformed data transfer requests"),
            ("xceiver_connections_refused", m.connections_refused, "Connections over the cap"),
        ):
            c = CounterMetricFamily(f"qjm_datanode_{key}_total", text)
            c.add_metric([], value)
            yield c
        ops = CounterMetricFamily("qjm_datanode_xceiver_ops_total", "Ops served", labels=["op"])
        for op, n in sorted(m.ops.items()):
            ops.add_metric([op], n)
        yield ops
        g = GaugeMetricFamily("qjm_datanode_xceiver_count", "Data transfer connections open")
        g.add_metric([], node.xceiver.active_connections)
        yield g
        per_nn = {
            "heartbeats": "Heartbeats answered",
            "full_reports": "Full block reports sent",
            "incremental_reports": "Incremental block reports sent",
            "registrations": "Registrations",
            "failures": "Calls that failed",
        }
        for key, text in per_nn.items():
            c = CounterMetricFamily(f"qjm_datanode_{key}_total", text, labels=["namenode"])
            for name, actor in node.bpos.actors.items():
                c.add_metric([name], actor.counters.counts.get(key, 0))
            yield c
        cmd = CounterMetricFamily(
            "qjm_datanode_commands_total", "NameNode commands by outcome", labels=["outcome"]
        )
        for key, value in sorted(node.bpos.counters.counts.items()):
            if key.startswith("commands_"):
                cmd.add_metric([key[len("commands_") :]], value)
        yield cmd
        for key, text in (
            ("stale_active_claims", "ACTIVE claims at a txid not above the last (design §B.12)"),
            ("active_changes", "Changes of the NameNode obeyed"),
        ):
            c = CounterMetricFamily(f"qjm_datanode_{key}_total", text)
            c.add_metric([], node.bpos.counters.counts.get(key, 0))
            yield c
        labels = ["storage_id", "path"]
        families = {
            "capacity": GaugeMetricFamily(
                "qjm_datanode_volume_capacity_bytes", "Volume capacity", labels=labels
            ),
            "used": GaugeMetricFamily(
                "qjm_datanode_volume_used_bytes", "Replica bytes on the volume", labels=labels
            ),
            "remaining": GaugeMetricFamily(
                "qjm_datanode_volume_remaining_bytes", "Bytes left for replicas", labels=labels
            ),
        }
        for v in node._volumes:
            vol = [v.storage_id, str(v.path)]
            families["capacity"].add_metric(vol, v.capacity)
            families["used"].add_metric(vol, v.dfs_used)
            families["remaining"].add_metric(vol, v.remaining)
        yield from families.values()
        failed = GaugeMetricFamily("qjm_datanode_volumes_failed", "Volumes given up")
        ds = node.dataset
        failed.add_metric(
            [], len(ds.failed_volumes) if ds is not None else len(node.storage.failed)
        )
        yield failed
        replicas = GaugeMetricFamily("qjm_datanode_replicas", "Replicas by state", labels=["state"])
        for state, n in node.replica_counts().items():
            replicas.add_metric([state], n)
        yield replicas
        if node.ipc is not None:
            yield from rpc_families("qjm_datanode", node.ipc.stats())


# ---- JMX (design §N.11) ------------------------------------------------------------------

JMX_DN_INFO = "Hadoop:service=DataNode,name=DataNodeInfo"
JMX_FS_DATASET = "Hadoop:service=DataNode,name=FSDatasetState"


def activity_bean_name(hostname: str, transfer_port: int) -> str:
    """DataNodeMetrics' ObjectName: DataNodeActivity-<host>-<transfer port>."""
    return f"Hadoop:service=DataNode,name=DataNodeActivity-{hostname}-{transfer_port}"


def jmx_beans(st: dict[str, Any], hostname: str) -> list[dict[str, Any]]:
    """HDFS's DataNodeInfo, FSDatasetState and DataNodeActivity beans from a DataNode's
    status(): only the figures it keeps (design §N.11)."""

    def port(address: object) -> str:
        return str(address).rsplit(":", 1)[-1]

    transfer_port = int(port(st["transfer_address"]))
    volumes = [v for v in st["volumes"] if not v["failed"]]
    pool = st["block_pool_id"]
    namenodes = {
        str(a["address"]).rsplit(":", 1)[0]: pool for a in st["namenodes"].values() if pool
    }
    volume_info = {
        v["path"]: {
            "usedSpace": v["used"],
            "freeSpace": v["remaining"],
            "storageType": "DISK",
        }
        for v in volumes
    }
    actors = list(st["namenodes"].values())

    def total(key: str) -> int:
        return sum(int(a["counters"].get(key, 0)) for a in actors)

    x, counts, scan = st["xceiver"], st["counts"], st["scanner"]
    return [
        {
            "name": JMX_DN_INFO,
            "modelerType": "org.apache.hadoop.hdfs.server.datanode.DataNode",
            "Version": st["version"],
            "SoftwareVersion": st["version"],
            "RpcPort": port(st["ipc_address"]),
            "HttpPort": port(st["http_address"]),
            "DataPort": str(transfer_port),
            "DatanodeHostname": hostname,
            "ClusterId": st["cluster_id"],
            "NamenodeAddresses": json.dumps(namenodes),
            "VolumeInfo": json.dumps(volume_info),
            "XceiverCount": x["active_connections"],
        },
        {
            "name": JMX_FS_DATASET,
            "modelerType": "org.apache.hadoop.hdfs.server.datanode.fsdataset.impl.FsDatasetImpl",
            "Capacity": sum(v["capacity"] for v in volumes),
            "DfsUsed": sum(v["used"] for v in volumes),
            "Remaining": sum(v["remaining"] for v in volumes),
            "NumFailedVolumes": len(st["failed_volumes"]),
            "FailedStorageLocations": [f["path"] for f in st["failed_volumes"]],
            # FsDatasetImpl.getStorageInfo: the volumes as a Java list prints them
            "StorageInfo": "FSDataset{dirpath='[" + ", ".join(v["path"] for v in volumes) + "]'}",
        },
        {
            "name": activity_bean_name(hostname, transfer_port),
            "modelerType": f"DataNodeActivity-{hostname}-{transfer_port}",
            "tag.Context": "dfs",
            "tag.Hostname": hostname,
            "BytesWritten": x["bytes_written"],
            "BytesRead": x["bytes_read"],
            "BlocksWritten": x["blocks_written"],
            "BlocksRead": x["blocks_read"],
            "BlocksReplicated": counts["blocks_transferred"],
            "BlocksRemoved": counts["blocks_deleted"],
            "BlocksVerified": scan["blocks_scanned"],
            "BlockVerificationFailures": scan["corrupt_found"],
            "VolumeFailures": len(st["failed_volumes"]),
            "DataNodeActiveXceiversCount": x["active_connections"],
            "HeartbeatsNumOps": total("heartbeats"),
            "BlockReportsNumOps": total("full_reports"),
            "IncrementalBlockReportsNumOps": total("incremental_reports"),
        },
    ]


# ---- HTTP -------------------------------------------------------------------------------

NODE_KEY = web.AppKey("datanode", DataNode)


async def status_json(request: web.Request) -> web.Response:
    """/status: the DataNode's state as JSON."""
    node = request.app[NODE_KEY]
    return web.Response(text=json.dumps(node.status(), indent=1), content_type="application/json")


async def metrics(request: web.Request) -> web.Response:
    """/metrics: Prometheus text."""
    node = request.app[NODE_KEY]
    body = generate_latest(node.registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


async def status_page(request: web.Request) -> web.Response:
    """/: a small human status page."""
    st = request.app[NODE_KEY].status()
    esc = html.escape
    vols = "".join(
        f"<tr><td>{esc(v['path'])}</td><td>{esc(v['storage_id'])}</td><td>{v['capacity']}</td>"
        f"<td>{v['used']}</td><td>{v['remaining']}</td><td>{esc(v['failed'] or '-')}</td></tr>"
        for v in st["volumes"]
    )
    nns = "".join(
        f"<tr><td>{esc(name)}</td><td>{esc(a['address'])}</td><td>{esc(a['state'])}</td>"
        f"<td>{esc(str(a['ha_state']))}</td><td>{esc(str(a['seconds_since_heartbeat']))}</td>"
        f"<td>{esc(a['last_error'] or '-')}</td></tr>"
        for name, a in st["namenodes"].items()
    )
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><meta http-equiv="refresh" content="3">
<title>DataNode {esc(st["name"])}</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px 10px;text-align:left}}th{{background:#eee}}</style>
</head><body>
<h1>DataNode {esc(st["name"])}</h1>
<p>uuid {esc(str(st["uuid"]))} &middot; cluster {esc(str(st["cluster_id"]))} &middot;
pool {esc(str(st["block_pool_id"]))} &middot; transfer {esc(st["transfer_address"])}
&middot; <a href="/status">status JSON</a> &middot; <a href="/metrics">metrics</a></p>
<p>replicas: {esc(", ".join(f"{k} {v}" for k, v in st["replicas"].items()))}</p>
<h2>Volumes</h2><table><tr><th>path</th><th>storage</th><th>capacity</th><th>used</th>
<th>remaining</th><th>failed</th></tr>{vols}</table>
<h2>NameNodes</h2><table><tr><th>name</th><th>address</th><th>actor</th><th>HA state</th>
<th>s since heartbeat</th><th>last error</th></tr>{nns}</table>
</body></html>"""
    return web.Response(text=page, content_type="text/html")


def make_app(node: DataNode) -> web.Application:
    """The aiohttp application of one DataNode."""
    app = web.Application(middlewares=server_middlewares())  # SPNEGO under Kerberos
    app[NODE_KEY] = node
    app.router.add_get("/status", status_json)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/", status_page)

    async def beans() -> list[dict[str, Any]]:
        host = node.datanode_id().host_name
        stats = node.ipc.stats() if node.ipc is not None else {}
        rpc = rpc_activity_bean("DataNode", node.ipc_port, stats, host)
        return jmx_beans(node.status(), host) + ([rpc] if rpc else [])

    add_operator_routes(  # /jmx, /conf, /logs/ (design §N.11)
        app, beans, lambda: conf_properties(node.cfg, "datanode", node.dn.name)
    )
    if node.webhdfs is not None:
        add_webhdfs_routes(app, node.webhdfs)  # design §W
    return app


async def serve_forever(node: DataNode, ready_file: Path | None = None) -> None:
    """Start the DataNode, report readiness once every port listens, run until SIGTERM."""
    await node.start()
    stop = stop_on_signals()
    if ready_file is not None:
        write_ready_file(
            ready_file,
            {
                "rpc": format_address(node.ipc_host, node.ipc_port),
                "http": node.client_http_address(),  # what clients use (design §S.13)
                "scheme": tls.http_scheme(node.cfg.security.http_policy),
                "transfer": format_address(node.transfer_host, node.transfer_port),
            },
        )
    fatal = asyncio.ensure_future(node.fatal.wait())
    signalled = asyncio.ensure_future(stop.wait())
    await asyncio.wait([fatal, signalled], return_when=asyncio.FIRST_COMPLETED)
    fatal.cancel()
    signalled.cancel()
    log.info("DataNode %s stopping", node.dn.name)
    await node.stop()
    if node.fatal.is_set():
        raise DataNodeFatalError(f"DataNode {node.dn.name} stopped: {node.fatal_reason}")


__all__ = ["DataNode", "DataNodeStartupError", "serve_forever"]
