"""The operator tools against real processes (design §N.11): every daemon's /jmx read beside
its /status, /conf beside the cluster's hadoop-conf, /logs/ and its path rule, `qjm dfsadmin`
-safemode, -saveNamespace, -rollEdits, the quotas and -metasave with HDFS's texts, the
genuine Java DistributedFileSystem calling the same ClientProtocol methods, and `qjm getconf`.
One manual-HA cluster: 3 JournalNodes, 2 NameNodes (nn1 active), 2 DataNodes.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import run_qjm
from hadoop_clients import client_config, java_program, run_java
from ports import free_port_block
from qjm.cluster.launcher import cluster_down, cluster_up, daemons_of
from qjm.config import DataNodeSettings
from qjm.testing.wait import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """nn1 active, nn2 standby, 2 DataNodes heartbeating every 0.3 s, no safe mode wait."""
    directory = tmp_path_factory.mktemp("ops") / "c"
    info = cluster_up(
        directory,
        journalnodes=3,
        namenodes=2,
        base_port=free_port_block(16),
        datanodes=2,
        datanode_settings=DataNodeSettings(heartbeat_interval_ms=300, safemode_extension_ms=0),
    )
    info["dir"] = directory
    info["config"] = str(directory / "cluster.toml")
    try:
        yield info
    finally:
        cluster_down(directory)


def get(address: str, path: str) -> tuple[int, bytes]:
    """(status, body) of GET path, sent as written (no normalizing of '..')."""
    host, port = address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def get_json(address: str, path: str) -> Any:
    status, body = get(address, path)
    assert status == 200, (path, status, body[:500])
    return json.loads(body)


def beans_of(address: str, query: str = "") -> dict[str, dict[str, Any]]:
    return {b["name"]: b for b in get_json(address, f"/jmx{query}")["beans"]}


def daemons(cluster: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {n: d for n, d in daemons_of(cluster).items() if d.get("kind") == kind}


def test_every_daemon_serves_hdfs_beans_that_agree_with_its_status(
    cluster: dict[str, Any],
) -> None:
    nn1 = cluster["nn1"]["http"]

    def namenode_agrees() -> bool:
        st = get_json(nn1, "/status")
        beans = beans_of(nn1)
        status = beans["Hadoop:service=NameNode,name=NameNodeStatus"]
        fs = beans["Hadoop:service=NameNode,name=FSNamesystem"]
        state = beans["Hadoop:service=NameNode,name=FSNamesystemState"]
        info = beans["Hadoop:service=NameNode,name=NameNodeInfo"]
        bm = st["block_management"]
        assert status["State"] == st["ha_state"] == "active" == fs["tag.HAState"]
        assert status["HostAndPort"] == st["rpc_address"] and status["NNRole"] == "NameNode"
        assert fs["NumLiveDataNodes"] == state["NumLiveDataNodes"] == 2
        assert len(json.loads(info["LiveNodes"])) == 2 and json.loads(info["DeadNodes"]) == {}
        return (
            fs["BlocksTotal"] == bm["blocks"]
            and fs["FilesTotal"] == st["inodes"] == info["TotalFiles"]
            and fs["CapacityTotal"] == bm["capacity"] == info["Total"]
            and fs["LastWrittenTransactionId"] == st["last_applied_txid"]
        )

    wait_until("nn1's beans equal its /status", namenode_agrees, timeout_s=20)
    for name, d in daemons_of(cluster).items():  # Hadoop IPC's bean, after its /status
        if d.get("kind") not in ("namenode", "journalnode"):
            continue
        calls = get_json(d["http"], "/status")["rpc"]["calls"]
        port = d["rpc"].rsplit(":", 1)[1]
        kind = {"namenode": "NameNode", "journalnode": "JournalNode"}[d["kind"]]
        query = f"?qry=Hadoop:service={kind},name=RpcActivityForPort{port}"
        [bean] = beans_of(d["http"], query).values()
        assert bean["RpcQueueTimeNumOps"] >= calls > 0 and bean["ReceivedBytes"] > 0, (name, bean)
    standby = beans_of(cluster["nn2"]["http"], "?qry=Hadoop:service=NameNode,name=NameNodeStatus")
    assert [b["State"] for b in standby.values()] == ["standby"]

    for name, jn in daemons(cluster, "journalnode").items():

        def journal_agrees(jn: dict[str, Any] = jn) -> bool:
            st = get_json(jn["http"], "/status")["journals"][cluster.get("journal_id", "ns1")]
            beans = beans_of(jn["http"], "?qry=Hadoop:service=JournalNode,*")
            j = beans["Hadoop:service=JournalNode,name=Journal-ns1"]
            info = beans["Hadoop:service=JournalNode,name=JournalNodeInfo"]
            assert json.loads(info["JournalsStatus"])["ns1"] == {"Formatted": "true"}
            assert info["ClusterIds"] == [st["cluster_id"]]
            assert j["TxnsWritten"] > 0 and j["BytesWritten"] > 0
            return (
                j["LastPromisedEpoch"] == st["last_promised_epoch"]
                and j["LastWriterEpoch"] == st["last_writer_epoch"]
                and j["LastWrittenTxId"] == st["highest_written_txid"]
            )

        wait_until(f"{name}'s beans equal its /status", journal_agrees, timeout_s=20)

    for name, dn in daemons(cluster, "datanode").items():
        st = get_json(dn["http"], "/status")
        beans = beans_of(dn["http"])
        info = beans["Hadoop:service=DataNode,name=DataNodeInfo"]
        dataset = beans["Hadoop:service=DataNode,name=FSDatasetState"]
        port = st["transfer_address"].rsplit(":", 1)[1]
        [activity] = [b for n, b in beans.items() if n.endswith(f"-{port}")]
        assert activity["name"].startswith("Hadoop:service=DataNode,name=DataNodeActivity-")
        assert info["ClusterId"] == st["cluster_id"]
        assert info["RpcPort"] == st["ipc_address"].rsplit(":", 1)[1]
        assert info["DataPort"] == port
        assert set(json.loads(info["VolumeInfo"])) == {v["path"] for v in st["volumes"]}
        assert set(json.loads(info["NamenodeAddresses"]).values()) == {st["block_pool_id"]}
        assert dataset["Capacity"] == sum(v["capacity"] for v in st["volumes"])
        assert dataset["NumFailedVolumes"] == len(st["failed_volumes"]) == 0
        assert activity["HeartbeatsNumOps"] > 0
        for bean in beans.values():  # what an exporter reads: numbers as JSON numbers
            for key in ("Capacity", "DfsUsed", "Remaining", "BytesWritten", "BlocksRead"):
                if key in bean:
                    assert type(bean[key]) is int, (name, key, bean[key])

    status, body = get(nn1, "/jmx?get=Hadoop:service=NameNode,name=FSNamesystemState::FSState")
    assert status == 200 and json.loads(body)["beans"][0]["FSState"] == "Operational"
    status, body = get(nn1, "/jmx?get=Hadoop:service=NameNode,name=FSNamesystemState::Nope")
    assert status == 404 and b"No attribute with name Nope" in body


def test_conf_is_the_clusters_configuration_under_hdfs_keys(cluster: dict[str, Any]) -> None:
    client = client_config(Path(cluster["hadoop_conf"]))
    for name, d in daemons_of(cluster).items():
        if d.get("kind") not in ("namenode", "journalnode", "datanode"):
            continue
        status, body = get(d["http"], "/conf")
        assert status == 200, (name, body[:300])
        xml = {
            p.findtext("name"): p.findtext("value") for p in ET.fromstring(body).iter("property")
        }
        for key, value in client.items():  # every key the launcher wrote for clients
            assert xml.get(key) == value, (name, key)
        props = get_json(d["http"], "/conf?format=json")["properties"]
        assert {p["key"]: p["value"] for p in props} == xml
    nn1 = {p["key"]: p for p in get_json(cluster["nn1"]["http"], "/conf?format=json")["properties"]}
    assert nn1["dfs.ha.namenode.id"]["value"] == "nn1"
    assert nn1["dfs.namenode.name.dir"]["resource"] == cluster["config"]
    dn1 = get_json(cluster["dn1"]["http"], "/conf?format=json&name=dfs.datanode.address")
    assert dn1["property"]["value"] == cluster["dn1"]["transfer"]
    assert get(cluster["jn1"]["http"], "/conf?name=no.such.key")[0] == 404
    assert get(cluster["jn1"]["http"], "/conf?format=yaml")[0] == 400


def test_logs_lists_and_serves_the_log_directory_and_nothing_else(
    cluster: dict[str, Any],
) -> None:
    logs = Path(cluster["dir"]) / "logs"
    for name, d in daemons_of(cluster).items():
        if d.get("kind") not in ("namenode", "journalnode", "datanode"):
            continue
        status, page = get(d["http"], "/logs/")
        assert status == 200 and f'href="{name}.log"'.encode() in page, (name, page[:300])
    on_disk = (logs / "nn1.log").read_bytes()
    status, served = get(cluster["dn2"]["http"], "/logs/nn1.log")
    assert status == 200 and served and on_disk.startswith(served[: len(on_disk)])
    assert get(cluster["nn1"]["http"], "/logs")[0] == 302  # to /logs/
    for path in ("/logs/../cluster.toml", "/logs/..%2fcluster.toml", "/logs/%2e%2e/cluster.toml"):
        status, body = get(cluster["nn1"]["http"], path)
        assert status == 404 and b"[namenodes" not in body, (path, status, body[:200])
    assert get(cluster["nn1"]["http"], "/logs/no-such.log")[0] == 404


def dfsadmin(cluster: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    return run_qjm("dfsadmin", "--config", cluster["config"], *args)


def test_dfsadmin_safemode_savenamespace_and_rolledits(cluster: dict[str, Any]) -> None:
    nns = {nn: cluster[nn]["rpc"] for nn in ("nn1", "nn2")}

    def each(text: str, joiner: str) -> str:  # DFSAdmin's HA lines, one per NameNode
        return "".join(f"{text} {joiner} {address}\n" for address in nns.values())

    r = dfsadmin(cluster, "-safemode", "get")
    assert (r.returncode, r.stdout) == (0, each("Safe mode is OFF", "in")), r.stderr
    r = dfsadmin(cluster, "-saveNamespace")
    assert r.returncode == 255 and r.stdout == each("Save namespace failed", "for")
    assert r.stderr == 2 * (
        "saveNamespace: Safe mode should be turned ON in order to create namespace image.\n"
    )
    r = dfsadmin(cluster, "-safemode", "enter")
    assert r.stdout == each("Safe mode is ON", "in"), r.stderr
    try:
        for nn in nns:  # the standby too: it would stay in safe mode if it became active
            assert get_json(cluster[nn]["http"], "/status")["block_management"]["safe_mode"]
        r = run_qjm("dfs", "--config", cluster["config"], "mkdir", "/refused")
        assert r.returncode != 0 and "safe mode" in r.stderr, r.stderr

        def images(nn: str) -> set[str]:
            name_dir = Path(get_json(cluster[nn]["http"], "/status")["name_dir"]) / "current"
            return {p.name for p in name_dir.glob("fsimage_*") if not p.name.endswith(".md5")}

        before = {nn: images(nn) for nn in nns}
        applied = get_json(cluster["nn2"]["http"], "/status")["last_applied_txid"]
        r = dfsadmin(cluster, "-saveNamespace")
        assert (r.returncode, r.stdout) == (0, each("Save namespace successful", "for")), r.stderr
        [new] = images("nn1") - before["nn1"]
        image_txid = int(new.split("_")[1])
        st = get_json(cluster["nn1"]["http"], "/status")
        assert st["image_txid"] == image_txid <= st["last_applied_txid"]
        # the active's image ends a finalized segment: the journal holds one ending there
        jn = get_json(cluster["jn1"]["http"], "/status")["journals"]["ns1"]
        assert any(s["end"] == image_txid and not s["in_progress"] for s in jn["segments"]), jn
        # the standby saved what it applied, in its own name dir
        standby = get_json(cluster["nn2"]["http"], "/status")
        assert standby["image_txid"] >= applied
        assert standby["image_txid"] in {int(n.split("_")[1]) for n in images("nn2")}
        # a standby told to enter safe mode keeps it when it becomes active, as HDFS's
        failover = ["haadmin", "--config", cluster["config"], "-failover"]
        assert run_qjm(*failover, "nn1", "nn2").returncode == 0
        try:
            st = get_json(cluster["nn2"]["http"], "/status")
            assert st["ha_state"] == "active" and st["block_management"]["safe_mode"], st
            r = run_qjm("dfs", "--config", cluster["config"], "mkdir", "/refused")
            assert r.returncode != 0 and "safe mode" in r.stderr, r.stderr
        finally:
            r = run_qjm(*failover, "nn2", "nn1")
            assert r.returncode == 0, r.stderr
    finally:
        r = dfsadmin(cluster, "-safemode", "leave")
        assert r.stdout == each("Safe mode is OFF", "in"), r.stderr
    assert dfsadmin(cluster, "-safemode", "wait").stdout == each("Safe mode is OFF", "in")
    one = run_qjm("dfsadmin", "--namenodes", nns["nn1"], "-safemode", "get")
    assert one.stdout == "Safe mode is OFF\n"  # one NameNode named: HDFS's plain line

    r = dfsadmin(cluster, "-rollEdits")
    assert r.returncode == 0, r.stderr
    head, txid_line = r.stdout.splitlines()
    assert head == "Successfully rolled edit logs."
    txid = int(txid_line.removeprefix("New segment starts at txid "))
    wait_until(
        f"every JournalNode's open segment to start at {txid}",
        lambda: all(
            get_json(d["http"], "/status")["journals"]["ns1"]["current_segment"] == txid
            for d in daemons(cluster, "journalnode").values()
        ),
        timeout_s=20,
    )


def test_dfsadmin_quotas_are_enforced_and_clear(cluster: dict[str, Any]) -> None:
    def dfs(*args: str) -> subprocess.CompletedProcess[str]:
        return run_qjm("dfs", "--config", cluster["config"], *args)

    assert dfs("mkdir", "-p", "/quota/a").returncode == 0
    r = dfsadmin(cluster, "-setQuota", "2", "/quota", "/no-such-dir")
    assert r.returncode == 255 and r.stderr.startswith("setQuota: "), r.stderr
    assert "/no-such-dir" in r.stderr
    r = dfs("mkdir", "/quota/b")  # /quota and /quota/a use up the quota of 2
    assert r.returncode != 0 and "quota" in r.stderr.lower(), r.stderr
    assert dfsadmin(cluster, "-clrQuota", "/quota").returncode == 0
    assert dfs("mkdir", "/quota/b").returncode == 0
    r = dfsadmin(cluster, "-setSpaceQuota", "1m", "/quota")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    r = dfsadmin(cluster, "-setQuota", "0", "/quota")
    assert (r.returncode, r.stderr) == (255, 'setQuota: "0" is not a valid value for a quota.\n')
    usage = get_json(cluster["nn1"]["http"], "/status")  # the NameNode still serves
    assert usage["ha_state"] == "active"
    assert dfsadmin(cluster, "-clrSpaceQuota", "/quota").returncode == 0


def test_dfsadmin_metasave_writes_into_each_namenodes_log_directory(
    cluster: dict[str, Any],
) -> None:
    r = dfsadmin(cluster, "-metasave", "meta.txt")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        f"Created metasave file meta.txt in the log directory of namenode {cluster[nn]['rpc']}"
        for nn in ("nn1", "nn2")
    ]
    text = (Path(cluster["dir"]) / "logs" / "meta.txt").read_text()
    assert "Live Datanodes: 2" in text and "Metasave: Number of datanodes: 2" in text
    status, served = get(cluster["nn1"]["http"], "/logs/meta.txt")
    assert status == 200 and served.decode() == text
    r = dfsadmin(cluster, "-metasave", "../escape.txt")
    assert r.returncode == 255 and "not a plain file name" in r.stderr
    assert not (Path(cluster["dir"]) / "escape.txt").exists()


JAVA_ADMIN = """
import java.net.URI;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.SafeModeAction;
import org.apache.hadoop.hdfs.DistributedFileSystem;

