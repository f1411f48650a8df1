"""A real NameNode process against requests built to kill it (design §N.4, §N.6): paths past
HDFS's limits, names that do not fit the edit log, an oversized image upload, idle and
half-sent connections. It answers each with an error and keeps serving."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import JNFactory
from nn_harness import NNProcess, Rpc, format_cluster, make_config, write_config
from qjm.ipc import RemoteError
from qjm.namenode.proto import ClientNamenodeProtocol_pb2 as cn

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
