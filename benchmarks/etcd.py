"""etcd with 3 members (Debian's etcd-server), written through its JSON gateway with aiohttp.

Each writer puts a new key with a 200-byte value and waits for the answer before its next
put; the writers talk to the leader, so no put takes an extra hop.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import shutil
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import aiohttp

from benchmarks.common import RECORD, Processes, Sample, free_port, wait_until

ETCD = "etcd"
PUT = "/v3/kv/put"  # etcd 3.4's gRPC gateway (also /v3beta); 3.3 had only /v3beta


def _post(url: str, body: dict[str, object]) -> dict[str, object]:
    req = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=2) as resp:
        out: dict[str, object] = json.loads(resp.read())
        return out


def _healthy(client: str) -> bool:
    with urllib.request.urlopen(client + "/health", timeout=2) as resp:
        return bool(json.loads(resp.read()).get("health") == "true")


@contextlib.contextmanager
def cluster(n: int = 3, pids: list[int] | None = None) -> Iterator[str]:
    """n etcd members on loopback in a temp dir; yields the leader's client URL."""
    binary = shutil.which(ETCD)
    if binary is None:
        raise FileNotFoundError("etcd is not installed (Debian: apt-get install etcd-server)")
    procs = Processes()
    with tempfile.TemporaryDirectory(prefix="qjm-bench-etcd-") as tmp:
        root = Path(tmp)
        try:
            peers = [f"http://127.0.0.1:{free_port()}" for _ in range(n)]
            clients = [f"http://127.0.0.1:{free_port()}" for _ in range(n)]
            initial = ",".join(f"m{i}={p}" for i, p in enumerate(peers))
            logs = [root / f"m{i}.log" for i in range(n)]
            for i in range(n):
                flags = {
                    "name": f"m{i}",
                    "data-dir": str(root / f"m{i}"),
                    "listen-client-urls": clients[i],
                    "advertise-client-urls": clients[i],
                    "listen-peer-urls": peers[i],
                    "initial-advertise-peer-urls": peers[i],
                    "initial-cluster": initial,
                    "initial-cluster-token": "qjm-bench",
                    "initial-cluster-state": "new",
                    "log-level": "warn",
                    "logger": "zap",
                }
                argv = [binary] + [f"--{k}={v}" for k, v in flags.items()]
                procs.start(argv, logs[i])

            def all_healthy() -> bool:
                procs.check_alive(logs)
                return all(_healthy(c) for c in clients)

            wait_until("etcd members healthy", all_healthy, 60, logs=logs)
            leader = None

            def find_leader() -> bool:
                nonlocal leader
                for c in clients:
                    st = _post(c + "/v3/maintenance/status", {})
                    header = st.get("header")
                    if isinstance(header, dict) and header.get("member_id") == st.get("leader"):
                        leader = c
                        return True
                return False

            wait_until("an etcd leader", find_leader, 30, logs=logs)
            assert leader is not None
            if pids is not None:
                pids.extend(procs.pids)
            yield leader
        finally:
            procs.stop()


async def _measure(url: str, writers: int, seconds: float, tag: str) -> Sample:
    value = base64.b64encode(b"x" * RECORD).decode()
    latencies: list[float] = []
    connector = aiohttp.TCPConnector(limit=writers, force_close=False)
    timeout = aiohttp.ClientTimeout(total=10)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as http:
        stop = time.perf_counter() + seconds

        async def writer(w: int) -> None:
            n = 0
            while time.perf_counter() < stop:
                key = base64.b64encode(f"bench/{tag}/{w}/{n}".encode()).decode()
                n += 1
                t0 = time.perf_counter()
                async with http.post(url + PUT, json={"key": key, "value": value}) as resp:
                    body = await resp.read()
                    if resp.status != 200:
                        raise RuntimeError(f"etcd put: HTTP {resp.status}: {body[:200]!r}")
                latencies.append(time.perf_counter() - t0)

        start = time.perf_counter()
        await asyncio.gather(*(writer(w) for w in range(writers)))
        elapsed = time.perf_counter() - start
    return Sample.of(latencies, elapsed)


def measure(leader: str, writers: int, seconds: float, tag: str) -> Sample:
    """writers concurrent writers putting 200-byte values for seconds."""
    return asyncio.run(_measure(leader, writers, seconds, tag))


if __name__ == "__main__":
    with cluster() as url:
        for w in (1, 64):
            s = measure(url, w, 2.0, f"t{w}")
            print(
                w, round(s.records / s.seconds), round(s.p50_s * 1000, 3), round(s.p99_s * 1000, 3)
            )
