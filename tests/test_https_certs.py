"""The launcher's CA and server certificate (design §S.13), judged by real TLS handshakes."""

from __future__ import annotations

import asyncio
import ssl
import urllib.request
from pathlib import Path

import pytest

from qjm.cluster.certs import ClusterTls, make_certificates
from qjm.cluster.launcher import https_mode
from qjm.config import (
    ClusterConfig,
    JournalNodeSettings,
    NameNodeConfig,
    SecuritySettings,
    dump_config,
)
from qjm.journalnode.node import JournalNode
from qjm.security import tls


def test_the_launchers_certificates_verify_for_localhost_only_with_its_ca(
    tmp_path: Path,
) -> None:
    """The CA and server certificate in DIR/tls: keys 0600, the server's names, kept."""
    certs = make_certificates(tmp_path)
    for key in (certs.private_key, certs.directory / "ca-key.pem"):
        assert key.stat().st_mode & 0o777 == 0o600
    assert certs.truststore.stat().st_size > 0 and certs.truststore_password()
    security = SecuritySettings(
        http_policy="HTTPS_ONLY",
        ssl_certificate=str(certs.certificate),
        ssl_private_key=str(certs.private_key),
        ssl_ca=str(certs.ca),
    )
    server = tls.server_context(security)
    client = ssl.create_default_context(cafile=str(certs.ca))
    for host, ok in (("localhost", True), ("127.0.0.1", True), ("example.com", False)):
        assert _handshake(server, client, host) is ok, host
    stranger = ssl.create_default_context()  # the system's CAs only
    assert _handshake(server, stranger, "localhost") is False
    before = certs.ca.read_bytes()
    assert make_certificates(tmp_path).ca.read_bytes() == before  # a restart keeps them


def _handshake(server: ssl.SSLContext, client: ssl.SSLContext, host: str) -> bool:
    """Whether a TLS handshake in memory succeeds with the client naming host."""
    c_in, c_out, s_in, s_out = (ssl.MemoryBIO() for _ in range(4))
    c = client.wrap_bio(c_in, c_out, server_hostname=host)
    s = server.wrap_bio(s_in, s_out, server_side=True)
    for _ in range(10):
        done = 0
        for side, out, peer_in in ((c, c_out, s_in), (s, s_out, c_in)):
            try:
                side.do_handshake()
                done += 1
            except ssl.SSLWantReadError:
                pass
            except ssl.SSLError:
                return False
            peer_in.write(out.read())
        if done == 2:
            return True
    return False


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> ClusterTls:
    """One CA and server certificate for the module's nodes (keytool starts a JVM)."""
    return make_certificates(tmp_path_factory.mktemp("tls"))


@pytest.mark.parametrize("policy", ["HTTP_AND_HTTPS", "HTTPS_ONLY"])
async def test_a_journalnode_serves_the_ports_its_policy_names(
    tmp_path: Path, certs: ClusterTls, policy: str
) -> None:
    """Both ports under HTTP_AND_HTTPS with clients left on http; the TLS port alone under
    HTTPS_ONLY, reported as the node's fromURL and httpPort (design §S.13)."""
    security = SecuritySettings(
        http_policy=policy,
        ssl_certificate=str(certs.certificate),
        ssl_private_key=str(certs.private_key),
        ssl_ca=str(certs.ca),
    )
    (tmp_path / "jn").mkdir()
    node = JournalNode(
        tmp_path / "jn",
        ("127.0.0.1", 0),
        ("127.0.0.1", 0),
        JournalNodeSettings(sync_enabled=False),
        https_address=("127.0.0.1", 0),
        security=security,
    )
    await node.start()
    try:
        trusted = ssl.create_default_context(cafile=str(certs.ca))
        url = f"https://localhost:{node.https_port}/status"
        assert await asyncio.to_thread(_get, url, trusted) == 200
        if policy == "HTTP_AND_HTTPS":
            assert await asyncio.to_thread(_get, f"http://127.0.0.1:{node.http_port}/status") == 200
            assert node.http_url() == f"http://127.0.0.1:{node.http_port}"
            assert node.client_port() == node.http_port
        else:
            assert node.http_port == 0  # never bound
            assert node.http_url() == f"https://127.0.0.1:{node.https_port}"
            assert node.client_port() == node.https_port
            status = await node.node_status()
            assert status.http_address == f"127.0.0.1:{node.https_port}"
    finally:
        await node.stop()


def _get(url: str, context: ssl.SSLContext | None = None) -> int:
    with urllib.request.urlopen(url, timeout=10, context=context) as r:
        return int(r.status)


def test_a_stopped_cluster_starts_as_it_was_made(tmp_path: Path, certs: ClusterTls) -> None:
    """https=None: HTTPS again where the stopped cluster's config serves it and its CA is
    kept; plain where it was made (or last started) without (design §S.13)."""
    assert https_mode(tmp_path, None) is False  # no cluster: plain, as the Python API's default
    (tmp_path / "tls").mkdir()
    (tmp_path / "tls" / "ca.pem").write_bytes(certs.ca.read_bytes())
    nn = NameNodeConfig("nn1", "h:1", "h:2", "/n", https_address="h:3")
    secure = SecuritySettings(
        http_policy="HTTPS_ONLY", ssl_certificate="/s", ssl_private_key="/k", ssl_ca="/c"
    )
    toml = tmp_path / "cluster.toml"
    toml.write_text(dump_config(ClusterConfig(namenodes={"nn1": nn}, security=secure)))
    assert https_mode(tmp_path, None) is True
    assert https_mode(tmp_path, False) is False  # asked: as asked
    toml.write_text(dump_config(ClusterConfig(namenodes={"nn1": nn})))  # started --no-https
    assert https_mode(tmp_path, None) is False
    assert https_mode(tmp_path, True) is True
