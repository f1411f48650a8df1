"""Blocks survive what DataNodes and disks do, judged by the genuine clients against real
processes: a DataNode of a write pipeline killed mid-file, a DataNode holding many blocks
killed while its files are read, bytes flipped on disk (found by a reader or by the block
scanner), and the operator views (fsck, dfsadmin -report, the Java API's DataNode and
corrupt-file lists) of what is damaged or missing. One manual-HA cluster of 2 NameNodes and
5 DataNodes, with HDFS's heartbeat recheck and scan period shortened so that a killed
DataNode is dead, and a damaged replica found, within seconds.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hdfs_native
import pytest

from conftest import run_qjm
from hadoop_clients import (
    block_locations,
    check,
    hadoop_fs,
    java,
    java_program,
    native_client,
    run_java,
    user,
)
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
# dead after 5 s, then the copies: the redundancy monitor runs every 1 s (HDFS: 3 s), and each
# DataNode copies at most a few blocks per heartbeat (dfs.namenode.replication.max-streams)
RESTORE_S = 120.0
# the block scanner reads each replica back every 5 s, at 16 MiB/s per DataNode (HDFS's
# defaults: 3 weeks and 1 MiB/s)
SCAN_RATE = 16 << 20
SCAN_PERIOD_MS = 5000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """nn1 active, nn2 standby, 5 DataNodes of two data directories each (one may fail) that
    heartbeat every 0.3 s and scan their replicas every 5 s; 1 MiB blocks."""
    directory = tmp_path_factory.mktemp("block-safety") / "c"
    info = cluster_up(
        directory,
        journalnodes=3,
        namenodes=2,
        base_port=free_port_block(10 + 3 * DATANODES),
        namenode_settings=NameNodeSettings(block_size=BLOCK, redundancy_interval_ms=1000),
        datanodes=DATANODES,
        datanode_settings=DataNodeSettings(
            heartbeat_interval_ms=HEARTBEAT_MS,
            heartbeat_recheck_ms=RECHECK_MS,
            safemode_extension_ms=1000,
            scan_bytes_per_second=SCAN_RATE,
            scan_period_ms=SCAN_PERIOD_MS,
            failed_volumes_tolerated=1,
        ),
        datanode_dirs=2,
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


def flip_everywhere(cluster_dir: Path, block_id: int, offset: int) -> list[str]:
    """Flip one bit at offset in every finalized replica of block_id; the DataNodes."""
    files = replica_files(cluster_dir, block_id)
    for path in files.values():
        raw = bytearray(path.read_bytes())
        raw[offset] ^= 0x08
        path.write_bytes(bytes(raw))
    return sorted(files)


def scanner_status(cluster: dict[str, Any], dn: str) -> dict[str, Any]:
    """The scanner part of a DataNode's /status."""
    with urllib.request.urlopen(f"http://{cluster[dn]['http']}/status", timeout=10) as r:
        return json.load(r)["scanner"]  # type: ignore[no-any-return]


def test_the_block_scanner_finds_a_byte_flipped_in_a_replica_no_one_reads(
    cluster: dict[str, Any],
) -> None:
    """No reader comes: the DataNode's scanner reads the replica back within its period,
    reports it, and the NameNode has a good copy made and the bad one deleted."""
    conf = Path(cluster["hadoop_conf"])
    cluster_dir = conf.parent
    data = random.Random(41).randbytes(300_000)
    w = native_client(conf).create("/scanned", hdfs_native.WriteOptions(replication=2))
    w.write(data)
    w.close()
    [located] = block_locations(cluster["nn1"]["rpc"], "/scanned").blocks
    block_id = located.b.blockId
    wait_until(
        "both replicas on disk",
        lambda: len(replica_files(cluster_dir, block_id)) == 2,
        timeout_s=30.0,
    )
    damaged = sorted(replica_files(cluster_dir, block_id))[0]
    found_before = scanner_status(cluster, damaged)["corrupt_found"]
    target = replica_files(cluster_dir, block_id)[damaged]
    raw = bytearray(target.read_bytes())
    raw[123_457] ^= 0x01
    target.write_bytes(bytes(raw))

    def replaced() -> bool:
        files = replica_files(cluster_dir, block_id)
        return (
            damaged not in files
            and len(files) == 2
            and all(p.read_bytes() == data for p in files.values())
        )

    wait_until(
        "the scanner's find replaced by a good copy",
        replaced,
        timeout_s=SCAN_PERIOD_MS / 1000 * 6 + 30,
    )
    assert scanner_status(cluster, damaged)["corrupt_found"] > found_before
    with native_client(conf).read("/scanned") as f:
        assert bytes(f.read()) == data


