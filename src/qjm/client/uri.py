"""qjournal://host1:port1;host2:port2;host3:port3/<jid> URIs."""

from __future__ import annotations

from dataclasses import dataclass

from qjm.config import JN_RPC_PORT, format_address, parse_address
from qjm.errors import ConfigError
from qjm.protocol.errors import InvalidRequestError
from qjm.protocol.identity import check_journal_id

SCHEME = "qjournal://"


@dataclass(frozen=True)
class QJournalUri:
    """The JournalNode addresses and journal id a qjournal URI names."""

    addresses: tuple[str, ...]
    jid: str

    def __str__(self) -> str:
        return f"{SCHEME}{';'.join(self.addresses)}/{self.jid}"


def parse_qjournal_uri(uri: str) -> QJournalUri:
    """Parse and validate a qjournal:// URI, naming what is wrong."""
    if not uri.startswith(SCHEME):
        raise ConfigError(f"{uri!r} is not a qjournal URI (qjournal://host:port;.../journal-id)")
    rest = uri[len(SCHEME) :]
    hosts, sep, jid = rest.partition("/")
    if not sep or not jid:
        raise ConfigError(f"{uri!r} names no journal id after the hosts")
    try:
        check_journal_id(jid)
    except InvalidRequestError as e:
        raise ConfigError(f"{uri!r}: {e}") from None
    return QJournalUri(parse_members(hosts, repr(uri)), jid)


def parse_members(hosts: str, where: str) -> tuple[str, ...]:
    """JournalNode addresses from "host:port;host:port;..." (default port 8485), each once."""
    addresses = []
    for part in hosts.split(";"):
        if not part:
            raise ConfigError(f"{where} has an empty host entry")
        host, port = parse_address(part, f"host {part!r} of {where}", default_port=JN_RPC_PORT)
        addresses.append(format_address(host, port))
    seen: set[str] = set()
    for address in addresses:
        if address.lower() in seen:  # host names are case-insensitive
            raise ConfigError(f"{where} names a JournalNode twice ({address})")
        seen.add(address.lower())
    return tuple(addresses)


def check_distinct_nodes(node_ids: dict[str, str], uri: QJournalUri) -> None:
    """Refuse a URI naming one JournalNode under two addresses (its vote would count twice)."""
    seen: dict[str, str] = {}
    for address, node_id in node_ids.items():
        if not node_id:
            continue  # an older JournalNode that does not tell its id
        if node_id in seen:
            raise ConfigError(
                f"{uri} names one JournalNode twice: {seen[node_id]} and {address} are the "
                f"same node (node id {node_id}); list each JournalNode once"
            )
        seen[node_id] = address
