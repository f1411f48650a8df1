"""The pure parts of the operator tools (design §N.11): JMX queries and bean shaping, /conf's
rendering and key mapping, /logs/'s path rule, dfsadmin's texts and quota arguments, getconf's
answers. The real-cluster judges are in test_operator_cluster.py."""

from __future__ import annotations

import argparse
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from qjm.cli.dfsadmin import (
    QUOTA_DONT_SET,
    QUOTA_RESET,
    metasave_text,
    parse_quota,
    quota_requests,
    roll_edits_text,
    safemode_line,
    safemode_text,
    save_namespace_line,
)
from qjm.cli.getconf import getconf, journal_hosts, namenode_addresses
from qjm.config import ClusterConfig, DataNodeConfig, JournalNodeConfig, NameNodeConfig
from qjm.datanode.server import jmx_beans as dn_beans
from qjm.hdfs.servlets import (
    bean_matches,
    conf_json,
    conf_xml,
    log_file,
    rpc_activity_bean,
    select_beans,
)
from qjm.hdfs.site_conf import REDACTED, conf_properties, core_site, hdfs_site, redact
from qjm.journalnode.http import jmx_beans as jn_beans
from qjm.journalnode.journal import JournalCounters
from qjm.namenode import admin_calls
from qjm.namenode.http import jmx_beans as nn_beans

NN = "Hadoop:service=NameNode,name=NameNodeStatus"
FS = "Hadoop:service=NameNode,name=FSNamesystem"


@pytest.mark.parametrize(
    ("name", "pattern", "matches"),
    [
        (NN, "*:*", True),
        (NN, "Hadoop:*", True),
        (NN, "Hadoop:service=NameNode,*", True),
        (NN, "Hadoop:name=NameNodeStatus,service=NameNode", True),  # order does not matter
        (NN, "Hadoop:service=NameNode", False),  # not a pattern: every key property must match
        (NN, "Hadoop:service=DataNode,*", False),
        (NN, "Hadoop:service=NameNode,name=Name*", True),
        (FS, "Hadoop:service=NameNode,name=FSNamesystem", True),
        (FS + "State", "Hadoop:service=NameNode,name=FSNamesystem", False),
        (NN, "java.lang:*", False),
        (NN, "Had?op:*", True),
    ],
)
def test_a_query_matches_as_a_jmx_object_name_pattern(
    name: str, pattern: str, matches: bool
) -> None:
    assert bean_matches(name, pattern) is matches


BEANS = [
    {"name": NN, "modelerType": "NameNode", "State": "active"},
    {"name": FS, "modelerType": "FSNamesystem", "BlocksTotal": 7},
]


@pytest.mark.parametrize(
    ("query", "status", "body"),
    [
        ({}, 200, {"beans": BEANS}),
        ({"qry": "Hadoop:service=NameNode,name=FS*"}, 200, {"beans": BEANS[1:]}),
        ({"qry": "*NameNodeStatus"}, 200, {"beans": BEANS[:1]}),  # a glob, not an ObjectName
        ({"qry": "Hadoop:service=JournalNode,*"}, 200, {"beans": []}),
        (
            {"get": f"{FS}::BlocksTotal"},
            200,
            {"beans": [{"name": FS, "modelerType": "FSNamesystem", "BlocksTotal": 7}]},
        ),
        (
            {"get": f"{FS}::Nope"},
            404,
            {"result": "ERROR", "message": "No attribute with name Nope was found."},
        ),
        (
            {"get": "Hadoop:service=X,name=Y::A"},
            404,
            {"result": "ERROR", "message": "No bean with name Hadoop:service=X,name=Y was found."},
        ),
        ({"get": FS}, 400, {"result": "ERROR", "message": "query format is not as expected."}),
    ],
)
def test_jmx_answers_as_the_jmx_json_servlet(
    query: dict[str, str], status: int, body: dict[str, Any]
) -> None:
    assert select_beans(BEANS, query) == (status, body)


