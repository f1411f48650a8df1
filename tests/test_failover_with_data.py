"""Failover with data: real ZooKeeper, JournalNodes, NameNodes, ZKFCs and 3 DataNodes.

Writers (hdfs-native, given only the nameservice) write files of a few MiB in blocks of
1 MiB without pause and record each acknowledged close; the active NameNode is killed with
SIGKILL among those writes; the writers go on against the new active; every acknowledged
file then reads back byte for byte. The first read on the new active (getBlockLocations
with locations, then the bytes from the DataNodes) comes within a second of its HA state
turning active (design §B.15).

A deposed active's commands are never carried out: an active that ordered replicas deleted
is frozen (SIGSTOP) before any DataNode heard of it, the other NameNode takes over and
raises the file's replication again, the frozen one is resumed; no DataNode deletes a
replica (design §B.12, §B.15).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hdfs_native
import pytest

from ha_cluster import auto_cluster, ha_states, namenode_addresses, wait_single_active
from hadoop_clients import block_locations, native_client
from qjm.cluster.launcher import read_cluster, start_daemons
from qjm.cluster.process import pid_alive, stop_pid
from qjm.config import DataNodeSettings, NameNodeSettings
from qjm.namenode.client import HAAdminClient
from qjm.namenode.types import HAState
from qjm.testing.wait import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

MIB = 1 << 20
BLOCK = MIB  # dfs.blocksize of the test: a file of a few MiB spans several blocks
WRITERS = 3
FIRST_READ_WITHIN_S = 1.0  # the new active's first read after it turned active
DEADLINE_S = 120.0  # generous: a 2-core machine shared with other test runs
HEARTBEAT_S = DataNodeSettings().heartbeat_interval_ms / 1000  # the DataNodes' here


@dataclass
class Writer:
    """One writing thread: its acknowledged files (path -> sha256, time of the ack)."""

    index: int
    conf: Path
    stop: threading.Event
    acked: dict[str, tuple[str, float]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    thread: threading.Thread | None = None

    def start(self) -> Writer:
        """Start writing in a thread."""
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()
        return self

    def run(self) -> None:
        """Write files until stopped; a failed write is recorded and the next one begins."""
        rng = random.Random(self.index)
        client = native_client(self.conf)
        n = 0
        while not self.stop.is_set():
            n += 1
            path = f"/w{self.index}/f{n}"
            data = rng.randbytes(rng.randrange(MIB + MIB // 2, 3 * MIB + MIB // 2))
            try:
                write(client, path, data)
            except Exception as e:  # the active died under this write: not acknowledged
                self.failures.append(f"{path}: {type(e).__name__}: {e}")
                client = native_client(self.conf)
                continue
            self.acked[path] = (hashlib.sha256(data).hexdigest(), time.monotonic())

    def acked_after(self, t: float) -> int:
        """How many closes were acknowledged after t."""
        return sum(1 for _, at in list(self.acked.values()) if at > t)


def write(client: hdfs_native.Client, path: str, data: bytes) -> None:
    """Create path with data (1 MiB blocks, 3 replicas) and close it."""
    options = hdfs_native.WriteOptions(block_size=BLOCK, replication=3, create_parent=True)
    writer = client.create(path, options)
    writer.write(data)
    writer.close()


def sha_of(client: hdfs_native.Client, path: str) -> str:
    """sha256 of path's bytes as client reads them."""
    reader = client.read(path)
    try:
        return hashlib.sha256(reader.read()).hexdigest()
    finally:
        reader.close()


