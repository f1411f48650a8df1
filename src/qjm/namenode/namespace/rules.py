"""The namespace's request rules that need no tree: fs-limits and replication bounds."""

from __future__ import annotations

from dataclasses import dataclass

from qjm.namenode.errors import NamenodeError

MIN_REPLICATION, MAX_REPLICATION = 1, 512  # dfs.namenode.replication.min / .max defaults
IMPLICIT_UWX = 0o300  # parents made on the way get u+wx (FSDirMkdirOp.addImplicitUwx)
MAX_COMPONENT_LENGTH = 255  # dfs.namenode.fs-limits.max-component-length (bytes)
MAX_DIRECTORY_ITEMS = 1024 * 1024  # dfs.namenode.fs-limits.max-directory-items


@dataclass(frozen=True)
class FsLimits:
    """HDFS's dfs.namenode.fs-limits.* for new names (design §N.4)."""

    max_component_length: int = MAX_COMPONENT_LENGTH  # UTF-8 bytes of a new name; 0: none
    max_directory_items: int = MAX_DIRECTORY_ITEMS  # entries a directory may hold


class PathComponentTooLongError(NamenodeError):
    """A name longer than dfs.namenode.fs-limits.max-component-length (255 bytes)."""

    java_class = "org.apache.hadoop.hdfs.protocol.FSLimitException$PathComponentTooLongException"


class MaxDirectoryItemsExceededError(NamenodeError):
    """A directory at dfs.namenode.fs-limits.max-directory-items entries."""

    java_class = (
        "org.apache.hadoop.hdfs.protocol.FSLimitException$MaxDirectoryItemsExceededException"
    )


def check_replication(replication: int, src: str, client_machine: str | None = None) -> None:
    """Refuse a replication factor outside HDFS's bounds, as BlockManager.verifyReplication.

    The one check of the rule (design §N.4): an IOException naming the path as the client
    sent it and, for create, the client's machine.
    """
    if replication > MAX_REPLICATION:
        why = f"exceeds maximum of {MAX_REPLICATION}"
    elif replication < MIN_REPLICATION:
        why = f"is less than the required minimum of {MIN_REPLICATION}"
    else:
        return
    who = "" if client_machine is None else f", clientName={client_machine}"
    raise NamenodeError(f"Requested replication factor of {replication} {why} for {src}{who}")
