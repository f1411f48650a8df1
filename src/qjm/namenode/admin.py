"""What `qjm namenode format | initialize-shared-edits | recover` do, as library functions.

format_namenode        a new namespace identity: the shared journal formatted for it on every
                       JournalNode, then the name dir (VERSION, seen_txid 0, empty fsimage_0)
initialize_shared_edits  format the journal from the name dir's VERSION and copy the local
                       edits after the newest image into it (HDFS -initializeSharedEdits);
                       with none, one empty segment after the image
recover                load the newest readable image, then the edits after it: the shared
                       journal's for every txid it holds, the local ones beyond its end only
                       when asked (design §N.5); report every op dropped, save a new image
                       (HDFS -recover)

Each takes the name dir's lock, so none runs beside a NameNode using the same dir.
"""

from __future__ import annotations

import asyncio
import getpass
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from qjm.client.admin import new_namespace_info
from qjm.client.journalnode_client import JournalNodeClient
from qjm.client.quorum_journal_manager import QuorumJournalManager
from qjm.client.reader import QuorumJournalReader
from qjm.client.uri import parse_qjournal_uri
from qjm.config import ClusterConfig
from qjm.editlog.framing import HEADER_LEN, iter_ops, read_header
from qjm.editlog.ops import EndLogSegmentOp, Op, StartLogSegmentOp, decode_op
from qjm.editlog.segments import SegmentFile, scan_file
from qjm.errors import ConfigError, QjmError
from qjm.namenode.errors import NamenodeError
from qjm.namenode.fs_image import load_newest
from qjm.namenode.image import FsImage, ImageContents, NameSystemInfo
from qjm.namenode.namespace import Namespace
from qjm.namenode.recovery_plan import DroppedOp, op_path, plan_recovery
from qjm.namenode.storage import NamespaceInfo, NNStorage, StorageFormatError

log = logging.getLogger("qjm.namenode.admin")

__all__ = [
    "RecoveryReport",
    "SharedEditsReport",
    "format_namenode",
    "initialize_shared_edits",
    "namespace_factory",
    "recover",
]


class RecoverableNamespace(Protocol):
    """What recover needs of a namespace: apply edits, then checkpoint."""

    def apply(self, op: Op) -> None:
        """Apply one logged op."""
        ...

    def to_image(self, txid: int, ns_info: NameSystemInfo) -> ImageContents:
        """The namespace as image contents at txid."""
        ...


def _journal_uri(cfg: ClusterConfig) -> str:
    if not cfg.journalnodes:
        raise ConfigError(
            f"{cfg.source}: no [journalnodes.*] configured: a NameNode needs the shared "
            "journal (its qjournal:// URI is built from them)"
        )
    return cfg.shared_edits_uri()


def _qjm(
    cfg: ClusterConfig, ns: NamespaceInfo | None, client_factory: Callable[[str], Any]
) -> QuorumJournalManager:
    return QuorumJournalManager(
        _journal_uri(cfg),
        ns.to_proto() if ns is not None else None,
        cfg.qjournal,
        client_factory=client_factory,
    )


# -- format -----------------------------------------------------------------------------------
async def format_namenode(
    cfg: ClusterConfig,
    nn_name: str,
    force: bool = False,
    *,
    ns_info: NamespaceInfo | None = None,
    client_factory: Callable[[str], Any] = JournalNodeClient,
) -> NamespaceInfo:
    """Format the shared journal and nn_name's name dir for a new namespace; returns it."""
    nn = cfg.namenode_named(nn_name)
    ns = ns_info or NamespaceInfo.from_proto(new_namespace_info())
    storage = await asyncio.to_thread(NNStorage, Path(nn.name_dir))
    try:
        if not force and await asyncio.to_thread(storage.has_data):
            raise StorageFormatError(
                f"name dir {nn.name_dir} of {nn_name} is not empty; pass --force to wipe it "
                "(and the shared journal)"
            )
        qjm = _qjm(cfg, None, client_factory)
        try:
            await qjm.format(ns.to_proto(), force)
        finally:
            await qjm.close()
        fresh = Namespace(
            superuser=getpass.getuser(),
            supergroup=cfg.namenode.superuser_group,
            permissions_enabled=cfg.namenode.permissions_enabled,
        )
        image = fresh.to_image(0, NameSystemInfo(namespace_id=ns.namespace_id, txid=0))
        await asyncio.to_thread(storage.format, ns, True, image)
    finally:
        storage.unlock()
    log.info("formatted %s and the shared journal for %s", nn_name, ns.describe())
    return ns


