"""Proxy users: who may act for whom, from where (design §S.14), as HDFS's
`hadoop.proxyuser.<user>.{users,groups,hosts}` and its DefaultImpersonationProvider.

A caller authenticated as a real user (a Kerberos principal, or under simple auth a claimed
real user) may name another, effective, user in its connection context. The server admits
it only where a rule for the real user's short name lists the effective user or one of its
groups, and lists the caller's address. Pure rules; the groups come from the caller.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass

ANY = "*"
IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class ProxyRuleError(ValueError):
    """A proxy user rule that cannot be read (an entry that is no address, network or host)."""


def _entries(text: str) -> tuple[str, ...]:
    """The comma-separated, trimmed, non-empty entries of a setting."""
    return tuple(e.strip() for e in text.split(",") if e.strip())


@dataclass(frozen=True)
class MachineList:
    """Hadoop's MachineList: `*`, addresses, CIDR networks, and host names resolved once."""

    any: bool
    networks: tuple[IpNetwork, ...]

    @classmethod
    def parse(cls, text: str, resolve: bool = True) -> MachineList:
        """Read a hosts setting; a host name becomes its addresses (none if it does not
        resolve, as Hadoop skips an unknown host)."""
        entries = _entries(text)
        if ANY in entries:
            return cls(True, ())
        networks: list[IpNetwork] = []
        for entry in entries:
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
                continue
            except ValueError:
                pass
            if "/" in entry:
                raise ProxyRuleError(f"{entry!r} is not an address, a network or a host name")
            if resolve:
                networks += [ipaddress.ip_network(a) for a in _addresses(entry)]
        return cls(False, tuple(networks))

    def includes(self, ip: str) -> bool:
        """Whether the address ip is on the list."""
        if self.any:
            return True
        try:
            address = ipaddress.ip_address(ip.strip("[]").split("%", 1)[0])
        except ValueError:
            return False
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return any(address.version == n.version and address in n for n in self.networks)


def _addresses(host: str) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except OSError:
        return []
    return sorted({str(info[4][0]) for info in infos})


@dataclass(frozen=True)
class ProxyRule:
    """What one real user may do as a proxy: for which users and groups, from which hosts."""

    users: frozenset[str]
    groups: frozenset[str]
    hosts: MachineList

    @classmethod
    def parse(cls, users: str, groups: str, hosts: str, resolve: bool = True) -> ProxyRule:
        """A rule from the three settings' texts (comma-separated, `*` for any)."""
        return cls(
            frozenset(_entries(users)),
            frozenset(_entries(groups)),
            MachineList.parse(hosts, resolve),
        )

    def allows_user(self, user: str, groups: Iterable[str]) -> bool:
        """Whether the rule lets its real user act as user (in groups): Hadoop's ACL check."""
        if ANY in self.users or ANY in self.groups or user in self.users:
            return True
        return any(g in self.groups for g in groups)


def authorize(
    rules: dict[str, ProxyRule],
    real_name: str,
    real_short: str,
    effective: str,
    effective_groups: Iterable[str],
    ip: str,
) -> str | None:
    """None when real_name (short name real_short) may act as effective from ip, else the
    refusal's text (HDFS's AuthorizationException messages)."""
    rule = rules.get(real_short)
    if rule is None or not rule.allows_user(effective, effective_groups):
        return f"User: {real_name} is not allowed to impersonate {effective}"
    if not rule.hosts.includes(ip):
        return f"Unauthorized connection for super-user: {real_name} from IP {ip}"
    return None
