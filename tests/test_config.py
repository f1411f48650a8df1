"""Cluster config: validation errors name the key; dump and load agree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from qjm.client.uri import parse_qjournal_uri
from qjm.config import (
    ClusterConfig,
    DataNodeConfig,
    JournalNodeConfig,
    config_from_dict,
    dump_config,
    load_config,
    parse_address,
)
from qjm.errors import ConfigError


def test_defaults_follow_hdfs() -> None:
    cfg = config_from_dict({})
    assert cfg.qjournal.write_txns_timeout_ms == 20_000
    assert cfg.qjournal.queued_edits_limit_mb == 10
    assert cfg.journalnode.sync_interval_ms == 120_000
    assert cfg.journal_id == cfg.nameservice == "ns1"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"bogus": {}}, r"unknown section \[bogus\]"),
        ({"qjournal": {"write_timeout": 1}}, "unknown key qjournal.write_timeout"),
        (
            {"qjournal": {"write_txns_timeout_ms": "1"}},
            "qjournal.write_txns_timeout_ms: expected int",
        ),
        ({"qjournal": {"write_txns_timeout_ms": -5}}, "must not be negative"),
        ({"journalnode": {"sync_enabled": 1}}, "journalnode.sync_enabled: expected bool"),
        ({"cluster": {"name": "x"}}, "unknown key cluster.name"),
        (
            {"journalnodes": {"jn1": {"rpc_address": "h:1", "http_address": "h:2"}}},
            "lacks the key journalnodes.jn1.edits_dir",
        ),
        (
            {
                "journalnodes": {
                    "jn1": {"rpc_address": "h", "http_address": "h:2", "edits_dir": "/x"}
                }
            },
            "journalnodes.jn1.rpc_address: 'h' is not host:port",
        ),
        (
            {
                "journalnodes": {
                    "jn1": {"rpc_address": "h:1", "http_address": "h:2", "edits_dir": "x"}
                }
            },
            "journalnodes.jn1.edits_dir: 'x' is not an absolute path",
        ),
    ],
)
def test_errors_name_the_key(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config_from_dict(data)


def test_dump_and_load_round_trip(tmp_path: Path) -> None:
    jn = JournalNodeConfig("jn1", "127.0.0.1:8485", "127.0.0.1:8480", str(tmp_path / "a b"))
    cfg = ClusterConfig(journalnodes={"jn1": jn})
    path = tmp_path / "c.toml"
    path.write_text(dump_config(cfg))
    back = load_config(path)
    assert back.journalnodes == {"jn1": jn}
    assert back.shared_edits_uri() == "qjournal://127.0.0.1:8485/ns1"


def test_bad_toml_is_named(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[cluster\n")
    with pytest.raises(ConfigError, match="is not valid TOML"):
        load_config(path)
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(tmp_path / "missing.toml")


def test_addresses_and_uris() -> None:
    assert parse_address("[::1]:80", "k") == ("::1", 80)
    with pytest.raises(ConfigError, match="out of range"):
        parse_address("h:70000", "k")
    uri = parse_qjournal_uri("qjournal://a:1;b:2;c/ns1")
    assert uri.addresses == ("a:1", "b:2", "c:8485") and uri.jid == "ns1"
    for bad, message in [
        ("http://a:1/ns1", "not a qjournal URI"),
        ("qjournal://a:1", "names no journal id"),
        ("qjournal://a:1;;b:2/ns1", "empty host"),
        ("qjournal://a:1;a:1/ns1", "twice"),
        ("qjournal://a:1/.hidden", "invalid journal id"),
    ]:
        with pytest.raises(ConfigError, match=message):
            parse_qjournal_uri(bad)


def test_zookeeper_and_zkfc_sections_have_hdfs_defaults_and_round_trip(tmp_path: Path) -> None:
    cfg = config_from_dict({})
    assert cfg.zookeeper.session_timeout_ms == 10_000  # ha.zookeeper.session-timeout.ms
    assert cfg.zookeeper.parent_znode == "/qjm-ha"
    assert cfg.zookeeper.acl == "world:anyone:rwcda"
    assert (cfg.zkfc.port, cfg.zkfc.graceful_fence_timeout_ms) == (8019, 5000)
    cfg = config_from_dict(
        {
            "zookeeper": {"quorum": "127.0.0.1:2181,127.0.0.1:2182", "auth": "digest:a:b"},
            "zkfc": {"fencing_methods": 'shell(echo "x\\\\y")\nsshfence'},
        }
    )
    path = tmp_path / "c.toml"
    path.write_text(dump_config(cfg))
    back = load_config(path)
    assert (back.zookeeper, back.zkfc) == (cfg.zookeeper, cfg.zkfc)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"zookeeper": {"quorum": "zk1:x"}}, "zookeeper.quorum"),
        ({"zookeeper": {"parent_znode": "qjm"}}, "zookeeper.parent_znode"),
        ({"zookeeper": {"session_timeout_ms": 0}}, "zookeeper.session_timeout_ms"),
        ({"zookeeper": {"session_timeout_ms": "10"}}, "zookeeper.session_timeout_ms"),
        ({"zkfc": {"port": 70000}}, "zkfc.port"),
        ({"zkfc": {"graceful_fence_timeout_ms": 0}}, "zkfc.graceful_fence_timeout_ms"),
        ({"zkfc": {"fencing": "shell(true)"}}, "zkfc.fencing"),
    ],
)
def test_zookeeper_and_zkfc_errors_name_the_key(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config_from_dict(data)


def test_seconds_converts_a_settings_duration_in_milliseconds() -> None:
    from qjm.config import seconds

    assert seconds(20_000) == 20.0
    assert seconds(1) == 0.001
    assert seconds(0) == 0.0


def test_datanode_sections_have_hdfs_defaults_and_round_trip(tmp_path: Path) -> None:
    dn = DataNodeConfig(
        "dn1", "127.0.0.1:9866", "127.0.0.1:9867", "127.0.0.1:9864", f"{tmp_path}/d1,{tmp_path}/d2"
    )
    cfg = ClusterConfig(datanodes={"dn1": dn})
    assert cfg.datanode.heartbeat_interval_ms == 3000
    assert cfg.datanode.dead_after_ms() == 630_000  # HDFS's 10 min 30 s
    assert dn.dirs() == [f"{tmp_path}/d1", f"{tmp_path}/d2"]
    path = tmp_path / "c.toml"
    path.write_text(dump_config(cfg))
    back = load_config(path)
    assert back.datanodes == {"dn1": dn} and back.datanode == cfg.datanode
    assert back.datanode_named("dn1") == dn
    with pytest.raises(ConfigError, match=r"no \[datanodes.dn9\] section \(known: dn1\)"):
        back.datanode_named("dn9")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"datanode": {"heartbeat_interval_ms": 0}}, "datanode.heartbeat_interval_ms must be"),
        ({"datanode": {"safemode_threshold_pct": 1001}}, "in thousandths"),
        (
            {"datanode": {"bytes_per_checksum": 2048, "max_packet_bytes": 1024}},
            "bytes_per_checksum",
        ),
        (
            {
                "datanodes": {
                    "dn1": {
                        "transfer_address": "h:1",
                        "ipc_address": "h:2",
                        "http_address": "h:3",
                        "data_dirs": " , ",
                    }
                }
            },
            "datanodes.dn1.data_dirs names no directory",
        ),
        (
            {
                "datanodes": {
                    "dn1": {
                        "transfer_address": "h:1",
                        "ipc_address": "h:2",
                        "http_address": "h:3",
                        "data_dirs": "/a,rel",
                    }
                }
            },
            "datanodes.dn1.data_dirs: 'rel' is not an absolute path",
        ),
        (
            {
                "datanodes": {
                    "dn1": {
                        "transfer_address": "h",
                        "ipc_address": "h:2",
                        "http_address": "h:3",
                        "data_dirs": "/a",
                    }
                }
            },
            "datanodes.dn1.transfer_address: 'h' is not host:port",
        ),
    ],
)
def test_datanode_errors_name_the_key(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config_from_dict(data)
