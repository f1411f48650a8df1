"""Test harness for NameNodes: a cluster config over real JournalNodes, format, RPC, tree dumps.

The JournalNodes are JNCluster's (real servers on 127.0.0.1 in the test's loop, or
`qjm journalnode` processes); NameNodes run in-process (NameNode objects) or as
`python -m qjm namenode` processes.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ports import free_port
from qjm.config import ClusterConfig, config_from_dict, dump_config
from qjm.hdfs.proto import hdfs_pb2 as hdfs
from qjm.ipc import IpcClient
from qjm.namenode.proto import ClientNamenodeProtocol_pb2 as cn
from qjm.namenode.proto import HAServiceProtocol_pb2 as hap
from qjm.namenode.protocols import CLIENT_PROTOCOL, HA_SERVICE_PROTOCOL
from qjm.namenode.server import NameNode, os_user
from qjm.namenode.types import Caller
from qjm_cluster import JNCluster

SRC = Path(__file__).resolve().parent.parent / "src"
JID = "ns1"
FAST_QJOURNAL = {
    "start_segment_timeout_ms": 5_000,
    "prepare_recovery_timeout_ms": 5_000,
    "accept_recovery_timeout_ms": 5_000,
    "finalize_segment_timeout_ms": 5_000,
    "select_input_streams_timeout_ms": 5_000,
    "get_journal_state_timeout_ms": 5_000,
    "new_epoch_timeout_ms": 5_000,
    "write_txns_timeout_ms": 5_000,
    "http_timeout_ms": 5_000,
}
SUPER = Caller("test-superuser", (), True)


def jn_rows(jns: JNCluster | list[Any]) -> list[tuple[str, str, str]]:
    """(rpc, http, edits_dir) of JNCluster nodes or of conftest's JNProcess list."""
    if isinstance(jns, JNCluster):
        return [
            (jns.address(i), f"127.0.0.1:{jns.http_ports[i]}", str(jns.edits_dir(i)))
            for i in range(jns.n)
        ]
    return [(jn.rpc, jn.http, str(jn.edits_dir)) for jn in jns]


def make_config(
    jns: JNCluster | list[Any],
    root: Path,
    names: tuple[str, ...] = ("nn1", "nn2"),
    **namenode: Any,
) -> ClusterConfig:
    """A cluster config: these JournalNodes, NameNodes on free ports with dirs under root."""
    # A 2 s lease (design §N.1) rather than half the 10 s ZooKeeper session: a NameNode that
    # takes over from one that did not go standby waits out about that long.
    settings = {"tail_wait_ms": 100, "checkpoint_check_period_s": 3600, "active_lease_ms": 2000}
    settings.update(namenode)
    data: dict[str, Any] = {
        "cluster": {"nameservice": "ns1", "journal_id": JID},
        "journalnodes": {
            f"jn{i}": {"rpc_address": rpc, "http_address": http, "edits_dir": edits}
            for i, (rpc, http, edits) in enumerate(jn_rows(jns))
        },
        "qjournal": dict(FAST_QJOURNAL),
        "namenode": settings,
        "namenodes": {
            name: {
                "rpc_address": f"127.0.0.1:{free_port()}",
                "http_address": f"127.0.0.1:{free_port()}",
                "name_dir": str(root / name),
            }
            for name in names
        },
    }
    return config_from_dict(data, "test-config")


def write_config(cfg: ClusterConfig, path: Path) -> Path:
    """Write cfg as TOML for the CLI."""
    path.write_text(dump_config(cfg))
    return path


async def format_cluster(cfg: ClusterConfig, name: str = "nn1") -> None:
    """`qjm namenode format`: a new namespace in name's dir and on the shared journal."""
    from qjm.client.admin import new_namespace_info
    from qjm.namenode.admin import format_namenode
    from qjm.protocol.namespace import NamespaceInfo

    info = NamespaceInfo.from_proto(new_namespace_info(cluster_id="CID-nn-test"))
    await format_namenode(cfg, name, ns_info=info)


def copy_name_dir(cfg: ClusterConfig, src: str, dst: str) -> None:
    """Bootstrap dst from src's name dir by copying it (src must not be running)."""
    a = Path(cfg.namenode_named(src).name_dir) / "current"
    b = Path(cfg.namenode_named(dst).name_dir) / "current"
    shutil.copytree(a, b)


async def start_nn(cfg: ClusterConfig, name: str) -> NameNode:
    """A started NameNode object (standby)."""
    nn = NameNode(cfg, name)
    await nn.start()
    return nn


