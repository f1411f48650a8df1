"""The retry cache in a real NameNode (design §N.3): real JournalNodes in this process behind
proxies that can hold their answers back, NameNode objects, calls over real IPC with chosen
client and call ids (a retry is the same ids on a new connection, as Hadoop's
RetryInvocationHandler sends it after a failover)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import aiohttp
import hdfs_native
import pytest
from google.protobuf.message import Message

from jn_proxy import JournalProxy
from nn_fakes import FakeNameNode, ServedInThread, serve
from nn_harness import SUPER, copy_name_dir, format_cluster, make_config, start_nn
from qjm.hdfs.proto import hdfs_pb2 as hdfs
from qjm.ipc import IpcClient, RemoteError
from qjm.ipc.server import CallContext
from qjm.namenode.client import NameNodeClient
from qjm.namenode.proto import ClientNamenodeProtocol_pb2 as cn
from qjm.namenode.protocols import CLIENT_PROTOCOL
from qjm.namenode.server import NameNode, os_user
from qjm.testing.wait import wait_until_async
from qjm_cluster import JNCluster

CID = bytes(range(16))
STANDBY_EXCEPTION = "org.apache.hadoop.ipc.StandbyException"
M = TypeVar("M", bound=Message)


@dataclass(frozen=True)
class JNRow:
    """A JournalNode as make_config lists it: here its RPC address is a proxy's."""

    rpc: str
    http: str
    edits_dir: str


@dataclass
class Pair:
    """NameNodes on proxied JournalNodes; nodes[0] active."""

    jns: JNCluster
    proxies: list[JournalProxy]
    nodes: list[NameNode]

    def hold(self) -> None:
        """Keep back the JournalNodes' answers to journal() from now on."""
        for p in self.proxies:
            p.hold()

    def release(self) -> None:
        """Send every answer kept back."""
        for p in self.proxies:
            p.release()


@contextlib.asynccontextmanager
async def namenodes(tmp_path: Path, names: tuple[str, ...] = ("nn1",)) -> AsyncIterator[Pair]:
    """Three JournalNodes (each behind a JournalProxy) and started NameNodes, the first active."""
    async with JNCluster(tmp_path / "jns") as jns:
        proxies = [await JournalProxy(jns.address(i)).start() for i in range(jns.n)]
        rows = [
            JNRow(p.address, f"127.0.0.1:{jns.http_ports[i]}", str(jns.edits_dir(i)))
            for i, p in enumerate(proxies)
        ]
        cfg = make_config(rows, tmp_path, names=names)
        await format_cluster(cfg, names[0])
        for other in names[1:]:
            copy_name_dir(cfg, names[0], other)
        nodes: list[NameNode] = []
        try:
            for name in names:
                nodes.append(await start_nn(cfg, name))
            await nodes[0].transition_to_active("test")
            yield Pair(jns, proxies, nodes)
        finally:
            for p in proxies:
                p.release()
            for nn in nodes:
                await nn.stop()
            for p in proxies:
                await p.stop()


async def call(
    address: str,
    call_id: int,
    method: str,
    request: Message,
    response: type[M],
    client_id: bytes = CID,
) -> M:
    """One call with these ids, on a connection of its own (so a retry is a new connection)."""
    client = IpcClient(
        address, CLIENT_PROTOCOL, user=os_user(), client_id=client_id, reconnect_attempts=1
    )
    try:
        return await client.call(method, request, response, 30.0, call_id=call_id)
    finally:
        await client.close()


def rename(src: str, dst: str) -> cn.RenameRequestProto:
    """rename (the old one: FsShell's -mv)."""
    return cn.RenameRequestProto(src=src, dst=dst)


def create(path: str) -> cn.CreateRequestProto:
    """create without overwrite (a second execution is refused: FileAlreadyExists)."""
    return cn.CreateRequestProto(
        src=path,
        masked=hdfs.FsPermissionProto(perm=0o644),
        clientName="DFSClient_test",
        createFlag=cn.CREATE,
        createParent=True,
        replication=1,
        blockSize=134217728,
    )


