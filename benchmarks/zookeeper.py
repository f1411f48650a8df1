"""ZooKeeper with 3 members (Debian's zookeeper), written with kazoo's async calls.

Each writer creates a sequential znode holding 200 bytes and waits for the answer before
its next create; kazoo keeps all writers' requests in flight on one session to the leader.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.common import RECORD, Processes, Sample, free_port, wait_until

CLASSPATH = "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar"
MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"


def _four_letter(port: int, cmd: str) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        s.sendall(cmd.encode())
        chunks = []
        while chunk := s.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


def _mode(port: int) -> str:
    for line in _four_letter(port, "srvr").splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    return ""


@contextlib.contextmanager
def cluster(n: int = 3, pids: list[int] | None = None) -> Iterator[str]:
    """n ZooKeeper members on loopback in a temp dir; yields the leader's host:port."""
    java = shutil.which("java")
    if java is None or not Path("/usr/share/java/zookeeper.jar").exists():
        raise FileNotFoundError("ZooKeeper is not installed (Debian: apt-get install zookeeper)")
    procs = Processes()
    with tempfile.TemporaryDirectory(prefix="qjm-bench-zk-") as tmp:
        root = Path(tmp)
        try:
            client_ports = [free_port() for _ in range(n)]
            servers = "\n".join(
                f"server.{i + 1}=127.0.0.1:{free_port()}:{free_port()}" for i in range(n)
            )
            logs = [root / f"zk{i}.log" for i in range(n)]
            for i in range(n):
                data = root / f"zk{i}"
                data.mkdir()
                (data / "myid").write_text(f"{i + 1}\n")
                cfg = root / f"zoo{i}.cfg"
                cfg.write_text(
                    "tickTime=500\ninitLimit=20\nsyncLimit=10\n"
                    f"dataDir={data}\nclientPort={client_ports[i]}\n"
                    "clientPortAddress=127.0.0.1\nadmin.enableServer=false\n"
                    "4lw.commands.whitelist=srvr,ruok\nmaxClientCnxns=0\n"
                    f"{servers}\n"
                )
                procs.start(
                    [java, "-Xms256m", "-Xmx1g", "-cp", CLASSPATH, MAIN, str(cfg)],
                    logs[i],
                    cwd=root,
                )
            leader = None

            def quorum_up() -> bool:
                nonlocal leader
                procs.check_alive(logs)
                modes = [_mode(p) for p in client_ports]
                if sorted(modes) != sorted(["leader"] + ["follower"] * (n - 1)):
                    return False
                leader = f"127.0.0.1:{client_ports[modes.index('leader')]}"
                return True

            wait_until("a ZooKeeper quorum", quorum_up, 90, logs=logs)
            assert leader is not None
            if pids is not None:
                pids.extend(procs.pids)
            yield leader
        finally:
            procs.stop()


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
