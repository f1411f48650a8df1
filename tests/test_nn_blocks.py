"""Block management wired into the NameNode (design §B.14): an HA pair of in-process
NameNodes on real JournalNode processes, DataNode-side actors (BPOfferService) over real
qjm.ipc registering with both, and a client over ClientProtocol."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conftest import JNFactory
from nn_harness import Rpc
from qjm.datanode.bp_service import BPOfferService, BPServiceSettings
from qjm.hdfs.block_report import ReplicaState, ReportedReplica
from qjm.hdfs.datanode_protocol import (
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
from qjm.hdfs.proto import hdfs_pb2 as hdfs
from qjm.namenode.proto import ClientNamenodeProtocol_pb2 as cn
from qjm.namenode.server import NameNode
from qjm.testing.wait import wait_until_async
from test_namenode_ha import caught_up, pair

FAST = BPServiceSettings(
    heartbeat_interval_s=0.05, rpc_timeout_s=5.0, backoff_initial_s=0.05, backoff_max_s=0.2
)
CLIENT = "DFSClient_test"


@dataclass
class DataNodeSide:
    """One DataNode's storage as its actors see it, and the commands it took."""

    uuid: str
    xfer_port: int
    storage: DatanodeStorage
    replicas: dict[int, ReportedReplica] = field(default_factory=dict)
    taken: list[Any] = field(default_factory=list)
    bpos: BPOfferService | None = None

    def datanode_id(self) -> DatanodeId:
        return DatanodeId("127.0.0.1", f"host-{self.uuid}", self.uuid, self.xfer_port, 1, 2)

    async def init_block_pool(self, namespace: NamespaceInfo) -> StorageInfo:
        return namespace.storage

    def heartbeat_facts(self, pool_id: str) -> HeartbeatFacts:
        return HeartbeatFacts((StorageReport(self.storage, capacity=1 << 40, remaining=1 << 39),))

    async def block_reports(self, pool_id: str) -> list[StorageBlockReport]:
        return [StorageBlockReport(self.storage, tuple(self.replicas.values()))]

    async def transfer(self, command: TransferCommand) -> None:
        self.taken.append(command)

    async def invalidate(self, command: InvalidateCommand) -> None:
        self.taken.append(command)
        for b in command.blocks:
            self.replicas.pop(b.block_id, None)

    async def recover(self, command: RecoveryCommand) -> None:
        self.taken.append(command)

    async def finalize(self, command: FinalizeCommand) -> None:
        self.taken.append(command)

    def received(self, block: Block) -> None:
        """A replica written and finalized here: told to every NameNode."""
        self.replicas[block.block_id] = ReportedReplica(
            block.block_id, block.num_bytes, block.gen_stamp, ReplicaState.FINALIZED
        )
        assert self.bpos is not None
        self.bpos.notify_received(block, self.storage)

    def invalidated(self) -> set[int]:
        return {
            b.block_id for c in self.taken if isinstance(c, InvalidateCommand) for b in c.blocks
        }


async def call(rpc: Rpc, method: str, req: Any, resp: type[Any]) -> Any:
    return await rpc.client.call(method, req, resp, 10.0)


async def write_file(rpc: Rpc, path: str, dns: Sequence[DataNodeSide], nn: NameNode) -> Block:
    """create, addBlock (targets checked), complete false, replicas received, complete true."""
    created = await call(
        rpc,
        "create",
        cn.CreateRequestProto(
            src=path,
            masked=hdfs.FsPermissionProto(perm=0o644),
            clientName=CLIENT,
            createFlag=cn.CREATE,
            createParent=True,
            replication=2,
            blockSize=1 << 27,
        ),
        cn.CreateResponseProto,
    )
    fid = created.fs.fileId
    added = await call(
        rpc,
        "addBlock",
        cn.AddBlockRequestProto(src=path, clientName=CLIENT, fileId=fid),
        cn.AddBlockResponseProto,
    )
    lb = added.block
    assert {d.id.datanodeUuid for d in lb.locs} == {d.uuid for d in dns}
    assert list(lb.storageIDs) == [
        next(d.storage.storage_uuid for d in dns if d.uuid == loc.id.datanodeUuid)
        for loc in lb.locs
    ]
    assert lb.blockToken.kind == "" and lb.offset == 0
    last = hdfs.ExtendedBlockProto(
        poolId=lb.b.poolId, blockId=lb.b.blockId, generationStamp=lb.b.generationStamp, numBytes=100
    )
    complete = cn.CompleteRequestProto(src=path, clientName=CLIENT, last=last, fileId=fid)
    assert (await call(rpc, "complete", complete, cn.CompleteResponseProto)).result is False
    block = Block(lb.b.blockId, lb.b.generationStamp, 100)
    for dn in dns:
        dn.received(block)
    await wait_until_async(
        "the replicas reported to the active",
        lambda: nn.blocks.bm.live_replicas(block.block_id) == len(dns),
    )
    assert (await call(rpc, "complete", complete, cn.CompleteResponseProto)).result is True
    return block