VIEWS_JAVA = """
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.HdfsConstants.DatanodeReportType;

public class Views {
  public static void main(String[] args) throws Exception {
    DistributedFileSystem fs = (DistributedFileSystem) FileSystem.get(new Configuration());
    for (DatanodeInfo d : fs.getDataNodeStats(DatanodeReportType.LIVE)) {
      System.out.println("live\\t" + d.getXferAddr() + "\\t" + d.getNumBlocks());
    }
    for (DatanodeInfo d : fs.getDataNodeStats(DatanodeReportType.DEAD)) {
      System.out.println("dead\\t" + d.getXferAddr());
    }
    RemoteIterator<Path> corrupt = fs.listCorruptFileBlocks(new Path(args[0]));
    while (corrupt.hasNext()) {
      System.out.println("corrupt\\t" + corrupt.next().toUri().getPath());
    }
  }
}
"""


def java_views(classes: Path, conf: Path, path: str) -> dict[str, list[list[str]]]:
    """What the genuine DistributedFileSystem API reports: live and dead DataNodes
    (getDataNodeStats) and the files under path with corrupt blocks (listCorruptFileBlocks)."""
    out: dict[str, list[list[str]]] = {"live": [], "dead": [], "corrupt": []}
    for line in check(run_java(classes, "Views", conf, path)).splitlines():
        kind, *rest = line.split("\t")
        out[kind].append(rest)
    return out


def http_text(url: str) -> str:
    """The body of a GET."""
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read().decode()  # type: ignore[no-any-return]


def nn_datanodes(cluster: dict[str, Any]) -> dict[str, str]:
    """Transfer address -> live or dead, as the active NameNode's /status shows them."""
    st = json.loads(http_text(f"http://{cluster['nn1']['http']}/status"))
    return {d["transfer_address"]: d["state"] for d in st["datanodes"]}


