"""Manual failover and kill -9 of the active under a concurrent workload, with real processes.

The workload is HA clients that are never told which NameNode is active: the genuine
hdfs-native (with DIR/hadoop-conf's properties) and our NameNodeClient (given both addresses).
After each failover the new active's namespace must hold every acknowledged op, and nothing
that was never attempted.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import hdfs_native
import pytest

from hadoop_clients import HACluster, check, hadoop_fs, native_client, tree
from qjm.namenode.client import NameNodeClient
from qjm.testing.wait import wait_until

WORKERS = 4


# Real processes (and JVM starts) on a possibly busy machine: more than the default 120 s.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HACluster]:
    """One HA cluster for the module (nn1 active, nn2 standby at the start)."""
    c = HACluster(tmp_path_factory.mktemp("failover") / "cluster").up()
    try:
        yield c
    finally:
        c.down()


@dataclass
class Workload:
    """WORKERS threads, each with its own HA client, making directories and empty files.

    Even workers use hdfs-native, odd ones our NameNodeClient.
    """

    cluster: HACluster
    root: str
    acked: set[str] = field(default_factory=set)  # the server answered: it must survive
    attempted: set[str] = field(default_factory=set)  # sent, answer unknown or an error
    errors: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> Workload:
        """Start the workers."""
        setup = self.cluster.ha_client()
        for w in range(WORKERS):
            setup.mkdirs(f"{self.root}/w{w}", create_parent=True)
            self.acked.add(f"{self.root}/w{w}")
        self.acked.add(self.root)
        for w in range(WORKERS):
            target = self._run if w % 2 == 0 else self._run_ours
            t = threading.Thread(target=target, args=(w,), daemon=True)
            t.start()
            self.threads.append(t)
        return self

    def _next(self, w: int, n: int) -> str:
        path = f"{self.root}/w{w}/{'d' if n % 2 else 'f'}{n}"
        with self.lock:
            self.attempted.add(path)
        return path

    def _done(self, path: str, error: Exception | None) -> None:
        with self.lock:
            if error is None:
                self.acked.add(path)
            else:  # not acknowledged: it may or may not have happened
                self.errors.append(f"{path}: {error}")

    def _run(self, w: int) -> None:
        client = native_client(self.cluster.conf)
        n = 0
        while not self.stop.is_set():
            n += 1
            path = self._next(w, n)
            try:
                if n % 2:
                    client.mkdirs(path)
                else:
                    client.create(path, hdfs_native.WriteOptions(overwrite=False)).close()
            except Exception as e:
                self._done(path, e)
                continue
            self._done(path, None)

    def _run_ours(self, w: int) -> None:
        asyncio.run(self._ours(w))

    async def _ours(self, w: int) -> None:
        addresses = [self.cluster.info[nn]["rpc"] for nn in ("nn1", "nn2")]
        async with NameNodeClient(addresses, timeout=30, max_rounds=20) as client:
            n = 0
            while not self.stop.is_set():
                n += 1
                path = self._next(w, n)
                try:
                    if n % 2:
                        await client.mkdirs(path, create_parent=False)
                    else:
                        await client.complete(path, (await client.create(path)).file_id)
                except Exception as e:
                    self._done(path, e)
                    continue
                self._done(path, None)

    def count(self) -> int:
        """Acknowledged ops so far."""
        with self.lock:
            return len(self.acked)

    def per_worker(self) -> list[int]:
        """Acknowledged ops so far of each worker."""
        with self.lock:
            return [
                sum(1 for p in self.acked if p.startswith(f"{self.root}/w{w}/"))
                for w in range(WORKERS)
            ]

    def wait_for(self, more: int, timeout: float = 60.0) -> None:
        """Wait until every worker (each kind of client) has `more` further ops acknowledged."""
        targets = [n + more for n in self.per_worker()]
        wait_until(
            f"{more} more acknowledged ops of every worker (errors: {self.errors[-3:]})",
            lambda: all(n >= t for n, t in zip(self.per_worker(), targets, strict=True)),
            timeout,
        )

    def finish(self) -> None:
        """Stop the workers and wait for them (each ends after its call in flight)."""
        self.stop.set()
        for t in self.threads:
            t.join(timeout=120)
            assert not t.is_alive(), "a workload thread hangs"

    def check_against(self, namespace: dict[str, tuple[bool, int, str, str, int]]) -> None:
        """Every acknowledged op is in the namespace, and the namespace holds nothing else."""
        present = {p for p in namespace if p == self.root or p.startswith(self.root + "/")}
        missing = self.acked - present
        assert not missing, f"acknowledged but lost: {sorted(missing)[:10]}"
        invented = present - self.acked - self.attempted
        assert not invented, f"present but never attempted: {sorted(invented)[:10]}"
        for p in self.acked - {self.root}:
            want_dir = p.rsplit("/", 1)[1][0] in "dw"
            assert namespace[p][0] == want_dir, p


def ensure_active(cluster: HACluster, nn: str, other: str) -> None:
    """Make nn the active (manual failover from other when needed)."""
    if cluster.state(nn) != "active":
        cluster.failover(other, nn)


def test_manual_failover_under_a_concurrent_workload_loses_no_acknowledged_op(
    cluster: HACluster,
) -> None:
    ensure_active(cluster, "nn1", "nn2")
    load = Workload(cluster, "/failover").start()
    try:
        load.wait_for(10)
        cluster.failover("nn1", "nn2")
        assert cluster.state("nn1") == "standby"
        load.wait_for(10)  # the same clients keep working against nn2
        cluster.failover("nn2", "nn1")  # and back, still under load
        load.wait_for(10)
    finally:
        load.finish()
    assert cluster.state("nn1") == "active"
    load.check_against(tree(cluster.direct("nn1"), "/"))
    # the other way round too: nn2 (standby now) holds the same namespace once active again
    before = tree(cluster.direct("nn1"), "/")
    cluster.failover("nn1", "nn2")
    assert tree(cluster.direct("nn2"), "/") == before


def test_done_when_kill9_of_the_active_then_transition_to_active_keeps_every_acked_op(
    cluster: HACluster,
) -> None:
    ensure_active(cluster, "nn1", "nn2")
    assert cluster.state("nn2") == "standby"
    load = Workload(cluster, "/kill").start()
    try:
        load.wait_for(10)
        cluster.kill9("nn1")
        r = cluster.haadmin("-transitionToActive", "nn2")
        assert r.returncode == 0, r.stderr
        assert cluster.state("nn2") == "active"
        t0 = time.monotonic()
        load.wait_for(10)  # the HA clients found nn2 by themselves
        assert time.monotonic() - t0 < 30
    finally:
        load.finish()
    after = tree(cluster.direct("nn2"), "/")
    load.check_against(after)

    # the genuine FsShell, with nn1 dead and listed first, reaches nn2 on its own, quickly
    t0 = time.monotonic()
    out = check(hadoop_fs(cluster.conf, "-ls", "-R", "/kill"))
    assert time.monotonic() - t0 < 15
    listed = {line.split()[-1] for line in out.splitlines() if line.startswith(("d", "-"))}
    assert load.acked - {"/kill"} <= listed

    # nn1 comes back as a standby, catches up, and can take over again with the same namespace
    cluster.restart("nn1")
    wait_until("nn1 standby", lambda: cluster.state("nn1") == "standby", timeout_s=30.0)
    cluster.failover("nn2", "nn1")
    assert tree(cluster.direct("nn1"), "/") == after