def nn_status(**bm: Any) -> dict[str, Any]:
    """A NameNode status_dict with two DataNodes, one dead."""
    block_management = {
        "safe_mode": False,
        "safe_mode_tip": "",
        "capacity": 1000,
        "used": 100,
        "remaining": 800,
        "blocks": 5,
        "under_replicated_blocks": 1,
        "pending_deletion_blocks": 2,
        "missing_blocks": 0,
        "corrupt_blocks": 0,
        "postponed_misreplicated_blocks": 0,
        "pending_datanode_messages": 3,
        "live_datanodes": 1,
        "dead_datanodes": 1,
    } | bm
    dn = {
        "hostname": "h",
        "transfer_address": "10.0.0.1:9866",
        "http_address": "10.0.0.1:9864",
        "stale": False,
        "capacity": 1000,
        "used": 100,
        "remaining": 800,
        "blocks": 5,
        "xceivers": 4,
        "last_heartbeat_s_ago": 1.5,
        "admin_state": "NORMAL",
    }
    return {
        "version": "0.1.0",
        "ha_state": "active",
        "state_since": 12.5,
        "rpc_address": "127.0.0.1:8020",
        "name_dir": "/n",
        "last_applied_txid": 42,
        "image_txid": 40,
        "inodes": 9,
        "block_management": block_management,
        "datanodes": [
            dn | {"state": "live"},
            dn | {"hostname": "g", "transfer_address": "10.0.0.2:9866", "state": "dead"},
        ],
    }


IDS = {
    "cluster_id": "CID-1",
    "block_pool_id": "BP-1",
    "security_enabled": False,
    "hostname": "nnhost",
    "started_at": 100.0,
}


def test_the_namenode_beans_carry_the_status_figures() -> None:
    beans = {b["name"]: b for b in nn_beans(nn_status(), IDS)}
    status = beans[NN]
    assert status["State"] == "active" and status["HostAndPort"] == "127.0.0.1:8020"
    assert status["LastHATransitionTime"] == 12500 and status["SecurityEnabled"] is False
    fs = beans[FS]
    assert fs["tag.HAState"] == "active" and fs["BlocksTotal"] == 5 and fs["FilesTotal"] == 9
    assert fs["NumLiveDataNodes"] == 1 and fs["NumDeadDataNodes"] == 1 and fs["TotalLoad"] == 4
    assert fs["TransactionsSinceLastCheckpoint"] == 2 and fs["CapacityUsedNonDFS"] == 100
    state = beans["Hadoop:service=NameNode,name=FSNamesystemState"]
    assert state["FSState"] == "Operational" and state["UnderReplicatedBlocks"] == 1
    info = beans["Hadoop:service=NameNode,name=NameNodeInfo"]
    assert info["ClusterId"] == "CID-1" and info["BlockPoolId"] == "BP-1"
    assert info["Safemode"] == "" and info["PercentUsed"] == 10.0
    assert set(json.loads(info["LiveNodes"])) == {"h:9866"}
    assert json.loads(info["DeadNodes"])["g:9866"]["xferaddr"] == "10.0.0.2:9866"
    assert json.loads(info["JournalTransactionInfo"]) == {
        "LastAppliedOrWrittenTxId": "42",
        "MostRecentCheckpointTxId": "40",
    }
    in_safe_mode = {
        b["name"]: b for b in nn_beans(nn_status(safe_mode=True, safe_mode_tip="T"), IDS)
    }
    assert in_safe_mode["Hadoop:service=NameNode,name=FSNamesystemState"]["FSState"] == "safeMode"
    assert in_safe_mode["Hadoop:service=NameNode,name=NameNodeInfo"]["Safemode"] == "T"


def numbers_are_numbers(beans: list[dict[str, Any]]) -> None:
    """What a Prometheus exporter needs: counts as JSON numbers, never strings or booleans."""
    for bean in beans:
        for key, value in bean.items():
            if key.startswith(("Num", "Blocks", "Bytes", "Capacity", "Txns", "Last")):
                assert isinstance(value, int | float) and not isinstance(value, bool), (key, value)


def test_every_count_is_a_json_number() -> None:
    numbers_are_numbers(nn_beans(nn_status(), IDS))


def test_the_journalnode_beans_are_one_per_formatted_journal() -> None:
    journal = {
        "formatted": True,
        "committed_txid": 30,
        "highest_written_txid": 25,
        "last_writer_epoch": 3,
        "last_promised_epoch": 4,
        "cluster_id": "CID-1",
    }
    st = {
        "version": "0.1.0",
        "rpc_address": "127.0.0.1:8485",
        "journals": {"ns1": journal, "new": {"formatted": False, "committed_txid": None}},
    }
    counters = JournalCounters(batches_written=2, txns_written=25, bytes_written=900)
    beans = jn_beans(st, {"ns1": counters, "new": JournalCounters()}, "jnhost")
    assert [b["name"] for b in beans] == [
        "Hadoop:service=JournalNode,name=Journal-ns1",
        "Hadoop:service=JournalNode,name=JournalNodeInfo",
    ]
    j, info = beans
    assert (j["TxnsWritten"], j["BatchesWritten"], j["BytesWritten"]) == (25, 2, 900)
    assert (j["LastWriterEpoch"], j["LastPromisedEpoch"], j["LastWrittenTxId"]) == (3, 4, 25)
    assert j["CurrentLagTxns"] == 5
    assert json.loads(info["JournalsStatus"]) == {
        "ns1": {"Formatted": "true"},
        "new": {"Formatted": "false"},
    }
    assert info["ClusterIds"] == ["CID-1"]
    numbers_are_numbers(beans)


