"""The cluster config from HDFS's core-site.xml and hdfs-site.xml (design §A.6): each key's
field, errors that name the key and its file, ${var} substitution, directory lists, the
keys qjm does not use, and hadoop-conf read back into the config it was written from."""

from __future__ import annotations

import argparse
import logging
import os
import pwd
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from conftest import run_qjm
from ports import free_port_block
from qjm.cli.common import add_config_arg
from qjm.cluster.hadoop_conf import render_site, write_hadoop_conf
from qjm.cluster.process import Daemon, spawn, stop_pid, wait_ready
from qjm.config import (
    HTTPS_ONLY,
    ClusterConfig,
    DataNodeConfig,
    DataNodeSettings,
    FailoverControllerSettings,
    JournalNodeConfig,
    JournalNodeSettings,
    NameNodeConfig,
    NameNodeSettings,
    ProxyUserConfig,
    QJournalSettings,
    SecuritySettings,
    ZooKeeperSettings,
    dump_config,
)
from qjm.config_site import (
    SETTINGS,
    load_cluster_config,
    load_site_config,
    site_properties,
    unused_keys,
)
from qjm.errors import ConfigError

BASE = {
    "dfs.nameservices": "ns1",
    "dfs.ha.namenodes.ns1": "nn1,nn2",
    "dfs.namenode.rpc-address.ns1.nn1": "h1.example:8020",
    "dfs.namenode.rpc-address.ns1.nn2": "h2.example:8020",
    "dfs.namenode.name.dir": "/data/nn",
    "dfs.namenode.shared.edits.dir": "qjournal://j1:8485;j2:8485;j3:8485/journal1",
    "dfs.journalnode.edits.dir": "/data/jn",
    "dfs.datanode.data.dir": "/data/dn",
}


def site(tmp_path: Path, hdfs: dict[str, str], core: dict[str, str] | None = None) -> Path:
    """A Hadoop conf dir holding hdfs (over BASE) and core."""
    conf = tmp_path / "conf"
    conf.mkdir(exist_ok=True)
    (conf / "hdfs-site.xml").write_text(render_site({**BASE, **hdfs}))
    if core is not None:
        (conf / "core-site.xml").write_text(render_site(core))
    return conf


def test_an_hdfs_ha_config_maps_onto_nodes_with_hdfs_defaults(tmp_path: Path) -> None:
    cfg = load_site_config(site(tmp_path, {}, {"fs.defaultFS": "hdfs://ns1"}))
    assert (cfg.nameservice, cfg.journal_id) == ("ns1", "journal1")
    assert list(cfg.namenodes) == ["nn1", "nn2"]
    assert cfg.namenodes["nn2"] == NameNodeConfig(
        "nn2", "h2.example:8020", "h2.example:9870", "/data/nn"
    )
    # the JournalNodes are the shared edits URI's, by position; HTTP on their RPC host
    assert list(cfg.journalnodes) == ["jn1", "jn2", "jn3"]
    assert cfg.journalnodes["jn3"] == JournalNodeConfig("jn3", "j3:8485", "j3:8480", "/data/jn")
    assert cfg.shared_edits_uri() == BASE["dfs.namenode.shared.edits.dir"]
    assert cfg.datanodes["dn1"] == DataNodeConfig(
        "dn1", "0.0.0.0:9866", "0.0.0.0:9867", "0.0.0.0:9864", "/data/dn"
    )
    assert cfg.namenode == NameNodeSettings()  # nothing set: qjm's defaults


