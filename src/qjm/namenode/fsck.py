"""fsck: HDFS's report of a subtree's files, blocks and replicas (NamenodeFsck's text).

Pure: the walk hands each file's facts in and gets the lines to print back; counts gather
in FsckResult, whose summary is HDFS's. Tools read the last line ("The filesystem under
path 'P' is HEALTHY" or "... is CORRUPT"), as HDFS's DFSck does (design §B.17).
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field

import numpy as np

HEALTHY = "is HEALTHY"
CORRUPT = "is CORRUPT"
NONEXISTENT = "does not exist"
FAILED = "FAILED"


class ReplicaState(enum.Enum):
    """How fsck -replicaDetails names a replica (NamenodeFsck's)."""

    LIVE = "LIVE"
    CORRUPT = "CORRUPT"
    DECOMMISSIONING = "DECOMMISSIONING"
    DECOMMISSIONED = "DECOMMISSIONED"
    STALE_NODE = "STALE_NODE"
    STALE_BLOCK_CONTENT = "STALE_BLOCK_CONTENT"


@dataclass(frozen=True, slots=True)
class FsckOptions:
    """What to print besides the summary (the fsck command's flags)."""

    files: bool = False
    blocks: bool = False
    locations: bool = False
    racks: bool = False
    replica_details: bool = False
    open_for_write: bool = False


@dataclass(frozen=True, slots=True)
class ReplicaView:
    """One stored replica of a block: where it is and its state."""

    address: str  # ip:xferPort
    storage_id: str
    state: ReplicaState
    rack: str = "/default-rack"


@dataclass(frozen=True, slots=True)
class BlockView:
    """One block of a file as fsck judges it."""

    name: str  # pool:blk_<id>_<genstamp>, an ExtendedBlock as HDFS prints it
    num_bytes: int
    replicas: tuple[ReplicaView, ...]
    queued: bool = False  # in the NameNode's queue of blocks to copy

    @property
    def live(self) -> int:
        """Replicas neither corrupt nor on a decommissioning or decommissioned node."""
        return sum(1 for r in self.replicas if r.state in _LIVE_STATES)

    def count(self, state: ReplicaState) -> int:
        """Replicas in state."""
        return sum(1 for r in self.replicas if r.state is state)

    @property
    def corrupt(self) -> bool:
        """Every replica is corrupt (a LocatedBlock's corrupt flag)."""
        return bool(self.replicas) and self.count(ReplicaState.CORRUPT) == len(self.replicas)


_LIVE_STATES = (ReplicaState.LIVE, ReplicaState.STALE_NODE, ReplicaState.STALE_BLOCK_CONTENT)


@dataclass(slots=True)
class FsckResult:
    """The counts fsck gathers over a walk (NamenodeFsck's Result)."""

    default_replication: int
    min_replication: int
    missing_ids: list[str] = field(default_factory=list)
    missing_size: int = 0
    corrupt_files: int = 0
    corrupt_blocks: int = 0
    corrupt_size: int = 0
    excess_replicas: int = 0
    missing_replicas: int = 0
    decommissioned_replicas: int = 0
    decommissioning_replicas: int = 0
    under_min_replicated: int = 0
    over_replicated: int = 0
    under_replicated: int = 0
    mis_replicated: int = 0
    min_replicated: int = 0
    total_blocks: int = 0
    expected_replicas: int = 0
    open_file_blocks: int = 0
    total_files: int = 0
    open_files: int = 0
    total_dirs: int = 0
    total_symlinks: int = 0
    total_size: int = 0
    open_files_size: int = 0
    total_replicas: int = 0
    queued_for_replication: int = 0

    def healthy(self) -> bool:
        """No missing and no corrupt block."""
        return not self.missing_ids and self.corrupt_blocks == 0

    def summary(self, datanodes: int, racks: int = 1) -> str:
        """The report after the per-file lines: status, counts and percentages."""
        n = self.total_blocks

        def pct(x: int, of: int) -> str:
            return f" ({java_float(x * 100 / of)} %)" if of > 0 else ""

        out = [
            f"Status: {'HEALTHY' if self.healthy() else 'CORRUPT'}",
            f" Number of data-nodes:\t{datanodes}",
            f" Number of racks:\t\t{racks}",
            f" Total dirs:\t\t\t{self.total_dirs}",
            f" Total symlinks:\t\t{self.total_symlinks}",
            "",
            "Replicated Blocks:",
        ]
        size = f" Total size:\t{self.total_size} B"
        if self.open_files_size:
            size += f" (Total open files size: {self.open_files_size} B)"
        out.append(size)
        files = f" Total files:\t{self.total_files}"
        if self.open_files:
            files += f" (Files currently being written: {self.open_files})"
        out.append(files)
        blocks = f" Total blocks (validated):\t{n}"
        if n:
            blocks += f" (avg. block size {self.total_size // n} B)"
        if self.open_file_blocks:
            blocks += f" (Total open file blocks (not validated): {self.open_file_blocks})"
        out.append(blocks)
        if self.corrupt_files or self.under_min_replicated:
            out.append("  ********************************")
            if self.under_min_replicated:
                under = self.under_min_replicated
                out.append(f"  UNDER MIN REPL'D BLOCKS:\t{under}{pct(under, n)}")
                out.append(f"  dfs.namenode.replication.min:\t{self.min_replication}")
            if self.corrupt_files:
                out.append(f"  CORRUPT FILES:\t{self.corrupt_files}")
                if self.missing_size:
                    out.append(f"  MISSING BLOCKS:\t{len(self.missing_ids)}")
                    out.append(f"  MISSING SIZE:\t\t{self.missing_size} B")
                if self.corrupt_blocks:
                    out.append(f"  CORRUPT BLOCKS: \t{self.corrupt_blocks}")
                    out.append(f"  CORRUPT SIZE:\t\t{self.corrupt_size} B")
            out.append("  ********************************")
        average = java_float(self.total_replicas / n) if n else "0.0"
        out += [
            f" Minimally replicated blocks:\t{self.min_replicated}{pct(self.min_replicated, n)}",
            f" Over-replicated blocks:\t{self.over_replicated}{pct(self.over_replicated, n)}",
            f" Under-replicated blocks:\t{self.under_replicated}{pct(self.under_replicated, n)}",
            f" Mis-replicated blocks:\t\t{self.mis_replicated}{pct(self.mis_replicated, n)}",
            f" Default replication factor:\t{self.default_replication}",
            f" Average block replication:\t{average}",
            f" Missing blocks:\t\t{len(self.missing_ids)}",
            f" Corrupt blocks:\t\t{self.corrupt_blocks}",
            f" Missing replicas:\t\t{self.missing_replicas}"
            + (pct(self.missing_replicas, self.expected_replicas) if self.total_replicas else ""),
        ]
        if self.decommissioned_replicas:
            out.append(f" DecommissionedReplicas:\t{self.decommissioned_replicas}")
        if self.decommissioning_replicas:
            out.append(f" DecommissioningReplicas:\t{self.decommissioning_replicas}")
        out += [
            f" Blocks queued for replication:\t{self.queued_for_replication}",
            "",
            "Erasure Coded Block Groups:",
            " Total size:\t0 B",
            " Total files:\t0",
            " Total block groups (validated):\t0",
            " Minimally erasure-coded block groups:\t0",
            " Over-erasure-coded block groups:\t0",
            " Under-erasure-coded block groups:\t0",
            " Unsatisfactory placement block groups:\t0",
            " Average block group size:\t0.0",
            " Missing block groups:\t\t0",
            " Corrupt block groups:\t\t0",
            " Missing internal blocks:\t0",
            " Blocks queued for replication:\t0",
        ]
        return "\n".join(out) + "\n"


def java_float(x: float) -> str:
    """x as Java prints a float (the shortest digits that read back: 16.666666, 100.0)."""
    return str(np.format_float_positional(np.float32(x), unique=True, trim="0"))


def check_dir(path: str, opts: FsckOptions, res: FsckResult) -> str:
    """A directory met on the walk: counted, named with -files."""
    res.total_dirs += 1
    return f"{path} <dir>\n" if opts.files else ""


def check_symlink(path: str, opts: FsckOptions, res: FsckResult) -> str:
    """A symlink met on the walk: counted, named with -files."""
    res.total_symlinks += 1
    return f"{path} <symlink>\n" if opts.files else ""


def check_file(
    path: str,
    length: int,
    replication: int,
    blocks: list[BlockView],
    under_construction: bool,
    opts: FsckOptions,
    res: FsckResult,
) -> str:
    """A file met on the walk: its blocks judged into res; the text fsck prints for it."""
    if under_construction and not opts.open_for_write:
        res.open_files_size += length
        res.open_file_blocks += len(blocks)
        res.open_files += 1
        return ""
    res.total_files += 1
    res.total_size += length
    res.total_blocks += len(blocks)
    out: list[str] = []
    if under_construction:
        out.append(
            f"{path} {length} bytes, replicated: replication={replication}, "
            f"{len(blocks)} block(s), OPENFORWRITE: "
        )
    elif opts.files:
        out.append(
            f"{path} {length} bytes, replicated: replication={replication}, "
            f"{len(blocks)} block(s): "
        )
    missing = corrupt = under = 0
    missing_size = corrupt_size = 0
    report: list[str] = []
    for i, b in enumerate(blocks):
        live = b.live
        decommissioned = b.count(ReplicaState.DECOMMISSIONED)
        decommissioning = b.count(ReplicaState.DECOMMISSIONING)
        res.decommissioned_replicas += decommissioned
        res.decommissioning_replicas += decommissioning
        total = live + decommissioned + decommissioning
        res.total_replicas += total
        res.expected_replicas += replication
        res.queued_for_replication += b.queued
        if total < res.min_replication:
            res.under_min_replicated += 1
        if live > replication:
            res.excess_replicas += live - replication
            res.over_replicated += 1
        if b.corrupt:
            res.corrupt_blocks += 1
            res.corrupt_size += b.num_bytes
            corrupt += 1
            corrupt_size += b.num_bytes
            pool, _, blk = b.name.partition(":")
            out.append(f"\n{path}: CORRUPT blockpool {pool} block {blk}\n")
        if total >= res.min_replication:
            res.min_replicated += 1
        if 0 < total < replication:
            res.missing_replicas += replication - total
            res.under_replicated += 1
            under += 1
            if not opts.files:
                out.append(f"\n{path}: ")
            out.append(
                f" Under replicated {b.name}. Target Replicas is {replication} but found "
                f"{live} live replica(s), {decommissioned} decommissioned replica(s), "
                f"{decommissioning} decommissioning replica(s).\n"
            )
        line = f"{i}. {b.name} len={b.num_bytes}"
        if total == 0 and not b.corrupt:
            line += " MISSING!"
            res.missing_ids.append(b.name)
            res.missing_size += b.num_bytes
            missing += 1
            missing_size += b.num_bytes
        else:
            line += f" Live_repl={live}"
            if opts.locations or opts.racks or opts.replica_details:
                line += "  [" + ", ".join(_replica_text(r, opts) for r in b.replicas) + "]"
        report.append(line + "\n")
    if missing or corrupt:
        if not opts.files:
            if missing:
                out.append(f"\n{path}: MISSING {missing} blocks of total size {missing_size} B.")
            if corrupt:
                out.append(f"\n{path}: CORRUPT {corrupt} blocks of total size {corrupt_size} B.")
        res.corrupt_files += 1
    if opts.files:
        if missing or corrupt:
            if missing:
                out.append(f" MISSING {missing} blocks of total size {missing_size} B\n")
            if corrupt:
                out.append(f" CORRUPT {corrupt} blocks of total size {corrupt_size} B\n")
        elif under == 0:
            out.append(" OK\n")
        if opts.blocks:
            out.append("".join(report) + "\n")
    return "".join(out)


def _replica_text(r: ReplicaView, opts: FsckOptions) -> str:
    text = (
        f"{r.rack}/{r.address}"
        if opts.racks
        else f"DatanodeInfoWithStorage[{r.address},{r.storage_id},DISK]"
    )
    return f"{text}({r.state.value})" if opts.replica_details else text


def java_date(epoch_s: float) -> str:
    """A time as Java's Date.toString prints it (Mon Jun 15 23:43:20 UTC 2020)."""
    return time.strftime("%a %b %d %H:%M:%S %Z %Y", time.localtime(epoch_s))


def started_line(user: str, remote: str, path: str, epoch_s: float) -> str:
    """fsck's first line: who asked, from where, for what path, when."""
    return (
        f"FSCK started by {user} (auth:SIMPLE) from /{remote} for path {path} at "
        f"{java_date(epoch_s)}\n"
    )


def ended_lines(path: str, res: FsckResult, epoch_s: float, took_ms: int) -> str:
    """fsck's closing lines: the end time and the verdict tools read."""
    verdict = HEALTHY if res.healthy() else CORRUPT
    return (
        f"FSCK ended at {java_date(epoch_s)} in {took_ms} milliseconds\n\n\n"
        f"The filesystem under path '{path}' {verdict}"
    )


def failed_lines(path: str, message: str, epoch_s: float, took_ms: int) -> str:
    """fsck's closing lines when it could not finish (a standby, a lapsed lease)."""
    return (
        f"FSCK ended at {java_date(epoch_s)} in {took_ms} milliseconds\n{message}\n\n\n"
        f"Fsck on path '{path}' {FAILED}"
    )


def nonexistent_line(path: str) -> str:
    """fsck's verdict for a path that is not there."""
    return f"\n\nPath '{path}' {NONEXISTENT}"


def corrupt_files_text(path: str, rows: list[tuple[str, str]], cookie: int, start: int) -> str:
    """fsck -list-corruptfileblocks: the cookie, block<TAB>path rows, then the count line."""
    filler = str(len(rows)) if rows else ("no" if start == 0 else "no more")
    body = "".join(f"{blk}\t{p}\n" for blk, p in rows)
    return (
        f"Cookie:\t{cookie}\n{body}\n\n"
        f"The filesystem under path '{path}' has {filler} CORRUPT files\n\n"
    )
