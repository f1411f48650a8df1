"""DatanodeProtocol end to end on loopback (design §B.11, §B.12): the DataNode's actors
against two NameNode-side services over real qjm.ipc, a fake block management behind each
(the unit under test is the protocol on both sides, not block management)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import pytest

from qjm.datanode.bp_service import (
    BPOfferService,
    BPServiceSettings,
    namenode_addresses,
    settings_from_config,
)
from qjm.datanode.client_datanode_rpc import ReplicaNotFoundError, client_datanode_methods
from qjm.hdfs import datanode_protocol as wire
from qjm.hdfs.block_report import ReplicaState, ReportedReplica
from qjm.hdfs.datanode_protocol import (
    CLIENT_DATANODE_PROTOCOL,
    DATANODE_PROTOCOL,
    BadBlock,
    Block,
    BlockReportContext,
    BlockStatus,
    BlockSynchronization,
    DatanodeCommand,
    DatanodeId,
    DatanodeRegistration,
    DatanodeStorage,
    ErrorCode,
    ExtendedBlock,
    FinalizeCommand,
    HAState,
    HAStatus,
    HeartbeatFacts,
    InvalidateCommand,
    NamespaceInfo,
    RecoveryCommand,
    RegisterCommand,
    StorageBlockReport,
    StorageInfo,
    StorageReceivedDeleted,
    StorageReport,
    TransferCommand,
    UnregisteredNodeError,
)
from qjm.hdfs.proto import ClientDatanodeProtocol_pb2 as cdp
from qjm.hdfs.proto import DatanodeProtocol_pb2 as dnp
from qjm.hdfs.proto import HdfsServer_pb2 as srv
from qjm.ipc import IpcClient, IpcServer, RemoteError
from qjm.ipc.server import CallContext
from qjm.namenode.datanode_rpc import ServiceHAStatus, datanode_methods
from qjm.namenode.types import HAState as NameNodeHAState
from qjm.security.block_token import ExportedKeys
from qjm.testing.wait import wait_until_async

POOL = "BP-1-127.0.0.1-1700000000000"
CLUSTER = "CID-test"
NS = NamespaceInfo(POOL, StorageInfo(-66, 4242, CLUSTER, 0))
DISK = DatanodeStorage("DS-1")
SSD = DatanodeStorage("DS-2", storage_type="SSD")
REPLICAS = {
    DISK: (
        ReportedReplica(1 << 30 | 1, 1024, 1001),
        ReportedReplica(1 << 30 | 2, 7, 1002, ReplicaState.RBW),
    ),
    SSD: (ReportedReplica(1 << 30 | 3, 0, 1003),),
}
FAST = BPServiceSettings(
    heartbeat_interval_s=0.05,
    rpc_timeout_s=5.0,
    backoff_initial_s=0.05,
    backoff_max_s=0.2,
)


async def until(cond: Callable[[], bool], what: str, limit_s: float = 15.0) -> None:
    """Wait (bounded) until cond holds."""
    await wait_until_async(what, cond, timeout_s=limit_s)


@dataclass
class FakeBlocks:
    """Block management behind one NameNode: records what arrives, hands out queued commands."""

    ns: NamespaceInfo = NS
    registered: dict[str, DatanodeRegistration] = field(default_factory=dict)
    heartbeats: int = 0
    last_facts: HeartbeatFacts | None = None
    reports: list[tuple[str, list[StorageBlockReport], BlockReportContext | None]] = field(
        default_factory=list
    )
    changes: list[StorageReceivedDeleted] = field(default_factory=list)
    errors: list[tuple[int, str]] = field(default_factory=list)
    bad: list[BadBlock] = field(default_factory=list)
    syncs: list[BlockSynchronization] = field(default_factory=list)
    queued: list[DatanodeCommand] = field(default_factory=list)

    def namespace_info(self) -> NamespaceInfo:
        return self.ns

    async def register_datanode(self, registration: DatanodeRegistration) -> DatanodeRegistration:
        self.registered[registration.datanode.datanode_uuid] = registration
        return registration

    def _known(self, reg: DatanodeRegistration) -> None:
        if reg.datanode.datanode_uuid not in self.registered:
            raise UnregisteredNodeError(f"unknown DataNode {reg.datanode.datanode_uuid}")

    async def handle_heartbeat(
        self, registration: DatanodeRegistration, facts: HeartbeatFacts
    ) -> Sequence[DatanodeCommand]:
        if registration.datanode.datanode_uuid not in self.registered:
            return [RegisterCommand()]
        self.heartbeats += 1
        self.last_facts = facts
        queued, self.queued = self.queued, []
        return queued

    async def process_report(
        self,
        registration: DatanodeRegistration,
        pool_id: str,
        reports: Sequence[StorageBlockReport],
        context: BlockReportContext | None,
    ) -> DatanodeCommand | None:
        self._known(registration)
        self.reports.append((pool_id, list(reports), context))
        return None

    async def process_incremental(
        self,
        registration: DatanodeRegistration,
        pool_id: str,
        changes: Sequence[StorageReceivedDeleted],
    ) -> None:
        self._known(registration)
        self.changes.extend(changes)

    async def error_report(
        self, registration: DatanodeRegistration, code: int, message: str
    ) -> None:
        self.errors.append((code, message))

    async def report_bad_blocks(self, bad: Sequence[BadBlock]) -> None:
        self.bad.extend(bad)

    async def commit_block_synchronization(self, sync: BlockSynchronization) -> None:
        self.syncs.append(sync)


@dataclass
class FakeHA:
    state: HAState
    txid: int

    def ha_status(self, ctx: CallContext) -> HAStatus:
        return HAStatus(self.state, self.txid)


class FakeFacts:
    """A DataNode's storage as the actors see it."""

    def __init__(self) -> None:
        self.pools: list[NamespaceInfo] = []

    def datanode_id(self) -> DatanodeId:
        return DatanodeId("10.9.9.9", "dn1.test", "dn-uuid-1", 9866, 9864, 9867)

    async def init_block_pool(self, namespace: NamespaceInfo) -> StorageInfo:
        self.pools.append(namespace)
        return namespace.storage

    def heartbeat_facts(self, pool_id: str) -> HeartbeatFacts:
        return HeartbeatFacts(
            (StorageReport(DISK, capacity=1 << 30, remaining=1 << 29), StorageReport(SSD)),
            xceiver_count=3,
        )

    async def block_reports(self, pool_id: str) -> list[StorageBlockReport]:
        return [StorageBlockReport(s, r) for s, r in REPLICAS.items()]


