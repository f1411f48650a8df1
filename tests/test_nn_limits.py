"""A real NameNode process against requests built to kill it (design §N.4, §N.6): paths past
HDFS's limits, names that do not fit the edit log, an oversized image upload, idle and
half-sent connections. It answers each with an error and keeps serving."""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from conftest import JNFactory
from nn_harness import NNProcess, Rpc, format_cluster, make_config, write_config
from qjm.hdfs.proto import hdfs_pb2 as hdfs
from qjm.ipc import RemoteError
from qjm.ipc.framing import PREAMBLE
from qjm.namenode.proto import ClientNamenodeProtocol_pb2 as cn
from qjm.testing.wait import wait_until_async

pytestmark = pytest.mark.slow

IO_EXCEPTION = "java.io.IOException"
ILLEGAL_ARGUMENT = "org.apache.hadoop.HadoopIllegalArgumentException"
TOO_LONG = "Pathname too long.  Limit 8000 characters, 1000 levels."
LONG_PATH = "/big/" + "/".join(["x" * 200] * 350)  # 70 KB
DEEP_PATH = "/d" * 20_000  # 20,000 components


def memory_kb(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak RSS) of a process, in kB, from /proc."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0])
    return out


async def started_namenode(
    jn_factory: JNFactory, tmp_path: Path, **settings: Any
) -> tuple[NNProcess, dict[str, Any]]:
    """One NameNode process over three JournalNode processes, made active; (process, ready)."""
    jns = [jn_factory.start(f"jn{i}") for i in range(3)]
    cfg = make_config(jns, tmp_path, names=("nn1",), **settings)
    await format_cluster(cfg, "nn1")
    proc = NNProcess(write_config(cfg, tmp_path / "cluster.toml"), "nn1", tmp_path)
    proc.start()
    info = await proc.wait_ready()
    rpc = Rpc(info["rpc"])
    try:
        await rpc.transition_to_active()
    finally:
        await rpc.close()
    return proc, info


@pytest.fixture
def namenode_procs() -> Iterator[list[NNProcess]]:
    """NameNode processes to stop at the end of a test."""
    procs: list[NNProcess] = []
    try:
        yield procs
    finally:
        for p in procs:
            p.stop()


async def refusal(call: Any) -> tuple[RemoteError, float]:
    """The RemoteError a call ends with, and how long it took."""
    started = time.monotonic()
    with pytest.raises(RemoteError) as e:
        await call
    return e.value, time.monotonic() - started


async def test_a_namenode_refuses_paths_and_names_past_its_limits_and_keeps_serving(
    tmp_path: Path, jn_factory: JNFactory, namenode_procs: list[NNProcess]
) -> None:
    proc, info = await started_namenode(jn_factory, tmp_path)
    namenode_procs.append(proc)
    assert proc.proc is not None
    pid = proc.proc.pid
    rpc = Rpc(info["rpc"])
    try:
        assert await rpc.mkdirs("/ok")
        before = memory_kb(pid)
        for path in (LONG_PATH, DEEP_PATH, "/a" * 1001):
            err, took = await refusal(rpc.mkdirs(path))
            assert (err.class_name, err.message) == (IO_EXCEPTION, f"mkdirs: {TOO_LONG}")
            assert took < 5, took
        err, _ = await refusal(rpc.touch(LONG_PATH))
        assert (err.class_name, err.message) == (IO_EXCEPTION, f"create: {TOO_LONG}")
        rename2 = cn.Rename2RequestProto(src="/ok", dst=DEEP_PATH, overwriteDest=False)
        err, _ = await refusal(rpc.client.call("rename2", rename2, cn.Rename2ResponseProto, 10))
        assert (err.class_name, err.message) == (IO_EXCEPTION, f"rename: {TOO_LONG}")

        # a name the edit log cannot hold (a 16-bit length): refused, nothing applied
        err, _ = await refusal(rpc.touch("/ok/f", client="c" * 70_000))
        assert err.class_name == ILLEGAL_ARGUMENT
        assert "cannot encode OP_ADD" in err.message and "nothing was applied" in err.message
        assert await rpc.stat("/ok/f") is None
        huge_block = cn.CreateRequestProto(
            src="/ok/g",
            masked=hdfs.FsPermissionProto(perm=0o644),
            clientName="c",
            createFlag=cn.CREATE,
            createParent=False,
            replication=1,
            blockSize=2**64 - 1,  # Java's -1; it used to reach the edit log and stop the NameNode
        )
        err, _ = await refusal(rpc.client.call("create", huge_block, cn.CreateResponseProto, 10))
        assert err.class_name == ILLEGAL_ARGUMENT and "block size -1" in err.message
        owner = cn.SetOwnerRequestProto(src="/ok", username="u" * 70_000)
        err, _ = await refusal(rpc.client.call("setOwner", owner, cn.SetOwnerResponseProto, 10))
        assert err.class_name == ILLEGAL_ARGUMENT and "OP_SET_OWNER" in err.message
        st = await rpc.stat("/ok")
        assert st is not None and st.owner != "u" * 70_000

        # still serving, the same process, and no balloon of memory
        assert await rpc.mkdirs("/after/a/b")
        assert await rpc.stat("/after/a/b") is not None
        assert proc.proc.poll() is None
        after = memory_kb(pid)
        assert after["VmHWM"] - before["VmHWM"] < 64 * 1024, (before, after)
    finally:
        await rpc.close()
    assert "FATAL" not in proc.log.read_text()


MIB = 1 << 20