def test_the_datanode_beans_sum_its_volumes_and_counters() -> None:
    st = {
        "version": "0.1.0",
        "cluster_id": "CID-1",
        "block_pool_id": "BP-1",
        "transfer_address": "127.0.0.1:9866",
        "ipc_address": "127.0.0.1:9867",
        "http_address": "127.0.0.1:9864",
        "volumes": [
            {"path": "/d1", "capacity": 100, "used": 10, "remaining": 80, "failed": None},
            {"path": "/d2", "capacity": 200, "used": 20, "remaining": 150, "failed": None},
        ],
        "failed_volumes": [{"path": "/d3"}],
        "namenodes": {
            "nn1": {"address": "10.0.0.1:8020", "counters": {"heartbeats": 3, "full_reports": 1}},
            "nn2": {"address": "10.0.0.2:8020", "counters": {"heartbeats": 4}},
        },
        "xceiver": {
            "active_connections": 2,
            "bytes_written": 7,
            "bytes_read": 8,
            "blocks_written": 1,
            "blocks_read": 2,
        },
        "counts": {"blocks_transferred": 3, "blocks_deleted": 4},
        "scanner": {"blocks_scanned": 5, "corrupt_found": 0},
    }
    info, dataset, activity = dn_beans(st, "dnhost")
    assert info["RpcPort"] == "9867" and info["HttpPort"] == "9864" and info["DataPort"] == "9866"
    assert json.loads(info["NamenodeAddresses"]) == {"10.0.0.1": "BP-1", "10.0.0.2": "BP-1"}
    assert set(json.loads(info["VolumeInfo"])) == {"/d1", "/d2"}
    assert (dataset["Capacity"], dataset["DfsUsed"], dataset["Remaining"]) == (300, 30, 230)
    assert dataset["NumFailedVolumes"] == 1
    assert dataset["StorageInfo"] == "FSDataset{dirpath='[/d1, /d2]'}"
    assert activity["name"] == "Hadoop:service=DataNode,name=DataNodeActivity-dnhost-9866"
    assert activity["HeartbeatsNumOps"] == 7 and activity["BlocksReplicated"] == 3
    numbers_are_numbers([dataset, activity])


def cluster_config(**kw: Any) -> ClusterConfig:
    """Two NameNodes, three JournalNodes on two hosts, one DataNode."""
    return ClusterConfig(
        namenodes={
            n: NameNodeConfig(n, f"h{i}:8020", f"h{i}:9870", f"/nn/{n}")
            for i, n in enumerate(("nn1", "nn2"), 1)
        },
        journalnodes={
            f"jn{i}": JournalNodeConfig(f"jn{i}", f"{h}:{8485 + i}", f"{h}:{8480 + i}", f"/j{i}")
            for i, h in enumerate(("j1", "j2", "j1"))
        },
        datanodes={"dn1": DataNodeConfig("dn1", "d:9866", "d:9867", "d:9864", "/a,/b")},
        source="/c/cluster.toml",
        **kw,
    )


def test_conf_holds_the_client_files_keys_and_the_daemons_own() -> None:
    cfg = cluster_config()
    props = {k: (v, r) for k, v, r in conf_properties(cfg, "datanode", "dn1")}
    for key, value in (core_site(cfg) | hdfs_site(cfg)).items():
        assert props[key][0] == value, key
    assert props["dfs.nameservices"] == ("ns1", "hdfs-site.xml")
    assert props["fs.defaultFS"] == ("hdfs://ns1", "core-site.xml")
    assert props["dfs.datanode.data.dir"] == ("/a,/b", "/c/cluster.toml")
    assert props["dfs.datanode.address"][0] == "d:9866"
    assert "dfs.namenode.name.dir" not in props  # another daemon's key
    nn = {k: v for k, v, _ in conf_properties(cfg, "namenode", "nn2")}
    assert nn["dfs.namenode.name.dir"] == "/nn/nn2" and nn["dfs.ha.namenode.id"] == "nn2"
    jn = {k: v for k, v, _ in conf_properties(cfg, "journalnode", "jn0")}
    assert jn["dfs.journalnode.edits.dir"] == "/j0"


