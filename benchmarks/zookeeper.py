"""ZooKeeper with 3 members (Debian's zookeeper), written with kazoo's async calls.

Each writer creates a sequential znode holding 200 bytes and waits for the answer before
its next create; kazoo keeps all writers' requests in flight on one session to the leader.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.common import RECORD, Sample
from qjm.cluster.zookeeper import ZooKeeperError, start_zookeeper


@contextlib.contextmanager
def cluster(n: int = 3, pids: list[int] | None = None) -> Iterator[str]:
    """n ZooKeeper members on loopback in a temp dir; yields the leader's host:port."""
    with tempfile.TemporaryDirectory(prefix="qjm-bench-zk-") as tmp:
        try:
            ens = start_zookeeper(
                Path(tmp), members=n, jvm_options=("-Xms256m", "-Xmx1g"), ready_timeout=90
            )
        except ZooKeeperError as e:  # the comparison skips a system that does not start
            raise RuntimeError(str(e)) from e
        with ens:
            leader = ens.leader()
            assert leader is not None
            if pids is not None:
                pids.extend(ens.pids)
            yield ens.member(leader).address


def measure(leader: str, writers: int, seconds: float, tag: str) -> Sample:
    """writers concurrent writers creating 200-byte sequential znodes for seconds."""
    from kazoo.client import KazooClient

    logging.getLogger("kazoo").setLevel(logging.WARNING)
    zk = KazooClient(hosts=leader, timeout=10.0)
    zk.start(timeout=15)
    try:
        zk.ensure_path(f"/bench/{tag}")
        value = b"x" * RECORD
        latencies: list[float] = []
        errors: list[BaseException] = []
        lock = threading.Lock()
        running = writers
        all_done = threading.Event()
        stop = 0.0

        def issue(w: int) -> None:
            t0 = time.perf_counter()
            res = zk.create_async(f"/bench/{tag}/w{w}-", value, sequence=True)

            def done(r: Any) -> None:
                nonlocal running
                now = time.perf_counter()
                if r.exception is not None:
                    with lock:
                        errors.append(r.exception)
                        running -= 1
                        if running == 0:
                            all_done.set()
                    return
                with lock:
                    latencies.append(now - t0)
                if now < stop:
                    issue(w)
                else:
                    with lock:
                        running -= 1
                        if running == 0:
                            all_done.set()

            res.rawlink(done)

        start = time.perf_counter()
        stop = start + seconds
        for w in range(writers):
            issue(w)
        if not all_done.wait(seconds + 30):
            raise TimeoutError(f"ZooKeeper writers still running {seconds + 30:.0f} s after start")
        elapsed = time.perf_counter() - start
        if errors:
            raise RuntimeError(f"ZooKeeper create failed: {errors[0]!r}")
        return Sample.of(latencies, elapsed)
    finally:
        zk.stop()
        zk.close()


if __name__ == "__main__":
    with cluster() as hostport:
        for w in (1, 64):
            s = measure(hostport, w, 2.0, f"t{w}")
            print(
                w, round(s.records / s.seconds), round(s.p50_s * 1000, 3), round(s.p99_s * 1000, 3)
            )