@dataclass
class FakeHandler:
    taken: list[DatanodeCommand] = field(default_factory=list)
    keys: list[tuple[str, ExportedKeys]] = field(default_factory=list)

    async def transfer(self, command: TransferCommand) -> None:
        self.taken.append(command)

    async def invalidate(self, command: InvalidateCommand) -> None:
        self.taken.append(command)

    async def recover(self, command: RecoveryCommand) -> None:
        self.taken.append(command)

    async def finalize(self, command: FinalizeCommand) -> None:
        self.taken.append(command)

    def add_block_keys(self, pool_id: str, keys: ExportedKeys) -> None:
        self.keys.append((pool_id, keys))


class FakeNameNode:
    """One NameNode side: an IpcServer serving DatanodeProtocol in front of the fakes."""

    def __init__(self, state: HAState, txid: int, ns: NamespaceInfo = NS) -> None:
        self.blocks = FakeBlocks(ns)
        self.ha = FakeHA(state, txid)
        self.server: IpcServer | None = None
        self.port = 0

    async def start(self, port: int = 0) -> None:
        self.server = IpcServer(name="nn-test")
        self.server.register(DATANODE_PROTOCOL, datanode_methods(self.blocks, self.ha))
        await self.server.start("127.0.0.1", port)
        self.port = self.server.port

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.stop()
            self.server = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


def invalidate(block_id: int) -> InvalidateCommand:
    return InvalidateCommand(POOL, (Block(block_id, 1001, 5),))


def replicas_of(
    report: list[StorageBlockReport],
) -> dict[DatanodeStorage, tuple[ReportedReplica, ...]]:
    return {r.storage: r.replicas for r in report}