# -- initialize-shared-edits ------------------------------------------------------------------
@dataclass
class SharedEditsReport:
    """What initialize_shared_edits did."""

    ns_info: NamespaceInfo
    image_txid: int
    segments: list[tuple[int, int]] = field(default_factory=list)  # copied, as finalized

    @property
    def last_txid(self) -> int:
        """The last txid now in the journal (the image's when nothing was copied)."""
        return self.segments[-1][1] if self.segments else self.image_txid


def _valid_records(seg: SegmentFile) -> tuple[bytes, int, int] | None:
    """A segment's whole valid ops as (records, first txid, last txid); None if it has none."""
    found = scan_file(seg.path)
    if found.first_txid is None or found.last_txid is None or found.num_ops == 0:
        return None
    data = seg.path.read_bytes()
    read_header(data)
    return data[HEADER_LEN : found.valid_length], found.first_txid, found.last_txid


async def initialize_shared_edits(
    cfg: ClusterConfig,
    nn_name: str,
    force: bool = False,
    *,
    client_factory: Callable[[str], Any] = JournalNodeClient,
) -> SharedEditsReport:
    """Format the shared journal from the name dir's VERSION; copy its edits after the image."""
    nn = cfg.namenode_named(nn_name)
    storage = await asyncio.to_thread(NNStorage, Path(nn.name_dir))
    try:
        ns = await asyncio.to_thread(storage.read_ns_info)
        newest = await asyncio.to_thread(storage.newest_image)
        if newest is None:
            raise StorageFormatError(f"name dir {nn.name_dir} holds no fsimage; format it first")
        image_txid = newest[0]
        segments = [
            s
            for s in await asyncio.to_thread(storage.edit_segments)
            if s.end is None or s.end > image_txid
        ]
        copies: list[tuple[bytes, int, int]] = []
        expected = image_txid + 1
        for seg in segments:
            got = await asyncio.to_thread(_valid_records, seg)
            if got is None:
                continue
            _, first, last = got
            if last < expected:
                continue  # superseded by a segment already taken
            if first > expected:
                raise NamenodeError(
                    f"the local edits in {storage.current} skip txids: expected txid "
                    f"{expected}, the next segment {seg.path.name} starts at {first}"
                )
            if copies and first < expected:
                raise NamenodeError(
                    f"local edits segment {seg.path.name} overlaps the one before it "
                    f"(starts at {first}, expected {expected})"
                )
            copies.append(got)
            expected = last + 1
        qjm = _qjm(cfg, ns, client_factory)
        report = SharedEditsReport(ns, image_txid)
        try:
            await qjm.format(ns.to_proto(), force)
            await qjm.recover_unfinalized_segments()
            for records, first, last in copies:
                stream = await qjm.start_log_segment(first)
                stream.write_records(records, first, last - first + 1)
                await stream.close()
                await qjm.finalize_log_segment(first, last)
                report.segments.append((first, last))
                log.info("copied local edits %d-%d to the shared journal", first, last)
            if not copies and image_txid > 0:
                # No edits after the image: a segment of START and END after it, so the
                # journal ends at or after the image and NameNodes follow it (design §N.5).
                first = image_txid + 1
                stream = await qjm.start_log_segment(first)
                stream.write_op(StartLogSegmentOp.OPCODE)
                stream.write_op(EndLogSegmentOp.OPCODE)
                await stream.close()
                await qjm.finalize_log_segment(first, first + 1)
                report.segments.append((first, first + 1))
                log.info("started the shared journal after the image at txid %d", image_txid)
        finally:
            await qjm.close()
        return report
    finally:
        storage.unlock()


