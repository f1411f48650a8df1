"""dfsadmin's administration calls on the NameNode: rollEdits, saveNamespace, metaSave
(design §N.11). The checks and the text are here; the NameNode's edit log and name dir do
the work."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qjm.errors import QjmError
from qjm.ipc.server import CallContext
from qjm.logs import LOG_DIR_ENV, log_dir
from qjm.namenode.errors import AccessControlError, NamenodeError
from qjm.namenode.types import HAState

if TYPE_CHECKING:
    from qjm.namenode.server import NameNode

log = logging.getLogger("qjm.namenode.admin_calls")
NOT_IN_SAFE_MODE = "Safe mode should be turned ON in order to create namespace image."
_FILE_NAME = re.compile(r"[A-Za-z0-9._-]{1,255}")


class AdminCallError(NamenodeError):
    """An administration call refused with HDFS's java.io.IOException and its message."""

    java_class = "java.io.IOException"


def check_superuser(nn: NameNode, ctx: CallContext) -> None:
    """Raise AccessControlError unless the caller is the superuser (HDFS's message)."""
    caller = nn.caller_of(ctx)
    if not caller.superuser:
        raise AccessControlError(
            f"Access denied for user {caller.user}. Superuser privilege is required"
        )


async def roll_edits(nn: NameNode, ctx: CallContext) -> int:
    """rollEdits (superuser, active): finalize the open segment; the next one's first txid."""
    nn.check_write(ctx)
    check_superuser(nn, ctx)
    el = nn.edit_log
    if el is None:
        raise AdminCallError(f"NameNode {nn.name} has no edit log open")
    txid = await el.roll()
    log.info("NameNode %s: edit log rolled by %s; segment %d started", nn.name, ctx.user, txid)
    return txid


async def save_namespace(nn: NameNode, ctx: CallContext) -> int:
    """saveNamespace (superuser, in safe mode, any HA state as HDFS's): on the active, as
    FSImage.saveNamespace, end the open segment, save an image of the namespace at its last
    txid into the name dir and go on in a new segment; on a standby, a checkpoint of what it
    applied (kept in its own name dir). Returns the image's txid."""
    check_superuser(nn, ctx)
    if not nn.blocks.safe_mode.is_on:
        raise AdminCallError(NOT_IN_SAFE_MODE)
    if nn.ha_state == HAState.STANDBY:
        cp = nn.checkpointer
        if cp is None:
            raise AdminCallError(f"NameNode {nn.name} has no checkpointer")
        try:
            txid = await cp.save()
        except QjmError as e:
            raise AdminCallError(f"saveNamespace on NameNode {nn.name}: {e}") from None
        log.info("NameNode %s: saveNamespace by %s: image at txid %d", nn.name, ctx.user, txid)
        return txid
    nn.check_write(ctx)
    el, storage = nn.edit_log, nn.storage
    if el is None or storage is None:
        raise AdminCallError(f"NameNode {nn.name} has no edit log or name dir open")
    new_start = await el.roll()
    nn.check_write(ctx)
    # No await between the txid and the copy: the image is of exactly that txid. In safe mode
    # no namespace change is taken; the new segment's START op changes nothing, so the image
    # is of the finalized segment's end, as HDFS's.
    txid = int(el.last_txid)
    if txid == new_start:
        txid = new_start - 1
    snapshot = nn.ns.copy()
    try:
        await el.sync(int(el.last_txid))  # never an image of edits the quorum may not hold
    except Exception as e:  # the edit log's own failure handling has run: name it, save nothing
        raise AdminCallError(f"saveNamespace: the edit log did not sync: {e}") from None
    loop = asyncio.get_running_loop()
    started = time.monotonic()
    if not any(t == txid for t, _ in storage.images()):
        await loop.run_in_executor(None, storage.save_image, snapshot, txid)
    nn.image_txid = max(nn.image_txid, txid)
    await loop.run_in_executor(None, storage.purge, nn.settings.images_retained)
    from qjm.namenode.http import purge_shared_edits

    await purge_shared_edits(nn)
    log.info(
        "NameNode %s: saveNamespace by %s: image at txid %d in %.3fs",
        nn.name,
        ctx.user,
        txid,
        time.monotonic() - started,
    )
    return txid


def check_metasave_name(filename: str) -> str:
    """The file name of a metaSave, refused unless it is one plain name (no directory)."""
    if not _FILE_NAME.fullmatch(filename) or filename in (".", ".."):
        raise AdminCallError(
            f"metaSave: {filename!r} is not a plain file name (letters, digits, '.', '_' "
            "and '-'; no directory): the file is written in the NameNode's log directory"
        )
    return filename


def metasave_text(st: dict[str, Any], datanodes: list[dict[str, Any]], inodes: int) -> str:
    """The metasave file: HDFS's FSNamesystem.metaSave head, the block queues' sizes and one
    line per DataNode (its address, admin state, capacity, used, remaining, blocks)."""
    live = [d for d in datanodes if d["state"] == "live"]
    dead = [d for d in datanodes if d["state"] != "live"]
    blocks = int(st["blocks"])
    lines = [
        f"{inodes} files and directories, {blocks} blocks = {inodes + blocks} total",
        f"Live Datanodes: {len(live)}",
        f"Dead Datanodes: {len(dead)}",
        f"Metasave: Blocks waiting for reconstruction: {st['under_replicated_blocks']}",
        f"Metasave: Blocks currently missing: {st['missing_blocks']}",
        f"Metasave: Blocks with corrupt replicas: {st['corrupt_blocks']}",
        f"Mis-replicated blocks that have been postponed: {st['postponed_misreplicated_blocks']}",
        f"Metasave: Blocks {st['pending_deletion_blocks']} waiting deletion",
        f"Metasave: Number of datanodes: {len(datanodes)}",
    ]
    for d in sorted(datanodes, key=lambda d: str(d["transfer_address"])):
        state = {"DECOMMISSION_INPROGRESS": "DP", "DECOMMISSIONED": "DD"}.get(
            str(d.get("admin_state", "NORMAL")), "IN"
        )
        lines.append(
            f"{d['transfer_address']} {state} {d['capacity']}({d['capacity'] >> 30} GB) "
            f"{d['used']}({d['used'] >> 30} GB) {d['remaining']}({d['remaining'] >> 30} GB) "
            f"blocks {d['blocks']} {d['state']}"
        )
    return "\n".join(lines) + "\n"


async def meta_save(nn: NameNode, ctx: CallContext, filename: str) -> Path:
    """metaSave (superuser, any HA state): write the block and DataNode state to filename in
    the NameNode's log directory, as HDFS's (hadoop.log.dir); the path written."""
    check_superuser(nn, ctx)
    name = check_metasave_name(filename)
    directory = log_dir()
    if directory is None:
        raise AdminCallError(
            f"metaSave: NameNode {nn.name} has no log directory ({LOG_DIR_ENV} is not set)"
        )
    ns = nn._ns
    text = metasave_text(nn.blocks.status(), nn.blocks.datanode_rows(), len(ns) if ns else 0)
    path = directory / name

    def write() -> None:
        tmp = path.with_name(f".{name}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)

    try:
        await asyncio.get_running_loop().run_in_executor(None, write)
    except OSError as e:
        raise AdminCallError(f"metaSave: cannot write {path}: {e}") from None
    log.info("NameNode %s: metasave by %s written to %s", nn.name, ctx.user, path)
    return path
