"""A real cluster serving HTTPS only (design §S.13): curl and the genuine Java client judge it.

One open cluster (3 JournalNodes, 2 NameNodes in manual HA, 1 DataNode) made by
`cluster_up(https=True)`; the NameNodes tail edits, bootstrap and checkpoint over TLS.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import run_qjm
from hadoop_clients import java_program, run_java
from ports import free_port_block
from qjm.cluster.hadoop_conf import read_site
from qjm.cluster.launcher import cluster_down, cluster_up
from qjm.config import NameNodeSettings, load_config
from qjm.testing.wait import wait_until

pytestmark = pytest.mark.slow

NODES = ("jn1", "jn2", "jn3", "nn1", "nn2", "dn1")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The HTTPS_ONLY cluster; the standby checkpoints after every transaction."""
    d = tmp_path_factory.mktemp("https") / "c"
    # RPC and HTTP ports of 5 nodes, the DataNode's three, then an HTTPS port per node
    count = 2 * 5 + 3 + len(NODES)
    info = cluster_up(
        d,
        journalnodes=3,
        namenodes=2,
        base_port=free_port_block(count),
        datanodes=1,
        namenode_settings=NameNodeSettings(checkpoint_txns=1, checkpoint_check_period_s=1),
        https=True,
    )
    info["dir"] = str(d)
    try:
        yield info
    finally:
        cluster_down(d)


def curl(*args: str) -> subprocess.CompletedProcess[str]:
    """curl quietly (errors shown), at most 30 s."""
    return subprocess.run(
        ["curl", "-sS", "--max-time", "30", *args], capture_output=True, text=True, timeout=60
    )


def https_of(cluster: dict[str, Any], name: str) -> str:
    """A daemon's base URL by host name, as cluster.json gives its client address."""
    entry = cluster[name]
    assert entry["scheme"] == "https"
    return f"https://{entry['http'].replace('127.0.0.1', 'localhost')}"


def status(cluster: dict[str, Any], name: str) -> dict[str, Any]:
    """A daemon's /status over TLS, trusting the cluster's CA."""
    r = curl("--cacert", cluster["tls"]["ca"], f"{https_of(cluster, name)}/status")
    assert r.returncode == 0, r.stderr
    data: dict[str, Any] = json.loads(r.stdout)
    return data


def test_every_daemon_answers_over_tls_with_the_clusters_ca(cluster: dict[str, Any]) -> None:
    cfg = load_config(cluster["config"])
    assert cfg.security.http_policy == "HTTPS_ONLY"
    for name in NODES:
        node = {**cfg.journalnodes, **cfg.namenodes, **cfg.datanodes}[name]
        assert cluster[name]["http"] == node.https_address  # what clients use
        st = status(cluster, name)
        assert st.get("name", st.get("rpc_address")), st
    assert status(cluster, "nn1")["ha_state"] == "active"
    assert status(cluster, "dn1")["name"] == "dn1"
    # the DataNode registers its HTTPS port (DatanodeID's infoSecurePort) with the NameNodes
    rows = wait_until(
        "dn1 registers with nn1", lambda: status(cluster, "nn1")["datanodes"], timeout_s=60
    )
    assert [row["https_address"] for row in rows] == [cfg.datanodes["dn1"].https_address]
    assert "ns1" in status(cluster, "jn1")["journals"]


def test_the_http_ports_are_closed_and_plain_http_gets_nothing(cluster: dict[str, Any]) -> None:
    cfg = load_config(cluster["config"])
    plain = [jn.http_address for jn in cfg.journalnodes.values()]
    plain += [nn.http_address for nn in cfg.namenodes.values()]
    plain += [dn.http_address for dn in cfg.datanodes.values()]
    for address in plain:  # HTTPS_ONLY: nothing listens on http_address
        host, _, port = address.rpartition(":")
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((host, int(port)), timeout=5).close()
    for name in ("nn1", "jn1", "dn1"):
        url = f"http://{cluster[name]['http']}/status"  # plain HTTP to the TLS port
        r = curl(url)
        assert r.returncode != 0 and r.stdout == "", (name, r)
        with pytest.raises((urllib.error.URLError, ConnectionError, http_exception())):
            urllib.request.urlopen(url, timeout=10).read()


def http_exception() -> type[Exception]:
    """What urllib raises when the server answers HTTP with a TLS alert or hangs up."""
    import http.client

    return http.client.HTTPException


