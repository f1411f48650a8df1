"""A local cluster's own certificate authority (design §S.13): DIR/tls.

The launcher makes a CA and one server certificate for `localhost` and `127.0.0.1` that
every daemon's HTTPS port presents, and a Java truststore holding the CA (made with the JRE's
keytool) for the genuine Hadoop clients' ssl-client.xml. A cluster started again keeps them.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from qjm.cluster.process import LaunchError

TLS_DIR = "tls"
CA_PEM, CA_KEY = "ca.pem", "ca-key.pem"
SERVER_PEM, SERVER_KEY = "server.pem", "server-key.pem"
TRUSTSTORE, TRUSTSTORE_PASSWORD = "truststore.p12", "truststore.password"
VALID_DAYS = 825  # the longest server certificate lifetime browsers accept
SERVER_NAMES = ("localhost",)
SERVER_IPS = ("127.0.0.1",)


@dataclass(frozen=True)
class ClusterTls:
    """Where a cluster's CA, server certificate, key and Java truststore are."""

    directory: Path

    @property
    def ca(self) -> Path:
        """The CA certificate clients trust (curl --cacert, [security] ssl_ca)."""
        return self.directory / CA_PEM

    @property
    def certificate(self) -> Path:
        """The server certificate every daemon presents ([security] ssl_certificate)."""
        return self.directory / SERVER_PEM

    @property
    def private_key(self) -> Path:
        """The server certificate's key ([security] ssl_private_key), mode 0600."""
        return self.directory / SERVER_KEY

    @property
    def truststore(self) -> Path:
        """The CA in a PKCS12 truststore for Java clients (ssl.client.truststore.location)."""
        return self.directory / TRUSTSTORE

    def truststore_password(self) -> str:
        """The truststore's password (it guards the store's integrity only: no secret in it)."""
        return (self.directory / TRUSTSTORE_PASSWORD).read_text().strip()


def _write_private(path: Path, data: bytes) -> None:
    """Write a key file readable by its owner only (0600 from its creation)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def make_certificates(directory: Path, keytool: str | None = None) -> ClusterTls:
    """DIR/tls with a CA, a server certificate for localhost and 127.0.0.1 signed by it, and
    a Java truststore of the CA; what is there already is kept (a restart reuses it)."""
    out = ClusterTls(directory / TLS_DIR)
    out.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not (out.ca.exists() and out.certificate.exists() and out.private_key.exists()):
        _make_pems(out)
    if not (out.truststore.exists() and (out.directory / TRUSTSTORE_PASSWORD).exists()):
        _make_truststore(out, keytool)
    return out


def _make_pems(out: ClusterTls) -> None:
    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=VALID_DAYS)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "qjm local cluster CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in SERVER_NAMES]
    names += [x509.IPAddress(ipaddress.ip_address(a)) for a in SERVER_IPS]
    server = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, SERVER_NAMES[0])]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    _write_private(out.directory / CA_KEY, _key_pem(ca_key))
    _write_private(out.private_key, _key_pem(key))
    # the chain a server presents: its certificate, then the CA's
    out.certificate.write_bytes(
        server.public_bytes(serialization.Encoding.PEM)
        + ca.public_bytes(serialization.Encoding.PEM)
    )
    out.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (out.directory / TRUSTSTORE).unlink(missing_ok=True)  # it held the CA replaced now


def find_keytool() -> str:
    """The JRE's keytool (JAVA_HOME's, else on PATH); a LaunchError naming what to install."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "keytool").is_file():
        return str(Path(home) / "bin" / "keytool")
    found = shutil.which("keytool")
    if not found:
        raise LaunchError(
            "an HTTPS cluster writes a Java truststore for Hadoop clients with the JRE's "
            "keytool, and there is none on PATH: install a JRE (make install brings one), "
            "or start the cluster without --https"
        )
    return found


def _make_truststore(out: ClusterTls, keytool: str | None) -> None:
    password = secrets.token_hex(16)
    store = out.truststore
    store.unlink(missing_ok=True)
    argv = [
        keytool or find_keytool(),
        "-importcert",
        "-noprompt",
        "-alias",
        "qjm-ca",
        "-file",
        str(out.ca),
        "-keystore",
        str(store),
        "-storetype",
        "PKCS12",
        "-storepass:env",
        "QJM_TRUSTSTORE_PASSWORD",
    ]
    try:
        r = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "QJM_TRUSTSTORE_PASSWORD": password},
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise LaunchError(f"keytool could not make {store}: {e}") from None
    if r.returncode != 0:
        raise LaunchError(
            f"keytool could not make {store} (exit {r.returncode}): "
            + (r.stderr.strip() or r.stdout.strip())[-500:]
        )
    (out.directory / TRUSTSTORE_PASSWORD).write_text(password + "\n")
