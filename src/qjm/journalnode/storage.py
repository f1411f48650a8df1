"""On-disk storage of one journal on a JournalNode: <edits_dir>/<jid>/{in_use.lock, current/}.

Every metadata file but committed-txid is written temp + fsync + rename + fsync(dir).
committed-txid is rewritten in place on every batch without its own fsync, as HDFS's
BestEffortLongFile does: a stale value only makes recovery's sanity check and readers
more conservative, never unsafe.
"""

from __future__ import annotations

import os
import shutil
import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from qjm.editlog.segments import SegmentFile, list_segments
from qjm.fileutil import FileLockError, atomic_write, fsync_dir, lock_file
from qjm.ipc.errors import MalformedRpcError
from qjm.ipc.framing import decode_varint, encode_varint
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import StorageError
from qjm.protocol.identity import RESERVED_NAMES
from qjm.protocol.namespace import NamespaceInfo

LAST_PROMISED_EPOCH = "last-promised-epoch"
LAST_WRITER_EPOCH = "last-writer-epoch"
COMMITTED_TXID = "committed-txid"
VERSION = "VERSION"
MEMBERS = "members"
# The last member change (docs/design.md §J.7): its epoch and the sets before and after.
MEMBER_CHANGE = "member-change"
AWAITING_NEW_EPOCH = "awaiting-new-epoch"
# Present while the journal may not vote in recovery (prepare_recovery): its storage was
# restored from peers, so "no segment" could hide txids it acknowledged before the loss.
AMNESIAC = "amnesiac"
LOCK_FILE = "in_use.lock"
SYNC_DIR = "edits.sync"
CURRENT_DIR = "current"
STORAGE_TYPE = "JOURNAL_NODE"
assert {LOCK_FILE, CURRENT_DIR, SYNC_DIR} <= RESERVED_NAMES  # journal ids may not be these


@dataclass(frozen=True, slots=True)
class MemberChangeRecord:
    """The last member change a journal recorded: the epoch, the old and the new members."""

    epoch: int
    old: tuple[str, ...]
    new: tuple[str, ...]