def fsck(cluster: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    """`qjm fsck` against the cluster."""
    return run_qjm("fsck", "--config", str(cluster["config"]), *args)


def test_fsck_dfsadmin_and_the_java_api_report_damaged_and_missing_blocks(
    cluster: dict[str, Any], tmp_path: Path
) -> None:
    """The operator views: `qjm fsck` and `qjm dfsadmin -report` in HDFS's text, and the
    genuine Java API (getDataNodeStats, listCorruptFileBlocks) show a healthy subtree, then
    a block whose every replica is reported corrupt, a block whose only DataNode died, and
    an under-replicated one; a standby and a non-superuser get HDFS's refusals."""
    conf = Path(cluster["hadoop_conf"])
    classes = java_program(VIEWS_JAVA, tmp_path)
    live = [a for a, state in nn_datanodes(cluster).items() if state == "live"]
    client = native_client(conf)
    sizes = {"/views/ok": BLOCK + BLOCK // 2, "/views/damaged": 70_000, "/views/lost": 50_000}
    repl = {"/views/ok": len(live), "/views/damaged": 2, "/views/lost": 1}
    for path, size in sizes.items():
        w = client.create(
            path, hdfs_native.WriteOptions(replication=repl[path], create_parent=True)
        )
        w.write(random.Random(path).randbytes(size))
        w.close()
    wait_until(
        "every block of /views fully replicated",
        lambda: all(
            [len(locs) for locs in locations(cluster, p)] == [repl[p]] * len(locations(cluster, p))
            for p in sizes
        ),
        timeout_s=60.0,
    )
    healthy = fsck(cluster, "/views", "-files", "-blocks", "-locations")
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert healthy.stdout.rstrip().endswith("The filesystem under path '/views' is HEALTHY")
    assert (
        f"/views/ok {sizes['/views/ok']} bytes, replicated: replication={len(live)}, "
        "2 block(s):  OK" in healthy.stdout
    )
    assert " Total files:\t3\n" in healthy.stdout
    assert " Total blocks (validated):\t4 (avg. block size " in healthy.stdout
    assert healthy.stdout.count("DatanodeInfoWithStorage[") == 2 * len(live) + 2 + 1

    # a byte flipped in both replicas of /views/damaged: the scanners find them
    [damaged] = block_locations(cluster["nn1"]["rpc"], "/views/damaged").blocks
    flip_everywhere(conf.parent, damaged.b.blockId, 4321)
    # /views/lost's only DataNode dies
    [lost] = block_locations(cluster["nn1"]["rpc"], "/views/lost").blocks
    lost_at = f"{lost.locs[0].id.ipAddr}:{lost.locs[0].id.xferPort}"
    kill_datanode(cluster, datanode_by_transfer(cluster, lost_at))
    cluster["killed"] = [*cluster.get("killed", []), lost_at]
    wait_until(
        f"{lost_at} dead to the active",
        lambda: nn_datanodes(cluster).get(lost_at) == "dead",
        timeout_s=30.0,
    )
    corrupt_url = (
        f"http://{cluster['nn1']['http']}/fsck?ugi={user()}&listcorruptfileblocks=1&path=/views"
    )
    wait_until(
        "both of /views/damaged's replicas found corrupt by the scanners",
        lambda: "has 2 CORRUPT files" in http_text(corrupt_url),
        timeout_s=60.0,
    )
    # the genuine DistributedFileSystem API sees the same
    views = java_views(classes, conf, "/views")
    assert sorted(p for [p] in views["corrupt"]) == ["/views/damaged", "/views/lost"]
    assert [lost_at] in views["dead"]
    assert sorted(a for a, _ in views["live"]) == sorted(set(live) - {lost_at})

    bad = fsck(cluster, "/views")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    text = bad.stdout
    assert text.rstrip().endswith("The filesystem under path '/views' is CORRUPT")
    assert f"/views/lost: MISSING 1 blocks of total size {sizes['/views/lost']} B." in text
    assert f"/views/damaged: CORRUPT blockpool {damaged.b.poolId} block blk_" in text
    assert " Under replicated " in text and f"Target Replicas is {len(live)} but found" in text
    assert " Missing blocks:\t\t1\n" in text and " Corrupt blocks:\t\t1\n" in text
    listed = fsck(cluster, "/", "-list-corruptfileblocks")
    assert listed.returncode == 1, listed.stdout
    rows = [line.split("\t") for line in listed.stdout.splitlines() if line.startswith("blk_")]
    assert sorted(p for _, p in rows) == ["/views/damaged", "/views/lost"]
    assert "has 2 CORRUPT files" in listed.stdout

    report = run_qjm("dfsadmin", "--config", str(cluster["config"]), "-report")
    assert report.returncode == 0, report.stderr
    assert f"Live datanodes ({len(live) - 1}):" in report.stdout
    dead_part = report.stdout.split("Dead datanodes (")[1]
    assert f"Name: {lost_at} " in dead_part
    assert "\tMissing blocks: 2\n" in report.stdout
    assert "\tMissing blocks (with replication factor 1): 1\n" in report.stdout

    # HDFS's refusals: a standby's report fails, and fsck is for the superuser
    standby = http_text(f"http://{cluster['nn2']['http']}/fsck?ugi={user()}&path=/views")
    assert standby.rstrip().endswith("Fsck on path '/views' FAILED"), standby
    assert "not supported in state standby" in standby
    stranger = fsck(cluster, "--user", "mallory", "/views")
    assert stranger.returncode == 255
    assert "Access denied for user mallory. Superuser privilege is required" in stranger.stdout


def test_a_failed_data_volume_is_tolerated_then_one_more_stops_the_datanode(
    cluster: dict[str, Any],
) -> None:
    """One of a DataNode's two data directories vanishes: the DataNode serves on from the
    other, the NameNode drops the lost replicas and has them copied back; a second failure,
    past datanode.failed_volumes_tolerated (1), stops the DataNode with the reason."""
    conf = Path(cluster["hadoop_conf"])
    cluster_dir = conf.parent
    client = native_client(conf)
    files = {f"/vol/f{i}": random.Random(i).randbytes(200_000 + i) for i in range(12)}
    for path, data in files.items():
        w = client.create(path, hdfs_native.WriteOptions(replication=2, create_parent=True))
        w.write(data)
        w.close()
    dead = set(cluster.get("killed", []))
    state = nn_datanodes(cluster)
    live = [
        n
        for n, d in cluster.items()
        if isinstance(d, dict)
        and state.get(d.get("transfer", "")) == "live"
        and d["transfer"] not in dead
    ]
    ids = {p: b.b.blockId for p in files for b in block_locations(cluster["nn1"]["rpc"], p).blocks}

    def volume_of(dn: str, block_id: int) -> str | None:
        for path in (cluster_dir / "data" / dn).glob(f"d*/**/finalized/**/blk_{block_id}"):
            return path.relative_to(cluster_dir / "data" / dn).parts[0]
        return None

    wait_until(
        "every replica of /vol on disk",
        lambda: sum(len(replica_files(cluster_dir, b)) for b in ids.values()) == 2 * len(ids),
        timeout_s=30.0,
    )
    held = {(dn, volume_of(dn, b)): 0 for dn in live for b in ids.values()}
    for b in ids.values():
        for dn in live:
            v = volume_of(dn, b)
            if v is not None:
                held[(dn, v)] += 1
    (victim, volume), lost = max(held.items(), key=lambda kv: kv[1])
    assert lost > 0 and volume is not None
    pid = int(cluster[victim]["pid"])
    shutil.rmtree(cluster_dir / "data" / victim / volume)

    def failed_volumes() -> list[dict[str, str]]:
        url = f"http://{cluster[victim]['http']}/status"
        return json.loads(http_text(url))["failed_volumes"]  # type: ignore[no-any-return]

    [failed] = wait_until(f"{victim} to notice its {volume} gone", failed_volumes, 30.0)
    assert failed["path"] == str(cluster_dir / "data" / victim / volume)
    wait_restored_to(
        cluster,
        files,
        2,
        failed["storage_id"],
        what=f"/vol on 2 replicas, none on {victim}'s failed {volume}",
    )
    assert pid_alive(pid), f"{victim} stopped, though one failed volume is tolerated"
    for path, data in files.items():
        with client.read(path) as f:
            assert bytes(f.read()) == data

    other = "d2" if volume == "d1" else "d1"
    shutil.rmtree(cluster_dir / "data" / victim / other)
    wait_until(f"{victim} stopped by its second failed volume", lambda: not pid_alive(pid), 30.0)
    log = Path(cluster[victim]["log"]).read_text(errors="replace")
    assert "2 data volume(s) failed, 1 tolerated (datanode.failed_volumes_tolerated)" in log


def wait_restored_to(
    cluster: dict[str, Any], files: dict[str, bytes], n: int, gone: str, *, what: str
) -> None:
    """Wait until every block of files has n locations on live DataNodes, none on the
    storage gone."""
    dead = set(cluster.get("killed", []))

    def done() -> bool:
        for p in files:
            for b in block_locations(cluster["nn1"]["rpc"], p).blocks:
                where = {f"{loc.id.ipAddr}:{loc.id.xferPort}" for loc in b.locs}
                if len(b.locs) != n or dead & where or gone in b.storageIDs:
                    return False
        return True

    wait_until(what, done, timeout_s=RESTORE_S)