async def test_two_namenodes_register_report_and_obey_the_active() -> None:
    nn1 = FakeNameNode(HAState.ACTIVE, 100)
    nn2 = FakeNameNode(HAState.STANDBY, 90)
    await nn1.start()
    await nn2.start()
    facts, handler = FakeFacts(), FakeHandler()
    bpos = BPOfferService(
        {"nn1": nn1.address, "nn2": nn2.address}, facts, handler, FAST, user="hdfs"
    )
    await bpos.start()
    try:
        # registration, heartbeats with storage reports, a full report at both NameNodes
        for nn in (nn1, nn2):
            await until(lambda nn=nn: len(nn.blocks.reports) >= 1, "a full report")
            reg = nn.blocks.registered["dn-uuid-1"]
            assert reg.datanode.ip_addr == "127.0.0.1"  # as the NameNode saw the caller
            assert reg.datanode.xfer_port == 9866 and reg.storage == NS.storage
            pool, report, context = nn.blocks.reports[0]
            assert pool == POOL and replicas_of(report) == REPLICAS
            assert context is not None and (context.total_rpcs, context.cur_rpc) == (1, 0)
            await until(lambda nn=nn: nn.blocks.heartbeats >= 2, "heartbeats")
            assert nn.blocks.last_facts is not None
            assert [r.storage for r in nn.blocks.last_facts.reports] == [DISK, SSD]
            assert nn.blocks.last_facts.reports[0].capacity == 1 << 30
        assert len(facts.pools) == 1  # the pool's storage is set up once
        await until(lambda: bpos.claims.active == "nn1", "nn1 obeyed")

        # a command from the standby is dropped, one from the active is taken
        nn2.blocks.queued.append(invalidate(7))
        await until(lambda: bpos.counters["commands_dropped_not_active"] == 1, "the standby's drop")
        nn1.blocks.queued.append(invalidate(8))
        await until(lambda: len(handler.taken) == 1, "the active's command")
        assert handler.taken == [invalidate(8)]

        # an incremental report reaches both NameNodes promptly
        bpos.notify_received(Block(1 << 30 | 9, 512, 1009), DISK)
        for nn in (nn1, nn2):
            await until(lambda nn=nn: len(nn.blocks.changes) == 1, "the incremental report")
            change = nn.blocks.changes[0]
            assert change.storage == DISK
            assert [(b.block.block_id, b.status) for b in change.blocks] == [
                (1 << 30 | 9, BlockStatus.RECEIVED)
            ]
        bpos.error_report(ErrorCode.DISK_ERROR, "disk /data/2 failed")
        bad = BadBlock(
            ExtendedBlock(POOL, 1 << 30 | 1, 1001, 1024), (facts.datanode_id(),), ("DS-1",)
        )
        bpos.report_bad_blocks([bad])
        for nn in (nn1, nn2):
            await until(lambda nn=nn: nn.blocks.errors and nn.blocks.bad, "error and bad reports")
            assert nn.blocks.errors == [(ErrorCode.DISK_ERROR, "disk /data/2 failed")]
            assert nn.blocks.bad == [bad]

        # failover: nn1 steps down, nn2 becomes active at a higher txid, and gets a full
        # report at once (it holds every storage stale until then, design §B.6)
        reports_before = len(nn2.blocks.reports)
        nn1.ha.state, nn2.ha.state, nn2.ha.txid = HAState.STANDBY, HAState.ACTIVE, 105
        await until(lambda: bpos.claims.active == "nn2", "nn2 obeyed")
        assert bpos.claims.last_claim_txid >= 105
        await until(lambda: len(nn2.blocks.reports) > reports_before, "a report to the new active")
        # the deposed nn1 claims ACTIVE again at a lower txid: ignored with its commands
        nn1.ha.state, nn1.ha.txid = HAState.ACTIVE, 101
        nn1.blocks.queued.append(invalidate(10))
        await until(lambda: bpos.counters["stale_active_claims"] >= 1, "a stale claim")
        await until(lambda: not nn1.blocks.queued, "nn1's command handed out")
        nn2.blocks.queued.append(invalidate(11))
        await until(lambda: len(handler.taken) == 2, "the new active's command")
        assert handler.taken[-1] == invalidate(11)
        assert bpos.claims.active == "nn2"
        assert bpos.counters["commands_dropped_not_active"] >= 2

        # commitBlockSynchronization goes to the obeyed active
        sync = BlockSynchronization(ExtendedBlock(POOL, 5, 1001), 1010, 77, True, False)
        await bpos.commit_block_synchronization(sync)
        assert nn2.blocks.syncs == [sync] and nn1.blocks.syncs == []

        # nn1 goes down: its actor backs off, nn2's goes on
        port = nn1.port
        await nn1.stop()
        await until(lambda: bpos.actors["nn1"].state == "backoff", "nn1's actor backing off")
        before = nn2.blocks.heartbeats
        await until(lambda: nn2.blocks.heartbeats >= before + 3, "nn2's heartbeats going on")
        assert bpos.actors["nn1"].status()["failures_in_a_row"] >= 1
        # nn1 comes back knowing nothing: the DataNode registers again and reports in full
        nn1b = FakeNameNode(HAState.STANDBY, 105)
        await nn1b.start(port)
        try:
            await until(lambda: len(nn1b.blocks.reports) >= 1, "a report to the restarted nn1")
            assert "dn-uuid-1" in nn1b.blocks.registered
            assert replicas_of(nn1b.blocks.reports[0][1]) == REPLICAS
            assert bpos.actors["nn1"].state == "running"
        finally:
            await nn1b.stop()
        status = bpos.status()
        assert status["active_namenode"] == "nn2" and status["block_pool_id"] == POOL
    finally:
        await bpos.stop()
        await nn1.stop()
        await nn2.stop()