class JNStorage:
    """The directories and metadata files of one journal; not thread-safe."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.current = root / CURRENT_DIR
        self.paxos_dir = self.current / "paxos"
        self.sync_dir = root / SYNC_DIR
        self._lock_fd = -1
        # Parsed paxos records by segment start (None: no file), kept in step by write_paxos,
        # purge_paxos and format: the manifest reads the decision of every finalized segment.
        self._paxos: dict[int, pb.PersistedRecoveryPaxosData | None] = {}

    # -- lock ---------------------------------------------------------------------------
    def lock(self) -> None:
        """Take the exclusive storage lock, or raise naming the holder."""
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            self._lock_fd = lock_file(
                self.root / LOCK_FILE,
                f"cannot lock storage {self.root}: it is in use by another process",
            )
        except FileLockError as e:
            raise StorageError(str(e)) from None

    def unlock(self) -> None:
        """Release the storage lock."""
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1

    # -- format and VERSION ---------------------------------------------------------------
    def is_formatted(self) -> bool:
        """True when current/VERSION exists."""
        return (self.current / VERSION).is_file()

    def has_data(self) -> bool:
        """True when current/ holds anything."""
        return self.current.is_dir() and any(self.current.iterdir())

    def format(
        self, ns: NamespaceInfo, promised_epoch: int = 0, members: list[str] | None = None
    ) -> None:
        """Empty current/; write the marker, the kept promise, members, then VERSION last."""
        self._paxos.clear()
        if self.current.exists():
            shutil.rmtree(self.current)
        if self.sync_dir.exists():
            shutil.rmtree(self.sync_dir)
        self.current.mkdir(parents=True)
        self.paxos_dir.mkdir()
        # VERSION is what makes the storage formatted, so a crash before it leaves an
        # unformatted journal rather than one without its marker or its promise.
        self.set_awaiting_new_epoch(f"was formatted for {ns.describe()}")
        if promised_epoch:
            self.write_long(LAST_PROMISED_EPOCH, promised_epoch)
        if members:
            self.write_members(members)
        self.write_version(ns)
        fsync_dir(self.root)

    def restore_version(
        self, ns: NamespaceInfo, promised_epoch: int, members: Sequence[str] | None, why: str | None
    ) -> None:
        """Re-create a lost VERSION (and members) for a namespace, with both markers set.

        why is the markers' reason; None: restored from peers after a loss. The promise
        only rises.
        """
        self.set_awaiting_new_epoch(why or "was restored from a peer after losing its VERSION")
        # Unlike format, the node may have held acknowledged txids: it must not vote in
        # recovery until its data is real again (see Journal.prepare_recovery).
        self.set_amnesiac(why or "was restored from a peer after losing its storage")
        if members:
            self.write_members(list(members))
        self.write_version(ns)
        if promised_epoch > self.read_long(LAST_PROMISED_EPOCH, 0):
            self.write_long(LAST_PROMISED_EPOCH, promised_epoch)

    def write_version(self, ns: NamespaceInfo) -> None:
        """Write current/VERSION as a Java properties file, like HDFS."""
        stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime())
        text = (
            f"#{stamp}\n"
            f"namespaceID={ns.namespace_id}\n"
            f"clusterID={ns.cluster_id}\n"
            f"blockpoolID={ns.block_pool_id}\n"
            f"cTime={ns.ctime}\n"
            f"storageType={STORAGE_TYPE}\n"
            f"layoutVersion={ns.layout_version}\n"
        )
        self.current.mkdir(parents=True, exist_ok=True)
        self.paxos_dir.mkdir(exist_ok=True)
        atomic_write(self.current / VERSION, text.encode())

    def read_version(self) -> NamespaceInfo:
        """Parse current/VERSION, naming the file and key on any problem."""
        path = self.current / VERSION
        props: dict[str, str] = {}
        for line in path.read_text().splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, sep, value = line.partition("=")
            if sep:
                props[key.strip()] = value.strip()
        try:
            if props.get("storageType", STORAGE_TYPE) != STORAGE_TYPE:
                raise StorageError(
                    f"{path}: storageType is {props['storageType']}, expected {STORAGE_TYPE}"
                )
            return NamespaceInfo(
                namespace_id=int(props["namespaceID"]),
                cluster_id=props["clusterID"],
                block_pool_id=props.get("blockpoolID", ""),
                ctime=int(props.get("cTime", "0")),
                layout_version=int(props.get("layoutVersion", "-64")),
            )
        except KeyError as e:
            raise StorageError(f"{path} lacks the key {e.args[0]}") from None
        except ValueError as e:
            raise StorageError(f"{path} has a malformed value: {e}") from None

    # -- members and the new_epoch marker -------------------------------------------------
    def read_members(self) -> list[str] | None:
        """The sorted host:port list format stored, or None when none was stored."""
        path = self.current / MEMBERS
        try:
            text = path.read_bytes().decode("utf-8", errors="replace")
        except FileNotFoundError:
            return None
        return sorted(line.strip() for line in text.splitlines() if line.strip())

    def write_members(self, members: list[str]) -> None:
        """Durably store the journal's members, one host:port per line, sorted."""
        atomic_write(self.current / MEMBERS, "".join(f"{m}\n" for m in sorted(members)).encode())

    def read_member_change(self) -> MemberChangeRecord | None:
        """The last member change recorded, or None; a malformed record names the file."""
        path = self.current / MEMBER_CHANGE
        try:
            text = path.read_bytes().decode("utf-8", errors="replace")
        except FileNotFoundError:
            return None
        props = dict(
            (key.strip(), value.strip())
            for key, sep, value in (line.partition("=") for line in text.splitlines())
            if sep and not key.startswith("#")
        )
        try:
            return MemberChangeRecord(
                epoch=int(props["epoch"]),
                old=tuple(sorted(m for m in props["old"].split(";") if m)),
                new=tuple(sorted(m for m in props["new"].split(";") if m)),
            )
        except KeyError as e:
            raise StorageError(f"{path} lacks the key {e.args[0]}") from None
        except ValueError as e:
            raise StorageError(f"{path} has a malformed value: {e}") from None

    def write_member_change(self, record: MemberChangeRecord) -> None:
        """Durably record a member change as epoch, old and new lines (host:port;...)."""
        text = (
            f"epoch={record.epoch}\n"
            f"old={';'.join(sorted(record.old))}\n"
            f"new={';'.join(sorted(record.new))}\n"
        )
        self.current.mkdir(parents=True, exist_ok=True)
        atomic_write(self.current / MEMBER_CHANGE, text.encode())

    def awaiting_new_epoch(self) -> str | None:
        """Why writers are refused until a new_epoch (the marker's text), or None."""
        return self._read_marker(AWAITING_NEW_EPOCH, "was formatted or restored")

    def set_awaiting_new_epoch(self, reason: str | None) -> None:
        """Durably create the marker with its reason, or remove it when reason is None."""
        self._write_marker(AWAITING_NEW_EPOCH, reason)

    def amnesiac(self) -> str | None:
        """Why this journal may not answer prepare_recovery (the marker's text), or None."""
        return self._read_marker(AMNESIAC, "lost its storage and was restored from peers")

    def set_amnesiac(self, reason: str | None) -> None:
        """Durably create the amnesiac marker with its reason, or remove it when None."""
        self._write_marker(AMNESIAC, reason)

    def _read_marker(self, name: str, default_reason: str) -> str | None:
        try:
            text = (self.current / name).read_bytes().decode("utf-8", errors="replace").strip()
        except FileNotFoundError:
            return None
        return text or default_reason

    def _write_marker(self, name: str, reason: str | None) -> None:
        path = self.current / name
        if reason is not None:
            self.current.mkdir(parents=True, exist_ok=True)
            atomic_write(path, f"{reason}\n".encode())
        elif path.exists():
            path.unlink()
            fsync_dir(self.current)

    # -- persistent numbers ---------------------------------------------------------------
    def read_long(self, name: str, default: int) -> int:
        """Read a number file (ASCII decimal), or default when absent."""
        path = self.current / name
        try:
            text = path.read_text().strip()
        except FileNotFoundError:
            return default
        try:
            return int(text)
        except ValueError:
            raise StorageError(f"{path} holds {text!r}, not a number") from None

    def write_long(self, name: str, value: int) -> None:
        """Durably replace a number file."""
        atomic_write(self.current / name, f"{value}\n".encode())

    def read_committed_txid(self) -> int | None:
        """The committed txid (8 bytes big-endian), or None when never written."""
        path = self.current / COMMITTED_TXID
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        if not data:
            return None
        if len(data) != 8:
            raise StorageError(f"{path} has invalid length {len(data)} (expected 8 bytes)")
        (value,) = struct.unpack(">q", data)
        if value < 0:
            raise StorageError(f"{path} holds {value}, not a txid (txids are never negative)")
        return int(value)

    def open_committed_txid(self) -> int:
        """Open committed-txid for in-place updates; return its descriptor."""
        return os.open(self.current / COMMITTED_TXID, os.O_RDWR | os.O_CREAT, 0o644)

    # -- paxos ----------------------------------------------------------------------------
    def forget_cached(self) -> None:
        """Drop what was read of the paxos records (the files may have changed under us)."""
        self._paxos.clear()

    def paxos_file(self, segment_txid: int) -> Path:
        """Where the accepted recovery of a segment is persisted."""
        return self.paxos_dir / str(segment_txid)

    def read_paxos(self, segment_txid: int) -> pb.PersistedRecoveryPaxosData | None:
        """The persisted recovery decision for a segment, if any."""
        if segment_txid in self._paxos:
            return self._paxos[segment_txid]
        found = self._load_paxos(segment_txid)
        self._paxos[segment_txid] = found
        return found

    def _load_paxos(self, segment_txid: int) -> pb.PersistedRecoveryPaxosData | None:
        path = self.paxos_file(segment_txid)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        size, pos = _read_varint(data, path)
        if pos + size > len(data):
            raise StorageError(
                f"{path} is truncated: its record needs {size} bytes, the file holds "
                f"{len(data) - pos}"
            )
        msg = pb.PersistedRecoveryPaxosData()
        try:
            msg.ParseFromString(data[pos : pos + size])
        except Exception as e:
            raise StorageError(f"{path} is not a valid paxos record: {e}") from None
        return msg

    def write_paxos(self, segment_txid: int, data: pb.PersistedRecoveryPaxosData) -> None:
        """Persist a recovery decision: delimited protobuf, then a readable dump."""
        body = data.SerializeToString()
        seg = data.segment_state
        text = (
            f"\nsegment {seg.start_txid}-{seg.end_txid} "
            f"{'in progress' if seg.is_in_progress else 'finalized'}, "
            f"accepted in epoch {data.accepted_in_epoch}\n"
        )
        self._paxos.pop(segment_txid, None)
        atomic_write(self.paxos_file(segment_txid), encode_varint(len(body)) + body + text.encode())
        kept = pb.PersistedRecoveryPaxosData()
        kept.CopyFrom(data)
        self._paxos[segment_txid] = kept

    def purge_paxos(self, segment_txid: int) -> None:
        """Forget the recovery decision for a segment."""
        self._paxos[segment_txid] = None
        path = self.paxos_file(segment_txid)
        try:
            path.unlink()
        except FileNotFoundError:
            return
        fsync_dir(self.paxos_dir)

    def paxos_txids(self) -> list[int]:
        """Segment txids with a persisted recovery decision."""
        if not self.paxos_dir.is_dir():
            return []
        return sorted(int(p.name) for p in self.paxos_dir.iterdir() if p.name.isdigit())

    # -- segments -------------------------------------------------------------------------
    def segments(self) -> list[SegmentFile]:
        """The segment files in current/, ordered by start txid."""
        return list_segments(self.current)


def _read_varint(data: bytes, path: Path) -> tuple[int, int]:
    try:
        return decode_varint(data, 0)
    except MalformedRpcError:
        raise StorageError(f"{path} is not a valid paxos record: bad length prefix") from None