class FirstRead:
    """Watches a standby NameNode: when its HA state turned active (polled every few ms)
    and when a read of one file through it alone (no failover) first succeeded."""

    def __init__(self, address: str, path: str, sha: str) -> None:
        self.address, self.path, self.sha = address, path, sha
        self.active_at: float | None = None
        self.read_at: float | None = None
        self.errors: list[str] = []
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        """Wait for active, then read until a read gives the file's bytes."""
        self.active_at = asyncio.run(self._turned_active())
        client = hdfs_native.Client(f"hdfs://{self.address}")
        deadline = self.active_at + DEADLINE_S
        while time.monotonic() < deadline:
            try:
                if sha_of(client, self.path) == self.sha:
                    self.read_at = time.monotonic()
                    return
                self.errors.append("a read gave other bytes")
            except Exception as e:
                self.errors.append(f"{type(e).__name__}: {e}")
            time.sleep(0.005)

    async def _turned_active(self) -> float:
        deadline = time.monotonic() + DEADLINE_S
        async with HAAdminClient(self.address, timeout=5.0) as admin:
            while time.monotonic() < deadline:
                if await admin.get_service_state() == HAState.ACTIVE:
                    return time.monotonic()
                await asyncio.sleep(0.005)
        raise AssertionError(f"{self.address} did not turn active in {DEADLINE_S:.0f}s")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """An automatic-failover cluster with 3 DataNodes and 1 MiB blocks."""
    # a writer silent for 15 s loses its file to the active's lease monitor (design §B.16):
    # far above any write here, short enough for the dead-writer test to wait out
    settings = NameNodeSettings(block_size=BLOCK, lease_hard_limit_ms=15_000, lease_recheck_ms=500)
    # a NameNode started again leaves safe mode 1 s after its blocks are reported, not 30 s
    dn_settings = DataNodeSettings(safemode_extension_ms=1000)
    directory = tmp_path_factory.mktemp("failover-data") / "c"
    with auto_cluster(
        directory, namenode_settings=settings, datanodes=3, datanode_settings=dn_settings
    ) as c:
        yield c


def test_acknowledged_files_survive_kill9_of_the_active_and_read_at_once(
    cluster: dict[str, Any],
) -> None:
    conf = Path(cluster["hadoop_conf"])
    old = wait_single_active(cluster, 60)
    new = "nn2" if old == "nn1" else "nn1"
    client = native_client(conf)
    probe = random.Random(99).randbytes(2 * MIB + 12345)
    write(client, "/probe", probe)
    probe_sha = hashlib.sha256(probe).hexdigest()

    stop = threading.Event()
    writers = [Writer(i, conf, stop).start() for i in range(WRITERS)]
    try:
        wait_until(
            "every writer has closed a file",
            lambda: all(w.acked for w in writers),
            timeout_s=DEADLINE_S,
        )
        watcher = FirstRead(namenode_addresses(cluster)[new], "/probe", probe_sha)
        watcher.thread.start()
        pid = cluster[old]["pid"]
        os.kill(pid, signal.SIGKILL)  # mid-writes: each writer is in a write all the time
        killed_at = time.monotonic()
        wait_until(f"{old} gone", lambda: not pid_alive(pid), timeout_s=30)
        assert wait_single_active(cluster, DEADLINE_S, exclude=[old]) == new
        watcher.thread.join(DEADLINE_S)
        assert watcher.active_at is not None
        assert watcher.read_at is not None, f"no read on {new}: {watcher.errors[-5:]}"
        first_read_s = watcher.read_at - watcher.active_at
        print(f"first read on the new active {first_read_s * 1000:.0f} ms after it turned active")
        assert first_read_s < FIRST_READ_WITHIN_S, (
            f"the first read on {new} came {first_read_s:.2f}s after it turned active; "
            f"errors before it: {watcher.errors[-5:]}"
        )
        wait_until(
            "every writer has closed 2 files on the new active",
            lambda: all(w.acked_after(watcher.active_at or killed_at) >= 2 for w in writers),
            timeout_s=DEADLINE_S,
        )
    finally:
        stop.set()
        for w in writers:
            assert w.thread is not None
            w.thread.join(DEADLINE_S)
    acked = {p: sha for w in writers for p, (sha, _) in w.acked.items()}
    assert any(w.acked_after(killed_at) for w in writers)
    reader = native_client(conf)
    wrong = {p for p, sha in sorted(acked.items()) if sha_of(reader, p) != sha}
    assert not wrong, f"acknowledged files read back different: {sorted(wrong)}"
    assert sha_of(reader, "/probe") == probe_sha
    print(
        f"{len(acked)} acknowledged files read back; failed writes: "
        f"{sum(len(w.failures) for w in writers)}"
    )


def status(http: str) -> dict[str, Any]:
    """A daemon's /status JSON."""
    with urllib.request.urlopen(f"http://{http}/status", timeout=10) as resp:
        result: dict[str, Any] = json.load(resp)
        return result