async def test_a_namenode_of_another_cluster_is_refused_and_legacy_reports() -> None:
    """A NameNode serving another block pool is given up on with a clear error; the other
    one, which does not read buffers reports, gets the legacy longs."""
    good = FakeNameNode(HAState.ACTIVE, 5, replace(NS, capabilities=0))
    other = FakeNameNode(
        HAState.ACTIVE, 9, NamespaceInfo("BP-2-x-1", StorageInfo(-66, 7, "CID-other"))
    )
    await good.start()
    await other.start()
    other_port = other.port
    await other.stop()  # down until the pool is set up from the good one
    facts = FakeFacts()
    bpos = BPOfferService(
        {"good": good.address, "other": f"127.0.0.1:{other_port}"}, facts, FakeHandler(), FAST
    )
    await bpos.start()
    try:
        await until(lambda: len(good.blocks.reports) >= 1, "a full report")
        assert replicas_of(good.blocks.reports[0][1]) == REPLICAS  # legacy longs, intact
        await other.start(other_port)
        await until(lambda: bpos.actors["other"].state == "failed", "the other cluster refused")
        error = bpos.actors["other"].last_error
        assert "serves block pool BP-2-x-1 of cluster CID-other" in error
        assert f"this DataNode serves block pool {POOL} of cluster {CLUSTER}" in error
        assert other.blocks.registered == {}
        assert [ns.block_pool_id for ns in facts.pools] == [POOL]
        before = good.blocks.heartbeats
        await until(lambda: good.blocks.heartbeats > before + 2, "the good actor going on")
    finally:
        await bpos.stop()
        await good.stop()
        await other.stop()


def test_storage_report_encodings() -> None:
    report = StorageBlockReport(DISK, REPLICAS[DISK])
    legacy = wire.storage_block_report_to_proto(report, buffers=False)
    assert not legacy.HasField("numberOfBlocks") and len(legacy.blocks) == 2 + 3 * 2 + 4
    buffers = wire.storage_block_report_to_proto(report, buffers=True)
    assert buffers.numberOfBlocks == 2 and len(buffers.blocks) == 0
    for p in (legacy, buffers):
        assert wire.storage_block_report_from_proto(p) == report


def _registration(ip: str = "127.0.0.1", cluster: str = CLUSTER) -> dnp.DatanodeRegistrationProto:
    reg = DatanodeRegistration(
        DatanodeId(ip, "h", "dn-x", 1, 2, 3), replace(NS.storage, cluster_id=cluster)
    )
    return wire.registration_to_proto(reg)


