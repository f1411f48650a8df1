"""NameNode RPC throughput: mkdirs, create+complete and getFileInfo over Hadoop IPC.

One NameNode process (made active) on three JournalNode processes, all on loopback.
Each client is one IPC connection issuing one call at a time (as one HDFS client thread
does); 1 and 16 clients run for SECONDS each. A write is answered only after the quorum
holds it, so write ops/s include the group-committed quorum sync.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import percentile
from qjm import runtime
from qjm.cluster.process import spawn, stop_pid, wait_ready
from qjm.config import config_from_dict, dump_config
from qjm.hdfs.proto import hdfs_pb2 as hdfs
from qjm.ipc import IpcClient
from qjm.namenode.proto import ClientNamenodeProtocol_pb2 as cn
from qjm.namenode.proto import HAServiceProtocol_pb2 as hap
from qjm.namenode.protocols import CLIENT_PROTOCOL, HA_SERVICE_PROTOCOL
from qjm.namenode.server import os_user

SECONDS = 3.0
CONCURRENCY = (1, 16)
CALL_TIMEOUT_S = 30.0
WORKERS = 4  # client processes at most
START_DELAY_S = 2.0  # for the client processes to start and connect


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _format(cfg: Any) -> None:
    from qjm.client.admin import new_namespace_info
    from qjm.client.quorum_journal_manager import QuorumJournalManager
    from qjm.namenode.storage import NNStorage
    from qjm.protocol.namespace import NamespaceInfo

    info = NamespaceInfo.from_proto(new_namespace_info(cluster_id="CID-bench"))
    storage = NNStorage(Path(cfg.namenode_named("nn1").name_dir))
    try:
        storage.format(info)
    finally:
        storage.unlock()
    q = QuorumJournalManager(cfg.shared_edits_uri(), None, cfg.qjournal)
    try:
        await q.format(info.to_proto())
    finally:
        await q.close()


class _Client:
    def __init__(self, address: str, k: int) -> None:
        self.rpc = IpcClient(address, CLIENT_PROTOCOL, user=os_user())
        self.k = k
        self.name = f"bench-client-{k}"

    async def mkdirs(self, i: int) -> None:
        req = cn.MkdirsRequestProto(
            src=f"/bench/mkdirs/c{self.k}/d{i}",
            masked=hdfs.FsPermissionProto(perm=0o755),
            createParent=True,
        )
        await self.rpc.call("mkdirs", req, cn.MkdirsResponseProto, CALL_TIMEOUT_S)

    async def create(self, i: int) -> None:
        path = f"/bench/files/c{self.k}/f{i}"
        req = cn.CreateRequestProto(
            src=path,
            masked=hdfs.FsPermissionProto(perm=0o644),
            clientName=self.name,
            createFlag=cn.CREATE,
            createParent=True,
            replication=1,
            blockSize=134217728,
        )
        resp = await self.rpc.call("create", req, cn.CreateResponseProto, CALL_TIMEOUT_S)
        done = cn.CompleteRequestProto(src=path, clientName=self.name, fileId=resp.fs.fileId)
        await self.rpc.call("complete", done, cn.CompleteResponseProto, CALL_TIMEOUT_S)

    async def stat(self, i: int) -> None:
        req = cn.GetFileInfoRequestProto(src=f"/bench/files/c{self.k}/f{i % self.files}")
        resp = await self.rpc.call("getFileInfo", req, cn.GetFileInfoResponseProto, CALL_TIMEOUT_S)
        if not resp.HasField("fs"):
            raise RuntimeError(f"getFileInfo {req.src}: no such file")

    files = 1


async def _client_loops(
    address: str, op: str, ks: list[int], files: dict[int, int], start_at: float
) -> tuple[dict[int, int], list[float]]:
    """Run op on one connection per k from start_at (wall clock) for SECONDS."""
    clients = [_Client(address, k) for k in ks]
    for c in clients:
        c.files = files.get(c.k, 1)
        await c.rpc.call(  # connect before the clock starts
            "getFileInfo", cn.GetFileInfoRequestProto(src="/"), cn.GetFileInfoResponseProto
        )
    latencies: list[float] = []
    counts: dict[int, int] = {}
    await asyncio.sleep(max(start_at - time.time(), 0))  # every worker starts together
    stop_at = time.perf_counter() + SECONDS

    async def loop(c: _Client) -> None:
        fn = getattr(c, op)
        i = 0
        while time.perf_counter() < stop_at:
            t0 = time.perf_counter()
            await fn(i)
            latencies.append(time.perf_counter() - t0)
            i += 1
        counts[c.k] = i

    try:
        await asyncio.gather(*(loop(c) for c in clients))
    finally:
        await asyncio.gather(*(c.rpc.close() for c in clients))
    return counts, latencies


def _worker(
    address: str, op: str, ks: list[int], files: dict[int, int], start_at: float, conn: Any
) -> None:
    """A client process: its share of the clients; sends (counts, latencies) back."""
    conn.send(runtime.run(_client_loops(address, op, ks, files, start_at)))
    conn.close()


def _measure(address: str, op: str, n: int, files: dict[int, int]) -> dict[str, Any]:
    """n clients over up to WORKERS processes (one Python process would be the bottleneck)."""
    ctx = multiprocessing.get_context("spawn")
    workers = min(n, WORKERS)
    shares = [[1000 * n + k for k in range(n) if k % workers == w] for w in range(workers)]
    start_at = time.time() + START_DELAY_S
    procs = []
    for ks in shares:
        parent, child = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_worker, args=(address, op, ks, files, start_at, child))
        p.start()
        procs.append((p, parent))
    counts: dict[int, int] = {}
    latencies: list[float] = []
    for p, parent in procs:
        got_counts, got_lat = parent.recv()
        counts.update(got_counts)
        latencies.extend(got_lat)
        p.join(30)
    if op == "create":
        files.update(counts)
    lat = sorted(latencies)
    total = sum(counts.values())
    return {
        "ops": total,
        "ops_per_s": round(total / SECONDS, 1),
        "p50_ms": round(percentile(lat, 50) * 1000, 3),
        "p99_ms": round(percentile(lat, 99) * 1000, 3),
        "client_processes": workers,
    }


async def _activate(rpc_address: str) -> None:
    ha = IpcClient(rpc_address, HA_SERVICE_PROTOCOL, user=os_user())
    try:
        info = hap.HAStateChangeRequestInfoProto(reqSource=hap.REQUEST_BY_USER)
        await ha.call(
            "transitionToActive",
            hap.TransitionToActiveRequestProto(reqInfo=info),
            hap.TransitionToActiveResponseProto,
            60.0,
        )
    finally:
        await ha.close()


def _bench(rpc_address: str) -> dict[str, dict[str, dict[str, Any]]]:
    runtime.run(_activate(rpc_address))
    results: dict[str, dict[str, dict[str, Any]]] = {}
    for n in CONCURRENCY:
        files: dict[int, int] = {}
        for op, label in (
            ("mkdirs", "mkdirs"),
            ("create", "create+complete"),
            ("stat", "getFileInfo"),
        ):
            results.setdefault(label, {})[str(n)] = _measure(rpc_address, op, n, files)
    return results


def run() -> dict[str, Any]:
    """Start 3 JournalNodes and a NameNode, measure each op with 1 and 16 clients."""
    with tempfile.TemporaryDirectory(prefix="qjm-nn-bench-") as tmp:
        root = Path(tmp)
        jns = [
            spawn(
                f"jn{i}",
                [
                    "journalnode",
                    "--edits-dir",
                    str(root / f"jn{i}"),
                    "--rpc-address",
                    "127.0.0.1:0",
                    "--http-address",
                    "127.0.0.1:0",
                    "--log-level",
                    "WARNING",
                ],
                root / f"jn{i}.log",
                root / f"jn{i}.ready",
            )
            for i in range(3)
        ]
        nn = None
        try:
            ready = wait_ready(jns)
            cfg = config_from_dict(
                {
                    "journalnodes": {
                        d.name: {
                            "rpc_address": ready[d.name]["rpc"],
                            "http_address": ready[d.name]["http"],
                            "edits_dir": str(root / d.name),
                        }
                        for d in jns
                    },
                    "namenodes": {
                        "nn1": {
                            "rpc_address": f"127.0.0.1:{_free_port()}",
                            "http_address": f"127.0.0.1:{_free_port()}",
                            "name_dir": str(root / "nn1"),
                        }
                    },
                },
                "benchmark",
            )
            conf = root / "cluster.toml"
            conf.write_text(dump_config(cfg))
            runtime.run(_format(cfg))
            nn = spawn(
                "nn1",
                ["namenode", "--config", str(conf), "--id", "nn1", "--log-level", "WARNING"],
                root / "nn1.log",
                root / "nn1.ready",
            )
            address = wait_ready([nn])["nn1"]["rpc"]
            results = _bench(address)
        finally:
            if nn is not None:
                stop_pid(nn.pid)
            for d in jns:
                stop_pid(d.pid)
    return {
        "benchmark": "nn_rpc",
        "seconds_per_run": SECONDS,
        "setup": "1 NameNode process (active) on 3 JournalNode processes, loopback; each "
        f"client one IPC connection, one call at a time; clients spread over up to {WORKERS} "
        "client processes",
        "results": results,
    }


def main() -> int:
    """Run and print JSON."""
    print(json.dumps(run(), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