async def mkdirs(address: str, path: str) -> None:
    """mkdirs -p with a fresh client."""
    req = cn.MkdirsRequestProto(src=path, masked=hdfs.FsPermissionProto(perm=0o755))
    req.createParent = True
    await call(address, 0, "mkdirs", req, cn.MkdirsResponseProto, client_id=b"m" * 16)


async def exists(nn: NameNode, path: str) -> bool:
    """Whether path is in nn's namespace."""
    return nn.ns.stat(path, SUPER) is not None


async def fetch(nn: NameNode, path: str) -> str:
    """GET path from nn's HTTP server."""
    async with aiohttp.ClientSession() as s, s.get(nn.http_url() + path) as r:
        assert r.status == 200
        return await r.text()


@pytest.mark.slow
async def test_a_retry_with_the_same_ids_gets_the_first_answer_and_logs_nothing(
    tmp_path: Path,
) -> None:
    async with namenodes(tmp_path) as pair:
        nn = pair.nodes[0]
        addr = nn.rpc_address()
        await mkdirs(addr, "/r/a")
        await mkdirs(addr, "/r/d")

        ok = await call(addr, 100, "rename", rename("/r/a", "/r/b"), cn.RenameResponseProto)
        assert ok.result
        logged = nn.last_txid()
        # the retry finds /r/a gone, yet answers as the first call did, logging nothing
        again = await call(addr, 100, "rename", rename("/r/a", "/r/b"), cn.RenameResponseProto)
        assert again.result and nn.last_txid() == logged
        # another call id is another call: it runs, and fails as a second rename would
        other = await call(addr, 101, "rename", rename("/r/a", "/r/b"), cn.RenameResponseProto)
        assert not other.result
        # so is the same call id from another client
        stranger = await call(
            addr, 100, "rename", rename("/r/a", "/r/b"), cn.RenameResponseProto, b"s" * 16
        )
        assert not stranger.result

        first = await call(addr, 102, "create", create("/r/f"), cn.CreateResponseProto)
        logged = nn.last_txid()
        retried = await call(addr, 102, "create", create("/r/f"), cn.CreateResponseProto)
        assert retried == first and retried.fs.fileId == first.fs.fileId > 0
        assert nn.last_txid() == logged
        with pytest.raises(RemoteError, match="FileAlreadyExists"):
            await call(addr, 103, "create", create("/r/f"), cn.CreateResponseProto)

        r2 = cn.Rename2RequestProto(src="/r/f", dst="/r/g", overwriteDest=False)
        await call(addr, 104, "rename2", r2, cn.Rename2ResponseProto)
        logged = nn.last_txid()
        await call(addr, 104, "rename2", r2, cn.Rename2ResponseProto)  # no FileNotFound
        assert nn.last_txid() == logged and await exists(nn, "/r/g")

        rm = cn.DeleteRequestProto(src="/r/d", recursive=True)
        assert (await call(addr, 105, "delete", rm, cn.DeleteResponseProto)).result
        logged = nn.last_txid()
        assert (await call(addr, 105, "delete", rm, cn.DeleteResponseProto)).result
        assert nn.last_txid() == logged
        assert not (await call(addr, 106, "delete", rm, cn.DeleteResponseProto)).result

        # HDFS's metric names, in /status and /metrics: 4 retries found their entries; the
        # 8 other at-most-once calls each added one (mkdirs is idempotent: not cached)
        cache = json.loads(await fetch(nn, "/status"))["retry_cache"]
        assert (cache["CacheHit"], cache["CacheUpdated"], cache["CacheCleared"]) == (4, 8, 0)
        metrics = await fetch(nn, "/metrics")
        assert "qjm_namenode_retry_cache_hit_total 4.0" in metrics
        assert "qjm_namenode_retry_cache_updated_total 8.0" in metrics
        assert "qjm_namenode_retry_cache_cleared_total 0.0" in metrics


