"""The NameNode's HTTP server: /status, /metrics, /jmx, /isActive, /fsck, a status page and
/imagetransfer.

GET /jmx[?qry=PATTERN|get=BEAN::ATTR] -> HDFS's JMX JSON ({"beans": [...]}) with the
NameNodeStatus, FSNamesystem, FSNamesystemState and NameNodeInfo beans; /conf and /logs/ as
every daemon's (qjm.hdfs.servlets, design §N.11).

GET /imagetransfer?getimage=1&txid=N|latest -> image bytes, with headers X-MD5-Digest,
X-Image-Txid and the VERSION fields X-Namespace-Id, X-Cluster-Id, X-Block-Pool-Id, X-CTime.
PUT /imagetransfer?txid=N (body: the image, header X-MD5-Digest) -> 200 when kept, 409 when
not newer than the newest image held or ahead of the last synced txid, 400 when it is not an
image of this namespace at txid (or the MD5 differs), 403 when this NameNode is not active,
413 past namenode.image_upload_max_bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import hashlib
import html
import json
import logging
import os
import socket
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from aiohttp import ClientError, web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from qjm import __version__
from qjm.editlog.file_names import image_file_name
from qjm.errors import QjmError
from qjm.hdfs.servlets import add_operator_routes, rpc_activity_bean
from qjm.hdfs.site_conf import conf_properties
from qjm.namenode.fsck_servlet import serve_fsck
from qjm.namenode.image import (
    ImageError,
    decode_ns_info,
    read_md5_file,
    read_section,
    read_summary_from_file,
)
from qjm.namenode.storage import UPLOAD_SUFFIX
from qjm.namenode.types import HAState
from qjm.namenode.webhdfs import add_routes as add_webhdfs_routes
from qjm.protocol.status import describe_segments
from qjm.security.http import server_middlewares

if TYPE_CHECKING:
    from qjm.namenode.server import NameNode

log = logging.getLogger("qjm.namenode.http")
NN_KEY = web.AppKey("namenode", object)
IMAGE_TRANSFER_PATH = "/imagetransfer"
JN_STATUS_TTL_S = 2.0
JN_STATUS_TIMEOUT_S = 3.0
CHUNK = 1 << 20
EXTRA_EDITS_RETAINED = 1_000_000  # dfs.namenode.num.extra.edits.retained


def _nn(request: web.Request) -> NameNode:
    return request.app[NN_KEY]  # type: ignore[return-value]


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


class JournalStatusCache:
    """Each JournalNode's view of the shared journal, asked at most every JN_STATUS_TTL_S."""

    def __init__(self, nn: NameNode) -> None:
        self.nn = nn
        self.rows: list[dict[str, Any]] = []
        self.at = 0.0
        self._lock = asyncio.Lock()

    async def get(self) -> list[dict[str, Any]]:
        """Rows of qjm.client.admin.journal_status, fresh within the TTL."""
        async with self._lock:
            if time.monotonic() - self.at < JN_STATUS_TTL_S:
                return self.rows
            from qjm.client.admin import journal_status

            try:
                async with asyncio.timeout(JN_STATUS_TIMEOUT_S):
                    self.rows = await journal_status(self.nn.uri)
            except (TimeoutError, QjmError) as e:
                self.rows = [
                    {"address": a, "reachable": False, "error": f"status not known: {e}"}
                    for a in self.nn.uri.addresses
                ]
            self.at = time.monotonic()
            return self.rows


_JN_CACHE: web.AppKey[JournalStatusCache] = web.AppKey("jn_status", JournalStatusCache)


def _journal_row(row: dict[str, Any]) -> dict[str, Any]:
    keep = (
        "address",
        "reachable",
        "error",
        "formatted",
        "last_promised_epoch",
        "last_writer_epoch",
        "committed_txid",
        "highest_written_txid",
        "current_segment",
        "segments",
        "problems",
    )
    return {k: row[k] for k in keep if k in row}


