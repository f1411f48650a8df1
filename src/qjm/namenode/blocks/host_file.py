"""The NameNode's exclude list (HDFS's dfs.hosts.exclude): which DataNodes to decommission.

A file of entries separated by white space or new lines, `#` starting a comment to the end
of its line; an entry is `host:port` (one DataNode, by its transfer address) or `host`
(every DataNode on that host), the host by IP address or name (design §B.20).
"""

from __future__ import annotations

from pathlib import Path

from qjm.errors import ConfigError


def parse_hosts(text: str) -> frozenset[str]:
    """The entries of a hosts file's text."""
    out = set()
    for line in text.splitlines():
        out.update(line.split("#", 1)[0].split())
    return frozenset(out)


def read_hosts(path: str) -> frozenset[str]:
    """The entries of the hosts file at path ("" is no file: no entries)."""
    if not path:
        return frozenset()
    try:
        return parse_hosts(Path(path).read_text())
    except OSError as e:
        raise ConfigError(
            f"namenode.hosts_exclude: cannot read {path}: {e.strerror or e}"
        ) from None


def listed(entries: frozenset[str], ip: str, hostname: str, xfer_port: int) -> bool:
    """Whether a DataNode (its address, name and transfer port) is named by an entry."""
    if not entries:
        return False
    return bool({ip, hostname, f"{ip}:{xfer_port}", f"{hostname}:{xfer_port}"} & entries)