@pytest.mark.parametrize(
    ("props", "section", "field", "want"),
    [
        ({"dfs.replication": "2"}, "namenode", "default_replication", 2),
        ({"dfs.blocksize": "64m"}, "namenode", "block_size", 64 << 20),
        ({"dfs.blocksize": "1048576"}, "namenode", "block_size", 1 << 20),
        ({"fs.permissions.umask-mode": "077"}, "namenode", "umask", 0o077),
        ({"dfs.permissions.superusergroup": "hadoop"}, "namenode", "superuser_group", "hadoop"),
        ({"dfs.ha.automatic-failover.enabled": "TRUE"}, "namenode", "automatic_failover", True),
        ({"dfs.ha.automatic-failover.enabled.ns1": "true"}, "namenode", "automatic_failover", True),
        ({"dfs.namenode.checkpoint.period": "1h"}, "namenode", "checkpoint_period_s", 3600),
        ({"dfs.namenode.lease-hard-limit-sec": "30"}, "namenode", "lease_hard_limit_ms", 30_000),
        ({"dfs.heartbeat.interval": "1"}, "datanode", "heartbeat_interval_ms", 1000),
        ({"dfs.heartbeat.interval": "500ms"}, "datanode", "heartbeat_interval_ms", 500),
        (
            {"dfs.namenode.heartbeat.recheck-interval": "45000"},
            "datanode",
            "heartbeat_recheck_ms",
            45_000,
        ),
        (
            {"dfs.namenode.safemode.threshold-pct": "0.5"},
            "datanode",
            "safemode_threshold_pct",
            500,
        ),
        ({"dfs.datanode.scan.period.hours": "2"}, "datanode", "scan_period_ms", 7_200_000),
        ({"dfs.datanode.du.reserved": "1g"}, "datanode", "du_reserved_bytes", 1 << 30),
        ({"dfs.qjournal.write-txns.timeout.ms": "5000"}, "qjournal", "write_txns_timeout_ms", 5000),
        ({"dfs.qjournal.new-epoch.timeout.ms": "2m"}, "qjournal", "new_epoch_timeout_ms", 120_000),
        ({"dfs.journalnode.sync.interval": "1000"}, "journalnode", "sync_interval_ms", 1000),
        ({"dfs.journalnode.enable.sync": "false"}, "journalnode", "sync_enabled", False),
        ({"ipc.maximum.data.length": "64m"}, "journalnode", "ipc_maximum_data_length", 64 << 20),
        ({"ha.zookeeper.quorum": "z1:2181,z2:2181"}, "zookeeper", "quorum", "z1:2181,z2:2181"),
        ({"ha.zookeeper.session-timeout.ms": "5000"}, "zookeeper", "session_timeout_ms", 5000),
        ({"ha.zookeeper.parent-znode": "/hadoop-ha"}, "zookeeper", "parent_znode", "/hadoop-ha"),
        ({"ha.zookeeper.acl": "sasl:nn:rwcda"}, "zookeeper", "acl", "sasl:nn:rwcda"),
        ({"ha.zookeeper.auth": "digest:a:b"}, "zookeeper", "auth", "digest:a:b"),
        ({"dfs.ha.fencing.methods": "shell(true)"}, "zkfc", "fencing_methods", "shell(true)"),
        ({"dfs.ha.zkfc.port": "9019"}, "zkfc", "port", 9019),
        ({"hadoop.rpc.protection": "privacy"}, "security", "rpc_protection", "privacy"),
        ({"dfs.block.access.token.enable": "true"}, "security", "block_access_token", True),
        ({"dfs.http.policy": "HTTP_ONLY"}, "security", "http_policy", "HTTP_ONLY"),
        (
            {"dfs.namenode.keytab.file": "/k/nn.keytab"},
            "security",
            "namenode_keytab",
            "/k/nn.keytab",
        ),
        # a qjm-only setting by its TOML name
        ({"qjm.namenode.tail_wait_ms": "250"}, "namenode", "tail_wait_ms", 250),
        ({"qjm.zookeeper.sasl_service": "zk"}, "zookeeper", "sasl_service", "zk"),
        ({"qjm.datanode.max_packet_bytes": "1048576"}, "datanode", "max_packet_bytes", 1 << 20),
        # Hadoop's old name of a key
        ({"dfs.block.size": "32m"}, "namenode", "block_size", 32 << 20),
    ],
)
def test_each_key_sets_its_field(
    tmp_path: Path, props: dict[str, str], section: str, field: str, want: Any
) -> None:
    core = {k: v for k, v in props.items() if k.startswith(("fs.", "ha.", "hadoop.", "ipc."))}
    hdfs = {k: v for k, v in props.items() if k not in core}
    cfg = load_site_config(site(tmp_path, hdfs, core))
    assert getattr(getattr(cfg, section), field) == want


