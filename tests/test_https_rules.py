"""HTTPS (design §S.13): the scheme and URL a client picks, and the config rules."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import pytest

from qjm.config import (
    ClusterConfig,
    DataNodeConfig,
    JournalNodeConfig,
    NameNodeConfig,
    SecuritySettings,
    config_from_dict,
    dump_config,
    load_config,
)
from qjm.errors import ConfigError
from qjm.security import tls


@pytest.mark.parametrize(
    ("policy", "scheme", "http", "https"),
    [
        ("HTTP_ONLY", "http", True, False),
        ("HTTPS_ONLY", "https", False, True),
        # both ports serve, and clients stay on http, as DFSUtil.getHttpClientScheme
        ("HTTP_AND_HTTPS", "http", True, True),
    ],
)
def test_the_policy_decides_the_ports_served_and_the_scheme_clients_use(
    policy: str, scheme: str, http: bool, https: bool
) -> None:
    assert tls.http_scheme(policy) == scheme
    assert tls.serves_http(policy) is http
    assert tls.serves_https(policy) is https


@pytest.mark.parametrize(
    ("policy", "http_address", "https_address", "url"),
    [
        ("HTTP_ONLY", "127.0.0.1:9870", "127.0.0.1:9871", "http://127.0.0.1:9870"),
        ("HTTPS_ONLY", "127.0.0.1:9870", "127.0.0.1:9871", "https://127.0.0.1:9871"),
        ("HTTP_AND_HTTPS", "127.0.0.1:9870", "127.0.0.1:9871", "http://127.0.0.1:9870"),
        ("HTTPS_ONLY", "0.0.0.0:1", "0.0.0.0:2", "https://127.0.0.1:2"),  # a wildcard bind
        ("HTTPS_ONLY", "[::1]:1", "[::1]:2", "https://[::1]:2"),
        ("HTTP_ONLY", "h:1", "", "http://h:1"),  # no https address: never asked for
    ],
)
def test_client_url_picks_the_port_of_the_scheme(
    policy: str, http_address: str, https_address: str, url: str
) -> None:
    assert tls.client_url(policy, http_address, https_address) == url


def test_node_url_and_base_url() -> None:
    nn = NameNodeConfig("nn1", "h:1", "h:2", "/n", https_address="h:3")
    https = SecuritySettings(http_policy="HTTPS_ONLY", ssl_certificate="c", ssl_private_key="k")
    assert tls.node_url(https, nn) == "https://h:3"
    assert tls.node_url(SecuritySettings(), nn) == "http://h:2"
    assert tls.base_url("h:2") == "http://h:2"
    assert tls.base_url("https://h:3/") == "https://h:3"


def _nodes(https: bool) -> dict[str, Any]:
    extra = {"https_address": "127.0.0.1:9871"} if https else {}
    return {
        "journalnodes": {
            "jn1": {
                "rpc_address": "127.0.0.1:8485",
                "http_address": "127.0.0.1:8480",
                "edits_dir": "/jn",
                **({"https_address": "127.0.0.1:8481"} if https else {}),
            }
        },
        "namenodes": {
            "nn1": {
                "rpc_address": "127.0.0.1:8020",
                "http_address": "127.0.0.1:9870",
                "name_dir": "/nn",
                **extra,
            }
        },
    }


CERTS = {"ssl_certificate": "/c.pem", "ssl_private_key": "/k.pem"}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"security": {"http_policy": "https"}},
            "security.http_policy: 'https' is not one of HTTP_ONLY, HTTPS_ONLY, HTTP_AND_HTTPS",
        ),
        ({"security": {"http_policy": "HTTPS_ONLY"}}, "security.ssl_certificate: .*needs"),
        (
            {"security": {"http_policy": "HTTP_AND_HTTPS", "ssl_certificate": "/c.pem"}},
            "security.ssl_private_key: .*needs",
        ),
        (
            {**_nodes(False), "security": {"http_policy": "HTTPS_ONLY", **CERTS}},
            "journalnodes.jn1.https_address: security.http_policy = HTTPS_ONLY",
        ),
        (
            {
                **_nodes(True),
                "datanodes": {
                    "dn1": {
                        "transfer_address": "h:1",
                        "ipc_address": "h:2",
                        "http_address": "h:3",
                        "data_dirs": "/d",
                    }
                },
                "security": {"http_policy": "HTTP_AND_HTTPS", **CERTS},
            },
            "datanodes.dn1.https_address: security.http_policy = HTTP_AND_HTTPS",
        ),
        (
            {
                "namenodes": {
                    "nn1": {
                        "rpc_address": "h:1",
                        "http_address": "h:2",
                        "name_dir": "/n",
                        "https_address": "h",
                    }
                }
            },
            "namenodes.nn1.https_address: 'h' is not host:port",
        ),
        ({"security": {"http_policy": 1}}, "security.http_policy: expected str"),
    ],
)
def test_https_errors_name_the_key(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config_from_dict(data)


def test_an_https_config_round_trips(tmp_path: Path) -> None:
    security = SecuritySettings(
        http_policy="HTTPS_ONLY", ssl_certificate="/s.pem", ssl_private_key="/k.pem", ssl_ca="/ca"
    )
    cfg = ClusterConfig(
        journalnodes={"jn1": JournalNodeConfig("jn1", "h:1", "h:2", "/j", "h:3")},
        namenodes={"nn1": NameNodeConfig("nn1", "h:4", "h:5", "/n", https_address="h:6")},
        datanodes={"dn1": DataNodeConfig("dn1", "h:7", "h:8", "h:9", "/d", "h:10")},
        security=security,
    )
    path = tmp_path / "c.toml"
    path.write_text(dump_config(cfg))
    back = load_config(path)
    assert back.security == security
    assert (back.journalnodes, back.namenodes, back.datanodes) == (
        cfg.journalnodes,
        cfg.namenodes,
        cfg.datanodes,
    )
    plain = ClusterConfig(journalnodes={"jn1": JournalNodeConfig("jn1", "h:1", "h:2", "/j")})
    assert "https_address" not in dump_config(plain)  # none set: none written
    assert load_config(path).security.http_policy == "HTTPS_ONLY"


def test_a_missing_certificate_is_named(tmp_path: Path) -> None:
    security = SecuritySettings(
        http_policy="HTTPS_ONLY",
        ssl_certificate=str(tmp_path / "none.pem"),
        ssl_private_key=str(tmp_path / "none-key.pem"),
    )
    with pytest.raises(ConfigError, match="none.pem: no such file"):
        tls.server_context(security)


def test_a_missing_ca_is_named_at_configure(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"security.ssl_ca: .*nope.pem: no such file"):
        tls.configure(SecuritySettings(ssl_ca=str(tmp_path / "nope.pem")))
    tls.configure(SecuritySettings())  # back to the system's CAs
    assert tls.client_context().verify_mode == ssl.CERT_REQUIRED
