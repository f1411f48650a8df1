"""Kerberos principal names as Hadoop reads them: parts, _HOST, and the short user name.

Pure rules (design §S.2): `nn/_HOST@REALM` in a config names one principal per host, the
host being the lower-cased canonical name of the daemon's address; a principal of the
cluster's realm maps to its first component (Hadoop's DEFAULT auth_to_local rule), and one
of another realm to no user at all.
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass

HOST_PATTERN = "_HOST"
_NAME = re.compile(r"^([^/@]+)(?:/([^/@]+))?(?:@([^/@]+))?$")


class PrincipalError(ValueError):
    """A principal name that is malformed, or that no rule maps to a user."""


@dataclass(frozen=True)
class KerberosName:
    """A principal's parts: service (or user), optional host, optional realm."""

    service: str
    host: str | None = None
    realm: str | None = None

    @classmethod
    def parse(cls, name: str) -> KerberosName:
        """The parts of `user@REALM`, `service/host@REALM` or either without the realm."""
        m = _NAME.match(name)
        if m is None:
            raise PrincipalError(f"malformed Kerberos name: {name!r}")
        return cls(m.group(1), m.group(2), m.group(3))

    def __str__(self) -> str:
        text = self.service if self.host is None else f"{self.service}/{self.host}"
        return text if self.realm is None else f"{text}@{self.realm}"

    def in_realm(self, realm: str) -> KerberosName:
        """This name with the realm filled in where it has none."""
        return self if self.realm is not None else KerberosName(self.service, self.host, realm)


def short_name(principal: str, default_realm: str) -> str:
    """The user a principal maps to under Hadoop's DEFAULT rule (its first component)."""
    name = KerberosName.parse(principal)
    if name.realm is not None and name.realm != default_realm:
        raise PrincipalError(f"No rules applied to {principal}")
    return name.service


def canonical_host(host: str) -> str:
    """A host's canonical name, lower-cased, as Hadoop puts it in place of _HOST."""
    try:
        return socket.getfqdn(host).lower()
    except OSError:  # pragma: no cover - getfqdn falls back to its argument
        return host.lower()


def with_host(pattern: str, host: str) -> str:
    """The principal a `service/_HOST@REALM` pattern names on host (others unchanged)."""
    name = KerberosName.parse(pattern)
    if name.host != HOST_PATTERN:
        return pattern
    return str(KerberosName(name.service, host.lower(), name.realm))


def matches(pattern: str, principal: str, default_realm: str) -> bool:
    """Whether principal is one the pattern names (with _HOST, on any host)."""
    want = KerberosName.parse(pattern).in_realm(default_realm)
    try:
        got = KerberosName.parse(principal).in_realm(default_realm)
    except PrincipalError:
        return False
    if want.host == HOST_PATTERN:
        return got.host is not None and (want.service, want.realm) == (got.service, got.realm)
    return want == got
