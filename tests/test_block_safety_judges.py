"""Blocks survive what DataNodes do, judged by the genuine FsShell against real processes:
a DataNode of a write pipeline killed mid-file, and a DataNode holding many blocks killed
while its files are read. One manual-HA cluster of 2 NameNodes and 5 DataNodes, with
HDFS's heartbeat recheck shortened so a killed DataNode is dead within seconds.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hdfs_native
import pytest

from hadoop_clients import block_locations, check, hadoop_fs, java, native_client, user
from ports import free_port_block
from qjm.cluster.hadoop_conf import fsshell_argv
from qjm.cluster.launcher import cluster_down, cluster_up
from qjm.cluster.process import pid_alive
from qjm.config import DataNodeSettings, NameNodeSettings
from qjm.testing.wait import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

MIB = 1024 * 1024
BLOCK = MIB
DATANODES = 5
HEARTBEAT_MS = 300
RECHECK_MS = 1000  # dead after 2 x 1 s + 10 x 0.3 s = 5 s without a heartbeat
# dead after 5 s, then the copies: HDFS's redundancy monitor runs every 3 s, and each
# DataNode copies at most a few blocks per heartbeat (dfs.namenode.replication.max-streams)
RESTORE_S = 120.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """nn1 active, nn2 standby, 5 DataNodes that heartbeat every 0.3 s; 1 MiB blocks."""
    directory = tmp_path_factory.mktemp("block-safety") / "c"
    info = cluster_up(
        directory,
        journalnodes=3,
        namenodes=2,
        base_port=free_port_block(10 + 3 * DATANODES),
        namenode_settings=NameNodeSettings(block_size=BLOCK),
        datanodes=DATANODES,
        datanode_settings=DataNodeSettings(
            heartbeat_interval_ms=HEARTBEAT_MS,
            heartbeat_recheck_ms=RECHECK_MS,
            safemode_extension_ms=1000,
        ),
    )
    try:
        yield info
    finally:
        cluster_down(directory)


def datanode_by_transfer(cluster: dict[str, Any], address: str) -> str:
    """The name (dnN) of the DataNode whose transfer address is address."""
    [name] = [
        n
        for n, d in cluster.items()
        if isinstance(d, dict) and d.get("kind") == "datanode" and d.get("transfer") == address
    ]
    return name


def locations(cluster: dict[str, Any], path: str) -> list[list[str]]:
    """The transfer addresses of each block of path, as the active NameNode lists them."""
    located = block_locations(cluster["nn1"]["rpc"], path)
    return [[f"{loc.id.ipAddr}:{loc.id.xferPort}" for loc in b.locs] for b in located.blocks]


def kill_datanode(cluster: dict[str, Any], name: str) -> str:
    """kill -9 the DataNode name; its transfer address."""
    pid = int(cluster[name]["pid"])
    os.kill(pid, signal.SIGKILL)
    wait_until(f"{name} gone", lambda: not pid_alive(pid), timeout_s=10.0)
    return str(cluster[name]["transfer"])


def restored(cluster: dict[str, Any], paths: list[str], dead: set[str]) -> bool:
    """Every block of paths has 3 replicas, none on a dead DataNode."""
    for path in paths:
        for locs in locations(cluster, path):
            if len(locs) != 3 or dead & set(locs):
                return False
    return True


def wait_restored(cluster: dict[str, Any], paths: list[str], dead: set[str], what: str) -> None:
    """Wait until restored; the failure names the blocks that are not, and where they are."""
    try:
        wait_until(what, lambda: restored(cluster, paths, dead), timeout_s=RESTORE_S)
    except AssertionError as exc:
        short = {
            f"{path}#{i}": locs
            for path in paths
            for i, locs in enumerate(locations(cluster, path))
            if len(locs) != 3 or dead & set(locs)
        }
        raise AssertionError(f"{exc}; dead {sorted(dead)}; not restored: {short}") from None


def test_fsshell_put_survives_a_pipeline_datanode_killed_mid_file(
    cluster: dict[str, Any], tmp_path: Path
) -> None:
    """The genuine client's pipeline recovery (updateBlockForPipeline, updatePipeline, a new
    generation stamp) against ours: the put exits 0, the file reads back byte-identical, and
    every block is back on 3 live DataNodes."""
    conf = Path(cluster["hadoop_conf"])
    data = random.Random(23).randbytes(24 * MIB + 4321)
    half = 12 * MIB + MIB // 2  # the client waits for more input inside its 13th block
    argv = fsshell_argv(conf, "-D", "dfs.replication=3", "-put", "-", "/piped", java=java())
    env = {**os.environ, "HADOOP_CONF_DIR": str(conf), "HADOOP_USER_NAME": user()}
    log = tmp_path / "put.err"
    with open(log, "wb") as err:
        put = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err, env=env
        )
    try:
        assert put.stdin is not None
        put.stdin.write(data[:half])
        put.stdin.flush()
        # the client is mid-file, waiting for input: its 13th block has a pipeline of 3
        wait_until(
            "the put's 13th block",
            lambda: len(locations(cluster, "/piped._COPYING_")) >= 13,
            timeout_s=120.0,
        )
        current = block_locations(cluster["nn1"]["rpc"], "/piped._COPYING_").blocks[-1]
        pipeline = [f"{loc.id.ipAddr}:{loc.id.xferPort}" for loc in current.locs]
        assert len(pipeline) == 3, pipeline
        names = [datanode_by_transfer(cluster, a) for a in pipeline]

        def streaming() -> bool:  # every node of the pipeline holds some of the block
            rbw = {
                p.relative_to(conf.parent / "data").parts[0]: p.stat().st_size
                for p in (conf.parent / "data").glob(f"dn*/**/rbw/blk_{current.b.blockId}")
            }
            return all(rbw.get(n, 0) >= 256 * 1024 for n in names)

        wait_until("the 13th block streaming to its 3 DataNodes", streaming, timeout_s=60.0)
        victim = names[1]
        killed = kill_datanode(cluster, victim)
        try:
            put.stdin.write(data[half:])
            put.stdin.close()
        except BrokenPipeError:
            code = put.wait(30)
            raise AssertionError(
                f"the put stopped reading its input (exit {code}): "
                f"{log.read_text(errors='replace')[-3000:]}"
            ) from None
        put.wait(180)
    finally:
        if put.poll() is None:
            put.kill()
            put.wait(30)
    assert put.returncode == 0, log.read_text(errors="replace")[-3000:]
    after_put = block_locations(cluster["nn1"]["rpc"], "/piped").blocks
    assert len(after_put) == 25
    # the client recovered the pipeline it lost a DataNode from: a new generation stamp
    [recovered] = [b.b for b in after_put if b.b.blockId == current.b.blockId]
    assert recovered.generationStamp > current.b.generationStamp

    cat = subprocess.run(
        fsshell_argv(conf, "-cat", "/piped", java=java()),
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert cat.returncode == 0, cat.stderr.decode()[-3000:]
    assert hashlib.sha256(cat.stdout).hexdigest() == hashlib.sha256(data).hexdigest()

    wait_restored(cluster, ["/piped"], {killed}, "every block of /piped on 3 live DataNodes")
    cluster["killed"] = [*cluster.get("killed", []), killed]


def test_a_killed_datanodes_blocks_are_copied_back_while_reads_go_on(
    cluster: dict[str, Any],
) -> None:
    """kill -9 of a DataNode holding many blocks: every block is back on 3 live DataNodes,
    and reads of those files never fail meanwhile."""
    conf = Path(cluster["hadoop_conf"])
    client = native_client(conf)
    rng = random.Random(7)
    files = {f"/many/f{i:03d}": rng.randbytes(rng.randint(200_000, 900_000)) for i in range(60)}
    for path, data in files.items():
        w = client.create(path, hdfs_native.WriteOptions(replication=3, create_parent=True))
        w.write(data)
        w.close()
    dead = set(cluster.get("killed", []))
    wait_restored(cluster, list(files), dead, "every file on 3 live DataNodes before the kill")
    # the DataNode holding the most of these blocks
    held: dict[str, int] = {}
    for path in files:
        for locs in locations(cluster, path):
            for address in locs:
                held[address] = held.get(address, 0) + 1
    address = max(held, key=lambda a: held[a])
    victim = datanode_by_transfer(cluster, address)
    killed = kill_datanode(cluster, victim)
    dead.add(killed)

    failures: list[str] = []
    reads = 0
    stop = threading.Event()

    def read_all() -> None:
        nonlocal reads
        reader = native_client(conf)
        while not stop.is_set():
            for path, data in files.items():
                try:
                    with reader.read(path) as f:
                        if bytes(f.read()) != data:
                            failures.append(f"{path}: different bytes")
                except Exception as exc:  # any failed read is a failure of the test
                    failures.append(f"{path}: {type(exc).__name__}: {exc}")
                reads += 1
                if stop.is_set():
                    return

    reader = threading.Thread(target=read_all)
    reader.start()
    try:
        wait_restored(
            cluster, list(files), dead, f"every block {victim} held on 3 live DataNodes again"
        )
    finally:
        stop.set()
        reader.join(60)
    assert not failures, failures[:5]
    assert reads >= len(files)  # the reads went on during the recovery
    check(hadoop_fs(conf, "-test", "-e", "/many/f000"))
    cluster["killed"] = [*cluster.get("killed", []), killed]


def replica_files(cluster_dir: Path, block_id: int) -> dict[str, Path]:
    """dnN → the file of its finalized replica of block_id, for each DataNode holding one."""
    out = {}
    for path in (cluster_dir / "data").glob(f"dn*/**/finalized/**/blk_{block_id}"):
        dn = path.relative_to(cluster_dir / "data").parts[0]
        out[dn] = path
    return out


def test_a_byte_flipped_on_disk_is_read_around_and_the_replica_replaced(
    cluster: dict[str, Any],
) -> None:
    """A damaged replica: FsShell -cat still returns the right bytes (its client reports the
    replica, reportBadBlocks), and the NameNode has a good copy made and the bad one
    deleted."""
    conf = Path(cluster["hadoop_conf"])
    cluster_dir = conf.parent
    data = random.Random(31).randbytes(BLOCK - 777)
    w = native_client(conf).create("/flipped", hdfs_native.WriteOptions(replication=2))
    w.write(data)
    w.close()
    [located] = block_locations(cluster["nn1"]["rpc"], "/flipped").blocks
    block_id = located.b.blockId
    first = f"{located.locs[0].id.ipAddr}:{located.locs[0].id.xferPort}"
    damaged = datanode_by_transfer(cluster, first)  # where a reader goes first
    wait_until(
        "both replicas on disk",
        lambda: len(replica_files(cluster_dir, block_id)) == 2,
        timeout_s=30.0,
    )
    target = replica_files(cluster_dir, block_id)[damaged]
    raw = bytearray(target.read_bytes())
    raw[1000] ^= 0x40
    target.write_bytes(bytes(raw))

    cat = subprocess.run(
        fsshell_argv(conf, "-cat", "/flipped", java=java()),
        capture_output=True,
        env={**os.environ, "HADOOP_CONF_DIR": str(conf), "HADOOP_USER_NAME": user()},
        timeout=120,
        check=False,
    )
    assert cat.returncode == 0, cat.stderr.decode()[-3000:]
    assert cat.stdout == data

    def replaced() -> bool:
        files = replica_files(cluster_dir, block_id)
        locs = locations(cluster, "/flipped")[0]
        return (
            damaged not in files
            and len(files) == 2
            and all(p.read_bytes() == data for p in files.values())
            and len(locs) == 2
            and first not in locs
        )

    wait_until("the damaged replica replaced by a good copy", replaced, timeout_s=RESTORE_S)
