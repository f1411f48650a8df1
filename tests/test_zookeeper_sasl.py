"""ZooKeeper's own Kerberos (design §S.11): the server's JAAS file, zoo.cfg keys and JVM
flags, the HA znodes' SASL ACL, and the ZKFC's SASL login options (the real processes are
judged in test_kerberos_cluster)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from qjm.cli.zkfc import zookeeper_sasl_login
from qjm.cluster.hadoop_conf import core_site
from qjm.cluster.launcher import zookeeper_sasl_acl
from qjm.cluster.zookeeper import (
    SASL_PROVIDER,
    ZooKeeperKerberos,
    ZooKeeperMember,
    _config_text,
    jaas_text,
    sasl_jvm_options,
    sasl_settings,
)
from qjm.config import (
    ClusterConfig,
    NameNodeConfig,
    NameNodeSettings,
    SecuritySettings,
    ZooKeeperSettings,
)
from qjm.errors import ConfigError
from qjm.ha.elector import parse_acl

KERBEROS = ZooKeeperKerberos(
    "zookeeper/localhost@QJM.TEST", Path("/k/zookeeper_localhost.keytab"), Path("/k/krb5.conf")
)


def test_the_jaas_server_section_logs_in_from_the_keytab() -> None:
    assert jaas_text(KERBEROS) == (
        "Server {\n"
        "  com.sun.security.auth.module.Krb5LoginModule required\n"
        "  useKeyTab=true\n"
        '  keyTab="/k/zookeeper_localhost.keytab"\n'
        "  storeKey=true\n"
        "  useTicketCache=false\n"
        '  principal="zookeeper/localhost@QJM.TEST";\n'
        "};\n"
    )


def test_zoo_cfg_takes_sasl_and_names_clients_by_their_first_component(tmp_path: Path) -> None:
    m = ZooKeeperMember(1, 2181, None, None, tmp_path / "zk1.cfg", tmp_path / "d", tmp_path / "l")
    lines = _config_text(m, [m], 500, sasl_settings()).splitlines()
    assert f"authProvider.1={SASL_PROVIDER}" in lines
    assert "kerberos.removeHostFromPrincipal=true" in lines
    assert "kerberos.removeRealmFromPrincipal=true" in lines
    assert not any(k.startswith("authProvider") for k in _config_text(m, [m], 500, {}).split())


def test_the_jvm_flags_point_at_the_jaas_file_and_the_kdc() -> None:
    assert sasl_jvm_options(Path("/z/conf/jaas.conf"), KERBEROS) == [
        "-Djava.security.auth.login.config=/z/conf/jaas.conf",
        "-Djava.security.krb5.conf=/k/krb5.conf",
        "-Dsun.security.krb5.disableReferrals=true",
    ]


def test_the_ha_znodes_are_the_namenodes_sasl_id_alone() -> None:
    default = SecuritySettings(authentication="kerberos", realm="QJM.TEST")
    assert zookeeper_sasl_acl(default) == "sasl:nn:rwcda"
    other = SecuritySettings(authentication="kerberos", realm="R", namenode_principal="hdfs/_HOST")
    assert zookeeper_sasl_acl(other) == "sasl:hdfs:rwcda"
    [acl] = parse_acl(zookeeper_sasl_acl(other))
    assert (acl.id.scheme, acl.id.id, acl.perms) == ("sasl", "hdfs", 31)


def _cfg(sasl: bool, kerberos: bool) -> ClusterConfig:
    security = (
        SecuritySettings(
            authentication="kerberos", realm="QJM.TEST", namenode_keytab="/k/nn.keytab"
        )
        if kerberos
        else SecuritySettings()
    )
    zk = ZooKeeperSettings(quorum="localhost:2181", sasl=sasl, acl="sasl:nn:rwcda")
    nn = NameNodeConfig("nn1", "localhost:8020", "localhost:9870", "/n")
    return ClusterConfig(
        namenodes={"nn1": nn},
        zookeeper=zk,
        security=security,
        namenode=NameNodeSettings(automatic_failover=True),
    )


def test_hadoop_conf_carries_the_acl_as_hdfs_writes_it() -> None:
    assert core_site(_cfg(sasl=True, kerberos=True))["ha.zookeeper.acl"] == "sasl:nn:rwcda"
    # the files carry the whole config (design §A.6): an ACL set without SASL too
    assert core_site(_cfg(sasl=False, kerberos=True))["ha.zookeeper.acl"] == "sasl:nn:rwcda"
    plain = replace(_cfg(sasl=False, kerberos=True), zookeeper=ZooKeeperSettings("localhost:2181"))
    assert "ha.zookeeper.acl" not in core_site(plain)  # the default world:anyone:rwcda


def test_the_zkfc_logs_in_to_zookeeper_from_its_namenodes_keytab(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for var in ("KRB5_CLIENT_KTNAME", "KRB5CCNAME", "KRB5_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    assert zookeeper_sasl_login(_cfg(sasl=False, kerberos=True), "localhost") is None
    assert "KRB5_CLIENT_KTNAME" not in os.environ
    with pytest.raises(ConfigError, match="zookeeper.sasl needs Kerberos"):
        zookeeper_sasl_login(_cfg(sasl=True, kerberos=False), "localhost")
    options = zookeeper_sasl_login(_cfg(sasl=True, kerberos=True), "localhost")
    assert options == {
        "mechanism": "GSSAPI",
        "service": "zookeeper",
        "principal": "nn/localhost@QJM.TEST",
    }
    assert os.environ["KRB5_CLIENT_KTNAME"] == "FILE:/k/nn.keytab"
    assert os.environ["KRB5CCNAME"].startswith("MEMORY:")
