"""Decommission against real processes (design §B.20): a DataNode put on the exclude list and
`qjm dfsadmin -refreshNodes` run, then a NameNode failover while its blocks are copied; the
new active finishes the job, every file reads back, and the genuine Java API, fsck and
dfsadmin -report show the node decommissioned. One manual-HA cluster of 2 NameNodes and 4
DataNodes that heartbeat every 0.3 s.
"""

from __future__ import annotations

import json
import random
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hdfs_native
import pytest

from conftest import run_qjm
from hadoop_clients import block_locations, check, java_program, native_client, run_java
from ports import free_port_block
from qjm.cluster.launcher import cluster_down, cluster_up
from qjm.config import DataNodeSettings, NameNodeSettings
from qjm.testing.wait import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

DATANODES = 4


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """nn1 active, nn2 standby, 4 DataNodes; the NameNodes' exclude list starts empty."""
    directory = tmp_path_factory.mktemp("decommission") / "c"
    exclude = directory.parent / "dfs.exclude"
    exclude.write_text("# DataNodes to decommission\n")
    info = cluster_up(
        directory,
        journalnodes=3,
        namenodes=2,
        base_port=free_port_block(10 + 3 * DATANODES),
        namenode_settings=NameNodeSettings(
            block_size=1 << 20, hosts_exclude=str(exclude), redundancy_interval_ms=1000
        ),
        datanodes=DATANODES,
        datanode_settings=DataNodeSettings(
            heartbeat_interval_ms=300, heartbeat_recheck_ms=1000, safemode_extension_ms=1000
        ),
    )
    info["exclude"] = exclude
    try:
        yield info
    finally:
        cluster_down(directory)


def admin_states(cluster: dict[str, Any], nn: str) -> dict[str, str]:
    """Transfer address -> admin state, as a NameNode's /status shows its DataNodes."""
    with urllib.request.urlopen(f"http://{cluster[nn]['http']}/status", timeout=10) as r:
        rows = json.load(r)["datanodes"]
    return {d["transfer_address"]: d["admin_state"] for d in rows}


ADMIN_JAVA = """
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.HdfsConstants.DatanodeReportType;

public class AdminStates {
  public static void main(String[] args) throws Exception {
    DistributedFileSystem fs = (DistributedFileSystem) FileSystem.get(new Configuration());
    for (DatanodeInfo d : fs.getDataNodeStats(DatanodeReportType.LIVE)) {
      System.out.println(d.getXferAddr() + "\\t" + d.getAdminState());
    }
  }
}
"""


def test_a_decommission_survives_a_failover_and_every_file_reads_back(
    cluster: dict[str, Any], tmp_path: Path
) -> None:
    conf = Path(cluster["hadoop_conf"])
    config = str(cluster["config"])
    client = native_client(conf)
    files = {f"/d/f{i}": random.Random(i).randbytes(150_000 + 70_000 * i) for i in range(16)}
    for path, data in files.items():
        w = client.create(path, hdfs_native.WriteOptions(replication=2, create_parent=True))
        w.write(data)
        w.close()

    def where(path: str) -> list[list[str]]:
        located = block_locations(cluster["nn1"]["rpc"], path)
        return [[f"{x.id.ipAddr}:{x.id.xferPort}" for x in b.locs] for b in located.blocks]

    held: dict[str, int] = {}
    for path in files:
        for locs in where(path):
            for address in locs:
                held[address] = held.get(address, 0) + 1
    victim = max(held, key=lambda a: held[a])
    cluster["exclude"].write_text(f"# DataNodes to decommission\n{victim}\n")
    refreshed = run_qjm("dfsadmin", "--config", config, "-refreshNodes")
    assert refreshed.returncode == 0, refreshed.stderr
    assert refreshed.stdout.count("Refresh nodes successful for ") == 2
    for nn in ("nn1", "nn2"):  # both NameNodes took it (a standby too, as HDFS's)
        assert admin_states(cluster, nn)[victim] in ("DECOMMISSION_INPROGRESS", "DECOMMISSIONED")

    # a failover while the victim's blocks are copied: the new active carries on
    done = run_qjm("haadmin", "--config", config, "-failover", "nn1", "nn2")
    assert done.returncode == 0, done.stderr
    wait_until(
        lambda: f"{victim} decommissioned by nn2: {admin_states(cluster, 'nn2')}",
        lambda: admin_states(cluster, "nn2")[victim] == "DECOMMISSIONED",
        timeout_s=90.0,
        poll_s=0.5,
    )
    for path, data in files.items():
        with client.read(path) as f:
            assert bytes(f.read()) == data
        located = block_locations(cluster["nn2"]["rpc"], path).blocks
        for b in located:
            others = [
                f"{x.id.ipAddr}:{x.id.xferPort}"
                for x in b.locs
                if f"{x.id.ipAddr}:{x.id.xferPort}" != victim
            ]
            assert len(others) >= 2, (path, b.b.blockId, others)

    classes = java_program(ADMIN_JAVA, tmp_path)
    seen = dict(
        line.split("\t") for line in check(run_java(classes, "AdminStates", conf)).splitlines()
    )
    assert seen[victim] == "Decommissioned"
    assert sorted(s for a, s in seen.items() if a != victim) == ["In Service"] * (DATANODES - 1)

    report = run_qjm("dfsadmin", "--config", config, "-report")
    assert report.returncode == 0, report.stderr
    [block] = [b for b in report.stdout.split("\n\n") if f"Name: {victim} " in b]
    assert "Decommission Status : Decommissioned" in block
    fsck = run_qjm("fsck", "--config", config, "/d", "-files", "-blocks", "-replicaDetails")
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    assert f"DatanodeInfoWithStorage[{victim}," in fsck.stdout
    assert "(DECOMMISSIONED)" in fsck.stdout and "Under replicated" not in fsck.stdout

    # taken off the list again: back in service, and its now extra replicas are deleted
    cluster["exclude"].write_text("")
    assert run_qjm("dfsadmin", "--config", config, "-refreshNodes").returncode == 0
    wait_until(
        "the victim back in service on both NameNodes",
        lambda: all(admin_states(cluster, nn)[victim] == "NORMAL" for nn in ("nn1", "nn2")),
        timeout_s=30.0,
    )

    def replicas() -> list[int]:
        return [
            len(b.locs) for p in files for b in block_locations(cluster["nn2"]["rpc"], p).blocks
        ]

    wait_until(
        lambda: f"every block back to 2 replicas: {replicas()}",
        lambda: set(replicas()) == {2},
        timeout_s=60.0,
        poll_s=0.5,
    )
    for path, data in files.items():
        with client.read(path) as f:
            assert bytes(f.read()) == data
