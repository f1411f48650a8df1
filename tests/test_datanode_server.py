"""The `qjm datanode` daemon as a real process (design §B.13), against two NameNode-side
DatanodeProtocol services run in the test process over qjm.ipc (the block management behind
them is the small recording one of test_datanode_protocol: the unit under test is the
DataNode)."""

from __future__ import annotations

import asyncio
import json
import os
import random
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nn_harness import DNProcess
from ports import free_port
from qjm.datanode import transfer_client as tc
from qjm.datanode.replica_store import ExtendedBlock
from qjm.hdfs import datanode_protocol as wire
from qjm.hdfs.datanode_protocol import (
    CLIENT_DATANODE_PROTOCOL,
    Block,
    BlockStatus,
    HAState,
    InvalidateCommand,
)
from qjm.hdfs.proto import ClientDatanodeProtocol_pb2 as cdp
from qjm.hdfs.proto import hdfs_pb2
from qjm.ipc import IpcClient
from qjm.testing.wait import wait_until_async
from test_datanode_protocol import POOL, FakeNameNode

SRC = Path(__file__).resolve().parent.parent / "src"


async def until(cond: Callable[[], Any], what: str, limit_s: float = 30.0) -> None:
    """Wait (bounded) until cond holds."""
    await wait_until_async(what, cond, timeout_s=limit_s)


def write_config(path: Path, data_dir: Path, namenodes: dict[str, str]) -> None:
    rows = [
        "[cluster]",
        'nameservice = "ns1"',
        'journal_id = "ns1"',
        "[journalnodes.jn1]",
        f'rpc_address = "127.0.0.1:{free_port()}"',
        f'http_address = "127.0.0.1:{free_port()}"',
        f'edits_dir = "{path.parent / "jn1"}"',
        "[datanode]",
        "heartbeat_interval_ms = 100",
    ]
    for name, address in namenodes.items():
        rows += [
            f"[namenodes.{name}]",
            f'rpc_address = "{address}"',
            f'http_address = "127.0.0.1:{free_port()}"',
            f'name_dir = "{path.parent / name}"',
        ]
    for dn in ("dn1", "dn2"):  # dn2 shares dn1's data dir: it must be refused
        rows += [
            f"[datanodes.{dn}]",
            f'transfer_address = "127.0.0.1:{free_port()}"',
            f'ipc_address = "127.0.0.1:{free_port()}"',
            f'http_address = "127.0.0.1:{free_port()}"',
            f'data_dirs = "{data_dir}"',
        ]
    path.write_text("\n".join(rows) + "\n")


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return str(resp.read().decode())


def _node(transfer: str) -> hdfs_pb2.DatanodeInfoProto:
    host, port = transfer.rsplit(":", 1)
    return hdfs_pb2.DatanodeInfoProto(
        id=hdfs_pb2.DatanodeIDProto(
            ipAddr=host, hostName="localhost", datanodeUuid="x", xferPort=int(port)
        )
    )