async def put_image(url: str, txid: int, chunks: int, md5: str | None = None) -> tuple[int, str]:
    """PUT chunks MiB of zeros (chunked, no Content-Length) to /imagetransfer; (status, body)."""
    block = b"\0" * MIB

    async def body() -> Any:
        for _ in range(chunks):
            yield block

    if md5 is None:
        digest = hashlib.md5()
        for _ in range(chunks):
            digest.update(block)
        md5 = digest.hexdigest()
    async with (
        aiohttp.ClientSession() as s,
        s.put(url, params={"txid": str(txid)}, data=body(), headers={"X-MD5-Digest": md5}) as r,
    ):
        return r.status, await r.text()


async def declared_put(http: str, txid: int, length: int) -> bytes:
    """Send only the head of a PUT /imagetransfer declaring length bytes; the answer's bytes."""
    host, port = http.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(
            f"PUT /imagetransfer?txid={txid} HTTP/1.1\r\nHost: {http}\r\n"
            f"X-MD5-Digest: 0\r\nContent-Length: {length}\r\n\r\n".encode()
        )
        async with asyncio.timeout(10):
            return await reader.readuntil(b"\r\n\r\n") + await reader.read(4096)
    finally:
        writer.close()


async def test_a_namenode_streams_image_uploads_and_caps_its_connections(
    tmp_path: Path, jn_factory: JNFactory, namenode_procs: list[NNProcess]
) -> None:
    cap = 96 * MIB
    proc, info = await started_namenode(
        jn_factory,
        tmp_path,
        image_upload_max_bytes=cap,
        ipc_max_connections=4,
        ipc_idle_timeout_ms=1000,
    )
    namenode_procs.append(proc)
    assert proc.proc is not None
    pid = proc.proc.pid
    http = info["http"]
    url = f"http://{http}/imagetransfer"
    current = tmp_path / "nn1" / "current"
    rpc = Rpc(info["rpc"])
    try:
        assert await rpc.mkdirs("/d")
    finally:
        await rpc.close()
    status = json.loads((await asyncio.to_thread(fetch, f"http://{http}/status"))[1])
    txid = status["last_synced_txid"]

    # PUT /imagetransfer (design §N.6): a declared length past the cap is refused before a
    # byte of the body is read; a body under it is streamed to disk, not held in memory
    before = memory_kb(pid)
    head = await declared_put(http, txid, 1 << 40)
    assert head.startswith(b"HTTP/1.1 413"), head
    assert b"namenode.image_upload_max_bytes is 100663296 bytes" in head
    code, text = await put_image(url, txid, 80)
    assert code == 400 and "does not decode" in text, text
    code, text = await put_image(url, txid, 128)  # chunked: refused once past the cap
    assert code == 413 and "namenode.image_upload_max_bytes" in text, text
    after = memory_kb(pid)
    grew = after["VmHWM"] - before["VmHWM"]
    assert grew < 40 * 1024, (before, after)
    assert not list(current.glob("*.upload"))
    assert sorted(p.name for p in current.glob("fsimage_*")) == [
        "fsimage_0000000000000000000",
        "fsimage_0000000000000000000.md5",
    ]

    # RPC connections (design §N.6): idle ones at the cap make newcomers wait, not the server
    idle = [socket.create_connection(tuple_of(info["rpc"]), timeout=5) for _ in range(4)]
    try:
        for s in idle:
            s.sendall(PREAMBLE)
        for _ in range(10):
            with socket.create_connection(tuple_of(info["rpc"]), timeout=5) as s:
                assert s.recv(16) == b""  # closed at once
        rpc = Rpc(info["rpc"])
        try:
            deadline = time.monotonic() + 30
            while True:  # the idle ones close after 1 s; then an honest call gets through
                try:
                    assert await rpc.mkdirs("/after-idle")
                    break
                except Exception:
                    assert time.monotonic() < deadline
                    await asyncio.sleep(0.1)  # poll interval of a bounded wait
        finally:
            await rpc.close()

        def idle_closed() -> int:
            st = json.loads(fetch(f"http://{http}/status")[1])
            return int(st["rpc"]["connections_idle_closed"])

        # the honest call got through once the first idle one closed; the server closes the
        # other three too (a loaded machine spreads them over its sweeps): wait for that
        # before this side closes them
        await wait_until_async(
            lambda: f"the server closed 4 idle connections, not {idle_closed()}",
            lambda: idle_closed() >= 4,
            timeout_s=30.0,
        )
    finally:
        for s in idle:
            s.close()
    metrics = (await asyncio.to_thread(fetch, f"http://{http}/metrics"))[1]
    status = json.loads((await asyncio.to_thread(fetch, f"http://{http}/status"))[1])
    refused = status["rpc"]["connections_refused"]
    assert refused >= 10 and status["rpc"]["connections_idle_closed"] >= 4, status["rpc"]
    assert f"qjm_namenode_rpc_connections_refused_total {float(refused)}" in metrics
    assert "qjm_namenode_images_refused_too_large_total 2.0" in metrics
    log = proc.log.read_text()
    assert log.count("refusing RPC connections") <= 2, log  # one per episode, not per refusal
    assert proc.proc.poll() is None and "FATAL" not in log


def tuple_of(address: str) -> tuple[str, int]:
    """(host, port) of host:port."""
    host, port = address.rsplit(":", 1)
    return host, int(port)


def fetch(url: str) -> tuple[int, str]:
    """GET url; (status, text)."""
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.status, r.read().decode()