@pytest.mark.parametrize(
    ("key", "shown"),
    [
        ("ssl.server.keystore.password", REDACTED),
        ("fs.s3a.secret", REDACTED),
        ("ha.zookeeper.auth", REDACTED),
        ("dfs.namenode.keytab.file", "v"),
        ("dfs.replication", "v"),
    ],
)
def test_a_secret_is_never_shown(key: str, shown: str) -> None:
    assert redact(key, "v") == shown


def test_conf_renders_as_hadoops_configuration() -> None:
    props = [("a.b", "1 < 2", "core-site.xml"), ("c", "x", "t.toml")]
    root = ET.fromstring(conf_xml(props))
    got = [
        (p.findtext("name"), p.findtext("value"), p.findtext("final"), p.findtext("source"))
        for p in root.iter("property")
    ]
    assert got == [("a.b", "1 < 2", "false", "core-site.xml"), ("c", "x", "false", "t.toml")]
    assert conf_json(props)["properties"][0] == {
        "key": "a.b",
        "value": "1 < 2",
        "isFinal": False,
        "resource": "core-site.xml",
    }


@pytest.mark.parametrize(
    ("relative", "inside"),
    [
        ("", True),
        ("nn1.log", True),
        ("sub/x.log", True),
        ("../cluster.toml", False),
        ("sub/../../etc/passwd", False),
        ("/etc/passwd", True),  # taken relative to the log directory, never absolute
        ("link-out", False),
        ("a\x00b", False),
    ],
)
def test_logs_serves_nothing_outside_the_log_directory(
    tmp_path: Path, relative: str, inside: bool
) -> None:
    logs = tmp_path / "logs"
    (logs / "sub").mkdir(parents=True)
    (logs / "link-out").symlink_to(tmp_path)
    got = log_file(logs, relative)
    assert (got is not None) is inside, got
    if got is not None:
        assert got == logs.resolve() or logs.resolve() in got.parents


def test_dfsadmins_texts_are_hdfs() -> None:
    assert safemode_text(True) == "Safe mode is ON"
    assert safemode_text(False) == "Safe mode is OFF"
    assert safemode_line(True, "h:8020") == "Safe mode is ON in h:8020"
    assert safemode_line(False, None) == "Safe mode is OFF"
    assert save_namespace_line(True, "h:8020") == "Save namespace successful for h:8020"
    assert save_namespace_line(False, None) == "No extra checkpoint has been made"
    assert roll_edits_text(17) == "Successfully rolled edit logs.\nNew segment starts at txid 17"
    assert (
        metasave_text("m.txt", "h:8020")
        == "Created metasave file m.txt in the log directory of namenode h:8020"
    )


@pytest.mark.parametrize(
    ("text", "space", "value"),
    [
        ("10", False, 10),
        ("10", True, 10),
        ("1k", True, 1024),
        ("3G", True, 3 << 30),
        ("2e", True, 2 << 60),
        ("0", False, None),
        ("-1", False, None),
        ("1k", False, None),  # a name quota takes no prefix
        ("abc", True, None),
        ("8e", True, None),  # past Long.MAX_VALUE
    ],
)
def test_a_quota_argument_is_read_as_dfsadmin_reads_it(
    text: str, space: bool, value: int | None
) -> None:
    if value is None:
        with pytest.raises(ValueError, match=f'"{text}" is not a valid value for a quota.'):
            parse_quota(text, space=space)
    else:
        assert parse_quota(text, space=space) == value


def test_the_quota_commands_set_one_quota_and_keep_the_other() -> None:
    mask = (1 << 64) - 1
    (a, b) = quota_requests("setQuota", ["5", "/a", "/b"])
    assert (a.path, b.path) == ("/a", "/b")
    assert a.namespaceQuota == 5 and a.storagespaceQuota == QUOTA_DONT_SET
    (c,) = quota_requests("clrSpaceQuota", ["/c"])
    assert c.namespaceQuota == QUOTA_DONT_SET and c.storagespaceQuota == QUOTA_RESET & mask
    (d,) = quota_requests("setSpaceQuota", ["1m", "/d"])
    assert d.storagespaceQuota == 1 << 20 and d.namespaceQuota == QUOTA_DONT_SET
    with pytest.raises(ValueError, match="-setQuota needs <quota> <dirname>"):
        quota_requests("setQuota", ["5"])


def getconf_args(**kw: Any) -> argparse.Namespace:
    flags = (
        "namenodes",
        "secondaryNameNodes",
        "backupNodes",
        "journalNodes",
        "includeFile",
        "excludeFile",
        "nnRpcAddresses",
    )
    return argparse.Namespace(**({f: False for f in flags} | {"confKey": None} | kw))