@pytest.mark.slow
async def test_datanode_process_registers_stores_obeys_the_active_and_stops(
    tmp_path: Path,
) -> None:
    nn1 = FakeNameNode(HAState.ACTIVE, 100)
    nn2 = FakeNameNode(HAState.STANDBY, 90)
    await nn1.start(free_port())
    await nn2.start(free_port())
    config = tmp_path / "cluster.toml"
    write_config(config, tmp_path / "data", {"nn1": nn1.address, "nn2": nn2.address})
    dn = DNProcess(config, "dn1", tmp_path)
    dn.start()
    try:
        ready = await dn.wait_ready()
        assert set(ready) >= {"pid", "rpc", "http", "transfer"}
        # registration, heartbeats and a full report at both NameNodes
        for nn in (nn1, nn2):
            await until(lambda nn=nn: nn.blocks.reports and nn.blocks.heartbeats >= 2, "reports")
            (reg,) = nn.blocks.registered.values()
            assert reg.datanode.xfer_port == int(ready["transfer"].rsplit(":", 1)[1])
        assert (tmp_path / "data" / "current" / POOL / "current" / "finalized").is_dir()

        # a block written through the transfer port is reported and reads back byte-identical
        data = random.Random(5).randbytes(150_001)
        block = ExtendedBlock(POOL, 1 << 30 | 1, 1001)
        node = _node(ready["transfer"])
        written = await tc.write_block([node], block, data)
        for nn in (nn1, nn2):
            await until(
                lambda nn=nn: any(
                    (b.block.block_id, b.status, b.block.num_bytes)
                    == (block.block_id, BlockStatus.RECEIVED, len(data))
                    for c in nn.blocks.changes
                    for b in c.blocks
                ),
                "the incremental report of the block",
            )
        assert await tc.read_block(node, written, 0, len(data)) == data
        client = IpcClient(ready["rpc"], CLIENT_DATANODE_PROTOCOL)
        try:
            req = cdp.GetReplicaVisibleLengthRequestProto(
                block=wire.extended_block_to_proto(wire.ExtendedBlock(POOL, block.block_id, 1001))
            )
            reply = await client.call(
                "getReplicaVisibleLength", req, cdp.GetReplicaVisibleLengthResponseProto, timeout=5
            )
            assert reply.length == len(data)
        finally:
            await client.close()

        # /status and /metrics
        base = f"http://{ready['http']}"
        await until(  # space is measured off the loop once per heartbeat interval
            lambda: json.loads(_get(base + "/status"))["volumes"][0]["used"] > len(data),
            "the volume's space to count the replica",
        )
        status = json.loads(await asyncio.to_thread(_get, base + "/status"))
        assert status["name"] == "dn1" and status["uuid"] == reg.datanode.datanode_uuid
        assert status["cluster_id"] == "CID-test" and status["block_pool_id"] == POOL
        assert status["replicas"]["FINALIZED"] == 1
        (vol,) = status["volumes"]
        assert vol["capacity"] > 0 and vol["used"] > len(data) and vol["failed"] is None
        assert status["namenodes"]["nn1"]["ha_state"] == "ACTIVE"
        assert status["namenodes"]["nn2"]["ha_state"] == "STANDBY"
        assert status["namenodes"]["nn1"]["registered"] is True
        assert status["namenodes"]["nn1"]["seconds_since_full_report"] is not None
        text = await asyncio.to_thread(_get, base + "/metrics")
        for name in (
            "qjm_datanode_bytes_written_total 150001.0",
            "qjm_datanode_blocks_written_total 1.0",
            'qjm_datanode_heartbeats_total{namenode="nn2"}',
            'qjm_datanode_full_reports_total{namenode="nn1"}',
            "qjm_datanode_volume_remaining_bytes{",
            "qjm_datanode_volumes_failed 0.0",
            'qjm_datanode_xceiver_ops_total{op="WRITE_BLOCK"} 1.0',
        ):
            assert name in text, name
        assert "DataNode dn1" in await asyncio.to_thread(_get, base + "/")

        # the standby's DNA_INVALIDATE is not executed; the active's deletes the replica
        kill = InvalidateCommand(POOL, (Block(block.block_id, 1001, len(data)),))
        nn2.blocks.queued.append(kill)
        await until(
            lambda: json.loads(_get(base + "/status"))["commands_dropped"] >= 1,
            "the standby's command dropped",
        )
        assert await tc.read_block(node, written, 0, 10) == data[:10]
        nn1.blocks.queued.append(kill)
        await until(
            lambda: any(
                b.status == BlockStatus.DELETED for c in nn1.blocks.changes for b in c.blocks
            ),
            "the deletion reported",
        )
        with pytest.raises(tc.BlockReadError):
            await tc.read_block(node, written, 0, 10)
        assert not list((tmp_path / "data").rglob(f"blk_{block.block_id}*"))

        # a second DataNode on the same data directory is refused with the lock error
        second = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "qjm", "datanode", "--config", str(config), "--id", "dn2"],
            capture_output=True,
            text=True,
            timeout=60,
            env=dict(os.environ, PYTHONPATH=str(SRC)),
        )
        assert second.returncode == 1
        assert "in use by another process" in second.stderr and "Traceback" not in second.stderr

        # SIGTERM: a clean exit
        assert dn.proc is not None
        dn.proc.terminate()
        assert await dn.wait_exit() == 0
    finally:
        dn.kill()
        await nn1.stop()
        await nn2.stop()


def test_bad_config_and_a_taken_port_are_one_line_errors(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(SRC))
    config = tmp_path / "cluster.toml"
    write_config(config, tmp_path / "data", {"nn1": f"127.0.0.1:{free_port()}"})
    run = subprocess.run(
        [sys.executable, "-m", "qjm", "datanode", "--config", str(config), "--id", "dn9"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert run.returncode == 1 and "no [datanodes.dn9] section" in run.stderr
    text = config.read_text()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        start = text.index("[datanodes.dn1]")
        head, tail = text[:start], text[start:]
        line = next(x for x in tail.splitlines() if x.startswith("ipc_address"))
        config.write_text(head + tail.replace(line, f'ipc_address = "127.0.0.1:{port}"', 1))
        run = subprocess.run(
            [sys.executable, "-m", "qjm", "datanode", "--config", str(config), "--id", "dn1"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
    assert run.returncode == 1, run.stderr
    assert f"cannot listen for IPC on 127.0.0.1:{port}" in run.stderr
    assert "Traceback" not in run.stderr