async def test_namenode_side_refuses_bad_callers() -> None:
    blocks, ha = FakeBlocks(), FakeHA(HAState.STANDBY, 3)
    server = IpcServer(name="nn-test")
    server.register(
        DATANODE_PROTOCOL, datanode_methods(blocks, ha, allowed_users=frozenset({"hdfs"}))
    )
    await server.start("127.0.0.1", 0)
    dn = IpcClient(f"127.0.0.1:{server.port}", DATANODE_PROTOCOL, user="hdfs")
    intruder = IpcClient(f"127.0.0.1:{server.port}", DATANODE_PROTOCOL, user="mallory")
    try:
        answer = await dn.call(
            "versionRequest", srv.VersionRequestProto(), srv.VersionResponseProto, timeout=5
        )
        assert wire.namespace_info_from_proto(answer.info) == NS
        assert answer.info.state == srv.NNHAStatusHeartbeatProto.STANDBY
        with pytest.raises(RemoteError, match="User mallory .* not authorized") as e:
            await intruder.call(
                "versionRequest", srv.VersionRequestProto(), srv.VersionResponseProto, timeout=5
            )
        assert e.value.class_name == "org.apache.hadoop.security.AccessControlException"
        # a DataNode of another cluster cannot register
        with pytest.raises(RemoteError, match="cluster CID-other, this NameNode serves") as e:
            await dn.call(
                "registerDatanode",
                dnp.RegisterDatanodeRequestProto(registration=_registration(cluster="CID-other")),
                dnp.RegisterDatanodeResponseProto,
                timeout=5,
            )
        assert e.value.class_name.endswith("IncorrectVersionException")
        reply = await dn.call(
            "registerDatanode",
            dnp.RegisterDatanodeRequestProto(registration=_registration(ip="10.1.1.1")),
            dnp.RegisterDatanodeResponseProto,
            timeout=5,
        )
        assert reply.registration.datanodeID.ipAddr == "127.0.0.1"
        # a call naming another address than the caller's is refused as unregistered
        with pytest.raises(RemoteError, match="at 10.1.1.1, but the call comes from 127.0.0.1"):
            await dn.call(
                "sendHeartbeat",
                dnp.HeartbeatRequestProto(registration=_registration(ip="10.1.1.1")),
                dnp.HeartbeatResponseProto,
                timeout=5,
            )
        hb = await dn.call(
            "sendHeartbeat",
            dnp.HeartbeatRequestProto(registration=_registration()),
            dnp.HeartbeatResponseProto,
            timeout=5,
        )
        assert (hb.haStatus.state, hb.haStatus.txid) == (srv.NNHAStatusHeartbeatProto.STANDBY, 3)
        # a report of another pool, and one in both encodings, are refused by name
        with pytest.raises(RemoteError, match="names block pool BP-9; this NameNode serves"):
            await dn.call(
                "blockReport",
                dnp.BlockReportRequestProto(registration=_registration(), blockPoolId="BP-9"),
                dnp.BlockReportResponseProto,
                timeout=5,
            )
        both = dnp.BlockReportRequestProto(registration=_registration(), blockPoolId=POOL)
        both.reports.add(storage=wire.storage_to_proto(DISK), blocks=[0, 0], numberOfBlocks=0)
        with pytest.raises(RemoteError, match="has both the legacy blocks list and numberOfBlocks"):
            await dn.call("blockReport", both, dnp.BlockReportResponseProto, timeout=5)
        truncated = dnp.BlockReportRequestProto(registration=_registration(), blockPoolId=POOL)
        truncated.reports.add(storage=wire.storage_to_proto(DISK), numberOfBlocks=5)
        truncated.reports[0].blocksBuffers.append(b"\x02\x01\x01\x00")
        with pytest.raises(RemoteError, match="5 replicas cannot fit in 4 bytes"):
            await dn.call("blockReport", truncated, dnp.BlockReportResponseProto, timeout=5)
        assert blocks.reports == []
    finally:
        await dn.close()
        await intruder.close()
        await server.stop()


class FakeReplicas:
    async def visible_length(self, block: ExtendedBlock) -> int:
        if block.block_id == 42 and block.pool_id == POOL:
            return 12345
        raise ReplicaNotFoundError(f"Replica not found for {block.pool_id}:blk_{block.block_id}")