def test_getconf_answers_as_hdfs_getconf() -> None:
    cfg = cluster_config()
    props = {k: v for k, v, _ in conf_properties(cfg)}
    assert getconf(props, getconf_args(namenodes=True)) == (0, "h1 h2\n", "")
    assert getconf(props, getconf_args(nnRpcAddresses=True)) == (0, "h1:8020\nh2:8020\n", "")
    assert getconf(props, getconf_args(journalNodes=True)) == (0, "j1 j2\n", "")
    assert getconf(props, getconf_args(secondaryNameNodes=True)) == (0, "0.0.0.0 0.0.0.0\n", "")
    assert getconf(props, getconf_args(confKey="dfs.replication")) == (0, "3\n", "")
    assert getconf(props, getconf_args(confKey="dfs.namenode.name.dir.ns1.nn2")) == (
        0,
        "/nn/nn2\n",
        "",
    )
    assert getconf(props, getconf_args(confKey="no.such.key")) == (
        255,
        "",
        "Configuration no.such.key is missing.\n",
    )
    assert getconf(props, getconf_args(includeFile=True)) == (
        255,
        "",
        "Configuration dfs.hosts is missing.\n",
    )
    assert namenode_addresses(
        {"dfs.namenode.rpc-address": "x:1"}, "dfs.namenode.rpc-address", None
    ) == ["x:1"]
    assert journal_hosts({"dfs.namenode.shared.edits.dir": "file:///x"}) == []


def test_a_metasave_file_name_is_one_plain_name() -> None:
    assert admin_calls.check_metasave_name("meta.txt") == "meta.txt"
    for bad in ("../x", "/etc/x", "a/b", "..", "", "x\n"):
        with pytest.raises(admin_calls.AdminCallError, match="not a plain file name"):
            admin_calls.check_metasave_name(bad)


def test_the_metasave_file_counts_what_the_namenode_holds() -> None:
    st = nn_status()
    text = admin_calls.metasave_text(st["block_management"] | {"blocks": 5}, st["datanodes"], 9)
    lines = text.splitlines()
    assert lines[:3] == [
        "9 files and directories, 5 blocks = 14 total",
        "Live Datanodes: 1",
        "Dead Datanodes: 1",
    ]
    assert "Metasave: Blocks waiting for reconstruction: 1" in lines
    assert "Metasave: Number of datanodes: 2" in lines
    assert sum(1 for line in lines if line.startswith("10.0.0.")) == 2


@pytest.mark.parametrize(
    ("acl", "user", "admitted"),
    [
        ("", "alice", False),
        ("*", "anyone", True),
        ("alice,bob", "bob", True),
        ("alice,bob", "carol", False),
        (" admins", "carol", True),  # a leading space: groups only
        (" admins", "admins", False),  # a group's name is no user's
        ("alice ops,admins", "dave", True),
        ("alice ops", "dave", False),
    ],
)
def test_the_administrators_acl_reads_as_hadoops(acl: str, user: str, admitted: bool) -> None:
    from qjm.security.http import AdminAcl

    groups = {"carol": ("staff", "admins"), "dave": ("admins",)}
    assert AdminAcl.parse(acl).admits(user, lambda u: groups.get(u, ())) is admitted


def test_the_administrators_keys_come_from_the_toml(tmp_path: Path) -> None:
    from qjm.config import load_config

    toml = tmp_path / "c.toml"
    toml.write_text(
        '[security]\ncluster_administrators = "ops hdfsadmins"\n'
        "instrumentation_requires_admin = true\n"
    )
    cfg = load_config(toml)
    props = {k: v for k, v, _ in conf_properties(cfg)}
    assert props["dfs.cluster.administrators"] == "ops hdfsadmins"
    assert props["hadoop.security.instrumentation.requires.admin"] == "true"


def test_the_rpc_activity_bean_reads_the_ipc_servers_counters() -> None:
    stats = {"bytes_in": 10, "bytes_out": 20, "calls": 3, "auth_failures": 1, "connections": 2}
    bean = rpc_activity_bean("JournalNode", 8485, stats, "h")
    assert bean is not None
    assert bean["name"] == "Hadoop:service=JournalNode,name=RpcActivityForPort8485"
    assert (bean["ReceivedBytes"], bean["SentBytes"], bean["RpcQueueTimeNumOps"]) == (10, 20, 3)
    assert (bean["RpcAuthenticationFailures"], bean["NumOpenConnections"]) == (1, 2)
    assert rpc_activity_bean("NameNode", 8020, {}, "h") is None  # not started: no bean