class Rpc:
    """ClientProtocol and HAServiceProtocol calls to one NameNode over real IPC."""

    def __init__(self, address: str, user: str | None = None) -> None:
        user = user or os_user()  # the NameNode's own user: a superuser
        self.client = IpcClient(address, CLIENT_PROTOCOL, user=user, reconnect_attempts=1)
        self.ha = IpcClient(address, HA_SERVICE_PROTOCOL, user=user, reconnect_attempts=1)

    async def close(self) -> None:
        """Close both connections."""
        await self.client.close()
        await self.ha.close()

    async def mkdirs(self, path: str, mode: int = 0o755, parents: bool = True) -> bool:
        """mkdirs; returns the result flag."""
        req = cn.MkdirsRequestProto(
            src=path, masked=hdfs.FsPermissionProto(perm=mode), createParent=parents
        )
        resp = await self.client.call("mkdirs", req, cn.MkdirsResponseProto, 10.0)
        return bool(resp.result)

    async def stat(self, path: str) -> Any:
        """getFileInfo; the HdfsFileStatusProto or None."""
        resp = await self.client.call(
            "getFileInfo", cn.GetFileInfoRequestProto(src=path), cn.GetFileInfoResponseProto, 10.0
        )
        return resp.fs if resp.HasField("fs") else None

    async def touch(self, path: str, client: str = "test-client") -> int:
        """create + complete an empty file; returns its file id."""
        req = cn.CreateRequestProto(
            src=path,
            masked=hdfs.FsPermissionProto(perm=0o644),
            clientName=client,
            createFlag=cn.CREATE,
            createParent=True,
            replication=1,
            blockSize=134217728,
        )
        resp = await self.client.call("create", req, cn.CreateResponseProto, 10.0)
        file_id = int(resp.fs.fileId)
        done = await self.client.call(
            "complete",
            cn.CompleteRequestProto(src=path, clientName=client, fileId=file_id),
            cn.CompleteResponseProto,
            10.0,
        )
        assert done.result
        return file_id

    async def delete(self, path: str, recursive: bool = True) -> bool:
        """delete; returns the result flag."""
        resp = await self.client.call(
            "delete",
            cn.DeleteRequestProto(src=path, recursive=recursive),
            cn.DeleteResponseProto,
            10.0,
        )
        return bool(resp.result)

    async def state(self) -> int:
        """getServiceStatus: the HAServiceStateProto number."""
        resp = await self.ha.call(
            "getServiceStatus",
            hap.GetServiceStatusRequestProto(),
            hap.GetServiceStatusResponseProto,
        )
        return int(resp.state)

    async def transition_to_standby(self) -> None:
        """transitionToStandby by the user."""
        info = hap.HAStateChangeRequestInfoProto(reqSource=hap.REQUEST_BY_USER)
        await self.ha.call(
            "transitionToStandby",
            hap.TransitionToStandbyRequestProto(reqInfo=info),
            hap.TransitionToStandbyResponseProto,
            30.0,
        )

    async def transition_to_active(self) -> None:
        """transitionToActive by the user."""
        info = hap.HAStateChangeRequestInfoProto(reqSource=hap.REQUEST_BY_USER)
        await self.ha.call(
            "transitionToActive",
            hap.TransitionToActiveRequestProto(reqInfo=info),
            hap.TransitionToActiveResponseProto,
            30.0,
        )


def tree(nn: NameNode) -> dict[str, tuple[Any, ...]]:
    """Every path of nn's namespace with its attributes (as a superuser sees them)."""
    return ns_tree(nn.ns)


def ns_tree(ns: Any) -> dict[str, tuple[Any, ...]]:
    """Every path of a Namespace with its attributes."""
    out: dict[str, tuple[Any, ...]] = {}
    root = ns.stat("/", SUPER)
    assert root is not None
    out["/"] = _row(root)
    stack = ["/"]
    while stack:
        d = stack.pop()
        after = ""
        while True:
            got = ns.listing(d, SUPER, after, 1000)
            assert got is not None, f"listing {d} vanished"
            entries, remaining = got
            for st in entries:
                path = (d.rstrip("/") + "/" + st.name) if d != "/" else "/" + st.name
                out[path] = _row(st)
                if st.is_dir:
                    stack.append(path)
            if not remaining or not entries:
                break
            after = entries[-1].name
    return out


def _row(st: Any) -> tuple[Any, ...]:
    return (
        st.is_dir,
        st.length,
        st.permission,
        st.owner,
        st.group,
        st.mtime,
        st.replication,
        st.block_size,
        st.file_id,
        st.under_construction,
    )


class DaemonProcess:
    """`python -m qjm KIND --config C --id N` as a child process with a ready file."""

    kind = ""

    def __init__(self, config: Path, name: str, workdir: Path) -> None:
        self.config = config
        self.name = name
        self.ready = workdir / f"{name}.ready"
        self.log = workdir / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the process."""
        self.ready.unlink(missing_ok=True)
        env = dict(os.environ, PYTHONPATH=str(SRC), QJM_EVENT_LOOP="asyncio")
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "qjm",
                    self.kind,
                    "--config",
                    str(self.config),
                    "--id",
                    self.name,
                    "--ready-file",
                    str(self.ready),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
            )

    async def wait_ready(self, within: float = 30.0) -> dict[str, Any]:
        """Wait for the ready file; fails naming the log when the process exits first."""
        deadline = time.monotonic() + within
        assert self.proc is not None
        while not self.ready.exists():
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"{self.name} exited {self.proc.returncode}: {self.log.read_text()[-3000:]}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name} not ready in {within}s: {self.log.read_text()}")
            await asyncio.sleep(0.05)  # poll interval of a bounded wait
        data: dict[str, Any] = json.loads(self.ready.read_text())
        return data

    async def wait_exit(self, within: float = 30.0) -> int:
        """Wait for the process to exit; its exit code."""
        assert self.proc is not None
        deadline = time.monotonic() + within
        while self.proc.poll() is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name} still running after {within}s")
            await asyncio.sleep(0.05)  # poll interval of a bounded wait
        return int(self.proc.returncode)

    def stop(self) -> int | None:
        """SIGTERM then SIGKILL after 10 s; the exit code."""
        p = self.proc
        if p is None:
            return None
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
        return p.returncode

    def kill(self) -> None:
        """SIGKILL and reap."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


class NNProcess(DaemonProcess):
    """A NameNode as a child process."""

    kind = "namenode"


class DNProcess(DaemonProcess):
    """A DataNode as a child process."""

    kind = "datanode"