async def test_get_replica_visible_length() -> None:
    server = IpcServer(name="dn-test")
    server.register(CLIENT_DATANODE_PROTOCOL, client_datanode_methods(FakeReplicas()))
    await server.start("127.0.0.1", 0)
    client = IpcClient(f"127.0.0.1:{server.port}", CLIENT_DATANODE_PROTOCOL)
    try:
        req = cdp.GetReplicaVisibleLengthRequestProto(
            block=wire.extended_block_to_proto(ExtendedBlock(POOL, 42, 1001))
        )
        reply = await client.call(
            "getReplicaVisibleLength", req, cdp.GetReplicaVisibleLengthResponseProto, timeout=5
        )
        assert reply.length == 12345
        req.block.blockId = 43
        with pytest.raises(RemoteError, match="Replica not found") as e:
            await client.call(
                "getReplicaVisibleLength", req, cdp.GetReplicaVisibleLengthResponseProto, timeout=5
            )
        assert e.value.class_name.endswith("ReplicaNotFoundException")
    finally:
        await client.close()
        await server.stop()


def test_commands_round_trip_the_wire() -> None:
    target = wire.TransferTarget(DatanodeId("10.0.0.2", "dn2", "u2", 1, 2, 3), "DS-9", "SSD")
    commands: list[DatanodeCommand] = [
        invalidate(5),
        TransferCommand(POOL, (Block(-3, 1001, 9),), ((target,),)),
        RecoveryCommand(
            (
                wire.RecoveringBlock(
                    ExtendedBlock(POOL, 6, 1001, 10),
                    1005,
                    (DatanodeId("10.0.0.3", "dn3", "u3", 1, 2, 3),),
                    ("DS-3",),
                ),
            )
        ),
        FinalizeCommand(POOL),
        RegisterCommand(),
    ]
    for c in commands:
        assert wire.command_from_proto(wire.command_to_proto(c)) == c
    broken = dnp.DatanodeCommandProto(cmdType=dnp.DatanodeCommandProto.BlockCommand)
    with pytest.raises(wire.DatanodeProtocolError, match="BlockCommand lacks its blkCmd"):
        wire.command_from_proto(broken)
    other = dnp.DatanodeCommandProto(cmdType=dnp.DatanodeCommandProto.BalancerBandwidthCommand)
    assert wire.command_from_proto(other) == wire.OtherCommand("BalancerBandwidthCommand")


def test_namenode_addresses_from_the_config() -> None:
    from qjm.config import config_from_dict

    cfg = config_from_dict(
        {
            "namenodes": {
                "nn1": {
                    "rpc_address": "127.0.0.1:8020",
                    "http_address": "127.0.0.1:9870",
                    "name_dir": "/var/lib/qjm/nn1",
                },
                "nn2": {
                    "rpc_address": "127.0.0.1:8021",
                    "http_address": "127.0.0.1:9871",
                    "name_dir": "/var/lib/qjm/nn2",
                },
            }
        }
    )
    assert namenode_addresses(cfg) == {"nn1": "127.0.0.1:8020", "nn2": "127.0.0.1:8021"}
    s = settings_from_config(cfg.datanode)
    assert (s.heartbeat_interval_s, s.block_report_interval_s, s.ibr_interval_s) == (
        3.0,
        21600.0,
        0.0,
    )


@dataclass
class FakeNN:
    ha_state: NameNodeHAState
    applied: int
    synced: int | None

    def last_txid(self) -> int:
        return self.applied

    def synced_txid(self) -> int | None:
        return self.synced


@pytest.mark.parametrize(
    ("nn", "want"),
    [
        # the active claims its synced txid, never an edit no majority took
        (FakeNN(NameNodeHAState.ACTIVE, 110, 105), HAStatus(HAState.ACTIVE, 105)),
        (FakeNN(NameNodeHAState.ACTIVE, 7, None), HAStatus(HAState.STANDBY, 7)),
        (FakeNN(NameNodeHAState.STANDBY, 90, None), HAStatus(HAState.STANDBY, 90)),
        (FakeNN(NameNodeHAState.OBSERVER, 91, None), HAStatus(HAState.STANDBY, 91)),
        (FakeNN(NameNodeHAState.INITIALIZING, 0, None), HAStatus(HAState.STANDBY, 0)),
    ],
)
def test_service_ha_status(nn: FakeNN, want: HAStatus) -> None:
    ctx = CallContext(DATANODE_PROTOCOL, "sendHeartbeat", "hdfs", b"", 1, 0, "127.0.0.1:1")
    assert ServiceHAStatus(nn).ha_status(ctx) == want