def test_every_setting_key_names_a_field_of_its_section() -> None:
    for s in SETTINGS:
        assert hasattr(getattr(ClusterConfig(), s.section), s.field), s


def test_per_node_keys_take_hdfs_suffixes(tmp_path: Path) -> None:
    cfg = load_site_config(
        site(
            tmp_path,
            {
                "dfs.namenode.http-address.ns1.nn1": "h1.example:50070",
                "dfs.namenode.name.dir.ns1.nn2": "file:///disk1/nn,file:///disk2/nn",
                "dfs.namenode.name.dir.ns1": "/ns/nn",
                "dfs.ha.zkfc.port.ns1.nn2": "9019",
                "dfs.journalnode.http-address": "0.0.0.0:18480",
                "dfs.journalnode.http-address.ns1.jn2": "j2:28480",
                "dfs.journalnode.edits.dir.ns1": "file:///ns/jn/",
                "qjm.datanodes": "dnA,dnB",
                "dfs.datanode.address.ns1.dnB": "d2:1004",
                "dfs.datanode.ipc.address.ns1.dnB": "d2:1005",
                "dfs.datanode.http.address.ns1.dnB": "d2:1006",
                "dfs.datanode.data.dir.ns1.dnB": "[SSD]file:///d/1,[DISK]/d/2",
                "dfs.namenode.https-address.ns1.nn1": "h1.example:9871",
            },
        )
    )
    nn1, nn2 = cfg.namenodes["nn1"], cfg.namenodes["nn2"]
    assert (nn1.http_address, nn1.name_dir, nn1.https_address) == (
        "h1.example:50070",
        "/ns/nn",  # .<ns> before the plain key
        "h1.example:9871",
    )
    assert nn2.name_dir == "/disk1/nn"  # a list and file:// URIs: the first directory
    assert (nn1.zkfc_address, nn2.zkfc_address) == ("", "h2.example:9019")
    assert cfg.zkfc_address_of("nn2") == "h2.example:9019"
    assert cfg.journalnodes["jn1"].http_address == "j1:18480"  # its RPC host, the key's port
    assert cfg.journalnodes["jn2"].http_address == "j2:28480"
    assert cfg.journalnodes["jn1"].edits_dir == "/ns/jn"
    assert list(cfg.datanodes) == ["dnA", "dnB"]
    assert cfg.datanodes["dnB"].dirs() == ["/d/1", "/d/2"]  # every data dir, types dropped
    assert cfg.datanodes["dnA"].transfer_address == "0.0.0.0:9866"


def test_kerberos_keys_give_the_realm_of_the_principals(tmp_path: Path) -> None:
    cfg = load_site_config(
        site(
            tmp_path,
            {
                "dfs.namenode.kerberos.principal": "nn/_HOST@EXAMPLE.COM",
                "dfs.journalnode.kerberos.principal": "jn/_HOST@EXAMPLE.COM",
                "dfs.datanode.kerberos.principal": "dn/_HOST@EXAMPLE.COM",
                "dfs.web.authentication.kerberos.principal": "HTTP/_HOST@EXAMPLE.COM",
                "dfs.block.access.token.enable": "true",
                "dfs.data.transfer.protection": "privacy",
                "dfs.encrypt.data.transfer.cipher.suites": "AES/CTR/NoPadding",
            },
            {"hadoop.security.authentication": "kerberos", "hadoop.rpc.protection": "privacy"},
        )
    )
    sec = cfg.security
    assert (sec.authentication, sec.realm, sec.namenode_principal) == (
        "kerberos",
        "EXAMPLE.COM",
        "nn/_HOST",
    )
    assert sec.block_tokens and sec.data_transfer_cipher_suites == "AES/CTR/NoPadding"
    assert sec.block_access_token is None  # as set: what unset means under Kerberos


def test_proxy_users(tmp_path: Path) -> None:
    cfg = load_site_config(
        site(
            tmp_path,
            {},
            {"hadoop.proxyuser.oozie.hosts": "*", "hadoop.proxyuser.oozie.groups": "etl"},
        )
    )
    assert cfg.proxyusers == {"oozie": ProxyUserConfig("oozie", users="", groups="etl", hosts="*")}


