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
from qjm.config import ClusterConfig

# The properties moved to qjm.hdfs.site_conf, where the daemons' /conf reads them too.
from qjm.hdfs.site_conf import (
    FAST_FAILOVER,
    FAST_IPC,
    PROXY_PROVIDER,
    core_site,
    hdfs_site,
)

__all__ = [
    "FAST_FAILOVER",
    "FAST_IPC",
    "HADOOP_CONF",
    "LOG4J2_PROPERTIES",
    "LOG4J_PROPERTIES",
    "PROXY_PROVIDER",
    "client_properties",
    "core_site",
    "fsshell_argv",
    "hadoop_jars",
    "hdfs_site",
    "read_site",
    "render_site",
    "write_hadoop_conf",
]

HADOOP_CONF = "hadoop-conf"
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
