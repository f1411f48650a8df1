"""HTTPS on the daemons' HTTP ports (design §S.13), as HDFS's `dfs.http.policy`.

A daemon serves plain HTTP on its http_address, TLS on its https_address, or both, as the
policy says. A client picks one scheme for every node, as HDFS's DFSUtil.getHttpClientScheme:
https under HTTPS_ONLY, else http; it verifies the server against `[security] ssl_ca` with one
SSLContext per process, and SPNEGO (design §S.5) rides on top unchanged.
"""

from __future__ import annotations

import os
import ssl
import threading
from typing import Any

from qjm.config import (
    HTTP_AND_HTTPS,
    HTTP_ONLY,
    HTTPS_ONLY,
    SecuritySettings,
    format_address,
    parse_address,
)
from qjm.errors import ConfigError

__all__ = [
    "HTTPS_ONLY",
    "HTTP_AND_HTTPS",
    "HTTP_ONLY",
    "base_url",
    "client_address",
    "client_context",
    "client_url",
    "configure",
    "connector",
    "http_scheme",
    "node_url",
    "server_context",
    "serves_http",
    "serves_https",
    "urlopen",
]


def http_scheme(policy: str) -> str:
    """The scheme a client uses under policy: https only under HTTPS_ONLY (as HDFS)."""
    return "https" if policy == HTTPS_ONLY else "http"


def serves_http(policy: str) -> bool:
    """Whether a daemon listens on its http_address under policy."""
    return policy in (HTTP_ONLY, HTTP_AND_HTTPS)


def serves_https(policy: str) -> bool:
    """Whether a daemon listens on its https_address under policy."""
    return policy in (HTTPS_ONLY, HTTP_AND_HTTPS)


def client_address(policy: str, http_address: str, https_address: str) -> str:
    """The host:port a client reaches a node's HTTP server at under policy."""
    return https_address if http_scheme(policy) == "https" else http_address


def client_url(policy: str, http_address: str, https_address: str = "") -> str:
    """scheme://host:port of a node's HTTP server for a client (a wildcard host is 127.0.0.1)."""
    address = client_address(policy, http_address, https_address)
    host, port = parse_address(address, "http address")
    if host in ("0.0.0.0", "::"):
        host = "127.0.0.1"
    return f"{http_scheme(policy)}://{format_address(host, port)}"


def base_url(address_or_url: str, scheme: str = "http") -> str:
    """scheme://host:port for a bare host:port; a URL (http:// or https://) as it is."""
    if "://" in address_or_url:
        return address_or_url.rstrip("/")
    return f"{scheme}://{address_or_url}"


def urlopen(url: str, timeout: float, headers: dict[str, str] | None = None) -> Any:
    """urllib's urlopen of a GET, https verified with client_context (blocking)."""
    import urllib.request

    request = urllib.request.Request(url, headers=headers or {})
    context = client_context() if url.startswith("https://") else None
    return urllib.request.urlopen(request, timeout=timeout, context=context)


def node_url(settings: SecuritySettings, node: Any) -> str:
    """The base URL a client uses for a configured node (its http_address and https_address)."""
    return client_url(settings.http_policy, node.http_address, node.https_address)


def server_context(settings: SecuritySettings) -> ssl.SSLContext:
    """The TLS context a daemon's HTTPS port presents: its certificate and private key."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    for key in ("ssl_certificate", "ssl_private_key"):
        if not os.path.isfile(getattr(settings, key)):
            raise ConfigError(f"security.{key}: {getattr(settings, key)}: no such file")
    try:
        ctx.load_cert_chain(settings.ssl_certificate, settings.ssl_private_key)
    except (ssl.SSLError, OSError) as e:
        raise ConfigError(
            f"security.ssl_certificate {settings.ssl_certificate} with security.ssl_private_key "
            f"{settings.ssl_private_key}: not a PEM certificate and its key ({e})"
        ) from None
    return ctx


_lock = threading.Lock()
_ca = ""  # [security] ssl_ca of this process ("": the system's trusted CAs)
_client: ssl.SSLContext | None = None


def configure(settings: SecuritySettings) -> None:
    """Make this process's HTTPS clients trust settings.ssl_ca, read now (at login, before
    any event loop needs it): a CA that does not load is a ConfigError naming the key."""
    global _ca, _client
    with _lock:
        if settings.ssl_ca != _ca or (settings.ssl_ca and _client is None):
            # the system's CAs are loaded on first use: a plain cluster never pays for them
            _client = _client_context(settings.ssl_ca) if settings.ssl_ca else None
            _ca = settings.ssl_ca


def client_context() -> ssl.SSLContext:
    """The process's one client SSLContext: verifies servers against ssl_ca and host names
    (the system's CAs in a process never configured)."""
    global _client
    with _lock:
        if _client is None:
            _client = _client_context(_ca)
        return _client


def _client_context(ca: str) -> ssl.SSLContext:
    if ca and not os.path.isfile(ca):
        raise ConfigError(f"security.ssl_ca: {ca}: no such file")
    try:
        return ssl.create_default_context(cafile=ca or None)
    except (ssl.SSLError, OSError) as e:
        raise ConfigError(f"security.ssl_ca: {ca} is not a PEM CA ({e})") from None


def connector() -> Any:
    """An aiohttp connector for a ClientSession: https:// URLs verified with client_context."""
    import aiohttp

    return aiohttp.TCPConnector(ssl=client_context())