public class AdminCalls {
  public static void main(String[] args) throws Exception {
    Configuration conf = new Configuration();
    DistributedFileSystem dfs =
        (DistributedFileSystem) FileSystem.get(URI.create("hdfs://" + args[0]), conf);
    System.out.println("safemode " + dfs.setSafeMode(SafeModeAction.GET));
    long txid = dfs.rollEdits();
    System.out.println("rolled " + txid);
    Path dir = new Path("/java-quota");
    dfs.mkdirs(dir);
    dfs.setQuota(dir, 7, 1L << 30);
    System.out.println("quota " + dfs.getContentSummary(dir).getQuota() + " "
        + dfs.getContentSummary(dir).getSpaceQuota());
    System.out.println("enter " + dfs.setSafeMode(SafeModeAction.ENTER));
    System.out.println("saved " + dfs.saveNamespace(0, 0));
    System.out.println("leave " + dfs.setSafeMode(SafeModeAction.LEAVE));
    dfs.metaSave("java-meta.txt");
    System.out.println("metasaved yes");
  }
}
"""


def test_the_java_client_calls_the_same_admin_methods(
    cluster: dict[str, Any], tmp_path: Path
) -> None:
    classes = java_program(JAVA_ADMIN, tmp_path)
    r = run_java(classes, "AdminCalls", Path(cluster["hadoop_conf"]), "ns1")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = dict(line.split(" ", 1) for line in r.stdout.splitlines())
    assert lines["safemode"] == "false" and lines["enter"] == "true"
    assert lines["saved"] == "true" and lines["leave"] == "false"
    assert lines["quota"] == f"7 {1 << 30}"
    meta = (Path(cluster["dir"]) / "logs" / "java-meta.txt").read_text()
    assert lines["metasaved"] == "yes" and "Live Datanodes: 2" in meta
    txid = int(lines["rolled"])
    journal = get_json(cluster["jn1"]["http"], "/status")["journals"]["ns1"]
    assert any(s["start"] == txid for s in journal["segments"]), journal


def test_getconf_reads_the_cluster_config_and_hadoop_conf_dir(cluster: dict[str, Any]) -> None:
    def getconf(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
        r = subprocess.run(
            [sys.executable, "-m", "qjm", "getconf", *args],
            capture_output=True,
            text=True,
            timeout=60,
            env={k: v for k, v in os.environ.items() if k != "HADOOP_CONF_DIR"} | (env or {}),
        )
        return r.returncode, r.stdout, r.stderr

    cfg = ["--config", cluster["config"]]
    rpc = [cluster[nn]["rpc"] for nn in ("nn1", "nn2")]
    assert getconf(*cfg, "-nnRpcAddresses") == (0, "".join(a + "\n" for a in rpc), "")
    hosts = " ".join(a.rsplit(":", 1)[0] for a in rpc)
    assert getconf(*cfg, "-namenodes") == (0, hosts + "\n", "")
    jn_hosts = {d["rpc"].rsplit(":", 1)[0] for d in daemons(cluster, "journalnode").values()}
    code, out, _ = getconf(*cfg, "-journalNodes")
    assert code == 0 and set(out.split()) == jn_hosts
    assert getconf(*cfg, "-confKey", "dfs.nameservices") == (0, "ns1\n", "")
    assert getconf(*cfg, "-confKey", "no.such.key") == (
        255,
        "",
        "Configuration no.such.key is missing.\n",
    )
    # HADOOP_CONF_DIR alone: the files the launcher wrote, read as HDFS reads them
    env = {"HADOOP_CONF_DIR": cluster["hadoop_conf"]}
    assert getconf("-nnRpcAddresses", env=env) == (0, "".join(a + "\n" for a in rpc), "")
    assert getconf("-confKey", "fs.defaultFS", env=env) == (0, "hdfs://ns1\n", "")
    code, _, err = getconf("-namenodes")
    assert code == 1 and "HADOOP_CONF_DIR" in err