def test_a_deposed_actives_deletions_are_never_carried_out(cluster: dict[str, Any]) -> None:
    directory = Path(cluster["config"]).parent
    a = wait_single_active(cluster, 60)
    b = "nn2" if a == "nn1" else "nn1"
    if not pid_alive(read_cluster(directory)[b]["pid"]):  # killed by the test before
        start_daemons(directory, [b])
    wait_until(
        f"{b} standby out of safe mode",
        lambda: (
            ha_states(cluster)[b] == "standby"
            and not status(cluster[b]["http"])["block_management"]["safe_mode"]
        ),
        timeout_s=60,
    )
    client = native_client(Path(cluster["hadoop_conf"]))
    data = random.Random(7).randbytes(2 * MIB + 4321)  # 3 blocks
    write(client, "/deposed/f", data)
    dns = [f"dn{i}" for i in (1, 2, 3)]
    http = {dn: cluster[dn]["http"] for dn in dns}
    # A DataNode started again sends every NameNode a full report: the active's view of
    # each storage is fresh, so it deletes excess replicas at once (design §B.6).
    for dn in dns:
        stop_pid(read_cluster(directory)[dn]["pid"])
    start_daemons(directory, dns)
    wait_until(
        f"every DataNode reported in full to {a} and {b}",
        lambda: all(
            status(http[dn])["namenodes"][nn]["counters"].get("full_reports", 0) >= 1
            for dn in dns
            for nn in (a, b)
        ),
        timeout_s=DEADLINE_S,
    )
    rpc = namenode_addresses(cluster)
    # every block on all 3 DataNodes first (a pipeline set up under load may have started
    # with 2, and the copy comes later): setrep 1 then means 2 deletions for each block
    wait_until(
        lambda: (
            f"/deposed/f on 3 DataNodes (the active's view: {deletion_view(cluster, a, rpc[a])})"
        ),
        lambda: all(len(b.locs) == 3 for b in block_locations(rpc[a], "/deposed/f").blocks),
        timeout_s=DEADLINE_S,
    )
    pids = {n: read_cluster(directory)[n]["pid"] for n in (a, *dns)}
    before = {dn: status(http[dn]) for dn in dns}
    try:
        for dn in dns:  # no heartbeat reaches the active until it is deposed
            os.kill(pids[dn], signal.SIGSTOP)
        # a heartbeat sent just before the stop may still be answered, with commands the
        # frozen DataNode then holds: wait until the active has heard nothing for longer
        # than a heartbeat interval
        wait_until(
            f"{a} hears no more heartbeats",
            lambda: all(
                row["last_heartbeat_s_ago"] > 1.5 * HEARTBEAT_S
                for row in status(cluster[a]["http"])["datanodes"]
            ),
            timeout_s=DEADLINE_S,
        )
        hdfs_native.Client(f"hdfs://{rpc[a]}").set_replication("/deposed/f", 1)
        # the excess replicas are queued by the active's redundancy work, not by the call
        wait_until(
            lambda: (
                f"{a} queued 6 replica deletions, not {pending_deletions(cluster, a)} "
                f"(its view: {deletion_view(cluster, a, rpc[a])})"
            ),
            lambda: pending_deletions(cluster, a) == 3 * 2,
            timeout_s=DEADLINE_S,
        )
        os.kill(pids[a], signal.SIGSTOP)
        assert wait_single_active(cluster, DEADLINE_S, exclude=[a]) == b
        # the replication back to 3 before the DataNodes wake: the new active applied the
        # deposed one's setrep 1 too, and would itself delete the excess replicas as soon
        # as each DataNode reported to it (at once, design §B.6); only the deposed one's
        # deletions are under test
        assert hdfs_native.Client(f"hdfs://{rpc[b]}").set_replication("/deposed/f", 3)
        for dn in dns:
            os.kill(pids[dn], signal.SIGCONT)
        wait_until(
            f"every DataNode obeys {b}",
            lambda: all(status(http[dn])["active_namenode"] == b for dn in dns),
            timeout_s=DEADLINE_S,
        )
    finally:
        for n in (*dns, a):
            if pid_alive(pids[n]):
                os.kill(pids[n], signal.SIGCONT)
    resumed = {dn: status(http[dn])["namenodes"][a]["counters"].get("heartbeats", 0) for dn in dns}
    wait_until(
        f"{a} standby and every DataNode heard from it again",
        lambda: (
            ha_states(cluster)[a] == "standby"
            and all(
                (st := status(http[dn])["namenodes"][a])["ha_state"] == "STANDBY"
                and st["counters"].get("heartbeats", 0) > resumed[dn]
                for dn in dns
            )
        ),
        timeout_s=DEADLINE_S,
    )
    after = {dn: status(http[dn]) for dn in dns}
    for dn in dns:
        assert after[dn]["counts"].get("blocks_deleted", 0) == 0, f"{dn} deleted a replica"
        assert after[dn]["commands_taken"].get("invalidate", 0) == 0, after[dn]
        # none lost (re-replication of the first test's files may still add some)
        got, had = after[dn]["replicas"]["FINALIZED"], before[dn]["replicas"]["FINALIZED"]
        assert got >= had, f"{dn} held {had} finalized replicas, now {got}"
        assert after[dn]["active_namenode"] == b
    assert (
        hashlib.sha256(client.read("/deposed/f").read()).hexdigest()
        == hashlib.sha256(data).hexdigest()
    )
    print(
        "commands dropped by the DataNodes:",
        {dn: after[dn]["commands_dropped"] for dn in dns},
        "stale active claims:",
        {dn: after[dn]["stale_active_claims"] for dn in dns},
    )