# -- recover ----------------------------------------------------------------------------------
@dataclass
class RecoveryReport:
    """What recover loaded, applied (from which source), dropped, and the image it saved."""

    image_txid: int
    last_txid: int
    from_shared: int = 0
    from_local: int = 0
    dropped: list[str] = field(default_factory=list)  # what was unreadable or cut short
    dropped_ops: list[DroppedOp] = field(default_factory=list)  # every op not applied
    image_path: Path | None = None
    journal_end: int | None = None  # the shared journal's last readable txid, if read
    nn_name: str = ""

    @property
    def applied(self) -> int:
        """How many edits were applied after the image."""
        return self.last_txid - self.image_txid

    @property
    def source(self) -> str:
        """ "shared", "local", "shared and local", or "image only"."""
        if self.applied <= 0:
            return "image only"
        if self.from_local and self.from_shared:
            return "shared and local"
        return "local" if self.from_local else "shared"

    def lines(self) -> list[str]:
        """The report as lines for an operator."""
        out = [f"loaded image at txid {self.image_txid}"]
        if self.applied > 0:
            parts = []
            if self.from_shared:
                parts.append(f"{self.from_shared} from the shared journal")
            if self.from_local:
                parts.append(f"{self.from_local} from the local edits beyond its end")
            out.append(
                f"applied {self.applied} edits up to txid {self.last_txid} ({', '.join(parts)})"
            )
        else:
            out.append("no edits after the image were applied")
        out += [f"dropped: {d}" for d in self.dropped]
        out += [f"dropped {d.line()}" for d in self.dropped_ops]
        if self.image_path is not None:
            out.append(f"saved {self.image_path}")
        if self.journal_end is not None and self.last_txid > self.journal_end:
            out.append(
                f"the saved image is beyond the shared journal's end at txid "
                f"{self.journal_end}: no NameNode follows that journal until it is "
                "re-initialized from this name dir (`qjm namenode initialize-shared-edits "
                f"--id {self.nn_name} --force`)"
            )
        return out


def _local_run(storage: NNStorage, after: int) -> tuple[list[tuple[int, Op]], list[str]]:
    """The longest valid run of local edits after txid `after`, and what ended it."""
    run: list[tuple[int, Op]] = []
    problems: list[str] = []
    expected = after + 1
    for seg in storage.edit_segments():
        if seg.end is not None and seg.end <= after:
            continue
        try:
            data = seg.path.read_bytes()
            layout = read_header(data)
            found = scan_file(seg.path)
            stop = found.valid_length
            for raw in iter_ops(data[:stop]):
                if raw.txid < expected:
                    continue
                if raw.txid > expected:
                    problems.append(
                        f"local edits skip from txid {expected} to {raw.txid} in {seg.path.name}"
                    )
                    return run, problems
                run.append((raw.txid, decode_op(raw, layout)))
                expected += 1
            if found.end == "corrupt" or (seg.end is None and found.problem):
                problems.append(f"{seg.path.name}: {found.problem or found.end}")
                return run, problems
            if seg.end is not None and found.last_txid != seg.end:
                problems.append(
                    f"{seg.path.name} is named to end at {seg.end} but its valid ops end at "
                    f"{found.last_txid} ({found.problem or found.end})"
                )
                return run, problems
        except (QjmError, OSError) as e:
            problems.append(f"{seg.path.name}: {e}")
            return run, problems
    return run, problems