@pytest.mark.slow
async def test_an_entry_expires_and_the_retry_then_runs_again(tmp_path: Path) -> None:
    async with namenodes(tmp_path) as pair:
        nn = pair.nodes[0]
        addr = nn.rpc_address()
        await mkdirs(addr, "/e/a")
        req = rename("/e/a", "/e/b")
        assert (await call(addr, 7, "rename", req, cn.RenameResponseProto)).result
        assert (await call(addr, 7, "rename", req, cn.RenameResponseProto)).result
        assert nn.retry_cache is not None
        added = time.monotonic()  # the entry was added before this
        now = [added + nn.settings.retry_cache_expiry_ms / 1000 - 0.5]
        nn.retry_cache.clock = lambda: now[0]
        assert (await call(addr, 7, "rename", req, cn.RenameResponseProto)).result
        now[0] += 0.5  # expiry_ms after the entry was added: gone, the call runs again
        assert not (await call(addr, 7, "rename", req, cn.RenameResponseProto)).result


@pytest.mark.slow
async def test_a_retry_during_the_first_call_waits_for_it(tmp_path: Path) -> None:
    async with namenodes(tmp_path) as pair:
        nn = pair.nodes[0]
        addr = nn.rpc_address()
        await mkdirs(addr, "/w/a")
        before = nn.last_txid()
        pair.hold()
        first = asyncio.ensure_future(
            call(addr, 9, "rename", rename("/w/a", "/w/b"), cn.RenameResponseProto)
        )
        # every JournalNode wrote the rename and answered; the answers are held back
        await wait_until_async(
            "the rename written", lambda: all(p.kept_bytes for p in pair.proxies)
        )
        assert nn.last_txid() == before + 1 and nn.synced_txid() == before
        retry = asyncio.ensure_future(
            call(addr, 9, "rename", rename("/w/a", "/w/b"), cn.RenameResponseProto)
        )
        cache = nn.retry_cache
        await wait_until_async(
            "the retry to find the call", lambda: cache is not None and cache.hits == 1
        )
        assert not first.done() and not retry.done()
        pair.release()
        got = await asyncio.wait_for(asyncio.gather(first, retry), 30)
        assert [r.result for r in got] == [True, True]
        assert nn.last_txid() == before + 1  # one rename logged


@pytest.mark.slow
async def test_the_standby_rebuilds_entries_and_answers_retries_after_a_failover(
    tmp_path: Path,
) -> None:
    async with namenodes(tmp_path, ("nn1", "nn2")) as pair:
        nn1, nn2 = pair.nodes
        await mkdirs(nn1.rpc_address(), "/s/a")
        made = await call(nn1.rpc_address(), 40, "create", create("/s/f"), cn.CreateResponseProto)
        moved = await call(
            nn1.rpc_address(), 41, "rename", rename("/s/a", "/s/b"), cn.RenameResponseProto
        )
        assert moved.result
        await wait_until_async(
            "nn2 to tail every edit", lambda: nn2.applied_txid >= nn1.last_txid()
        )
        # a standby refuses before it looks at its entries, as HDFS's checkOperation
        with pytest.raises(RemoteError) as refused:
            await call(nn2.rpc_address(), 40, "create", create("/s/f"), cn.CreateResponseProto)
        assert refused.value.class_name == STANDBY_EXCEPTION

        await nn1.transition_to_standby("test")
        await nn2.transition_to_active("test")
        logged = nn2.last_txid()
        again = await call(nn2.rpc_address(), 40, "create", create("/s/f"), cn.CreateResponseProto)
        assert again == made  # the original file status: id, times, owner, mode
        moved_again = await call(
            nn2.rpc_address(), 41, "rename", rename("/s/a", "/s/b"), cn.RenameResponseProto
        )
        assert moved_again.result
        assert nn2.last_txid() == logged
        # both answers came from entries nn2 rebuilt from the RPC ids logged with the ops
        assert nn2.retry_cache is not None and nn2.retry_cache.hits == 2


