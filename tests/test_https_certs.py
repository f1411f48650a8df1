"""The launcher's CA and server certificate (design §S.13), judged by real TLS handshakes."""

from __future__ import annotations

import ssl
from pathlib import Path

from qjm.cluster.certs import make_certificates
from qjm.config import SecuritySettings
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