def test_variables_are_substituted_as_hadoop_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QJM_TEST_DATA", "/mnt/data")
    monkeypatch.setenv("HADOOP_USER_NAME", "hdfs")  # not the JVM's user.name
    user = pwd.getpwuid(os.getuid()).pw_name
    monkeypatch.delenv("QJM_TEST_UNSET", raising=False)
    cfg = load_site_config(
        site(
            tmp_path,
            {
                "data.root": "${env.QJM_TEST_DATA}",
                "dfs.namenode.name.dir": "${data.root}/nn-${user.name}",
                "dfs.journalnode.edits.dir": "${env.QJM_TEST_UNSET:-/fallback}/jn",
                "dfs.datanode.data.dir": "file://${hadoop.tmp.dir}/dfs/data",
            },
        )
    )
    assert cfg.namenodes["nn1"].name_dir == f"/mnt/data/nn-{user}"
    assert cfg.journalnodes["jn1"].edits_dir == "/fallback/jn"
    assert cfg.datanodes["dn1"].data_dirs == f"/tmp/hadoop-{user}/dfs/data"  # HDFS's default


def test_a_self_referring_variable_is_named(tmp_path: Path) -> None:
    conf = site(tmp_path, {"dfs.namenode.name.dir": "/a${dfs.namenode.name.dir}"})
    with pytest.raises(ConfigError, match=r"hdfs-site.xml: dfs.namenode.name.dir: variable"):
        load_site_config(conf)