async def located(rpc: Rpc, path: str) -> list[set[str]]:
    """getBlockLocations: each block's DataNode uuids."""
    resp = await call(
        rpc,
        "getBlockLocations",
        cn.GetBlockLocationsRequestProto(src=path, offset=0, length=1 << 40),
        cn.GetBlockLocationsResponseProto,
    )
    return [{d.id.datanodeUuid for d in b.locs} for b in resp.locations.blocks]


@pytest.mark.slow
async def test_an_ha_pair_manages_blocks_with_datanodes(
    tmp_path: Path, jn_factory: JNFactory
) -> None:
    _, nn1, nn2 = await pair(jn_factory, tmp_path)
    dns = [DataNodeSide(f"dn-{i}", 9866 + i, DatanodeStorage(f"DS-{i}")) for i in (1, 2)]
    addresses = {"nn1": nn1.rpc_address(), "nn2": nn2.rpc_address()}
    rpc1, rpc2 = Rpc(nn1.rpc_address()), Rpc(nn2.rpc_address())
    try:
        for dn in dns:
            dn.bpos = BPOfferService(addresses, dn, dn, FAST, user="hdfs")
            await dn.bpos.start()
        for nn in (nn1, nn2):
            await wait_until_async(
                f"both DataNodes registered and reported to {nn.name}",
                lambda nn=nn: all(
                    (n := nn.blocks.dm.nodes.get(dn.uuid)) is not None
                    and n.reported_since_registration()
                    for dn in dns
                ),
            )
        assert not nn1.blocks.safe_mode.is_on  # a fresh cluster left safe mode at once

        # the active: targets among registered nodes, complete once replicas are reported
        block = await write_file(rpc1, "/f", dns, nn1)
        assert await located(rpc1, "/f") == [{"dn-1", "dn-2"}]
        report = await call(
            rpc1,
            "getDatanodeReport",
            cn.GetDatanodeReportRequestProto(type=cn.LIVE),
            cn.GetDatanodeReportResponseProto,
        )
        assert sorted(d.id.datanodeUuid for d in report.di) == ["dn-1", "dn-2"]
        stats = await call(
            rpc1, "getFsStats", cn.GetFsStatusRequestProto(), cn.GetFsStatsResponseProto
        )
        assert stats.capacity == 2 << 40 and stats.under_replicated == 0

        # the standby holds the block map too (reports queued until its tailer applied)
        await caught_up(nn2, nn1)
        await wait_until_async(
            "the standby's block map to hold the replicas",
            lambda: (
                {n.uuid for n, _ in nn2.blocks.bm.locations(block.block_id)} == {"dn-1", "dn-2"}
            ),
        )

        # The DataNodes pause across the failover: each reports in full to a new active at
        # its next heartbeat (design §B.6), which must come after the setReplication below.
        for dn in dns:
            assert dn.bpos is not None
            await dn.bpos.stop()

        # failover: the new active answers with locations at once
        await nn1.transition_to_standby("test")
        await nn2.transition_to_active("test")
        assert await located(rpc2, "/f") == [{"dn-1", "dn-2"}]

        # an excess replica's deletion waits until the node re-reports after the failover
        req = cn.SetReplicationRequestProto(src="/f", replication=1)
        assert (await call(rpc2, "setReplication", req, cn.SetReplicationResponseProto)).result
        assert block.block_id in nn2.blocks.bm.postponed
        assert not nn2.blocks.bm.invalidates
        for dn in dns:  # back: each reports to the new active in full
            dn.bpos = BPOfferService(addresses, dn, dn, FAST, user="hdfs")
            await dn.bpos.start()
        await wait_until_async(
            "one replica of /f deleted after the re-reports",
            lambda: sum(block.block_id in dn.invalidated() for dn in dns) == 1,
        )
        assert block.block_id not in nn2.blocks.bm.postponed

        # a deleted file's blocks: DNA_INVALIDATE from the active only, after the sync
        g = await write_file(rpc2, "/g", dns, nn2)
        removals: list[int] = []  # the synced txid when the blocks left the map
        remove = nn2.blocks.bm.remove_blocks

        def recording(ids: Any) -> None:
            el = nn2.edit_log
            assert el is not None
            removals.append(int(el.synced_txid))
            remove(ids)

        nn2.blocks.bm.remove_blocks = recording  # type: ignore[method-assign]
        req2 = cn.DeleteRequestProto(src="/g", recursive=False)
        assert (await call(rpc2, "delete", req2, cn.DeleteResponseProto)).result
        el = nn2.edit_log
        assert el is not None
        delete_txid = int(el.last_txid)  # nothing else writes meanwhile
        assert removals and all(synced >= delete_txid for synced in removals), removals
        await wait_until_async(
            "both replicas of /g deleted",
            lambda: all(g.block_id in dn.invalidated() for dn in dns),
        )
        await caught_up(nn1, nn2)
        assert nn1.blocks.bm.block_info(g.block_id) is None  # the standby dropped it too
        assert not nn1.blocks.bm.invalidates  # and queued no command
        for dn in dns:
            assert dn.bpos is not None
            assert dn.bpos.claims.active == "nn2"
    finally:
        for dn in dns:
            if dn.bpos is not None:
                await dn.bpos.stop()
        await rpc1.close()
        await rpc2.close()
        await nn1.stop()
        await nn2.stop()