def test_a_client_that_does_not_trust_the_ca_is_refused(cluster: dict[str, Any]) -> None:
    url = f"{https_of(cluster, 'nn1')}/status"
    r = curl(url)  # the system's CAs only
    assert r.returncode == 60 and "certificate" in r.stderr, r
    with pytest.raises(urllib.error.URLError) as e:
        urllib.request.urlopen(url, timeout=10, context=ssl.create_default_context())
    assert "certificate verify failed" in str(e.value)
    # the CA trusted, but the name is not one the certificate holds
    port = cluster["nn1"]["http"].rpartition(":")[2]
    other = curl(
        "--cacert",
        cluster["tls"]["ca"],
        "--resolve",
        f"stranger.example:{port}:127.0.0.1",
        f"https://stranger.example:{port}/status",
    )
    assert other.returncode == 60 and "stranger.example" in other.stderr, other


def test_tls_files_and_the_java_client_config(cluster: dict[str, Any]) -> None:
    d = Path(cluster["dir"])
    for key in ("server-key.pem", "ca-key.pem"):
        assert (d / "tls" / key).stat().st_mode & 0o777 == 0o600
    conf = Path(cluster["hadoop_conf"])
    hdfs = read_site(conf / "hdfs-site.xml")
    cfg = load_config(cluster["config"])
    assert hdfs["dfs.http.policy"] == "HTTPS_ONLY"
    assert hdfs["dfs.namenode.https-address.ns1.nn2"] == cfg.namenodes["nn2"].https_address
    assert hdfs["dfs.journalnode.https-address"] == cfg.journalnodes["jn1"].https_address
    assert hdfs["dfs.datanode.https.address"] == cfg.datanodes["dn1"].https_address
    ssl_client = read_site(conf / "ssl-client.xml")
    assert ssl_client["ssl.client.truststore.location"] == str(d / "tls" / "truststore.p12")
    assert ssl_client["ssl.client.truststore.type"] == "pkcs12"


def test_edits_checkpoints_and_a_failover_travel_over_tls(cluster: dict[str, Any]) -> None:
    """nn2 tails the edits from the JournalNodes' HTTPS ports, checkpoints, uploads the
    image to nn1 over TLS, then takes over and serves what was written."""
    conf = cluster["config"]
    r = run_qjm("dfs", "--config", conf, "mkdir", "-p", "/over/tls")
    assert r.returncode == 0, r.stderr
    written = status(cluster, "nn1")["last_applied_txid"]
    wait_until(
        "nn2 tails the edits over HTTPS",
        lambda: status(cluster, "nn2")["last_applied_txid"] >= written,
        timeout_s=60,
    )
    # the standby's checkpoint reaches the active through PUT /imagetransfer
    wait_until(
        "nn2's checkpoint is uploaded to nn1 over HTTPS",
        lambda: (status(cluster, "nn1")["image_txid"] or 0) >= written,
        timeout_s=60,
    )
    r = run_qjm("haadmin", "--config", conf, "-failover", "nn1", "nn2", timeout=120)
    assert r.returncode == 0, r.stderr
    assert status(cluster, "nn2")["ha_state"] == "active"
    r = run_qjm("dfs", "--config", conf, "ls", "/over")
    assert r.returncode == 0 and "/over/tls" in r.stdout, r
    r = run_qjm("fsck", "--config", conf, "/")
    assert r.returncode == 0 and "HEALTHY" in r.stdout, r
    assert "https://" in r.stderr  # "Connecting to namenode via https://..."
    for name in ("nn1", "nn2"):
        log = Path(cluster["dir"], "logs", f"{name}.log").read_text()
        assert "certificate verify failed" not in log


HTTPS_GET_JAVA = """
import java.io.*;
import java.net.URL;
import javax.net.ssl.HttpsURLConnection;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.security.ssl.SSLFactory;

public class HttpsGet {
  // GETs a URL with Hadoop's own SSLFactory in client mode, which reads ssl-client.xml
  // from the class path (the truststore of the cluster's CA); prints the status and body.
  public static void main(String[] a) throws Exception {
    SSLFactory factory = new SSLFactory(SSLFactory.Mode.CLIENT, new Configuration());
    factory.init();
    try {
      HttpsURLConnection c = (HttpsURLConnection) new URL(a[0]).openConnection();
      c.setSSLSocketFactory(factory.createSSLSocketFactory());
      c.setHostnameVerifier(factory.getHostnameVerifier());
      System.out.println(c.getResponseCode());
      try (InputStream in = c.getInputStream()) {
        System.out.println(new String(in.readAllBytes(), "UTF-8"));
      }
    } catch (IOException e) {
      System.out.println("FAILED " + e);
      System.exit(2);
    } finally {
      factory.destroy();
    }
  }
}
"""