def test_the_enable_flag_turns_the_cache_off(tmp_path: Path) -> None:
    rows = [
        JNRow(f"127.0.0.1:{9000 + i}", f"127.0.0.1:{9100 + i}", str(tmp_path)) for i in range(3)
    ]
    on = make_config(rows, tmp_path)
    off = make_config(rows, tmp_path, retry_cache_enabled=False, retry_cache_max_entries=7)
    assert NameNode(on, "nn1").retry_cache is not None
    assert NameNode(off, "nn1").retry_cache is None
    small = make_config(rows, tmp_path, retry_cache_max_entries=7, retry_cache_expiry_ms=1500)
    cache = NameNode(small, "nn1").retry_cache
    assert cache is not None and (cache.max_entries, cache.expiry_s) == (7, 1.5)


async def test_without_a_cache_a_retry_runs_again() -> None:
    fake = FakeNameNode()
    fake.retry_cache = None
    server = await serve(fake)
    addr = f"127.0.0.1:{server.port}"
    try:
        await mkdirs(addr, "/x")
        assert (await call(addr, 5, "rename", rename("/x", "/y"), cn.RenameResponseProto)).result
        assert not (
            await call(addr, 5, "rename", rename("/x", "/y"), cn.RenameResponseProto)
        ).result
    finally:
        await server.stop()


class IdRecorder(FakeNameNode):
    """A FakeNameNode that records the ids of every namespace call, answered or refused."""

    def __init__(self, *, standby: bool) -> None:
        super().__init__(standby=standby)
        self.ids: list[tuple[str, bytes, int, int]] = []
        for op in self.ns.plan_mkdirs("/x", SUPER, 0o755, True, 0):
            self.ns.apply(op)

    def _check(self, ctx: CallContext) -> None:
        self.ids.append((ctx.method, ctx.client_id, ctx.call_id, ctx.retry_count))
        super()._check(ctx)


def test_hdfs_native_retries_on_the_other_namenode_as_another_client() -> None:
    """What hdfs-native sends when it moves a write to the other NameNode: a new client id
    (one per connection) and that connection's next call id, with retry count 0, so no
    NameNode can tell the retry from a new call and the retry cache cannot answer it."""
    nn1, nn2 = IdRecorder(standby=True), IdRecorder(standby=False)
    with ServedInThread(nn1, nn2) as served:
        a1, a2 = served.addresses
        client = hdfs_native.Client(
            "hdfs://ns1",
            config={
                "dfs.nameservices": "ns1",
                "dfs.ha.namenodes.ns1": "nn1,nn2",
                "dfs.namenode.rpc-address.ns1.nn1": a1,
                "dfs.namenode.rpc-address.ns1.nn2": a2,
            },
        )
        client.rename("/x", "/y")  # nn1 first: StandbyException; then nn2
    (m1, cid1, _, retry1), (m2, cid2, _, retry2) = nn1.ids[-1], nn2.ids[-1]
    assert m1 == m2 and m1 in ("rename", "rename2")
    assert len(cid1) == len(cid2) == 16
    assert cid1 != cid2  # another client id: a new call to the NameNode
    assert (retry1, retry2) == (0, 0)
    assert nn2.ns.stat("/y", SUPER) is not None


async def test_our_client_retries_a_call_under_its_ids_and_never_reuses_them() -> None:
    """NameNodeClient: one client id and one call id counter over both NameNodes; a call
    moved to the other NameNode keeps its call id (a retry the cache recognises), and no
    two calls share one (the cache would answer the second with the first's answer)."""
    nn1, nn2 = IdRecorder(standby=False), IdRecorder(standby=True)
    servers = [await serve(nn1), await serve(nn2)]
    try:
        async with NameNodeClient([f"127.0.0.1:{s.port}" for s in servers]) as client:
            await client.rename("/x", "/y")  # nn1 answers
            nn1.standby, nn2.standby = True, False
            await client.mkdirs("/z")  # nn1 refuses, nn2 answers: a retry
            await client.rename("/z", "/w")  # nn2 at once
    finally:
        for server in servers:
            await server.stop()
    first, refused = nn1.ids
    retried, last = nn2.ids
    assert refused[1:] == retried[1:]  # the same call, its client id and call id again
    calls = {first[1:3], retried[1:3], last[1:3]}
    assert len(calls) == 3  # three calls, three (client id, call id) pairs
    assert len({ids[1] for ids in (first, retried, last)}) == 1  # one client id