def deletion_view(cluster: dict[str, Any], nn: str, rpc: str) -> str:
    """What nn knows of /deposed/f's replicas and the DataNodes, for a failure message."""
    st = status(cluster[nn]["http"])
    blocks = [
        [f"{loc.id.xferPort}" for loc in b.locs] for b in block_locations(rpc, "/deposed/f").blocks
    ]
    nodes = [
        (d["transfer_address"], d["state"], d["stale"], d["last_heartbeat_s_ago"])
        for d in st["datanodes"]
    ]
    return f"blocks at {blocks}; datanodes {nodes}; {st['block_management']}"


def pending_deletions(cluster: dict[str, Any], nn: str) -> int:
    """The replica deletions nn has queued, from its /status."""
    return int(status(cluster[nn]["http"])["block_management"]["pending_deletion_blocks"])


DEAD_WRITER = """
import sys, time
from pathlib import Path
import hdfs_native
from hadoop_clients import block_locations, native_client
client = native_client(Path(sys.argv[1]))
w = client.create("/dead-writer", hdfs_native.WriteOptions(block_size=1024 * 1024))
w.write(bytes(range(256)) * 1500)
w.hsync()
print("synced", flush=True)
time.sleep(600)
"""


def test_the_active_recovers_the_file_of_a_writer_killed_mid_write(
    cluster: dict[str, Any],
) -> None:
    # kill -9 of a writer that synced 384,000 bytes and never closed: no one calls
    # recoverLease; after the hard limit the active's lease monitor has a DataNode
    # recover the last block and closes the file at the synced length (design §B.16)
    conf = Path(cluster["hadoop_conf"])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-c", DEAD_WRITER, str(conf)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""  # the child prints once synced
        assert line.strip() == "synced", (
            f"writer said {line!r}: {proc.stderr.read() if proc.stderr else ''}"
        )
    finally:
        proc.kill()
        proc.wait(timeout=30)
    data = bytes(range(256)) * 1500
    client = native_client(conf)
    # still open under the dead writer's lease: another writer is refused
    # (AlreadyBeingCreatedException, which hdfs-native raises as FileExistsError)
    with pytest.raises(FileExistsError, match="lease is currently owned"):
        client.append("/dead-writer").close()

    def closed_at_synced_length() -> bool:
        try:
            with client.read("/dead-writer") as f:
                got = bytes(f.read())
        except Exception:  # not readable yet
            return False
        return got == data and under_construction(cluster, "/dead-writer") is False

    wait_until("/dead-writer recovered and closed", closed_at_synced_length, timeout_s=90.0)


def under_construction(cluster: dict[str, Any], path: str) -> bool | None:
    """Whether the active NameNode holds path open for writing (None: no NameNode answered)."""
    from qjm.errors import QjmError

    for address in namenode_addresses(cluster).values():
        try:
            return bool(block_locations(address, path).underConstruction)
        except (QjmError, OSError):
            continue  # a standby, or a NameNode not running
    return None