async def _shared_run(
    cfg: ClusterConfig, after: int, client_factory: Callable[[str], Any]
) -> tuple[list[tuple[int, Op]], list[str]]:
    """The longest valid run of committed shared edits after txid `after`."""
    run: list[tuple[int, Op]] = []
    reader = QuorumJournalReader(
        parse_qjournal_uri(_journal_uri(cfg)), cfg.qjournal, client_factory=client_factory
    )
    try:
        async for raw in reader.read(after + 1, in_progress_ok=True):
            run.append((raw.txid, decode_op(raw)))
    except (QjmError, OSError) as e:
        end = run[-1][0] if run else after
        return run, [f"shared journal unreadable after txid {end}: {e}"]
    finally:
        await reader.close()
    return run, []


def namespace_factory(cfg: ClusterConfig) -> Callable[[FsImage], Namespace]:
    """Load an image as the NameNode does: the OS user running it is the superuser."""
    settings = cfg.namenode

    def load(image: FsImage) -> Namespace:
        return Namespace.from_image(
            image,
            superuser=getpass.getuser(),
            supergroup=settings.superuser_group,
            permissions_enabled=settings.permissions_enabled,
        )

    return load


async def recover(
    cfg: ClusterConfig,
    nn_name: str,
    ns_factory: Callable[[FsImage], RecoverableNamespace] | None = None,
    *,
    use_shared: bool = True,
    local_beyond_journal: bool = False,
    client_factory: Callable[[str], Any] = JournalNodeClient,
) -> RecoveryReport:
    """Load the newest readable image and the edits after it (the shared journal's where it
    holds them; local ones beyond its end only if local_beyond_journal); save a new image."""
    nn = cfg.namenode_named(nn_name)
    storage = await asyncio.to_thread(NNStorage, Path(nn.name_dir))
    try:
        factory = ns_factory or namespace_factory(cfg)
        ns, image_txid = await asyncio.to_thread(load_newest, storage, factory)
        dropped: list[str] = []
        newest = await asyncio.to_thread(storage.newest_image)
        if newest is not None and newest[0] != image_txid:
            dropped.append(f"unreadable images above txid {image_txid} (newest {newest[0]})")
        local, local_problems = await asyncio.to_thread(_local_run, storage, image_txid)
        dropped += [f"(local edits) {p}" for p in local_problems]
        shared: list[tuple[int, Op]] = []
        journal_read = False
        if use_shared and cfg.journalnodes:
            shared, shared_problems = await _shared_run(cfg, image_txid, client_factory)
            journal_read = not shared_problems
            dropped += [f"(shared edits) {p}" for p in shared_problems]
        plan = plan_recovery(
            image_txid,
            shared,
            local,
            journal_read=journal_read,
            local_beyond_journal=local_beyond_journal,
        )
        last = image_txid
        from_shared = 0
        for i, (txid, op) in enumerate(plan.run):
            try:
                ns.apply(op)
            except Exception as e:
                dropped.append(
                    f"{op.opcode_name} at txid {txid} cannot be applied ({e}); it and the "
                    f"{len(plan.run) - i - 1} edits after it are dropped"
                )
                plan.dropped += [
                    DroppedOp(
                        t,
                        o.opcode_name,
                        op_path(o),
                        "shared" if i + k < plan.from_shared else "local",
                        f"txid {txid} before it cannot be applied"
                        if k
                        else f"cannot be applied ({e})",
                    )
                    for k, (t, o) in enumerate(plan.run[i:])
                ]
                break
            last = txid
            from_shared += 1 if i < plan.from_shared else 0
        report = RecoveryReport(
            image_txid,
            last,
            from_shared=from_shared,
            from_local=last - image_txid - from_shared,
            dropped=dropped,
            dropped_ops=sorted(plan.dropped, key=lambda d: d.txid),
            journal_end=image_txid + plan.from_shared if journal_read else None,
            nn_name=nn_name,
        )
        if last > image_txid:
            report.image_path = await asyncio.to_thread(storage.save_image, ns, last)
        seen = await asyncio.to_thread(lambda: storage.seen_txid)
        if last > seen:
            await asyncio.to_thread(storage.write_seen_txid, last)
        for line in report.lines():
            log.info("recover %s: %s", nn_name, line)
        return report
    finally:
        storage.unlock()