async def status_dict(nn: NameNode, jn_rows: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The NameNode's status as JSON-ready values."""
    ns = nn._ns
    files = dirs = size = inodes = 0
    if ns is not None:
        files, dirs, size = ns.totals()
        inodes = len(ns)
    cp = nn.checkpointer
    tailer = nn.tailer
    out: dict[str, Any] = {
        "name": nn.name,
        "version": __version__,
        "ha_state": nn.ha_state.name.lower(),
        "state_since": nn.ha.since,
        "rpc_address": nn.rpc_address(),
        "http_address": nn.http_address(),
        "https_address": nn.https_address() if nn.cfg.security.http_policy != "HTTP_ONLY" else "",
        "name_dir": nn.conf.name_dir,
        "last_applied_txid": nn.last_txid(),
        "last_synced_txid": nn.synced_txid(),
        "image_txid": nn.image_txid,
        "last_checkpoint_txid": cp.last_checkpoint_txid if cp is not None else None,
        "inodes": inodes,
        "files": files,
        "dirs": dirs,
        "bytes": size,
        "epoch": nn.qjm.epoch if nn.qjm is not None else None,
        "shared_edits": str(nn.uri),
        "tailer": {
            "running": tailer is not None and tailer.running,
            "last_error": tailer.last_error if tailer is not None else None,
            "paused": tailer.paused if tailer is not None else None,
        },
        # HDFS's metrics record RetryCache.NameNodeRetryCache (CacheHit, CacheCleared,
        # CacheUpdated), with the entries held and evicted; null when the cache is off
        "retry_cache": nn.retry_cache.stats() if nn.retry_cache is not None else None,
        "journal_behind": nn.journal_behind,
        "journal_checks": nn.journal_checks,
        "active_lease": {
            "lease_s": nn.lease_s,
            "left_s": nn.lease_left_s(),
            "lapses": nn.lease_lapses,
            "last_wait_s": round(nn.last_lease_wait_s, 3),
        },
        "readmit_rolls": nn.metrics.readmit_rolls,
        # DataNodes, the block map and safe mode (design §B.14)
        "block_management": nn.blocks.status(),
        "datanodes": nn.blocks.datanode_rows(),
        # no DataNode configured: a namespace without bytes (cluster up --datanodes 0)
        "metadata_only": not nn.cfg.datanodes,
        "fatal_error": nn.fatal_error,
        "last_transition_error": nn.last_transition_error,
        "uptime_s": round(time.time() - nn.started_at, 3),
        "rpc": nn.ipc_stats(),
    }
    if jn_rows is not None:
        out["journal_nodes"] = [_journal_row(r) for r in jn_rows]
    return out


async def status_json(request: web.Request) -> web.Response:
    """GET /status: the NameNode's status as JSON (journal nodes' state included)."""
    nn = _nn(request)
    rows = await request.app[_JN_CACHE].get()
    st = await status_dict(nn, rows)
    return web.json_response(st, dumps=lambda o: json.dumps(o, indent=2))


async def metrics(request: web.Request) -> web.Response:
    """GET /metrics: Prometheus text exposition."""
    nn = _nn(request)
    body = generate_latest(nn.metrics.registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


JMX_FS_STATE = "Hadoop:service=NameNode,name=FSNamesystemState"
JMX_FS = "Hadoop:service=NameNode,name=FSNamesystem"
JMX_NN_STATUS = "Hadoop:service=NameNode,name=NameNodeStatus"
JMX_NN_INFO = "Hadoop:service=NameNode,name=NameNodeInfo"
FS_NAMESYSTEM_CLASS = "org.apache.hadoop.hdfs.server.namenode.FSNamesystem"
_DECOMMISSIONING = "DECOMMISSION_INPROGRESS"


def _pct(part: int, whole: int) -> float:
    """HDFS's DFSUtilClient.getPercentUsed: part of whole in percent (100 when whole is 0)."""
    return part * 100.0 / whole if whole > 0 else 100.0


def jmx_beans(st: dict[str, Any], ids: dict[str, Any]) -> list[dict[str, Any]]:
    """HDFS's NameNodeStatus, FSNamesystem, FSNamesystemState and NameNodeInfo beans from a
    status_dict and the name dir's ids (cluster_id, block_pool_id, security, host); only
    attributes qjm keeps a figure for (design §N.11)."""
    bm = st["block_management"]
    dns = st["datanodes"]
    live = [d for d in dns if d["state"] == "live"]
    dead = [d for d in dns if d["state"] != "live"]
    decom_live = sum(1 for d in live if d.get("admin_state") == "DECOMMISSIONED")
    decom_dead = sum(1 for d in dead if d.get("admin_state") == "DECOMMISSIONED")
    decommissioning = sum(1 for d in live if d.get("admin_state") == _DECOMMISSIONING)
    stale = sum(1 for d in live if d["stale"])
    load = sum(int(d.get("xceivers", 0)) for d in live)
    ha_state = st["ha_state"]
    fs_state = "safeMode" if bm["safe_mode"] else "Operational"
    applied = st["last_applied_txid"]
    since_checkpoint = max(0, applied - int(st["image_txid"] or 0))
    capacity, used, remaining = bm["capacity"], bm["used"], bm["remaining"]
    non_dfs = max(0, capacity - used - remaining)
    counts = {
        "CapacityTotal": capacity,
        "CapacityUsed": used,
        "CapacityRemaining": remaining,
        "TotalLoad": load,
        "BlocksTotal": bm["blocks"],
        "FilesTotal": st["inodes"],
        "UnderReplicatedBlocks": bm["under_replicated_blocks"],
        "PendingDeletionBlocks": bm["pending_deletion_blocks"],
        "NumLiveDataNodes": len(live),
        "NumDeadDataNodes": len(dead),
        "NumDecomLiveDataNodes": decom_live,
        "NumDecomDeadDataNodes": decom_dead,
        "NumDecommissioningDataNodes": decommissioning,
        "NumStaleDataNodes": stale,
    }
    live_nodes = {
        f"{d['hostname']}:{str(d['transfer_address']).rsplit(':', 1)[-1]}": {
            "infoAddr": d["http_address"],
            "xferaddr": d["transfer_address"],
            "lastContact": int(d["last_heartbeat_s_ago"]),
            "usedSpace": d["used"],
            "adminState": _admin_state_text(d),
            "nonDfsUsedSpace": max(0, d["capacity"] - d["used"] - d["remaining"]),
            "capacity": d["capacity"],
            "numBlocks": d["blocks"],
            "used": d["used"],
            "remaining": d["remaining"],
            "blockPoolUsed": d["used"],
            "blockPoolUsedPercent": _pct(d["used"], d["capacity"]),
        }
        for d in live
    }
    dead_nodes = {
        f"{d['hostname']}:{str(d['transfer_address']).rsplit(':', 1)[-1]}": {
            "lastContact": int(d["last_heartbeat_s_ago"]),
            "decommissioned": d.get("admin_state") == "DECOMMISSIONED",
            "adminState": _admin_state_text(d),
            "xferaddr": d["transfer_address"],
        }
        for d in dead
    }
    decom_nodes = {
        f"{d['hostname']}:{str(d['transfer_address']).rsplit(':', 1)[-1]}": {
            "xferaddr": d["transfer_address"],
        }
        for d in live
        if d.get("admin_state") == _DECOMMISSIONING
    }
    return [
        {
            "name": JMX_NN_STATUS,
            "modelerType": "org.apache.hadoop.hdfs.server.namenode.NameNode",
            "NNRole": "NameNode",
            "HostAndPort": st["rpc_address"],
            "SecurityEnabled": bool(ids["security_enabled"]),
            "State": ha_state,
            "LastHATransitionTime": int(st["state_since"] * 1000),
        },
        {
            "name": JMX_FS,
            "modelerType": "FSNamesystem",
            "tag.Context": "dfs",
            "tag.HAState": ha_state,
            "tag.Hostname": ids["hostname"],
            "MissingBlocks": bm["missing_blocks"],
            "CorruptBlocks": bm["corrupt_blocks"],
            "TransactionsSinceLastCheckpoint": since_checkpoint,
            "LastWrittenTransactionId": applied,
            "CapacityUsedNonDFS": non_dfs,
            "PostponedMisreplicatedBlocks": bm["postponed_misreplicated_blocks"],
            "PendingDataNodeMessageCount": bm["pending_datanode_messages"],
            **counts,
        },
        {
            "name": JMX_FS_STATE,
            "modelerType": FS_NAMESYSTEM_CLASS,
            "FSState": fs_state,
            **counts,
        },
        {
            "name": JMX_NN_INFO,
            "modelerType": FS_NAMESYSTEM_CLASS,
            "Version": st["version"],
            "SoftwareVersion": st["version"],
            "Used": used,
            "Free": remaining,
            "Total": capacity,
            "NonDfsUsedSpace": non_dfs,
            "PercentUsed": _pct(used, capacity),
            "PercentRemaining": remaining * 100.0 / capacity if capacity > 0 else 0.0,
            "BlockPoolUsedSpace": used,
            "TotalBlocks": bm["blocks"],
            "TotalFiles": st["inodes"],
            "NumberOfMissingBlocks": bm["missing_blocks"],
            "Safemode": bm["safe_mode_tip"] if bm["safe_mode"] else "",
            "ClusterId": ids["cluster_id"],
            "BlockPoolId": ids["block_pool_id"],
            "NNStartedTimeInMillis": int(ids["started_at"] * 1000),
            "LiveNodes": json.dumps(live_nodes),
            "DeadNodes": json.dumps(dead_nodes),
            "DecomNodes": json.dumps(decom_nodes),
            "NameDirStatuses": json.dumps(
                {"active": {st["name_dir"]: "IMAGE_AND_EDITS"}, "failed": {}}
            ),
            "JournalTransactionInfo": json.dumps(
                {
                    "LastAppliedOrWrittenTxId": str(applied),
                    "MostRecentCheckpointTxId": str(st["image_txid"]),
                }
            ),
        },
    ]


def _admin_state_text(d: dict[str, Any]) -> str:
    """AdminStates' text as NameNodeInfo's node maps write it."""
    return {
        "DECOMMISSION_INPROGRESS": "Decommission In Progress",
        "DECOMMISSIONED": "Decommissioned",
    }.get(str(d.get("admin_state", "NORMAL")), "In Service")


def jmx_ids(nn: NameNode) -> dict[str, Any]:
    """What the beans need beside status_dict: the name dir's ids (None while it is not
    open) and the host."""
    cluster_id = block_pool_id = None
    if nn.storage is not None:
        try:
            info = nn.datanode_namespace_info()
            cluster_id, block_pool_id = info.storage.cluster_id, info.block_pool_id
        except (QjmError, OSError) as e:
            log.warning("NameNode %s: /jmx cannot read the name dir's VERSION: %s", nn.name, e)
    return {
        "cluster_id": cluster_id,
        "block_pool_id": block_pool_id,
        "security_enabled": nn.cfg.security.kerberos,
        "hostname": socket.gethostname(),
        "started_at": nn.started_at,
    }


async def namenode_beans(nn: NameNode) -> list[dict[str, Any]]:
    """Every bean /jmx serves."""
    st = await status_dict(nn, None)
    ids = jmx_ids(nn)
    rpc = rpc_activity_bean("NameNode", nn.rpc_port, st["rpc"], ids["hostname"])
    return jmx_beans(st, ids) + ([rpc] if rpc else [])


def human_bytes(n: int) -> str:
    """Bytes as HDFS's reports show them: 1.5 GB, 800 MB, 12 KB."""
    for unit, scale in (("TB", 1 << 40), ("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


DATANODE_HEADS = (
    "DataNode",
    "transfer address",
    "state",
    "capacity",
    "used",
    "remaining",
    "blocks",
    "last heartbeat",
)


_ADMIN_NOTE = {
    "DECOMMISSION_INPROGRESS": ", decommissioning",
    "DECOMMISSIONED": ", decommissioned",
}


def datanode_table_rows(datanodes: list[dict[str, Any]]) -> list[list[str]]:
    """The status page's DataNodes table: one row of cells per DataNode."""
    return [
        [
            f"{d['hostname']}:{str(d['transfer_address']).rsplit(':', 1)[-1]}",
            str(d["transfer_address"]),
            str(d["state"])
            + (" (stale)" if d["stale"] and d["state"] == "live" else "")
            + _ADMIN_NOTE.get(str(d.get("admin_state", "NORMAL")), ""),
            human_bytes(int(d["capacity"])),
            human_bytes(int(d["used"])),
            human_bytes(int(d["remaining"])),
            str(d["blocks"]),
            f"{float(d['last_heartbeat_s_ago']):.1f} s ago",
        ]
        for d in sorted(datanodes, key=lambda d: str(d["transfer_address"]))
    ]


PAGE_POLL_MS = 1000  # how often an open status page asks again
PAGE_POLL_TIMEOUT_MS = 3000  # an answer slower than this counts as "not answering"
_PAGE_CSS = """body{font-family:sans-serif;margin:2em}
table{border-collapse:collapse;margin-bottom:1em}
td,th{border:1px solid #ccc;padding:4px 10px;text-align:left}th{background:#eee}
.ha{padding:0 .3em;border-radius:4px;color:#fff;background:#777}
.ha-active{background:#2a7d2a}.ha-standby{background:#2a5d9d}.ha-down{background:#b02a2a}
.stale{color:#999}"""
# The page asks for itself again every PAGE_POLL_MS and swaps its body in place, so an open page
# follows a failover without a reload; when the NameNode stops answering, the state says so
# (instead of the last state it had) and the rest is greyed as stale.
_PAGE_SCRIPT = """
(function () {
  function mark(note) {
    var s = document.getElementById("ha-state");
    if (s) {
      s.textContent = "not answering"; s.className = "ha ha-down"; s.dataset.state = "down";
    }
    var n = document.getElementById("page-note");
    if (n && !document.body.classList.contains("stale")) { n.textContent = note; }
    document.body.classList.add("stale");
  }
  function poll() {
    fetch(location.pathname, {cache: "no-store", signal: AbortSignal.timeout(TIMEOUT)})
      .then(function (r) {
        if (!r.ok) { throw new Error("HTTP " + r.status); }
        return r.text();
      })
      .then(function (text) {
        var doc = new DOMParser().parseFromString(text, "text/html");
        document.title = doc.title;
        document.body.innerHTML = doc.body.innerHTML;
        document.body.classList.remove("stale");
      })
      .catch(function (e) {
        mark("this NameNode is not answering since " + new Date().toTimeString().slice(0, 8) +
             " (" + e.message + "); the rest of the page is what it last said");
      })
      .finally(function () { setTimeout(poll, EVERY); });
  }
  setTimeout(poll, EVERY);
})();
""".replace("TIMEOUT", str(PAGE_POLL_TIMEOUT_MS)).replace("EVERY", str(PAGE_POLL_MS))


async def is_active(request: web.Request) -> web.Response:
    """GET /isActive: HDFS's IsActiveServlet, what load balancers probe: 200 "I am Active!"
    on the active (whose lease still runs, design §N.1), 405 "I am not Active!" otherwise."""
    nn = _nn(request)
    nn.check_lease()  # a lapsed lease steps down first: never 200 from a deposed active
    if nn.ha.is_active():
        return web.Response(text="I am Active!")
    return web.Response(status=405, text="I am not Active!")


async def fsck(request: web.Request) -> web.StreamResponse:
    """GET /fsck: HDFS's fsck report of a subtree (design §B.17)."""
    return await serve_fsck(_nn(request), request)


def _clock() -> str:
    return time.strftime("%H:%M:%S")


async def status_page(request: web.Request) -> web.Response:
    """GET /: a small human status page that follows the NameNode's state as it changes."""
    nn = _nn(request)
    rows = await request.app[_JN_CACHE].get()
    st = await status_dict(nn, rows)
    esc = html.escape
    facts = [
        ("last applied txid", st["last_applied_txid"]),
        ("last synced txid", "-" if st["last_synced_txid"] is None else st["last_synced_txid"]),
        ("namespace", f"{st['inodes']} inodes: {st['files']} files, {st['dirs']} directories"),
        ("newest image txid", st["image_txid"]),
        ("writer epoch", "-" if st["epoch"] is None else st["epoch"]),
        ("RPC", st["rpc_address"]),
        ("shared edits", st["shared_edits"]),
        ("name dir", st["name_dir"]),
    ]
    if st["fatal_error"]:
        facts.append(("fatal error", st["fatal_error"]))
    if st["journal_behind"]:
        facts.append(("shared journal behind", st["journal_behind"]))
    if st["tailer"]["last_error"]:
        facts.append(("tailer", st["tailer"]["last_error"]))
    jn_rows = []
    for r in st.get("journal_nodes", []):
        cells = [
            r.get("address", "-"),
            "up" if r.get("reachable") else "down",
            str(r.get("last_promised_epoch", "-")),
            str(r.get("last_writer_epoch", "-")),
            str(r.get("committed_txid", "-")),
            str(r.get("highest_written_txid", "-")),
            describe_segments(r.get("segments", [])),
            r.get("error") or "; ".join(r.get("problems", [])) or "-",
        ]
        jn_rows.append("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>")
    heads = [
        "JournalNode",
        "state",
        "promised epoch",
        "writer epoch",
        "committed txid",
        "last written txid",
        "segments",
        "problems",
    ]
    dn_rows = [
        f'<tr class="dn dn-{esc(cells[2].split()[0])}">'
        + "".join(f"<td>{esc(c)}</td>" for c in cells)
        + "</tr>"
        for cells in datanode_table_rows(st["datanodes"])
    ]
    bm = st["block_management"]
    dn_summary = (
        f"{bm['live_datanodes']} live, {bm['dead_datanodes']} dead; "
        f"{human_bytes(bm['used'])} used of {human_bytes(bm['capacity'])}, "
        f"{human_bytes(bm['remaining'])} remaining; {bm['blocks']} blocks"
        + (" &middot; safe mode" if bm["safe_mode"] else "")
    )
    if st.get("metadata_only") and not st["datanodes"]:
        dn_summary = (
            "metadata only: no DataNode is configured, so files keep names and no bytes "
            "(start the cluster with DataNodes: <code>qjm cluster up --datanodes 3</code>)"
        )
    state = st["ha_state"]
    page = f"""<!doctype html>
<html><head><meta charset="utf-8">
<noscript><meta http-equiv="refresh" content="2"></noscript>
<title>NameNode {esc(st["name"])} ({esc(state)})</title>
<style>{_PAGE_CSS}</style>
<script>{_PAGE_SCRIPT}</script>
</head><body>
<h1>NameNode {esc(st["name"])} &mdash;
<span id="ha-state" class="ha ha-{esc(state)}" data-state="{esc(state)}">{esc(state)}</span></h1>
<p>version {esc(st["version"])} &middot; <a href="/status">status JSON</a> &middot;
<a href="/metrics">metrics</a> &middot; <span id="page-note">as of {_clock()}</span></p>
<table>{"".join(f"<tr><th>{esc(k)}</th><td>{esc(str(v))}</td></tr>" for k, v in facts)}</table>
<h2>JournalNodes</h2>
<table><tr>{"".join(f"<th>{h}</th>" for h in heads)}</tr>
{"".join(jn_rows) or '<tr><td colspan="8">none configured</td></tr>'}
</table>
<h2>DataNodes</h2>
<p id="dn-summary">{dn_summary}</p>
<table id="datanodes"><tr>{"".join(f"<th>{h}</th>" for h in DATANODE_HEADS)}</tr>
{"".join(dn_rows) or '<tr><td colspan="8">none registered</td></tr>'}
</table></body></html>"""
    return web.Response(text=page, content_type="text/html")


def _version_headers(nn: NameNode) -> dict[str, str]:
    """The name dir's VERSION fields as X- headers (for bootstrap-standby)."""
    assert nn.storage is not None
    info = nn.storage.read_ns_info()
    return {
        "X-Namespace-Id": str(info.namespace_id),
        "X-Cluster-Id": str(info.cluster_id),
        "X-Block-Pool-Id": str(info.block_pool_id),
        "X-CTime": str(info.ctime),
    }


async def get_image(request: web.Request) -> web.StreamResponse:
    """GET /imagetransfer?getimage=1&txid=N|latest: an image of this NameNode's name dir."""
    nn = _nn(request)
    if request.query.get("getimage") != "1":
        return _error(400, "GET /imagetransfer needs getimage=1 (and txid=N or txid=latest)")
    storage = nn.storage
    if storage is None:
        return _error(503, f"NameNode {nn.name} has no name dir open")
    want = request.query.get("txid", "latest")
    images = sorted(storage.images())
    if not images:
        return _error(404, f"NameNode {nn.name} holds no image")
    if want == "latest":
        txid, path = images[-1]
    else:
        try:
            wanted = int(want)
        except ValueError:
            return _error(400, f"txid must be a number or 'latest', got {want!r}")
        found = [(t, p) for t, p in images if t == wanted]
        if not found:
            held = ", ".join(str(t) for t, _ in images)
            return _error(404, f"NameNode {nn.name} holds no image at txid {wanted} ({held})")
        txid, path = found[0]
    path = Path(path)
    loop = asyncio.get_running_loop()
    try:
        data = await loop.run_in_executor(None, path.read_bytes)
    except FileNotFoundError:
        return _error(404, f"image {path.name} went away (purged); ask again")
    md5 = read_md5_file(path) or hashlib.md5(data).hexdigest()
    headers = {
        "Content-Type": "application/octet-stream",
        "X-MD5-Digest": md5,
        "X-Image-Txid": str(txid),
        "X-Image-File": path.name,
    }
    with contextlib.suppress(OSError):  # when the checkpoint was written: its age
        headers["Last-Modified"] = email.utils.formatdate(path.stat().st_mtime, usegmt=True)
    try:
        headers.update(_version_headers(nn))
    except (QjmError, OSError, AttributeError) as e:
        return _error(500, f"cannot read the name dir's VERSION: {e}")
    return web.Response(body=data, headers=headers)


async def put_image(request: web.Request) -> web.Response:
    """PUT /imagetransfer?txid=N: keep a checkpoint from the standby when it is newer.

    The body is streamed to a temporary file in the name dir, its MD5 computed on the way,
    and refused with 413 past namenode.image_upload_max_bytes (design §N.6).
    """
    nn = _nn(request)
    try:
        txid = int(request.query["txid"])
    except (KeyError, ValueError):
        return _error(400, "PUT /imagetransfer needs txid=N")
    md5 = request.headers.get("X-MD5-Digest")
    if not md5:
        return _error(400, "PUT /imagetransfer needs the X-MD5-Digest header")
    if nn.ha_state != HAState.ACTIVE:
        return _error(
            403, f"NameNode {nn.name} is {nn.ha_state.name.lower()}, not active: it takes no image"
        )
    storage = nn.storage
    if storage is None:
        return _error(503, f"NameNode {nn.name} has no name dir open")
    newest = max((t for t, _ in storage.images()), default=-1)
    if txid <= newest:
        return _error(409, f"image at txid {txid} is not newer than the newest held, {newest}")
    synced = nn.synced_txid()
    if synced is None or txid > synced:
        # An image from the future would let a caller purge the edits every real image needs.
        return _error(
            409,
            f"image at txid {txid} is ahead of NameNode {nn.name}'s last synced txid {synced}",
        )
    cap = nn.settings.image_upload_max_bytes
    declared = request.content_length
    if declared is not None and declared > cap:
        return _too_large(nn, txid, cap, f"of {declared} bytes")
    loop = asyncio.get_running_loop()
    tmp = await loop.run_in_executor(None, _upload_file, storage.current, txid)
    try:
        try:
            size, digest = await _receive(request, tmp, cap)
        except UploadTooLarge:
            return _too_large(nn, txid, cap, f"of more than {cap} bytes")
        except (OSError, ClientError) as e:  # the uploader went away, or the disk failed
            log.warning("NameNode %s: image upload for txid %d failed: %s", nn.name, txid, e)
            return _error(400, f"image upload for txid {txid} failed: {e}")
        try:
            await loop.run_in_executor(None, _check_uploaded_image, nn, tmp, txid, md5, digest)
        except QjmError as e:
            return _error(400, str(e))
        newest = max((t for t, _ in storage.images()), default=-1)
        if txid <= newest:  # another upload of it finished meanwhile
            return _error(409, f"image at txid {txid} is not newer than the newest held, {newest}")
        try:
            await loop.run_in_executor(None, storage.install_image_file, tmp, txid, digest)
        except QjmError as e:
            return _error(500, str(e))
    finally:
        await loop.run_in_executor(None, _remove, tmp)
    nn.metrics.images_received += 1
    nn.image_txid = max(nn.image_txid, txid)
    await loop.run_in_executor(None, storage.purge, nn.settings.images_retained)
    await purge_shared_edits(nn)
    log.info(
        "NameNode %s: took image at txid %d (%d bytes) from %s",
        nn.name,
        txid,
        size,
        request.headers.get("X-Namenode", request.remote),
    )
    return web.json_response({"txid": txid, "bytes": size})


class UploadTooLarge(QjmError):
    """An uploaded body past namenode.image_upload_max_bytes."""


def _too_large(nn: NameNode, txid: int, cap: int, what: str) -> web.Response:
    nn.metrics.images_refused_too_large += 1
    log.warning("NameNode %s: refused an image upload for txid %d %s", nn.name, txid, what)
    return _error(
        413,
        f"image upload for txid {txid} {what} refused: namenode.image_upload_max_bytes is "
        f"{cap} bytes",
    )


def _upload_file(directory: Path, txid: int) -> Path:
    """A new empty temporary file for an upload in directory (the name dir's current/)."""
    fd, name = tempfile.mkstemp(
        prefix=f"{image_file_name(txid)}.", suffix=UPLOAD_SUFFIX, dir=directory
    )
    os.close(fd)
    return Path(name)


def _remove(path: Path) -> None:
    """Remove a temporary upload file if it is still there."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


async def _receive(request: web.Request, path: Path, cap: int) -> tuple[int, str]:
    """Stream the request body into path (fsynced); its size and MD5. UploadTooLarge as soon
    as one byte past cap arrives: nothing more is read."""
    loop = asyncio.get_running_loop()
    digest = hashlib.md5(usedforsecurity=False)
    size = 0
    f: BinaryIO = await loop.run_in_executor(None, path.open, "wb")
    try:
        while True:
            chunk = await request.content.read(min(CHUNK, cap + 1 - size))
            if not chunk:
                break
            size += len(chunk)
            if size > cap:
                raise UploadTooLarge(f"more than {cap} bytes")
            await loop.run_in_executor(None, _write_chunk, f, digest, chunk)
        await loop.run_in_executor(None, _sync, f)
    finally:
        await loop.run_in_executor(None, f.close)
    return size, digest.hexdigest()


def _write_chunk(f: BinaryIO, digest: Any, chunk: bytes) -> None:
    digest.update(chunk)
    f.write(chunk)


def _sync(f: BinaryIO) -> None:
    f.flush()
    os.fsync(f.fileno())


def _check_uploaded_image(nn: NameNode, path: Path, txid: int, md5: str, digest: str) -> None:
    """Refuse an upload that is not an image of this namespace at txid (before it is kept).

    Reads the file's summary and NS_INFO section, not the whole image: the namespace is
    decoded when the image is loaded, and a newest image that fails then is skipped for the
    older one kept beside it.
    """
    assert nn.storage is not None
    if digest != md5.strip().lower():
        raise ImageRefused(
            f"the uploaded image for txid {txid} has MD5 {digest}, but {md5.strip()} was "
            "announced; not installing it"
        )
    try:
        summary = read_summary_from_file(path)
        section = summary.section("NS_INFO")
        if section is None:
            raise ImageError("it has no NS_INFO section", "NS_INFO")
        info = decode_ns_info(read_section(path, section, summary.codec))
    except QjmError as e:
        raise ImageRefused(f"the uploaded image for txid {txid} does not decode: {e}") from None
    ours = nn.storage.read_ns_info().namespace_id
    if info.namespace_id != ours:
        raise ImageRefused(
            f"the uploaded image is of namespace {info.namespace_id}, this NameNode's is {ours}"
        )
    if info.txid != txid:
        raise ImageRefused(
            f"the uploaded image holds txid {info.txid}, but txid={txid} was announced"
        )


class ImageRefused(QjmError):
    """An uploaded image that is not a checkpoint of this namespace."""


async def purge_shared_edits(nn: NameNode) -> None:
    """As HDFS's retention manager: drop segments (shared and local) no retained image
    needs, keeping EXTRA_EDITS_RETAINED txns more (a lagging standby may still read them)."""
    el, storage = nn.edit_log, nn.storage
    if el is None or storage is None or nn.ha_state != HAState.ACTIVE:
        return
    images = storage.images()
    if not images:
        return
    min_txid = images[0][0] + 1 - EXTRA_EDITS_RETAINED
    if min_txid <= 1:
        return
    try:
        await el.purge_logs_older_than(min_txid)
    except QjmError as e:
        log.warning("NameNode %s: purging shared edits below txid %d: %s", nn.name, min_txid, e)


def make_app(nn: NameNode) -> web.Application:
    """The aiohttp application of one NameNode."""
    app = web.Application(
        middlewares=server_middlewares()
    )  # SPNEGO under Kerberos; an uploaded image is streamed (put_image), never read whole
    app[NN_KEY] = nn
    app[_JN_CACHE] = JournalStatusCache(nn)
    app.router.add_get("/status", status_json)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/fsck", fsck)
    app.router.add_get("/isActive", is_active)
    app.router.add_get("/", status_page)
    app.router.add_get(IMAGE_TRANSFER_PATH, get_image)
    app.router.add_put(IMAGE_TRANSFER_PATH, put_image)
    add_webhdfs_routes(app, nn)  # /webhdfs/v1 (design §W)
    add_operator_routes(  # /jmx, /conf, /logs/ (design §N.11)
        app,
        lambda: namenode_beans(nn),
        lambda: conf_properties(nn.cfg, "namenode", nn.name),
    )
    return app
