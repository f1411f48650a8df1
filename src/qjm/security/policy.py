"""Service-level authorization: which principals may use which protocol (design §S.3).

As HDFS's `@KerberosInfo(clientPrincipal=...)` on its server-to-server protocols: only the
NameNodes write the journal, only JournalNodes sync from one another, only DataNodes speak
DatanodeProtocol. Every other protocol takes any authenticated principal and checks the
caller per method (the superuser for HA state changes, permissions for files).
"""

from __future__ import annotations

from dataclasses import dataclass

from qjm.security.principal import KerberosName, matches

# protocol -> the role whose principal alone may call it
SERVER_PROTOCOLS = {
    "org.apache.hadoop.hdfs.qjournal.protocol.QJournalProtocol": "namenode",
    "org.apache.hadoop.hdfs.qjournal.protocol.InterQJournalProtocol": "journalnode",
    "org.apache.hadoop.hdfs.server.protocol.DatanodeProtocol": "datanode",
    "org.apache.hadoop.hdfs.server.protocol.InterDatanodeProtocol": "datanode",
}


@dataclass(frozen=True)
class ServicePrincipals:
    """The principal patterns of the cluster's daemons (with _HOST) and the realm."""

    namenode: str
    journalnode: str
    datanode: str
    realm: str

    def of(self, role: str) -> str:
        """The principal pattern of role (namenode, journalnode, datanode), with the realm."""
        pattern: str = getattr(self, role)
        return str(KerberosName.parse(pattern).in_realm(self.realm))


def admit(protocol: str, principal: str, services: ServicePrincipals) -> str | None:
    """None when principal may use protocol, else why not (for the refusal's message)."""
    role = SERVER_PROTOCOLS.get(protocol)
    if role is None:
        return None
    pattern = services.of(role)
    if matches(pattern, principal, services.realm):
        return None
    return f"expected client Kerberos principal is {pattern}"


# protocol -> the role whose principal its servers run as (what a client authenticates)
SERVER_ROLE_OF_PROTOCOL = {
    "org.apache.hadoop.hdfs.protocol.ClientProtocol": "namenode",
    "org.apache.hadoop.ha.HAServiceProtocol": "namenode",
    "org.apache.hadoop.hdfs.server.protocol.DatanodeProtocol": "namenode",
    "org.apache.hadoop.ha.ZKFCProtocol": "namenode",  # a ZKFC logs in as its NameNode
    "org.apache.hadoop.hdfs.qjournal.protocol.QJournalProtocol": "journalnode",
    "org.apache.hadoop.hdfs.qjournal.protocol.InterQJournalProtocol": "journalnode",
    "qjm.journalnode.JournalNodeStatusProtocol": "journalnode",
    "org.apache.hadoop.hdfs.protocol.ClientDatanodeProtocol": "datanode",
    "org.apache.hadoop.hdfs.server.protocol.InterDatanodeProtocol": "datanode",
}


def server_principals_by_protocol(services: ServicePrincipals) -> dict[str, str]:
    """The principal pattern a client expects of each protocol's servers."""
    return {p: services.of(role) for p, role in SERVER_ROLE_OF_PROTOCOL.items()}


# HTTP path -> the roles whose principals alone may use it (HDFS's isValidRequestor)
SERVER_PATHS = {
    "/getJournal": ("namenode", "journalnode"),  # edits: NameNodes tail, JournalNodes sync
    "/imagetransfer": ("namenode",),  # images: a standby uploads, a bootstrap downloads
}


def admit_http(path: str, principal: str, services: ServicePrincipals) -> str | None:
    """None when principal may use the HTTP path, else why not."""
    roles = SERVER_PATHS.get(path)
    if roles is None:
        return None
    patterns = [services.of(role) for role in roles]
    if any(matches(p, principal, services.realm) for p in patterns):
        return None
    return f"only {' or '.join(patterns)} may"
