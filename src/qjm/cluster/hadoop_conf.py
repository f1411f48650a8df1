"""The Hadoop client configuration of a cluster: DIR/hadoop-conf/{core,hdfs}-site.xml.

One `HADOOP_CONF_DIR` (or `java -cp <conf dir>:...`, or hdfs-native's config) points any HDFS
client at the cluster's nameservice: HA with ConfiguredFailoverProxyProvider, so the client
finds the active NameNode itself. The retry settings are short so a client skips a dead or
standby NameNode within a second or two instead of HDFS's minutes.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from xml.sax.saxutils import escape

from qjm.cluster.certs import ClusterTls
from qjm.config import HTTP_ONLY, ClusterConfig
from qjm.config_site import site_properties
from qjm.security.principal import KerberosName

HADOOP_CONF = "hadoop-conf"
PROXY_PROVIDER = "org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider"

# Client-side retry settings: a refused connection fails at once and the client moves to the
# next NameNode after 100 ms .. 1 s, and keeps trying long enough (20 failovers, ~15 s) to
# ride out an operator's manual failover.
FAST_FAILOVER = {
    "dfs.client.failover.sleep.base.millis": "100",
    "dfs.client.failover.sleep.max.millis": "1000",
    "dfs.client.failover.max.attempts": "20",
    "dfs.client.failover.connection.retries": "0",
    "dfs.client.failover.connection.retries.on.timeouts": "0",
    "dfs.client.retry.policy.enabled": "false",
}
FAST_IPC = {
    "ipc.client.connect.max.retries": "1",
    "ipc.client.connect.retry.interval": "100",
    "ipc.client.connect.max.retries.on.timeouts": "1",
    "ipc.client.connect.timeout": "2000",
    "ipc.client.rpc-timeout.ms": "30000",
}

LOG4J_PROPERTIES = """\
# Keeps Hadoop clients (FsShell) quiet: errors only, on stderr.
log4j.rootLogger=ERROR, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=%d{HH:mm:ss.SSS} %p %c{1}: %m%n
"""
# The same for log4j 2 (what current Hadoop and Spark jars log through).
LOG4J2_PROPERTIES = """\
# Keeps Hadoop clients (FsShell) quiet: errors only, on stderr.
status = error
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
"""


def core_site(cfg: ClusterConfig) -> dict[str, str]:
    """core-site.xml's properties: the default file system is the nameservice (and, with
    automatic failover, the ZooKeeper quorum, where HDFS keeps ha.zookeeper.quorum)."""
    props = {
        "fs.defaultFS": f"hdfs://{cfg.nameservice}",
        "hadoop.security.authentication": cfg.security.authentication,
        "fs.trash.interval": "0",
        "fs.permissions.umask-mode": f"{cfg.namenode.umask:03o}",
        **FAST_IPC,
    }
    if cfg.namenode.automatic_failover:
        props["ha.zookeeper.quorum"] = cfg.zookeeper.quorum
        if cfg.zookeeper.sasl:  # as HDFS writes it (design §S.11)
            props["ha.zookeeper.acl"] = cfg.zookeeper.acl
    if cfg.security.kerberos:
        props["hadoop.rpc.protection"] = cfg.security.rpc_protection
    for name, proxy in cfg.proxyusers.items():  # design §S.14
        for key in ("users", "groups", "hosts"):
            if getattr(proxy, key):
                props[f"hadoop.proxyuser.{name}.{key}"] = getattr(proxy, key)
    # the rest of the cluster config, so daemons can run from these files (design §A.6)
    return props | {k: v for k, v in site_properties(cfg)[0].items() if k not in props}


def hdfs_site(cfg: ClusterConfig) -> dict[str, str]:
    """hdfs-site.xml's properties: the nameservice, its NameNodes and the failover proxy,
    and every node and setting of cfg (read back by qjm.config_site)."""
    ns = cfg.nameservice
    props = {
        "dfs.nameservices": ns,
        f"dfs.ha.namenodes.{ns}": ",".join(cfg.namenodes),
    }
    for name, nn in cfg.namenodes.items():
        props[f"dfs.namenode.rpc-address.{ns}.{name}"] = nn.rpc_address
        props[f"dfs.namenode.http-address.{ns}.{name}"] = nn.http_address
    props |= {
        f"dfs.client.failover.proxy.provider.{ns}": PROXY_PROVIDER,
        "dfs.ha.automatic-failover.enabled": str(cfg.namenode.automatic_failover).lower(),
        "dfs.namenode.shared.edits.dir": cfg.shared_edits_uri(),
        "dfs.replication": str(cfg.namenode.default_replication),
        "dfs.blocksize": str(cfg.namenode.block_size),
        "dfs.permissions.superusergroup": cfg.namenode.superuser_group,
        **FAST_FAILOVER,
    }
    sec = cfg.security
    if sec.http_policy != HTTP_ONLY:  # HTTPS on the HTTP ports (design §S.13)
        props["dfs.http.policy"] = sec.http_policy
        for name, nn in cfg.namenodes.items():
            props[f"dfs.namenode.https-address.{ns}.{name}"] = nn.https_address
        # per-daemon keys in HDFS; a client config names the first node's
        for key, nodes in (
            ("dfs.journalnode.https-address", list(cfg.journalnodes.values())),
            ("dfs.datanode.https.address", list(cfg.datanodes.values())),
        ):
            if nodes and nodes[0].https_address:
                props[key] = nodes[0].https_address
    props["dfs.block.access.token.enable"] = str(sec.block_tokens).lower()  # design §S.9
    if sec.data_transfer_protection.strip():  # SASL on data transfer (design §S.12)
        props["dfs.data.transfer.protection"] = sec.data_transfer_protection
    if sec.data_transfer_cipher_suites.strip():  # AES-CTR after the handshake (design §S.12)
        props["dfs.encrypt.data.transfer.cipher.suites"] = sec.data_transfer_cipher_suites
        props["dfs.encrypt.data.transfer.cipher.key.bitlength"] = str(
            sec.data_transfer_cipher_key_bits
        )
    if sec.kerberos:  # the principals clients expect of each server (design §S.4)
        for key, pattern in (
            ("dfs.namenode.kerberos.principal", sec.namenode_principal),
            ("dfs.journalnode.kerberos.principal", sec.journalnode_principal),
            ("dfs.datanode.kerberos.principal", sec.datanode_principal),
        ):
            props[key] = str(KerberosName.parse(pattern).in_realm(sec.realm))
    # the rest of the cluster config, so daemons can run from these files (design §A.6)
    return props | {k: v for k, v in site_properties(cfg)[1].items() if k not in props}


def client_properties(cfg: ClusterConfig) -> dict[str, str]:
    """Every client property of both files in one dict (for hdfs-native's config=)."""
    return core_site(cfg) | hdfs_site(cfg)


def render_site(props: dict[str, str]) -> str:
    """A Hadoop *-site.xml document holding props."""
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', "<!-- written by qjm cluster up -->"]
    lines.append("<configuration>")
    for key, value in props.items():
        lines.append(
            f"  <property><name>{escape(key)}</name><value>{escape(value)}</value></property>"
        )
    lines.append("</configuration>")
    return "\n".join(lines) + "\n"


def read_site(path: Path) -> dict[str, str]:
    """The name → value properties of a Hadoop *-site.xml file."""
    root = ET.parse(path).getroot()
    out: dict[str, str] = {}
    for prop in root.iter("property"):
        name, value = prop.findtext("name"), prop.findtext("value")
        if name is not None:
            out[name] = value or ""
    return out


def ssl_client(certs: ClusterTls) -> dict[str, str]:
    """ssl-client.xml's properties: the truststore Hadoop's SSLFactory (Mode.CLIENT) trusts."""
    return {
        "ssl.client.truststore.location": str(certs.truststore),
        "ssl.client.truststore.password": certs.truststore_password(),
        "ssl.client.truststore.type": "pkcs12",
    }


def write_hadoop_conf(directory: Path, cfg: ClusterConfig, certs: ClusterTls | None = None) -> Path:
    """Write DIR/hadoop-conf/{core-site.xml, hdfs-site.xml, log4j*.properties} and, for an
    HTTPS cluster, ssl-client.xml; return the dir."""
    conf = directory / HADOOP_CONF
    conf.mkdir(parents=True, exist_ok=True)
    files = {
        "core-site.xml": render_site(core_site(cfg)),
        "hdfs-site.xml": render_site(hdfs_site(cfg)),
        "log4j.properties": LOG4J_PROPERTIES,
        "log4j2.properties": LOG4J2_PROPERTIES,
    }
    if certs is not None:
        files["ssl-client.xml"] = render_site(ssl_client(certs))
    else:
        (conf / "ssl-client.xml").unlink(missing_ok=True)
    for name, text in files.items():
        tmp = conf / f".{name}.tmp"
        tmp.write_text(text)
        os.replace(tmp, conf / name)
    return conf


def hadoop_jars() -> Path:
    """The Hadoop client jars pyspark ships (site-packages/pyspark/jars)."""
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def fsshell_argv(
    conf_dir: Path, *args: str, java: str = "java", jvm_options: Sequence[str] = ()
) -> list[str]:
    """The command line of `hadoop fs <args>`: Apache Hadoop's FsShell with conf_dir's config."""
    return [
        java,
        # a short-lived shell: the JIT's first tier and the serial collector start it faster
        "-XX:TieredStopAtLevel=1",
        "-XX:+UseSerialGC",
        *jvm_options,
        "-cp",
        f"{conf_dir}:{hadoop_jars()}/*",
        "org.apache.hadoop.fs.FsShell",
        *args,
    ]
