"""The pure Kerberos rules (design §S.2, §S.3): principal names, short names, who may call what."""

from __future__ import annotations

import pytest

from qjm.config import ConfigError, SecuritySettings
from qjm.security.policy import ServicePrincipals, admit
from qjm.security.principal import KerberosName, PrincipalError, matches, short_name, with_host

REALM = "QJM.TEST"
SERVICES = ServicePrincipals("nn/_HOST", "jn/_HOST", "dn/_HOST", REALM)
JOURNAL = "org.apache.hadoop.hdfs.qjournal.protocol.QJournalProtocol"
INTER_JOURNAL = "org.apache.hadoop.hdfs.qjournal.protocol.InterQJournalProtocol"
DATANODE = "org.apache.hadoop.hdfs.server.protocol.DatanodeProtocol"
CLIENT = "org.apache.hadoop.hdfs.protocol.ClientProtocol"


@pytest.mark.parametrize(
    ("name", "parts"),
    [
        ("alice", ("alice", None, None)),
        ("alice@QJM.TEST", ("alice", None, "QJM.TEST")),
        ("nn/localhost@QJM.TEST", ("nn", "localhost", "QJM.TEST")),
        ("nn/_HOST", ("nn", "_HOST", None)),
    ],
)
def test_names_parse_into_their_parts(name: str, parts: tuple[str | None, ...]) -> None:
    parsed = KerberosName.parse(name)
    assert (parsed.service, parsed.host, parsed.realm) == parts
    assert str(parsed) == name


@pytest.mark.parametrize("bad", ["", "a/b/c@R", "a@R@S", "/host@R", "a@"])
def test_malformed_names_are_refused_by_name(bad: str) -> None:
    with pytest.raises(PrincipalError, match="malformed Kerberos name"):
        KerberosName.parse(bad)


@pytest.mark.parametrize(
    ("principal", "user"),
    [("alice@QJM.TEST", "alice"), ("nn/localhost@QJM.TEST", "nn"), ("bob", "bob")],
)
def test_a_principal_of_the_realm_maps_to_its_first_component(principal: str, user: str) -> None:
    assert short_name(principal, REALM) == user


def test_a_principal_of_another_realm_maps_to_no_user() -> None:
    with pytest.raises(PrincipalError, match="No rules applied to alice@EVIL.ORG"):
        short_name("alice@EVIL.ORG", REALM)


def test_host_is_filled_in_lower_case_only_where_the_pattern_says_host() -> None:
    assert with_host("nn/_HOST@QJM.TEST", "NN1.Example.COM") == "nn/nn1.example.com@QJM.TEST"
    assert with_host("nn/fixed@QJM.TEST", "other") == "nn/fixed@QJM.TEST"


@pytest.mark.parametrize(
    ("pattern", "principal", "expected"),
    [
        ("nn/_HOST", "nn/localhost@QJM.TEST", True),
        ("nn/_HOST", "nn/other.host@QJM.TEST", True),
        ("nn/_HOST", "nn@QJM.TEST", False),  # no host part: a user called nn
        ("nn/_HOST", "nn/localhost@EVIL.ORG", False),
        ("nn/_HOST", "jn/localhost@QJM.TEST", False),
        ("nn/localhost", "nn/other@QJM.TEST", False),
        ("nn/_HOST", "not/a/name", False),
    ],
)
def test_patterns_match_only_their_service_and_realm(
    pattern: str, principal: str, expected: bool
) -> None:
    assert matches(pattern, principal, REALM) is expected


@pytest.mark.parametrize(
    ("protocol", "principal", "admitted"),
    [
        (JOURNAL, "nn/localhost@QJM.TEST", True),
        (JOURNAL, "alice@QJM.TEST", False),
        (JOURNAL, "jn/localhost@QJM.TEST", False),
        (JOURNAL, "dn/localhost@QJM.TEST", False),
        (INTER_JOURNAL, "jn/localhost@QJM.TEST", True),
        (INTER_JOURNAL, "nn/localhost@QJM.TEST", False),
        (DATANODE, "dn/localhost@QJM.TEST", True),
        (DATANODE, "alice@QJM.TEST", False),
        (CLIENT, "alice@QJM.TEST", True),
        (CLIENT, "dn/localhost@QJM.TEST", True),
    ],
)
def test_server_protocols_admit_only_their_role(
    protocol: str, principal: str, admitted: bool
) -> None:
    reason = admit(protocol, principal, SERVICES)
    assert (reason is None) is admitted
    if not admitted:
        assert "expected client Kerberos principal is" in (reason or "")


def test_security_settings_name_what_is_wrong() -> None:
    with pytest.raises(ConfigError, match="security.authentication: 'tokens' is not one of"):
        SecuritySettings(authentication="tokens")
    with pytest.raises(ConfigError, match="security.realm"):
        SecuritySettings(authentication="kerberos")
    assert SecuritySettings(authentication="kerberos", realm=REALM).kerberos