@pytest.mark.parametrize(
    ("hdfs", "core", "message"),
    [
        ({"dfs.nameservices": "ns1,ns2"}, {}, r"dfs.nameservices: names 2 nameservices"),
        ({"dfs.nameservices": ""}, {}, r"dfs.nameservices: is not set"),
        ({}, {"fs.defaultFS": "hdfs://other"}, r"core-site.xml: fs.defaultFS: .* not hdfs://ns1"),
        (
            {"dfs.namenode.rpc-address.ns1.nn3": "h3:8020"},
            {},
            r"hdfs-site.xml: dfs.namenode.rpc-address.ns1.nn3: names namenode 'nn3', not one "
            r"of nn1, nn2 \(dfs.ha.namenodes.ns1\)",
        ),
        (
            {"dfs.namenode.http-address.ns2.nn1": "h3:8020"},
            {},
            r"dfs.namenode.http-address.ns2.nn1: names nameservice 'ns2'",
        ),
        ({"dfs.ha.namenodes.ns2": "a,b"}, {}, r"dfs.ha.namenodes.ns2: names nameservice 'ns2'"),
        (
            {"dfs.journalnode.edits.dir.ns1.jn4": "/x"},
            {},
            r"dfs.journalnode.edits.dir.ns1.jn4: names journalnode 'jn4', not one of jn1, jn2, "
            r"jn3",
        ),
        (
            {"dfs.namenode.rpc-address.ns1.nn2": "h2.example"},
            {},
            r"hdfs-site.xml: dfs.namenode.rpc-address.ns1.nn2: 'h2.example' is not host:port",
        ),
        (
            {"dfs.ha.namenodes.ns1": "nn1,nn2,nn3"},
            {},
            r"dfs.namenode.rpc-address.ns1.nn3: is not set \(NameNode nn3",
        ),
        ({"dfs.replication": "three"}, {}, r"hdfs-site.xml: dfs.replication: 'three' is not a "),
        ({"dfs.replication": "0"}, {}, r"hdfs-site.xml: dfs.replication must be 1-32767, got 0"),
        ({"dfs.blocksize": "12q"}, {}, r"dfs.blocksize: '12q' is not a size"),
        ({"dfs.replication": "1_0"}, {}, r"dfs.replication: '1_0' is not a number"),
        (
            {},
            {"fs.permissions.umask-mode": "u=rwx,g=rx,o="},
            r"core-site.xml: fs.permissions.umask-mode: 'u=rwx,g=rx,o=' is not an octal mode",
        ),
        ({"dfs.heartbeat.interval": "1500ms0"}, {}, r"dfs.heartbeat.interval: .* not a duration"),
        (
            {"dfs.namenode.checkpoint.period": "1500ms"},
            {},
            r"dfs.namenode.checkpoint.period: '1500ms' is not a whole number of s",
        ),
        (
            {"dfs.journalnode.sync.interval": "10"},
            {},
            r"hdfs-site.xml: dfs.journalnode.sync.interval is 10 ms; it must be at least 100",
        ),
        ({"dfs.permissions.enabled": "yes"}, {}, r"dfs.permissions.enabled: 'yes' is not true"),
        (
            {"dfs.namenode.shared.edits.dir": "qjournal://j1:8485;j1:8485/x"},
            {},
            r"dfs.namenode.shared.edits.dir: .* names a JournalNode twice",
        ),
        (
            {"dfs.namenode.shared.edits.dir": "file:///shared"},
            {},
            r"dfs.namenode.shared.edits.dir: 'file:///shared' is not qjournal://",
        ),
        (
            {"dfs.namenode.name.dir": "hdfs://x/nn"},
            {},
            r"dfs.namenode.name.dir: 'hdfs://x/nn' is not a local directory",
        ),
        (
            {"dfs.namenode.name.dir": "relative/nn"},
            {},
            r"hdfs-site.xml: dfs.namenode.name.dir: 'relative/nn' is not an absolute path",
        ),
        (
            {"dfs.namenode.shared.edits.dir": "qjournal://j1:8485;j1:8486/x"},
            {},
            r"conf: dfs.journalnode.http-address.ns1.jn2: journalnodes jn1 and jn2 both get "
            r"'j1:8480'; give each its own",
        ),
        (
            {
                "dfs.namenode.shared.edits.dir": "qjournal://j1:8485;j1:8486/x",
                "dfs.journalnode.http-address.ns1.jn2": "j1:8490",
            },
            {},
            r"hdfs-site.xml: dfs.journalnode.edits.dir: journalnodes jn1 and jn2 both get "
            r"'/data/jn'",
        ),
        (
            {"qjm.datanodes": "dn1,dn2"},
            {},
            r"dfs.datanode.address.ns1.dn2: datanodes dn1 and dn2 both get '0.0.0.0:9866'",
        ),
        ({"qjm.namenode.bogus": "1"}, {}, r"qjm.namenode.bogus: is not a qjm key"),
        (
            {"qjm.namenode.block_size": "1", "dfs.blocksize": "1"},
            {},
            r"qjm.namenode.block_size: sets the field dfs.blocksize sets too",
        ),
        ({"qjm.namenode.tail_wait_ms": "x"}, {}, r"qjm.namenode.tail_wait_ms: 'x' is not a"),
        (
            {"qjm.namenode.active_lease_ms": "50"},
            {},
            r"hdfs-site.xml: qjm.namenode.active_lease_ms must be 0",
        ),
        (
            {},
            {"hadoop.proxyuser.oozie.hostz": "*"},
            r"core-site.xml: hadoop.proxyuser.oozie.hostz: is not hadoop.proxyuser",
        ),
        (
            {},
            {"hadoop.security.authentication": "kerberos"},
            r"conf: qjm.security.realm: Kerberos needs the realm",
        ),
        (
            {"dfs.http.policy": "HTTPS_ONLY", "qjm.security.ssl_certificate": "/c.pem"},
            {},
            r"conf: qjm.security.ssl_private_key: http_policy HTTPS_ONLY",
        ),
        (
            {
                "dfs.namenode.kerberos.principal": "nn/_HOST@A",
                "dfs.datanode.kerberos.principal": "dn/_HOST@B",
            },
            {},
            r"several realms \(A, B\)",
        ),
    ],
)
def test_errors_name_the_key_and_its_file(
    tmp_path: Path, hdfs: dict[str, str], core: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        load_site_config(site(tmp_path, hdfs, core))


def test_a_broken_file_is_named(tmp_path: Path) -> None:
    conf = site(tmp_path, {})
    (conf / "core-site.xml").write_text("<configuration><property>")
    with pytest.raises(ConfigError, match=r"core-site.xml is not a Hadoop configuration file"):
        load_site_config(conf)
    with pytest.raises(ConfigError, match=r"holds no hdfs-site.xml"):
        load_cluster_config(tmp_path)  # a directory is a Hadoop conf dir, or nothing
    (conf / "core-site.xml").write_text(
        '<configuration xmlns:xi="http://www.w3.org/2001/XInclude">'
        '<xi:include href="more.xml"/></configuration>'
    )
    with pytest.raises(ConfigError, match=r"core-site.xml: <xi:include> is not read by qjm"):
        load_site_config(conf)


def test_keys_qjm_does_not_use_are_listed_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    conf = site(
        tmp_path,
        {
            "dfs.namenode.handler.count": "100",
            "dfs.namenode.name.dir.restore": "true",
            "dfs.client.failover.max.attempts": "20",  # a client's key: not listed
        },
        {"io.file.buffer.size": "131072", "ipc.client.connect.timeout": "2000"},
    )
    assert unused_keys(conf) == [
        "dfs.namenode.handler.count",
        "dfs.namenode.name.dir.restore",
        "io.file.buffer.size",
    ]
    with caplog.at_level(logging.WARNING, logger="qjm.config_site"):
        load_site_config(conf)
    lines = [r.getMessage() for r in caplog.records if "does not use" in r.getMessage()]
    assert len(lines) == 1 and "dfs.namenode.handler.count" in lines[0]


def test_one_loader_takes_a_toml_file_a_conf_dir_or_a_site_file(tmp_path: Path) -> None:
    conf = site(tmp_path, {})
    from_dir = load_cluster_config(conf)
    assert from_dir.source == str(conf)
    assert load_cluster_config(conf / "hdfs-site.xml") == from_dir
    toml = tmp_path / "cluster.toml"
    toml.write_text(dump_config(from_dir))
    assert replace(load_cluster_config(toml), source="") == replace(from_dir, source="")


def test_config_defaults_to_hadoop_conf_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HADOOP_CONF_DIR", "/etc/hadoop/conf")
    p = argparse.ArgumentParser()
    add_config_arg(p)
    assert p.parse_args([]).config == "/etc/hadoop/conf"
    assert p.parse_args(["--config", "c.toml"]).config == "c.toml"
    monkeypatch.delenv("HADOOP_CONF_DIR")
    p = argparse.ArgumentParser()
    add_config_arg(p)
    with pytest.raises(SystemExit):
        p.parse_args([])


def launcher_like(directory: Path, **changes: Any) -> ClusterConfig:
    """A config as `qjm cluster up` makes one: three JournalNodes, two NameNodes with their
    ZKFCs, three DataNodes of two dirs each, all on one host."""
    data = directory / "data"
    jns = {
        f"jn{i}": JournalNodeConfig(
            f"jn{i}", f"127.0.0.1:{18000 + i}", f"127.0.0.1:{18100 + i}", str(data / f"jn{i}")
        )
        for i in (1, 2, 3)
    }
    nns = {
        f"nn{i}": NameNodeConfig(
            f"nn{i}",
            f"127.0.0.1:{18200 + i}",
            f"127.0.0.1:{18300 + i}",
            str(data / f"nn{i}"),
            f"127.0.0.1:{18400 + i}",
        )
        for i in (1, 2)
    }
    dns = {
        f"dn{i}": DataNodeConfig(
            f"dn{i}",
            f"127.0.0.1:{18500 + i}",
            f"127.0.0.1:{18600 + i}",
            f"127.0.0.1:{18700 + i}",
            f"{data}/dn{i}/d1,{data}/dn{i}/d2",
        )
        for i in (1, 2, 3)
    }
    cfg = ClusterConfig(
        journalnodes=jns,
        namenodes=nns,
        datanodes=dns,
        namenode=NameNodeSettings(automatic_failover=True),
        zookeeper=ZooKeeperSettings(quorum="127.0.0.1:2181"),
        zkfc=FailoverControllerSettings(fencing_methods="shell(true)"),
    )
    if changes.get("security", cfg.security).http_policy == HTTPS_ONLY:
        cfg = _https(cfg)
    return replace(cfg, **changes)


def _https(cfg: ClusterConfig) -> ClusterConfig:
    def port(a: str) -> str:
        host, _, p = a.rpartition(":")
        return f"{host}:{int(p) + 1000}"

    return replace(
        cfg,
        journalnodes={
            n: replace(c, https_address=port(c.http_address)) for n, c in cfg.journalnodes.items()
        },
        namenodes={
            n: replace(c, https_address=port(c.http_address)) for n, c in cfg.namenodes.items()
        },
        datanodes={
            n: replace(c, https_address=port(c.http_address)) for n, c in cfg.datanodes.items()
        },
    )


ROUND_TRIPS: dict[str, dict[str, Any]] = {
    "launcher defaults": {},
    "no datanodes, manual failover": {
        "datanodes": {},
        "namenode": NameNodeSettings(),
        "zookeeper": ZooKeeperSettings(),
        "zkfc": FailoverControllerSettings(),
    },
    "every section off its defaults": {
        "journalnode": JournalNodeSettings(sync_interval_ms=1500, max_journals=7),
        "qjournal": QJournalSettings(write_txns_timeout_ms=3000, http_timeout_ms=1234),
        "namenode": NameNodeSettings(
            automatic_failover=True,
            block_size=1 << 20,
            default_replication=2,
            umask=0o027,
            tail_wait_ms=200,
            checkpoint_period_s=90,
            lease_hard_limit_ms=1500,  # not whole seconds: written in ms
            redundancy_interval_ms=500,
        ),
        "datanode": DataNodeSettings(
            heartbeat_interval_ms=300,
            heartbeat_recheck_ms=1000,
            safemode_threshold_pct=950,
            scan_period_ms=3_600_000,
            max_packet_bytes=1 << 20,
        ),
        "zookeeper": ZooKeeperSettings(
            quorum="127.0.0.1:2181,127.0.0.1:2182", session_timeout_ms=4000, auth="digest:a:b"
        ),
        "zkfc": FailoverControllerSettings(
            fencing_methods="shell(true)\nshell(/bin/true)", port=18019, max_cede_ms=20_000
        ),
        "proxyusers": {"oozie": ProxyUserConfig("oozie", users="alice,bob", hosts="10.0.0.0/8")},
    },
    "manual failover with a ZooKeeper quorum": {
        "namenode": NameNodeSettings(automatic_failover=False),
        "zookeeper": ZooKeeperSettings(quorum="127.0.0.1:2181", session_timeout_ms=3000),
    },
    "kerberos and https": {
        "security": SecuritySettings(
            authentication="kerberos",
            realm="QJM.TEST",
            krb5_conf="/k/krb5.conf",
            namenode_keytab="/k/nn.keytab",
            journalnode_keytab="/k/jn.keytab",
            datanode_keytab="/k/dn.keytab",
            rpc_protection="privacy",
            data_transfer_protection="privacy",
            data_transfer_cipher_suites="AES/CTR/NoPadding",
            http_policy=HTTPS_ONLY,
            ssl_certificate="/t/cert.pem",
            ssl_private_key="/t/key.pem",
            ssl_ca="/t/ca.pem",
        ),
        "zookeeper": ZooKeeperSettings(
            quorum="127.0.0.1:2181", sasl=True, acl="sasl:nn:rwcda", auth="@/k/zkfc-auth"
        ),
    },
}


@pytest.mark.parametrize("case", list(ROUND_TRIPS))
def test_a_written_hadoop_conf_reads_back_into_the_same_config(tmp_path: Path, case: str) -> None:
    cfg = launcher_like(tmp_path, **ROUND_TRIPS[case])
    conf = write_hadoop_conf(tmp_path, cfg)
    back = load_site_config(conf)
    assert back.source == str(conf)
    assert replace(back, source=cfg.source) == cfg
    assert unused_keys(conf) == []  # qjm reads every key it writes but the clients'


def test_the_written_keys_are_hdfs_keys_where_hdfs_has_one(tmp_path: Path) -> None:
    core, hdfs = site_properties(launcher_like(tmp_path))
    assert hdfs["dfs.journalnode.edits.dir.ns1.jn2"] == str(tmp_path / "data" / "jn2")
    assert hdfs["dfs.journalnode.http-address.ns1.jn2"] == "127.0.0.1:18102"
    assert hdfs["dfs.ha.zkfc.port.ns1.nn1"] == "18401"
    assert hdfs["dfs.datanode.ipc.address.ns1.dn3"] == "127.0.0.1:18603"
    assert hdfs["dfs.ha.fencing.methods"] == "shell(true)"
    assert core["ha.zookeeper.quorum"] == "127.0.0.1:2181"
    assert not [k for k in core | hdfs if k.startswith("qjm.") and k != "qjm.datanodes"]


@pytest.mark.slow
def test_daemons_run_from_the_hadoop_conf_a_cluster_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stopped launcher cluster started again daemon by daemon from hadoop-conf alone:
    JournalNodes by HADOOP_CONF_DIR and --name, NameNodes by --id; it serves `qjm dfs`."""
    d = tmp_path / "cluster"
    up = run_qjm(
        "cluster", "up", "--dir", str(d), "--journalnodes", "3", "--namenodes", "2",
        "--datanodes", "0", "--no-zookeeper", "--insecure",
        "--base-port", str(free_port_block(16)), timeout=180,
    )  # fmt: skip
    down = run_qjm("cluster", "down", "--dir", str(d))
    assert up.returncode == 0, up.stderr
    assert down.returncode == 0, down.stderr
    conf = d / "hadoop-conf"
    toml = load_cluster_config(d / "cluster.toml")
    assert replace(load_cluster_config(conf), source=toml.source) == toml
    monkeypatch.setenv("HADOOP_CONF_DIR", str(conf))  # the daemons' --config
    daemons: list[Daemon] = []
    try:
        for name, argv in (
            ("jn1", ["journalnode", "--name", "jn1"]),
            ("jn2", ["journalnode", "--name", "jn2"]),
            ("jn3", ["journalnode", "--name", "jn3"]),
            ("nn1", ["namenode", "--id", "nn1"]),
            ("nn2", ["namenode", "--id", "nn2"]),
        ):
            daemons.append(
                spawn(name, argv, tmp_path / "logs" / f"{name}.log", tmp_path / f"{name}.ready")
            )
        ready = wait_ready(daemons, timeout=60)
        assert ready["jn2"]["rpc"] == toml.journalnodes["jn2"].rpc_address
        assert ready["nn1"]["rpc"] == toml.namenodes["nn1"].rpc_address
        active = run_qjm("haadmin", "-transitionToActive", "nn1")
        assert active.returncode == 0, active.stderr
        mkdir = run_qjm("dfs", "--config", str(conf), "mkdir", "/from-hdfs-site")
        assert mkdir.returncode == 0, mkdir.stderr
        ls = run_qjm("dfs", "--config", str(conf / "hdfs-site.xml"), "ls", "/")
        assert ls.returncode == 0, ls.stderr
        assert "/from-hdfs-site" in ls.stdout
    finally:
        for daemon in daemons:
            stop_pid(daemon.pid)
            daemon.process.wait(timeout=10)


def test_the_zkfc_names_the_hdfs_key_it_lacks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from qjm.cli.main import main
    from qjm.config_site import key_name

    conf = site(tmp_path, {})
    assert main(["zkfc", "--config", str(conf), "--id", "nn1"]) == 1
    assert f"{conf}: ha.zookeeper.quorum is not set" in capsys.readouterr().err
    cfg = load_site_config(conf)
    assert key_name(cfg, "zkfc.fencing_methods") == "dfs.ha.fencing.methods"
    assert key_name(cfg, "zookeeper.sasl") == "qjm.zookeeper.sasl"
    assert key_name(replace(cfg, source="c.toml"), "zookeeper.sasl") == "zookeeper.sasl"


def test_an_unknown_node_is_named_by_the_key_that_lists_the_nodes(tmp_path: Path) -> None:
    conf = site(tmp_path, {})
    cfg = load_site_config(conf)
    with pytest.raises(ConfigError, match=rf"{conf}: dfs.ha.namenodes.ns1 names no namenode nn3"):
        cfg.namenode_named("nn3")
    with pytest.raises(ConfigError, match=r"shared.edits.dir \(jn1, jn2, ... in its order\) names"):
        cfg.journalnode_named("j1")
    with pytest.raises(ConfigError, match=r"qjm.datanodes names no datanode dn2 \(known: dn1\)"):
        cfg.datanode_named("dn2")