def test_hadoops_ssl_factory_reads_the_jmx_with_ssl_client_xml(
    cluster: dict[str, Any], tmp_path: Path
) -> None:
    classes = java_program(HTTPS_GET_JAVA, tmp_path)
    conf = Path(cluster["hadoop_conf"])
    url = f"{https_of(cluster, 'nn1')}/jmx"
    r = run_java(classes, "HttpsGet", conf, url)
    assert r.returncode == 0, r.stdout + r.stderr
    code, _, body = r.stdout.partition("\n")
    assert code == "200" and "beans" in json.loads(body), r.stdout
    # without ssl-client.xml the JVM trusts only its own CAs: the handshake fails
    bare = tmp_path / "bare-conf"
    bare.mkdir()
    for name in ("core-site.xml", "hdfs-site.xml", "log4j2.properties"):
        (bare / name).write_text((conf / name).read_text())
    refused = run_java(classes, "HttpsGet", bare, url)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "SSLHandshakeException" in refused.stdout, refused.stdout


def test_spnego_rides_on_tls_in_a_kerberos_cluster(tmp_path: Path) -> None:
    """Kerberos + HTTPS_ONLY, the secure default of `qjm cluster up` (design §S.13): a
    user's ticket reads /status through TLS, no ticket gets 401, a user's ticket may not
    read edits, and the standby tails them with the NameNode's ticket over TLS."""
    d = tmp_path / "secure"
    info = cluster_up(
        d,
        journalnodes=3,
        namenodes=2,
        base_port=free_port_block(2 * 5 + 5),
        kerberos=True,
        https=True,
    )
    try:
        ca, kdc = info["tls"]["ca"], info["kdc"]
        env = {"KRB5_CONFIG": kdc["krb5_conf"], "KRB5CCNAME": f"FILE:{kdc['user_ccache']}"}

        def get(url: str, *extra: str) -> tuple[int, str]:
            argv = ["curl", "-s", "-o", "-", "-w", "\n%{http_code}", "--max-time", "30"]
            r = subprocess.run(
                [*argv, "--cacert", ca, *extra, url],
                env={**os.environ, **env},
                capture_output=True,
                text=True,
                timeout=60,
            )
            body, _, code = r.stdout.rpartition("\n")
            return int(code or 0), body

        nn1 = https_of(info, "nn1")
        code, body = get(f"{nn1}/status", "--negotiate", "-u", ":")
        assert code == 200 and json.loads(body)["ha_state"] == "active", body
        assert get(f"{nn1}/status")[0] == 401  # TLS alone does not authenticate
        jn1 = https_of(info, "jn1")
        code, _ = get(f"{jn1}/getJournal?jid=ns1&segmentTxId=1", "--negotiate", "-u", ":")
        assert code == 403  # only the NameNodes' and JournalNodes' principals read edits
        r = subprocess.run(
            [sys.executable, "-m", "qjm", "dfs", "--config", info["config"], "mkdir", "/s"],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0, r.stderr

        def applied(name: str) -> int:
            code, body = get(f"{https_of(info, name)}/status", "--negotiate", "-u", ":")
            assert code == 200, body
            return int(json.loads(body)["last_applied_txid"])

        written = applied("nn1")
        wait_until("nn2 tails over TLS with SPNEGO", lambda: applied("nn2") >= written, 60)
    finally:
        cluster_down(d)


def test_spark_sources_read_edits_and_an_image_over_tls_with_ssl_ca(
    cluster: dict[str, Any], tmp_path: Path
) -> None:
    """qjm-edits' executors fetch segments from the JournalNodes' HTTPS ports, trusting
    the sslCa option's CA, and refuse them without it; qjm-image downloads over TLS."""
    from qjm.spark.session import build_session

    spark = build_session("local[1]", "qjm-https", conf={"spark.sql.shuffle.partitions": "1"})
    try:
        ca = cluster["tls"]["ca"]
        edits = spark.read.format("qjm-edits")
        # first without the CA: an executor's Python worker starts out trusting no one
        with pytest.raises(Exception, match="certificate verify failed"):
            edits.load(cluster["shared_edits"]).count()
        rows = edits.option("sslCa", ca).load(cluster["shared_edits"]).collect()
        assert any(r.opcode == "OP_START_LOG_SEGMENT" for r in rows), rows[:5]
        image = (
            spark.read.format("qjm-image")
            .option("sslCa", ca)
            .option("downloadDir", str(tmp_path))
            .load(https_of(cluster, "nn1"))
        )
        assert image.filter("path = '/'").count() == 1
    finally:
        spark.stop()
